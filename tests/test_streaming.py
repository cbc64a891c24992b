"""Streaming statistics (issue 14): CDF sums in fixed chunks with memory independent of N,
``Statistics.from_chunks``; PrivFuncSeg and PrivFuncSelect on prefix sums."""
import itertools
import tracemalloc
from fractions import Fraction

import numpy
import pytest

from gpcompiler import cdf
from gpcompiler.cdf import streaming
from gpcompiler.cdf.estimators import record_contributions

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
    with pytest.raises(ValueError, match="NaN"):
        cdf.Statistics.from_chunks([numpy.ones(3), [numpy.nan]], lo=0, hi=1)


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
