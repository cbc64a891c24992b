"""PrivFuncSeg runs shared by the ``trajectories`` and ``segments`` experiments: one run
per (budget, simulation), its continuous post-processing (Sec. 4.1.2, applied to the same
release) and the least-squares fit on its privately chosen breakpoints without the final
noise (the paper's "LS Approximation", Sec. 5.3; partially private, for reference)."""
import math

from ..adaptive import piecewise, priv_func_seg
from .protocol import l2_distance, simulation_rng


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
            result = priv_func_seg(t, y, module, rng=simulation_rng(index, j), **{key: budget}, **params)
            released = piecewise.PiecewisePolynomial(result.breakpoints, result.coefficients)
            continuous = piecewise.make_continuous(released)
            _, residual = piecewise.project(curve, result.breakpoints, degree)
            for name, value in zip(names, (
                    l2_distance(released.evaluate, curve, result.breakpoints, degree + 1),
                    l2_distance(continuous.evaluate, curve, result.breakpoints, degree + 1),
                    math.sqrt(float(residual.sum())))):
                rows[name][-1].append(value / norm)
    return {name: {"": row} for name, row in rows.items()}
