"""The test protocol of every target (docs/reference/randomness.md, "The protocol program"):
a generated 1-D module run as a script reads CSV on standard input and writes CSV on
standard output, NumPy and the standard library only.

    python NAME.py privatize (--epsilon E | --rho R) [--bound B] [--key HEX] < coefficients.csv
    python NAME.py release (--epsilon E | --rho R) [--bound B] [--key HEX] < curves.csv
    python NAME.py project < curves.csv

coefficients.csv: header curve,c0,...,c{D-1}, one curve per line, its COEF_SHAPE coordinates
flattened in C order; curves.csv: header curve,t,y (y,y2,...,yn for values in R^n), one
sample per line, a curve's samples in order. The output is coefficients.csv, numbers printed
as repr (they parse back to the same float64). With --key, row r (the r-th curve, from 0)
has the row address r. Bad input: one line on standard error, exit 2, nothing on stdout.
"""
import argparse
import csv
import math
import sys

import numpy

from .keyed import KeyedGenerator


class ProtocolError(Exception):
    """Bad input to the protocol program (one line, exit 2)."""


class _ProtocolParser(argparse.ArgumentParser):
    """argparse whose errors are a ProtocolError (one line, no usage)."""

    def error(self, message):
        raise ProtocolError(message)


def _protocol_parser(prog):
    parser = _ProtocolParser(prog=prog, description="the test protocol of gpcompiler's targets")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, data in (("privatize", "coefficients.csv"), ("release", "curves.csv")):
        command = commands.add_parser(name, help=f"release the curves of {data} on stdin")
        budget = command.add_mutually_exclusive_group(required=True)
        budget.add_argument("--epsilon", type=float, help="GP budget")
        budget.add_argument("--rho", type=float, help="CGP budget")
        command.add_argument("--bound", type=float, help="the public norm bound B")
        command.add_argument("--key", help="256-bit key (64 hex digits): reproducible releases "
                                           "for conformance tests only (default: OS entropy)")
    commands.add_parser("project", help="the projections of the curves of curves.csv on stdin")
    return parser


def run_protocol(module, argv, stdin=None, stdout=None, stderr=None):
    """Run the protocol program of a generated 1-D ``module``; the exit status (0 or 2)."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    prog = f"{module.NAME}.py"
    try:
        args = _protocol_parser(prog).parse_args(argv)
        rows = _protocol_rows(module, args, [line for line in csv.reader(stdin) if line])
    except (ProtocolError, ValueError, TypeError, OverflowError, csv.Error) as error:
        stderr.write(f"{prog}: error: {' '.join(str(error).split())}\n")
        return 2
    csv.writer(stdout, lineterminator="\n").writerows(rows)
    return 0


def _protocol_rows(module, args, lines):
    """The output lines (a header, then one line per curve) of the command ``args``."""
    if args.command == "privatize":
        ids, c = _coefficients_csv(module, lines)
        c = module.privatize(c, **_release_options(args))
    else:
        ids, curves = _curves_csv(module, lines)
        if args.command == "project":
            c = [module.project(t, y) for t, y in curves]
        else:
            options = _release_options(args)
            c = [module.project_and_privatize(t, y, **options) for t, y in curves]
    flat = numpy.reshape(c, (len(ids), module.COEF_DIM))
    return [["curve"] + [f"c{j}" for j in range(module.COEF_DIM)]] + [
        [key] + [repr(float(v)) for v in row] for key, row in zip(ids, flat)]


def _release_options(args):
    """The budget, bound and noise source of a release: a KeyedGenerator from row 0 with
    --key, else OS entropy."""
    rng = None if args.key is None else KeyedGenerator(args.key)
    return {"epsilon": args.epsilon, "rho": args.rho, "bound": args.bound, "rng": rng}


def _numbers(line, number, names):
    """The fields ``names`` of a data line as finite floats, else a ProtocolError."""
    if len(line) != len(names) + 1:
        raise ProtocolError(f"line {number} has {len(line)} fields, expected {len(names) + 1}")
    return [_number(text, name, number) for name, text in zip(names, line[1:])]


def _number(text, name, number):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ProtocolError(f"line {number}: {name}={text!r} is not a finite number")
    return value


def _header(lines, names):
    """Check the header line; the data lines with their line numbers."""
    if not lines or lines[0] != names:
        got = ",".join(lines[0]) if lines else "no input"
        raise ProtocolError(f"the header must be {','.join(names)}, got {got!r}")
    return list(enumerate(lines[1:], start=2))


def _coefficients_csv(module, lines):
    """(ids, coefficients (B, *COEF_SHAPE)) of coefficients.csv."""
    names = [f"c{j}" for j in range(module.COEF_DIM)]
    data = _header(lines, ["curve"] + names)
    values = [_numbers(line, number, names) for number, line in data]
    c = numpy.array(values, dtype=float).reshape((len(data),) + module.COEF_SHAPE)
    return [line[0] for _, line in data], c


def _curves_csv(module, lines):
    """(ids, [(t, y)] per curve in order of first appearance) of curves.csv."""
    values = ["y"] + [f"y{k}" for k in range(2, module.VALUE_DIM + 1)]
    data = _header(lines, ["curve", "t"] + values)
    curves = {}
    for number, line in data:
        curves.setdefault(line[0], []).append(_numbers(line, number, ["t"] + values))
    out = []
    for samples in curves.values():
        array = numpy.array(samples, dtype=float)
        y = array[:, 1] if module.VALUE_DIM == 1 else array[:, 1:]
        out.append((array[:, 0].copy(), y.copy()))  # contiguous: a float sum's order follows
    return list(curves), out
