"""The compiler: a TOML spec in, a standalone NumPy module out (docs/design.md, "Pipeline"
and "Module map"). Every stage produces one frozen data type; build.py runs them in order.

1. spec.py (with expressions.py): Input a TOML file; Output a :class:`spec.Spec`, every
   problem of the file reported at once with its key path.
2. analysis/ (line.py for one variable, box.py for a box, over the shared core, factor,
   weights, quadrature, gram and legendre modules; exact algebra from symbolic.py): Input
   a Spec; Output an :class:`analysis.core.Analysis`: the exact Gram matrix, its LDL^T
   certificate, R, K and the quadrature choice.
3. ir.py (with slack.py, the float error bound): Input an Analysis; Output a
   :class:`ir.ModuleIR` (or a :class:`ir.CDFModuleIR` for a ``kind = "cdf"`` spec): exact values
   beside their float64 roundings, names and provenance, no mathematics left to do.
4. emit/ (the NumPy target: line.py, box.py, common.py and templates/; runtime.py inlines
   gpcompiler/runtime): Input a ModuleIR; Output the module's source text,
   byte-reproducible, its spec-specific part first and the inlined runtime last.
5. build.py: Input spec paths; Output generated/<name>.py files (and a cache keyed by the
   compiler's own digest); ``check`` regenerates and compares.

explain.py renders the same Analysis as Markdown with LaTeX (``gpcompiler explain``).
"""
