"""The weight of a metric: positive and integrable on the interval or box,
its singular ends (|t - end|^alpha), and a box weight's separable factors."""
import dataclasses
import functools
import itertools

import mpmath
import numpy
import sympy
from sympy.calculus.util import continuous_domain

from ...errors import SpecError
from ..spec import Metric
from ..symbolic import DIGITS
from .core import is_polynomial_box


def check_weight(spec):
    """A weight must not be negative (or complex) inside the domain: test it at rational
    points, with guaranteed-accuracy evaluation (isolated zeros are allowed)."""
    weight = spec.metric.weight
    if weight is None:
        return
    axes = []
    for interval in spec.intervals:
        a, b = (e.subs(spec.defaults) for e in interval)
        a = a if a.is_finite else (b - 64 if b.is_finite else sympy.Integer(-32))
        b = b if b.is_finite else a + 64
        steps = round(64 ** (1 / spec.dimension))
        axes.append([a + (b - a) * sympy.Rational(k, steps) for k in range(1, steps)])
    values = []
    for point in itertools.chain(itertools.product(*axes), _weight_minima(spec, axes)):
        value = sympy.N(weight.subs(spec.defaults).subs(dict(zip(spec.variables, point))), DIGITS)
        point = tuple(c if isinstance(c, sympy.Rational) and c.q <= 1000 else sympy.N(c, 8)
                      for c in point)
        point = point[0] if spec.dimension == 1 else point
        if value.is_infinite:
            problem = f"the weight {weight} is unbounded inside the domain: w({point}) = oo"
        elif not (value.is_real and value >= 0):
            problem = (f"the weight {weight} is not positive on the domain: w({point}) = "
                       f"{sympy.N(value, 6)}")
        else:
            values.append(value)
            continue
        raise SpecError([("metric.weight", problem)], spec.path)
    if not any(values):
        raise SpecError([("metric.weight", f"the weight {weight} is 0 at every point tried: "
                                           "expected a positive weight")], spec.path)


def _weight_minima(spec, axes, points=2 ** 18):
    """Candidate points where the weight may be negative between the rational test points:
    for a polynomial weight in one variable, a point inside each interval between
    consecutive real roots in the domain (exact: a sign change needs a root of odd
    multiplicity); otherwise the smallest value on a float64 grid of about ``points``
    points (then checked with guaranteed accuracy like the others)."""
    weight = spec.metric.weight.subs(spec.defaults)
    lo, hi = [min(a) for a in axes], [max(a) for a in axes]
    if spec.dimension == 1 and weight.is_polynomial(spec.variable):
        roots = sorted(r for r in sympy.Poly(weight, spec.variable).real_roots()
                       if lo[0] < r < hi[0])
        ends = [lo[0]] + roots + [hi[0]]
        return [((p + q) / 2,) for p, q in zip(ends[:-1], ends[1:])]
    per_axis = round(points ** (1 / spec.dimension))
    grids = [numpy.linspace(float(a), float(b), per_axis) for a, b in zip(lo, hi)]
    with numpy.errstate(all="ignore"):
        mesh = numpy.meshgrid(*grids, indexing="ij")
        values = numpy.broadcast_to(sympy.lambdify(spec.variables, weight, "numpy")(*mesh),
                                    mesh[0].shape).astype(complex)
    score = numpy.where(numpy.isfinite(values), values.real - numpy.abs(values.imag), -numpy.inf)
    index = numpy.unravel_index(numpy.argmin(score), score.shape)
    return [tuple(sympy.Rational(float(g[i])) for g, i in zip(grids, index))]


def interval_weight_singularities(spec):
    """(endpoint, alpha) for each finite endpoint where the weight ~ |t - end|^alpha, alpha < 0."""
    weight = spec.metric.weight
    if weight is None:
        return ()
    t, found = spec.variable, []
    for index, end in enumerate(spec.interval):
        if not end.is_finite:
            continue
        s = sympy.Symbol("s", positive=True)
        local = weight.subs(spec.defaults).subs(t, end.subs(spec.defaults)
                                                + (s if index == 0 else -s))
        try:
            alpha = sympy.limit(sympy.log(local) / sympy.log(s), s, 0, "+")
        except (NotImplementedError, ValueError, TypeError):
            continue
        if alpha.is_number and alpha.is_finite and alpha < 0:
            if alpha <= -1:
                raise SpecError([("metric.weight", f"the weight {weight} is not integrable "
                                                   f"near {t} = {end}")], spec.path)
            found.append((index, float(alpha)))
    return tuple(found)


def weight_factors(spec):
    """The weight as a product w_1(x_1) ... w_k(x_k) of one-variable factors, found by
    SymPy and checked exactly (the constant factor goes into w_1), or None."""
    weight = spec.metric.weight
    if weight is None:
        return None
    signed = _signed_variables(spec)
    back = {v: t for t, v in signed.items()}
    local = weight.subs(signed)
    parts = sympy.separatevars(local, list(signed.values()), dict=True)
    if parts is None:
        return None
    factors = [parts.get(signed[t], sympy.Integer(1)) for t in spec.variables]
    factors[0] = parts["coeff"] * factors[0]
    if sympy.simplify(sympy.Mul(*factors) - local) != 0:
        return None
    return tuple(f.subs(back) for f in factors)


def _signed_variables(spec):
    """Each variable as a symbol that is positive (negative) where its interval is, at the
    defaults, within [0, oo) ((-oo, 0]): inside the box sqrt(x*y) = sqrt(x) sqrt(y) then
    holds and SymPy separates it; other variables stay as they are."""
    out = {}
    for t, (lo, hi) in zip(spec.variables, spec.intervals):
        lo, hi = (e.subs(spec.defaults) for e in (lo, hi))
        sign = {"positive": True} if lo >= 0 else {"negative": True} if hi <= 0 else {}
        out[t] = sympy.Symbol(t.name, real=True, **sign) if sign else t
    return out


def weight_axis_spec(spec, axis, factor):
    """The 1-D spec of one variable carrying the weight factor w_i (no basis functions)."""
    t, interval = spec.variables[axis], spec.intervals[axis]
    return dataclasses.replace(spec, variable=t, interval=interval, variables=(t,),
                               intervals=(interval,), functions=(), family=None,
                               metric=Metric(weight=factor), curve_interval=None)


def check_box_weight(spec):
    """The weight's factors when it separates, each continuous inside its interval and at
    worst ~ d^alpha, alpha > -1, at an end (checked as in 1-D; a singular factor needs a
    polynomial basis, whose module contracts one axis at a time); a weight that does not
    separate must be proven bounded on the closed box. Otherwise a one-line spec error."""
    if spec.metric.weight is None:
        return None
    check_weight(spec)
    factors = weight_factors(spec)
    if factors is None:
        _check_bounded_weight(spec)
        return None
    for axis, factor in enumerate(factors):
        one = weight_axis_spec(spec, axis, factor.subs(spec.defaults))
        t, (lo, hi) = one.variable, (e.subs(spec.defaults) for e in one.interval)
        try:
            inside = continuous_domain(one.metric.weight, t, sympy.Interval.open(lo, hi))
        except (NotImplementedError, ValueError, TypeError):
            inside = None
        if inside != sympy.Interval.open(lo, hi):
            raise SpecError([("metric.weight", f"the factor {factor} of the weight "
                                               f"{spec.metric.weight} in {t} is "
                                               + ("not continuous inside" if inside is not None
                                                  else "not provably continuous inside")
                                               + f" [{lo}, {hi}]; a weight over a box must be "
                                               "bounded, or a product of one-variable factors "
                                               "singular at most at the ends of their interval"
                                               )], spec.path)
        singular = interval_weight_singularities(one)
        _check_bounded_ends(one, factor, [index for index, _ in singular])
        if singular and not is_polynomial_box(spec):
            raise SpecError([("metric.weight", f"the factor {factor} of the weight is singular "
                                               f"at an end of [{lo}, {hi}]; a weight singular "
                                               "on the box's boundary needs a polynomial basis "
                                               "(a monomial or legendre family, or polynomial "
                                               "functions)")], spec.path)
    return factors


def _check_bounded_ends(one, factor, singular):
    """At an end where the factor is not ~ d^alpha, alpha < 0, it must have a finite limit
    (the module grades only power singularities: log(1/d) is refused, not integrated
    badly)."""
    t, s = one.variable, sympy.Symbol("s", positive=True)
    for index, end in enumerate(one.interval):
        if index in singular or not end.is_finite:
            continue
        local = one.metric.weight.subs(one.defaults).subs(
            t, end.subs(one.defaults) + (s if index == 0 else -s))
        try:
            value = sympy.limit(local, s, 0, "+")
        except (NotImplementedError, ValueError, TypeError):
            value = sympy.nan
        if not (value.is_number and value.is_finite):
            raise SpecError([("metric.weight", f"the factor {factor} of the weight in {t} has "
                                               f"no finite limit at {t} = {end} and does not "
                                               "behave like d^alpha there; expected a factor "
                                               "bounded, or ~ d^alpha with -1 < alpha < 0, at "
                                               "the ends of its interval")], one.path)


def weight_singularities(spec):
    """Per variable, the (end, alpha) where the factor w_i ~ d^alpha, alpha < 0, of a
    separable weight (as analysis.quadrature.singular in 1-D); () when nothing is singular."""
    factors = weight_factors(spec)
    if factors is None:
        return ()
    singular = tuple(interval_weight_singularities(weight_axis_spec(spec, axis, factor))
                     for axis, factor in enumerate(factors))
    return singular if any(singular) else ()


_INTERVAL_FUNCTIONS = ("sqrt", "exp", "log", "cos", "sin", "pi", "e", "fabs")


BOUND_BOXES = 4096   # at most this many unproven sub-boxes per level, 12 levels


def _check_bounded_weight(spec):
    """A weight that does not separate must be bounded on the closed box (modules integrate
    it by Gauss rules without grading): proven by interval arithmetic (mpmath.iv, outward
    rounding) on sub-boxes halved where no finite bound is found; a weight that is singular
    somewhere on the box, or whose bound is not found, is a one-line spec error."""
    weight = spec.metric.weight.subs(spec.defaults).replace(
        lambda e: e.is_Pow and not e.exp.is_Integer,
        lambda e: sympy.exp(e.exp * sympy.log(e.base)))
    modules = [{name: getattr(mpmath.iv, name) for name in _INTERVAL_FUNCTIONS}
               | {"Abs": mpmath.iv.fabs, "E": mpmath.iv.e}]
    uncovered = sorted({type(f).__name__ for f in weight.atoms(sympy.Function)}
                       - set(_INTERVAL_FUNCTIONS) - {"Abs"})
    if uncovered:
        raise SpecError([("metric.weight", f"the weight {spec.metric.weight} does not separate "
                                           f"and contains {', '.join(uncovered)}, which the "
                                           "proof of boundedness on the box (interval "
                                           "arithmetic) does not cover; expected a weight "
                                           "built from +, -, *, /, powers, sqrt, exp, log, "
                                           "sin, cos and abs, or a product of one-variable "
                                           "factors")], spec.path)
    function = sympy.lambdify(spec.variables, weight, modules=modules)
    boxes = [tuple(_enclosure(interval, spec) for interval in spec.intervals)]
    for _ in range(12):
        boxes = [b for b in boxes if not _bounded(function, b)]
        if not boxes or len(boxes) > BOUND_BOXES:
            break
        boxes = [halves for b in boxes for halves in itertools.product(*(
            ((i.a, i.mid), (i.mid, i.b)) for i in b))]
        boxes = [tuple(mpmath.iv.mpf([lo, hi]) for lo, hi in b) for b in boxes]
    if boxes:
        near = ", ".join(f"{float(i.mid):.6g}" for i in boxes[0])
        raise SpecError([("metric.weight", f"the weight {spec.metric.weight} does not separate "
                                           "into one-variable factors and has no finite bound "
                                           f"on the box near ({near}); expected a weight "
                                           "bounded on the closed box, or a product "
                                           "w_1(x_1)...w_k(x_k) of factors singular at most "
                                           "at the ends of their intervals")], spec.path)


def _enclosure(interval, spec):
    lo, hi = (mpmath.iv.mpf(str(sympy.N(e.subs(spec.defaults), 30))) for e in interval)
    return mpmath.iv.mpf([lo.a, hi.b])


def _bounded(function, box):
    """Whether interval arithmetic bounds the weight on ``box`` (a finite upper end)."""
    try:
        value = function(*box)
    except (ValueError, TypeError, ZeroDivisionError, NameError, mpmath.libmp.ComplexResult):
        return False
    return isinstance(value, mpmath.ctx_iv.ivmpf) and mpmath.isfinite(value.b) or (
        not isinstance(value, mpmath.ctx_iv.ivmpf) and mpmath.isfinite(value))


RATIO_MARGIN = 2        # the scanned piece ratio is doubled (a numerical sup: docs/clipping.md)
_RATIO_DIGITS = 50      # moments of pieces down to 2^-24 of the interval lose ~15 digits
_RATIO_LEVELS = 24      # geometric points toward each end and the smallest weight


@functools.lru_cache(maxsize=64)
def piece_ratio(weight, t, interval):
    """rho_w >= ||q~||_w^2 / ||q||_w^2 for every linear q on every piece [a, b] of the
    interval, q~ the linear interpolant of |q(a)|, |q(b)| (docs/clipping.md, "Weighted
    metrics"): on a piece, with m_00, m_01, m_11 the weighted masses of its two hat
    functions and kappa = m_01/sqrt(m_00 m_11), the ratio is at most (1 + kappa)/(1 - kappa)
    (3 for a constant weight). Numerical, like the weights' accuracy (slack.py): its largest
    value over every piece between two points of a grid (uniform; geometric toward each end,
    where w ~ d^alpha makes it scale-invariant, and toward the smallest weight), moments at
    50 digits, times RATIO_MARGIN; at least 3 RATIO_MARGIN. ``weight`` an expression in
    ``t`` (parameters at their defaults), ``interval`` (lo, hi) finite."""
    lo, hi = (mpmath.mpf(sympy.Rational(e)) if e.is_Rational else mpmath.mpf(str(sympy.N(e, 70)))
              for e in interval)
    with mpmath.workdps(_RATIO_DIGITS):
        function = _safe(sympy.lambdify(t, weight, "mpmath"))
        points = _ratio_points(function, lo, hi)
        middle = (lo + hi) / 2
        moments = [[mpmath.mpf(0)] * 3]
        for a, b in zip(points[:-1], points[1:]):
            moments.append([m + mpmath.quad(lambda x: (x - middle) ** k * function(x),
                                            [a, b]) for k, m in enumerate(moments[-1])])
        largest = mpmath.mpf(3)
        for i, a in enumerate(points):
            for j in range(i + 1, len(points)):
                largest = max(largest, _ratio(moments[i], moments[j], a - middle,
                                              points[j] - middle))
    return float(largest) * RATIO_MARGIN * (1 + 1e-9)


def _safe(function):
    """The real part of w at x; 0 where it cannot be evaluated (a node that rounded onto a
    singular end: its quadrature weight is below the working precision)."""
    def value(x):
        try:
            return mpmath.re(function(x))
        except (ZeroDivisionError, ValueError):
            return mpmath.mpf(0)
    return value


def _ratio_points(function, lo, hi):
    """The grid of piece ends: 33 uniform points, and 2^-k of the interval from each end and
    on either side of the smallest weight on a 1025-point grid, k = 1.._RATIO_LEVELS."""
    width = hi - lo
    uniform = [lo + width * k / 32 for k in range(33)]
    fine = [lo + width * k / 1024 for k in range(1, 1024)]
    low = min(fine, key=function)
    steps = [width * mpmath.mpf(2) ** -k for k in range(1, _RATIO_LEVELS + 1)]
    points = uniform + [lo + d for d in steps] + [hi - d for d in steps]
    points += [low + d for d in steps if low + d < hi] + [low - d for d in steps if low - d > lo]
    return sorted(set(points + [low]))


def _ratio(first, second, a, b):
    """(1 + kappa)/(1 - kappa) of the piece [a, b] from the cumulative moments int x^k w
    (k = 0, 1, 2; x from the interval's middle) at its ends."""
    f0, f1, f2 = (s - f for f, s in zip(first, second))
    m00 = b * b * f0 - 2 * b * f1 + f2
    m11 = a * a * f0 - 2 * a * f1 + f2
    m01 = (a + b) * f1 - a * b * f0 - f2
    if m00 <= 0 or m11 <= 0:
        return mpmath.mpf(3)
    kappa = m01 / mpmath.sqrt(m00 * m11)
    return (1 + kappa) / (1 - kappa)
