"""The runtime a generated module carries (gpcompiler/runtime/), inlined verbatim at its end,
after the spec-specific part, each source marked with its path, version and sha256."""
import hashlib
import inspect

from ... import __version__
from ...runtime import entropy, exact

HEADER = ("# ==== The runtime of gpcompiler {version}: the spec-specific part ends above. What\n"
          "# follows is gpcompiler/runtime inlined verbatim, each part marked with its version\n"
          "# and the sha256 of its text, the same in every module of this version.")


def runtime_body(module):
    """A runtime module's source after its docstring and imports: what a generated module
    inlines verbatim (the module already imports math, hashlib, os, numbers and numpy)."""
    lines = inspect.getsource(module).splitlines()
    last_import = max(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")))
    return "\n".join(lines[last_import + 1:]).strip("\n")


def marker(name):
    """The first line of the marker of an inlined runtime source: its path and version."""
    return f"# ---- {name} from gpcompiler {__version__}"


def runtime_source():
    """The inlined runtime (entropy, exact noise) after a header, each part marked with the
    gpcompiler version and its sha256 so a reviewer can check that it is the audited
    gpcompiler/runtime source; a generated module ends with it."""
    parts = [HEADER.format(version=__version__)]
    for module in (entropy, exact):
        body = runtime_body(module)
        digest = hashlib.sha256(body.encode()).hexdigest()
        name = module.__name__.split(".", 1)[1].replace(".", "/") + ".py"
        parts.append(f"{marker(name)}\n# ---- sha256 {digest}\n\n"
                     f"{body}\n\n# ---- end of {name}")
    return "\n\n\n".join(parts)
