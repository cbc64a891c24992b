"""Analysis -> CModuleIR: what the C emitter prints, at the parameters' defaults. The
shared IR (gpcompiler/compiler/ir.py) gives the module's facts; the C target adds its own
lowering of the exact values (hexadecimal floats, C expressions) and the Gauss-Legendre
tables its projection can need (docs/reference/c.md)."""
import math
from dataclasses import dataclass

import mpmath
import numpy
import sympy

from ...analysis.quadrature import gauss_order
from ...ir import COMPACT_LIMIT, _ExactPrinter, lower
from ...symbolic import is_identity
from ....errors import SpecError
from .printer import c_expression, exact_float

CHUNK = 1 << 15         # atom values per block of Gauss nodes (the Python module's _CHUNK)
BLOCK = 1024            # samples per block of the contraction (slack.BLOCK, _BLOCK)
MAX_SAMPLES_LOG2 = 40   # slack.MAX_SAMPLES = 2^40: the samples ETA is stated for
ATOMS = ("legendre", "fourier", "sinc", "expression")


@dataclass(frozen=True)
class Constant:
    """A float64 rounded once from its exact value, and that value as text."""
    value: float
    exact: str


@dataclass(frozen=True)
class Rule:
    """A Gauss-Legendre rule on [-1, 1] (nodes, weights: Constants) and the largest half
    width (times the frequency) for which the Python module's gauss_order picks it."""
    order: int
    nodes: tuple
    weights: tuple
    limit: float


@dataclass(frozen=True)
class CModuleIR:
    """Plain data for emit_c: the shared ModuleIR and the C target's additions."""
    module: object            # ir.ModuleIR
    defaults: tuple           # (name, exact default) of the parameters
    domain: tuple             # (Constant lo, Constant hi)
    curve: tuple              # the curve interval (the domain if none): (Constant, Constant)
    eta: float
    bound: object             # the declared bound (float) or None
    gram: tuple               # (entries (i, j, Constant), identity, formula)
    cholesky: tuple
    transform: tuple          # entries (j, k, Constant) of K, or () for K = I
    atom_scales: tuple        # Legendre atoms: sqrt((2k + 1)/(b - a)) per k
    rate: object              # Fourier atoms: w = 2 pi/(b - a)
    atom_codes: tuple         # expression atoms: per atom, code (C or JS) per component
    rules: tuple              # the Gauss rules the projection can use, increasing order
    frequency: object         # None for exact rules (one sub-piece per piece)
    piece_levels: int         # binary-counter levels of a piece's parts (0: never split)


def unsupported(spec):
    """What of ``spec`` the C target does not support yet (None: it does)."""
    if spec.kind != "mechanism":
        return f"kind = {spec.kind!r} specs"
    if spec.dimension > 1:
        return "specs over several variables (boxes)"
    if spec.metric.sobolev or spec.metric.kind != "L2":
        return f"the {spec.metric.kind} metric (only L2)"
    if spec.metric.weight is not None:
        return "weighted inner products"
    if spec.outside != "zero":
        return f"[curve] outside = {spec.outside!r} (only \"zero\")"
    return None


def lower_c(analysis, target="C", expression=c_expression):
    """The CModuleIR of an analysis; a SpecError naming what the C target does not support
    yet for any other spec (never wrong code). The JS target (emit/js) lowers through it
    too: ``target`` names it in the error, ``expression`` prints its expression atoms."""
    spec = analysis.spec
    missing = unsupported(spec) or (None if analysis.atoms.kind in ATOMS else
                                    f"{analysis.atoms.kind} atoms")
    if missing is None and analysis.quadrature.breaks or analysis.atoms.kind == "piecewise":
        missing = ("piecewise bases (the bspline family; abs, Max, Min or Piecewise: Gauss "
                   "rules cut at breakpoints)")
    if missing is None and analysis.quadrature.singular:
        missing = "weights singular at an end of the domain"
    if missing is None and analysis.atoms.kind == "expression" and any(
            c.has(sympy.sinc) for f in spec.functions for c in f):
        missing = "sinc in a basis expression (use the sinc family)"
    if missing:
        raise SpecError([("target", f"the {target} target does not support {missing} yet")], spec.path)
    module = lower(analysis)
    defaults = spec.defaults

    def constant(value):
        value = sympy.sympify(value).subs(defaults)
        return Constant(exact_float(value), _exact_text(value))
    domain = tuple(constant(e) for e in spec.interval)
    curve = tuple(constant(e) for e in spec.curve_interval) if spec.curve_interval else domain
    lo, hi = (sympy.sympify(e).subs(defaults) for e in spec.interval)
    kind = analysis.atoms.kind
    rules, frequency = _rules(analysis, curve)
    return CModuleIR(
        module=module, defaults=tuple((str(s), str(v)) for s, v in spec.parameters),
        domain=domain, curve=curve, eta=float(module.eta),
        bound=None if spec.bound is None else float(spec.bound),
        gram=_matrix(analysis.gram, defaults, dict(analysis.formulas).get("gram")),
        cholesky=_matrix(analysis.cholesky, defaults, dict(analysis.formulas).get("cholesky")),
        transform=() if is_identity(analysis.transform) else _matrix(
            analysis.transform, defaults, None)[0],
        atom_scales=tuple(constant(sympy.sqrt((2 * k + 1) / (hi - lo)))
                          for k in range(analysis.atoms.size)) if kind == "legendre" else (),
        rate=constant(2 * sympy.pi / (hi - lo)) if kind == "fourier" else None,
        atom_codes=tuple(tuple(expression(sympy.sympify(c).subs(defaults), spec.variable)
                               for c in f) for f in spec.functions) if kind == "expression" else (),
        rules=rules, frequency=frequency, piece_levels=_piece_levels(module, curve, frequency))


def _exact_text(value):
    return _ExactPrinter().doprint(value) if not value.is_Float else f"~ {value}"


def _matrix(matrix, defaults, formula):
    """(entries (i, j, Constant) in row order, identity, formula) of an exact matrix at the
    defaults; a large constant one (more than COMPACT_LIMIT entries) is given by its floats
    and its formula, as the Python module gives it."""
    if is_identity(matrix):
        return (), True, formula
    keys = sorted(matrix.keys())
    if len(keys) > COMPACT_LIMIT and matrix.constant:
        values = matrix.floats(keys)
        return tuple((i, j, Constant(v, "")) for (i, j), v in zip(keys, values)), False, formula
    entries = []
    for i, j in keys:
        value = sympy.sympify(matrix[i, j]).subs(defaults)
        entries.append((i, j, Constant(exact_float(value), _exact_text(value))))
    return tuple(entries), False, formula


def _rules(analysis, curve):
    """The Gauss rules the spec's projection can use and its frequency (None: exact rules).
    Exact rules: one order. Otherwise every order gauss_order gives a half width
    (h/pieces) F/2 <= 4 (1 + 1e-7): pieces = ceil(h F/8) keeps it <= 4 up to roundings."""
    quadrature = analysis.quadrature
    if quadrature.exact_nodes is not None:
        return (_rule(quadrature.exact_nodes, math.inf),), None
    low, high = quadrature.min_nodes, gauss_order(4.0000004, quadrature.min_nodes)
    rules = tuple(_rule(n, _order_limit(n, quadrature.min_nodes) if n < high else math.inf)
                  for n in range(low, high + 1))
    return rules, float(quadrature.frequency)


def _order_limit(order, min_nodes):
    """The largest float half width for which gauss_order(half width, min_nodes) <= order:
    its test is monotone in the half width, so a bisection over the floats' bits finds it."""
    low, high = 0, numpy.float64(8.0).view(numpy.int64).item()
    while high - low > 1:
        middle = (low + high) // 2
        value = numpy.int64(middle).view(numpy.float64).item()
        low, high = (middle, high) if gauss_order(value, min_nodes) <= order else (low, middle)
    return numpy.int64(low).view(numpy.float64).item()


def _rule(order, limit):
    """Gauss-Legendre nodes and weights of ``order`` on [-1, 1], by Newton's method on
    P_order at 60 digits (from NumPy's nodes), each rounded once to float64."""
    with mpmath.workdps(60):
        nodes, weights = [], []
        for start in numpy.polynomial.legendre.leggauss(order)[0]:
            x = mpmath.mpf(start)
            for _ in range(100):
                p, d = _legendre(order, x)
                step = p / d
                x -= step
                if abs(step) < mpmath.mpf(10) ** -58:
                    break
            p, d = _legendre(order, x)
            nodes.append(Constant(float(x), mpmath.nstr(x, 25)))
            weight = 2 / ((1 - x * x) * d * d)
            weights.append(Constant(float(weight), mpmath.nstr(weight, 25)))
    return Rule(order, tuple(nodes), tuple(weights), limit)


def _legendre(n, x):
    """(P_n(x), P_n'(x)) by the three-term recurrence."""
    previous, current = mpmath.mpf(1), x
    for k in range(1, n):
        previous, current = current, ((2 * k + 1) * x * current - k * previous) / (k + 1)
    return current, n * (x * current - previous) / (x * x - 1)


def _piece_levels(module, curve, frequency):
    """Levels of the binary counter summing the parts of one piece (0: a piece is never
    cut into parts of rows sub-pieces): from its most sub-pieces, ceil(W F/8) over the
    curve interval's width W, and the fewest rows per block (at the highest order, 40)."""
    if frequency is None:
        return 0
    width = curve[1].value - curve[0].value
    most = max(math.ceil(width * frequency / 8.0), 1)
    rows = max(1, CHUNK // (40 * module.atoms_size * module.value_dim))
    parts = -(-most // rows)
    return parts.bit_length() + 1 if parts > 1 else 0
