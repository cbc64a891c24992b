"""Sampled curves q: piecewise linear through (t_i, y_i), validated once (paper Sec. 4)."""
from dataclasses import dataclass

import numpy

from ..secure import default_generator
from .ledger import PrivacyLedger, check_budget


@dataclass(frozen=True)
class Curve:
    """A piecewise-linear curve; ``y`` is always (S, n)."""
    t: numpy.ndarray
    y: numpy.ndarray

    @property
    def value_dim(self):
        return self.y.shape[1]

    @property
    def interval(self):
        return float(self.t[0]), float(self.t[-1])

    def norm_squared(self):
        """||q||^2 exactly: sum over pieces of h (y0^2 + y0 y1 + y1^2)/3."""
        y0, y1 = self.y[:-1], self.y[1:]
        return float(numpy.sum(numpy.diff(self.t)[:, None] * (y0 * y0 + y0 * y1 + y1 * y1)) / 3)

    def __call__(self, x):
        x = numpy.asarray(x, dtype=float)
        return numpy.stack([numpy.interp(x, self.t, self.y[:, r], left=0.0, right=0.0)
                            for r in range(self.value_dim)], axis=-1)

    def restricted(self, lo, hi):
        """q . 1_[lo, hi] as a curve on [lo, hi] (samples inserted at the cut points)."""
        inside = (self.t > lo) & (self.t < hi)
        t = numpy.concatenate([[lo], self.t[inside], [hi]])
        return Curve(t, self(t))


def make_curve(t, y):
    """Validate samples: >= 2 finite, strictly increasing times; finite values of one shape."""
    t = numpy.asarray(t, dtype=float)
    y = numpy.asarray(y, dtype=float)
    if t.ndim != 1:
        raise ValueError(f"t must be 1-D, got shape {t.shape}")
    if t.size < 2:
        raise ValueError("a curve needs at least 2 samples")
    if not numpy.all(numpy.isfinite(t)):
        raise ValueError("sample times contain NaN or infinite values")
    if numpy.any(numpy.diff(t) <= 0):
        raise ValueError("sample times must be strictly increasing")
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != t.size:
        raise ValueError(f"values y have shape {y.shape}; expected ({t.size},) or ({t.size}, n)")
    if not numpy.all(numpy.isfinite(y)):
        raise ValueError("values y contain NaN or infinite values")
    return Curve(t, y)


def check_beta(beta):
    """The failure probability beta, which must lie in (0, 1)."""
    if not (isinstance(beta, (int, float)) and 0 < beta < 1):
        raise ValueError(f"beta must lie in (0, 1), got {beta!r}")
    return float(beta)


def prepare_run(t, y, epsilon, rho, beta, rng):
    """Validate an algorithm's inputs: (curve, a fresh ledger for the budget, generator)."""
    model, budget = check_budget(epsilon, rho)
    check_beta(beta)
    return make_curve(t, y), PrivacyLedger(budget, model), default_generator(rng)
