"""PrivFuncSelect on Gaussian mixtures (paper Sec. 5.2, Figs. 8, 14): selection among the
orthonormalised monomials of degree <= 32 on [0, 100] (specs/monomial32.toml: prefixes of
the normalized Legendre polynomials, which span the same spaces as the monomials' prefixes;
the paper names the monomials) against the LY23 baseline (k in {10, 20, 50, 100},
s = k/10), on the authors' 50 curves (mixtures.py) beside their published means. The
release sum_{i in S} c~_i e_i lives in the span of the spec's orthonormal basis e, so by
Pythagoras its squared distance to q is
||q - Pq||^2 + sum_{i in S} (c~_i - c_i)^2 + sum_{i not in S} c_i^2, with c and the
residual ||q - Pq||^2 (integrated directly) computed once per curve."""
import math

import numpy

from ..adaptive import priv_func_select
from ..adaptive.curve import make_curve
from ..adaptive.select import prefix_distances
from ..compiler.build import SHIPPED_SPECS, load as load_spec
from . import mixtures
from .protocol import baseline_errors, largest_bound, simulation_rng

TITLE = ("Gaussian mixtures: PrivFuncSelect (orthonormalised monomials of degree <= 32) "
         "against the LY23 baseline")
PAPER = "Sec. 5.2, Figs. 8, 14 (CGP)"
PAPER_METHODS = ("PrivFuncSelect",)
SPEC = "monomial32.toml"
models = mixtures.models
published = mixtures.published
PUBLISHED_SOURCE = mixtures.PUBLISHED_SOURCE


def settings(quick):
    return {"spec": f"specs/{SPEC}", "beta": 0.1,
            "baseline": [[k, [s for _, s in w]] for _, k, w in mixtures.baseline_plan(quick)]}


def load(data, quick, curves, options):
    return mixtures.load(data, quick, curves)


def simulate(index, t, y, domain, model, budgets, simulations, quick):
    """Normalized L2 errors (budget, simulation) of every method on one curve, and the
    number of basis functions PrivFuncSelect chose."""
    module = load_spec(SHIPPED_SPECS / SPEC)
    curve = make_curve(t, y, domain)
    norm = curve.norm_squared() ** 0.5
    key = "epsilon" if model == "GP" else "rho"
    c, residual, _ = prefix_distances(module, curve, {})
    rows, sizes = [], []
    for budget in budgets:
        results = [priv_func_select(t, y, module, rng=simulation_rng(index, j), **{key: budget},
                                    bound=largest_bound(key, budget))
                   for j in range(simulations)]
        rows.append([release_distance(r, c, residual) / norm for r in results])
        sizes.append([len(r.basis_indices) for r in results])
    errors = {"PrivFuncSelect": {"": rows}}
    errors.update(baseline_errors(index, t, y, curve, key, budgets, simulations,
                                  mixtures.baseline_plan(quick)))
    return {"errors": errors, "extras": {"curve": index, "selected_basis_size": sizes}}


def release_distance(result, c, residual):
    """||f~ - q|| by Pythagoras in the orthonormal coordinates c (m, n) of Pq."""
    chosen = numpy.zeros(c.shape[0], dtype=bool)
    chosen[list(result.basis_indices)] = True
    released = result.coefficients.reshape(-1, c.shape[1])
    return math.sqrt(residual + float(((c[chosen] - released) ** 2).sum())
                     + float((c[~chosen] ** 2).sum()))
