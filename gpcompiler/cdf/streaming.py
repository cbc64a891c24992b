"""Streaming sufficient statistics of the CDF estimators (docs/design.md, CDF estimation).

Records are read in fixed-size chunks (``CHUNK`` records, memory O(CHUNK (K + 2)) whatever
N is). Per chunk: Legendre sums sum_n P_j(x_n), j = 0..K+1, by the three-term recurrence
(direct); power sums by a running product (moments); bin counts (histogram); counts at the
public quantile points (adaptive quantiles). Float chunk sums are added exactly (Shewchuk's
partials, rounded once at the end), so the total does not depend on the order in which
chunks or partitions are combined: the same chunks give the same bits, in memory, from a
file read in pieces, or reduced as a tree over Dask partitions.
"""
import math
from functools import lru_cache

import numpy

CHUNK = 1 << 16


def to_reference(values, lo, hi):
    """Validate one piece of data; return it mapped affinely from [lo, hi] to [-1, 1],
    clipped (a public, non-expansive map)."""
    values = _flat(values)
    if not numpy.all(numpy.isfinite(values)):
        raise ValueError("data contains NaN or infinite values")
    return numpy.clip(2 * (values - lo) / (hi - lo) - 1, -1.0, 1.0)


def fixed_chunks(pieces, size):
    """Re-cut an iterable of 1-D arrays into chunks of ``size`` (the last may be shorter),
    so that chunk boundaries depend on record positions only, not on how data was split."""
    carry = numpy.empty(0)
    for piece in pieces:
        if carry.size:
            fill = size - carry.size
            carry, piece = numpy.concatenate([carry, piece[:fill]]), piece[fill:]
            if carry.size < size:
                continue
            yield carry
        full = piece.size - piece.size % size
        for start in range(0, full, size):
            yield piece[start:start + size]
        carry = piece[full:].copy()
    if carry.size:
        yield carry


def legendre_sums(x, degree):
    """sum_n P_j(x_n), j = 0..degree+1, by Bonnet's recurrence on 1-D buffers (the same
    operations per record as numpy's legvander)."""
    sums = numpy.empty(degree + 2)
    previous, current, following = numpy.ones_like(x), x.copy(), numpy.empty_like(x)
    sums[0], sums[1] = x.size, current.sum()
    for i in range(2, degree + 2):
        numpy.multiply(current, x, out=following)
        following *= 2 * i - 1
        previous *= i - 1
        following -= previous
        following /= i
        previous, current, following = current, following, previous
        sums[i] = current.sum()
    return sums


def power_sums(x, degree):
    """sum_n x_n^i, i = 1..degree+1, by a running product."""
    sums = numpy.empty(degree + 1)
    power = x.copy()
    sums[0] = power.sum()
    for i in range(1, degree + 1):
        power *= x
        sums[i] = power.sum()
    return sums


def direct_terms(legendre):
    """sum_n int_{x_n}^1 e_k = -(S_{k+1} - S_{k-1})/sqrt(2(2k+1)) from the Legendre sums
    S_j (with S_{-1} := S_0 = N), k = 0..K."""
    k = numpy.arange(legendre.size - 1)
    previous = numpy.concatenate([[legendre[0]], legendre[:-2]])
    return -(legendre[1:] - previous) / numpy.sqrt(2 * (2 * k + 1))


def quantile_points(steps):
    """The adaptive-quantiles query points on [-1, 1], in query order: each the midpoint
    of the widest gap between the points so far (first on ties). Public: they depend on
    ``steps`` alone, never on the data or the noisy answers."""
    points, queries = [-1.0, 1.0], []
    for _ in range(steps):
        gap = int(numpy.argmax(numpy.diff(points)))
        middle = (points[gap] + points[gap + 1]) / 2
        queries.append(middle)
        points.insert(gap + 1, middle)
    return numpy.array(queries)


def chunk_sums(x, method, size):
    """One chunk's contribution: float sums (moments, direct) or integer counts."""
    if method == "moments":
        return power_sums(x, size)
    if method == "direct":
        return legendre_sums(x, size)
    if method == "histogram":
        return numpy.histogram(x, bins=size, range=(-1, 1))[0].astype(numpy.int64)
    order, ordered = _sorted_points(size)
    below = numpy.bincount(numpy.searchsorted(ordered, x, side="left"), minlength=size + 1)
    counts = numpy.empty(size, dtype=numpy.int64)
    counts[order] = numpy.cumsum(below[:size])       # #{x_n <= p} for each point p
    return counts


@lru_cache(maxsize=8)
def _sorted_points(steps):
    points = quantile_points(steps)
    order = numpy.argsort(points, kind="stable")
    return order, points[order]


_MASK = (1 << 64) - 1


def records_digest(values):
    """A multiset digest of raw records: the sum mod 2^64 of a 64-bit mix (splitmix64's
    finalizer) of each value's float64 bits (-0.0 as 0.0). It does not depend on the
    records' order or on how they are split into chunks or partitions; it is not private
    and never leaves the Partial (Statistics keeps only a keyed hash of it)."""
    x = (numpy.asarray(values, dtype=float) + 0.0).view(numpy.uint64)
    x = (x ^ (x >> numpy.uint64(30))) * numpy.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> numpy.uint64(27))) * numpy.uint64(0x94D049BB133111EB)
    x ^= x >> numpy.uint64(31)
    return int(x.sum(dtype=numpy.uint64))


class Partial:
    """Mergeable running totals: the record count, exact sums (float partials, or integer
    counts) and the records' multiset digest (records_digest)."""

    def __init__(self, width, exact_floats):
        self.count = 0
        self.digest = 0
        self.partials = [[] for _ in range(width)] if exact_floats else None
        self.counts = None if exact_floats else numpy.zeros(width, dtype=numpy.int64)

    def add(self, count, sums, digest=0):
        self.count += count
        self.digest = (self.digest + digest) & _MASK
        if self.partials is None:
            self.counts += sums
        else:
            for column, value in zip(self.partials, sums.tolist()):
                _grow(column, value)
        return self

    def merge(self, other):
        self.count += other.count
        self.digest = (self.digest + other.digest) & _MASK
        if self.partials is None:
            self.counts += other.counts
        else:
            for column, values in zip(self.partials, other.partials):
                for value in values:
                    _grow(column, value)
        return self

    def totals(self):
        """The sums, each exact sum rounded once to float64 (counts as floats)."""
        if self.partials is None:
            return self.counts.astype(float)
        return numpy.array([math.fsum(column) for column in self.partials])


def _grow(partials, x):
    """Add x to a list of non-overlapping partials exactly (Shewchuk's msum step)."""
    kept = 0
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        high = x + y
        low = y - (high - x)
        if low:
            partials[kept] = low
            kept += 1
        x = high
    partials[kept:] = [x]


def partial_sums(pieces, lo, hi, method, size):
    """Stream ``pieces`` (arrays of raw records) in fixed chunks; return a Partial."""
    exact_floats = method in ("moments", "direct")
    partial = Partial(size + 2 if method == "direct" else size + 1 if exact_floats else size,
                      exact_floats)
    for chunk in fixed_chunks(map(_flat, pieces), CHUNK):
        partial.add(chunk.size, chunk_sums(to_reference(chunk, lo, hi), method, size),
                    records_digest(chunk))
    return partial


def _flat(values):
    return numpy.asarray(values, dtype=float).ravel()
