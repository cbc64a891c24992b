"""PrivFuncSelect (paper Alg. 3 for GP, Alg. 7 for CGP): private choice of basis functions.

U^(j) is the span of the first j basis functions of a compiled spec; in orthonormal
coordinates c (e_j spans the same prefixes as phi_j) the projection onto U^(j) keeps
c_1..c_j and dist2(P q, q)^2 = ||q||^2 - sum_{i<=j} |c_i|^2.
"""
import math
from fractions import Fraction

import numpy

from .curve import check_beta, make_curve
from .ledger import PrivacyLedger, check_budget
from .noise import privatize_vector
from .results import PrivateFunction
from .svt import svt


def load_module(spec):
    """A generated module from a spec path or an already loaded module."""
    if hasattr(spec, "project") and hasattr(spec, "BASIS_SIZE"):
        return spec
    from ..build import load
    return load(spec)


def _coordinates(module, curve):
    if module.METRIC != "L2":
        raise ValueError("the adaptive algorithms need a plain L2 spec")
    y = curve.y if module.VALUE_DIM > 1 else curve.y[:, 0]
    if module.VECTOR_BASIS or curve.value_dim != module.VALUE_DIM:
        raise ValueError(f"PrivFuncSelect needs a scalar basis with values in R^{module.VALUE_DIM}; "
                         f"the curve has {curve.value_dim} components")
    c = module.project(curve.t, y)
    return c.reshape(module.BASIS_SIZE, -1)


def _steps(model, budget, n):
    """Per-step parameters: GP (eps/12, eps/6, eps/4 ...); CGP rho/4 each with eps0 = sqrt(rho/2)."""
    if model == "GP":
        quarter = float(Fraction(budget) / 4)
        return dict(svt=(budget / 12, budget / 6), release=quarter, threshold=-4 / budget,
                    tau=lambda size: n * size / quarter)
    epsilon0 = math.sqrt(budget / 2)
    return dict(svt=(epsilon0 / 3, 2 * epsilon0 / 3), release=budget / 4, threshold=-1 / epsilon0,
                tau=lambda size: math.sqrt(n * size) / epsilon0)


def _fit(ledger, steps, budget):
    """Shrink the SVT halves so their cost fits the exact share (rounding never overspends)."""
    share = Fraction(budget) / 4
    e1, e2 = steps["svt"]
    while ledger.model == "GP" and Fraction(e1) + Fraction(e2) > share or \
            ledger.model == "CGP" and (Fraction(e1) + Fraction(e2)) ** 2 / 2 > share:
        e1, e2 = math.nextafter(e1, 0), math.nextafter(e2, 0)
    return e1, e2


def priv_func_select(t, y, spec, *, epsilon=None, rho=None, beta=0.1, rng=None):
    """Private basis selection then Project-and-Privatize (Alg. 3 / Alg. 7).

    Budget: two SVTs and two releases, a quarter each. If an SVT finds no crossing the
    largest candidate is used (post-processing of the same noisy outcome).
    """
    model, budget = check_budget(epsilon, rho)
    check_beta(beta)
    curve = make_curve(t, y)
    module = load_module(spec)
    rng = numpy.random.default_rng() if rng is None else rng
    ledger = PrivacyLedger(budget, model)
    c = _coordinates(module, curve)
    n, m = c.shape[1], c.shape[0]
    norm2 = curve.norm_squared()
    steps = _steps(model, budget, n)
    release = ledger.share(Fraction(1, 4))
    svt_pair = _fit(ledger, steps, budget)
    tails = numpy.sqrt(numpy.maximum(norm2 - numpy.cumsum((c ** 2).sum(axis=1)), 0.0))
    k0 = svt((-tails[j] for j in range(m)), steps["threshold"], 1.0, *svt_pair,
             rng=rng, ledger=ledger, label="select: size")
    k0 = m if k0 is None else k0 + 1
    noisy = _release(c[:k0], ledger, "select: first release", model, release, rng)
    order = numpy.argsort(-numpy.linalg.norm(noisy, axis=1), kind="stable")

    def query(r):
        chosen = order[:r]
        b = noisy[chosen]
        distance = math.sqrt(max(norm2 - 2 * float((b * c[chosen]).sum()) + float((b * b).sum()), 0.0))
        return steps["tau"](r) - distance
    k1 = svt((query(r) for r in range(1, k0 + 1)), 0.0, 1.0, *svt_pair,
             rng=rng, ledger=ledger, label="select: pruning")
    chosen = numpy.sort(order[:(k0 if k1 is None else k1 + 1)])
    final = _release(c[chosen], ledger, "select: final release", model, release, rng)
    return _selected(module, chosen, final, ledger, n, k0)


def _release(c, ledger, label, model, share, rng):
    if model == "GP":
        return privatize_vector(c, ledger, label, rng=rng, epsilon=share)
    return privatize_vector(c, ledger, label, rng=rng, rho=share)


def _selected(module, chosen, coefficients, ledger, n, k0):
    def evaluator(t):
        e = module.orthonormal_basis(t)[..., chosen]
        return e @ coefficients
    return PrivateFunction("priv_func_select", ledger, n, evaluator,
                           basis_indices=tuple(int(j) for j in chosen), coefficients=coefficients,
                           details=(("first_size", k0),))
