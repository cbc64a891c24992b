"""The runtime a generated module carries (gpcompiler/runtime/), inlined verbatim at its end,
after the spec-specific part, each source marked with its path, version and sha256; and the
check that the two share no top-level name (docs/threat-model.md, "A spec is data")."""
import ast
import hashlib
import inspect

from ... import __version__
from ...runtime import clip, curveclip, entropy, exact, fieldclip, hold, keyed, protocol

HEADER = ("# ==== The runtime of gpcompiler {version}: the spec-specific part ends above. What\n"
          "# follows is gpcompiler/runtime inlined verbatim, each part marked with its version\n"
          "# and the sha256 of its text, the same in every module of this version. One\n"
          "# namespace: each top-level name of the module is bound once, so the spec part and\n"
          "# the runtime parts cannot redefine each other's names (the compiler refuses a\n"
          "# module that would; a runtime file's private constant that could collide carries\n"
          "# the file's name, as _CLIP_SAFE and _EXACT_CHUNK do).")


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
        samples = [curveclip] if clips_curves(ir) else []
        samples += [hold] if ir.outside == "hold" else []
        samples += [protocol]
    else:
        samples = [fieldclip] if clips_fields(ir) else []
    return (entropy, keyed, exact, clip, *samples)


def clips_curves(ir):
    """Whether a 1-D module clips its sampled curves (runtime/curveclip.py): ir.clips."""
    return ir.box is None and ir.clips


def clips_fields(ir):
    """Whether a box module clips its gridded fields (runtime/fieldclip.py): ir.clips."""
    return ir.box is not None and ir.clips


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


def bound_once(source):
    """``source``, a generated module, after checking that each of its top-level names is
    bound once (by a def, class, import or assignment outside functions, classes and
    comprehensions): an AssertionError naming those bound twice (a bug, never a module)."""
    counts = {}
    for statement in ast.parse(source).body:
        for name in _bound(statement):
            counts[name] = counts.get(name, 0) + 1
    twice = sorted(name for name, count in counts.items() if count > 1)
    if twice:
        raise AssertionError(f"the generated module binds {', '.join(twice)} more than once")
    return source


def _bound(node):
    """The names a top-level statement binds in the module's namespace."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return []
    names = []
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        names += [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        names.append(node.id)
    for child in ast.iter_child_nodes(node):
        names += _bound(child)
    return names
