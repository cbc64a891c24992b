"""Piecewise polynomial spaces on breakpoints (paper Sec. 4.1).

Each segment [s_i, s_{i+1}] carries the normalized Legendre basis
L_k = sqrt((2k+1)/h) P_k(u) mapped to it: one reference orthonormal basis scaled to every
segment, so the whole space has an orthonormal basis and projections are exact (Gauss-
Legendre of order max(p+1, 2) on each piece of the piecewise-linear curve).
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
    the whole segment, including where q has no samples and is zero. One pass over the
    pieces of q: Legendre rows by the recurrence per Gauss node, segment sums by reduceat
    (pieces are in order, every segment has at least one)."""
    breakpoints = numpy.asarray(breakpoints, dtype=float)
    m, n = degree + 1, curve.value_dim
    a, b, ya, yb, segment = _pieces(curve, breakpoints)
    lo, hi = breakpoints[segment], breakpoints[segment + 1]
    scale = 1 / (hi - lo)
    u_a, u_b = (2 * a - lo - hi) * scale, (2 * b - lo - hi) * scale
    nodes, weights = legendre.leggauss(max(m, 2))     # exact for (q - P q)^2, degree max(2p, 2)
    norms = numpy.sqrt(2 * numpy.arange(m) + 1)[:, None]
    half = (b - a) / 2
    root = numpy.sqrt(scale)
    starts = numpy.flatnonzero(numpy.diff(segment, prepend=-1))
    at_nodes, contributions = [], numpy.zeros((segment.size, m, n))
    for node, weight in zip((nodes + 1) / 2, weights):
        basis = _legendre_rows(u_a + (u_b - u_a) * node, degree) * norms * root   # L_k(x_g)
        q = ya * (1 - node) + yb * node
        contributions += basis.T[:, :, None] * (weight * half)[:, None, None] * q[:, None, :]
        at_nodes.append((weight, basis, q))
    coefficients = numpy.zeros((len(breakpoints) - 1, m, n))
    coefficients[segment[starts]] = numpy.add.reduceat(contributions, starts, axis=0)
    local = coefficients[segment]
    squares = sum(weight * half * ((q - numpy.einsum("kp,pkr->pr", basis, local)) ** 2).sum(axis=1)
                  for weight, basis, q in at_nodes)
    residual = numpy.zeros(len(breakpoints) - 1)
    residual[segment[starts]] = numpy.add.reduceat(squares, starts)
    return PiecewisePolynomial(breakpoints, coefficients), residual


def _legendre_rows(u, degree):
    """P_k(u), k = 0..degree, as rows (k-major; numpy legvander's recurrence)."""
    rows = numpy.empty((degree + 1, u.size))
    rows[0] = 1.0
    if degree:
        rows[1] = u
    for i in range(2, degree + 1):
        rows[i] = (rows[i - 1] * u * (2 * i - 1) - rows[i - 2] * (i - 1)) / i
    return rows


def dyadic_grid(a, b, level):
    """The 2^level + 1 public dyadic breakpoints of [a, b]."""
    return numpy.linspace(a, b, 2 ** level + 1)


def refinement(degree):
    """(A_left, A_right): A[i, k] = <L_k of a segment, L_i of its left (right) half>, the
    parent's orthonormal Legendre functions in each child's basis (exact for polynomials;
    Gauss-Legendre of order p + 1)."""
    nodes, weights = legendre.leggauss(degree + 1)
    k = numpy.arange(degree + 1)
    child = legendre.legvander(nodes, degree) * numpy.sqrt(2 * k + 1)
    return tuple(numpy.einsum("g,gi,gk->ik", weights / 2, child,
                              legendre.legvander((nodes + side) / 2, degree)
                              * numpy.sqrt((2 * k + 1) / 2))
                 for side in (-1, 1))


class DyadicProjections:
    """Projections of q onto the piecewise space of every dyadic level 0..``top`` of its
    domain, with every segment's squared residual, from one pass over q (O(S + 2^top)).

    The finest level is ``project``; a parent segment's coefficients are the children's
    mapped by the refinement matrices (P_j = P_j P_{j+1}), and its residual is a sum of
    non-negative terms computed directly: r(parent) = r(left) + r(right) + ||P_{j+1} q -
    P_j q||^2, the last the squared child coefficients of the difference (orthogonal
    decomposition, no cancellation)."""

    def __init__(self, curve, degree, top):
        self.domain, self.degree, self.value_dim = curve.domain, degree, curve.value_dim
        function, residual = project(curve, dyadic_grid(*curve.domain, top), degree)
        left, right = refinement(degree)
        c = function.coefficients
        self.coefficients, self.residuals = [c], [residual]
        for _ in range(top):
            c_left, c_right = c[0::2], c[1::2]
            c = (numpy.einsum("ik,jir->jkr", left, c_left)
                 + numpy.einsum("ik,jir->jkr", right, c_right))
            d_left = c_left - numpy.einsum("ik,jkr->jir", left, c)
            d_right = c_right - numpy.einsum("ik,jkr->jir", right, c)
            residual = (residual[0::2] + residual[1::2] + (d_left ** 2).sum(axis=(1, 2))
                        + (d_right ** 2).sum(axis=(1, 2)))
            self.coefficients.append(c)
            self.residuals.append(residual)
        self.coefficients.reverse()
        self.residuals.reverse()

    def _cells(self, breakpoints):
        """(level, index) of each dyadic segment between consecutive breakpoints."""
        a, b = self.domain
        width = numpy.diff(breakpoints) / (b - a)
        level = numpy.rint(-numpy.log2(width)).astype(int)
        index = numpy.rint((breakpoints[:-1] - a) / (b - a) * 2.0 ** level).astype(int)
        return level, index

    def residual(self, breakpoints):
        """||q - P q||^2 on [s_0, s_k] for dyadic breakpoints of one level."""
        level, index = self._cells(breakpoints)
        return float(self.residuals[level[0]][index[0]:index[0] + index.size].sum())

    def function(self, breakpoints):
        """P q on dyadic breakpoints of any levels (zero outside [s_0, s_k])."""
        level, index = self._cells(breakpoints)
        coefficients = numpy.stack([self.coefficients[j][i] for j, i in zip(level, index)])
        return PiecewisePolynomial(numpy.asarray(breakpoints, dtype=float), coefficients)


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
