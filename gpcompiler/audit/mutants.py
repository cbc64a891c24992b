"""Mutants of the shipped mechanisms, for measuring the auditor's power (docs/design.md,
"Auditing").

A mutant is a deliberately broken copy of a mechanism, built from the audit side by
wrapping the shipped function (generated modules' ``privatize``) or by patching one name
for the duration of a ``with`` block (the CDF calibration, the adaptive algorithms'
SVT and final release). None of them is ever used outside the audit.
"""
import contextlib
import math
from dataclasses import dataclass

import numpy

LEAK_MARKER = 1e6
SCALES = (0.5, 0.7, 0.9, 0.99)
LEAKS = (1e-3, 1e-5)


@dataclass(frozen=True)
class Mutant:
    """A broken ``privatize`` of a generated module: ``kind`` is "scale" (noise times
    ``parameter``), "leak" (with probability ``parameter`` the first coordinate is released
    as sign(c_0) * 1e6, a debug path writing the sign where the noisy value belongs),
    "laplace" (independent Laplace(1/epsilon) per coordinate, GP) or "user basis" (the
    claimed noise added to user-basis coefficients a instead of orthonormal c)."""
    kind: str
    parameter: float = 0.0

    @property
    def name(self):
        if self.kind == "scale":
            return f"noise x{self.parameter:g}"
        if self.kind == "leak":
            return f"sign leak p={self.parameter:g}"
        if self.kind == "laplace":
            return "per-coordinate Laplace"
        return "noise in the user basis"

    def equivalent(self, module):
        """True when the mutant cannot differ from the module (user-basis noise when the
        user basis is orthonormal, R^T R = I)."""
        if self.kind != "user basis":
            return False
        upper = _from_user_matrix(module)
        return bool(numpy.allclose(upper.T @ upper, numpy.eye(upper.shape[0]), atol=1e-12))

    def privatize(self, module):
        """The mutated privatize(c, *, epsilon=None, rho=None, rng=None)."""
        shipped = module.privatize
        d = module.COEF_DIM

        def scaled(c, *, epsilon=None, rho=None, rng=None):
            if epsilon is not None:
                return shipped(c, epsilon=epsilon / self.parameter, rng=rng)
            return shipped(c, rho=rho / self.parameter ** 2, rng=rng)

        def leak(c, *, epsilon=None, rho=None, rng=None):
            out = numpy.array(shipped(c, epsilon=epsilon, rho=rho, rng=rng))
            flat_c = numpy.asarray(c, dtype=float).reshape(-1, d)
            flat = out.reshape(-1, d)
            hit = rng.random(flat.shape[0]) < self.parameter
            flat[hit, 0] = numpy.sign(numpy.broadcast_to(flat_c, flat.shape)[hit, 0]) * LEAK_MARKER
            return out

        def laplace(c, *, epsilon=None, rho=None, rng=None):
            c = numpy.asarray(c, dtype=float)
            return c + rng.laplace(0.0, 1.0 / epsilon, c.shape)

        def user_basis(c, *, epsilon=None, rho=None, rng=None):
            c = numpy.asarray(c, dtype=float)
            noise = shipped(numpy.zeros_like(c), epsilon=epsilon, rho=rho, rng=rng)
            return module.from_user(module.to_user(c) + noise)
        kinds = {"scale": scaled, "leak": leak, "laplace": laplace, "user basis": user_basis}
        return kinds[self.kind]

    def release(self, module):
        """The mutated project_and_privatize(grids, values, *, kind, epsilon, rho, rng) of a
        module over a box: the shipped one at the scaled budget ("scale"), else the
        mutated privatize of the shipped projection."""
        if self.kind == "scale":
            shipped = module.project_and_privatize

            def scaled(grids, values, *, kind="linear", epsilon=None, rho=None, rng=None):
                if epsilon is not None:
                    return shipped(grids, values, kind=kind, epsilon=epsilon / self.parameter,
                                   rng=rng)
                return shipped(grids, values, kind=kind, rho=rho / self.parameter ** 2, rng=rng)
            return scaled
        privatize = self.privatize(module)

        def mutated(grids, values, *, kind="linear", epsilon=None, rho=None, rng=None):
            return privatize(module.project_grid(grids, values, kind=kind), epsilon=epsilon,
                             rho=rho, rng=rng)
        return mutated


def _from_user_matrix(module):
    """The matrix R^T of from_user on flattened coordinates (first value column)."""
    d = module.BASIS_SIZE
    a = numpy.zeros((d,) + tuple(module.COEF_SHAPE))
    a.reshape(d, d, -1)[numpy.arange(d), numpy.arange(d), 0] = 1.0
    c = numpy.asarray(module.from_user(a)).reshape(d, d, -1)[:, :, 0]
    return c.T


def module_mutants(model):
    """Every mutant of a generated module under a "GP" or "CGP" claim."""
    mutants = [Mutant("scale", f) for f in SCALES] + [Mutant("leak", p) for p in LEAKS]
    if model == "GP":
        mutants.append(Mutant("laplace"))
    return mutants + [Mutant("user basis")]


@contextlib.contextmanager
def cdf_sigma_scaled(factor):
    """The CDF estimators calibrate sigma ``factor`` times the analytic Gaussian value."""
    from ..cdf import estimators
    shipped = estimators.analytic_gaussian_sigma
    estimators.analytic_gaussian_sigma = lambda *args: factor * shipped(*args)
    try:
        yield
    finally:
        estimators.analytic_gaussian_sigma = shipped


@contextlib.contextmanager
def cdf_degree_uncharged():
    """degree="auto" choosing K as the noiseless best score (no exponential mechanism) and
    charging nothing for it: the release gets the whole epsilon and K is a deterministic
    function of the data."""
    from ..cdf import degree
    shipped = degree.choose_degree

    def mutated(coefficients, count, epsilon, delta, rng, candidates=degree.CANDIDATES):
        values = degree.scores(coefficients, count, epsilon, delta, candidates)
        return candidates[int(numpy.argmax(values))], 0.0, epsilon
    degree.choose_degree = mutated
    try:
        yield
    finally:
        degree.choose_degree = shipped


class ScaledGenerator:
    """A generator proxy whose Laplace, Gamma and normal variates are multiplied by
    ``laplace``, ``gamma`` and ``normal`` (the noise of whichever step draws from it)."""

    audit_replay = True  # draws floats: adaptive.noise.draw

    def __init__(self, rng, *, laplace=1.0, gamma=1.0, normal=1.0):
        self.rng, self.factors = rng, (laplace, gamma, normal)

    def laplace(self, loc=0.0, scale=1.0, size=None):
        return self.rng.laplace(loc, scale * self.factors[0], size)

    def gamma(self, shape, scale=1.0, size=None):
        return self.rng.gamma(shape, scale, size) * self.factors[1]

    def standard_normal(self, size=None):
        return self.rng.standard_normal(size) * self.factors[2]

    def __getattr__(self, name):
        return getattr(self.rng, name)


@contextlib.contextmanager
def patched(module, name, wrap):
    """Replace ``module.name`` by ``wrap(original)`` inside the block."""
    shipped = getattr(module, name)
    setattr(module, name, wrap(shipped))
    try:
        yield
    finally:
        setattr(module, name, shipped)


def first_svt_noise_halved(module):
    """Patch ``module.svt`` so that the first SVT of PrivFuncSelect (the size) or of
    PrivFuncSeg (the level) draws half its noise."""
    def wrap(svt):
        def mutated(*args, rng, ledger, label, **keywords):
            halved = label.endswith(("size", "level"))
            return svt(*args, rng=ScaledGenerator(rng, laplace=0.5) if halved else rng,
                       ledger=ledger, label=label, **keywords)
        return mutated
    return patched(module, "svt", wrap)


def final_release_half_charged(module):
    """Patch ``module.privatize_vector`` so that the final release draws the noise of
    twice the share it charges (GP radius x 1/2; CGP normal x 1/sqrt 2, which leaves
    the GP direction, a normalized normal vector, unchanged)."""
    def wrap(privatize_vector):
        def mutated(vector, ledger, label, share, *, rng, **keywords):
            if "final" in label:
                rng = ScaledGenerator(rng, gamma=0.5, normal=1 / math.sqrt(2))
            return privatize_vector(vector, ledger, label, share, rng=rng, **keywords)
        return mutated
    return patched(module, "privatize_vector", wrap)


def final_release_in_one_coordinate(module):
    """Patch ``module.privatize_vector`` so that the final release puts the whole noise
    vector's length in its first coordinate and releases the others exactly (the right
    radius, the wrong direction)."""
    def wrap(privatize_vector):
        def mutated(vector, ledger, label, share, *, rng, **keywords):
            released = privatize_vector(vector, ledger, label, share, rng=rng, **keywords)
            if "final" not in label:
                return released
            vector = numpy.asarray(vector, dtype=float)
            out = vector.copy()
            out.flat[0] += numpy.linalg.norm(released - vector)
            return out
        return mutated
    return patched(module, "privatize_vector", wrap)


def ramp_clipping():
    """Patch Curve.restricted back to the old clipping of the unbounded algorithm (issue 8,
    finding 1): (lo, 0) and (hi, 0) inserted and joined linearly to the first and last
    samples inside -- a ramp that is not part of q 1[lo, hi], so not non-expansive."""
    from ..adaptive.curve import Curve

    def wrap(shipped):
        def restricted(self, lo, hi):
            inside = (self.t > lo) & (self.t < hi)
            t = numpy.concatenate([[lo], self.t[inside], [hi]])
            return Curve(t, self(t), (float(lo), float(hi)))
        return restricted
    return patched(Curve, "restricted", wrap)
