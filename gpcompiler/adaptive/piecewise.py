"""Piecewise polynomial spaces on breakpoints (paper Sec. 4.1).

Each segment [s_i, s_{i+1}] carries the normalized Legendre basis
L_k = sqrt((2k+1)/h) P_k(u) mapped to it: one reference orthonormal basis scaled to every
segment, so the whole space has an orthonormal basis and projections are exact (Gauss-
Legendre of order max(p, 1) + 1 on each piece of the piecewise-linear curve, which also
integrates the squared residual (degree 2 max(p, 1)) exactly).
"""
from dataclasses import dataclass

import numpy
import scipy.sparse
import scipy.sparse.linalg
from numpy.polynomial import legendre


@dataclass(frozen=True)
class PiecewisePolynomial:
    """Coefficients (k, m, n) in the per-segment orthonormal Legendre bases."""
    breakpoints: numpy.ndarray
    coefficients: numpy.ndarray

    @property
    def degree(self):
        return self.coefficients.shape[1] - 1

    def evaluate(self, t):
        """Values at t: (T, n); right-continuous at breakpoints, zero outside."""
        t = numpy.asarray(t, dtype=float)
        segment = numpy.clip(numpy.searchsorted(self.breakpoints, t, side="right") - 1,
                             0, len(self.breakpoints) - 2)
        basis = local_basis(t, self.breakpoints[segment], self.breakpoints[segment + 1], self.degree)
        values = numpy.einsum("tk,tkr->tr", basis, self.coefficients[segment])
        outside = (t < self.breakpoints[0]) | (t > self.breakpoints[-1])
        values[outside] = 0.0
        return values


def local_basis(x, lo, hi, degree):
    """sqrt((2k+1)/(hi-lo)) P_k(u) at x, u the map of [lo, hi] to [-1, 1]: (X, p+1)."""
    u = (2 * x - lo - hi) / (hi - lo)
    k = numpy.arange(degree + 1)
    return legendre.legvander(u, degree) * numpy.sqrt((2 * k + 1) / numpy.asarray(hi - lo)[..., None])


def _pieces(curve, breakpoints):
    """Linear pieces of q on [s_0, s_k] split at the breakpoints (zero pieces where q has no
    samples), with their segment index."""
    lo, hi, y_lo, y_hi = curve.pieces(breakpoints)
    keep = (lo >= breakpoints[0]) & (hi <= breakpoints[-1])
    lo, hi, y_lo, y_hi = lo[keep], hi[keep], y_lo[keep], y_hi[keep]
    segment = numpy.clip(numpy.searchsorted(breakpoints, (lo + hi) / 2, side="right") - 1,
                         0, len(breakpoints) - 2)
    return lo, hi, y_lo, y_hi, segment


def project(curve, breakpoints, degree):
    """L2 projection of q.1_[s_0, s_k] onto the piecewise space; also the squared
    residual ||q - Pq||^2 on each segment, computed directly (not by cancellation) over
    the whole segment, including where q has no samples and is zero."""
    breakpoints = numpy.asarray(breakpoints, dtype=float)
    k, m, n = len(breakpoints) - 1, degree + 1, curve.value_dim
    a, b, ya, yb, segment = _pieces(curve, breakpoints)
    nodes, weights = legendre.leggauss(max(degree, 1) + 1)   # (q - Pq)^2: degree 2 max(p, 1)
    lam = (nodes + 1) / 2
    x = a[:, None] + (b - a)[:, None] * lam
    w = (b - a)[:, None] * weights / 2
    q = ya[:, None, :] * (1 - lam)[None, :, None] + yb[:, None, :] * lam[None, :, None]
    lo, hi = breakpoints[segment], breakpoints[segment + 1]
    basis = local_basis(x, lo[:, None], hi[:, None], degree)          # (P, G, m)
    contributions = numpy.einsum("pg,pgk,pgr->pkr", w, basis, q)
    coefficients = numpy.zeros((k, m, n))
    numpy.add.at(coefficients, segment, contributions)
    fitted = numpy.einsum("pgk,pkr->pgr", basis, coefficients[segment])
    residual = numpy.zeros(k)
    numpy.add.at(residual, segment, numpy.einsum("pg,pgr->p", w, (q - fitted) ** 2))
    return PiecewisePolynomial(breakpoints, coefficients), residual


def continuity_constraints(breakpoints, degree, value_dim):
    """Sparse C with C vec(c) = 0 iff the function is continuous at interior breakpoints
    (one row per interior breakpoint and value component; c ordered as (k, m, n))."""
    k, m, n = len(breakpoints) - 1, degree + 1, value_dim
    interior = numpy.asarray(breakpoints[1:-1], dtype=float)
    left = local_basis(interior, breakpoints[:-2], interior, degree)        # (k-1, m)
    right = local_basis(interior, interior, breakpoints[2:], degree)
    i, j, r = numpy.meshgrid(numpy.arange(k - 1), numpy.arange(m), numpy.arange(n), indexing="ij")
    rows = (i * n + r).ravel()
    columns_left = ((i * m + j) * n + r).ravel()
    columns_right = (((i + 1) * m + j) * n + r).ravel()
    values_left = numpy.broadcast_to(left[:, :, None], i.shape).ravel()
    values_right = -numpy.broadcast_to(right[:, :, None], i.shape).ravel()
    return scipy.sparse.csr_matrix(
        (numpy.concatenate([values_left, values_right]),
         (numpy.concatenate([rows, rows]), numpy.concatenate([columns_left, columns_right]))),
        shape=((k - 1) * n, k * m * n))


def make_continuous(function):
    """Nearest (in L2) piecewise polynomial continuous at the breakpoints (Sec. 4.1.2):
    min ||c' - c||^2 s.t. C c' = 0, solved through its sparse KKT system
    [[I, C^T], [C, 0]] [c'; lambda] = [c; 0] (orthonormal coordinates: L2 = Euclidean)."""
    c = function.coefficients
    if len(function.breakpoints) <= 2:
        return function
    constraints = continuity_constraints(function.breakpoints, function.degree, c.shape[2])
    count = constraints.shape[0]
    kkt = scipy.sparse.bmat([[scipy.sparse.identity(c.size), constraints.T],
                             [constraints, None]], format="csc")
    solution = scipy.sparse.linalg.spsolve(kkt, numpy.concatenate([c.ravel(), numpy.zeros(count)]))
    return PiecewisePolynomial(function.breakpoints, solution[:c.size].reshape(c.shape))
