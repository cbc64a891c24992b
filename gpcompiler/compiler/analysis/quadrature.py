"""The quadrature a generated module uses to project a curve: its order
from the highest frequency and degree of the basis, verified on tiles, in 1-D and over a
box."""
import functools
import itertools
import math

import mpmath
import numpy
import sympy

from ...errors import SpecError
from .core import Quadrature
from .kinks import SHOWN, breakpoints
from .weights import interval_weight_singularities, weight_factors, weight_singularities


MAX_SUB_PIECES = 2 ** 20  # public limit: Gauss sub-pieces across a curve interval
MAX_SUB_CELLS = 2 ** 16   # public limit over a box: the product of each axis's sub-pieces


def check_sub_pieces(analysis):
    """Refuse a spec whose quadrature cuts its curve interval into more than MAX_SUB_PIECES
    sub-pieces of width 8/frequency (a box into more than MAX_SUB_CELLS sub-cells), at the
    default parameters: projecting a curve then takes at most that many sub-pieces plus one
    per sample, whatever its private sample times (docs/reference/spec.md, "Public
    limits")."""
    spec, frequency = analysis.spec, analysis.quadrature.frequency
    if frequency is None:
        return
    box = spec.dimension > 1
    intervals = spec.intervals if box else [spec.curve_interval or spec.interval]
    ends = [tuple(float(sympy.N(e.subs(spec.defaults))) for e in i) for i in intervals]
    rates = frequency if box else (frequency,)
    pieces = [rate * (hi - lo) / 8 for rate, (lo, hi) in zip(rates, ends)]
    total = math.prod(max(p, 1.0) for p in pieces)
    if not total <= (MAX_SUB_CELLS if box else MAX_SUB_PIECES):
        raise SpecError([_too_many_sub_pieces(spec, analysis.atoms, ends, rates, total)],
                        spec.path)


def _too_many_sub_pieces(spec, atoms, ends, rates, total):
    """(key, message) of a spec refused by check_sub_pieces."""
    family = spec.family.name if spec.family else None
    limit = ("the public limit of " + (f"2^16 = {MAX_SUB_CELLS} sub-cells over a box"
                                       if len(ends) > 1 else
                                       f"2^20 = {MAX_SUB_PIECES} sub-pieces per curve interval")
             + ' bounds the work of projecting any curve or field (docs/reference/spec.md, '
             '"Public limits")')
    if not math.isfinite(total):
        return ("domain.curve_interval", "a basis on the whole line needs a finite curve "
                "interval where curves live: the quadrature's work grows with the span of a "
                f"curve's samples, which is private; {limit}")
    key = ("domain.curve_interval" if family in ("sinc", "hermite") else
           "basis.family" if family == "fourier" else
           "metric.weight" if atoms.kind == "legendre" else "basis.functions")
    where = ", ".join(f"[{lo:g}, {hi:g}] in {v} at frequency {rate:.6g}"
                      for v, (lo, hi), rate in zip(spec.variables, ends, rates))
    return (key, f"the quadrature cuts {where} into sub-pieces of width 8/frequency: "
                 f"{total:.4g} sub-{'cells' if len(ends) > 1 else 'pieces'}; {limit}")


def choose_quadrature(spec, atoms):
    if spec.dimension > 1:
        return box_quadrature(spec, atoms)
    if atoms.kind == "piecewise":
        return _piecewise_quadrature(spec, atoms)
    if atoms.kind == "legendre" and spec.metric.weight is None:
        return Quadrature(exact_nodes=(atoms.size + 2) // 2)
    length = sympy.N((spec.interval[1] - spec.interval[0]).subs(spec.defaults))
    frequency, degree = 0.0, 1
    if atoms.kind == "fourier":    # the highest harmonic, without scanning 2K+1 expressions
        frequency = 2 * math.pi * (spec.basis_size // 2) / float(length)
    else:
        expressions = [c for f in spec.functions for c in f]
        if spec.metric.weight is not None:
            expressions.append(spec.metric.weight)
        for expression in expressions:
            f, d = _frequency_and_degree(expression.subs(spec.defaults), spec.variable)
            frequency, degree = max(frequency, f), max(degree, d)
    floor = 1.0 / float(length) if length.is_finite else 1.0
    frequency, singular = max(frequency, floor), interval_weight_singularities(spec)
    breaks = breakpoints(spec) if atoms.kind == "expression" else ()
    if breaks and singular:
        raise SpecError([("metric.weight", f"a weight singular at an end of the domain with "
                                           f"a basis that switches at {breaks[0]} ({SHOWN}) "
                                           "is not supported: use a bounded weight")], spec.path)
    if (atoms.kind == "expression" or _curved(spec.metric.weight, spec.variable)) \
            and not singular:  # every integrand with no exact Gauss rule is verified
        frequency = _verified_frequency(spec, frequency, degree // 2 + 2, breaks)
    return Quadrature(frequency=frequency, min_nodes=degree // 2 + 2, singular=singular,
                      breaks=breaks)


def _piecewise_quadrature(spec, atoms):
    """Exact Gauss rules on each sub-piece between breakpoints: an atom of degree < order
    times a linear hat (and a polynomial weight of degree d_w) has degree order + d_w, the
    weighted masses of two hats 2 + d_w (docs/clipping.md)."""
    weight = spec.metric.weight
    extra = sympy.Poly(weight, spec.variable).degree() if weight is not None else 0
    return Quadrature(exact_nodes=max(atoms.order + extra + 2, extra + 4) // 2,
                      breaks=atoms.breaks[1:-1])


def _curved(weight, t):
    """Whether a weight is not a polynomial in t (its integrands then need a verified rule)."""
    return weight is not None and not weight.is_polynomial(t)


def gauss_order(half_width, min_nodes):
    """Gauss-Legendre order whose truncation term (half-width x frequency)^(2n)/(2n)! is
    <= 1e-17, at least ``min_nodes``, at most 40 (copied into generated modules)."""
    order = min_nodes
    while order < 40 and (2 * order * math.log(half_width + 1e-300)
                          - math.lgamma(2 * order + 1)) > math.log(1e-17):
        order += 1
    return order


def _verified_frequency(spec, frequency, min_nodes, breaks=()):
    """verified_frequency for the basis components times the weight on the curve interval
    (a frequency bound is kept as is on an infinite one), piece by piece between the
    ``breaks`` where the basis switches (the module cuts its sub-pieces there)."""
    interval = spec.curve_interval or spec.interval
    lo, hi = (float(sympy.N(e.subs(spec.defaults))) for e in interval)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return frequency
    return verified_frequency(weighted_components(spec), spec.variable, (lo, hi), frequency,
                              min_nodes, spec.path, cuts=[float(b) for b in breaks])


def weighted_components(spec):
    """Every component of every basis function times the weight, at the default parameters:
    the integrands whose Gauss rules are verified."""
    weight = spec.metric.weight if spec.metric.weight is not None else sympy.Integer(1)
    return [(c * weight).subs(spec.defaults) for f in spec.functions for c in f]


def verified_frequency(expressions, t, interval, frequency, min_nodes, path, doublings=12,
                       cuts=()):
    """The smallest frequency 2^k * ``frequency`` whose Gauss rules (as the module picks
    them, for sub-pieces of every length 8/frequency / 2^j down to the shortest order)
    integrate every expression in t times 1 - s and s on tiles of the interval to 1e-13 of
    their scale, checked against mpmath (numerical), on each piece between the ``cuts``.
    The symbolic frequency bound misses rates such as sin(t)**15 or a pole near the
    interval."""
    lo, hi = interval
    ends = [lo] + [c for c in cuts if lo < c < hi] + [hi]
    frequency = max([frequency] + [_feature_frequency(e, t, lo, hi) for e in expressions])
    functions = []
    for expression in expressions:
        function = sympy.lambdify(t, expression, "mpmath")
        size = max(abs(float(mpmath.re(function(mpmath.mpf(float(x))))))
                   for x in numpy.linspace(lo, hi, 257)) + 1e-300
        functions.append((function, size))
    for _ in range(doublings):
        if all(_rules_hold(functions, a, b, frequency, min_nodes)
               for a, b in zip(ends[:-1], ends[1:])):
            return frequency
        frequency *= 2
    raise SpecError([("basis.functions", f"no Gauss rule up to frequency {frequency:g} "
                                         "integrates the basis accurately on "
                                         f"[{lo:g}, {hi:g}]")], path)


def _feature_frequency(expression, t, lo, hi):
    """A frequency for local features the symbolic bound misses: 4/d for a pole (a root of
    a polynomial denominator) at distance d > 0 from [lo, hi], so sub-pieces stay within
    its region of analyticity, and the largest |d(argument)/dt| of every function on a
    grid of the interval (numerical)."""
    frequency, grid = 0.0, numpy.linspace(lo, hi, 4097)
    for node in sympy.preorder_traversal(expression):
        if isinstance(node, sympy.Pow) and node.exp.is_negative and node.base.is_polynomial(t) \
                and node.base.has(t):
            for root in sympy.Poly(node.base, t).nroots():
                z = complex(root)
                gap = abs(z.imag) if lo <= z.real <= hi else abs(z - min((lo, hi),
                                                                      key=lambda e: abs(z - e)))
                if gap > 0:
                    frequency = max(frequency, 4 / gap)
        elif (isinstance(node, sympy.Function) and not isinstance(node, sympy.Piecewise)
              and node.args and node.args[0].has(t)):   # a Piecewise's pieces come next
            rate = sympy.lambdify(t, sympy.diff(node.args[0], t), "numpy")
            with numpy.errstate(all="ignore"):
                values = numpy.abs(numpy.broadcast_to(rate(grid), grid.shape).astype(complex))
            if numpy.isfinite(values).any():
                frequency = max(frequency, float(numpy.nanmax(values[numpy.isfinite(values)])))
    return frequency


def _rules_hold(functions, lo, hi, frequency, min_nodes):
    """Whether the module's rules are accurate for every sub-piece length it may use."""
    width = min(8.0 / frequency, hi - lo)
    while True:  # at most 21 passes: width halves from <= hi - lo to < (hi - lo) 1e-6
        order = gauss_order(width * frequency / 2, min_nodes)
        nodes, weights = numpy.polynomial.legendre.leggauss(order)
        for start in numpy.unique(numpy.linspace(lo, hi - width, 4)):
            if not all(_tile_holds(f, size, start, width, nodes, weights)
                       for f, size in functions):
                return False
        if order == min_nodes or width < (hi - lo) * 1e-6:
            return True
        width /= 2


def _tile_holds(function, size, start, width, nodes, weights):
    """The Gauss rule's truncation error, against mpmath, for the integrals of f (1 - s) and
    f s on one tile, relative to width x ``size`` (the largest |f| on the interval); the
    nodes are placed exactly (float rounding of positions is not the rule's error; the two
    integrals' quadratures share their nodes, so f is evaluated once per node)."""
    with mpmath.workdps(30):
        a, h = mpmath.mpf(float(start)), mpmath.mpf(float(width))
        s = [(mpmath.mpf(float(v)) + 1) / 2 for v in nodes]
        values = [mpmath.re(function(a + h * v)) for v in s]
        scale, real = h * size, functools.cache(lambda x: mpmath.re(function(x)))
        for share in (lambda v: v, lambda v: 1 - v):
            rule = h / 2 * mpmath.fsum(w * f * share(v) for w, f, v in zip(weights, values, s))
            exact = mpmath.quad(lambda x: real(x) * share((x - a) / h), [a, a + h])
            if abs(rule - exact) > 1e-13 * scale:
                return False
    return True


def _frequency_and_degree(expression, t):
    """Bound the oscillation rate of the transcendental parts and the polynomial degree."""
    frequency, degree = 0.0, 0
    for node in sympy.preorder_traversal(expression):
        if isinstance(node, sympy.Function) and node.args and not isinstance(node,
                                                                             sympy.Piecewise):
            rate = sympy.diff(node.args[0], t)
            frequency = max(frequency, float(abs(rate)) if rate.is_number else 10.0)
        elif isinstance(node, sympy.Pow) and node.base == t and node.exp.is_Integer:
            degree = max(degree, int(node.exp))
        elif node == t:
            degree = max(degree, 1)
    return frequency, degree


def _box_frequency_and_degree(expression, t, spec):
    """As analysis._frequency_and_degree in the variable t, with the rate of a function
    whose argument's t-derivative involves the other variables bounded over the box (sum
    of |coefficient| times the largest |monomial|, for a polynomial derivative); a rate
    with no such bound is a spec error, never a guess."""
    frequency, degree = _frequency_and_degree(expression, t)
    for node in sympy.preorder_traversal(expression):
        if isinstance(node, sympy.Function) and node.args:
            rate = sympy.diff(node.args[0], t)
            if not rate.is_number:
                frequency = max(frequency, _rate_bound(node, rate, t, spec))
    return frequency, degree


def _rate_bound(node, rate, t, spec):
    ends = [max(abs(float(sympy.N(e.subs(spec.defaults)))) for e in interval)
            for interval in spec.intervals]
    try:
        poly = sympy.Poly(rate, *spec.variables)
    except sympy.PolynomialError:
        poly = None
    if poly is None or not all(c.is_number for c in poly.coeffs()):
        raise SpecError([("basis.functions", f"no bound on how fast {node} oscillates in {t} "
                                             f"over the box (d/d{t} of its argument is "
                                             f"{rate}, not a polynomial in the variables)")],
                        spec.path)
    return float(sum(abs(c) * math.prod(b ** e for b, e in zip(ends, powers))
                     for powers, c in poly.terms()))


def box_quadrature(spec, atoms):
    """Gauss-Legendre nodes per axis and cell, exact for tensor Legendre atoms times a
    multilinear interpolant (degree a_i + 1 in x_i), also under H^1; for a weight, or
    expression atoms (also under H^1, whose derivative terms need only values), a frequency
    bound and smallest order per variable as in 1-D, for the user's expressions verified
    against mpmath axis by axis."""
    weighted = spec.metric.weight is not None
    if atoms.kind == "legendre" and not weighted:
        return Quadrature(exact_nodes=tuple((max(a[i] for a in atoms.index) + 3) // 2
                                            for i in range(spec.dimension)))
    if atoms.kind not in ("legendre", "expression"):
        return Quadrature()
    factors = weight_factors(spec) if weighted else None
    frequencies, orders = [], []
    for axis, (t, (lo, hi)) in enumerate(zip(spec.variables, spec.intervals)):
        rates = [_box_frequency_and_degree(c.subs(spec.defaults), t, spec)
                 for f in (spec.functions if atoms.kind == "expression" else ()) for c in f]
        rates.append((0.0, max(a[axis] for a in atoms.index) if atoms.kind == "legendre" else 0))
        weight = (_box_frequency_and_degree(
            (factors[axis] if factors else spec.metric.weight).subs(spec.defaults), t, spec)
            if weighted else (0.0, 0))
        length = float(sympy.N((hi - lo).subs(spec.defaults)))
        frequencies.append(max([1.0 / length, weight[0]] + [r for r, _ in rates]))
        orders.append((max(d for _, d in rates) + weight[1]) // 2 + 2)
    if atoms.kind == "expression" and spec.family is None:
        frequencies = _verified_frequencies(spec, frequencies, orders)
    return Quadrature(frequency=tuple(frequencies), min_nodes=tuple(orders),
                      singular=weight_singularities(spec) if factors else ())


def _verified_frequencies(spec, frequencies, orders):
    """Per variable x_i, analysis.verified_frequency of the user's basis components times
    the weight as functions of x_i, the other variables at their ends and midpoints (3^(k-1)
    sections) and where the components peak most sharply (_peaked_sections): the module's
    tensor rule is one such 1-D rule per axis (numerical)."""
    expressions = weighted_components(spec)
    ends = [tuple(float(sympy.N(e.subs(spec.defaults))) for e in i) for i in spec.intervals]
    verified = []
    for axis, t in enumerate(spec.variables):
        others = [v for v in spec.variables if v != t]
        points = set(itertools.product(*((a, (a + b) / 2, b) for v, (a, b) in
                                         zip(spec.variables, ends) if v != t)))
        points |= _peaked_sections(spec.variables, expressions, axis, ends)
        sections = [e.subs(dict(zip(others, point))) for point in sorted(points)
                    for e in expressions]
        verified.append(verified_frequency(_distinct_sections(sections, t, ends[axis]), t,
                                           ends[axis], frequencies[axis], orders[axis],
                                           spec.path))
    return tuple(verified)


def _distinct_sections(sections, t, interval):
    """The sections worth verifying: not polynomials in t (the smallest order, from the
    degree, integrates those exactly), and one of each set equal up to a constant factor
    (the check is relative to each function's size), compared at 9 points to 1e-12."""
    nodes = [sympy.Float(interval[0] + (interval[1] - interval[0]) * (k + 0.5) / 9, 30)
             for k in range(9)]
    kept = {}
    for section in sections:
        if not section.has(t) or section.is_polynomial(t):
            continue
        values = [complex(sympy.N(section.subs(t, x), 20)) for x in nodes]
        top = max(values, key=abs)
        if top == 0 or not math.isfinite(abs(top)):
            kept[len(kept), None] = section
            continue
        kept.setdefault(tuple((round((v / top).real, 12), round((v / top).imag, 12))
                              for v in values), section)
    return list(kept.values())


def _peaked_sections(variables, expressions, axis, ends, count=2, nodes=33, samples=1025):
    """The ``count`` values of the other variables (on a grid of ``nodes`` per variable)
    where a component, as a function of x_i (``samples`` points), has the largest local
    frequency sqrt(|f''| / max |f|): about 1/distance to a pole, or an oscillation's rate
    (float64 finite differences, only to choose where mpmath verifies the rules)."""
    grids = [numpy.linspace(a, b, samples if i == axis else nodes)
             for i, (a, b) in enumerate(ends)]
    mesh = numpy.meshgrid(*grids, indexing="ij")
    step = (ends[axis][1] - ends[axis][0]) / (samples - 1)
    worst = numpy.zeros([1 if i == axis else nodes for i in range(len(ends))])
    for expression in expressions:
        with numpy.errstate(all="ignore"):
            values = numpy.real(numpy.broadcast_to(
                sympy.lambdify(variables, expression, "numpy")(*mesh), mesh[0].shape))
            curvature = numpy.abs(numpy.diff(values, 2, axis=axis)) / step ** 2
            size = numpy.max(numpy.abs(values), axis=axis, keepdims=True)
            rate = numpy.sqrt(numpy.max(curvature, axis=axis, keepdims=True) / size)
        worst = numpy.fmax(worst, numpy.nan_to_num(rate, nan=0.0, posinf=0.0))
    others = [g for i, g in enumerate(grids) if i != axis]
    flat = numpy.squeeze(worst, axis=axis).reshape(-1)
    return {tuple(float(g[j]) for g, j in zip(others, numpy.unravel_index(n, [nodes] * len(
        others)))) for n in numpy.argsort(flat)[::-1][:count] if flat[n] > 0}
