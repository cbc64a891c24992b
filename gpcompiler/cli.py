"""Command line: compile, check, explain, privatize (user errors: one line, exit 2)."""
import argparse
import sys
from pathlib import Path

import numpy

from .errors import DataError, UserError


def _progress(message):
    print(message, file=sys.stderr, flush=True)


def cmd_compile(args):
    from .build import compile_files
    for path in compile_files(args.specs, args.output, progress=_progress):
        print(f"wrote {path}")
    return 0


def cmd_check(args):
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


def cmd_privatize(args):
    from .build import load
    from .curves import Curves, read_curves, write_curves
    module = load(args.spec)
    curves = read_curves(args.input)
    rng = numpy.random.default_rng(args.seed) if args.seed is not None else None
    outputs = []
    for key, t, y in zip(curves.ids, curves.times, curves.values):
        try:
            c = module.project(t, y)
            private = module.privatize(c, rng=rng, **_budget(args))
            fitted, released = module.evaluate(c, t), module.evaluate(private, t)
        except ValueError as error:
            raise DataError(f"curve {key!r}: {error}") from None
        noise = float(numpy.linalg.norm(private - c))
        rms = float(numpy.sqrt(numpy.mean((released - y) ** 2)))
        print(f"{key}: {t.size} samples, L2 noise {noise:.4g} (expected "
              f"{module.expected_error(**_budget(args)):.4g}), projection RMS error "
              f"{float(numpy.sqrt(numpy.mean((fitted - y) ** 2))):.4g}, released RMS error {rms:.4g}")
        outputs.append(released)
    result = Curves(curves.ids, curves.times, tuple(outputs), curves.value_names)
    if args.output:
        write_curves(args.output, result)
        print(f"wrote {args.output}")
    if args.plot:
        _plot(args.plot, curves, result, module.TITLE)
        print(f"wrote {args.plot}")
    return 0


def _plot(path, original, private, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("plotting needs matplotlib: pip install 'gpcompiler[plot]'") from None
    figure, axis = plt.subplots(figsize=(10, 4))
    for t, y, z in zip(original.times, original.values, private.values):
        axis.plot(t, y, lw=0.8, label="original")
        axis.plot(t, z, lw=0.8, label="privatized")
    axis.set_title(title, fontsize=9)
    axis.set_xlabel("t")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def _add_budget(parser):
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--epsilon", type=float, help="GP budget")
    group.add_argument("--rho", type=float, help="CGP budget")


def build_parser():
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
                   help="CSV (t,y1..yn, optional leading curve id) or bundled:ecg[:WINDOW]")
    _add_budget(p)
    p.add_argument("--seed", type=int, help="seed (tests and demos only; default: OS entropy)")
    p.add_argument("-o", "--output", help="write privatized curves as CSV")
    p.add_argument("--plot", help="write a PNG of original and privatized curves")
    p.set_defaults(run=cmd_privatize)
    return parser


def main(argv=None):
    """Entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except UserError as error:
        print(f"gpcompiler: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
