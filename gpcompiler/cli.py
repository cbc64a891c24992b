"""Command line: compile, check, explain, privatize (user errors: one line, exit 2)."""
import argparse
import sys
from pathlib import Path

import numpy

from .errors import DataError, UserError


def _progress(message):
    print(message, file=sys.stderr, flush=True)


def cmd_compile(args):
    """`gpcompiler compile SPEC... -o DIR`: write the generated modules."""
    from .build import compile_files
    for path in compile_files(args.specs, args.output, progress=_progress):
        print(f"wrote {path}")
    return 0


def cmd_check(args):
    """`gpcompiler check`: regenerate every spec and diff against generated/."""
    from .build import check
    problems = check(args.specs, args.generated, progress=_progress)
    for diff in problems:
        sys.stdout.write(diff)
    if problems:
        print(f"{len(problems)} generated module(s) differ from their specs: "
              f"run `gpcompiler compile {args.specs}/*.toml -o {args.generated}`", file=sys.stderr)
        return 1
    print(f"all generated modules in {args.generated}/ match {args.specs}/")
    return 0


def cmd_explain(args):
    """`gpcompiler explain SPEC`: the exact derivation as Markdown with LaTeX."""
    from .build import compile_spec
    from .explain import explain
    text = explain(compile_spec(args.spec))
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def _budget(args):
    return {"epsilon": args.epsilon} if args.epsilon is not None else {"rho": args.rho}


def _release(module, args, t, y, rng):
    """One curve through the chosen method: (released values at t, one-line summary)."""
    from . import adaptive
    budget = _budget(args)
    if args.method == "project":
        params = _parameters(args.param)
        c = module.project(t, y, **params)
        private = module.privatize(c, rng=rng, **budget)
        return module.evaluate(private, t, **params), (
            f"L2 noise {float(numpy.linalg.norm(private - c)):.4g} "
            f"(expected {module.expected_error(**budget):.4g})")
    if args.method == "baseline":
        result = adaptive.baseline_points(t, y, args.k, window=args.window, rng=rng, **budget)
    elif args.method == "select":
        result = adaptive.priv_func_select(t, y, module, beta=args.beta, rng=rng, **budget)
    else:
        algorithm = adaptive.priv_func_seg if args.method == "seg" else adaptive.priv_func_unbounded
        result = algorithm(t, y, module, beta=args.beta, continuous=args.continuous, rng=rng, **budget)
    chosen = (f"{len(result.basis_indices)} basis functions" if result.basis_indices is not None
              else f"{len(result.breakpoints) - 1} segments" if args.method != "baseline"
              else f"{args.k} points")
    return result.evaluate(t), f"{chosen}, ledger total {result.ledger.total:.6g}"


def _mechanism(spec):
    """The generated module of a mechanism spec (a cdf spec is refused with a pointer)."""
    from .build import load
    module = load(spec)
    if not hasattr(module, "privatize") or not hasattr(module, "project"):
        raise UserError(f"{spec} compiles CDF tables, not a curve mechanism: "
                        "use `gpcompiler cdf` for distribution estimation")
    return module


def _parameters(items):
    """--param NAME=VALUE options as keyword arguments of the generated module."""
    params = {}
    for item in items or ():
        name, _, value = item.partition("=")
        try:
            params[name] = float(value)
        except ValueError:
            raise UserError(f"--param expects NAME=VALUE with a number, got {item!r}") from None
    return params


def cmd_privatize(args):
    """`gpcompiler privatize SPEC [INPUT]`: privatize curves with the chosen method."""
    from .curves import Curves, read_curves, write_curves
    module = _mechanism(args.spec)
    curves = read_curves(args.input)
    rng = numpy.random.default_rng(args.seed) if args.seed is not None else None
    outputs = []
    for key, t, y in zip(curves.ids, curves.times, curves.values):
        try:
            released, summary = _release(module, args, t, y, rng)
        except (ValueError, TypeError) as error:
            raise DataError(f"curve {key!r}: {error}") from None
        rms = float(numpy.sqrt(numpy.mean((released - y) ** 2)))
        print(f"{key}: {t.size} samples, {args.method}: {summary}, RMS error {rms:.4g}")
        outputs.append(released)
    result = Curves(curves.ids, curves.times, tuple(outputs), curves.value_names)
    if args.output:
        write_curves(args.output, result)
        print(f"wrote {args.output}")
    if args.plot:
        _plot(args.plot, curves, result, module.TITLE)
        print(f"wrote {args.plot}")
    return 0


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("plotting needs matplotlib: pip install 'gpcompiler[plot]'") from None
    return plt


def _plot(path, original, private, title):
    """Curves against t; two-component curves (trajectories) as paths in the plane."""
    figure, axis = _pyplot().subplots(figsize=(10, 4) if original.values[0].ndim == 1 else (7, 6))
    for number, (t, y, z) in enumerate(zip(original.times, original.values, private.values)):
        labels = ("original", "privatized") if number == 0 else (None, None)
        if y.ndim == 1:
            axis.plot(t, y, lw=0.8, color="C0", label=labels[0])
            axis.plot(t, z, lw=0.8, color="C1", label=labels[1])
        else:
            axis.plot(y[:, 0], y[:, 1], lw=1.0, color="C0", label=labels[0])
            axis.plot(z[:, 0], z[:, 1], lw=0.8, color="C1", label=labels[1])
    axis.set_title(title, fontsize=9)
    axis.set_xlabel("t" if original.values[0].ndim == 1 else original.value_names[0])
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def cmd_cdf(args):
    """`gpcompiler cdf FILE ...`: (epsilon, delta)-DP CDF of one column."""
    from . import cdf
    from .curves import read_column
    data = read_column(args.file, args.column)
    rng = numpy.random.default_rng(args.seed) if args.seed is not None else None
    try:
        result = cdf.estimate(data, lo=args.lo, hi=args.hi, epsilon=args.epsilon, delta=args.delta,
                              degree=args.degree, method=args.method, rng=rng)
    except ValueError as error:
        raise DataError(str(error)) from None
    kolmogorov, l2 = cdf.distances(result, data)
    print(f"{args.method}: N = {data.size}, sigma = {result.sigma:.4g}, sensitivity = "
          f"{result.sensitivity:.4g}, budget (epsilon, delta) = ({args.epsilon}, {args.delta})")
    print("      p   private quantile   true quantile")
    for p in (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95):
        print(f"  {p:5.2f}   {float(result.quantile(p)):16.4f}   {numpy.quantile(data, p):13.4f}")
    print(f"Kolmogorov distance {kolmogorov:.4f}, L2 distance {l2:.4f} (on the [-1, 1] scale)")
    if args.plot:
        plt = _pyplot()
        figure, axis = plt.subplots(figsize=(8, 4))
        x = numpy.linspace(args.lo, args.hi, 2000)
        ordered = numpy.sort(data)
        axis.step(x, numpy.searchsorted(ordered, x, side="right") / data.size, where="post",
                  label="empirical CDF", lw=1)
        axis.plot(x, result.cdf(x), label=f"private ({args.method}, K={args.degree})", lw=1)
        axis.set_title(f"(epsilon, delta) = ({args.epsilon}, {args.delta}), N = {data.size}")
        axis.legend()
        figure.tight_layout()
        figure.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")
    return 0


def cmd_audit(args):
    """`gpcompiler audit SPEC | --suite`: black-box privacy audit."""
    from .audit import Claim, audit_module
    from .audit_suite import Row, format_table, run_suite
    if args.suite:
        rows = run_suite(samples=args.samples, progress=_progress)
    elif args.spec:
        from .build import import_module_file
        if args.spec.endswith(".py"):
            if not Path(args.spec).is_file():
                raise UserError(f"no generated module at {args.spec}")
            module = import_module_file(Path(args.spec))
            if not hasattr(module, "privatize") or not hasattr(module, "gram"):
                raise UserError(f"{args.spec} is not a generated curve mechanism")
        else:
            module = _mechanism(args.spec)
        claims = ([Claim("GP", args.epsilon)] if args.epsilon else []) + \
                 ([Claim("CGP", args.rho)] if args.rho else [])
        rows = [Row(f"{module.NAME} ({c.model})", False,
                    audit_module(module, c, samples=args.samples, seed=args.seed))
                for c in claims or [Claim("GP", 1.0), Claim("CGP", 0.5)]]
    else:
        raise UserError("give a spec to audit, or --suite for the whole audit table")
    print(format_table(rows))
    failures = [row.name for row in rows if not row.ok]
    if failures:
        print(f"unexpected audit outcome for: {', '.join(failures)}", file=sys.stderr)
        return 1
    print("false-alarm probability of the whole table < 1e-6")
    return 0


def cmd_experiment(args):
    """`gpcompiler experiment NAME`: the paper's evaluation under its protocol (Sec. 5)."""
    from .experiments import run
    if args.seeds is not None and args.seeds < 1 or args.jobs < 1 or \
            args.curves is not None and args.curves < 1:
        raise UserError("--seeds, --curves and --jobs must be positive integers")
    out = args.out or f"experiment-{args.name}"
    options = {"column": args.column, "lo": args.lo, "hi": args.hi}
    try:
        results = run(args.name, data=args.data, quick=args.quick, simulations=args.seeds,
                      jobs=args.jobs, out=out, curves=args.curves, options=options)
    except ValueError as error:
        raise DataError(f"experiment {args.name}: {error}") from None
    for model, block in results["models"].items():
        for method, ratios in block["headline"]["ratio_best_baseline_over_paper_method"].items():
            print(f"{model}: best baseline / {method} (mean {results['metric_label']}) at "
                  f"{block['symbol']} = {block['budgets'][-1]:g}: {ratios[-1]:.2f}x")
    print(f"wrote {out}/results.json, {out}/table.md, "
          + ", ".join(f"{out}/{name}" for name in results["figures"])
          + f" ({results['wall_time_seconds']:.0f} s)")
    return 0


def _add_budget(parser):
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--epsilon", type=float, help="GP budget")
    group.add_argument("--rho", type=float, help="CGP budget")


def build_parser():
    """The argparse parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="gpcompiler", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("compile", help="compile spec files into NumPy modules")
    p.add_argument("specs", nargs="+")
    p.add_argument("-o", "--output", default="generated")
    p.set_defaults(run=cmd_compile)
    p = commands.add_parser("check", help="regenerate every spec and diff against generated/")
    p.add_argument("--specs", default="specs")
    p.add_argument("--generated", default="generated")
    p.set_defaults(run=cmd_check)
    p = commands.add_parser("explain", help="print the exact derivation as Markdown")
    p.add_argument("spec")
    p.add_argument("-o", "--output")
    p.set_defaults(run=cmd_explain)
    p = commands.add_parser("privatize", help="project and privatize curves")
    p.add_argument("spec")
    p.add_argument("input", nargs="?", default="bundled:ecg",
                   help="CSV (t,y1..yn, optional leading curve id), bundled:ecg[:WINDOW] "
                        "or bundled:ais[:COUNT]")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="spec parameter for the project method (e.g. T=400)")
    _add_budget(p)
    p.add_argument("--method", default="project",
                   choices=["project", "select", "seg", "unbounded", "baseline"],
                   help="Project-and-Privatize (default), PrivFuncSelect, PrivFuncSeg, "
                        "PrivFuncSeg on an unbounded domain, or the LY23 baseline")
    p.add_argument("--beta", type=float, default=0.1, help="failure probability (select/seg)")
    p.add_argument("--continuous", action="store_true", help="continuous output (seg)")
    p.add_argument("--k", type=int, default=100, help="points of the baseline")
    p.add_argument("--window", type=int, help="sliding-window width of the baseline")
    p.add_argument("--seed", type=int, help="seed (tests and demos only; default: OS entropy)")
    p.add_argument("-o", "--output", help="write privatized curves as CSV")
    p.add_argument("--plot", help="write a PNG of original and privatized curves")
    p.set_defaults(run=cmd_privatize)
    p = commands.add_parser("audit", help="black-box privacy audit of a spec's mechanism")
    p.add_argument("spec", nargs="?", help="a spec file or a generated module (.py)")
    p.add_argument("--suite", action="store_true",
                   help="the whole table: negative controls and every real mechanism")
    p.add_argument("--epsilon", type=float)
    p.add_argument("--rho", type=float)
    p.add_argument("--samples", type=int, default=20000)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=cmd_audit)
    p = commands.add_parser("cdf", help="(epsilon, delta)-DP CDF of one column of a CSV")
    p.add_argument("file", nargs="?", default="bundled:cps1988",
                   help="CSV or CSV.gz with a header, or bundled:cps1988 (weekly wages)")
    p.add_argument("--column", default="wage")
    p.add_argument("--lo", type=float, required=True)
    p.add_argument("--hi", type=float, required=True)
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, required=True)
    p.add_argument("--degree", type=int, default=10)
    p.add_argument("--method", default="direct",
                   choices=["moments", "direct", "histogram", "adaptive-quantiles"])
    p.add_argument("--plot")
    p.add_argument("--seed", type=int)
    p.set_defaults(run=cmd_cdf)
    p = commands.add_parser("experiment", help="the paper's evaluation (Sec. 5) under its protocol")
    p.add_argument("name", choices=["ecg", "select", "trajectories", "segments", "cdf"],
                   help="ecg (Sec. 5.1), select (Sec. 5.2), trajectories (Sec. 5.3), "
                        "segments (Fig. 12), cdf (the four CDF estimators)")
    p.add_argument("--data", help="your own CSV: t,y1..yn with an optional leading curve id "
                                  "(as `privatize` reads), or for cdf a CSV with a header "
                                  "(as `cdf` reads); default: the bundled data")
    p.add_argument("--quick", action="store_true",
                   help="a few curves, 2 simulations, the ends of each budget grid")
    p.add_argument("--seeds", type=int,
                   help="simulations per curve (default: 30, the paper's; 2 with --quick)")
    p.add_argument("--curves", type=int, help="use only the first N curves (default: all)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default: 1)")
    p.add_argument("--out", help="output directory (default: experiment-NAME)")
    p.add_argument("--column", default="wage", help="cdf: the column of --data (default: wage)")
    p.add_argument("--lo", type=float, help="cdf: public lower bound (default: 0 for the bundled wages)")
    p.add_argument("--hi", type=float, help="cdf: public upper bound (default: 2500 for the bundled wages)")
    p.set_defaults(run=cmd_experiment)
    return parser


def main(argv=None):
    """Entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except UserError as error:
        print(f"gpcompiler: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"gpcompiler: error: {error.strerror or error}: {error.filename or ''}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
