"""PrivFuncSeg (paper Alg. 4 / 8) with ReduceSeg (Alg. 5 / 9), and unbounded domains (Sec. 4.3).

The curve q: [a, b] -> R^n is approximated by piecewise polynomials of a compiled spec's
degree p (m = p + 1) on dyadic breakpoints of the spec's public domain [a, b] (never of the
sample times, which are private). Budget (GP, epsilon): SVT eps/4 to pick 2^k
segments; ReduceSeg on each quarter spends at most (1 - 2^-k1) eps/16; the final
Project-and-Privatize spends exactly what is left (>= eps/2, the privacy-filter argument
of Sec. 4.2). CGP replaces epsilon by rho with eps0 = sqrt(rho/2) for the SVT.
Every level's projection and residual, for the SVT, ReduceSeg and the release, come from one
pass over q on a fine dyadic grid (piecewise.DyadicProjections): for short curves
2^EARLY_LEVEL segments first and 2^MAX_LEVEL if the SVT needs more levels; O(S + 2^L).
"""
import math
from fractions import Fraction

import numpy

from ..runtime.rounding import floor_float
from ..compiler.slack import curve_eta
from . import piecewise
from .curve import prepare_run
from .ledger import PrivacyLedger
from .noise import privatize_vector, scalar_noise
from .results import PrivateFunction
from .select import load_module, release_bound
from .svt import svt, svt_split

MAX_LEVEL = 14
EARLY_LEVEL = 7


def _polynomial_module(spec):
    module = load_module(spec)
    if getattr(module, "PIECE_BREAKS", None) is not None:
        raise ValueError(f"PrivFuncSeg chooses its own dyadic breakpoints for polynomials of "
                         f"one degree, and {module.NAME} fixes its knots: use PrivFuncSelect, "
                         "or a legendre spec of the pieces' degree")
    if module.POLYNOMIAL_DEGREE is None or module.METRIC != "L2":
        raise ValueError(f"PrivFuncSeg needs a spec spanning all polynomials of some degree "
                         f"with the L2 metric; {module.NAME} does not")
    return module


def _tau(ledger, size, epsilon0):
    """tau_j: GP 2^j m n/(eps/4); CGP sqrt(2^j m n)/sqrt(rho/2) (= .../eps0)."""
    return size / (ledger.budget / 4) if ledger.model == "GP" else math.sqrt(size) / epsilon0


def choose_level(curve, degree, ledger, rng, label="seg: level"):
    """Step 1: SVT over j = 0..MAX_LEVEL with g_j = tau_j - dist2(P_{U^(j)} q, q).
    Returns the level and q's dyadic projections down to it. A curve with fewer than
    2^MAX_LEVEL samples gets levels 0..EARLY_LEVEL from one cheap pass and all levels from a
    second only if the SVT goes further; a longer one gets all levels from one pass (either
    way O(S + 2^L); only the cost, never the result beyond rounding, depends on S)."""
    m, n = degree + 1, curve.value_dim
    first, second, epsilon0 = svt_split(ledger, Fraction(ledger.budget) / 4)
    early = EARLY_LEVEL if curve.t.size < 2 ** MAX_LEVEL else MAX_LEVEL
    found = [piecewise.DyadicProjections(curve, degree, early)]

    def queries():
        for level in range(MAX_LEVEL + 1):
            if level == early + 1:
                found.append(piecewise.DyadicProjections(curve, degree, MAX_LEVEL))
            residual = found[-1].residuals[level]
            yield _tau(ledger, 2 ** level * m * n, epsilon0) - math.sqrt(residual.sum())
    level = svt(queries(), 0.0, 1.0, first, second, rng=rng, ledger=ledger, label=label)
    return (MAX_LEVEL if level is None else level), found[-1]


def reduce_seg(projections, lo, hi, breakpoints, level, k1, beta, share, ledger, rng):
    """ReduceSeg (Alg. 5 / 9) on [lo, hi) with 2^k sub-intervals; ``share`` is eps' (rho');
    ``projections`` are q's dyadic projections (piecewise.DyadicProjections)."""
    intervals = len(breakpoints) - 1
    if level > k1 or intervals < 2:
        return breakpoints
    coarse = breakpoints[::2]
    residual = projections.residual(coarse)
    cost = Fraction(share) / 2 ** level
    noise = scalar_noise(ledger, f"seg: reduce [{lo:.6g}, {hi:.6g}) level {level}", 1.0,
                         floor_float(cost), rng=rng)
    error = math.sqrt(residual) + noise
    m, n, remaining = projections.degree + 1, projections.value_dim, float(ledger.remaining)
    if ledger.model == "GP":
        margin = 2 ** level / share * (k1 * math.log(2) + math.log(1 / beta))
        target = (intervals // 2) * math.e * m * n / (2 * (math.e - 1) * remaining)
    else:
        margin = math.sqrt(2 ** level / (2 * share)) * math.sqrt(2 * k1 * math.log(2) + 2 * math.log(1 / beta))
        target = (math.sqrt(2) - 1) * math.sqrt((intervals // 2) * m * n) / (math.sqrt(2) * math.sqrt(2 * remaining))
    if error + margin > target:
        return breakpoints
    middle = coarse[len(coarse) // 2]
    left = reduce_seg(projections, lo, middle, coarse[coarse <= middle], level + 1, k1, beta,
                      share / 2, ledger, rng)
    right = reduce_seg(projections, middle, hi, coarse[coarse >= middle], level + 1, k1, beta,
                       share / 2, ledger, rng)
    return numpy.union1d(left, right)


def _segment(curve, degree, ledger, beta, rng):
    a, b = curve.domain
    level, projections = choose_level(curve, degree, ledger, rng)
    breakpoints = piecewise.dyadic_grid(a, b, level)
    k1 = min(level - 2, 4)
    if k1 >= 1:
        quarters = numpy.linspace(a, b, 5)
        share = ledger.share(Fraction(1, 16))
        parts = [reduce_seg(projections, quarters[i], quarters[i + 1],
                            breakpoints[(breakpoints >= quarters[i]) & (breakpoints <= quarters[i + 1])],
                            1, k1, beta, share, ledger, rng) for i in range(4)]
        breakpoints = numpy.unique(numpy.concatenate(parts))
    return level, breakpoints, projections


def priv_func_seg(t, y, spec, *, epsilon=None, rho=None, beta=0.1, continuous=False, rng=None,
                  bound=None, **params):
    """PrivFuncSeg (Alg. 4 GP / Alg. 8 CGP) on the spec's domain at the public parameter
    values ``params``: dyadic segmentation by SVT, ReduceSeg on four quarters, then
    Project-and-Privatize with all that is left; ``continuous`` applies the L2-nearest
    continuous post-processing (Sec. 4.1.2). The curve is first clipped to the public L2
    bound B (``bound``, default the module's default_bound; docs/clipping.md)."""
    module = _polynomial_module(spec)
    bound = release_bound(module, bound, epsilon, rho)
    curve, ledger, rng = prepare_run(t, y, module.curve_interval(**params), epsilon, rho, beta,
                                     rng, bound, module.OUTSIDE)
    return _seg_release(curve, module.POLYNOMIAL_DEGREE, ledger, beta, continuous, rng,
                        "priv_func_seg", bound)


def piecewise_project_and_privatize(t, y, spec, breakpoints, *, epsilon=None, rho=None,
                                    continuous=False, rng=None, bound=None, **params):
    """Project-and-Privatize on the piecewise space of a polynomial spec with the given
    public breakpoints (Sec. 4.1), which must lie in the spec's domain: one spherical
    Laplace vector over all segments (Remark 4.1), or Gaussian noise; the whole budget
    goes to this one release. q is zero outside [s_0, s_k]; it is first clipped to the public
    L2 bound B (``bound``, default the module's default_bound; docs/clipping.md)."""
    module = _polynomial_module(spec)
    domain = module.curve_interval(**params)
    bound = release_bound(module, bound, epsilon, rho)
    curve, ledger, rng = prepare_run(t, y, domain, epsilon, rho, 0.5, rng, bound, module.OUTSIDE)
    breakpoints = numpy.asarray(breakpoints, dtype=float)
    if breakpoints.ndim != 1 or breakpoints.size < 2 or numpy.any(numpy.diff(breakpoints) <= 0) \
            or not numpy.all(numpy.isfinite(breakpoints)):
        raise ValueError("breakpoints must be >= 2 finite, strictly increasing values")
    if breakpoints[0] < domain[0] or breakpoints[-1] > domain[1]:
        raise ValueError(f"breakpoints must lie in the domain [{domain[0]:.6g}, {domain[1]:.6g}]")
    function, _ = piecewise.project(curve, breakpoints, module.POLYNOMIAL_DEGREE)
    return _release(function, ledger, continuous, rng, "piecewise_project_and_privatize", (),
                    bound)


def _seg_release(curve, degree, ledger, beta, continuous, rng, method, bound):
    level, breakpoints, projections = _segment(curve, degree, ledger, beta, rng)
    return _release(projections.function(breakpoints), ledger, continuous, rng, method,
                    (("level", level),), bound)


def _release(function, ledger, continuous, rng, method, details, bound):
    """Privatize the projection ``function`` (of a curve clipped to ``bound``) with all the
    ledger has left; its slack is that of a projection onto m = p + 1 functions per
    segment (slack.curve_eta: segments add their squares)."""
    breakpoints = function.breakpoints
    c = function.coefficients
    eta = curve_eta(c.shape[1], c.shape[2], False, c.size)
    noisy = privatize_vector(c, ledger, "seg: final release", floor_float(ledger.remaining),
                             rng=rng, bound=bound, eta=eta)
    released = piecewise.PiecewisePolynomial(breakpoints, noisy)
    if continuous:
        released = piecewise.make_continuous(released)
    return PrivateFunction(method, ledger, function.coefficients.shape[2], released.evaluate,
                           breakpoints=breakpoints, coefficients=released.coefficients,
                           details=details + (("continuous", bool(continuous)),))


def priv_func_unbounded(t, y, spec, *, epsilon=None, rho=None, beta=0.1, continuous=False,
                        levels=20, rng=None, bound=None):
    """Sec. 4.3: q on the whole line. An SVT over the public candidates T_j = 2^j,
    j = 0..``levels``, with g_j(q) = ||q 1_[-T_j, T_j]|| - ||q|| (2-Lipschitz) and threshold
    -1/eps' picks T (T = 2^levels if none crosses, a public fallback); then PrivFuncSeg on
    the exact clipping q 1_[-T, T] over the domain [-T, T].

    Budget split (the paper leaves it open): a quarter of the budget for the clipping SVT
    (GP eps' = eps/4; CGP eps' with eps'^2/2 = rho/4), three quarters for PrivFuncSeg.
    """
    if isinstance(levels, bool) or not isinstance(levels, (int, numpy.integer)) \
            or not 0 <= levels <= 1000:
        raise ValueError(f"levels must be an integer in 0..1000, got {levels!r}")
    module = _polynomial_module(spec)
    if module.OUTSIDE != "zero":
        raise ValueError("priv_func_unbounded needs a spec with [curve] outside = \"zero\" "
                         "(a curve held to the ends of the real line has no finite norm)")
    bound = release_bound(module, bound, epsilon, rho)
    curve, ledger, rng = prepare_run(t, y, (-math.inf, math.inf), epsilon, rho, beta, rng,
                                     bound)
    first, second, epsilon_prime = svt_split(ledger, Fraction(ledger.budget) / 4)
    norm = math.sqrt(curve.norm_squared())

    def queries():
        for j in range(levels + 1):
            yield math.sqrt(curve.restricted(-2.0 ** j, 2.0 ** j).norm_squared()) - norm
    found = svt(queries(), -1 / epsilon_prime, 2.0, first, second, rng=rng, ledger=ledger,
                label="unbounded: clipping")
    half_width = 2.0 ** (levels if found is None else found)
    clipped = curve.restricted(-half_width, half_width)
    inner = _SubLedger(ledger, Fraction(3, 4))
    result = _seg_release(clipped, module.POLYNOMIAL_DEGREE, inner, beta, continuous, rng,
                          "priv_func_unbounded", bound)
    return PrivateFunction(result.method, ledger, result.value_dim, result.evaluator,
                           breakpoints=result.breakpoints, coefficients=result.coefficients,
                           details=result.details + (("half_width", half_width),))


class _SubLedger(PrivacyLedger):
    """A view of a parent ledger with a budget of ``fraction`` of it; spends go to both."""

    def __init__(self, parent, fraction):
        super().__init__(parent.share(fraction), parent.model)
        self.parent = parent

    def _record(self, label, model, parameter, cost, noise=(None, None, None)):
        super()._record(label, model, parameter, cost, noise)
        return self.parent._record(label, model, parameter, cost, noise)

    def note_release(self, label, bound, slack, lattice):
        super().note_release(label, bound, slack, lattice)
        self.parent.note_release(label, bound, slack, lattice)
