"""Multivariate DP CDFs (the second paper's direct method on a box, with the first
paper's Sec. 3.2 "Multivariate functions"; docs/design.md, "CDF estimation").

Each column is mapped affinely from its public bounds to [-1, 1] (clipped). The empirical
joint CDF F(y) = (1/N) sum_n prod_i 1[x_ni <= y_i] has tensor Legendre coefficients
c_a = (1/N) sum_n prod_i int_(x_ni)^1 e_(a_i), products of the 1-D direct terms. Replacing
one record x by x' changes N F by 1_Q(x') - 1_Q(x), Q(x) = prod_i [x_i, 1]: their
difference has squared L2 norm vol(Q(x) sym. diff. Q(x')) <= vol([-1, 1]^k) = 2^k, and the
projection onto the span is non-expansive, so the l2 sensitivity of the sums is sqrt(2^k)
(of c: sqrt(2^k)/N). It is attained for every degree: x = (1, ..., 1), x' = (-1, ..., -1)
turns 1_Q from a null set into the box, sqrt(2^k) e_0, in the span.
"""
import dataclasses
import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy
from numpy.polynomial import legendre
from scipy.interpolate import RegularGridInterpolator
from scipy.optimize import isotonic_regression

from ..runtime.rounding import ceil_float, ceil_sqrt, floor_float
from ..runtime import exact
from ..runtime.secure import default_generator
from .release import CDFEstimate, check_budget, noise_facts
from .gaussian import analytic_gaussian_sigma
from .streaming import CHUNK, direct_factors, direct_sums, factor_errors, gamma, public_values

JOINT_METHODS = ("direct", "histogram")
GRID_POINTS = {2: 129, 3: 33}
MAX_COLUMNS = 5     # the released reference grid has 17^k values beyond k = 3
MAX_COEFFICIENTS = 100_000   # the tensor of coefficient sums, (degree + 1)^k


@dataclass(frozen=True)
class JointCDFEstimate:
    """A private joint CDF on the box prod_i [lo_i, hi_i]: values on a tensor grid,
    non-decreasing in each coordinate, in [0, 1]; multilinear between grid points.
    ``spent`` is the ledger, one (epsilon, delta, records) per step: the release, preceded
    with degree="auto" by each column's degree selection (delta 0)."""
    method: str
    lo: tuple
    hi: tuple
    grids: tuple
    values: numpy.ndarray
    sigma: float
    sensitivity: float
    epsilon: float
    delta: float
    degree: tuple = None
    spent: tuple = ()
    noise: tuple = ()  # (sum sensitivity, sigma, lattice step) of the release's noisy sums

    def cdf(self, points):
        """F~ at points (..., k): 0 below lo in any coordinate, the grid's edge above hi."""
        points = numpy.asarray(points, dtype=float)
        below = numpy.any(points < numpy.array(self.lo), axis=-1)
        clipped = numpy.clip(points, self.lo, self.hi)
        return numpy.where(below, 0.0, RegularGridInterpolator(self.grids, self.values)(clipped))

    def marginal(self, axis):
        """The released marginal CDF of one column: F~ with every other coordinate at hi."""
        index = tuple(slice(None) if i == axis else -1 for i in range(len(self.grids)))
        return CDFEstimate(self.method, self.lo[axis], self.hi[axis], self.grids[axis],
                           self.values[index], self.sigma, self.sensitivity, self.epsilon,
                           self.delta)

    def conditional_quantile(self, p, axis, given, upto):
        """Quantile p of column ``axis`` among records with column ``given`` <= ``upto``,
        read from the released CDF: F~(.., x, .., upto, ..)/F~(.., hi, .., upto, ..)."""
        point = numpy.array(self.hi, dtype=float)
        point[given] = upto
        line = numpy.repeat(point[None], self.grids[axis].size, axis=0)
        line[:, axis] = self.grids[axis]
        values = self.cdf(line)
        total = values[-1]
        if not total > 0:
            raise ValueError(f"the released CDF puts no mass on column {given} <= {upto}")
        conditional = CDFEstimate(self.method, self.lo[axis], self.hi[axis], self.grids[axis],
                                  numpy.clip(values / total, 0.0, 1.0), self.sigma,
                                  self.sensitivity, self.epsilon, self.delta)
        return conditional.quantile(p)


def sum_sensitivity(k):
    """l2 sensitivity sqrt(2^k) of the exact tensor coefficient sums (module docstring)."""
    return ceil_sqrt(2 ** k)


def computed_sum_sensitivity(degrees, count):
    """sqrt(2^k) plus twice tensor_error_bound, rounded up: the sensitivity of the sums as
    coefficient_sums computes them, to which the noise is calibrated (no slack)."""
    return ceil_float(Fraction(sum_sensitivity(len(degrees)))
                      + 2 * Fraction(tensor_error_bound(degrees, count)))


def tensor_error_bound(degrees, count):
    """A bound on the l2 distance between coefficient_sums of any ``count`` records and the
    exact sums (public values only, rounded up). Per record and column the factors err by
    at most b_k with |F_k| <= v_k (streaming.factor_errors); with beta = max b_k / v_k, a
    product of the k factors (k - 1 roundings) is within prod v ((1 + beta)^k
    (1 + gamma_(k-1)) - 1) of the exact one and below prod v (1 + beta)^k (1 + gamma_(k-1));
    a chunk's sum of at most CHUNK such terms errs by gamma_min(CHUNK, N) of the sum of
    their sizes (any order), and the chunk sums, added pairwise (each in at most
    D = 2 ceil(log2 chunks) + 1 additions), by gamma_D more. Over the multi-indices,
    sum_a prod_i v_(a_i)^2 <= prod_i sum_(k <= d_i) v_k^2."""
    top = max(degrees)
    bounds, sizes = factor_errors(top)
    beta = max(b / v for b, v in zip(bounds, sizes))
    k = len(degrees)
    grown = (1 + beta) ** k * (1 + gamma(k - 1))
    chunks = -(-count // CHUNK)
    depth = 2 * max(chunks - 1, 0).bit_length() + 1
    chunk = gamma(min(CHUNK, count))
    per_unit = grown - 1 + (chunk + gamma(depth) * (1 + chunk)) * grown
    energy = math.prod(sum(v * v for v in sizes[:d + 1]) for d in degrees)
    return ceil_sqrt((count * per_unit) ** 2 * energy)


def _reference(data, lo, hi):
    data = numpy.asarray(data, dtype=float)
    if data.ndim != 2 or not 2 <= data.shape[1] <= MAX_COLUMNS or data.shape[0] == 0:
        raise ValueError(f"data must have shape (N, k) with N >= 1 records of 2 <= k <= "
                         f"{MAX_COLUMNS} columns, got {data.shape}")
    k = data.shape[1]
    lo, hi = (_per_column(name, b, k, float) for name, b in (("lo", lo), ("hi", hi)))
    if not (numpy.all(numpy.isfinite(lo)) and numpy.all(numpy.isfinite(hi)) and numpy.all(lo < hi)
            and numpy.all(numpy.isfinite(2 * (hi - lo)))):
        raise ValueError(f"public bounds need finite lo < hi with 2 (hi - lo) finite per "
                         f"column, got lo={lo}, hi={hi}")
    # clipped to [-1, 1]; a NaN or -inf value is the column's lo, +inf its hi (fmax and
    # fmin take the number over a NaN: streaming.public_values)
    return numpy.fmin(numpy.fmax(2 * (data - lo) / (hi - lo) - 1, -1.0), 1.0), tuple(lo), tuple(hi)


def multi_indices(degrees, total_degree=None):
    """Tensor multi-indices (last column fastest), restricted to |a| <= total_degree."""
    return [a for a in itertools.product(*(range(d + 1) for d in degrees))
            if total_degree is None or sum(a) <= total_degree]


def coefficient_sums(x, degrees, total_degree=None):
    """sum_n prod_i int_(x_ni)^1 e_(a_i), for each multi-index a (not private): per chunk
    of CHUNK records the tensor of the products of the factors (streaming.direct_factors),
    the chunk tensors added pairwise (a binary counter). Error: tensor_error_bound."""
    letters = "abcdefghij"[:len(degrees)]
    formula = ",".join(f"n{c}" for c in letters) + "->" + letters
    stack = []  # (level, the sum of 2^level consecutive chunks)
    for start in range(0, x.shape[0], CHUNK):
        rows = x[start:start + CHUNK]
        part, level = numpy.einsum(formula, *(direct_factors(rows[:, i], d)
                                              for i, d in enumerate(degrees))), 0
        while stack and stack[-1][0] == level:
            part += stack.pop()[1]
            level += 1
        stack.append((level, part))
    full = stack.pop()[1]
    while stack:
        full += stack.pop()[1]
    return numpy.array([full[a] for a in multi_indices(degrees, total_degree)])


def monotone(values):
    """Non-decreasing in each coordinate, in [0, 1]: isotonic regression (PAVA) along one
    axis after another, then clipping. Each pass keeps the earlier axes monotone, because
    the isotonic regression is order-preserving (u <= v pointwise gives iso u <= iso v)."""
    out = numpy.asarray(values, dtype=float)
    for axis in range(out.ndim):
        moved = numpy.moveaxis(out, axis, -1)
        flat = moved.reshape(-1, moved.shape[-1])
        fitted = numpy.array([isotonic_regression(row).x for row in flat])
        out = numpy.moveaxis(fitted.reshape(moved.shape), -1, axis)
    return numpy.clip(out, 0.0, 1.0)


def joint_estimate(data, *, lo, hi, epsilon, delta, degree=8, total_degree=None,
                   method="direct", bins=16, rng=None):
    """(epsilon, delta)-DP joint CDF of data (N, k) in public per-column bounds.

    direct: Gaussian noise (analytic Gaussian mechanism, sensitivity sqrt(2^k)/N) on the
    tensor Legendre coefficients of degree ``degree`` per column (an int or one per
    column), optionally restricted to total degree; histogram: noisy counts of
    ``bins``^k cells (sensitivity sqrt(2)), negatives set to 0, cumulated per axis. A NaN
    or -inf value is taken as its column's lo, +inf as its hi (public values).
    """
    if method not in JOINT_METHODS:
        raise ValueError(f"method must be one of {', '.join(JOINT_METHODS)}, got {method!r}")
    check_budget(epsilon, delta)
    x, lo, hi = _reference(data, lo, hi)
    n, k = x.shape
    rng = default_generator(rng)
    if method == "histogram":
        return _histogram(x, lo, hi, epsilon, delta, bins, rng)
    if isinstance(degree, str) and degree == "auto":
        return _auto_joint(x, lo, hi, epsilon, delta, total_degree, rng)
    return _direct(x, lo, hi, epsilon, delta, _degrees(degree, k, total_degree), total_degree,
                   rng)


def _direct(x, lo, hi, epsilon, delta, degrees, total_degree, rng):
    """The direct release of mapped data x (N, k) at per-column ``degrees``."""
    n, k = x.shape
    sums, noise = _noisy_sums(x, degrees, total_degree, epsilon, delta, rng)
    (sensitivity, sigma, _), = noise
    noisy = sums / n
    reference = numpy.linspace(-1, 1, GRID_POINTS.get(k, 17))
    values = numpy.zeros((reference.size,) * k)
    scale = [legendre.legvander(reference, d) * numpy.sqrt((2 * numpy.arange(d + 1) + 1) / 2)
             for d in degrees]
    for c, a in zip(noisy, multi_indices(degrees, total_degree)):
        values += c * math.prod(numpy.ix_(*(s[:, a_i] for s, a_i in zip(scale, a))))
    grids = tuple(l + (reference + 1) * (h - l) / 2 for l, h in zip(lo, hi))
    return JointCDFEstimate("direct", lo, hi, grids, monotone(values), sigma / n,
                            sensitivity / n, epsilon, delta, degrees, ((epsilon, delta, n),),
                            noise)


def _auto_joint(x, lo, hi, epsilon, delta, total_degree, rng):
    """degree="auto" per column (gpcompiler.cdf.degree): column i's degree is chosen by
    the exponential mechanism with epsilon_s/k on its marginal's coefficients, the score's
    noise term that of a tensor release of degree K in every column, lambda (K + 1)^k
    sigma^2 (sensitivity sqrt(3/2)/N per column as in 1-D: a record's move changes column
    i's marginal coefficients as one 1-D record's; plus the scores' float error, as in
    1-D: degree.computed_score_sensitivity); candidates with (K + 1)^k above
    MAX_COEFFICIENTS are left out (public). The k selections compose to epsilon_s; the
    tensor release takes epsilon_r: (epsilon, delta)-DP."""
    from . import degree as auto
    n, k = x.shape
    candidates = tuple(c for c in auto.CANDIDATES if (c + 1) ** k <= MAX_COEFFICIENTS
                       and c <= 200)
    selection, release = auto.split_budget(epsilon)
    share = floor_float(Fraction(selection) / k)
    sigma = analytic_gaussian_sigma(release, delta, sum_sensitivity(k)) / n
    energy = [(c + 1.0) ** k * auto.NOISE_WEIGHT * sigma ** 2 for c in candidates]
    sensitivity = auto.computed_score_sensitivity(n, candidates, energy)
    degrees = []
    for i in range(k):
        values = auto.tail_scores(direct_sums(x[:, i], max(candidates)) / n, candidates, energy)
        degrees.append(candidates[auto.exponential_mechanism(values, sensitivity, share, rng)])
    found = _direct(x, lo, hi, release, delta, _degrees(tuple(degrees), k, total_degree),
                    total_degree, rng)
    return dataclasses.replace(found, epsilon=epsilon,
                               spent=((share, 0.0, n),) * k + found.spent)


def _per_column(name, value, k, dtype=None):
    """``value`` (one, or one per column) as an array of k entries; else a ValueError naming
    the parameter."""
    array = numpy.asarray(value, dtype=dtype)
    if array.ndim > 1 or array.size not in (1, k):
        raise ValueError(f"{name} must be one value or one per column ({k}), got {value!r}")
    return numpy.broadcast_to(array, (k,))


def _degrees(degree, k, total_degree=None):
    degrees = tuple(_per_column("degree", degree, k).tolist())
    if any(isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= 200 for d in degrees):
        raise ValueError(f"degree must be an integer in 1..200 per column, got {degree!r}")
    size = math.prod(d + 1 for d in degrees)
    if size > MAX_COEFFICIENTS:
        raise ValueError(f"degree {list(degrees)} gives {size} "
                         f"tensor coefficients; at most {MAX_COEFFICIENTS} (lower the degree)")
    if total_degree is not None and (isinstance(total_degree, bool) or
                                     not isinstance(total_degree, int) or total_degree < 1):
        raise ValueError(f"total_degree must be a positive integer, got {total_degree!r}")
    return degrees


def private_coefficients(x, degrees, total_degree, epsilon, delta, rng):
    """Noisy tensor coefficients of the empirical CDF of mapped data x (N, k) and their
    noise scale: Gaussian noise of the analytic Gaussian mechanism for the computed sums'
    sensitivity (sqrt(2^k) and their float error: computed_sum_sensitivity), divided by N."""
    sums, ((_, sigma, _),) = _noisy_sums(x, degrees, total_degree, epsilon, delta, rng)
    return sums / x.shape[0], sigma / x.shape[0]


def _noisy_sums(x, degrees, total_degree, epsilon, delta, rng):
    """The noisy tensor sums and the facts of their noise (release.noise_facts)."""
    noise = noise_facts(computed_sum_sensitivity(degrees, x.shape[0]), epsilon, delta)
    (_, sigma, _), = noise
    return exact.gaussian(coefficient_sums(x, degrees, total_degree), sigma, rng), noise


def _histogram(x, lo, hi, epsilon, delta, bins, rng):
    """The baseline: a k-dimensional histogram (replace-one moves two counts by 1)."""
    n, k = x.shape
    counts, _ = numpy.histogramdd(x, bins=bins, range=[(-1, 1)] * k)
    noise = noise_facts(ceil_sqrt(2), epsilon, delta)
    (sensitivity, sigma, _), = noise
    noisy = numpy.maximum(exact.gaussian(counts, sigma, rng), 0.0)
    values = noisy
    for axis in range(k):
        values = numpy.cumsum(values, axis=axis)
    values = numpy.pad(values / n, [(1, 0)] * k)
    grids = tuple(numpy.linspace(l, h, bins + 1) for l, h in zip(lo, hi))
    return JointCDFEstimate("histogram", lo, hi, grids, numpy.clip(values, 0.0, 1.0), sigma / n,
                            sensitivity / n, epsilon, delta, spent=((epsilon, delta, n),),
                            noise=noise)


def joint_distances(estimate_, data, points=401):
    """Kolmogorov distance to the empirical joint CDF, on a grid of ``points`` per column
    (2-D: sorted counts; a sup over a grid, not over every data corner)."""
    data = numpy.stack([public_values(column, lo, hi) for column, lo, hi in
                        zip(numpy.asarray(data, dtype=float).T, estimate_.lo, estimate_.hi)], 1)
    axes = [numpy.linspace(l, h, points) for l, h in zip(estimate_.lo, estimate_.hi)]
    cells = tuple(numpy.searchsorted(a, data[:, i], side="left") for i, a in enumerate(axes))
    counts = numpy.zeros((points,) * len(axes))
    numpy.add.at(counts, cells, 1.0)
    for axis in range(len(axes)):
        counts = numpy.cumsum(counts, axis=axis)
    empirical = counts / data.shape[0]
    mesh = numpy.stack(numpy.meshgrid(*axes, indexing="ij"), axis=-1)
    return float(numpy.abs(estimate_.cdf(mesh) - empirical).max())
