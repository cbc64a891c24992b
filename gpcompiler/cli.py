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
    """`gpcompiler audit SPEC | --suite | --power`: black-box audit and noise conformance."""
    from . import audit_suite
    from .audit import Claim
    if args.jobs < 1 or (args.samples is not None and args.samples < 100) \
            or (args.draws is not None and args.draws < 100) or not 0 < args.alpha < 1:
        raise UserError("audit needs --jobs >= 1, --samples and --draws >= 100, "
                        "0 < --alpha < 1")
    mode = "quick" if args.quick else "full"
    bar = _audit_bar()
    if args.power:
        results = audit_suite.run_power(mode, jobs=args.jobs, progress=bar.update_with,
                                        alpha=args.alpha)
        bar.close()
        print(audit_suite.format_power(results))
        audits = [audit for _, audit, _ in results]
        failures = [a.name for _, a, mutant in results if a.violated != mutant]
    else:
        if args.suite:
            rows = audit_suite.run_suite(mode, jobs=args.jobs, progress=bar.update_with,
                                         alpha=args.alpha)
        elif args.spec:
            module = _audited_module(args.spec)
            claims = ([Claim("GP", args.epsilon)] if args.epsilon else []) + \
                     ([Claim("CGP", args.rho)] if args.rho else [])
            claims = claims or [Claim("GP", 1.0), Claim("CGP", 0.5)]
            rows = []
            for claim in claims:
                audit = audit_suite.audit_mechanism(
                    module, claim.model, claim.budget, mode=mode, alpha=args.alpha / len(claims),
                    seed=args.seed, samples=args.samples, draws=args.draws,
                    conformant=args.conformance)
                bar.update_with(audit)
                rows.append(audit_suite.Row(audit.name, False, audit))
        else:
            raise UserError("give a spec or generated module to audit, or --suite / --power")
        bar.close()
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


def _audited_module(spec):
    """A spec's module, or a generated module file, checked to be a curve mechanism."""
    from .build import import_module_file
    if not spec.endswith(".py"):
        return _mechanism(spec)
    if not Path(spec).is_file():
        raise UserError(f"no generated module at {spec}")
    module = import_module_file(Path(spec))
    if not hasattr(module, "privatize") or not hasattr(module, "gram"):
        raise UserError(f"{spec} is not a generated curve mechanism")
    return module


def _audit_bar():
    """A tqdm bar on stderr (silent when not a terminal) counting audits, pairs, draws."""
    from tqdm import tqdm
    bar = tqdm(unit=" audits", file=sys.stderr, disable=None)
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
    p = commands.add_parser("audit", help="privacy audit: black box and noise conformance")
    p.add_argument("spec", nargs="?", help="a spec file or a generated module (.py)")
    p.add_argument("--suite", action="store_true",
                   help="the whole table: negative controls and every real mechanism")
    p.add_argument("--power", action="store_true",
                   help="the power table: every shipped mechanism and its mutants")
    p.add_argument("--epsilon", type=float, help="GP claim to audit (default: GP 1 and CGP 0.5)")
    p.add_argument("--rho", type=float, help="CGP claim to audit")
    p.add_argument("--samples", type=int,
                   help="SPEC: black-box samples per phase (default: 400000/d in "
                        "[2000, 100000]; --quick: 20000/d in [500, 100000])")
    p.add_argument("--draws", type=int,
                   help="SPEC: conformance draws (default: 1000000; --quick: 500000/d "
                        "in [500, 50000])")
    p.add_argument("--conformance", action=argparse.BooleanOptionalAction, default=True,
                   help="SPEC: white-box test of the noise law (default: on)")
    p.add_argument("--quick", action="store_true",
                   help="the test suite's smaller sample budget (less power)")
    p.add_argument("--alpha", type=float, default=1e-6,
                   help="false-alarm probability of the whole table (default: 1e-6)")
    p.add_argument("--jobs", type=int, default=1,
                   help="worker processes for --suite and --power (default: 1)")
    p.add_argument("--seed", type=int, default=0, help="SPEC: seed of the audit (default: 0)")
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
