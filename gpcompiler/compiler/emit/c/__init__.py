"""The C target (issue 31): a compiled 1-D spec -> NAME.h (the API) and NAME.c (the
mechanism, gpcompiler's C runtime inlined), docs/reference/c.md. One emitter folder per
target; this one reads the shared IR (gpcompiler/compiler/ir.py) and adds its own lowering.

    files = emit_c(lower_c(analysis))   # {"NAME.h": text, "NAME.c": text}

lower_c raises a one-line SpecError naming what the C target does not support yet."""
from .emit import emit_c, inlined, runtime_text
from .lowering import lower_c, unsupported

__all__ = ["emit_c", "inlined", "lower_c", "runtime_text", "unsupported"]
