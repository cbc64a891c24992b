"""Command line: compile, check, explain, privatize, cdf, audit, experiment.

User errors print one line (naming the file, key or curve) and exit 2; nothing is
half-written. Releases contain only what the mechanism released (docs/design.md,
"Privacy model"); comparisons with the true data are opt-in (--compare), go to standard
error and say "not private".
"""
import argparse
import contextlib
import io
import json
import math
import os
import re
import sys
import textwrap
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy

from .. import __version__
from ..errors import DataError, UserError

# A noise scale above this overflows float64 arithmetic on its squares (norms, variances).
MAX_NOISE_SCALE = 1e100
MAX_GRID = 10 ** 7      # public evaluation points of a release (--grid): 80 MB of values
MAX_FIELD_GRID = 10 ** 6  # for a field, evaluated with (points, m) basis values at once
# Released numbers are written exactly (repr: the shortest string that reads back as the
# same float64): released coefficients are exact multiples of the lattice step gamma.
DEFAULT_GRID = 1000
# `-o -`: the release goes to standard output (the default of privatize).
STDOUT = "-"
# The CDF estimators with a Legendre degree K (docs/design.md, "CDF estimation").
LEGENDRE_METHODS = ("moments", "direct")


def _progress(message):
    print(message, file=sys.stderr, flush=True)


def _say(args, message):
    """Informational output, unless --quiet: on stdout, or on stderr when stdout carries
    the release (`-o -`)."""
    if not args.quiet:
        print(message, file=sys.stderr if getattr(args, "output", None) == STDOUT
              else sys.stdout)


def _not_private(message):
    """A comparison with the true data (--compare): standard error, labelled."""
    print(f"not private: {message}", file=sys.stderr)


def _bar(args, total, unit):
    """A tqdm progress bar on stderr; silent with --quiet or when stderr is not a terminal."""
    from tqdm import tqdm
    return tqdm(total=total, unit=unit, file=sys.stderr, leave=False,
                disable=True if args.quiet else None)


class _Steps:
    """Progress callback of the pipeline (called once per spec, before its work): counts
    the specs done on a progress bar and remembers the spec at work, so that an error can
    name it; :meth:`stage` shows the stage of a long compile without counting it."""

    def __init__(self, args, total):
        self.bar = _bar(args, total, "spec")
        self.current = None

    def __call__(self, message):
        if self.current is not None:
            self.bar.update()
        self.current = message.split(" ", 1)[-1]
        self.bar.set_postfix_str(self.current)

    def stage(self, message):
        """A stage of the spec at work ("PATH: STAGE (N s)"): shown, not counted."""
        self.bar.set_postfix_str(message)

    def named(self, error):
        """``error`` as a UserError whose message names the spec at work."""
        return _named(self.current, error)


def _named(path, error):
    message = str(error)
    if path is None or str(path) in message:
        return error
    return UserError(f"{path}: {message}")


def cmd_compile(args):
    """`gpcompiler compile SPEC... -o DIR`: write the generated modules."""
    from ..compiler.build import compile_files
    from ..io.curves import check_writable
    check_writable(args.output, directory=True)
    steps = _Steps(args, len(args.specs))
    try:
        written = compile_files(args.specs, args.output, progress=steps, stages=steps.stage)
    except UserError as error:
        raise steps.named(error) from None
    finally:
        steps.bar.close()
    for path in written:
        _say(args, f"wrote {path}")
    return 0


def cmd_check(args):
    """`gpcompiler check`: regenerate every spec, diff against generated/, report modules
    of generated/ that no spec makes (stale)."""
    from ..compiler.build import check
    from ..compiler.spec import load_spec
    spec_dir, generated = Path(args.specs), Path(args.generated)
    if not spec_dir.is_dir():
        raise UserError(f"no spec directory {spec_dir}")
    specs = sorted(spec_dir.glob("*.toml"))
    if not specs:
        raise UserError(f"no spec (*.toml) in {spec_dir}")
    steps = _Steps(args, len(specs))
    try:
        problems = check(spec_dir, generated, progress=steps, stages=steps.stage)
        names = {load_spec(path).name for path in specs}
    except UserError as error:
        raise steps.named(error) from None
    finally:
        steps.bar.close()
    for diff in problems:
        sys.stdout.write(diff)
    stale = sorted(p for p in generated.glob("*.py") if p.stem not in names)
    for path in stale:
        print(f"stale: {path} is made by no spec in {spec_dir}/: remove it")
    if problems:
        print(f"{len(problems)} generated module(s) differ from their specs: "
              f"run `gpcompiler compile {spec_dir}/*.toml -o {generated}`", file=sys.stderr)
    if problems or stale:
        return 1
    _say(args, f"all {len(specs)} generated modules in {generated}/ match {spec_dir}/")
    return 0


def cmd_explain(args):
    """`gpcompiler explain SPEC`: the exact derivation as Markdown with LaTeX (served from
    the build cache when the spec and the compiler are unchanged)."""
    from ..compiler.build import explained
    from ..io.curves import check_writable, write_text_atomically
    if args.output:
        check_writable(args.output)
    try:
        text = explained(args.spec)
    except UserError as error:
        raise _named(args.spec, error) from None
    if args.output:
        write_text_atomically(args.output, text)
        _say(args, f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def _budget(args):
    return {"epsilon": args.epsilon} if args.epsilon is not None else {"rho": args.rho}


def _noise_floor(budget):
    """A lower bound on the noise per coordinate of every mechanism at this budget:
    1/epsilon (GP) or 1/sqrt(2 rho) (CGP)."""
    if "epsilon" in budget:
        return 1 / budget["epsilon"]
    return 1 / math.sqrt(2 * budget["rho"])


def _mechanism(spec):
    """The generated module of a mechanism spec (a cdf spec is refused with a pointer);
    every error names the spec."""
    from ..compiler.build import load
    try:
        module = load(spec)
    except UserError as error:
        raise _named(spec, error) from None
    if not hasattr(module, "privatize") or not (hasattr(module, "project")
                                                or hasattr(module, "project_grid")):
        raise UserError(f"{spec} compiles CDF tables, not a curve mechanism: "
                        "use `gpcompiler cdf --spec` for distribution estimation")
    return module


def _parameters(items, module, method):
    """--param NAME=VALUE options: public keyword arguments of the spec (checked before any
    data is read)."""
    params = {}
    for item in items or ():
        name, _, value = item.partition("=")
        try:
            params[name] = float(value)
        except ValueError:
            raise UserError(f"--param expects NAME=VALUE with a number, got {item!r}") from None
        if name not in module.PARAMETERS:
            raise UserError(f"--param: unknown parameter {name!r} of {module.SPEC_PATH} "
                            f"(parameters: {', '.join(sorted(module.PARAMETERS)) or 'none'})")
        if not (math.isfinite(params[name]) and params[name] > 0):
            raise UserError(f"--param: {name} must be positive and finite, got {value}")
    if params and method == "unbounded":
        raise UserError("--param does not apply to --method unbounded: its domain is the "
                        "real line, clipped to a privately chosen [-T, T]")
    try:
        (module.domain if hasattr(module, "DIMENSION") else module.curve_interval)(**params)
    except ValueError as error:
        raise UserError(f"--param: {error}") from None
    return params


# The methods each method-specific option applies to (anything else is an error).
METHOD_OPTIONS = {"beta": ("select", "seg", "unbounded"), "continuous": ("seg", "unbounded"),
                  "k": ("baseline",), "window": ("baseline",), "split": ("select",)}
DEFAULT_BETA, DEFAULT_K = 0.1, 100
DEFAULT_SPLIT = (Fraction(1, 4), Fraction(0), Fraction(0), Fraction(3, 4))   # = select's


def _method_options(args):
    """Refuse options of other methods (checked first); fill in the defaults."""
    for name, methods in METHOD_OPTIONS.items():
        if getattr(args, name) not in (None, False) and args.method not in methods:
            raise UserError(f"--{name} does not apply to --method {args.method} "
                            f"(only to {', '.join(methods)})")
    args.beta = DEFAULT_BETA if args.beta is None else args.beta
    args.k = DEFAULT_K if args.k is None else args.k
    if args.window is not None and args.window > args.k:
        raise UserError(f"--window {args.window} is wider than --k {args.k}")


def _check_spec_for_method(spec, module, method, params):
    """Spec/method incompatibilities, before any data is read (docs/design.md, "Adaptive
    algorithms"): seg and unbounded need all polynomials of a degree in plain L2, select a
    scalar basis in plain L2 on a bounded domain."""
    where = f"{spec}: --method {method} needs"
    if method in ("seg", "unbounded") and (module.POLYNOMIAL_DEGREE is None
                                           or module.METRIC != "L2"):
        raise UserError(f"{where} a spec spanning all polynomials of some degree with the L2 "
                        f"metric (a monomial or legendre family, or specs/linear.toml)")
    if method == "unbounded" and module.OUTSIDE != "zero":
        raise UserError(f"{where} [curve] outside = \"zero\" (a curve held to the ends of the "
                        "real line has no finite norm)")
    if method == "select":
        if module.METRIC != "L2" or module.VECTOR_BASIS:
            raise UserError(f"{where} a scalar basis with the L2 metric")
        a, b = module.curve_interval(**params)
        if not (math.isfinite(a) and math.isfinite(b)):
            raise UserError(f"{where} a bounded curve domain, not [{a}, {b}] (set "
                            "domain.curve_interval in the spec)")


def _domain_hint(module, method, params, error):
    """For a sample outside the domain: how --param sets the public domain."""
    if ("must lie in" not in str(error) or method == "unbounded" or not module.PARAMETERS
            or module.PARAMETERS_FIXED):
        return ""
    values = {**module.PARAMETERS, **params}
    return (f" (the domain is public: set it with "
            f"{' '.join(f'--param {name}=VALUE' for name in values)}; now "
            f"{', '.join(f'{name}={value:g}' for name, value in values.items())})")


@dataclass(frozen=True)
class _Release:
    """One curve's release: the function (evaluable anywhere), what the file records
    (coefficients, breakpoints...), a summary of released or public facts only, the
    public interval its grid spans, and its public facts (bound B, slack, lattice step)."""
    evaluate: object
    record: dict
    summary: str
    support: tuple
    facts: dict


def _release_bound(module, args):
    """The public clip bound B of every curve's release (checked before any data is read):
    --bound, else the spec's [privacy] bound or the module's default at this budget; for
    the baseline, the bound of each released value."""
    from ..adaptive.baseline import baseline_bound
    from ..adaptive.ledger import PrivacyLedger
    from fractions import Fraction
    budget = _budget(args)
    try:
        if args.method == "baseline":
            model, value = ("GP", args.epsilon) if args.epsilon is not None else ("CGP", args.rho)
            share = PrivacyLedger(value, model).share(Fraction(1, args.k))
            return baseline_bound(model, share,
                                  module.BOUND if args.bound is None else args.bound)
        return module.release_facts(bound=args.bound, **budget)["bound"]
    except ValueError as error:
        where = "--bound" if args.bound is not None else f"{args.spec}: privacy.bound"
        raise UserError(f"{where}: {error}") from None


def _was_clipped(module, args, params, t, y, bound):
    """Whether the curve exceeds the bound and was clipped (told to the data owner only)."""
    from ..adaptive.curve import make_curve
    if len(t) < 2 and module.OUTSIDE == "zero":
        return False  # the zero function
    domain = module.curve_interval(**params)
    if args.method == "baseline":
        curve = make_curve(t, y, domain, module.OUTSIDE)
        points = curve(numpy.linspace(*domain, args.k))
        return bool(numpy.any(numpy.sqrt((points ** 2).sum(axis=-1)) > bound))
    if args.method == "project" and not (module.METRIC == "L2" and module.OUTSIDE == "zero"):
        return float(numpy.linalg.norm(module.project(t, y, **params))) > bound  # c clipped
    return make_curve(t, y, domain, module.OUTSIDE).norm() > bound


def _ledger_facts(ledger):
    """The public facts of an algorithm's last release (bound, slack, lattice step)."""
    last = ledger.releases[-1]
    return {"bound": last.bound, "slack": last.slack, "lattice": last.lattice}


def _release(module, args, params, t, y, rng, bound, projection=None):
    """One curve, clipped to ``bound``, through the chosen method (paper Alg. 2/6, 3/7, 4/8,
    Sec. 4.3, LY23); ``projection``: its projection computed elsewhere (--scheduler; its
    coefficients are clipped to ``bound``), or the error it gave."""
    from .. import adaptive
    budget = _budget(args)
    domain = module.curve_interval(**params)
    if isinstance(projection, Exception):
        raise projection
    if args.method == "project":
        if projection is None:
            private = module.project_and_privatize(t, y, rng=rng, bound=bound,
                                                   cache=not args.no_cache, **budget, **params)
        else:
            private = module.privatize(projection, rng=rng, bound=bound, **budget)
        return _Release(lambda x: module.evaluate(private, x, **params),
                        {"coefficients": private},
                        f"{module.COEF_DIM} orthonormal coefficients, expected "
                        f"{_noise_norm(module)} {module.expected_error(**budget):.4g}", domain,
                        module.release_facts(bound=bound, **budget))
    if args.method == "baseline":
        result = adaptive.baseline_points(t, y, args.k, domain=domain, window=args.window,
                                          rng=rng, bound=bound, outside=module.OUTSIDE,
                                          **budget)
    elif args.method == "select":
        result = adaptive.priv_func_select(t, y, module, beta=args.beta, rng=rng, bound=bound,
                                           split=args.split or DEFAULT_SPLIT, **budget, **params)
    elif args.method == "seg":
        result = adaptive.priv_func_seg(t, y, module, beta=args.beta, bound=bound,
                                        continuous=args.continuous, rng=rng, **budget, **params)
    else:
        result = adaptive.priv_func_unbounded(t, y, module, beta=args.beta, bound=bound,
                                              continuous=args.continuous, rng=rng, **budget)
    chosen = (f"{len(result.basis_indices)} basis functions" if result.basis_indices is not None
              else f"{args.k} points" if args.method == "baseline"
              else f"{len(result.breakpoints) - 1} segments")
    record = {"coefficients": result.coefficients, "breakpoints": result.breakpoints,
              "basis_indices": result.basis_indices, **dict(result.details)}
    support = ((float(result.breakpoints[0]), float(result.breakpoints[-1]))
               if args.method == "unbounded" else domain)
    return _Release(result.evaluate, {k: v for k, v in record.items() if v is not None},
                    f"{chosen}, ledger total {result.ledger.total:.6g}", support,
                    _ledger_facts(result.ledger))


def _value_dim(curves):
    shapes = {1 if y.ndim == 1 else y.shape[1] for y in curves.values}
    return shapes.pop() if len(shapes) == 1 else None


def _grid(args, support):
    """The public evaluation grid: --at FILE, else --grid N points over the support."""
    a, b = support
    if args.at is not None:
        if args.at.size and (args.at.min() < a or args.at.max() > b):
            raise UserError(f"--at: the public times must lie in the curve domain [{a}, {b}]")
        return args.at
    if not (math.isfinite(a) and math.isfinite(b)):
        raise UserError(f"the curve domain [{a}, {b}] is unbounded: give public times with --at")
    return numpy.linspace(a, b, args.grid)


def _jsonable(value):
    """``value`` with arrays as lists; floats exactly (JSON writes their repr)."""
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, numpy.ndarray) and value.dtype.kind == "f":
        return value.tolist()
    if isinstance(value, (numpy.ndarray, tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (numpy.integer, numpy.bool_)):
        return value.item()
    if isinstance(value, numpy.floating):
        return float(value)
    return value


def _release_format(path):
    """The release file format from its suffix, CSV for standard output (checked before any
    noise is drawn)."""
    from ..io.curves import check_writable
    if path == STDOUT:
        return ".csv"
    suffix = Path(path).suffix.lower()
    if suffix not in (".csv", ".json"):
        raise UserError(f"cannot write {path}: a release is .csv (released values on a public "
                        "grid) or .json (coefficients and the grid), or - (standard output)")
    check_writable(path)
    return suffix


def _write_files(args, files):
    """Write (path, content) pairs: the files all or none, then `-o -` on standard output."""
    from ..io.curves import write_files_atomically
    written = [(path, content) for path, content in files if path != STDOUT]
    write_files_atomically(written)
    for path, _ in written:
        _say(args, f"wrote {path}")
    for path, content in files:
        if path == STDOUT:
            sys.stdout.write(content)


def _metadata(args, **extra):
    if args.epsilon is None:
        budget = {"rho": args.rho}
    else:
        budget = {"epsilon": args.epsilon, **({"delta": args.delta} if "delta" in args else {})}
    return {"gpcompiler": __version__, **extra, "method": args.method, "budget": budget}


def _declared_units(units, curve=False):
    """Release metadata of the spec's declared units: {"units": {"domain": ..., "values":
    ...}} (a curve's domain unit as one string, a box's as one per variable), or nothing
    when the spec declares none."""
    domain = units["domain"][0] if curve else list(units["domain"])
    declared = {key: value for key, value in (("domain", domain), ("values", units["values"]))
                if value is not None and value != [None] * len(units["domain"])}
    return {"units": declared} if declared else {}


def _csv_text(metadata, header, rows):
    """A release as CSV: ``#`` lines with the metadata, then the header and the rows."""
    lines = [f"# {key}: {json.dumps(value)}" for key, value in metadata.items()]
    lines.append(",".join(header))
    lines.extend(",".join(row) for row in rows)
    return "\n".join(lines) + "\n"


def _number(value):
    """A released number, exactly: the shortest string that reads back as the same float."""
    return repr(float(value))


def _facts_metadata(ids, facts):
    """The bound B and slack (public, one value), and the lattice step gamma: one value, or
    one per curve where the final noise scale differs (seg: what ReduceSeg left)."""
    steps = {key: f["lattice"] for key, f in zip(ids, facts)}
    first = facts[0] if facts else {"bound": None, "slack": None}
    return {"bound": first["bound"], "slack": first["slack"],
            "lattice": steps[ids[0]] if len(set(steps.values())) == 1 else steps}


def _tell_clipped(args, count, total, what, bound):
    """How many curves (fields) were clipped, if any (unless --quiet): to the data owner
    only, on standard error, labelled."""
    if count and not args.quiet:
        _not_private(f"{count} of {total} {what} clipped to the bound B = {bound!r} (their "
                     "norm exceeded it; each was still released)")


def _privatize_file(args, module, curves, releases, grids):
    """The release file: metadata (spec name, sha256, method, budget), and per curve the
    released coefficients (JSON) and the released function on its public grid."""
    metadata = _metadata(args, spec=module.NAME, spec_sha256=module.SPEC_SHA256,
                         **_facts_metadata(curves.ids, [r.facts for r in releases]),
                         **_declared_units(module.UNITS, curve=True))
    values = [numpy.asarray(r.evaluate(g)).reshape(len(g), -1) for r, g in zip(releases, grids)]
    if args.output_format == ".json":
        return json.dumps({**metadata, "value_names": list(curves.value_names), "curves": [
            {"curve": key, **_jsonable(release.record), "grid": _jsonable(grid),
             "values": _jsonable(v)}
            for key, release, grid, v in zip(curves.ids, releases, grids, values)]}) + "\n"
    metadata["grid"] = (f"--at {args.at_path}" if args.at is not None
                        else f"{args.grid} points over the curve domain")
    rows = ([key, repr(float(ti)), *map(_number, vi)]
            for key, grid, v in zip(curves.ids, grids, values) for ti, vi in zip(grid, v))
    return _csv_text(metadata, ["curve", "t", *curves.value_names], rows)


def cmd_privatize(args):
    """`gpcompiler privatize SPEC INPUT`: privatize curves with the chosen method; the
    release goes to -o FILE or standard output."""
    from ..io.curves import read_curves
    _method_options(args)
    args.output_format = _release_format(args.output)
    _check_plot(args.plot)
    module = _mechanism(args.spec)
    params = _parameters(args.param, module, args.method)
    if args.scheduler is not None and (args.method != "project" or hasattr(module, "DIMENSION")):
        raise UserError("--scheduler distributes the projections of curves (--method project); "
                        + (f"{args.spec} is over several variables" if hasattr(module, "DIMENSION")
                           else f"--method {args.method} runs in this process"))
    if hasattr(module, "DIMENSION"):
        return _privatize_fields(args, module, params)
    if args.kind is not None:
        raise UserError(f"--kind applies to specs over several variables, not to {args.spec}")
    _check_spec_for_method(args.spec, module, args.method, params)
    curves = read_curves(args.input, lenient=True)
    dimension = _value_dim(curves)
    if dimension != module.VALUE_DIM:
        raise DataError(f"{args.input}: {len(curves.value_names)} value column(s) "
                        f"({', '.join(curves.value_names)}) but {module.SPEC_PATH} has values in "
                        f"R^{module.VALUE_DIM}: refusing to guess (several columns could be read "
                        "as a batch of curves)")
    bound = _release_bound(module, args)
    rng = numpy.random.default_rng(args.seed) if args.seed is not None else None
    releases, grids, clipped = [], [], 0
    engine = _engine(args)
    projections = ([None] * len(curves.ids) if engine is None
                   else engine.project_batch(module, curves, params))
    bar = _bar(args, len(curves.ids), "curve")
    invalid = list(curves.invalid)
    if args.method != "unbounded":
        _grid(args, module.curve_interval(**params))  # public --at times, before any noise
    used = []
    for key, t, y, projection in zip(curves.ids, curves.times, curves.values, projections):
        try:
            release = _release(module, args, params, t, y, rng, bound, projection)
        except (ValueError, TypeError) as error:  # e.g. times outside the curve interval
            invalid.append(f"{key} ({error}{_domain_hint(module, args.method, params, error)})")
            t, y = t[:0], y[:0]
            release = _release(module, args, params, t, y, rng, bound)
        grid = _grid(args, release.support)
        clipped += _was_clipped(module, args, params, t, y, bound)
        used.append((t, y))
        releases.append(release)
        grids.append(grid)
        bar.update()
    bar.close()
    _tell_clipped(args, clipped, len(curves.ids), "curves", bound)
    if invalid and not args.quiet:
        _not_private(f"{len(invalid)} of {len(curves.ids)} curves were not valid functions (a "
                     "NaN or infinite value, decreasing times, or times outside the curve "
                     "interval); each was released as the zero function: "
                     + "; ".join(map(str, invalid)))
    for key, release in zip(curves.ids, releases):
        _say(args, f"{key}: {args.method}: {release.summary}")
    if args.compare:
        for key, (t, y), release in zip(curves.ids, used, releases):
            error = numpy.asarray(release.evaluate(t)) - y
            _not_private(f"{key}: {t.size} samples" + (
                f"; RMS error of the release at the samples "
                f"{float(numpy.sqrt(numpy.mean(error ** 2))):.4g}" if t.size else ""))
    files = [(args.output, _privatize_file(args, module, curves, releases, grids))]
    if args.plot:
        files.append((args.plot, _png(release_figure(curves, releases, grids,
                                                     _title(module, args, params),
                                                     args.compare, module.UNITS))))
    _write_files(args, files)
    return 0


def _noise_norm(module):
    """What expected_error measures: the noise's norm in the spec's metric."""
    return "L2 noise" if module.METRIC == "L2" else f"noise ({module.METRIC} norm of the spec)"


def _privatize_fields(args, module, params):
    """Gridded fields through project_grid and privatize (paper Sec. 3.2, Alg. 2/6); the
    release is the function evaluated on a public grid of about --grid points."""
    from ..io.fields import read_fields
    over = f"{args.spec} is over {module.DIMENSION} variables"
    for used, problem in ((args.method != "project", f"--method {args.method} is for curves: "
                           f"{over} (fields use --method project)"),
                          (args.at is not None, f"--at is for curves: {over} (a field's "
                           "release is evaluated on --grid N public points)"),
                          (args.plot is not None and module.DIMENSION != 2,
                           f"--plot draws fields of two variables: {over}"),
                          (args.grid > MAX_FIELD_GRID, f"--grid {args.grid}: a field's release "
                           f"is evaluated on at most {MAX_FIELD_GRID} public points (with m "
                           "basis values per point)")):
        if used:
            raise UserError(problem)
    kind = args.kind or "linear"
    box = module.domain(**params)
    fields = read_fields(args.input, module.VARIABLES, box, module.VALUE_DIM, kind)
    if not fields:
        raise DataError(f"{args.input}: no fields to privatize")
    shapes = {field.values.shape for field in fields}
    hint = ""
    if len(fields) > 1 and module.VALUE_DIM == 1 and any(s[-1] <= 3 for s in shapes):
        hint = (f" (if it is one field of {min(s[-1] for s in shapes)}-vectors, its spec needs "
                "[values] dimension)")
    _say(args, f"{args.input}: {len(fields)} field{'s' if len(fields) > 1 else ''} "
               + (f"of {' x '.join(map(str, shapes.pop()))} values" if len(shapes) == 1
                  else "on their own grids")
               + f" ({kind}), each privatized with the whole budget{hint}")
    budget = _budget(args)
    bound = _release_bound(module, args)
    rng = numpy.random.default_rng(args.seed) if args.seed is not None else None
    released, clipped = [], 0
    for field in fields:
        where = f"{args.input}: field {field.id!r}"
        try:
            released.append(module.project_and_privatize(field.grids, field.values, kind=kind,
                                                         rng=rng, bound=bound, **budget,
                                                         **params))
        except ValueError as error:
            raise DataError(f"{where}: {error}{_domain_hint(module, 'project', params, error)}") \
                from None
        grids = [numpy.asarray(g, dtype=float) for g in field.grids]
        clipped += bool(numpy.any(module._clip_fields(grids, field.values, kind, bound)
                                  != field.values))
    _tell_clipped(args, clipped, len(fields), "fields", bound)
    per_axis = max(2, round(args.grid ** (1 / module.DIMENSION)))
    axes = [numpy.linspace(lo, hi, per_axis) for lo, hi in box]
    points = numpy.stack(numpy.meshgrid(*axes, indexing="ij"), axis=-1)
    for field in fields:
        _say(args, f"{field.id}: project: {module.COEF_DIM} orthonormal coefficients, expected "
                   f"{_noise_norm(module)} {module.expected_error(**budget):.4g}")
    if args.compare:
        for field, c in zip(fields, released):
            at = [g if kind == "linear" else (g[1:] + g[:-1]) / 2 for g in field.grids]
            nodes = numpy.stack(numpy.meshgrid(*at, indexing="ij"), axis=-1)
            error = module.evaluate(c, nodes, **params) - field.values
            _not_private(f"{field.id}: RMS error of the release at the data "
                         f"{'nodes' if kind == 'linear' else 'cell centres'} "
                         f"{float(numpy.sqrt(numpy.mean(error ** 2))):.4g}")
    metadata = _metadata(args, spec=module.NAME, spec_sha256=module.SPEC_SHA256, kind=kind,
                         **module.release_facts(bound=bound, **budget),
                         **_declared_units(module.UNITS))
    values = [module.evaluate(c, points, **params) for c in released]
    if args.output_format == ".json":
        text = json.dumps({**metadata, "variables": list(module.VARIABLES), "fields": [
            {"field": field.id, "coefficients": _jsonable(c),
             "grid": [_jsonable(a) for a in axes], "values": _jsonable(v)}
            for field, c, v in zip(fields, released, values)]}) + "\n"
    else:
        metadata["grid"] = f"{per_axis} points per variable over the box"
        flat = points.reshape(-1, module.DIMENSION)
        names = [f"value{r + 1}" for r in range(module.VALUE_DIM)] if module.VALUE_DIM > 1 \
            else ["value"]
        rows = ([field.id, *(repr(float(x)) for x in point), *map(_number, numpy.atleast_1d(v))]
                for field, value in zip(fields, values)
                for point, v in zip(flat, value.reshape(len(flat), -1)))
        text = _csv_text(metadata, ["field", *module.VARIABLES, *names], rows)
    files = [(args.output, text)]
    if args.plot:
        files.append((args.plot, _png(field_figure(module, fields, axes, values, args.compare,
                                                   _title(module, args, params)))))
    _write_files(args, files)
    return 0


def field_figure(module, fields, axes, values, compare, title, shown=4):
    """Heat maps of the first ``shown`` released fields of two variables on the public grid
    (2-vector values: their length, with arrows; n > 2: the first component); with compare,
    the first input field too, labelled "not private". All panels share one colour scale."""
    pyplot = _pyplot()
    n = module.VALUE_DIM
    panels = [(f"field {field.id}: release", axes, numpy.asarray(v).reshape(
        tuple(a.size for a in axes) + (n,))) for field, v in zip(fields, values)][:shown]
    if len(fields) > shown:
        title += f"\n(the first {shown} of {len(fields)} fields)"
    if compare:
        field = fields[0]
        panels.insert(0, (f"field {field.id}: input data (not private)", field.grids,
                          field.values.reshape(field.values.shape[:2] + (n,))))
    figure, axis_list = pyplot.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.5),
                                        squeeze=False, layout="constrained")
    label = {1: "value", 2: "length of the value"}.get(n, f"component 1 of {n}")
    shown = [numpy.hypot(v[..., 0], v[..., 1]) if n == 2 else v[..., 0] for _, _, v in panels]
    low, high = min(v.min() for v in shown), max(v.max() for v in shown)  # one colour scale
    for axis, (name, grid, value), shown_value in zip(axis_list[0], panels, shown):
        nodal = shown_value.shape == (grid[0].size, grid[1].size)
        mesh = axis.pcolormesh(grid[0], grid[1], shown_value.T, vmin=low, vmax=high,
                               shading="gouraud" if nodal else "flat")
        if n == 2:
            _arrows(axis, grid, value, nodal)
        axis.set_title(name)
        domain, values = module.UNITS["domain"], module.UNITS["values"]
        axis.set_xlabel(f"{module.VARIABLES[0]} ({domain[0] or 'spec units'})")
        axis.set_ylabel(f"{module.VARIABLES[1]} ({domain[1] or 'spec units'})")
        figure.colorbar(mesh, ax=axis, label=f"{label} ({values or 'data units'})")
    figure.suptitle("\n".join(textwrap.fill(line, 60 * len(panels))
                               for line in title.splitlines()))
    return figure


def _arrows(axis, grid, value, nodal, count=16):
    """The 2-vector values as arrows on at most count x count nodes (or cell centres)."""
    centres = [g if nodal else (g[:-1] + g[1:]) / 2 for g in grid]
    keep = [numpy.unique(numpy.linspace(0, c.size - 1, min(count, c.size)).astype(int))
            for c in centres]
    x, y = numpy.meshgrid(centres[0][keep[0]], centres[1][keep[1]], indexing="ij")
    v = value[numpy.ix_(keep[0], keep[1])]
    axis.quiver(x, y, v[..., 0], v[..., 1], color="white", alpha=0.8)


def _title(module, args, params):
    """The plot title: the spec, the method, the budget and the public parameter values."""
    used = [] if args.method == "unbounded" else [
        f"{name} = {value:g}" for name, value in {**module.PARAMETERS, **params}.items()]
    budget = f"ε = {args.epsilon:g}" if args.epsilon is not None else f"ρ = {args.rho:g}"
    return f"{module.TITLE}\n" + ", ".join([args.method, budget, *used])


def _check_plot(path):
    """--plot: a writable .png path, and matplotlib installed (checked before any noise)."""
    from ..io.curves import check_writable
    if path is None:
        return
    if not path.lower().endswith(".png"):
        raise UserError(f"--plot {path}: expected a .png file name")
    check_writable(path)
    _pyplot()


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("plotting needs matplotlib: pip install 'gpcompiler[plot]'") from None
    return plt


def _png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    _pyplot().close(figure)
    return buffer.getvalue()


# One colour per curve sharing an axis: qualitative colours, no grey (grey is the true data).
PALETTE = ("C1", "C0", "C2", "C3", "C4")
SHARED_AXIS = len(PALETTE)  # up to this many curves share one axis; more: small multiples
MAX_PANELS = 100    # small multiples of more curves show the first MAX_PANELS


def _with_unit(name, unit):
    """An axis label: ``name (unit)``, unless ``name`` already states its unit."""
    return f"{name} ({unit})" if unit and "(" not in name else name


def _curve_labels(curves, units):
    """(x label, y label) of curve plots: the data's labels, with the spec's declared units
    (``units``: the module's UNITS) where the data's do not state them."""
    labels = curves.value_labels or curves.value_names
    values = units.get("values") if units else None
    if curves.values[0].ndim == 2:
        return _with_unit(labels[0], values), _with_unit(labels[1], values)
    domain = (units.get("domain") or (None,))[0] if units else None
    return _with_unit(curves.time_label, domain), _with_unit(labels[0], values)


def release_figure(curves, releases, grids, title, compare=False, units=None):
    """The releases on their public grids (two-component curves as paths in the plane),
    axes labelled with their units; with ``compare`` the true curves beneath them (then
    the title says "not private"). Up to SHARED_AXIS curves share one axis, one colour
    each (its true curve faded in that colour); more are small multiples on shared axes,
    one curve per panel (the first MAX_PANELS). The legend is outside the data."""
    title += "\nnot private: shows the true data" if compare else ""
    if len(curves.ids) > SHARED_AXIS:
        return _small_multiples(curves, releases, grids, title, compare, units)
    plane = curves.values[0].ndim == 2
    figure, axis = _pyplot().subplots(figsize=(8.5, 6) if plane else (11, 4.5),
                                      layout="constrained")
    several = len(curves.ids) > 1
    for key, t, y, release, grid, colour in zip(curves.ids, curves.times, curves.values,
                                                releases, grids, PALETTE):
        if compare:
            axis.plot(*_path(t, y, plane), lw=2.4, color=colour if several else "0.6",
                      alpha=0.35 if several else 1.0, zorder=1)
        axis.plot(*_path(grid, numpy.asarray(release.evaluate(grid)), plane), lw=0.9,
                  color=colour, label=f"private release: {key}" if several else
                  "private release", zorder=2)
    _label_axes(axis, curves, units, plane)
    axis.set_title(title, fontsize=9)
    handles, names = axis.get_legend_handles_labels()
    if compare:
        handles.insert(0, _pyplot().Line2D([], [], lw=2.4, color="0.6",
                                           alpha=0.35 if several else 1.0))
        names.insert(0, "original (true data)" + (", faded in its release's colour"
                                                  if several else ""))
    axis.legend(handles, names, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1),
                borderaxespad=0)
    return figure


def _path(t, y, plane):
    return (y[:, 0], y[:, 1]) if plane else (t, y)


def _label_axes(axis, curves, units, plane):
    x_label, y_label = _curve_labels(curves, units)
    axis.set_xlabel(x_label)
    axis.set_ylabel(y_label)
    if plane:
        axis.set_aspect("equal", adjustable="datalim")
    elif curves.seconds_per_unit:
        scale = curves.seconds_per_unit
        axis.secondary_xaxis("top", functions=(lambda x: x * scale, lambda s: s / scale)
                             ).set_xlabel("time (s)")


def _small_multiples(curves, releases, grids, title, compare, units):
    """One panel per curve (the first MAX_PANELS) on shared axes: the release over its
    true curve in grey; one legend to the right of the panels."""
    pyplot = _pyplot()
    shown = min(len(curves.ids), MAX_PANELS)
    columns = math.ceil(math.sqrt(shown))
    rows = math.ceil(shown / columns)
    plane = curves.values[0].ndim == 2
    figure, axes = pyplot.subplots(rows, columns, sharex=True, sharey=True, squeeze=False,
                                   figsize=(min(14, 2.2 * columns + 1.2),
                                            min(12.5, 1.6 * rows + 1.8)), layout="constrained")
    for axis, key, t, y, release, grid in zip(axes.flat, curves.ids, curves.times,
                                              curves.values, releases, grids):
        if compare:
            axis.plot(*_path(t, y, plane), lw=1.6, color="0.65", zorder=1)
        axis.plot(*_path(grid, numpy.asarray(release.evaluate(grid)), plane), lw=0.7,
                  color="C1", zorder=2)
        axis.set_title(str(key), fontsize=7, pad=2)
        axis.tick_params(labelsize=6)
        if plane:
            axis.set_aspect("equal", adjustable="box")
    for axis in axes.flat[shown:]:
        axis.set_visible(False)
    x_label, y_label = _curve_labels(curves, units)
    figure.supxlabel(x_label, fontsize=9)
    figure.supylabel(y_label, fontsize=9)
    if len(curves.ids) > shown:
        title += f"\n(the first {shown} of {len(curves.ids)} curves)"
    figure.suptitle(title, fontsize=9)
    handles = [pyplot.Line2D([], [], lw=0.7, color="C1")]
    names = ["private release (one curve per panel)"]
    if compare:
        handles.append(pyplot.Line2D([], [], lw=1.6, color="0.65"))
        names.append("original (true data)")
    figure.legend(handles, names, loc="outside right center", fontsize="small",
                  frameon=False)
    return figure


def cmd_cdf(args):
    """`gpcompiler cdf FILE ...`: (epsilon, delta)-DP CDF of one column (second paper)."""
    from .. import cdf
    columns = (args.column or []) + (args.columns or [])
    if len(columns) > 1:
        return _joint_cdf(args, columns)
    if len(args.lo or ()) > 1 or len(args.hi or ()) > 1:
        raise UserError("--lo/--hi: one public bound each for one column (one per column only "
                        "with several --column)")
    args.column = columns[0] if columns else None
    args.lo, args.hi = (bound[0] if bound else None for bound in (args.lo, args.hi))
    args.output_format = _release_format(args.output) if args.output else None
    _check_plot(args.plot)
    lo, hi, degree, spec = _cdf_setup(args)
    args.column = args.column or ("wage" if args.file == "bundled:cps1988" else None)
    data = _cdf_column(args, lo, hi)
    # The estimators clip to [lo, hi] after mapping to [-1, 1]; clipping first gives the same
    # numbers and keeps 2 (x - lo) finite (see _check_bounds).
    clipped = numpy.clip(data, lo, hi)
    rng = numpy.random.default_rng(args.seed) if args.seed is not None else None
    try:
        if degree == "auto":
            result = cdf.estimate(clipped, lo=lo, hi=hi, epsilon=args.epsilon, delta=args.delta,
                                  degree=degree, method=args.method, rng=rng)
            released = {"points": result.grid, "point_values": result.values}
            degree = result.degree
        elif args.method in LEGENDRE_METHODS:
            noisy = cdf.Statistics.from_data(clipped, lo=lo, hi=hi, degree=degree,
                                             method=args.method
                                             ).privatize(epsilon=args.epsilon, delta=args.delta,
                                                         rng=rng)
            result = noisy.estimate()
            released = {"coefficients" if args.method == "direct" else "moments":
                        noisy.noisy_sums / noisy.count}
        else:
            result = cdf.estimate(clipped, lo=lo, hi=hi, epsilon=args.epsilon, delta=args.delta,
                                  degree=degree, method=args.method, rng=rng)
            released = {"points": result.grid, "point_values": result.values}
    except ValueError as error:
        raise DataError(str(error)) from None
    grid = args.at if args.at is not None else numpy.linspace(lo, hi, args.grid)
    probabilities = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)
    _say(args, f"{args.method}: N = {data.size}, sigma = {result.sigma:.4g}, sensitivity = "
               f"{result.sensitivity:.4g}, budget (epsilon, delta) = "
               f"({args.epsilon}, {args.delta})" + _auto_note(result, args))
    _say(args, "      p   private quantile")
    for p in probabilities:
        _say(args, f"  {p:5.2f}   {float(result.quantile(p)):16.4f}")
    if args.compare:
        data = numpy.asarray(data)      # from the workers, with --scheduler
        kolmogorov, l2 = cdf.distances(result, data)
        _not_private("true quantiles " + ", ".join(
            f"{p:g}: {numpy.quantile(data, p):.4f}" for p in probabilities)
            + f"; Kolmogorov distance {kolmogorov:.4f}, L2 distance {l2:.4f} "
              "(on the [-1, 1] scale)")
    files = []
    if args.output:
        smooth = {"degree": degree} if args.method in LEGENDRE_METHODS else {}
        if len(result.spent) == 2:
            smooth["degree_selection_epsilon"] = result.spent[0][0]
        metadata = _metadata(args, **spec, lo=lo, hi=hi, **smooth, records=int(data.size))
        values = result.cdf(grid)
        files.append((args.output, json.dumps(
            {**metadata, **_jsonable(released), "grid": _jsonable(grid),
             "cdf": _jsonable(values)}) + "\n" if args.output_format == ".json" else
            _csv_text(metadata, ["x", "cdf"],
                      ([repr(float(x)), _number(v)] for x, v in zip(grid, values)))))
    if args.plot:
        unit = spec.get("units", {}).get("domain")
        files.append((args.plot, _png(_cdf_figure(args, result, data, lo, hi, degree, unit))))
    _write_files(args, files)
    return 0


def _joint_cdf(args, columns):
    """`gpcompiler cdf --column a --column b ...`: the (epsilon, delta)-DP joint CDF of
    several columns (docs/design.md, "CDF estimation"), released on a public grid."""
    from ..cdf import joint
    from ..io.curves import dataset_files, read_dataset_column
    k = len(columns)
    problems = [(len(set(columns)) < k, f"--column: a column is named twice ({', '.join(columns)})"),
                (args.spec is not None, "--spec gives the bounds of one column; give --lo and "
                                        "--hi once per column for a joint CDF"),
                (args.method not in joint.JOINT_METHODS, f"--method {args.method}: a joint CDF "
                 f"uses {' or '.join(joint.JOINT_METHODS)}"),
                (args.degree is not None and args.method != "direct",
                 f"--degree does not apply to --method {args.method}"),
                (args.at is not None, "--at gives times of one column; a joint CDF is released "
                                      "on --grid N points (N^(1/k) per column)"),
                (args.plot is not None, "--plot draws the CDF of one column"),
                (args.scheduler is not None, "--scheduler: a joint CDF of several columns is "
                                             "computed in memory (without --scheduler)")]
    problems += [(len(given or ()) != k, f"{name}: give one public bound per column ({k} for "
                  f"{', '.join(columns)}), got {len(given or ())}")
                 for name, given in (("--lo", args.lo), ("--hi", args.hi))]
    for failed, message in problems:
        if failed:
            raise UserError(message)
    for lo, hi in zip(args.lo, args.hi):
        _check_bounds(lo, hi)
    args.output_format = _release_format(args.output) if args.output else None
    files = dataset_files(args.file)
    data = numpy.stack([read_dataset_column(files, column) for column in columns], axis=1)
    _clipped(args, int(numpy.count_nonzero(numpy.any((data < args.lo) | (data > args.hi),
                                                     axis=1))), "of some column")
    degree = 8 if args.degree is None else args.degree
    rng = numpy.random.default_rng(args.seed) if args.seed is not None else None
    try:
        result = joint.joint_estimate(data, lo=args.lo, hi=args.hi, epsilon=args.epsilon,
                                      delta=args.delta, degree=degree, method=args.method,
                                      rng=rng)
    except ValueError as error:
        raise DataError(str(error)) from None
    degree = list(result.degree) if result.degree is not None else degree
    _say(args, f"{args.method}: N = {data.shape[0]}, {k} columns, sigma = {result.sigma:.4g}, "
               f"sensitivity = {result.sensitivity:.4g}, budget (epsilon, delta) = "
               f"({args.epsilon}, {args.delta})"
               + (f"; degrees {degree} chosen privately" if args.degree == "auto" else ""))
    _say(args, "      p   " + "".join(f"{c[:16]:>18}" for c in columns) + "  (private marginal "
                                                                           "quantiles)")
    for p in (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95):
        _say(args, f"  {p:5.2f}   " + "".join(f"{float(result.marginal(i).quantile(p)):18.4f}"
                                              for i in range(k)))
    if args.compare:
        _not_private(f"Kolmogorov distance to the empirical joint CDF "
                     f"{joint.joint_distances(result, data):.4f}")
    if args.output:
        _write_files(args, [(args.output, _joint_cdf_file(args, columns, result, degree,
                                                          data.shape[0]))])
    return 0


def _auto_note(result, args):
    """The degree and the budget split of a release with --degree auto (else "")."""
    if args.degree != "auto":
        return ""
    (selection, _, _), (release, _, _) = result.spent
    return (f"; degree K = {result.degree} chosen privately with epsilon {selection:.4g}, "
            f"released with epsilon {release:.4g}")


def _joint_cdf_file(args, columns, result, degree, records):
    """The release of a joint CDF: the released function on a public tensor grid of about
    --grid points (N^(1/k) per column); nothing else from the data but its record count."""
    k = len(columns)
    grids = [numpy.linspace(lo, hi, max(2, round(args.grid ** (1 / k))))
             for lo, hi in zip(args.lo, args.hi)]
    mesh = numpy.stack(numpy.meshgrid(*grids, indexing="ij"), axis=-1)
    values = result.cdf(mesh)
    metadata = _metadata(args, columns=columns, lo=list(args.lo), hi=list(args.hi),
                         **({"degree": degree} if args.method == "direct" else {}),
                         records=int(records))
    if args.output_format == ".json":
        return json.dumps({**metadata, "grids": _jsonable(grids), "cdf": _jsonable(values)}) + "\n"
    return _csv_text(metadata, columns + ["cdf"], (
        [repr(float(x)) for x in point] + [_number(v)]
        for point, v in zip(mesh.reshape(-1, k), values.ravel())))


def _cdf_column(args, lo, hi):
    """The column of `cdf`: in memory, or a Dask array with --scheduler (the same values,
    read on the workers); says how many records lie outside [lo, hi]."""
    from ..io.curves import dataset_files, read_dataset_column
    files = dataset_files(args.file)
    engine = _engine(args)
    if engine is None:
        data = read_dataset_column(files, args.column)
        outside = int(numpy.count_nonzero((data < lo) | (data > hi)))
    else:
        data, outside = engine.dataset_column(files, args.column, lo, hi)
    _clipped(args, outside, f"[{lo:g}, {hi:g}]")
    return data


def _clipped(args, count, bounds):
    """The data owner's count of records clipped to the public ``bounds`` (standard error;
    it is not released)."""
    if count and not args.quiet:
        print(f"{count} record{'s' if count > 1 else ''} clipped (not private): outside the "
              f"public bounds {bounds}", file=sys.stderr)


def _scheduled(command):
    """``command`` with the lifetime of a --scheduler client: connected on first use
    (:func:`_engine`), closed when the command ends."""
    def run(args):
        with contextlib.ExitStack() as stack:
            args.scheduler_stack = stack
            return command(args)
    run.__doc__ = command.__doc__
    return run


def _engine(args):
    """gpcompiler.engines.dask with a client of --scheduler connected, or None without it."""
    if args.scheduler is None:
        return None
    try:
        from ..engines import dask as engine
    except ImportError:
        raise UserError("--scheduler needs Dask: pip install 'gpcompiler[dask]'") from None
    if not getattr(args, "connected", False):
        args.scheduler_stack.enter_context(engine.connected(args.scheduler))
        args.connected = True
    return engine


def _check_bounds(lo, hi):
    """Public CDF bounds: finite, lo < hi, and 2 (hi - lo) finite (the estimators map
    [lo, hi] to [-1, 1] through 2 (x - lo) / (hi - lo))."""
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise UserError(f"--lo/--hi: the public bounds need finite lo < hi, got [{lo:g}, {hi:g}]")
    if not math.isfinite(2 * (hi - lo)):
        raise UserError(f"--lo/--hi: the width of [{lo:g}, {hi:g}] overflows float64 "
                        f"(2 (hi - lo) must be below {sys.float_info.max:.3g}): rescale the data")


def _cdf_setup(args):
    """Public bounds and degree: from a kind = "cdf" spec (--spec) or --lo/--hi/--degree."""
    if args.degree is not None and args.method not in LEGENDRE_METHODS:
        raise UserError(f"--degree does not apply to --method {args.method} "
                        f"(only to {', '.join(LEGENDRE_METHODS)})")
    if args.degree == "auto" and (args.method != "direct" or args.spec is not None):
        raise UserError("--degree auto needs --method direct and --lo/--hi (a --spec declares "
                        "its degree)")
    lo, hi, degree, spec = _cdf_bounds(args)
    _check_bounds(lo, hi)
    if args.method in LEGENDRE_METHODS and degree != "auto" and degree < 1:
        raise UserError(f"the {args.method} method needs a Legendre degree K >= 1, got {degree}"
                        + (f" from {args.spec}" if args.spec else ""))
    return lo, hi, degree, spec


def _cdf_bounds(args):
    """(lo, hi, degree, spec metadata) from --spec or the options."""
    degree = args.degree
    if args.spec is None:
        if args.lo is None or args.hi is None:
            raise UserError("give the public bounds --lo and --hi, or a kind = \"cdf\" --spec")
        return args.lo, args.hi, 10 if degree is None else degree, {}
    from ..compiler.build import load
    try:
        module = load(args.spec)
    except UserError as error:
        raise _named(args.spec, error) from None
    if not all(hasattr(module, name) for name in ("LO", "HI", "DEGREE")):
        raise UserError(f"{args.spec} is not a kind = \"cdf\" spec (it is a mechanism for "
                        "curves or fields): use `gpcompiler privatize`")
    for option, value, declared in (("--lo", args.lo, module.LO), ("--hi", args.hi, module.HI),
                                    ("--degree", degree, module.DEGREE)):
        if value is not None and value != declared:
            raise UserError(f"{option} {value:g} differs from {declared:g} in {args.spec}")
    return module.LO, module.HI, module.DEGREE, {"spec": module.NAME,
                                                  "spec_sha256": module.SPEC_SHA256,
                                                  **_declared_units(module.UNITS, curve=True)}


def _cdf_figure(args, result, data, lo, hi, degree, unit=None):
    """The private CDF, its axis in ``unit`` (from --spec); with --compare the empirical
    CDF beneath it ("not private")."""
    figure, axis = _pyplot().subplots(figsize=(8, 4))
    x = numpy.linspace(lo, hi, 2000)
    if args.compare:
        ordered = numpy.sort(data)
        axis.step(x, numpy.searchsorted(ordered, x, side="right") / data.size, where="post",
                  color="0.6", lw=1.6, label="empirical CDF (true data)")
    axis.plot(x, result.cdf(x), color="C1", lw=1,
              label=f"private ({args.method}"
              + (f", K={degree})" if args.method in LEGENDRE_METHODS else ")"))
    unit = unit or ("USD per week" if args.file == "bundled:cps1988" else None)
    axis.set_xlabel(_with_unit(args.column, unit))
    axis.set_ylabel("cumulative probability")
    axis.set_title(f"(ε, δ) = ({args.epsilon:g}, {args.delta:g}), N = {data.size}"
                   + ("\nnot private: shows the true data" if args.compare else ""), fontsize=9)
    axis.legend()
    figure.tight_layout()
    return figure


def cmd_audit(args):
    """`gpcompiler audit SPEC | --suite | --power`: black-box audit and noise conformance."""
    from ..audit import suite as audit_suite
    mode = "quick" if args.quick else "full"
    if args.power:
        bar = _audit_bar(args, len(audit_suite.power_tasks(mode)))
        results = audit_suite.run_power(mode, jobs=args.jobs, progress=bar.update_with,
                                        alpha=args.alpha)
        bar.close()
        print(audit_suite.format_power(results))
        audits = [audit for _, audit, _ in results]
        failures = [a.name for _, a, mutant in results if a.violated != mutant]
    else:
        rows = _audit_rows(args, mode)
        print(audit_suite.format_table(rows))
        audits = [row.audit for row in rows]
        failures = [row.name for row in rows if not row.ok]
    for audit in audits:
        if audit.conformance is not None:
            print(audit.conformance.describe())
    bound, tests = audit_suite.false_alarm_bound(audits)
    print(f"false-alarm probability of the whole table <= {bound:.3g} "
          f"(Bonferroni over the {tests} tests of {len(audits)} audits actually run)")
    if failures:
        print(f"unexpected audit outcome for: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


def cmd_experiment(args):
    """`gpcompiler experiment NAME`: the paper's evaluation under its protocol (Sec. 5)."""
    from ..experiments import run
    out = args.out or f"experiment-{args.name}"
    options = {"column": args.column, "lo": args.lo, "hi": args.hi}
    start = time.perf_counter()
    try:
        results = run(args.name, data=args.data, quick=args.quick, simulations=args.seeds,
                      jobs=args.jobs, out=out, curves=args.curves, options=options)
    except ValueError as error:
        raise DataError(f"experiment {args.name}: {error}") from None
    for model, block in results["models"].items():
        for method, ratios in block["headline"]["ratio_best_baseline_over_paper_method"].items():
            _say(args, f"{model}: best baseline / {method} (mean {results['metric_label']}) "
                       f"at {block['symbol']} = {block['budgets'][-1]:g}: {ratios[-1]:.2f}x")
    _say(args, f"wrote {out}/results.json, {out}/table.md, "
         + ", ".join(f"{out}/{name}" for name in results["figures"])
         + f" ({time.perf_counter() - start:.0f} s)")
    return 0


def _audit_rows(args, mode):
    """Rows of `audit --suite` or of `audit SPEC` (one per claim, sharing --alpha)."""
    from ..audit import suite as audit_suite
    from ..audit.blackbox import Claim
    if args.suite:
        bar = _audit_bar(args, len(audit_suite.suite_tasks(mode)))
        rows = audit_suite.run_suite(mode, jobs=args.jobs, progress=bar.update_with,
                                     alpha=args.alpha)
        bar.close()
        return rows
    if not args.spec:
        raise UserError("give a spec or generated module to audit, or --suite / --power")
    module = _audited_module(args.spec)
    claims = ([Claim("GP", args.epsilon)] if args.epsilon else []) + \
             ([Claim("CGP", args.rho)] if args.rho else [])
    claims = claims or [Claim("GP", 1.0), Claim("CGP", 0.5)]
    bar, rows = _audit_bar(args, len(claims)), []
    for claim in claims:
        audit = audit_suite.audit_mechanism(
            module, claim.model, claim.budget, mode=mode, alpha=args.alpha / len(claims),
            seed=args.seed, samples=args.samples, draws=args.draws, conformant=args.conformance)
        bar.update_with(audit)
        rows.append(audit_suite.Row(audit.name, False, audit))
    bar.close()
    return rows


def _audited_module(spec):
    """A spec's module, or a generated module file, checked to be a curve mechanism."""
    from ..compiler.build import import_module_file
    if not spec.endswith(".py"):
        return _mechanism(spec)
    if not Path(spec).is_file():
        raise UserError(f"no generated module at {spec}")
    module = import_module_file(Path(spec))
    if not hasattr(module, "privatize") or not hasattr(module, "gram"):
        raise UserError(f"{spec} is not a generated curve mechanism")
    return module


def _audit_bar(args, total):
    """The progress bar of an audit: audits done, pairs and draws so far, time left."""
    bar = _bar(args, total, " audits")
    counts = {"pairs": 0, "draws": 0}

    def update_with(audit):
        if audit.black_box:
            counts["pairs"] += len(audit.black_box.pairs)
        if audit.conformance:
            counts["draws"] += audit.conformance.draws
        bar.set_postfix(counts, refresh=False)
        bar.update(1)
    bar.update_with = update_with
    return bar


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2), and negative numbers in any float
    notation (-5e3, -.5, -1E-3, -inf) taken as option values, not options."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(
            r"^-((\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|inf|infinity)$", re.IGNORECASE)

    def error(self, message):
        self.exit(2, f"gpcompiler: error: {message} (see `{self.prog} --help`)\n")


class _Help(argparse.RawDescriptionHelpFormatter):
    """Help text with every option's default."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (action.option_strings and "default" not in text
                and action.default not in (None, False, argparse.SUPPRESS)):
            text += " (default: %(default)s)"
        return text


def _typed(convert, accept, expected):
    """argparse type: ``convert(text)`` satisfying ``accept``, else a one-line error."""
    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not accept(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value
    parse.__name__ = expected
    return parse


_positive = _typed(float, lambda v: math.isfinite(v) and v > 0, "a positive finite number")
_probability = _typed(float, lambda v: 0 < v < 1, "a number in (0, 1)")


def _count(low, high=None):
    if high is None:
        return _typed(int, lambda v: v >= low, f"an integer >= {low}")
    return _typed(int, lambda v: low <= v <= high, f"an integer in {low}..{high}")


def _calibrated(name):
    """argparse type of cdf's --epsilon/--delta: a number in the one range where the analytic
    Gaussian mechanism is calibrated (epsilon in [0.01, 50], delta in [1e-12, 0.5))."""
    def parse(text):
        from ..cdf.gaussian import DELTA_RANGE, EPSILON_RANGE
        low, high = EPSILON_RANGE if name == "epsilon" else DELTA_RANGE
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (low <= value <= high and (name == "epsilon" or value < high)):
            raise argparse.ArgumentTypeError(
                f"expected a number in [{low:g}, {high:g}{']' if name == 'epsilon' else ')'}, "
                f"where the analytic Gaussian mechanism is calibrated, got {text!r}")
        return value
    parse.__name__ = name
    return parse


def _degree(text):
    """argparse type of --degree: an integer >= 1 or "auto"."""
    return "auto" if text == "auto" else _count(1)(text)


def _split(text):
    """argparse type of --split: four fractions of the budget (select.check_split)."""
    from ..adaptive.select import check_split
    try:
        return check_split(text.split(","))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("split: ")) from None


def _budget_value(name):
    """argparse type of --epsilon/--rho: positive, finite, with a noise scale (1/epsilon,
    1/sqrt(2 rho)) that float64 can carry (checked before any data is read)."""
    def parse(text):
        value = _positive(text)
        scale = _noise_floor({name: value})
        if not scale <= MAX_NOISE_SCALE:
            raise argparse.ArgumentTypeError(
                f"{text} gives a noise scale of {scale:.3g}, whose noise overflows float64 "
                f"arithmetic (at most {MAX_NOISE_SCALE:g})")
        return value
    parse.__name__ = name
    return parse


class _Times(argparse.Action):
    """--at FILE: read the public evaluation times at once (before any data)."""

    def __call__(self, parser, namespace, value, option_string=None):
        from ..io.curves import read_times
        try:
            setattr(namespace, self.dest, read_times(value))
        except DataError as error:
            parser.error(f"argument --at: {error}")
        namespace.at_path = value


def _common(parser, grid_help, output, at_help="curves only: evaluate the release at the "
            "public times in FILE (one per line; default: use --grid)"):
    """Options of both releasing commands: seed, output grid, files, comparison; ``output``
    is the default of -o (STDOUT or None)."""
    parser.add_argument("--seed", type=_count(0),
                        help="seed of a NumPy generator, for tests and demos only "
                             "(default: OS entropy, see docs/design.md \"Secure noise\")")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--grid", type=_count(2, MAX_GRID), default=DEFAULT_GRID, metavar="N",
                       help=grid_help)
    where.add_argument("--at", action=_Times, metavar="FILE", help=at_help)
    parser.add_argument("-o", "--output", metavar="FILE", default=output,
                        help="write the release: .csv (released values on the public grid) "
                             "or .json (also the coefficients); - is standard output (CSV; "
                             "summaries then go to standard error; missing directories are "
                             "created)" + ("" if output else " (default: none)"))
    parser.add_argument("--plot", metavar="PNG", help="write a PNG of the release (default: none)")
    parser.add_argument("--compare", action="store_true",
                        help="NOT PRIVATE: compare with the true data on stderr and in the plot")


def _scheduler_option(parser, what):
    parser.add_argument("--scheduler", metavar="ADDRESS|local",
                        help=f"compute on Dask ({what}): a scheduler address such as "
                             "tcp://HOST:8786, or local (a local cluster started here); the "
                             "release file is the one made without it for the same seed "
                             "(default: none, in this process)")


def build_parser():
    """The argparse parser of every subcommand."""
    parser = _Parser(prog="gpcompiler", description=__doc__, formatter_class=_Help)
    parser.add_argument("--version", action="version", version=f"gpcompiler {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print errors only (no progress, no summaries)")
    quiet = _Parser(add_help=False)
    quiet.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                       help="print errors only (no progress, no summaries)")
    quiet.add_argument("--version", action="version", version=f"gpcompiler {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name, text):
        return commands.add_parser(name, help=text, description=text, parents=[quiet],
                                   formatter_class=_Help)
    p = command("compile", "compile spec files into NumPy modules")
    p.add_argument("specs", nargs="+", metavar="SPEC", help="spec files (TOML)")
    p.add_argument("-o", "--output", default="generated", metavar="DIR",
                   help="directory of the generated modules")
    p.set_defaults(run=cmd_compile)
    p = command("check", "regenerate every spec and diff against the generated modules")
    p.add_argument("--specs", default="specs", metavar="DIR", help="directory of the specs")
    p.add_argument("--generated", default="generated", metavar="DIR",
                   help="directory of the committed generated modules")
    p.set_defaults(run=cmd_check)
    p = command("explain", "print the exact derivation as Markdown")
    p.add_argument("spec", help="spec file (TOML)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    p.set_defaults(run=cmd_explain)
    p = command("privatize", "privatize curves (GP or CGP) and write the release")
    p.add_argument("spec", help="spec file (TOML) of a curve mechanism")
    p.add_argument("input", help="CSV file (optionally gzip): header t,y1[,y2...] (or time,...), "
                                 "optionally a leading curve/id column, # comments allowed, or "
                                 "a quoted glob of such files (one batch); or "
                                 "bundled:ecg[:WINDOW] or bundled:ais[:COUNT]. A spec over "
                                 "several variables reads gridded data: an .npy/.npz array or "
                                 "a long-form CSV x,y[,...],value")
    p.add_argument("--kind", choices=["linear", "cells"],
                   help="gridded data (specs over several variables): the multilinear "
                        "interpolant of nodal values, or cell values (default: linear)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="spec parameter, public (e.g. T=400) (default: the spec's values)")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--epsilon", type=_budget_value("epsilon"), help="GP budget (required: "
                       "this or --rho; no default)")
    group.add_argument("--rho", type=_budget_value("rho"), help="CGP budget (required: this "
                       "or --epsilon; no default)")
    p.add_argument("--method", default="project",
                   choices=["project", "select", "seg", "unbounded", "baseline"],
                   help="Project-and-Privatize, PrivFuncSelect, PrivFuncSeg, PrivFuncSeg on an "
                        "unbounded domain, or the LY23 baseline")
    p.add_argument("--beta", type=_probability,
                   help=f"failure probability (select, seg, unbounded only; "
                        f"default: {DEFAULT_BETA})")
    p.add_argument("--split", type=_split, metavar="S1,F1,S2,F2",
                   help="PrivFuncSelect's budget shares: size SVT, first release, pruning "
                        "SVT, final release, summing to 1, e.g. 1/4,1/4,1/4,1/4 for the "
                        "paper's (select only; default: "
                        f"{','.join(str(v) for v in DEFAULT_SPLIT)}, no pruning)")
    p.add_argument("--continuous", action="store_true",
                   help="continuous output (seg, unbounded only; default: piecewise)")
    p.add_argument("--bound", type=_positive, metavar="B",
                   help="public norm bound of each release in the spec's metric (baseline: of "
                        "each released value): larger curves are clipped to it, never refused "
                        "(default: the spec's [privacy] bound, else the module's default_bound "
                        "at this budget, where the float slack is below 1e-6 of the noise)")
    p.add_argument("--k", type=_count(2),
                   help=f"points of the baseline (baseline only; default: {DEFAULT_K})")
    p.add_argument("--window", type=_count(1),
                   help="sliding-window width of the baseline, at most --k (baseline only; "
                        "default: no smoothing)")
    p.add_argument("--no-cache", action="store_true",
                   help="build the projection weights anew for every curve, so the time "
                        "taken says nothing about whether a curve's sample times equal an "
                        "earlier one's (docs/threat-model.md; the other methods and fields "
                        "never reuse weights) (default: project reuses the weights of the "
                        "last 8 grids)")
    _common(p, "evaluate the release at N evenly spaced points of the spec's curve domain "
               "(unbounded: of the released support; over k variables: N^(1/k) per "
               "variable)", STDOUT)
    _scheduler_option(p, "curves with --method project: their projections")
    p.set_defaults(run=_scheduled(cmd_privatize))
    p = command("audit", "privacy audit: black box and white-box noise conformance")
    p.add_argument("spec", nargs="?", help="a spec file or a generated module (.py)")
    p.add_argument("--suite", action="store_true",
                   help="the whole table: negative controls and every real mechanism")
    p.add_argument("--power", action="store_true",
                   help="the power table: every shipped mechanism and its mutants")
    p.add_argument("--epsilon", type=_budget_value("epsilon"),
                   help="SPEC: GP claim to audit (default: GP 1 and CGP 0.5)")
    p.add_argument("--rho", type=_budget_value("rho"),
                   help="SPEC: CGP claim to audit (default: see --epsilon)")
    p.add_argument("--samples", type=_count(100),
                   help="SPEC: black-box samples per phase (default: 400000/d in "
                        "[2000, 100000]; --quick: 10000/d in [500, 100000])")
    p.add_argument("--draws", type=_count(100),
                   help="SPEC: conformance draws (default: 1000000; --quick: 200000/d "
                        "in [500, 20000])")
    p.add_argument("--conformance", action=argparse.BooleanOptionalAction, default=True,
                   help="SPEC: white-box test of the noise law")
    p.add_argument("--quick", action="store_true",
                   help="the test suite's smaller sample budget (less power)")
    p.add_argument("--alpha", type=_probability, default=1e-6,
                   help="false-alarm probability of the whole table")
    p.add_argument("--jobs", type=_count(1), default=1,
                   help="worker processes for --suite and --power")
    p.add_argument("--seed", type=_count(0), default=0, help="SPEC: seed of the audit (default: 0)")
    p.set_defaults(run=cmd_audit)
    p = command("cdf", "(epsilon, delta)-DP CDF of one column, or the joint CDF of several, "
                       "of a CSV file")
    p.add_argument("file", nargs="?", default="bundled:cps1988",
                   help="CSV or CSV.gz file with a header, a Parquet file or directory, a "
                        "quoted glob of either ('data/*.csv'), or bundled:cps1988 (CPS 1988 "
                        "weekly wages, USD) (default: bundled:cps1988)")
    p.add_argument("--column", action="append",
                   help="column to estimate; repeat it (or use --columns) for the joint CDF of "
                        "several columns (default: wage for bundled:cps1988; required for "
                        "other files)")
    p.add_argument("--columns", type=lambda text: text.split(","), metavar="A,B,...",
                   help="comma-separated columns of a joint CDF (default: none)")
    p.add_argument("--spec", help="a kind = \"cdf\" spec giving the public bounds and degree "
                                  "(default: none, use --lo/--hi/--degree)")
    p.add_argument("--lo", type=float, action="append",
                   help="public lower bound, once per column (default: from --spec)")
    p.add_argument("--hi", type=float, action="append",
                   help="public upper bound, once per column (default: from --spec)")
    p.add_argument("--epsilon", type=_calibrated("epsilon"), required=True,
                   help="DP epsilon in [0.01, 50], where the analytic Gaussian mechanism is "
                        "calibrated (required; no default)")
    p.add_argument("--delta", type=_calibrated("delta"), required=True,
                   help="DP delta in [1e-12, 0.5) (required; no default)")
    p.add_argument("--degree", type=_degree,
                   help="Legendre degree K, moments and direct only, or auto (direct: K "
                        "chosen privately with 1/5 of epsilon, docs/choosing.md) (default: "
                        "from --spec, else 10; 8 per column for a joint CDF)")
    p.add_argument("--method", default="direct",
                   choices=["moments", "direct", "histogram", "adaptive-quantiles"],
                   help="estimator (docs/design.md, \"CDF estimation\")")
    _common(p, "evaluate the private CDF at N evenly spaced points of [lo, hi]", None,
            "one column only: evaluate the private CDF at the public values in FILE (one per "
            "line; default: use --grid)")
    _scheduler_option(p, "one column: its statistics")
    p.set_defaults(run=_scheduled(cmd_cdf))
    p = command("experiment", "the paper's evaluation (Sec. 5) under its protocol")
    p.add_argument("name", choices=["ecg", "select", "trajectories", "segments", "cdf"],
                   help="ecg (Sec. 5.1), select (Sec. 5.2), trajectories (Sec. 5.3), "
                        "segments (Fig. 12), cdf (the four CDF estimators)")
    p.add_argument("--data", help="your own CSV: t,y1..yn with an optional leading curve id "
                                  "(as `privatize` reads), or for cdf a CSV with a header "
                                  "(as `cdf` reads); default: the bundled data")
    p.add_argument("--quick", action="store_true",
                   help="a few curves, 2 simulations, the ends of each budget grid")
    p.add_argument("--seeds", type=_count(1),
                   help="simulations per curve (default: 30, the paper's; 2 with --quick)")
    p.add_argument("--curves", type=_count(1), help="use only the first N curves (default: all)")
    p.add_argument("--jobs", type=_count(1), default=1, help="worker processes (default: 1)")
    p.add_argument("--out", help="output directory (default: experiment-NAME)")
    p.add_argument("--column", default="wage", help="cdf: the column of --data (default: wage)")
    p.add_argument("--lo", type=float,
                   help="cdf: public lower bound (default: 0 for the bundled wages)")
    p.add_argument("--hi", type=float,
                   help="cdf: public upper bound (default: 2500 for the bundled wages)")
    p.set_defaults(run=cmd_experiment)
    return parser


def main(argv=None):
    """Entry point; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        with numpy.errstate(over="ignore", invalid="ignore"):   # results are checked instead
            status = args.run(args)
        sys.stdout.flush()
        return status
    except UserError as error:
        print(f"gpcompiler: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`... | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as error:
        print(f"gpcompiler: error: {error.strerror or error}: {error.filename or ''}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # a bug in gpcompiler: one line, the traceback on request
        if os.environ.get("GPCOMPILER_DEBUG"):
            raise
        print(f"gpcompiler: internal error: {type(error).__name__}: {error} (a bug in "
              "gpcompiler: please report it with the command; GPCOMPILER_DEBUG=1 shows the "
              "traceback)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
