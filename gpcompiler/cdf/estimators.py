"""DP CDF estimators (second paper): PP on moments, direct orthonormal coefficients,
histogram queries (HQ) and adaptive quantiles (AQ). Replace-one neighbours, N public.

Every estimator maps data in public bounds [lo, hi] affinely to [-1, 1] (clipping), adds
Gaussian noise calibrated by the analytic Gaussian mechanism, and post-processes to a
non-decreasing CDF in [0, 1].
"""
import dataclasses
import hashlib
import hmac
import math
import secrets
import uuid
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy
from numpy.polynomial import legendre
from scipy.optimize import isotonic_regression

from ..compiler.symbolic import to_float
from ..runtime import exact
from ..runtime.rounding import ceil_float, ceil_sqrt
from ..runtime.secure import default_generator
from .gaussian import analytic_gaussian_sigma
from .release import CDFEstimate, check_budget, noise_facts
from .streaming import (UNIT, direct_error_bound, direct_terms, moment_error_bound,
                        partial_sums, public_values, quantile_points, to_reference)
from .tables import COEFFICIENT_SENSITIVITY_SQUARED, cdf_tables, moment_sensitivity_squared


METHODS = ("moments", "direct", "histogram", "adaptive-quantiles")


AUTO = "auto"     # degree chosen privately (gpcompiler.cdf.degree)


GRID_SIZE = 2001


def map_to_reference(data, lo, hi):
    """Validate data and public bounds; return x in [-1, 1] (clipped)."""
    _check_bounds(lo, hi)
    x = to_reference(data, lo, hi)
    if x.size == 0:
        raise ValueError("data is empty")
    return x


def _check_bounds(lo, hi):
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi and math.isfinite(2 * (hi - lo))):
        raise ValueError(f"public bounds need finite lo < hi with 2 (hi - lo) finite, got "
                         f"lo={lo}, hi={hi}")


def _is_dask(data):
    return type(data).__module__.split(".")[0] in ("dask", "dask_expr")


_FINGERPRINT_KEY = secrets.token_bytes(32)   # per process, from OS entropy, never written


def _fingerprint(partial):
    """The name of a batch built from data: a keyed hash (HMAC-SHA256 under a key drawn
    once per process) of its record count and multiset digest, so the same records read
    again, in any order or chunking, get the same name (docs/design.md, "CDF estimation")."""
    message = f"{partial.count}:{partial.digest}".encode()
    return "records:" + hmac.new(_FINGERPRINT_KEY, message, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Statistics:
    """Summed per-record contributions of a batch (mergeable; not private). ``degree`` is
    K for moments and direct; ``queries`` the bins (histogram) or steps (adaptive
    quantiles), whose ``sums`` are counts. ``batches`` names the batches merged: built from
    data, a batch is named by a fingerprint of its records (_fingerprint), so a merge with
    the same records re-read is refused like a merge with the same object. The check
    cannot see batches that share only some records (the fingerprint is of the whole
    multiset), records changed in any bit, or batches built in another process (the key
    is per process); and it refuses two disjoint batches whose values are exactly the
    same multiset (build one Statistics from both instead). ``releases`` names the batches
    by random tokens, the only names a release carries (a fingerprint in a release would
    tell whether two releases hold the same records, without noise)."""
    method: str
    degree: int
    lo: float
    hi: float
    count: int
    sums: numpy.ndarray
    queries: int = None
    batches: frozenset = field(default_factory=lambda: frozenset({uuid.uuid4().hex}))
    releases: frozenset = field(default_factory=lambda: frozenset({uuid.uuid4().hex}))

    @classmethod
    def from_data(cls, data, *, lo, hi, degree=10, method="direct", bins=64, steps=32):
        """Statistics of an array (summed in fixed chunks, memory independent of N), or of
        a Dask array or DataFrame column (partition sums reduced as a tree)."""
        if not _is_dask(data):
            return cls.from_chunks([data], lo=lo, hi=hi, degree=degree, method=method,
                                   bins=bins, steps=steps)
        from .partitions import dask_partial
        size = _size(method, degree, bins, steps)
        _check_bounds(lo, hi)
        return cls._from_partial(dask_partial(data, lo, hi, method, size), lo, hi, degree, method,
                                 bins, steps)

    @classmethod
    def from_chunks(cls, chunks, *, lo, hi, degree=10, method="direct", bins=64, steps=32):
        """Statistics of data given as an iterable of arrays (e.g. a CSV or Parquet file read
        in pieces), never held in memory at once. Equal, bit for bit, to ``from_data`` on
        the concatenation."""
        size = _size(method, degree, bins, steps)
        _check_bounds(lo, hi)
        return cls._from_partial(partial_sums(chunks, lo, hi, method, size), lo, hi, degree,
                                 method, bins, steps)

    @classmethod
    def _from_partial(cls, partial, lo, hi, degree, method, bins, steps):
        if partial.count == 0:
            raise ValueError("data is empty")
        sums = direct_terms(partial) if method == "direct" else partial.totals()
        queries = {"histogram": bins, "adaptive-quantiles": steps}.get(method)
        return cls(method, None if queries else degree, lo, hi, partial.count, sums, queries,
                   frozenset({_fingerprint(partial)}))

    def merge(self, other):
        """Statistics of two disjoint batches (a batch given twice is an error)."""
        _check_compatible(self, other)
        return Statistics(self.method, self.degree, self.lo, self.hi,
                          self.count + other.count, self.sums + other.sums, self.queries,
                          self.batches | other.batches, self.releases | other.releases)

    def sum_sensitivity(self):
        """l2 sensitivity of the computed ``sums`` under replace-one: that of the exact
        sums (paper's sqrt((5K+8)/2) for moments; sqrt(2) for direct coefficients, Bessel,
        attained by a record moving lo -> hi, and for histogram counts; sqrt(T) for T
        quantile counts, each moving by at most 1) plus twice the float error of the
        computed ones (float_error), rounded up: the noise is calibrated to the sums as
        computed (docs/clipping.md, "CDF sums")."""
        if self.method == "moments":
            exact_sums = ceil_sqrt(moment_sensitivity_squared(self.degree))
        elif self.method == "adaptive-quantiles":
            exact_sums = ceil_sqrt(self.queries)
        else:
            exact_sums = ceil_sqrt(COEFFICIENT_SENSITIVITY_SQUARED)
        return ceil_float(Fraction(exact_sums) + 2 * Fraction(self.float_error()))

    def float_error(self):
        """A bound on the l2 distance between the computed sums and the exact sums of the
        mapped records (public values only): streaming.direct_error_bound or
        moment_error_bound, plus one rounding of every sum per merge (|S| <= sqrt(2) N
        for direct sums, sqrt(K + 1) N for power sums); 0 for counts (exact integers)."""
        if self.method not in ("direct", "moments"):
            return 0.0
        bound = (direct_error_bound if self.method == "direct" else moment_error_bound)(
            self.degree, self.count)
        size = 2 if self.method == "direct" else self.degree + 1   # ||S||^2 <= size N^2
        merges = (len(self.batches) - 1) * UNIT * (1 + UNIT) * self.count
        return ceil_float(Fraction(bound) + merges * Fraction(ceil_sqrt(size)))

    def privatize(self, *, epsilon, delta, rng=None):
        """Gaussian noise on the sums, with this batch's own (epsilon, delta): the sums'
        exact rounding to gamma Z (runtime/exact.py, gamma = lattice(sigma))."""
        check_budget(epsilon, delta)
        noise = noise_facts(self.sum_sensitivity(), epsilon, delta)
        (_, sigma, _), = noise
        rng = default_generator(rng)
        noisy = exact.gaussian(self.sums, sigma, rng)
        return PrivateStatistics(self.method, self.degree, self.lo, self.hi, self.count, noisy,
                                 sigma ** 2, ((epsilon, delta, self.count),), self.queries,
                                 self.releases, noise)


def _size(method, degree, bins, steps):
    """The statistic's size parameter: K, bins or steps (validated)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    name, value, limit = {"histogram": ("bins", bins, 10 ** 6),
                          "adaptive-quantiles": ("steps", steps, 10 ** 4),
                          "moments": ("degree", degree, 200)}.get(method, ("degree", degree, 1000))
    if isinstance(value, bool) or not isinstance(value, (int, numpy.integer)) \
            or not (0 if name == "degree" else 1) <= value <= limit:
        raise ValueError(f"{name} must be an integer in {0 if name == 'degree' else 1}..{limit} "
                         f"for the {method} method, got {value!r}")
    return int(value)


def _check_compatible(a, b):
    if (a.method, a.degree, a.queries, a.lo, a.hi) != (b.method, b.degree, b.queries, b.lo, b.hi):
        raise ValueError("statistics differ in method, degree or bounds and cannot be merged")
    if a.batches & b.batches:
        raise ValueError("these statistics share a batch of records (the same object, or the "
                         "same records read again, or the same batch released twice): a merge "
                         "is free only for disjoint batches "
                         "(releasing the same records twice composes: the epsilons and "
                         "deltas add)")


@dataclass(frozen=True)
class PrivateStatistics:
    """Noisy sums of one or more disjoint batches; merging costs no budget (post-processing,
    parallel composition over disjoint records: the merge is (max epsilon, max delta)-DP).
    ``spent`` lists (epsilon, delta, records) and ``noise`` (sum sensitivity, sigma, lattice
    step gamma of the exactly rounded sums) per release; ``batches`` names the batches
    released by random tokens (Statistics.releases, nothing computed from the records), and
    a merge of releases that share one (the same Statistics released twice) is refused.
    That releases with different names hold disjoint records is the caller's promise."""
    method: str
    degree: int
    lo: float
    hi: float
    count: int
    noisy_sums: numpy.ndarray
    noise_variance: float
    spent: tuple
    queries: int = None
    batches: frozenset = frozenset()
    noise: tuple = ()

    def merge(self, other):
        _check_compatible(self, other)
        return PrivateStatistics(self.method, self.degree, self.lo, self.hi, self.count + other.count,
                                 self.noisy_sums + other.noisy_sums,
                                 self.noise_variance + other.noise_variance, self.spent + other.spent,
                                 self.queries, self.batches | other.batches,
                                 self.noise + other.noise)

    def estimate(self):
        """The private CDF from the (merged) noisy statistics."""
        epsilon, delta = (max(spend[i] for spend in self.spent) for i in (0, 1))
        sigma = math.sqrt(self.noise_variance) / self.count
        if self.method == "histogram":
            return _histogram(self, sigma, epsilon, delta)
        if self.method == "adaptive-quantiles":
            return _quantiles(self, sigma, epsilon, delta)
        averages = self.noisy_sums / self.count
        if self.method == "moments":
            tables = _float_tables(self.degree)
            coefficients = tables[1] + tables[0] @ averages
        else:
            coefficients = averages
        sensitivity = max(facts[0] for facts in self.noise)   # of the merged sums
        return _from_coefficients(self, coefficients, sigma, sensitivity / self.count,
                                  epsilon, delta)


@lru_cache(maxsize=32)
def _float_tables(degree):
    tables = cdf_tables(degree)
    """Float64 moment matrix and offset, rounded once from the exact tables (cached,
    read-only)."""
    matrix = numpy.array([[to_float(v) for v in row] for row in tables.moment_matrix.tolist()])
    offset = numpy.array([to_float(v) for v in tables.offset])
    matrix.setflags(write=False)
    offset.setflags(write=False)
    return matrix, offset


def legendre_cdf(coefficients, x):
    """sum_k c_k e_k(x), e_k = sqrt((2k+1)/2) P_k, by Clenshaw (numpy legval)."""
    k = numpy.arange(len(coefficients))
    return legendre.legval(x, numpy.asarray(coefficients) * numpy.sqrt((2 * k + 1) / 2))


def _post_process(values):
    """Isotonic regression (SciPy's PAVA) then clipping to [0, 1]."""
    return numpy.clip(isotonic_regression(values).x, 0.0, 1.0)


def _from_coefficients(source, coefficients, sigma, sensitivity, epsilon, delta):
    reference = numpy.linspace(-1, 1, GRID_SIZE)
    grid = source.lo + (reference + 1) * (source.hi - source.lo) / 2
    values = _post_process(legendre_cdf(coefficients, reference))
    values[-1] = 1.0    # every record is clipped into [lo, hi]: F(hi) = 1 (public)
    return CDFEstimate(source.method, source.lo, source.hi, grid, values, sigma, sensitivity,
                       epsilon, delta, source.degree, source.spent, source.noise)


def _histogram(noisy, sigma, epsilon, delta):
    """HQ: noisy counts of uniform bins, negatives -> 0, cumulated."""
    counts = numpy.maximum(noisy.noisy_sums, 0.0)
    values = numpy.clip(numpy.concatenate([[0.0], numpy.cumsum(counts)]) / noisy.count, 0.0, 1.0)
    values[-1] = 1.0    # every record is clipped into [lo, hi]: F(hi) = 1 (public)
    grid = numpy.linspace(noisy.lo, noisy.hi, noisy.queries + 1)
    return CDFEstimate("histogram", noisy.lo, noisy.hi, grid, values, sigma,
                       math.sqrt(2) / noisy.count, epsilon, delta, None, noisy.spent, noisy.noise)


def _quantiles(noisy, sigma, epsilon, delta):
    """AQ: noisy counts #{x_n <= p} at the public midpoints p of the widest gaps.

    Each count has sensitivity 1; T Gaussian queries compose exactly like one Gaussian
    query of sensitivity sqrt(T) (Gaussian DP), so each gets that sigma.
    """
    points = numpy.concatenate([[-1.0, 1.0], quantile_points(noisy.queries)])
    order = numpy.argsort(points, kind="stable")
    known = numpy.concatenate([[0.0, 1.0], noisy.noisy_sums / noisy.count])[order]
    values = _post_process(known)
    values[0], values[-1] = 0.0, 1.0
    grid = noisy.lo + (points[order] + 1) * (noisy.hi - noisy.lo) / 2
    return CDFEstimate("adaptive-quantiles", noisy.lo, noisy.hi, grid,
                       numpy.maximum.accumulate(values), sigma, 1 / noisy.count, epsilon, delta,
                       None, noisy.spent, noisy.noise)


def estimate(data, *, lo, hi, epsilon, delta, degree=10, method="direct", rng=None,
             bins=64, steps=32, total_degree=None):
    """(epsilon, delta)-DP CDF of ``data`` in public bounds [lo, hi].

    method: "moments" (paper's PP), "direct" (noise on orthonormal coefficients, same
    privacy, far less noise), "histogram" (HQ, ``bins``), "adaptive-quantiles" (AQ, ``steps``).
    ``data`` may be an array, or a Dask array or DataFrame column (sums per partition,
    reduced as a tree; the noise is drawn once, here). Statistics are summed in chunks,
    so memory beyond the input does not grow with N. A NaN or -inf record is taken as lo,
    +inf as hi (public values, streaming.public_values; docs/clipping.md, "CDF sums"),
    so no record stops a release. Data of shape (N, k), k >= 2, with
    per-column bounds, get the joint CDF (direct or histogram; ``degree`` per column,
    optionally ``total_degree``): see :func:`gpcompiler.cdf.joint.joint_estimate`.
    """
    if not _is_dask(data) and numpy.ndim(data) == 2 and numpy.shape(data)[1] >= 2:
        from .joint import joint_estimate
        return joint_estimate(data, lo=lo, hi=hi, epsilon=epsilon, delta=delta, degree=degree,
                              total_degree=total_degree, method=method, bins=bins, rng=rng)
    if total_degree is not None:
        raise ValueError("total_degree applies to data of several columns (N, k)")
    if degree == AUTO:
        return _auto_estimate(data, lo, hi, epsilon, delta, method, default_generator(rng))
    _size(method, degree, bins, steps)
    _size("moments" if method == "moments" else "direct", degree, bins, steps)
    check_budget(epsilon, delta)
    rng = default_generator(rng)
    statistics = Statistics.from_data(data, lo=lo, hi=hi, degree=degree, method=method,
                                      bins=bins, steps=steps)
    return statistics.privatize(epsilon=epsilon, delta=delta, rng=rng).estimate()


def _auto_estimate(data, lo, hi, epsilon, delta, method, rng):
    """degree="auto" (gpcompiler.cdf.degree): the exponential mechanism with a public share
    of epsilon chooses K from the public candidates on the coefficients up to the largest,
    then the direct release at K with the rest; ``spent`` lists both steps."""
    from .degree import CANDIDATES, choose_degree
    if method != "direct":
        raise ValueError(f"degree='auto' needs the direct method, got {method!r}")
    check_budget(epsilon, delta)
    top = Statistics.from_data(data, lo=lo, hi=hi, degree=max(CANDIDATES), method="direct")
    degree, selection, release = choose_degree(top.sums / top.count, top.count, epsilon,
                                               delta, rng)
    chosen = Statistics("direct", degree, lo, hi, top.count, top.sums[:degree + 1], None,
                        top.batches, top.releases)
    found = chosen.privatize(epsilon=release, delta=delta, rng=rng).estimate()
    return dataclasses.replace(found, epsilon=epsilon, spent=(
        (selection, 0.0, top.count), (release, delta, top.count)))


def expected_l2_errors(degree, n, epsilon, delta):
    """Root mean squared L2 error (on [-1, 1]) of the noise, before post-processing:
    direct: sigma_c sqrt(K+1); moments: sigma_mu sqrt(trace(A A^T))."""
    matrix, _ = _float_tables(degree)
    sigma_direct = analytic_gaussian_sigma(epsilon, delta, ceil_sqrt(COEFFICIENT_SENSITIVITY_SQUARED)) / n
    sigma_moments = analytic_gaussian_sigma(epsilon, delta, ceil_sqrt(moment_sensitivity_squared(degree))) / n
    return {"direct": sigma_direct * math.sqrt(degree + 1),
            "moments": sigma_moments * math.sqrt(float(numpy.sum(matrix ** 2)))}


def distances(estimate_, data):
    """Kolmogorov (sup) and L2 (on the mapped [-1, 1] scale) distances to the empirical CDF."""
    x = numpy.sort(public_values(data, estimate_.lo, estimate_.hi))
    reference = numpy.linspace(estimate_.lo, estimate_.hi, 20001)
    empirical = numpy.searchsorted(x, reference, side="right") / x.size
    private = estimate_.cdf(reference)
    jumps = numpy.unique(x)
    at = estimate_.cdf(jumps)
    right = numpy.searchsorted(x, jumps, side="right") / x.size
    left = numpy.searchsorted(x, jumps, side="left") / x.size
    kolmogorov = max(numpy.abs(private - empirical).max(), numpy.abs(at - right).max(),
                     numpy.abs(at - left).max())
    step = 2 / (reference.size - 1)
    l2 = math.sqrt(float(numpy.sum((private - empirical) ** 2) * step))
    return kolmogorov, l2
