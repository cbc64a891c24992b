"""PrivFuncSelect (paper Alg. 3 for GP, Alg. 7 for CGP): private choice of basis functions.

U^(j) is the span of the first j basis functions of a compiled spec; in orthonormal
coordinates c (e_j spans the same prefixes as phi_j) the projection onto U^(j) keeps
c_1..c_j. Distances are sums of non-negative terms (Pythagoras), never differences:
dist2(P_j q, q)^2 = ||q - P q||^2 + sum_{i>j} |c_i|^2, with the residual ||q - P q||^2 of
the whole space integrated directly, so every SVT query is 1-Lipschitz in floating point too.
"""
import math
from fractions import Fraction

import numpy
from numpy.polynomial import legendre

from ..build import load
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


def _check_module(module, value_dim):
    if module.METRIC != "L2":
        raise ValueError("the adaptive algorithms need a plain L2 spec")
    if module.VECTOR_BASIS or value_dim != module.VALUE_DIM:
        raise ValueError(f"PrivFuncSelect needs a scalar basis with values in R^{module.VALUE_DIM}; "
                         f"the curve has {value_dim} components")


def _coordinates(module, curve, params):
    """Orthonormal coordinates c of P q: (m, n), summed over runs of ``_RUN`` samples that
    share their end samples. Each run's curve is zero outside it, so the runs' pieces
    partition q's and, P being linear, their projections add up to P q; memory is bounded
    by the run length, not S."""
    y = curve.y if module.VALUE_DIM > 1 else curve.y[:, 0]
    total = numpy.zeros((module.BASIS_SIZE, curve.value_dim))
    for start in range(0, curve.t.size - 1, _RUN):
        run = slice(start, min(start + _RUN, curve.t.size - 1) + 1)
        total += module.project(curve.t[run], y[run], **params).reshape(total.shape)
    return total


def _quadrature(module, domain):
    """Cells and Gauss-Legendre rule for integrating (q - P q)^2 over the domain: exact for
    a polynomial space of degree p (order max(p, 1) + 1 on every piece: the integrand has
    degree 2 max(p, 1)); otherwise order 16 on pieces no longer than (b - a)/(4 m) nor than
    1/omega for a basis of frequency omega (phase <= 2 per piece; numerical)."""
    degree = module.POLYNOMIAL_DEGREE
    if degree is not None and module.BASIS_SIZE == degree + 1:
        return (), max(degree, 1) + 1
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
    |c_i|^2): the step-1 queries are -d_j, each 1-Lipschitz in q."""
    c = _coordinates(module, curve, params)
    residual = residual_squared(module, curve, c, params)
    energy = (c ** 2).sum(axis=1)
    return c, residual, numpy.sqrt(residual + numpy.append(numpy.cumsum(energy[::-1])[::-1][1:], 0.0))


def _svt_targets(model, budget, n):
    """Step-1 threshold and the step-4 target tau(r): GP -4/eps and n r/(eps/4);
    CGP -1/eps0 and sqrt(n r)/eps0 with eps0 = sqrt(rho/2) (Alg. 7)."""
    if model == "GP":
        return -4 / budget, lambda size: n * size / (budget / 4)
    epsilon0 = math.sqrt(budget / 2)
    return -1 / epsilon0, lambda size: math.sqrt(n * size) / epsilon0


def priv_func_select(t, y, spec, *, epsilon=None, rho=None, beta=0.1, rng=None, bound=None,
                     **params):
    """Private basis selection then Project-and-Privatize (Alg. 3 / Alg. 7).

    The domain is the spec's (at the public parameter values ``params``), never the
    samples'. Budget: two SVTs and two releases, a quarter each. If an SVT finds no
    crossing the largest candidate is used (post-processing of the same noisy outcome).
    The curve is first clipped to the public L2 bound B (``bound``, default the module's
    default_bound at the budget; docs/clipping.md), so every curve is released.
    """
    module = load_module(spec)
    domain = module.curve_interval(**params)
    if not all(math.isfinite(v) for v in domain):
        raise ValueError("PrivFuncSelect needs a spec on a bounded domain")
    bound = release_bound(module, bound, epsilon, rho)
    curve, ledger, rng = prepare_run(t, y, domain, epsilon, rho, beta, rng, bound)
    _check_module(module, curve.value_dim)
    c, residual, tails = prefix_distances(module, curve, params)
    n, m = c.shape[1], c.shape[0]
    energy = (c ** 2).sum(axis=1)
    threshold, tau = _svt_targets(ledger.model, ledger.budget, n)
    release = ledger.share(Fraction(1, 4))
    svt_pair = svt_split(ledger, Fraction(ledger.budget) / 4)[:2]
    k0 = svt((-tails[j] for j in range(m)), threshold, 1.0, *svt_pair,
             rng=rng, ledger=ledger, label="select: size")
    k0 = m if k0 is None else k0 + 1
    noisy = privatize_vector(c[:k0], ledger, "select: first release", release, rng=rng,
                             bound=bound, eta=module.ETA)
    order = numpy.argsort(-numpy.linalg.norm(noisy, axis=1), kind="stable")

    def query(r):
        """tau(r) - dist2(q, sum over the r chosen of b_i e_i), by Pythagoras."""
        chosen = numpy.zeros(m, dtype=bool)
        chosen[order[:r]] = True
        missed = (c[:k0] - noisy)[chosen[:k0]]
        return tau(r) - math.sqrt(residual + float((missed ** 2).sum()) + float(energy[~chosen].sum()))
    k1 = svt((query(r) for r in range(1, k0 + 1)), 0.0, 1.0, *svt_pair,
             rng=rng, ledger=ledger, label="select: pruning")
    chosen = numpy.sort(order[:(k0 if k1 is None else k1 + 1)])
    final = privatize_vector(c[chosen], ledger, "select: final release", release, rng=rng,
                             bound=bound, eta=module.ETA)
    return _selected(module, chosen, final, ledger, n, k0, params)


def _selected(module, chosen, coefficients, ledger, n, k0, params):
    def evaluator(t):
        e = module.orthonormal_basis(t, **params)[..., chosen]
        return e @ coefficients
    return PrivateFunction("priv_func_select", ledger, n, evaluator,
                           basis_indices=tuple(int(j) for j in chosen), coefficients=coefficients,
                           details=(("first_size", k0),))
