"""Dask engine (issue 14): CDF statistics reduced over partitions equal the in-memory ones;
batch Project-and-Privatize over row blocks with independent, reproducible noise."""
import numpy
import pytest

from conftest import generated
from gpcompiler import cdf
from gpcompiler.cdf import streaming

dask_array = pytest.importorskip("dask.array")
dask_dataframe = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
from gpcompiler.dask import main, privatize_batch  # noqa: E402

METHODS = ("moments", "direct", "histogram", "adaptive-quantiles")
KWARGS = dict(lo=-2.0, hi=3.0, degree=12, bins=20, steps=15)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as connected:
            yield connected


@pytest.fixture(scope="module")
def data():
    return numpy.random.default_rng(0).normal(0.5, 1.0, 5 * streaming.CHUNK + 777)


@pytest.mark.parametrize("method", METHODS)
def test_dask_array_release_is_identical_to_in_memory(client, data, method):
    """Partitions of whole chunks: the same chunk sums, combined exactly in another order,
    give the same bits, and the same seed the same release."""
    lazy = dask_array.from_array(data, chunks=2 * streaming.CHUNK)
    release = cdf.estimate(lazy, epsilon=1.0, delta=1e-6, method=method, rng=11, **KWARGS)
    expected = cdf.estimate(data, epsilon=1.0, delta=1e-6, method=method, rng=11, **KWARGS)
    assert numpy.array_equal(release.values, expected.values)
    assert numpy.array_equal(release.grid, expected.grid)
    assert (release.sigma, release.spent) == (expected.sigma, expected.spent)


def test_uneven_partitions_agree_to_rounding_and_counts_exactly(client, data):
    lazy = dask_array.from_array(data, chunks=10007)
    for method in METHODS:
        got = cdf.Statistics.from_data(lazy, method=method, **KWARGS)
        want = cdf.Statistics.from_data(data, method=method, **KWARGS)
        assert got.count == data.size
        if method in ("histogram", "adaptive-quantiles"):
            assert numpy.array_equal(got.sums, want.sums)
        else:      # numerical: different chunk boundaries round differently
            assert numpy.allclose(got.sums, want.sums, rtol=1e-12, atol=1e-9)


def test_parquet_column_equals_from_chunks(client, data, tmp_path):
    pandas = pytest.importorskip("pandas")
    pieces = numpy.split(data, [streaming.CHUNK, 3 * streaming.CHUNK])
    for i, piece in enumerate(pieces):
        pandas.DataFrame({"x": piece, "other": i}).to_parquet(tmp_path / f"part{i}.parquet")
    column = dask_dataframe.read_parquet(tmp_path)["x"]
    streamed = cdf.Statistics.from_chunks(iter(pieces), **KWARGS)
    assert numpy.array_equal(cdf.Statistics.from_data(column, **KWARGS).sums, streamed.sums)
    with pytest.raises(ValueError, match="one column"):
        cdf.Statistics.from_data(dask_dataframe.read_parquet(tmp_path), **KWARGS)
    with pytest.raises(ValueError, match="lo < hi"):
        cdf.Statistics.from_data(column, lo=1.0, hi=1.0)


def test_batch_privatization_per_block_streams(client):
    module = generated("legendre10")
    t = numpy.linspace(-1, 1, 301)
    y = numpy.sin(numpy.arange(1, 11)[:, None] * t)
    lazy = dask_array.from_array(y, chunks=(4, 100))
    released = privatize_batch(module, t, lazy, epsilon=2.0, seed=5).compute()
    streams = numpy.random.SeedSequence(5).spawn(3)
    expected = numpy.concatenate([
        module.project_and_privatize(t, y[rows], epsilon=2.0, rng=numpy.random.default_rng(s))
        for rows, s in zip((slice(0, 4), slice(4, 8), slice(8, 10)), streams)])
    assert released.shape == (10, module.COEF_DIM)
    assert numpy.array_equal(released, expected)
    noise = released - module.project(t, y)
    assert len({tuple(row) for row in numpy.round(noise, 12)}) == 10     # no shared draws
    secure = privatize_batch(module, t, lazy, epsilon=2.0).compute()
    again = privatize_batch(module, t, lazy, epsilon=2.0).compute()
    assert not numpy.any(secure == again)
    assert numpy.abs(secure - module.project(t, y)).max() < 100


def test_command_line_on_a_scheduler_address(client, data, tmp_path, capsys):
    """Last: the command's own client replaces the fixture's as the default."""
    pandas = pytest.importorskip("pandas")
    pandas.DataFrame({"x": data[:5000]}).to_parquet(tmp_path / "x.parquet")
    assert main([str(tmp_path / "x.parquet"), "--column", "x", "--lo", "-2", "--hi", "3",
                 "--epsilon", "1", "--delta", "1e-5", "--scheduler", client.scheduler.address]) == 0
    assert "N = 5000" in capsys.readouterr().out
    assert main([str(tmp_path / "x.parquet"), "--column", "nope", "--lo", "-2", "--hi", "3",
                 "--epsilon", "1", "--delta", "1e-5", "--scheduler", client.scheduler.address]) == 2
    assert "nope" in capsys.readouterr().err
    rows = "".join(f"{v!r},1\n" for v in data[:5000].tolist())
    (tmp_path / "x.csv").write_text("x,y\n" + rows)
    assert main([str(tmp_path / "x.csv"), "--column", "x", "--lo", "-2", "--hi", "3",
                 "--epsilon", "1", "--delta", "1e-5", "--scheduler", client.scheduler.address]) == 0
    assert "N = 5000" in capsys.readouterr().out
