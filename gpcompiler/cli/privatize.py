"""`gpcompiler privatize`: a compiled mechanism (or an adaptive algorithm)
released on curves or fields."""
import functools
import json
import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy

from ..errors import CURVE_ERRORS, DataError, UserError
from .common import (MAX_FIELD_GRID, args_budget, named_error, not_private, plural,
                     progress_bar, say, scheduler_engine, tell_invalid)
from .figures import check_plot, field_figure, png, release_figure
from ..accounting.device import digest
from .ledger import (before_noise, charge, check_ledger_options, curve_cost, curve_records,
                     options_identity)
from .writers import (COMPACT_SUFFIXES, coefficients_file, csv_text, declared_units,
                      exact_number, facts_metadata, jsonable, ledger_facts, release_format,
                      release_metadata, tell_clipped, write_files)


def load_mechanism(spec):
    """The generated module of a mechanism spec (a cdf spec is refused with a pointer);
    every error names the spec."""
    from ..compiler.build import load
    try:
        module = load(spec)
    except UserError as error:
        raise named_error(spec, error) from None
    if not hasattr(module, "privatize") or not (hasattr(module, "project")
                                                or hasattr(module, "project_grid")):
        raise UserError(f"{spec} compiles CDF tables, not a curve mechanism: "
                        "use `gpcompiler cdf --spec` for distribution estimation")
    return module


def _parameter_values(module, params):
    """{"parameters": every spec parameter's value in this release} (public: the defaults
    and --param), or nothing for a spec without parameters; evaluate(c, t, **them)
    reproduces the released function."""
    values = {**module.PARAMETERS, **params}
    return {"parameters": values} if values else {}


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
                  "k": ("baseline",), "window": ("baseline",), "split": ("select",),
                  "key": ("project",)}


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


def _noise_source(args):
    """--key: words by address (docs/reference/randomness.md; reproducible and conformance
    releases only: a key known to others makes the noise known); --seed: a NumPy generator
    (tests, demos); else None, OS entropy."""
    from ..runtime.keyed import KeyedGenerator
    if args.key is not None and args.seed is not None:
        raise UserError("--seed and --key are two noise sources: give one")
    if args.key is not None:
        return KeyedGenerator(args.key)
    return numpy.random.default_rng(args.seed) if args.seed is not None else None


def _check_spec_for_method(spec, module, method, params):
    """Spec/method incompatibilities, before any data is read (docs/design.md, "Adaptive
    algorithms"): seg and unbounded need all polynomials of a degree in plain L2, select a
    scalar basis in plain L2 on a bounded domain, with no fixed knots."""
    where = f"{spec}: --method {method} needs"
    if method in ("seg", "unbounded") and (module.POLYNOMIAL_DEGREE is None
                                           or module.METRIC != "L2"):
        raise UserError(f"{where} a spec spanning all polynomials of some degree with the L2 "
                        f"metric (a monomial or legendre family, or specs/linear.toml)")
    if method == "unbounded" and module.OUTSIDE != "zero":
        raise UserError(f"{where} [curve] outside = \"zero\" (a curve held to the ends of the "
                        "real line has no finite norm)")
    if method == "select":
        from ..adaptive.select import check_not_piecewise
        try:
            check_not_piecewise(module)
        except ValueError as error:
            raise UserError(f"{spec}: {error}") from None
        if module.METRIC != "L2" or module.VECTOR_BASIS:
            raise UserError(f"{where} a scalar basis with the L2 metric")
        a, b = module.curve_interval(**params)
        if not (math.isfinite(a) and math.isfinite(b)):
            raise UserError(f"{where} a bounded curve domain, not [{a}, {b}] (set "
                            "domain.curve_interval in the spec)")


def _domain_hint(module, method, params, invalid):
    """For samples outside the domain: how --param sets the public domain (said once)."""
    if (not any("must lie in" in reason for _, reason in invalid) or method == "unbounded"
            or not module.PARAMETERS or module.PARAMETERS_FIXED):
        return ""
    values = {**module.PARAMETERS, **params}
    return (f"The domain is public: set it with "
            f"{' '.join(f'--param {name}=VALUE' for name in values)} (now "
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
    budget = args_budget(args)
    try:
        if args.method == "baseline":
            model, value = ("GP", args.epsilon) if args.epsilon is not None else ("CGP", args.rho)
            share = PrivacyLedger(value, model).share(Fraction(1, args.k))
            return baseline_bound(model, share,
                                  module.BOUND if args.bound is None else args.bound)
        return module.release_facts(bound=args.bound, **budget)["bound"]
    except ValueError as error:
        where = ("--bound" if args.bound is not None
                 else f"{args.spec}: privacy.bound" if module.BOUND is not None
                 else f"the default bound at this budget ({_budget_option(args)})")
        raise UserError(f"{where}: {error}") from None


def _budget_option(args):
    return f"--epsilon {args.epsilon:g}" if args.epsilon is not None else f"--rho {args.rho:g}"


def _own_release(module, args, params, key, t, y, rng, bound, projection, invalid):
    """The curve's release (_release), or None if its own computation failed in a way
    CURVE_ERRORS lists (the reason added to ``invalid``): one curve never stops another's
    release (docs/threat-model.md, "Public limits")."""
    try:
        return _release(module, args, params, t, y, rng, bound, projection)
    except CURVE_ERRORS as error:  # e.g. times outside the curve interval
        reason = f"out of memory: {error}" if isinstance(error, MemoryError) else str(error)
        invalid.append((key, reason or type(error).__name__))
    return None


def _was_clipped(module, args, params, key, t, y, bound):
    """Whether the curve exceeds the bound and was clipped (told to the data owner only;
    if that cannot be computed, it says so and counts the curve as not clipped)."""
    try:
        return _exceeds(module, args, params, t, y, bound)
    except CURVE_ERRORS as error:
        not_private(f"{key}: whether it was clipped is unknown ({type(error).__name__})")
        return False


def _exceeds(module, args, params, t, y, bound):
    """Whether the curve's norm exceeds the bound (what its clip is computed from)."""
    from ..adaptive.curve import make_curve
    if len(t) < 2 and module.OUTSIDE == "zero":
        return False  # the zero function
    domain = ((-math.inf, math.inf) if args.method == "unbounded"  # the real line (Sec. 4.3)
              else module.curve_interval(**params))
    if args.method == "baseline":
        curve = make_curve(t, y, domain, module.OUTSIDE)
        points = curve(numpy.linspace(*domain, args.k))
        return bool(numpy.any(numpy.sqrt((points ** 2).sum(axis=-1)) > bound))
    if args.method == "project" and module.SLACK_CONDITION is None and module.METRIC != "L2":
        values, factors = module._clip_curves(numpy.asarray(t, dtype=float),  # in its metric
                                              numpy.asarray(y, dtype=float), bound,
                                              module._params(params))
        return bool(factors < 1) or bool(numpy.any(values != y))
    if args.method == "project" and not (module.METRIC == "L2" and module.OUTSIDE == "zero"):
        return float(numpy.linalg.norm(module.project(t, y, **params))) > bound  # c clipped
    return make_curve(t, y, domain, module.OUTSIDE).norm() > bound


@functools.lru_cache(maxsize=8)
def _cached_facts(module, bound, budget):
    return module.release_facts(bound=bound, **dict(budget))


def _release_facts(module, bound, budget):
    """The module's public release facts at this bound and budget, derived once a batch."""
    return _cached_facts(module, bound, tuple(budget.items()))


def _release(module, args, params, t, y, rng, bound, projection=None):
    """One curve, clipped to ``bound``, through the chosen method (paper Alg. 2/6, 3/7, 4/8,
    Sec. 4.3, LY23); ``projection``: its projection computed elsewhere (--scheduler: of the
    curve clipped to ``bound``, as in memory), or the error it gave."""
    from .. import adaptive
    budget = args_budget(args)
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
                        _release_facts(module, bound, budget))
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
    chosen = (plural(len(result.basis_indices), "basis function")
              if result.basis_indices is not None
              else plural(args.k, "point") if args.method == "baseline"
              else plural(len(result.breakpoints) - 1, "segment"))
    record = {"coefficients": result.coefficients, "breakpoints": result.breakpoints,
              "basis_indices": result.basis_indices, **dict(result.details)}
    support = ((float(result.breakpoints[0]), float(result.breakpoints[-1]))
               if args.method == "unbounded" else domain)
    return _Release(result.evaluate, {k: v for k, v in record.items() if v is not None},
                    f"{chosen}, ledger total {result.ledger.total:.6g}", support,
                    ledger_facts(result.ledger))


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


def _privatize_file(args, module, curves, releases, grids, params):
    """The release file: metadata (spec name, sha256, parameter values, method, budget),
    and per curve the released coefficients (JSON) and the released function on its
    public grid."""
    metadata = release_metadata(args, spec=module.NAME, spec_sha256=module.SPEC_SHA256,
                                **(_domain(module) if args.method == "unbounded"
                                   else _parameter_values(module, params)),
                                **facts_metadata(curves.ids, [r.facts for r in releases]),
                                **declared_units(module.UNITS, curve=True), **_reading(args))
    if args.output_format == "coefficients":
        return _coefficient_release(args, module, metadata, curves.ids, releases, params)
    values = [numpy.asarray(r.evaluate(g)).reshape(len(g), -1) for r, g in zip(releases, grids)]
    if args.output_format == ".json":
        return json.dumps({**metadata, "value_names": list(curves.value_names), "curves": [
            {"curve": key, **jsonable(release.record), "grid": jsonable(grid),
             "values": jsonable(v)}
            for key, release, grid, v in zip(curves.ids, releases, grids, values)]}) + "\n"
    metadata["grid"] = (f"--at {args.at_path}" if args.at is not None
                        else f"{args.grid} points over each curve's released support"
                        if args.method == "unbounded"
                        else f"{args.grid} points over the curve domain")
    rows = ([key, repr(float(ti)), *map(exact_number, vi)]
            for key, grid, v in zip(curves.ids, grids, values) for ti, vi in zip(grid, v))
    return csv_text(metadata, ["curve", "t", *curves.value_names], rows)


def _output_format(args):
    """The release file's format (before anything is read): .json, .csv of values or of
    coefficients (--format), or .npz or Parquet of coefficients; coefficients are those of
    --method project."""
    suffix = release_format(args.output, compact=True)
    if args.format is not None and suffix not in (".csv", ".npz", ".parquet", ".pq"):
        raise UserError("--format chooses what a .csv holds: " + (
            f"{args.output} is {suffix}, coefficients with values on the grid"
            if suffix == ".json" else f"{args.output} is {suffix}"))
    compact = suffix in COMPACT_SUFFIXES
    if compact and args.format == "values":
        raise UserError(f"{args.output}: a {suffix} release holds coefficients, not values "
                        "(--format values writes .csv)")
    if (compact or args.format == "coefficients") and args.method != "project":
        raise UserError(f"{args.output}: a coefficient release is of --method project (the "
                        f"release of --method {args.method} is .csv or .json)")
    return "coefficients" if compact or args.format == "coefficients" else suffix


def _coefficient_release(args, module, metadata, ids, releases, params):
    """The bytes or text of a coefficient release (cli.writers.coefficients_file)."""
    c = numpy.array([release.record["coefficients"] for release in releases])
    a = module.to_user(c, **params)
    suffix = ".csv" if args.output == "-" else Path(args.output).suffix.lower()
    return coefficients_file(suffix, metadata, ids, c, a)


def _columns(args):
    """The public reading of the time and coordinate columns (io.curves.Columns)."""
    from ..io.curves import Columns
    return Columns(args.origin, args.time_unit, args.reference)


def _reading(args):
    """Release metadata of how the input was read: the time origin and unit, and the
    projection of lon/lat (public; docs/reference/cli.md, "Timestamps and coordinates")."""
    from ..io.curves import EARTH_RADIUS
    read = {}
    if args.origin is not None:
        read["time"] = f"{args.time_unit} since {args.origin} (UTC unless it says otherwise)"
    if args.reference is not None:
        lon, lat = args.reference
        read["projection"] = (f"local equirectangular about lon {lon!r}, lat {lat!r} on a sphere "
                              f"of radius {EARTH_RADIUS} m: x = R (lon - lon0) cos(lat0), "
                              "y = R (lat - lat0), radians")
    return read


def _domain(module):
    """{"domain": ...} of --method unbounded: the real line whatever the spec's domain and
    its parameters (paper Sec. 4.3: each curve's support is chosen privately and released
    in its breakpoints)."""
    a, b = module.curve_interval()
    return {"domain": f"the real line: --method unbounded does not use the spec's domain "
                      f"[{a:g}, {b:g}] or its parameters (each curve's support is chosen "
                      "privately and released: its first and last breakpoints)"}


def cmd_privatize(args):
    """`gpcompiler privatize SPEC INPUT`: privatize curves with the chosen method; the
    release goes to -o FILE or standard output."""
    from ..io.curves import read_curves
    _method_options(args)
    args.output_format = _output_format(args)
    check_plot(args.plot)
    check_ledger_options(args)
    module = load_mechanism(args.spec)
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
    if args.time_unit != "s" and args.origin is None:
        raise UserError("--time-unit is the unit of timestamps read from --origin: give both")
    curves = read_curves(args.input, True, _columns(args))
    dimension = _value_dim(curves)
    if dimension != module.VALUE_DIM:
        raise DataError(f"{args.input}: {len(curves.value_names)} value column(s) "
                        f"({', '.join(curves.value_names)}) but {module.SPEC_PATH} has values in "
                        f"R^{module.VALUE_DIM}: refusing to guess (several columns could be read "
                        "as a batch of curves)")
    bound = _release_bound(module, args)
    if _stored(args, module, params, curves.ids,
               lambda: [digest(t, y) for t, y in zip(curves.times, curves.values)]):
        return 0
    rng = _noise_source(args)
    releases, grids, clipped = [], [], 0
    engine = scheduler_engine(args)
    projections = ([None] * len(curves.ids) if engine is None
                   else engine.project_batch(module, curves, params, bound, not args.no_cache))
    bar = progress_bar(args, len(curves.ids), "curve")
    invalid = list(curves.invalid)
    if args.method != "unbounded":
        _grid(args, module.curve_interval(**params))  # public --at times, before any noise
    used, supports = [], {}
    for key, t, y, projection in zip(curves.ids, curves.times, curves.values, projections):
        release = _own_release(module, args, params, key, t, y, rng, bound, projection, invalid)
        if release is None:  # the zero function in its place (its error freed first)
            t, y = t[:0], y[:0]
            release = _release(module, args, params, t, y, rng, bound)
        if release.support not in supports:   # one grid array per public support
            supports[release.support] = _grid(args, release.support)
        grid = supports[release.support]
        clipped += _was_clipped(module, args, params, key, t, y, bound)
        used.append((t, y))
        releases.append(release)
        grids.append(grid)
        bar.update()
    bar.close()
    tell_clipped(args, clipped, len(curves.ids), "curves", bound)
    tell_invalid(args, invalid, len(curves.ids), "curve", "zero function",
                 _domain_hint(module, args.method, params, invalid))
    say(args, _batch_summary(args.method, curves.ids, [r.summary for r in releases]))
    if args.compare:
        for key, (t, y), release in zip(curves.ids, used, releases):
            error = numpy.asarray(release.evaluate(t)) - y
            not_private(f"{key}: {t.size} samples" + (
                f"; RMS error of the release at the samples "
                f"{float(numpy.sqrt(numpy.mean(error ** 2))):.4g}" if t.size else ""))
    text = _privatize_file(args, module, curves, releases, grids, params)
    charge(args, curve_records(args, module, params, facts_metadata(
        curves.ids, [r.facts for r in releases]), len(curves.ids)), text)
    files = [(args.output, text)]
    if args.plot:
        files.append((args.plot, png(release_figure(curves, releases, grids,
                                                     _title(module, args, params),
                                                     args.compare, module.UNITS))))
    write_files(args, files)
    return 0


def _stored(args, module, params, names, digests):
    """With --ledger: the cap check before any noise, each curve charged (all the
    wearer's on a device); with --cap, a release of the same data (its curves' names and
    sha256 ``digests()``) and options written again as stored (True), charging nothing."""
    model, _, cost = curve_cost(args, module, params)
    stored = before_noise(args, model, cost * len(names), lambda: {
        "spec_sha256": module.SPEC_SHA256, "options": options_identity(args),
        "names": repr(list(names)), "data": digests()})
    if stored is not None:
        write_files(args, [(args.output, stored)])
    return stored is not None


def _batch_summary(method, ids, summaries, shown=3):
    """One line for the whole batch: one curve's id and summary, or each distinct summary
    (the ``shown`` commonest) with how many curves it has."""
    if len(ids) == 1:
        return f"{ids[0]}: {method}: {summaries[0]}"
    counts = Counter(summaries).most_common()
    if len(counts) == 1:
        return f"{len(ids)} curves: {method}: {summaries[0]} (each)"
    parts = [f"{count} x {summary}" for summary, count in counts[:shown]]
    rest = sum(count for _, count in counts[shown:])
    return (f"{len(ids)} curves: {method}: " + "; ".join(parts)
            + (f"; {rest} with {len(counts) - shown} other summaries" if rest else ""))


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
                          (args.output_format == "coefficients", "a coefficient release "
                           f"(--format coefficients, .npz, .parquet) is for curves: {over}"),
                          (args.origin or args.reference, "--origin and --reference read "
                           f"curves: {over}"),
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
    say(args, f"{args.input}: {len(fields)} field{'s' if len(fields) > 1 else ''} "
               + (f"of {' x '.join(map(str, shapes.pop()))} values" if len(shapes) == 1
                  else "on their own grids")
               + f" ({kind}), each privatized with the whole budget{hint}")
    budget = args_budget(args)
    bound = _release_bound(module, args)
    if _stored(args, module, params, [field.id for field in fields],
               lambda: [digest(*field.grids, field.values) for field in fields]):
        return 0
    rng = _noise_source(args)
    released, clipped, invalid = [], 0, []
    for field in fields:
        try:
            c = module.project_and_privatize(field.grids, field.values, kind=kind, rng=rng,
                                             bound=bound, **budget, **params)
        except CURVE_ERRORS as error:  # its own values or grids: released as the zero field
            invalid.append((field.id, str(error) or type(error).__name__))
            c = None
        if c is None:  # drawn in order, after the error is freed
            released.append(module.privatize(numpy.zeros(module.COEF_SHAPE), rng=rng,
                                             bound=bound, **budget))
            continue
        released.append(c)
        clipped += _field_clipped(module, field, kind, bound, params)
    tell_clipped(args, clipped, len(fields), "fields", bound)
    tell_invalid(args, invalid, len(fields), "field", "zero field")
    per_axis = max(2, round(args.grid ** (1 / module.DIMENSION)))
    axes = [numpy.linspace(lo, hi, per_axis) for lo, hi in box]
    points = numpy.stack(numpy.meshgrid(*axes, indexing="ij"), axis=-1)
    for field in fields:
        say(args, f"{field.id}: project: {module.COEF_DIM} orthonormal coefficients, expected "
                   f"{_noise_norm(module)} {module.expected_error(**budget):.4g}")
    if args.compare:
        for field, c in zip(fields, released):
            at = [g if kind == "linear" else (g[1:] + g[:-1]) / 2 for g in field.grids]
            nodes = numpy.stack(numpy.meshgrid(*at, indexing="ij"), axis=-1)
            error = module.evaluate(c, nodes, **params) - field.values
            not_private(f"{field.id}: RMS error of the release at the data "
                         f"{'nodes' if kind == 'linear' else 'cell centres'} "
                         f"{float(numpy.sqrt(numpy.mean(error ** 2))):.4g}")
    metadata = release_metadata(args, spec=module.NAME, spec_sha256=module.SPEC_SHA256, kind=kind,
                                **_parameter_values(module, params),
                                **module.release_facts(bound=bound, **budget),
                                **declared_units(module.UNITS))
    values = [module.evaluate(c, points, **params) for c in released]
    if args.output_format == ".json":
        text = json.dumps({**metadata, "variables": list(module.VARIABLES), "fields": [
            {"field": field.id, "coefficients": jsonable(c),
             "grid": [jsonable(a) for a in axes], "values": jsonable(v)}
            for field, c, v in zip(fields, released, values)]}) + "\n"
    else:
        metadata["grid"] = f"{per_axis} points per variable over the box"
        flat = points.reshape(-1, module.DIMENSION)
        names = [f"value{r + 1}" for r in range(module.VALUE_DIM)] if module.VALUE_DIM > 1 \
            else ["value"]
        rows = ([field.id, *(repr(float(x)) for x in point),
                 *map(exact_number, numpy.atleast_1d(v))]
                for field, value in zip(fields, values)
                for point, v in zip(flat, value.reshape(len(flat), -1)))
        text = csv_text(metadata, ["field", *module.VARIABLES, *names], rows)
    charge(args, curve_records(args, module, params, module.release_facts(bound=bound, **budget),
                               len(fields)), text)
    files = [(args.output, text)]
    if args.plot:
        files.append((args.plot, png(field_figure(module, fields, axes, values, args.compare,
                                                   _title(module, args, params)))))
    write_files(args, files)
    return 0


def _field_clipped(module, field, kind, bound, params):
    """Whether the field exceeds the bound and was clipped (told to the data owner only;
    if that cannot be computed, it says so and counts the field as not clipped)."""
    grids = [numpy.asarray(g, dtype=float) for g in field.grids]
    try:
        return bool(numpy.any(module._clip_fields(grids, field.values, kind, bound,
                                                  module._params(params)) != field.values))
    except CURVE_ERRORS as error:
        not_private(f"{field.id}: whether it was clipped is unknown ({type(error).__name__})")
        return False


def _title(module, args, params):
    """The plot title: the spec, the method, the budget and the public parameter values."""
    used = [] if args.method == "unbounded" else [
        f"{name} = {value:g}" for name, value in {**module.PARAMETERS, **params}.items()]
    budget = f"ε = {args.epsilon:g}" if args.epsilon is not None else f"ρ = {args.rho:g}"
    return f"{module.TITLE}\n" + ", ".join([args.method, budget, *used])
