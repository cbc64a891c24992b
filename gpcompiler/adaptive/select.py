"""PrivFuncSelect (paper Alg. 3 for GP, Alg. 7 for CGP): private choice of basis functions.

U^(j) is the span of the first j basis functions of a compiled spec; in orthonormal
coordinates c (e_j spans the same prefixes as phi_j) the projection onto U^(j) keeps
c_1..c_j and dist2(P q, q)^2 = ||q||^2 - sum_{i<=j} |c_i|^2.
"""
import math
from fractions import Fraction

import numpy

from ..build import load
from .curve import prepare_run
from .noise import privatize_vector
from .results import PrivateFunction
from .svt import svt, svt_split


def load_module(spec):
    """A generated module from a spec path or an already loaded module."""
    if hasattr(spec, "project") and hasattr(spec, "BASIS_SIZE"):
        return spec
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


def _svt_targets(model, budget, n):
    """Step-1 threshold and the step-4 target tau(r): GP -4/eps and n r/(eps/4);
    CGP -1/eps0 and sqrt(n r)/eps0 with eps0 = sqrt(rho/2) (Alg. 7)."""
    if model == "GP":
        return -4 / budget, lambda size: n * size / (budget / 4)
    epsilon0 = math.sqrt(budget / 2)
    return -1 / epsilon0, lambda size: math.sqrt(n * size) / epsilon0


def priv_func_select(t, y, spec, *, epsilon=None, rho=None, beta=0.1, rng=None):
    """Private basis selection then Project-and-Privatize (Alg. 3 / Alg. 7).

    Budget: two SVTs and two releases, a quarter each. If an SVT finds no crossing the
    largest candidate is used (post-processing of the same noisy outcome).
    """
    curve, ledger, rng = prepare_run(t, y, epsilon, rho, beta, rng)
    module = load_module(spec)
    model, budget = ledger.model, ledger.budget
    c = _coordinates(module, curve)
    n, m = c.shape[1], c.shape[0]
    norm2 = curve.norm_squared()
    threshold, tau = _svt_targets(model, budget, n)
    release = ledger.share(Fraction(1, 4))
    svt_pair = svt_split(ledger, Fraction(budget) / 4)[:2]
    tails = numpy.sqrt(numpy.maximum(norm2 - numpy.cumsum((c ** 2).sum(axis=1)), 0.0))
    k0 = svt((-tails[j] for j in range(m)), threshold, 1.0, *svt_pair,
             rng=rng, ledger=ledger, label="select: size")
    k0 = m if k0 is None else k0 + 1
    noisy = privatize_vector(c[:k0], ledger, "select: first release", release, rng=rng)
    order = numpy.argsort(-numpy.linalg.norm(noisy, axis=1), kind="stable")

    def query(r):
        chosen = order[:r]
        b = noisy[chosen]
        distance = math.sqrt(max(norm2 - 2 * float((b * c[chosen]).sum()) + float((b * b).sum()), 0.0))
        return tau(r) - distance
    k1 = svt((query(r) for r in range(1, k0 + 1)), 0.0, 1.0, *svt_pair,
             rng=rng, ledger=ledger, label="select: pruning")
    chosen = numpy.sort(order[:(k0 if k1 is None else k1 + 1)])
    final = privatize_vector(c[chosen], ledger, "select: final release", release, rng=rng)
    return _selected(module, chosen, final, ledger, n, k0)


def _selected(module, chosen, coefficients, ledger, n, k0):
    def evaluator(t):
        e = module.orthonormal_basis(t)[..., chosen]
        return e @ coefficients
    return PrivateFunction("priv_func_select", ledger, n, evaluator,
                           basis_indices=tuple(int(j) for j in chosen), coefficients=coefficients,
                           details=(("first_size", k0),))
