"""Command line: compile, check, explain, privatize, cdf, ledger, audit, experiment.

User errors print one line (naming the file, key or curve) and exit 2; nothing is
half-written. Releases contain only what the mechanism released (docs/design.md,
"Privacy model"). Comparisons with the true data are opt-in (--compare); they and the
data owner's counts of clipped or invalid curves and records (shown unless -q) go to
standard error and say "not private".
"""
import argparse
import math
import os
import re
import sys

import numpy

from .. import __version__
from ..errors import DataError, UserError
from .audit import cmd_audit
from .cdf import MAX_DEGREE, cmd_cdf
from .common import DEFAULT_GRID, MAX_GRID, MAX_NOISE_SCALE, STDOUT, noise_floor, scheduled
from .compile import cmd_check, cmd_compile, cmd_explain, cmd_specs
from .experiment import cmd_experiment
from .ledger import cmd_ledger, ledger_options
from .privatize import DEFAULT_BETA, DEFAULT_K, DEFAULT_SPLIT, cmd_privatize


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2), and negative numbers in any float
    notation (-5e3, -.5, -1E-3, -inf), or lists of numbers led by one (-74.01,40.68), taken
    as option values, not options."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        number = r"((\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|inf|infinity)"
        self._negative_number_matcher = re.compile(rf"^-{number}(,-?{number})*$", re.IGNORECASE)

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


_DEGREE = _typed(int, lambda v: 1 <= v <= max(MAX_DEGREE.values()),
                 f'an integer in 1..{max(MAX_DEGREE.values())} or "auto"')


def _degree(text):
    """argparse type of --degree: an integer in 1..1000 or "auto" (each method's own
    limit, cli.cdf.MAX_DEGREE, is checked before any data is read)."""
    return "auto" if text == "auto" else _DEGREE(text)


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
        scale = noise_floor({name: value})
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


def _common(parser, grid_help, at_help="curves only: evaluate the release at the "
            "public times in FILE (one per line; default: use --grid)"):
    """Options of both releasing commands: seed, output grid, files, comparison; without
    -o both write the release CSV to standard output."""
    parser.add_argument("--seed", type=_count(0),
                        help="seed of a NumPy generator, for tests and demos only "
                             "(default: OS entropy, see docs/design.md \"Secure noise\")")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--grid", type=_count(2, MAX_GRID), default=DEFAULT_GRID, metavar="N",
                       help=grid_help)
    where.add_argument("--at", action=_Times, metavar="FILE", help=at_help)
    parser.add_argument("-o", "--output", metavar="FILE", default=STDOUT,
                        help="write the release: .csv (released values on the public grid) "
                             "or .json (also the coefficients), privatize also .npz or .parquet "
                             "(released coefficients); missing directories are "
                             "created (default: -, standard output, as CSV; the summaries "
                             "then go to standard error)")
    parser.add_argument("--plot", metavar="PNG", help="write a PNG of the release (default: none)")
    parser.add_argument("--compare", action="store_true",
                        help="NOT PRIVATE: compare with the true data on stderr and in the plot")


def _origin(text):
    """argparse type of --origin: an ISO-8601 timestamp (io.curves.nanoseconds)."""
    from ..io.curves import nanoseconds
    try:
        nanoseconds(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{error} (e.g. 2020-12-01T00:00:00Z)") from None
    return text


def _reference(text):
    """argparse type of --reference: LON,LAT in degrees, lat strictly inside (-90, 90)."""
    try:
        lon, lat = (float(part) for part in text.split(","))
    except ValueError:
        lon = lat = math.nan
    if not (-180 <= lon <= 180 and -90 < lat < 90):
        raise argparse.ArgumentTypeError(f"expected LON,LAT in degrees (lon in [-180, 180], "
                                         f"lat in (-90, 90)), got {text!r}")
    return lon, lat


def _columns(parser):
    """privatize's public ways to read a CSV's time and coordinate columns."""
    from ..io.curves import TIME_UNITS
    parser.add_argument("--origin", type=_origin, metavar="ISO8601",
                        help="the time column holds ISO-8601 timestamps (no zone: UTC); t is "
                             "the time since this public origin, in --time-unit: integer "
                             "nanoseconds, rounded once to float64 (default: the time column "
                             "holds numbers)")
    parser.add_argument("--time-unit", choices=list(TIME_UNITS), default="s",
                        help="unit of t with --origin")
    parser.add_argument("--reference", type=_reference, metavar="LON,LAT",
                        help="project lon and lat columns (degrees, WGS-84) to metres x east "
                             "and y north of this public point: local equirectangular on the "
                             "WGS-84 mean radius 6371008.8 m (default: no projection)")


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
    p = command("compile", "compile spec files into NumPy modules (or C or JavaScript: "
                           "--target c, --target js)")
    p.add_argument("specs", nargs="+", metavar="SPEC", help="spec files (TOML)")
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="directory of the generated modules (required: a plain compile "
                        "never overwrites the committed generated/ that `check` compares "
                        "against; e.g. -o build/generated)")
    p.add_argument("--target", choices=("python", "c", "js"), default="python",
                   help="python: DIR/NAME.py, a NumPy module; c: DIR/NAME.h, DIR/NAME.c, "
                        "the device ledger DIR/NAME_device.c and the protocol program "
                        "DIR/NAME_main.c, for curves in one variable "
                        "(docs/reference/c.md); js: DIR/NAME.mjs, an ES module and protocol "
                        "program for Node and browsers, for curves in one variable "
                        "(docs/reference/js.md)")
    p.set_defaults(run=cmd_compile)
    p = command("check", "regenerate every spec and diff against the generated modules "
                         "(and their C and JS targets in DIR/c/ and DIR/js/)")
    p.add_argument("--specs", default="specs", metavar="DIR",
                   help="directory of the specs, from the working directory")
    p.add_argument("--generated", default="generated", metavar="DIR",
                   help="directory of the committed generated modules, from the working "
                        "directory")
    p.set_defaults(run=cmd_check)
    p = command("specs", "list the shipped specs, which every command takes by name "
                         "(a local file of that name is ./NAME)")
    p.set_defaults(run=cmd_specs)
    p = command("explain", "print the exact derivation as Markdown")
    p.add_argument("spec", help="spec file (TOML)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    p.set_defaults(run=cmd_explain)
    p = command("privatize", "privatize curves (GP or CGP) and write the release")
    p.add_argument("spec", help="spec file (TOML) of a curve mechanism, or the name of a "
                                "shipped spec (`gpcompiler specs`; a local file of "
                                "that name is ./NAME)")
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
    p.add_argument("--key", type=_typed(bytes.fromhex, lambda key: len(key) == 32,
                                        "64 hexadecimal digits (a 256-bit key)"), metavar="HEX",
                   help="256-bit key of addressed noise (project only): the same release for "
                        "the same key, curves and order in every target, for reproducible and "
                        "conformance releases only; a key known to others makes the noise "
                        "known (docs/threat-model.md) (default: OS entropy)")
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
                        "recently used grids)")
    _columns(p)
    p.add_argument("--format", choices=["values", "coefficients"],
                   help="what a .csv release holds: the released values on the public grid, "
                        "or per curve the released orthonormal and user-basis coefficients "
                        "(--method project); .npz and .parquet hold coefficients (default: "
                        "values)")
    _common(p, "evaluate the release at N evenly spaced points of the spec's curve domain "
               "(unbounded: of the released support; over k variables: N^(1/k) per "
               "variable)")
    _scheduler_option(p, "curves with --method project: their projections")
    ledger_options(p, _positive)
    p.set_defaults(run=scheduled(cmd_privatize))
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
    p.add_argument("--delta", type=_calibrated("delta"),
                   help="SPEC of kind = \"cdf\": the delta of its (epsilon, delta)-DP claim "
                        "(default: 1e-5, with --epsilon 1 unless given)")
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
                   help="Legendre degree K, moments (1..200) and direct (1..1000; 1..200 per "
                        "column for a joint CDF) only, or auto (direct: K chosen privately "
                        "with 1/5 of epsilon, docs/howto/choose-basis-and-budget.md) "
                        "(default: from --spec, else 10; 8 per column for a joint CDF)")
    p.add_argument("--method", default="direct",
                   choices=["moments", "direct", "histogram", "adaptive-quantiles"],
                   help="estimator (docs/design.md, \"CDF estimation\")")
    _common(p, "evaluate the private CDF at N evenly spaced points of [lo, hi]",
            "one column only: evaluate the private CDF at the public values in FILE (one per "
            "line; default: use --grid)")
    _scheduler_option(p, "one column: its statistics")
    ledger_options(p, _positive)
    p.set_defaults(run=scheduled(cmd_cdf))
    p = command("ledger", "the composed privacy cost of a ledger file (--ledger), exactly")
    p.add_argument("file", metavar="FILE", help="a ledger file (JSON Lines, "
                                                "docs/reference/ledger.md)")
    p.add_argument("--epoch", choices=("day", "week"), default="day",
                   help="the UTC epochs of the per-epoch totals (ISO weeks from Monday)")
    p.add_argument("--plot", metavar="PNG", help="write a PNG of the cumulative cost over "
                                                 "time (default: none)")
    p.set_defaults(run=cmd_ledger)
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
        where = error.filename or "standard output"   # no file: writing the release to stdout
        print(f"gpcompiler: error: {error.strerror or error}: {where}", file=sys.stderr)
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
