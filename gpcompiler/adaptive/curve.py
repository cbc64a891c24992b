"""Sampled curves q on a public domain (paper Sec. 4; docs/design.md, Privacy model).

A curve is the piecewise-linear interpolant of its samples (t_i, y_i), zero outside them,
on the spec's public domain [a, b]. Its sample times are private: every quantity an
algorithm computes from a curve depends on the function q alone, never on where or how
often it was sampled.
"""
from dataclasses import dataclass

import numpy

from ..secure import default_generator
from .ledger import PrivacyLedger, check_budget


@dataclass(frozen=True)
class Curve:
    """q on ``domain``: ``y`` is (S, n); fewer than two samples is the zero function."""
    t: numpy.ndarray
    y: numpy.ndarray
    domain: tuple

    @property
    def value_dim(self):
        return self.y.shape[1]

    def norm_squared(self):
        """||q||^2 exactly: sum over pieces of h (y0^2 + y0 y1 + y1^2)/3."""
        y0, y1 = self.y[:-1], self.y[1:]
        return float(numpy.sum(numpy.diff(self.t)[:, None] * (y0 * y0 + y0 * y1 + y1 * y1)) / 3)

    def __call__(self, x):
        """q(x): (X, n), zero outside the samples."""
        x = numpy.asarray(x, dtype=float)
        if self.t.size < 2:
            return numpy.zeros(x.shape + (self.value_dim,))
        return numpy.stack([numpy.interp(x, self.t, self.y[:, r], left=0.0, right=0.0)
                            for r in range(self.value_dim)], axis=-1)

    def pieces(self, cuts=()):
        """Linear pieces (lo, hi, q(lo+), q(hi-)) covering the domain, cut at ``cuts`` and at
        the samples; pieces outside [t_0, t_last] are zero (q jumps there, if at all)."""
        a, b = self.domain
        cuts = numpy.asarray(cuts, dtype=float)
        knots = numpy.unique(numpy.concatenate([[a, b], self.t, cuts[(cuts > a) & (cuts < b)]]))
        lo, hi = knots[:-1], knots[1:]
        values_lo, values_hi = self(lo), self(hi)
        if self.t.size >= 2:
            inside = ((lo >= self.t[0]) & (hi <= self.t[-1]))[:, None]
        else:
            inside = numpy.zeros((lo.size, 1), dtype=bool)
        return lo, hi, numpy.where(inside, values_lo, 0.0), numpy.where(inside, values_hi, 0.0)

    def restricted(self, lo, hi):
        """q . 1_[lo, hi] on the domain [lo, hi]: samples inside, plus q at a cut point that
        falls strictly between samples; zero elsewhere. Multiplying by an indicator is
        non-expansive: ||(q - q') 1_[lo, hi]|| <= ||q - q'||."""
        inside = (self.t >= lo) & (self.t <= hi)
        cuts = [x for x in (lo, hi) if self.t.size >= 2 and self.t[0] < x < self.t[-1]
                and not numpy.any(self.t == x)]
        t = numpy.concatenate([self.t[inside], cuts])
        order = numpy.argsort(t, kind="stable")
        y = numpy.concatenate([self.y[inside], self(numpy.asarray(cuts, dtype=float))])
        return Curve(t[order], y[order], (float(lo), float(hi)))


def make_curve(t, y, domain):
    """Validate samples against the public domain [a, b]: >= 2 finite, strictly increasing
    times inside it, and finite values of one shape."""
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
    a, b = (float(v) for v in domain)
    if not a < b:
        raise ValueError(f"the domain needs a < b, got [{a}, {b}]")
    if t[0] < a or t[-1] > b:
        raise ValueError(f"sample times must lie in the domain [{a:.6g}, {b:.6g}]")
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != t.size:
        raise ValueError(f"values y have shape {y.shape}; expected ({t.size},) or ({t.size}, n)")
    if not numpy.all(numpy.isfinite(y)):
        raise ValueError("values y contain NaN or infinite values")
    return Curve(t, y, (a, b))


def check_beta(beta):
    """The failure probability beta, which must lie in (0, 1)."""
    if isinstance(beta, bool) or not (isinstance(beta, (int, float)) and 0 < beta < 1):
        raise ValueError(f"beta must lie in (0, 1), got {beta!r}")
    return float(beta)


def prepare_run(t, y, domain, epsilon, rho, beta, rng):
    """Validate an algorithm's inputs: (curve, a fresh ledger for the budget, generator).
    The budget is checked first, before any data is read."""
    model, budget = check_budget(epsilon, rho)
    check_beta(beta)
    ledger = PrivacyLedger(budget, model)
    return make_curve(t, y, domain), ledger, default_generator(rng)
