"""The compiler: spec -> analysis -> ir -> emit (docs/design.md, "Module map")."""
