"""What the 1-D and the joint CDF estimators share
(docs/design.md, "CDF estimation"): the release (CDFEstimate), the budget check and the
per-record terms whose sums are the sufficient statistics."""
import math
from dataclasses import dataclass, field

import numpy
from numpy.polynomial import legendre

from ..runtime import exact
from .gaussian import analytic_gaussian_sigma


@dataclass(frozen=True)
class CDFEstimate:
    """A private CDF on [lo, hi]: piecewise linear through (grid, values), non-decreasing."""
    method: str
    lo: float
    hi: float
    grid: numpy.ndarray
    values: numpy.ndarray
    sigma: float
    sensitivity: float
    epsilon: float
    delta: float
    degree: int = None
    spent: tuple = field(default=())
    noise: tuple = field(default=())  # (sum sensitivity, sigma, lattice step) per release

    def cdf(self, x):
        """F~(x); 0 below lo and 1 above hi."""
        return numpy.interp(numpy.asarray(x, dtype=float), self.grid, self.values, left=0.0, right=1.0)

    def quantile(self, p):
        """Generalized inverse: the smallest x with F~(x) >= p (linear within a grid cell)."""
        p = numpy.asarray(p, dtype=float)
        if numpy.any(~numpy.isfinite(p)) or numpy.any((p < 0) | (p > 1)):
            raise ValueError("probabilities must lie in [0, 1]")
        index = numpy.clip(numpy.searchsorted(self.values, p, side="left"), 1, self.grid.size - 1)
        left, right = self.values[index - 1], self.values[index]
        share = numpy.where(right > left, (p - left) / numpy.where(right > left, right - left, 1), 1.0)
        x = self.grid[index - 1] + numpy.clip(share, 0, 1) * (self.grid[index] - self.grid[index - 1])
        return numpy.where(p <= self.values[0], self.grid[0], x)


def check_budget(epsilon, delta):
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be positive and finite, got {epsilon!r}")
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")


def noise_facts(sensitivity, epsilon, delta):
    """((sum sensitivity, sigma, lattice step gamma),): the public facts of one Gaussian
    release of sums with this l2 sensitivity (the analytic Gaussian mechanism's sigma;
    runtime/exact.py rounds the noisy sums to gamma Z)."""
    sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity)
    return ((sensitivity, sigma, exact.lattice(sigma)),)


def record_contributions(x, degree, method):
    """Per-record terms whose sums are the sufficient statistics (a reference for tests;
    the estimators sum them in chunks, see streaming.py).

    moments: x^i, i = 1..K+1; direct: int_x^1 e_k = -(P_{k+1}(x) - P_{k-1}(x))/sqrt(2(2k+1))
    (and 1 - x for k = 0, scaled by 1/sqrt(2)).
    """
    if method == "moments":
        return x[:, None] ** numpy.arange(1, degree + 2)
    p = legendre.legvander(x, degree + 1)
    k = numpy.arange(degree + 1)
    previous = numpy.where(k[None, :] >= 1, p[:, numpy.maximum(k - 1, 0)], 1.0)
    return -(p[:, k + 1] - previous) / numpy.sqrt(2 * (2 * k + 1))
