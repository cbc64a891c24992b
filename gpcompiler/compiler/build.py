"""The pipeline end to end: spec file -> generated module (on disk, checked, or loaded)."""
import difflib
import functools
import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from .analysis import analyze
from .analysis.core import Stages
from ..cdf.streaming import mean_errors
from ..cdf.tables import cdf_tables
from ..io.curves import write_files_atomically, write_text_atomically
from .emit import emit_cdf_module, emit_module
from ..errors import SpecError, UserError
from .ir import lower, lower_cdf
from .spec import load_spec
from .symbolic import time_limit

# The shipped specs and their generated modules, inside the package (links to the top-level
# specs/ and generated/ in a checkout; copies in an installed wheel).
SHIPPED_SPECS = Path(__file__).resolve().parent.parent / "specs"
SHIPPED_MODULES = Path(__file__).resolve().parent.parent / "generated"


TARGETS = ("python", "c", "js")


@dataclass(frozen=True)
class Compiled:
    """A compiled spec: its analysis and the generated module's source text (target python),
    or {file name: text} (target c: NAME.h, NAME.c, NAME_device.c, NAME_main.c; target js: NAME.mjs)."""
    spec: object
    analysis: object
    source: object


def c_target(spec, analysis, target="c"):
    """{file name: text} of a curve spec's C target (docs/reference/c.md), or with
    ``target`` "js" its JS target NAME.mjs (docs/reference/js.md); a SpecError for the other
    kinds (boxes and CDF tables have no C or JS target yet)."""
    if spec.kind == "cdf" or spec.dimension > 1:
        what = "a CDF table" if spec.kind == "cdf" else f"a box in {spec.dimension} variables"
        raise SpecError([("", f"the {target.upper()} target compiles curves in one variable, "
                              f"and this spec is {what}: use --target python")], spec.path)
    if target == "js":
        from .emit.js import emit_js_module  # imported here: no cycle
        return emit_js_module(analysis)
    from .emit.c import emit_c_module  # NAME.h and NAME.c (imported here: no cycle)
    from .emit.c.program import emit_program
    return {**emit_c_module(analysis), f"{spec.name}_main.c": emit_program(spec.name)}


def compile_limit():
    """CPU seconds allowed for compiling one spec ($GPCOMPILER_TIME_LIMIT, default 300)."""
    return float(os.environ.get("GPCOMPILER_TIME_LIMIT", "300"))


def compile_spec(path, root=None, progress=None, emit=True, target="python"):
    """Run every stage on one spec file, within :func:`compile_limit` seconds
    (``progress`` hears the stage of a compile longer than about 2 s); ``emit=False`` stops
    after the analysis (``source`` is None: `explain` of any spec); ``target`` "c" or "js"
    emits the C or JS target (:func:`c_target`)."""
    spec = load_spec(path, root)
    if target != "python" and (spec.kind == "cdf" or spec.dimension > 1):
        c_target(spec, None, target)  # its one-line error, before any work
    limit = compile_limit()
    with time_limit(limit, f"compiling {spec.path} (GPCOMPILER_TIME_LIMIT = {limit:g} s of CPU time: "
                           "raise it to wait longer, or simplify the basis)"):
        if spec.kind == "cdf":
            tables = cdf_tables(spec.family.option("degree"))
            return Compiled(spec, tables, emit_cdf_module(lower_cdf(spec, tables,
                                                                    mean_errors(tables.degree))))
        stage = Stages(progress, spec.path)
        try:
            analysis = analyze(spec, stage)
            if not emit:
                return Compiled(spec, analysis, None)
            stage("emit")
            if target != "python":
                return Compiled(spec, analysis, c_target(spec, analysis, target))
            return Compiled(spec, analysis, emit_module(lower(analysis)))
        finally:
            stage.close()


def compile_files(paths, out_dir, root=None, progress=None, stages=None, target="python"):
    """Compile spec files into ``out_dir`` for ``target`` (python: NAME.py; c: NAME.h,
    NAME.c, NAME_main.c; js: NAME.mjs); nothing is written unless all compile, and every file is staged
    before any is replaced (write_files_atomically). ``progress`` hears "compiling PATH"
    before each spec, ``stages`` (default: progress) each stage of a compile longer than
    about 2 s. A shipped spec may be named (resolve_spec)."""
    paths = [resolve_spec(path) for path in paths]
    names = {}
    for path in paths:   # reading the specs is cheap: clashes are found before any work
        names.setdefault(load_spec(path, root).name, []).append(str(path))
    clashes = [(n, files) for n, files in names.items() if len(files) > 1]
    if clashes:
        raise SpecError([("name", f"module name {n!r} is used by {', '.join(files)}")
                         for n, files in clashes])
    compiled = []
    for path in paths:
        if progress:
            progress(f"compiling {path}")
        compiled.append(compile_spec(path, root, stages or progress, target=target))
    out_dir = Path(out_dir)
    files = [(out_dir / name, text) for item in compiled for name, text in
             (item.source.items() if target != "python" else [(f"{item.spec.name}.py", item.source)])]
    write_files_atomically(files)
    return [path for path, _ in files]


def check(spec_dir="specs", generated_dir="generated", progress=None, stages=None):
    """Regenerate every spec of ``spec_dir``; return unified diffs against ``generated_dir``:
    NAME.py of every spec, and the C and JS targets of every curve in one variable in its c/
    and js/ folders (``progress`` and ``stages`` as in :func:`compile_files`)."""
    spec_dir, generated_dir = Path(spec_dir), Path(generated_dir)
    root = spec_dir.resolve().parent
    problems = []
    for path in sorted(spec_dir.glob("*.toml")):
        if progress:
            progress(f"checking {path}")
        item = compile_spec(path, root, stages or progress)
        files = {generated_dir / f"{item.spec.name}.py": item.source}
        if item.spec.kind != "cdf" and item.spec.dimension == 1:
            for target in ("c", "js"):
                files.update((generated_dir / target / name, text) for name, text
                             in c_target(item.spec, item.analysis, target).items())
        problems += [_diff(target, text) for target, text in files.items()
                     if not target.exists() or target.read_text() != text]
    return problems


def _diff(target, text):
    """The unified diff of a committed file against its regenerated ``text``."""
    current = target.read_text() if target.exists() else ""
    return "".join(difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                        f"{target} (committed)", f"{target} (regenerated)",
                                        n=1)) or f"{target} missing\n"


def c_target_names(spec, target="c"):
    """The C (or JS) target's file names of a spec, or () for a spec without one."""
    if spec.kind == "cdf" or spec.dimension > 1:
        return ()
    if target == "js":
        return (f"{spec.name}.mjs",)
    return (f"{spec.name}.h", f"{spec.name}.c", f"{spec.name}_device.c", f"{spec.name}_main.c")


def cache_dir():
    """Where :func:`load` keeps compiled modules ($GPCOMPILER_CACHE or ~/.cache/gpcompiler)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gpcompiler"
    return Path(os.environ.get("GPCOMPILER_CACHE", default))


@functools.lru_cache(maxsize=1)
def compiler_digest():
    """sha256 over the compiler's own source and templates: a cached build is reused only
    by the very compiler that made it (the version string alone misses development edits)."""
    digest = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parent.parent
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".tmpl") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _cached(spec_path, cache, suffix, salt=b""):
    """(key, path in the build cache) of a spec's build: the key hashes the spec bytes,
    ``salt`` and the compiler (:func:`compiler_digest`)."""
    spec_path = Path(spec_path)
    try:
        raw = spec_path.read_bytes()
    except OSError as error:
        raise SpecError([("", f"cannot read spec file: {error.strerror}")], spec_path) from None
    key = hashlib.sha256(raw + b"\0" + salt + compiler_digest().encode()).hexdigest()[:20]
    directory = Path(cache) if cache is not None else cache_dir()
    return key, directory / f"{spec_path.stem}-{key}{suffix}"


def explained(spec_path, *, cache=None):
    """The `gpcompiler explain` text of ``spec_path``, from the build cache when the spec
    bytes, its path (which the text names) and the compiler are unchanged; derived (and
    cached) otherwise."""
    from .explain import explain
    spec_path = resolve_spec(spec_path)
    _, target = _cached(spec_path, cache, ".explain.md", str(spec_path).encode() + b"\0")
    if target.exists():
        return target.read_text()
    text = explain(compile_spec(spec_path, emit=False))
    _store(target, text)
    return text


def shipped_names():
    """The names of the shipped specs (gpcompiler/specs/NAME.toml), sorted."""
    return sorted(path.stem for path in SHIPPED_SPECS.glob("*.toml"))


def resolve_spec(spec):
    """The spec file ``spec`` names: a bare name (no directory, no .toml) of a shipped spec is
    that shipped spec, even when a file of that name is in the working directory (reach it
    as ``./linear`` or ``linear.toml``); any other name is a path; a bare name that is
    neither is one line listing the shipped names."""
    path, name = Path(spec), str(spec)
    if path.suffix == ".toml" or "/" in name or os.sep in name:
        return path
    if name in shipped_names():
        return SHIPPED_SPECS / f"{spec}.toml"
    if path.exists():
        return path
    raise UserError(f"{spec}: no such spec file, and no shipped spec of that name "
                    f"(shipped: {', '.join(shipped_names())})")


def load(spec_path, *, cache=None):
    """Compile ``spec_path`` (reusing a cached build when the spec bytes and the compiler
    are unchanged) and return the generated module, imported. A name that is not a path,
    such as ``"sinc_ecg"``, is the shipped spec of that name (:func:`resolve_spec`)."""
    spec_path = resolve_spec(spec_path)
    key, target = _cached(spec_path, cache, ".py")
    if not target.exists():
        _store(target, compile_spec(spec_path).source)
    return import_module_file(target, f"gpcompiler_generated_{spec_path.stem}_{key}")


def _store(target, text):
    """Write a build into the build cache, or say which directory cannot take it."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(target, text)
    except OSError as error:
        raise UserError(f"the build cache {target.parent} (GPCOMPILER_CACHE) cannot be "
                        f"written: {error.strerror}") from None


def import_module_file(path, module_name=None):
    """Import a generated module from its file."""
    module_name = module_name or f"gpcompiler_generated_{Path(path).stem}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[module_name] = module
    return module
