"""The runtime a generated module carries (gpcompiler/runtime/), inlined verbatim at its end,
after the spec-specific part, each source marked with its path, version and sha256."""
import hashlib
import inspect

from ... import __version__
from ...runtime import clip, curveclip, entropy, exact, fieldclip, hold, keyed, protocol

HEADER = ("# ==== The runtime of gpcompiler {version}: the spec-specific part ends above. What\n"
          "# follows is gpcompiler/runtime inlined verbatim, each part marked with its version\n"
          "# and the sha256 of its text, the same in every module of this version.")


def runtime_body(module):
    """A runtime module's source after its docstring and imports: what a generated module
    inlines verbatim (the module already imports hashlib, math, os, numbers, numpy and, in
    one dimension, argparse and csv)."""
    lines = inspect.getsource(module).splitlines()
    last_import = max(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")))
    return "\n".join(lines[last_import + 1:]).strip("\n")


def marker(name):
    """The first line of the marker of an inlined runtime source: its path and version."""
    return f"# ---- {name} from gpcompiler {__version__}"


def runtime_parts(ir):
    """The runtime modules a generated module inlines: entropy, addressed words, exact
    releases and the coefficient clip always; the curve or field clip when its metric clips
    samples, the map of held curves for [curve] outside = "hold", and the protocol program
    of a 1-D module (the comparisons of runtime/compare.py, with the Gumbel sampler, are the
    package's only)."""
    if ir.box is None:
        samples = [curveclip] if ir.metric == "L2" else []
        samples += [hold] if ir.outside == "hold" else []
        samples += [protocol]
    else:
        samples = [fieldclip] if ir.metric == "L2" else []
    return (entropy, keyed, exact, clip, *samples)


def runtime_source(*modules):
    """The inlined runtime (``modules``: entropy, exact noise, clips) after a header, each
    part marked with the gpcompiler version and its sha256 so a reviewer can check that it
    is the audited gpcompiler/runtime source; a generated module ends with it."""
    parts = [HEADER.format(version=__version__)]
    for module in modules:
        body = runtime_body(module)
        digest = hashlib.sha256(body.encode()).hexdigest()
        name = module.__name__.split(".", 1)[1].replace(".", "/") + ".py"
        parts.append(f"{marker(name)}\n# ---- sha256 {digest}\n\n"
                     f"{body}\n\n# ---- end of {name}")
    return "\n\n\n".join(parts)
