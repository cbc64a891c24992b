"""Streaming sufficient statistics of the CDF estimators (docs/design.md, CDF estimation).

Records are read in fixed-size chunks (``CHUNK`` records, memory O(CHUNK) whatever N is).
Per chunk: Chebyshev sums sum_n T_l(x_n), l = 0..K+1, by T_(l+1) = 2x T_l - T_(l-1), three
in-place passes per degree over the chunk (direct; turned into Legendre sums exactly at the
end, see direct_terms); power sums by a running product (moments); bin counts (histogram);
counts at the public quantile points (adaptive quantiles). Float chunk sums are added
exactly (Shewchuk's partials, rounded once at the end), so the total does not depend on the
order in which chunks or partitions are combined: the same chunks give the same bits, in
memory, from a file read in pieces, or reduced as a tree over Dask partitions.

A record that is no number has a public, data-independent value (docs/threat-model.md):
+inf is the upper bound, -inf and NaN the lower bound (public_values), as a record outside
[lo, hi] is clipped to it; no record stops a release.
"""
import math
from fractions import Fraction
from functools import lru_cache

import numpy

from ..runtime import cdfterms
from ..runtime.rounding import ceil_float, ceil_sqrt

CHUNK = 1 << 16
ROW = 1 << 10     # records per first-level sum of a chunk (docs: direct_error_bound)
UNIT = Fraction(1, 2 ** 53)
MAX_DEGREE = 1000  # the direct method's largest K (estimators._size)


def public_values(values, lo, hi):
    """Records as the estimators see them in [lo, hi]: clipped to the bounds, +inf -> hi,
    -inf -> lo, NaN -> lo (public values, the same for every data set)."""
    values = numpy.clip(_flat(values), lo, hi)
    values[numpy.isnan(values)] = lo
    return values


def to_reference(values, lo, hi, out=None):
    """One piece of raw records mapped affinely from [lo, hi] to [-1, 1] and clipped (a
    public, non-expansive map): 2 (v - lo)/(hi - lo) - 1, then NaN and -inf -> -1 and
    +inf -> 1, exactly the values of records lo and hi (public_values)."""
    values = _flat(values)
    with numpy.errstate(over="ignore", invalid="ignore"):  # clipped below: +-inf, NaN
        x = numpy.subtract(values, lo, out=out)
        numpy.add(x, x, out=x)
        numpy.divide(x, hi - lo, out=x)
        numpy.subtract(x, 1.0, out=x)
    numpy.fmax(x, -1.0, out=x)               # fmax and fmin take the number over a NaN
    return numpy.fmin(x, 1.0, out=x)


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


def chebyshev_sums(x, degree, spare=None):
    """sum_n T_l(x_n), l = 0..degree+1, for x in [-1, 1] (a buffer it overwrites, as
    ``spare``, a buffer of x's size or None):
    T_(l+1) = 2x T_l - T_(l-1) in place (a product and a difference per degree, each
    rounded once; three buffers turn), each T_l summed by _sum while it is in cache.
    Rounding error: direct_error_bound."""
    sums = numpy.empty(degree + 2)
    sums[0], sums[1] = x.size, _sum(x)
    if degree == 0:
        return sums
    double = x + x
    spare = numpy.empty_like(x) if spare is None else spare
    previous, current = x, numpy.multiply(double, x, out=spare)
    spare = numpy.empty_like(x)
    numpy.subtract(current, 1.0, out=current)
    sums[2] = _sum(current)
    for l in range(3, degree + 2):
        numpy.multiply(double, current, out=spare)
        numpy.subtract(spare, previous, out=spare)
        sums[l] = _sum(spare)
        previous, current, spare = current, spare, previous
    return sums


def _sum(values):
    """A float sum in two levels: rows of ROW values, then the row sums and the rest (any
    order within each level: at most ROW - 1 and CHUNK / ROW roundings of a term)."""
    full = values.size - values.size % ROW
    rows = numpy.add.reduce(numpy.add.reduce(values[:full].reshape(-1, ROW), axis=1))
    return float(rows + numpy.add.reduce(values[full:])) if full < values.size else float(rows)


def power_sums(x, degree, spare=None):
    """sum_n x_n^i, i = 1..degree+1, by a running product (in ``spare``, a buffer of x's
    size, or a new one), each summed by _sum. Rounding error: moment_error_bound."""
    sums = numpy.empty(degree + 1)
    power = numpy.empty_like(x) if spare is None else spare
    numpy.copyto(power, x)
    sums[0] = _sum(power)
    for i in range(1, degree + 1):
        power *= x
        sums[i] = _sum(power)
    return sums


@lru_cache(maxsize=4)
def _halves(size):
    """g_m (cdfterms.halves), cached and read-only."""
    return _read_only(cdfterms.halves(size))


def _read_only(values):
    values.setflags(write=False)
    return values


def direct_terms(partial):
    """sum_n int_(x_n)^1 e_k = -(S_(k+1) - S_(k-1))/sqrt(2(2k+1)), k = 0..K (S_(-1) := S_0
    = N), from the Chebyshev sums C_l of a Partial (each exact sum rounded once): the
    Legendre sums S_j = sum_m g_m g_(j-m) C_|j-2m| (P_j(cos t) = sum_m g_m g_(j-m)
    cos((j-2m) t): weights >= 0 with sum 1), each a correctly rounded sum (math.fsum) of
    products rounded once."""
    chebyshev = partial.totals()
    g = _halves(chebyshev.size)
    legendre = numpy.empty(chebyshev.size)
    for j in range(chebyshev.size):
        m = numpy.arange((j + 1) // 2)               # j - 2m > 0: two terms alike
        terms = (2 * g[m] * g[j - m] * chebyshev[j - 2 * m]).tolist()
        middle = [g[j // 2] * g[j // 2] * chebyshev[0]] if j % 2 == 0 else []
        legendre[j] = math.fsum(terms + middle)
    below = numpy.concatenate([[legendre[0]], legendre[:-2]])
    k = numpy.arange(chebyshev.size - 1)
    return -(legendre[1:] - below) / numpy.sqrt(2 * (2 * k + 1))


def direct_error_bound(degree, count):
    """A bound, for any ``count`` records, on the l2 distance between the direct sums
    computed here (chunk_sums, Partial, direct_terms) and the exact sums of the mapped
    records, K = ``degree`` <= MAX_DEGREE (rounded up; a function of public values only).

    Per record (|x| <= 1, T_1 = x exact): each step of the recurrence adds r_l with
    |r_l| <= rho = u (5 + 2u)(1 + E) + 2^-1073 (a product, u |2x T_l| + 2^-1075 for
    underflow, then a difference), and the error of T_j is sum_l U_(j-l)(x) r_l with
    |U_n| <= n + 1 on [-1, 1], so |e_j| <= rho (j - 1) j / 2 =: E_j (E: E_j at the largest
    degree, MAX_DEGREE + 1). _sum adds at most ROW - 1 roundings, then CHUNK / ROW, of
    each term (any order; Higham, Lemma 3.1 and eq. 4.4): relative s = gamma_(ROW - 1) +
    gamma_(CHUNK / ROW)(1 + gamma_(ROW - 1)). Chunks add exactly. The exact Legendre
    total C_l is rounded once (u); the Legendre weights have sum 1, each term
    g_m g_(j-m) C_l carries 4 roundings and math.fsum one more, so |S^_j - S_j| <= N b_j
    with b_j = r_j + (gamma_4 + u (1 + gamma_4))(1 + r_j), r_j = a_j + u (1 + a_j),
    a_j = E_j + s (1 + E_j) (S_0 = N exact); the difference is rounded once, then a
    sqrt and a quotient: kappa = (1 + u)^2/(1 - u) - 1, with |D_k| <= sqrt(2) N.
    Neighbouring data sets' computed sums are then within sqrt(2) + 2 bound of each other
    in l2: the release's distance slack (docs/clipping.md, "CDF sums")."""
    return ceil_sqrt(count ** 2 * _unit_squares(degree))


@lru_cache(maxsize=1)
def _recurrence_constants():
    """(rho, kappa) of direct_error_bound: the error a recurrence step adds, and the
    relative error of a quotient by a rounded square root (rounded up to floats)."""
    u, top = UNIT, MAX_DEGREE + 1
    c = u * (5 + 2 * u) * top * (top - 1) / 2
    worst = (c + Fraction(top * (top - 1), 2 ** 1074)) / (1 - c)
    rho = Fraction(ceil_float(u * (5 + 2 * u) * (1 + worst) + Fraction(1, 2 ** 1073)))
    return rho, Fraction(ceil_float((1 + u) ** 2 / (1 - u) - 1))


def _root(k):
    """A rational lower bound of sqrt(2 (2k + 1))."""
    return Fraction(math.isqrt(2 * (2 * k + 1) * 10 ** 12), 10 ** 6)


@lru_cache(maxsize=16)
def _unit_squares(degree):
    """sum_k (b_k / N)^2 of direct_error_bound, exact (its constants rounded up to floats)."""
    u = UNIT
    rho, kappa = _recurrence_constants()
    total = Fraction(ceil_float(_sum_error()))
    combined = Fraction(ceil_float(gamma(4) + u * (1 + gamma(4))))

    def legendre(j):          # |S^_j - S_j| / N
        if j < 1:
            return 0
        error = rho * (j - 1) * j / 2
        exact = error + total * (1 + error)
        rounded = exact + u * (1 + exact)
        return rounded + combined * (1 + rounded)
    squares = 0
    for k in range(degree + 1):
        share = (legendre(k + 1) + legendre(k - 1)) / _root(k)
        squares += (share * (1 + kappa) + kappa * 2) ** 2      # 2 >= sqrt(2) >= |D_k| / N
    return squares


def direct_factors(x, degree):
    """int_x^1 e_k per record of x (in [-1, 1]), k = 0..degree (runtime/cdfterms.py, the
    weights cached). Error: factor_errors."""
    return cdfterms.direct_factors(_flat(x), degree, _legendre_weights(degree + 1))


@lru_cache(maxsize=8)
def _legendre_weights(top):
    """cdfterms.legendre_weights, cached and read-only."""
    return _read_only(cdfterms.legendre_weights(top))


def factor_errors(degree):
    """(b, v): for every record in [-1, 1] and k = 0..degree, |F~_k - F_k| <= b_k and
    |F_k| <= v_k = 2 / sqrt(2(2k + 1)) for the factors F_k = int_x^1 e_k of direct_factors
    (Fractions). T_l errs by E_l = rho (l - 1) l / 2 (direct_error_bound); a weight is at
    most 2 roundings and sums of weights with |T_l| <= 1 are one product of any order
    (gamma_(j+1); a weight is summed from at most 2 products: 3 roundings in all), so
    |P~_j - P_j| <= r_j = E_j (1 + gamma_3) + gamma_3 + gamma_(j+1) (1 + gamma_3)(1 + E_j)
    (P_0 = 1 exact); the difference is rounded once and the quotient errs by kappa."""
    u = UNIT
    rho, kappa = _recurrence_constants()

    def legendre(j):
        if j < 1:
            return 0
        error = rho * (j - 1) * j / 2
        return error * (1 + gamma(3)) + gamma(3) + gamma(j + 1) * (1 + gamma(3)) * (1 + error)
    bounds, sizes = [], []
    for k in range(degree + 1):
        spread = legendre(k + 1) + legendre(k - 1)
        bounds.append((spread + u * (2 + spread)) / _root(k) * (1 + kappa) + kappa * 2 / _root(k))
        sizes.append(2 / _root(k))
    return bounds, sizes


def mean_errors(degree):
    """(coefficients, moments): for any N records in [-1, 1], bounds (floats, rounded up) on
    the l2 distance between a generated CDF module's coefficients() and moments() (the
    per-record terms of runtime/cdfterms.py, each coordinate summed by math.fsum, then
    divided by N) and the exact means of the mapped records. Per record a factor errs by b_k
    with |F_k| <= v_k (factor_errors), a power x^i by e_i = gamma_(i-1) + i 2^-1074 with
    |x^i| <= 1; fsum rounds once, and so does the division: each coordinate is within
    b + u (v + b)(2 + u) of its exact mean."""
    u = UNIT
    bounds, sizes = factor_errors(degree)
    direct = sum((b + u * (v + b) * (2 + u)) ** 2 for b, v in zip(bounds, sizes))
    powers = [gamma(i - 1) + Fraction(i, 2 ** 1074) for i in range(1, degree + 2)]
    moments = sum((e + u * (1 + e) * (2 + u)) ** 2 for e in powers)
    return ceil_sqrt(direct), ceil_sqrt(moments)


def moment_error_bound(degree, count):
    """A bound, for any ``count`` records in [-1, 1], on the l2 distance between the power
    sums computed here (power_sums, Partial) and the exact sums of the mapped records,
    K = ``degree`` (rounded up; public values only). Per record, x^i is i - 1 products
    each rounded once: within gamma_(i-1) |x|^i <= gamma_(i-1), plus i 2^-1074 for
    underflow; _sum errs by s = gamma_(ROW - 1) + gamma_(CHUNK / ROW)(1 + gamma_(ROW - 1))
    of the sum of |terms| <= N (Higham, Lemma 3.1); chunks add exactly, and the total is
    rounded once (u N). So |S^_i - S_i| <= N ((e_i (1 + s) + s)(1 + u) + u),
    e_i = gamma_(i-1) + i 2^-1074."""
    total = _sum_error()
    squares = sum((((gamma(i - 1) + Fraction(i, 2 ** 1074)) * (1 + total) + total)
                   * (1 + UNIT) + UNIT) ** 2 for i in range(1, degree + 2))
    return ceil_sqrt(count ** 2 * squares)


def _sum_error():
    """_sum's relative error of the sum of |terms|: gamma_(ROW - 1) + gamma_(CHUNK / ROW)
    (1 + gamma_(ROW - 1)) (any order within each level)."""
    return gamma(ROW - 1) + gamma(CHUNK // ROW) * (1 + gamma(ROW - 1))


def gamma(n):
    """gamma_n = n u / (1 - n u): the relative error of n roundings (Higham, Lemma 3.1),
    exact."""
    return n * UNIT / (1 - n * UNIT)


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


def chunk_sums(x, method, size, spare=None):
    """One chunk's contribution: float sums (moments, direct) or integer counts (direct
    overwrites x, moments and direct ``spare``)."""
    if method == "moments":
        return power_sums(x, size, spare)
    if method == "direct":
        return chebyshev_sums(x, size, spare)
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


def records_digest(values, work=None):
    """A multiset digest of raw records: the sum mod 2^64 of a 64-bit mix (splitmix64's
    finalizer) of each value's float64 bits (-0.0 as 0.0). It does not depend on the
    records' order or on how they are split into chunks or partitions; it is not private
    and never leaves the Partial (Statistics keeps only a keyed hash of it). ``work``: two
    float64 buffers of the values' size, or None."""
    values = numpy.asarray(values, dtype=float)
    if work is None:
        work = numpy.empty((2, values.size))
    x, shifted = (row.view(numpy.uint64) for row in work)
    numpy.add(values, 0.0, out=work[0])
    for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB), (31, None)):
        numpy.right_shift(x, numpy.uint64(shift), out=shifted)
        numpy.bitwise_xor(x, shifted, out=x)
        if factor:
            numpy.multiply(x, numpy.uint64(factor), out=x)
    return int(numpy.add.reduce(x))


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
    work = numpy.empty((2, CHUNK))
    for chunk in fixed_chunks(map(_flat, pieces), CHUNK):
        buffers = work[:, :chunk.size]
        digest = records_digest(chunk, buffers)
        x = to_reference(chunk, lo, hi, out=buffers[0])
        partial.add(chunk.size, chunk_sums(x, method, size, buffers[1]), digest)
    return partial


def direct_sums(x, degree):
    """The direct sums sum_n int_(x_n)^1 e_k, k = 0..degree, of records x already in
    [-1, 1], computed as partial_sums computes them (fixed chunks, Chebyshev sums, exact
    totals, direct_terms), so within direct_error_bound of the exact ones."""
    partial = Partial(degree + 2, True)
    for chunk in fixed_chunks([_flat(x)], CHUNK):
        partial.add(chunk.size, chebyshev_sums(numpy.array(chunk), degree))
    return direct_terms(partial)


def _flat(values):
    return numpy.asarray(values, dtype=float).ravel()
