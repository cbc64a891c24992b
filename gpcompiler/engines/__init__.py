"""Distributed engines: adapters above the mechanisms (adaptive/, cdf/) that run them on a
cluster. The mechanisms never import an engine; the CLI hands one in."""
