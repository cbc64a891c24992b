"""PrivFuncSelect (paper Alg. 3 for GP, Alg. 7 for CGP): private choice of basis functions.

U^(j) is the span of the first j basis functions of a compiled spec; in orthonormal
coordinates c (e_j spans the same prefixes as phi_j) the projection onto U^(j) keeps
c_1..c_j. Distances are sums of non-negative terms (Pythagoras), never differences:
dist2(P_j q, q)^2 = ||q - P q||^2 + sum_{i>j} |c_i|^2, with the residual ||q - P q||^2 of
the whole space integrated directly, so every SVT query is 1-Lipschitz in floating point up
to its float error: for Legendre and Fourier spaces c and the residual come in O(S m) from
closed forms (closed_form.py), off the exact values by at most closed_form.query_eta B
(docs/clipping.md, "PrivFuncSelect's queries"); other bases use the module's projection
and a Gauss rule on every piece.
"""
import math
from fractions import Fraction

import numpy
from numpy.polynomial import legendre

from ..compiler.build import load
from ..runtime.rounding import floor_float
from . import closed_form
from .curve import prepare_run
from .ledger import check_budget
from .noise import privatize_vector
from .results import PrivateFunction
from .svt import svt, svt_split

_CHUNK = 1 << 21
_RUN = 1 << 15


def load_module(spec):
    """A generated module from a spec path or an already loaded module."""
    if hasattr(spec, "project") and hasattr(spec, "BASIS_SIZE"):
        return spec
    return load(spec)


def release_bound(module, bound, epsilon, rho):
    """The public clip bound B of an algorithm's releases: ``bound``, else the module's
    default at the whole budget (docs/clipping.md); checked before any data is read."""
    check_budget(epsilon, rho)
    budget = {"epsilon": epsilon} if rho is None else {"rho": rho}
    return module.release_facts(bound=bound, **budget)["bound"]


def check_not_piecewise(module):
    """PrivFuncSelect keeps a prefix of the orthonormalised basis: for a spec with fixed
    knots (a spline) that prefix lives on the first pieces only, so it is refused."""
    if getattr(module, "PIECE_BREAKS", None) is not None:
        raise ValueError(f"PrivFuncSelect keeps the first orthonormal functions, and those of "
                         f"{module.NAME} (piecewise, fixed knots) cover only the start of the "
                         "domain: use --method project")


def _check_module(module, value_dim):
    if module.METRIC != "L2":
        raise ValueError("the adaptive algorithms need a plain L2 spec")
    if module.VECTOR_BASIS or value_dim != module.VALUE_DIM:
        raise ValueError(f"PrivFuncSelect needs a scalar basis with values in R^{module.VALUE_DIM}; "
                         f"the curve has {value_dim} components")


def _coordinates(module, curve, params):
    """Orthonormal coordinates c of P q: (m, n), summed over runs of ``_RUN`` samples that
    share their end samples. Each run is the piece of q on its interval, zero outside it (a
    held curve is already extended to the domain's ends: make_curve), written with jumps to
    0 at its ends (a repeated time is a jump) so that the module projects it as that piece
    whatever its [curve] outside: the runs partition q's pieces and, P being linear, their
    projections add up to P q (L2-Lipschitz); memory is bounded by the run length, not S."""
    y = curve.y if module.VALUE_DIM > 1 else curve.y[:, 0]
    zero = numpy.zeros((1,) + y.shape[1:])
    total = numpy.zeros((module.BASIS_SIZE, curve.value_dim))
    for start in range(0, curve.t.size - 1, _RUN):
        run = slice(start, min(start + _RUN, curve.t.size - 1) + 1)
        t = curve.t[run]
        total += module.project(numpy.concatenate([t[:1], t, t[-1:]]),
                                numpy.concatenate([zero, y[run], zero]),
                                cache=False, **params).reshape(total.shape)
    return total


def _quadrature(module, domain):
    """Cells and Gauss-Legendre rule for integrating (q - P q)^2 over the domain: exact for
    a polynomial space of degree p (order max(p, 1) + 1 on every piece: the integrand has
    degree 2 max(p, 1)), and for a piecewise polynomial space (a spline) on the pieces
    between its breakpoints PIECE_BREAKS; otherwise order 16 on pieces no longer than (b - a)/(4 m) nor than
    1/omega for a basis of frequency omega (phase <= 2 per piece; numerical)."""
    degree = module.POLYNOMIAL_DEGREE
    if degree is not None and module.BASIS_SIZE == degree + 1:
        return (), max(degree, 1) + 1
    breaks = getattr(module, "PIECE_BREAKS", None)
    if breaks is not None:     # a polynomial of degree < PIECE_ORDER between breakpoints
        return breaks, max(module.PIECE_ORDER - 1, 1) + 1
    cells = 4 * module.BASIS_SIZE
    frequency = getattr(module, "_FREQUENCY", None)
    if frequency:
        cells = max(cells, math.ceil((domain[1] - domain[0]) * frequency))
    return numpy.linspace(*domain, cells + 1), 16


def residual_squared(module, curve, c, params):
    """||q - P q||^2 on the domain, integrated directly (q is zero outside its samples)."""
    cuts, order = _quadrature(module, curve.domain)
    lo, hi, y_lo, y_hi = curve.pieces(cuts)
    nodes, weights = legendre.leggauss(order)
    lam = (nodes + 1) / 2
    rows = max(1, _CHUNK // (order * module.BASIS_SIZE))
    total = 0.0
    for start in range(0, lo.size, rows):
        block = slice(start, start + rows)
        h = hi[block] - lo[block]
        x = lo[block, None] + h[:, None] * lam
        q = y_lo[block, None, :] * (1 - lam)[:, None] + y_hi[block, None, :] * lam[:, None]
        fitted = module.orthonormal_basis(x, **params) @ c
        total += float(numpy.einsum("p,g,pgr->", h / 2, weights, (q - fitted) ** 2))
    return total


def prefix_distances(module, curve, params):
    """(c, ||q - P q||^2, d) with d_j = dist2(P_{U^(j+1)} q, q) = sqrt(residual + sum_{i>j}
    |c_i|^2): the step-1 queries are -d_j, each 1-Lipschitz in q. Legendre and Fourier
    modules compute c and the residual in O(S m) from local Taylor tables (closed_form.py:
    sums of non-negative terms, float error <= closed_form.query_eta B); other bases by the
    module's projection and a Gauss rule on every piece."""
    table = closed_form.cells(module, params)
    if table is not None:
        c, residual = closed_form.project_and_residual(curve, table)
    else:
        c = _coordinates(module, curve, params)
        residual = residual_squared(module, curve, c, params)
    energy = (c ** 2).sum(axis=1)
    return c, residual, numpy.sqrt(residual + numpy.append(numpy.cumsum(energy[::-1])[::-1][1:], 0.0))


DEFAULT_SPLIT = (Fraction(1, 4), Fraction(0), Fraction(0), Fraction(3, 4))
SPLIT_STEPS = ("size SVT", "first release", "pruning SVT", "final release")


def check_split(split):
    """The budget split (size SVT, first release, pruning SVT, final release) as exact
    fractions of the budget: non-negative, summing to exactly 1, the size SVT and the final
    release positive, the first release and the pruning SVT both zero (no pruning) or both
    positive. Floats are taken exactly, strings as fractions ("1/8")."""
    try:
        values = tuple(Fraction(v) for v in split)
    except (TypeError, ValueError, ZeroDivisionError):
        raise ValueError(f"split: expected four fractions of the budget, got {split!r}") from None
    if len(values) != 4 or any(isinstance(v, bool) for v in split):
        raise ValueError(f"split: expected four fractions ({', '.join(SPLIT_STEPS)}), "
                         f"got {split!r}")
    if min(values) < 0 or sum(values) != 1:
        raise ValueError(f"split: the four shares must be >= 0 and sum to exactly 1, got "
                         f"{', '.join(str(v) for v in values)}")
    if values[0] == 0 or values[3] == 0 or (values[1] == 0) != (values[2] == 0):
        raise ValueError("split: the size SVT and the final release need a positive share, and "
                         "the first release and the pruning SVT are both zero or both positive")
    return values


def noise_target(model, share, n):
    """tau(r): the expected norm of the final release's noise on r functions with n values
    each at the planned final ``share`` (GP: E||Z||/eps_f = n r/eps_f, ||Z|| ~ Gamma(n r);
    CGP: sqrt(E||N||^2) = sqrt(n r/(2 rho_f))). Both SVTs stop where the distance to q
    falls below it: approximation error below the noise that one more function adds."""
    if model == "GP":
        return lambda size: n * size / share
    return lambda size: math.sqrt(n * size / (2 * share))


def priv_func_select(t, y, spec, *, epsilon=None, rho=None, beta=0.1, split=DEFAULT_SPLIT,
                     rng=None, bound=None, **params):
    """Private basis selection then Project-and-Privatize (paper Alg. 3 / Alg. 7).

    Candidates are prefixes of the spec's orthonormalised basis e (Gram-Schmidt of the
    spec's functions in order: for monomials, the normalized Legendre polynomials, which
    span the same prefixes), then single orthonormal functions e_i. The domain is the
    spec's (at the public parameter values ``params``), never the samples'.

    ``split``: the public shares of the budget (size SVT, first release, pruning SVT, final
    release), default DEFAULT_SPLIT = (1/4, 0, 0, 3/4): no first release and no pruning
    (docs/design.md, "PrivFuncSelect's budget").
    Step 1, an SVT on tau(j) - dist2(P_j q, q) with threshold 0 (``noise_target``), picks
    the prefix size k0; when k0 > 1 the first release orders the k0 coefficients and the
    pruning SVT on tau(r) - dist2(f_b(r), q) keeps the r largest; the final release gets
    everything not spent (all of the first release's and pruning's shares when k0 = 1).
    Any split composes to epsilon (rho). If an SVT finds no crossing the largest candidate
    is used (post-processing of the same noisy outcome). The curve is first clipped to the
    public L2 bound B (``bound``, default the module's default_bound at the budget;
    docs/clipping.md), so every curve is released.
    """
    split = check_split(split)
    module = load_module(spec)
    check_not_piecewise(module)
    domain = module.curve_interval(**params)
    if not all(math.isfinite(v) for v in domain):
        raise ValueError("PrivFuncSelect needs a spec on a bounded domain")
    bound = release_bound(module, bound, epsilon, rho)
    curve, ledger, rng = prepare_run(t, y, domain, epsilon, rho, beta, rng, bound, module.OUTSIDE)
    _check_module(module, curve.value_dim)
    c, residual, tails = prefix_distances(module, curve, params)
    tau = noise_target(ledger.model, ledger.share(split[3]), c.shape[1])
    k0 = svt((tau(j + 1) - tails[j] for j in range(c.shape[0])), 0.0, 1.0,
             *_svt_pair(ledger, split[0]), rng=rng, ledger=ledger, label="select: size")
    k0 = c.shape[0] if k0 is None else k0 + 1
    chosen = numpy.arange(k0)
    if k0 > 1 and split[1] > 0:
        chosen = _pruned(c, residual, k0, ledger, split, rng, bound, module.ETA)
    final = privatize_vector(c[chosen], ledger, "select: final release",
                             floor_float(ledger.remaining), rng=rng, bound=bound, eta=module.ETA)
    return _selected(module, chosen, final, ledger, c.shape[1], k0, params)


def _svt_pair(ledger, fraction):
    """(epsilon1, epsilon2) of an SVT costing at most ``fraction`` of the budget."""
    return svt_split(ledger, Fraction(ledger.budget) * fraction)[:2]


def _pruned(c, residual, k0, ledger, split, rng, bound, eta):
    """Steps 2-4: release the first k0 coordinates, order them by noisy norm, keep the r
    largest for the first r whose query tau1(r) - dist2(q, sum of the r chosen b_i e_i)
    crosses (Pythagoras: residual + missed noise + energy left out); tau1 is the noise
    target of the first release's own share, whose noise those distances carry."""
    energy = (c ** 2).sum(axis=1)
    share = ledger.share(split[1])
    tau = noise_target(ledger.model, share, c.shape[1])
    noisy = privatize_vector(c[:k0], ledger, "select: first release", share, rng=rng,
                             bound=bound, eta=eta)
    order = numpy.argsort(-numpy.linalg.norm(noisy, axis=1), kind="stable")

    def query(r):
        chosen = numpy.zeros(c.shape[0], dtype=bool)
        chosen[order[:r]] = True
        missed = (c[:k0] - noisy)[chosen[:k0]]
        return tau(r) - math.sqrt(residual + float((missed ** 2).sum())
                                  + float(energy[~chosen].sum()))
    k1 = svt((query(r) for r in range(1, k0 + 1)), 0.0, 1.0, *_svt_pair(ledger, split[2]),
             rng=rng, ledger=ledger, label="select: pruning")
    return numpy.sort(order[:(k0 if k1 is None else k1 + 1)])


def _selected(module, chosen, coefficients, ledger, n, k0, params):
    def evaluator(t):
        e = module.orthonormal_basis(t, **params)[..., chosen]
        return e @ coefficients
    return PrivateFunction("priv_func_select", ledger, n, evaluator,
                           basis_indices=tuple(int(j) for j in chosen), coefficients=coefficients,
                           details=(("first_size", k0),))
