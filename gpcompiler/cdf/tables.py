"""Exact Legendre tables for CDF estimation (second paper; docs/design.md, "CDF estimation").

On [-1, 1] with e_k = sqrt((2k+1)/2) P_k, the coefficients of the empirical CDF are
(F|e_k) = int_{-1}^{1} F e_k = (1/N) sum_n int_{x_n}^{1} e_k = alpha_k sum_i beta_{k,i}
(1 - mu_{i+1}), with alpha_k = 2^k sqrt((2k+1)/2) and beta_{k,i} = C(k,i) C((k+i-1)/2, k)/(i+1).
In matrix form c = offset + moment_matrix . (mu_1, ..., mu_{K+1}).
"""
from dataclasses import dataclass
from functools import lru_cache

import numpy
import sympy
from scipy.optimize import minimize


COEFFICIENT_SENSITIVITY_SQUARED = sympy.Integer(2)


def moment_sensitivity_squared(degree):
    """N^2 times the paper's squared l2 sensitivity of (mu_1..mu_{K+1}): (5K+8)/2."""
    return sympy.Rational(5 * degree + 8, 2)


@dataclass(frozen=True)
class CDFTables:
    """Exact tables for degree K (all SymPy numbers)."""
    degree: int
    alpha: tuple            # alpha_k, k = 0..K
    beta: tuple             # beta[k][i], i = 0..k
    moment_matrix: sympy.ImmutableMatrix   # (K+1) x (K+1): column i is mu_{i+1}
    offset: tuple           # c_k when every mu_i = 0
    moment_sensitivity_squared: sympy.Rational   # times N^2: (5K+8)/2 (paper)
    coefficient_sensitivity_squared: sympy.Integer  # times N^2: 2 (Bessel; attained)


def alpha(k):
    """alpha_k = 2^k sqrt((2k+1)/2)."""
    return 2 ** k * sympy.sqrt(sympy.Rational(2 * k + 1, 2))


def beta(k, i):
    """beta_{k,i} = C(k,i) C((k+i-1)/2, k)/(i+1), generalized binomial."""
    return sympy.binomial(k, i) * sympy.binomial(sympy.Rational(k + i - 1, 2), k) / (i + 1)


@lru_cache(maxsize=None)
def cdf_tables(degree):
    """Exact tables for Legendre degree K (cached)."""
    if isinstance(degree, bool) or not isinstance(degree, int) or not 0 <= degree <= 200:
        raise ValueError(f"degree must be an integer in 0..200, got {degree!r}")
    alphas = tuple(alpha(k) for k in range(degree + 1))
    betas = tuple(tuple(beta(k, i) for i in range(k + 1)) for k in range(degree + 1))
    matrix = sympy.zeros(degree + 1, degree + 1)
    offset = []
    for k in range(degree + 1):
        for i in range(k + 1):
            matrix[k, i] = -alphas[k] * betas[k][i]
        offset.append(alphas[k] * sum(betas[k]))
    return CDFTables(degree=degree, alpha=alphas, beta=betas,
                     moment_matrix=sympy.ImmutableMatrix(matrix), offset=tuple(offset),
                     moment_sensitivity_squared=moment_sensitivity_squared(degree),
                     coefficient_sensitivity_squared=COEFFICIENT_SENSITIVITY_SQUARED)


def moment_sensitivity_sup(degree, grid=801):
    """Numerical sup over x, x' in [-1, 1] of sum_{i=1}^{K+1} (x'^i - x^i)^2 (times N^2):
    a dense grid refined by SciPy's bounded optimizer. Compare with the paper's (5K+8)/2."""
    points = numpy.linspace(-1, 1, grid)
    powers = points[:, None] ** numpy.arange(1, degree + 2)
    best, where = -1.0, None
    for row in range(grid):
        values = ((powers - powers[row]) ** 2).sum(axis=1)
        column = int(values.argmax())
        if values[column] > best:
            best, where = float(values[column]), (points[row], points[column])

    def negative(z):
        i = numpy.arange(1, degree + 2)
        return -float(((z[1] ** i - z[0] ** i) ** 2).sum())
    result = minimize(negative, where, bounds=[(-1, 1), (-1, 1)], method="L-BFGS-B")
    return max(best, -result.fun), tuple(float(v) for v in result.x)
