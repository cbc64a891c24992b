"""`gpcompiler cdf`: a private CDF of a data column (or a joint CDF of several),
in memory, streamed, or on a Dask scheduler."""
import json
import math
import sys

import numpy

from ..errors import DataError, UserError
from .common import BY_DESIGN, named_error, not_private, say, scheduler_engine
from .figures import check_plot, load_pyplot, png, with_unit
from .ledger import before_noise, cdf_records, charge, check_ledger_options, options_identity
from .writers import (csv_text, declared_units, exact_number, jsonable, release_format,
                      release_metadata, write_files)


# The CDF estimators with a Legendre degree K (docs/design.md, "CDF estimation").
LEGENDRE_METHODS = ("moments", "direct")


def cmd_cdf(args):
    """`gpcompiler cdf FILE ...`: (epsilon, delta)-DP CDF of one column (second paper)."""
    from .. import cdf
    columns = (args.column or []) + (args.columns or [])
    check_ledger_options(args)
    if len(columns) > 1:
        return _joint_cdf(args, columns)
    if len(args.lo or ()) > 1 or len(args.hi or ()) > 1:
        raise UserError("--lo/--hi: one public bound each for one column (one per column only "
                        "with several --column)")
    args.column = columns[0] if columns else None
    args.lo, args.hi = (bound[0] if bound else None for bound in (args.lo, args.hi))
    args.output_format = release_format(args.output) if args.output else None
    check_plot(args.plot)
    lo, hi, degree, spec = _cdf_setup(args)
    args.column = args.column or ("wage" if args.file == "bundled:cps1988" else None)
    data = _cdf_column(args, lo, hi)
    # The estimators clip to [lo, hi] after mapping to [-1, 1]; clipping first gives the same
    # numbers and keeps 2 (x - lo) finite (see _check_bounds).
    clipped = numpy.clip(data, lo, hi)
    if _stored(args, [data]):
        return 0
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
    say(args, f"{args.method}: N = {data.size}, sigma = {result.sigma:.4g}, sensitivity = "
               f"{result.sensitivity:.4g}, budget (epsilon, delta) = "
               f"({args.epsilon}, {args.delta})" + _auto_note(result, args))
    say(args, "      p   private quantile")
    for p in probabilities:
        say(args, f"  {p:5.2f}   {float(result.quantile(p)):16.4f}")
    if args.compare:       # from the workers, with --scheduler; NaN and inf as estimated
        data = numpy.nan_to_num(numpy.asarray(data), nan=lo, posinf=hi, neginf=lo)
        kolmogorov, l2 = cdf.distances(result, data)
        not_private("true quantiles " + ", ".join(
            f"{p:g}: {numpy.quantile(data, p):.4f}" for p in probabilities)
            + f"; Kolmogorov distance {kolmogorov:.4f}, L2 distance {l2:.4f} "
              "(on the [-1, 1] scale)")
    files = []
    if args.output:
        smooth = {"degree": degree} if args.method in LEGENDRE_METHODS else {}
        if len(result.spent) == 2:
            from ..cdf.degree import selection_noise
            smooth["degree_selection_epsilon"] = result.spent[0][0]
            smooth["degree_selection_noise"] = selection_noise(int(data.size), args.epsilon,
                                                               args.delta)
        metadata = release_metadata(args, **spec, lo=lo, hi=hi, **smooth, records=int(data.size),
                                    noise=_noise_facts(result))
        values = result.cdf(grid)
        files.append((args.output, json.dumps(
            {**metadata, **jsonable(released), "grid": jsonable(grid),
             "cdf": jsonable(values)}) + "\n" if args.output_format == ".json" else
            csv_text(metadata, ["x", "cdf"],
                      ([repr(float(x)), exact_number(v)] for x, v in zip(grid, values)))))
    charge(args, cdf_records(args, result, spec), files[-1][1] if files else None)
    if args.plot:
        unit = spec.get("units", {}).get("domain")
        files.append((args.plot, png(_cdf_figure(args, result, data, lo, hi, degree, unit))))
    write_files(args, files)
    return 0


def _noise_facts(result):
    """The public facts of the noisy sums: sensitivity (with the sums' float error), sigma
    and the lattice step gamma of their exact rounding."""
    (sensitivity, sigma, lattice), = result.noise
    return {"sum_sensitivity": sensitivity, "sigma": sigma, "lattice": lattice}


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
                (args.plot is not None and k != 2, "--plot draws the CDF of one column or "
                                                   "the joint CDF of two"),
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
    if args.degree is not None:
        _check_degree(args.degree, "joint")
    check_plot(args.plot)
    args.output_format = release_format(args.output) if args.output else None
    files = dataset_files(args.file)
    data = numpy.stack([read_dataset_column(files, column) for column in columns], axis=1)
    finite = numpy.isfinite(data)
    _clipped(args, int(numpy.count_nonzero(numpy.any(finite & ((data < args.lo) |
                                                               (data > args.hi)), axis=1))),
             "of some column")
    _not_numbers(args, int(numpy.count_nonzero(~numpy.all(finite, axis=1))), len(data),
                 "the column's --lo", "its --hi")
    degree = 8 if args.degree is None else args.degree
    if _stored(args, [data]):
        return 0
    rng = numpy.random.default_rng(args.seed) if args.seed is not None else None
    try:
        result = joint.joint_estimate(data, lo=args.lo, hi=args.hi, epsilon=args.epsilon,
                                      delta=args.delta, degree=degree, method=args.method,
                                      rng=rng)
    except ValueError as error:
        raise DataError(str(error)) from None
    degree = list(result.degree) if result.degree is not None else degree
    say(args, f"{args.method}: N = {data.shape[0]}, {k} columns, sigma = {result.sigma:.4g}, "
               f"sensitivity = {result.sensitivity:.4g}, budget (epsilon, delta) = "
               f"({args.epsilon}, {args.delta})"
               + (f"; degrees {degree} chosen privately" if args.degree == "auto" else ""))
    say(args, "      p   " + "".join(f"{c[:16]:>18}" for c in columns) + "  (private marginal "
                                                                           "quantiles)")
    for p in (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95):
        say(args, f"  {p:5.2f}   " + "".join(f"{float(result.marginal(i).quantile(p)):18.4f}"
                                              for i in range(k)))
    if args.compare:
        not_private(f"Kolmogorov distance to the empirical joint CDF "
                     f"{joint.joint_distances(result, data):.4f}")
    files = [(args.output, _joint_cdf_file(args, columns, result, degree, data.shape[0]))
             ] if args.output else []
    charge(args, cdf_records(args, result, {}, joint=True), files[0][1] if files else None)
    if args.plot:
        files.append((args.plot, png(_joint_cdf_figure(args, columns, result, data))))
    write_files(args, files)
    return 0


def _stored(args, data):
    """With --ledger: the cap check before any noise (DP epsilon under replace-one); with
    --cap, a release of the same data and options written again as stored (True)."""
    from fractions import Fraction
    from ..accounting.device import digest
    stored = before_noise(args, "DP", Fraction(args.epsilon), lambda: {
        "command": "cdf", "options": options_identity(args),
        "data": [digest(numpy.asarray(column)) for column in data]})
    if stored is not None:
        write_files(args, [(args.output, stored)])
    return stored is not None


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
    selections = [spend[0] for spend in result.spent[:-1]]   # degree="auto": per column
    metadata = release_metadata(args, columns=columns, lo=list(args.lo), hi=list(args.hi),
                                **({"degree": degree} if args.method == "direct" else {}),
                                **({"degree_selection_epsilon": selections} if selections
                                   else {}),
                                records=int(records), noise=_noise_facts(result))
    if args.output_format == ".json":
        return json.dumps({**metadata, "grids": jsonable(grids), "cdf": jsonable(values)}) + "\n"
    return csv_text(metadata, columns + ["cdf"], (
        [repr(float(x)) for x in point] + [exact_number(v)]
        for point, v in zip(mesh.reshape(-1, k), values.ravel())))


def _cdf_column(args, lo, hi):
    """The column of `cdf`: in memory, or a Dask array with --scheduler (the same values,
    read on the workers); says how many records lie outside [lo, hi]."""
    from ..io.curves import dataset_files, read_dataset_column
    files = dataset_files(args.file)
    engine = scheduler_engine(args)
    if engine is None:
        data = read_dataset_column(files, args.column)
        finite = numpy.isfinite(data)
        outside = int(numpy.count_nonzero(finite & ((data < lo) | (data > hi))))
        invalid = int(data.size - numpy.count_nonzero(finite))
    else:
        data, (outside, invalid) = engine.dataset_column(files, args.column, lo, hi)
    _clipped(args, outside, f"[{lo:g}, {hi:g}]")
    _not_numbers(args, invalid, int(data.size), f"lo = {lo:g}", f"hi = {hi:g}")
    return data


def _clipped(args, count, bounds):
    """The data owner's count of records clipped to the public ``bounds`` (standard error;
    it is not released)."""
    if count and not args.quiet:
        print(f"{count} record{'s' if count > 1 else ''} clipped (not private): outside the "
              f"public bounds {bounds}", file=sys.stderr)


def _not_numbers(args, count, total, lower, upper):
    """The data owner's count of NaN or infinite records of ``total`` (standard error; not
    released): their public values (gpcompiler.cdf.streaming.public_values), by design."""
    if count and not args.quiet:
        print(f"{count} record{'s' if count > 1 else ''} not a finite number (not private), "
              f"of {total}: NaN, blank or text fields and -inf taken as {lower}, +inf as "
              f"{upper}, {BY_DESIGN}"
              + ("; that is every record: the release is the CDF of these public values, "
                 "plus noise" if count == total else ""), file=sys.stderr)


def _check_bounds(lo, hi):
    """Public CDF bounds: finite, lo < hi, and 2 (hi - lo) finite (the estimators map
    [lo, hi] to [-1, 1] through 2 (x - lo) / (hi - lo))."""
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise UserError(f"--lo/--hi: the public bounds need finite lo < hi, got [{lo:g}, {hi:g}]")
    if not math.isfinite(2 * (hi - lo)):
        raise UserError(f"--lo/--hi: the width of [{lo:g}, {hi:g}] overflows float64 "
                        f"(2 (hi - lo) must be below {sys.float_info.max:.3g}): rescale the data")


# The largest Legendre degree K of each method (the estimators' limits: cdf.estimators._size,
# per column for a joint CDF cdf.joint._degrees), checked before any data is read.
MAX_DEGREE = {"direct": 1000, "moments": 200, "joint": 200}


def _check_degree(degree, method, where=""):
    """A public degree K in 1..MAX_DEGREE[method] (or "auto"), else a one-line error."""
    if degree != "auto" and not 1 <= degree <= MAX_DEGREE[method]:
        what = "a joint CDF" if method == "joint" else f"the {method} method"
        raise UserError(f"--degree: {what} needs a Legendre degree K in "
                        f"1..{MAX_DEGREE[method]}, got {degree}{where}")


def _cdf_setup(args):
    """Public bounds and degree: from a kind = "cdf" spec (--spec) or --lo/--hi/--degree."""
    if args.degree is not None and args.method not in LEGENDRE_METHODS:
        raise UserError(f"--degree does not apply to --method {args.method} "
                        f"(only to {', '.join(LEGENDRE_METHODS)})")
    if args.degree == "auto" and args.method != "direct":
        raise UserError(f"--degree auto needs --method direct, got --method {args.method}")
    if args.degree == "auto" and args.spec is not None:
        raise UserError("--degree auto needs --lo/--hi instead of --spec (a spec declares its "
                        "degree)")
    lo, hi, degree, spec = _cdf_bounds(args)
    _check_bounds(lo, hi)
    if args.method in LEGENDRE_METHODS:
        _check_degree(degree, args.method, f" from {args.spec}" if args.spec else "")
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
        raise named_error(args.spec, error) from None
    if not all(hasattr(module, name) for name in ("LO", "HI", "DEGREE")):
        raise UserError(f"{args.spec} is not a kind = \"cdf\" spec (it is a mechanism for "
                        "curves or fields): use `gpcompiler privatize`")
    for option, value, declared in (("--lo", args.lo, module.LO), ("--hi", args.hi, module.HI),
                                    ("--degree", degree, module.DEGREE)):
        if value is not None and value != declared:
            raise UserError(f"{option} {value:g} differs from {declared:g} in {args.spec}")
    return module.LO, module.HI, module.DEGREE, {"spec": module.NAME,
                                                  "spec_sha256": module.SPEC_SHA256,
                                                  **declared_units(module.UNITS, curve=True)}


def _cdf_figure(args, result, data, lo, hi, degree, unit=None):
    """The private CDF, its axis in ``unit`` (from --spec); with --compare the empirical
    CDF beneath it ("not private")."""
    figure, axis = load_pyplot().subplots(figsize=(8, 4))
    x = numpy.linspace(lo, hi, 2000)
    if args.compare:
        ordered = numpy.sort(data)
        axis.step(x, numpy.searchsorted(ordered, x, side="right") / data.size, where="post",
                  color="0.6", lw=1.6, label="empirical CDF (true data)")
    axis.plot(x, result.cdf(x), color="C1", lw=1,
              label=f"private ({args.method}"
              + (f", K={degree})" if args.method in LEGENDRE_METHODS else ")"))
    axis.set_xlabel(_column_label(args.file, args.column, unit))
    axis.set_ylabel("cumulative probability")
    axis.set_title(f"(ε, δ) = ({args.epsilon:g}, {args.delta:g}), N = {data.size}"
                   + ("\nnot private: shows the true data" if args.compare else ""), fontsize=9)
    axis.legend()
    figure.tight_layout()
    return figure


def _joint_cdf_figure(args, columns, result, data, points=201):
    """The private joint CDF of two columns as a heat map over the public box [lo, hi],
    with its 0.1, ..., 0.9 contours; with --compare the empirical joint CDF's contours
    (dashed, "not private")."""
    grids = [numpy.linspace(lo, hi, points) for lo, hi in zip(args.lo, args.hi)]
    mesh = numpy.stack(numpy.meshgrid(*grids, indexing="ij"), axis=-1)
    figure, axis = load_pyplot().subplots(figsize=(7, 5.5))
    released = result.cdf(mesh).T                    # rows: the second column
    image = axis.pcolormesh(*grids, released, shading="auto", cmap="viridis", vmin=0, vmax=1)
    levels = numpy.linspace(0.1, 0.9, 9)
    lines = axis.contour(*grids, released, levels=levels, colors="white", linewidths=0.8)
    axis.clabel(lines, fmt="%.1f", fontsize=7)
    if args.compare:
        axis.contour(*grids, _empirical_joint(data, args.lo, args.hi, grids).T, levels=levels,
                     colors="0.15", linewidths=0.8, linestyles="dashed")
    axis.set_xlabel(_column_label(args.file, columns[0]))
    axis.set_ylabel(_column_label(args.file, columns[1]))
    figure.colorbar(image, ax=axis, label=f"P({columns[0]} ≤ x, {columns[1]} ≤ y)")
    axis.set_title(f"private joint CDF ({args.method}), (ε, δ) = ({args.epsilon:g}, "
                   f"{args.delta:g}), N = {len(data)}"
                   + ("\nnot private: dashed, the empirical joint CDF of the true data"
                      if args.compare else ""), fontsize=9)
    figure.tight_layout()
    return figure


def _empirical_joint(data, lo, hi, grids):
    """The empirical joint CDF of two columns on the tensor grid: the share of records
    with x_i <= grid_i in both columns, NaN and -inf at lo and +inf at hi as estimated."""
    first = [numpy.searchsorted(grid, numpy.nan_to_num(data[:, i], nan=lo[i], neginf=lo[i],
                                                       posinf=hi[i]), side="left")
             for i, grid in enumerate(grids)]
    inside = (first[0] < len(grids[0])) & (first[1] < len(grids[1]))
    counts = numpy.zeros((len(grids[0]), len(grids[1])))
    numpy.add.at(counts, (first[0][inside], first[1][inside]), 1)
    return counts.cumsum(axis=0).cumsum(axis=1) / len(data)


# the units of the bundled CPS 1988 columns (gpcompiler/data/AER__CPS1988.descr.md)
CPS1988_UNITS = {"wage": "USD per week", "education": "years", "experience": "years"}


def _column_label(file, column, unit=None):
    """An axis label for a data column: its declared unit (--spec), else a bundled one's."""
    known = CPS1988_UNITS.get(column) if file == "bundled:cps1988" else None
    return with_unit(column, unit or known)
