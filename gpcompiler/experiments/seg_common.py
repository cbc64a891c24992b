"""PrivFuncSeg runs shared by the ``trajectories`` and ``segments`` experiments: one run
per (budget, simulation), its continuous post-processing (Sec. 4.1.2, applied to the same
release) and the least-squares fit on its privately chosen breakpoints without the final
noise (the paper's "LS Approximation", Sec. 5.3; partially private, for reference).

Errors by Pythagoras: the breakpoints span the whole domain and both releases lie in the
piecewise space, whose per-segment Legendre coordinates are orthonormal, so
||f - q||^2 = ||c_f - c||^2 + ||q - P q||^2 with P q = c and ||q - P q||^2 (the LS
Approximation's error) from one piecewise.project per run, integrated directly."""
import math

from ..adaptive import piecewise, priv_func_seg
from .protocol import largest_bound, simulation_rng


def seg_errors(index, t, y, curve, module, key, budgets, simulations, params, tag=None):
    """{"PrivFuncSeg": {"": rows}, "PrivFuncSeg (continuous)": ..., "LS Approximation": ...}
    (``tag`` added in the brackets), rows (budget, simulation) of normalized L2 errors."""
    degree = module.POLYNOMIAL_DEGREE
    norm = math.sqrt(curve.norm_squared())
    names = (f"PrivFuncSeg ({tag})" if tag else "PrivFuncSeg",
             f"PrivFuncSeg (continuous, {tag})" if tag else "PrivFuncSeg (continuous)",
             f"LS Approximation ({tag})" if tag else "LS Approximation")
    rows = {name: [] for name in names}
    for budget in budgets:
        for row in rows.values():
            row.append([])
        for j in range(simulations):
            result = priv_func_seg(t, y, module, rng=simulation_rng(index, j), **{key: budget},
                                   bound=largest_bound(key, budget), **params)
            released = piecewise.PiecewisePolynomial(result.breakpoints, result.coefficients)
            continuous = piecewise.make_continuous(released)
            fit, residual = piecewise.project(curve, result.breakpoints, degree)
            residual = float(residual.sum())
            for name, coefficients in zip(names, (released.coefficients,
                                                  continuous.coefficients, fit.coefficients)):
                distance2 = float(((coefficients - fit.coefficients) ** 2).sum()) + residual
                rows[name][-1].append(math.sqrt(distance2) / norm)
    return {name: {"": row} for name, row in rows.items()}
