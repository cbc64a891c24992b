"""The JavaScript target (docs/reference/js.md): NAME.mjs, one dependency-free ES module with
the API of the C target's NAME.h in JavaScript names, the protocol program (run as `node
NAME.mjs ...`) and gpcompiler's JS runtime inlined. It lowers through the C target's lowering
(emit/c/lowering.py: the same exact values, rules and supported specs) and prints JavaScript:

    files = emit_js_module(analysis)   # {"NAME.mjs": text}
"""
from ..c.lowering import lower_c
from .emit import emit_js
from .printer import js_expression


def emit_js_module(analysis):
    """{"NAME.mjs": text} of an analysis (compile_spec(..., emit=False))."""
    return emit_js(lower_c(analysis, "JS", js_expression))


__all__ = ["emit_js", "emit_js_module"]
