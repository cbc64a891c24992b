"""Streaming statistics (issue 14): CDF sums in fixed chunks with memory independent of N,
``Statistics.from_chunks``; PrivFuncSeg and PrivFuncSelect on prefix sums."""
import itertools
import math
import tracemalloc
from fractions import Fraction

import mpmath
import numpy
import pytest

from conftest import generated
from gpcompiler import cdf
from gpcompiler.adaptive import piecewise, priv_func_seg, seg, select
from gpcompiler.adaptive.curve import make_curve
from gpcompiler.cdf import streaming
from gpcompiler.cdf.release import record_contributions

METHODS = ("moments", "direct", "histogram", "adaptive-quantiles")


def _split(values, sizes):
    cuts = numpy.cumsum(sizes)
    return numpy.split(values, cuts[cuts < values.size])


@pytest.mark.parametrize("method", METHODS)
def test_from_chunks_equals_from_data_bit_for_bit(method):
    rng = numpy.random.default_rng(0)
    data = rng.normal(0.3, 0.4, 3 * streaming.CHUNK + 1234)
    pieces = _split(data, [1, 999, streaming.CHUNK + 7, 0, 50000, 2 * streaming.CHUNK])
    kwargs = dict(lo=-1.0, hi=1.5, degree=9, method=method, bins=16, steps=20)
    whole = cdf.Statistics.from_data(data, **kwargs)
    streamed = cdf.Statistics.from_chunks(iter(pieces), **kwargs)
    assert streamed.count == data.size and numpy.array_equal(streamed.sums, whole.sums)
    release = cdf.estimate(data, epsilon=1.0, delta=1e-6, rng=3, **kwargs)
    again = streamed.privatize(epsilon=1.0, delta=1e-6, rng=3).estimate()
    assert numpy.array_equal(release.values, again.values)
    assert numpy.array_equal(release.grid, again.grid) and release.sigma == again.sigma


@pytest.mark.parametrize("method", ["moments", "direct"])
def test_chunked_sums_equal_per_record_contributions(method):
    """Against the per-record terms (legvander / float pow) summed at once (numerical:
    relative 1e-12 of the sum of absolute terms)."""
    data = numpy.random.default_rng(1).uniform(-0.2, 1.2, 2 * streaming.CHUNK + 99)
    x = cdf.estimators.map_to_reference(data, 0.0, 1.0)
    terms = record_contributions(x, 14, method)
    got = cdf.Statistics.from_data(data, lo=0.0, hi=1.0, degree=14, method=method).sums
    assert numpy.all(numpy.abs(got - terms.sum(axis=0)) <= 1e-12 * numpy.abs(terms).sum(axis=0))


def test_direct_sums_against_a_40_digit_reference_within_the_stated_bound():
    """The direct sums (Chebyshev recurrence, exact Legendre combination) of 3 chunks of
    records (ends, a subnormal, values near +-1 and random ones, each repeated) against
    mpmath at 40 digits: within direct_error_bound (4e-13 N in l2 at K = 40: rigorous and
    pessimistic); the largest error measured is 1.05e-16 N."""
    rng = numpy.random.default_rng(7)
    distinct = numpy.r_[-1.0, 1.0, 0.0, 5e-324, -1e-300, 1 - 2.0 ** -52, -1 + 2.0 ** -52,
                        numpy.cos(numpy.linspace(0, 1e-3, 20)), rng.uniform(-1, 1, 150)]
    repeats = rng.integers(1, 5 * streaming.CHUNK // distinct.size, distinct.size)
    data = rng.permutation(numpy.repeat(distinct, repeats))
    degree = 40
    got = cdf.Statistics.from_data(data, lo=-1.0, hi=1.0, degree=degree).sums
    x = streaming.to_reference(distinct, -1.0, 1.0)
    with mpmath.workdps(40):
        totals = [mpmath.mpf(0)] * (degree + 2)
        for value, count in zip(x.tolist(), repeats.tolist()):
            previous, current = mpmath.mpf(1), mpmath.mpf(value)
            totals[0] += count
            totals[1] += count * current
            for j in range(2, degree + 2):
                previous, current = current, ((2 * j - 1) * value * current
                                              - (j - 1) * previous) / j
                totals[j] += count * current
        below = [totals[0]] + totals[:-2]
        want = [-(totals[k + 1] - below[k]) / mpmath.sqrt(2 * (2 * k + 1))
                for k in range(degree + 1)]
        errors = numpy.array([float(mpmath.mpf(g) - w) for g, w in zip(got.tolist(), want)])
    n = data.size
    assert 2 * streaming.CHUNK < n < 4 * streaming.CHUNK
    assert numpy.linalg.norm(errors) <= streaming.direct_error_bound(degree, n) < 5e-13 * n
    assert numpy.abs(errors).max() <= 1e-15 * n


def test_power_sums_against_exact_rationals_within_the_stated_bound():
    """The moments method's power sums of 3 chunks of records (ends, a subnormal, values
    near +-1 and random ones, each repeated) against exact rational sums: within
    moment_error_bound (rigorous, pessimistic: under 4e-13 N in l2 at K = 6)."""
    rng = numpy.random.default_rng(8)
    distinct = numpy.r_[-1.0, 1.0, 0.0, 5e-324, -1e-300, 1 - 2.0 ** -52, -1 + 2.0 ** -52,
                        rng.uniform(-1, 1, 100), 1e-100 * rng.uniform(-1, 1, 5)]
    repeats = rng.integers(1, 5 * streaming.CHUNK // distinct.size, distinct.size)
    data = rng.permutation(numpy.repeat(distinct, repeats))
    degree = 6
    got = cdf.Statistics.from_data(data, lo=-1.0, hi=1.0, degree=degree, method="moments").sums
    x = streaming.to_reference(distinct, -1.0, 1.0)
    want = [sum(count * Fraction(value) ** i for value, count in zip(x.tolist(), repeats.tolist()))
            for i in range(1, degree + 2)]
    errors = numpy.array([float(Fraction(g) - w) for g, w in zip(got.tolist(), want)])
    n = data.size
    assert 2 * streaming.CHUNK < n < 4 * streaming.CHUNK
    assert 0 < numpy.linalg.norm(errors) <= streaming.moment_error_bound(degree, n) < 4e-13 * n


@pytest.mark.parametrize("method", ["direct", "moments", "histogram"])
def test_the_noise_is_calibrated_to_the_computed_sums(method):
    """sigma is the analytic Gaussian's at the exact sums' sensitivity plus twice the
    computed sums' float error (rounded up), one more rounding of every sum per merge;
    counts have none."""
    data = numpy.random.default_rng(9).uniform(0, 1, 5000)
    one = cdf.Statistics.from_data(data, lo=0.0, hi=1.0, degree=8, method=method)
    two = cdf.Statistics.from_data(data[:3000], lo=0.0, hi=1.0, degree=8, method=method).merge(
        cdf.Statistics.from_data(data[3000:], lo=0.0, hi=1.0, degree=8, method=method))
    exact_sums = {"direct": math.sqrt(2), "histogram": math.sqrt(2),
                  "moments": math.sqrt((5 * 8 + 8) / 2)}[method]
    bound = {"direct": streaming.direct_error_bound, "moments": streaming.moment_error_bound,
             "histogram": lambda k, n: 0.0}[method](8, 5000)
    assert Fraction(one.sum_sensitivity()) >= Fraction(exact_sums) + 2 * Fraction(bound)
    assert one.sum_sensitivity() == pytest.approx(exact_sums + 2 * bound, rel=1e-15)
    assert (two.sum_sensitivity() > one.sum_sensitivity()) == (method != "histogram")
    released = one.privatize(epsilon=1.0, delta=1e-6, rng=1)
    assert released.noise_variance == cdf.analytic_gaussian_sigma(
        1.0, 1e-6, one.sum_sensitivity()) ** 2
    assert released.estimate().sensitivity == one.sum_sensitivity() / 5000


def test_counts_are_exact():
    data = numpy.random.default_rng(2).uniform(0, 10, streaming.CHUNK + 5000)
    data[:100] = 5.0                      # ties at a quantile point
    x = 2 * data / 10 - 1
    histogram = cdf.Statistics.from_data(data, lo=0, hi=10, method="histogram", bins=10)
    assert numpy.array_equal(histogram.sums, numpy.histogram(x, bins=10, range=(-1, 1))[0])
    quantiles = cdf.Statistics.from_data(data, lo=0, hi=10, method="adaptive-quantiles", steps=7)
    points = streaming.quantile_points(7)
    assert points.tolist() == [0.0, -0.5, 0.5, -0.75, -0.25, 0.25, 0.75]
    assert numpy.array_equal(quantiles.sums, [(x <= p).sum() for p in points])


def test_exact_combination_does_not_depend_on_order():
    values = [1e16, 1.0, -1e16, 3.5, 2.0 ** -60, -7.25, 1e-300]
    exact = sum(Fraction(v) for v in values)
    totals = []
    for order in itertools.islice(itertools.permutations(values), 0, 5040, 97):
        partial = streaming.Partial(1, True)
        for v in order:
            partial.add(1, numpy.array([v]))
        totals.append(partial.totals()[0])
    assert set(totals) == {float(exact)}
    left, right = streaming.Partial(1, True), streaming.Partial(1, True)
    left.add(3, numpy.array([1e16])).add(1, numpy.array([1.0]))
    right.add(2, numpy.array([-1e16])).add(5, numpy.array([1.0]))
    assert left.merge(right).totals()[0] == 2.0 and left.count == 11


def test_csv_read_in_pieces(tmp_path):
    data = numpy.round(numpy.random.default_rng(4).gamma(2.0, 300.0, 20000), 2)
    path = tmp_path / "wages.csv"
    path.write_text("wage\n" + "\n".join(f"{v:.2f}" for v in data) + "\n")

    def pieces():
        with open(path) as handle:
            next(handle)
            while block := list(itertools.islice(handle, 3000)):
                yield numpy.array(block, dtype=float)
    streamed = cdf.Statistics.from_chunks(pieces(), lo=0, hi=2500, degree=12)
    assert numpy.array_equal(streamed.sums, cdf.Statistics.from_data(data, lo=0, hi=2500,
                                                                     degree=12).sums)
    with pytest.raises(ValueError, match="data is empty"):
        cdf.Statistics.from_chunks(iter([]), lo=0, hi=1)
    with_nan = cdf.Statistics.from_chunks([numpy.ones(3), [numpy.nan]], lo=0, hi=1)
    assert numpy.array_equal(with_nan.sums, cdf.Statistics.from_data([1, 1, 1, 0], lo=0,
                                                                     hi=1).sums)


@pytest.mark.parametrize("method", ["moments", "direct"])
def test_memory_does_not_grow_with_the_number_of_records(method):
    """Peak traced memory for 1.5M records (12 MB) streamed in pieces, and for an in-memory
    array beyond the array itself: under 16 chunks (8 MB), while one N x (K + 2) array of
    per-record terms, as before, is 260 MB."""
    def pieces():
        rng = numpy.random.default_rng(5)
        for _ in range(15):
            yield rng.uniform(0, 1, 100000)
    data = numpy.random.default_rng(6).uniform(0, 1, 1500000)
    for run in (lambda: cdf.Statistics.from_chunks(pieces(), lo=0, hi=1, degree=20, method=method),
                lambda: cdf.Statistics.from_data(data, lo=0, hi=1, degree=20, method=method)):
        tracemalloc.start()
        run()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 16 * streaming.CHUNK * 8


def _reference_project(curve, breakpoints, degree):
    """The projection before issue 14 (legvander on every node, add.at), kept as a reference;
    with order max(p + 1, 2), exact for the squared residual also when p = 0 (it was p + 1)."""
    from numpy.polynomial import legendre
    k, m, n = len(breakpoints) - 1, degree + 1, curve.value_dim
    a, b, ya, yb, segment = piecewise._pieces(curve, breakpoints)
    nodes, weights = legendre.leggauss(max(degree + 1, 2))
    lam = (nodes + 1) / 2
    x = a[:, None] + (b - a)[:, None] * lam
    w = (b - a)[:, None] * weights / 2
    q = ya[:, None, :] * (1 - lam)[None, :, None] + yb[:, None, :] * lam[None, :, None]
    lo, hi = breakpoints[segment], breakpoints[segment + 1]
    basis = piecewise.local_basis(x, lo[:, None], hi[:, None], degree)
    contributions = numpy.einsum("pg,pgk,pgr->pkr", w, basis, q)
    coefficients = numpy.zeros((k, m, n))
    numpy.add.at(coefficients, segment, contributions)
    fitted = numpy.einsum("pgk,pkr->pgr", basis, coefficients[segment])
    residual = numpy.zeros(k)
    numpy.add.at(residual, segment, numpy.einsum("pg,pgr->p", w, (q - fitted) ** 2))
    return coefficients, residual


def _random_curve(seed, value_dim, domain=(-1.0, 3.0)):
    rng = numpy.random.default_rng(seed)
    size = int(rng.integers(2, 400))
    t = numpy.sort(rng.uniform(domain[0] + 0.3, domain[1] - 0.1, size))
    y = numpy.cumsum(rng.normal(size=(size, value_dim)), axis=0)
    return make_curve(t, y, domain)


@pytest.mark.parametrize("seed, value_dim, degree", [(0, 1, 1), (1, 2, 1), (2, 1, 3), (3, 2, 0),
                                                     (4, 1, 5)])
def test_dyadic_projections_equal_the_previous_projection_at_every_level(seed, value_dim, degree):
    """Numerical: 1e-9 relative, and residuals where q is a polynomial on a whole segment
    (0 in exact arithmetic) within 1e-24 ||q||^2 of 0."""
    curve = _random_curve(seed, value_dim)
    projections = piecewise.DyadicProjections(curve, degree, 9)
    zero = 1e-24 * curve.norm_squared()
    for level in range(10):
        grid = piecewise.dyadic_grid(*curve.domain, level)
        coefficients, residual = _reference_project(curve, grid, degree)
        scale = numpy.abs(coefficients).max()
        assert numpy.abs(projections.coefficients[level] - coefficients).max() <= 1e-9 * scale
        assert numpy.allclose(projections.residuals[level], residual, rtol=1e-9, atol=zero)
        assert projections.residual(grid) == pytest.approx(residual.sum(), rel=1e-9)
        again, direct = piecewise.project(curve, grid, degree)
        assert numpy.abs(again.coefficients - coefficients).max() <= 1e-12 * scale
        assert numpy.allclose(direct, residual, rtol=1e-9, atol=zero)
    mixed = numpy.array([-1.0, 0.0, 0.5, 0.75, 1.0, 3.0])
    coefficients, _ = _reference_project(curve, mixed, degree)
    assert numpy.allclose(projections.function(mixed).coefficients, coefficients, rtol=1e-9,
                          atol=1e-9 * numpy.abs(coefficients).max())


def test_priv_func_seg_projects_once(monkeypatch):
    """O(S + 2^L): at most two passes over a short curve (2^7 segments, then 2^14 if the
    SVT goes past level 7), one over a long one, however many ReduceSeg steps run (before
    issue 14: one pass per level and per step)."""
    calls = []
    original = piecewise.project
    monkeypatch.setattr(piecewise, "project", lambda *a: calls.append(a[1].size) or original(*a))
    t = numpy.linspace(0, 1, 3000)
    result = priv_func_seg(t, numpy.sin(60 * t), generated("linear"), epsilon=1e6, rng=1,
                           bound=64.0)
    assert dict(result.details)["level"] > seg.EARLY_LEVEL
    assert calls == [2 ** seg.EARLY_LEVEL + 1, 2 ** seg.MAX_LEVEL + 1]
    calls.clear()
    result = priv_func_seg(t, numpy.sin(6 * t), generated("linear"), epsilon=1e3, rng=1)
    assert dict(result.details)["level"] <= seg.EARLY_LEVEL and calls == [2 ** seg.EARLY_LEVEL + 1]
    calls.clear()
    t = numpy.linspace(0, 1, 2 ** seg.MAX_LEVEL)          # a long curve: one pass
    priv_func_seg(t, numpy.sin(6 * t), generated("linear"), epsilon=1e3, rng=1)
    assert calls == [2 ** seg.MAX_LEVEL + 1]


@pytest.mark.parametrize("spec, params", [("fourier8", {}), ("legendre10", {})])
def test_select_coordinates_in_runs_equal_one_projection(monkeypatch, spec, params):
    module = generated(spec)
    a, b = module.curve_interval()
    t = numpy.linspace(a + 0.01, b - 0.3, 1001)
    curve = make_curve(t, numpy.sin(3 * t) + t ** 2, (a, b))
    whole = module.project(t, curve.y[:, 0]).reshape(-1, 1)
    monkeypatch.setattr(select, "_RUN", 37)
    runs = select._coordinates(module, curve, params)
    assert numpy.abs(runs - whole).max() <= 1e-9 * numpy.abs(whole).max()


def test_piecewise_constant_residual_is_exact():
    """p = 0: (q - P q)^2 is quadratic on a linear piece; q(t) = t on [0, 1] leaves 1/12."""
    curve = make_curve(numpy.array([0.0, 1.0]), numpy.array([0.0, 1.0]), (0.0, 1.0))
    _, residual = piecewise.project(curve, numpy.array([0.0, 1.0]), 0)
    assert residual[0] == pytest.approx(1 / 12, rel=1e-15)
    assert piecewise.DyadicProjections(curve, 0, 3).residuals[0][0] == pytest.approx(1 / 12,
                                                                                     rel=1e-14)
