"""Sampled curves q on a public domain (paper Sec. 4; docs/design.md, Privacy model).

A curve is the piecewise-linear interpolant of its samples (t_i, y_i), zero outside them,
on the spec's public domain [a, b]. Its sample times are private: every quantity an
algorithm computes from a curve depends on the function q alone, never on where or how
often it was sampled.
"""
import math
from dataclasses import dataclass

import numpy

from ..runtime.hold import held_samples
from .noise import noise_source
from .ledger import PrivacyLedger, check_budget


@dataclass(frozen=True)
class Curve:
    """q on ``domain``: ``y`` is (S, n); fewer than two samples is the zero function, and a
    repeated sample time is a jump."""
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

    def norm(self):
        """||q|| without overflow in the squares: max |y| times the norm of y / max |y| (inf
        only when ||q|| itself exceeds float64)."""
        scale = float(numpy.max(numpy.abs(self.y), initial=0.0))
        if scale == 0:
            return 0.0
        with numpy.errstate(over="ignore"):
            return scale * math.sqrt(Curve(self.t, self.y / scale, self.domain).norm_squared())

    def clipped(self, bound):
        """q min(1, B/||q||): the projection onto the L2 ball of radius B, non-expansive
        (docs/clipping.md); a curve inside the ball is kept exactly."""
        norm = self.norm()
        if norm <= bound:
            return self
        return Curve(self.t, self.y * (bound / norm), self.domain)

    def _interval_values(self, x, index):
        """q on sample interval ``index`` at x, as a convex combination (no slope, so no
        overflow however close two sample times are)."""
        t0, t1 = self.t[index], self.t[index + 1]
        width = t1 - t0
        share = numpy.where(width > 0, (x - t0) / numpy.where(width > 0, width, 1.0), 0.0)
        share = numpy.clip(share, 0.0, 1.0)[..., None]
        return self.y[index] * (1 - share) + self.y[index + 1] * share

    def __call__(self, x):
        """q(x): (X, n), zero outside the samples, right-continuous at a repeated time."""
        x = numpy.asarray(x, dtype=float)
        if self.t.size < 2:
            return numpy.zeros(x.shape + (self.value_dim,))
        index = numpy.clip(numpy.searchsorted(self.t, x, side="right") - 1, 0, self.t.size - 2)
        inside = ((x >= self.t[0]) & (x <= self.t[-1]))[..., None]
        return numpy.where(inside, self._interval_values(x, index), 0.0)

    def pieces(self, cuts=()):
        """Linear pieces (lo, hi, q(lo+), q(hi-)) covering the domain, cut at ``cuts`` and at
        the samples; pieces outside [t_0, t_last] are zero (q jumps there, if at all)."""
        a, b = self.domain
        cuts = numpy.asarray(cuts, dtype=float)
        knots = numpy.unique(numpy.concatenate([[a, b], self.t, cuts[(cuts > a) & (cuts < b)]]))
        lo, hi = knots[:-1], knots[1:]
        if self.t.size < 2:
            zeros = numpy.zeros((lo.size, self.value_dim))
            return lo, hi, zeros, zeros
        middle = lo + (hi - lo) / 2
        index = numpy.searchsorted(self.t, middle, side="right") - 1
        inside = ((index >= 0) & (index <= self.t.size - 2))[:, None]
        index = numpy.clip(index, 0, self.t.size - 2)
        return (lo, hi, numpy.where(inside, self._interval_values(lo, index), 0.0),
                numpy.where(inside, self._interval_values(hi, index), 0.0))

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


def make_curve(t, y, domain, outside="zero"):
    """Validate samples against the public domain [a, b]: finite, non-decreasing times inside
    it (a repeated time is a jump; fewer than two samples is the zero function, so the
    number of samples never decides whether there is a release) and finite values of one
    shape. ``outside`` (the spec's [curve] outside): "zero" outside the samples, or "hold"
    (the first and last values continue to a and b: one sample is a constant), the held
    curve then written as a curve zero outside its samples (runtime/hold.py, the map the
    generated modules apply)."""
    t = numpy.asarray(t, dtype=float)
    y = numpy.asarray(y, dtype=float)
    if t.ndim != 1:
        raise ValueError(f"t must be 1-D, got shape {t.shape}")
    if not numpy.all(numpy.isfinite(t)):
        raise ValueError("sample times contain NaN or infinite values")
    if numpy.any(numpy.diff(t) < 0):
        raise ValueError("sample times must be in increasing order (a repeated time is a jump)")
    a, b = (float(v) for v in domain)
    if not a < b:
        raise ValueError(f"the domain needs a < b, got [{a}, {b}]")
    if t.size and (t[0] < a or t[-1] > b):
        raise ValueError(f"sample times must lie in the domain [{a:.6g}, {b:.6g}]")
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != t.size:
        raise ValueError(f"values y have shape {y.shape}; expected ({t.size},) or ({t.size}, n)")
    if not numpy.all(numpy.isfinite(y)):
        raise ValueError("values y contain NaN or infinite values")
    if outside == "hold" and t.size:
        if not (math.isfinite(a) and math.isfinite(b)):
            raise ValueError("outside = \"hold\" needs a bounded domain")
        t, y = held_samples(t, y, (a, b), 1)
    return Curve(t, y, (a, b))


def check_beta(beta):
    """The failure probability beta, which must lie in (0, 1)."""
    if isinstance(beta, bool) or not (isinstance(beta, (int, float)) and 0 < beta < 1):
        raise ValueError(f"beta must lie in (0, 1), got {beta!r}")
    return float(beta)


def prepare_run(t, y, domain, epsilon, rho, beta, rng, bound, outside="zero"):
    """Validate an algorithm's inputs: (curve clipped to the public bound B, a fresh ledger
    for the budget, generator). The budget is checked first, before any data is read;
    ``outside`` as in make_curve."""
    model, budget = check_budget(epsilon, rho)
    check_beta(beta)
    ledger = PrivacyLedger(budget, model)
    return make_curve(t, y, domain, outside).clipped(bound), ledger, noise_source(rng)
