"""The C target (docs/reference/c.md): NAME.h, NAME.c, the device ledger NAME_device.c and
the protocol program NAME_main.c.

This folder's emitter (issue 31): a compiled 1-D spec -> NAME.h (the API), NAME.c (the
mechanism, gpcompiler's C runtime inlined) and NAME_device.c (the device ledger, issue 35).
One emitter folder per target; it reads the shared IR (gpcompiler/compiler/ir.py) and adds
its own lowering of the exact values:

    files = emit_c_module(analysis)   # {"NAME.h", "NAME.c", "NAME_device.c": text}
    files = emit_c(lower_c(analysis))  # the same, in two steps

lower_c raises a one-line SpecError naming what the C target does not support yet."""
from .emit import emit_c, inlined, runtime_text
from .lowering import lower_c, unsupported


def emit_c_module(analysis):
    """{"NAME.h", "NAME.c", "NAME_device.c": text} of an analysis (compile_spec(...,
    emit=False))."""
    return emit_c(lower_c(analysis))


__all__ = ["emit_c", "emit_c_module", "inlined", "lower_c", "runtime_text", "unsupported"]
