"""Dask engine (issue 14): CDF statistics reduced over partitions equal the in-memory ones;
batch Project-and-Privatize over row blocks with independent, reproducible noise; the
command line's --scheduler (issue 20) gives the same release files and errors."""
import os
import subprocess
import sys

import numpy
import pytest

from conftest import ROOT, generated
from gpcompiler import cdf
from gpcompiler.cdf import streaming

dask_array = pytest.importorskip("dask.array")
dask_dataframe = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
from gpcompiler.io.curves import dataset_files, read_dataset_column  # noqa: E402
from gpcompiler.engines.dask import block_heap, dataset_column, privatize_batch  # noqa: E402

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


HEAP_PROBE = """
import resource, sys
import numpy
from gpcompiler.compiler.build import import_module_file
from gpcompiler.engines.dask import _privatize_block, block_heap
path = sys.argv[1]
module = import_module_file(path)
t = numpy.linspace(*module.curve_interval(), 3600)
y = numpy.random.default_rng(0).normal(size=(256, 3600))
stream = numpy.random.SeedSequence(3)

def faults(call):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    return call(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
rng = lambda: numpy.random.default_rng(stream)
want, plain = [faults(lambda: module.project_and_privatize(t, y, epsilon=2.0, rng=rng()))
               for _ in range(2)][1]
thresholds = block_heap(y.nbytes)
got, kept = [faults(lambda: _privatize_block(path, t, y, 2.0, None, stream, {}))
             for _ in range(2)][1]
print(plain, kept, y.nbytes // 4096, thresholds, block_heap(1000), numpy.array_equal(got, want))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_worker_heap_keeps_a_blocks_temporaries():
    """In a process whose environment fixes glibc's thresholds (a Dask nanny sets
    MALLOC_TRIM_THRESHOLD_ for its workers), every temporary above 128 KiB is mapped and
    faulted in afresh: many times a block's pages per release. block_heap raises the
    thresholds to the block's size (never lowers them), after which a block's release
    faults in under a quarter of its pages, and is the module's release bit for bit."""
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536", "PYTHONPATH": str(ROOT)}
    env.pop("MALLOC_MMAP_THRESHOLD_", None)
    probe = [sys.executable, "-c", HEAP_PROBE, str(ROOT / "generated" / "sinc_ecg.py")]
    out = subprocess.run(probe, env=env, capture_output=True, text=True,
                         check=True).stdout.split(" ", 3)
    plain, kept, pages = map(int, out[:3])
    assert plain > 2 * pages and kept < pages / 4
    assert out[3] == f"({2 * pages * 4096}, {4 * pages * 4096}) None True\n"


def test_heap_of_a_plain_process_is_left_alone(monkeypatch):
    """Without those variables glibc's thresholds adapt by themselves (threads in the
    client), and an environment that already maps only larger arrays needs nothing:
    nothing is changed."""
    for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"):
        monkeypatch.delenv(name, raising=False)
    assert block_heap(1 << 20) is None
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", str(2 << 20))
    assert block_heap(1 << 20) is None


# ----- the command line (issue 20 item 6): last, since each command's client closes ------

def cdf_release(cli, source, *options, column="x"):
    """(status, release bytes or None, stderr) of `gpcompiler cdf SOURCE ... -o FILE`."""
    out = source.parent / "release.csv" if hasattr(source, "parent") else None
    out = out or os.path.join(os.path.dirname(str(source)), "release.csv")
    if os.path.exists(out):
        os.remove(out)
    status, _, err = cli("cdf", source, "--column", column, "--lo", "-1", "--hi", "2",
                         "--epsilon", "1", "--delta", "1e-6", "--seed", "7", "-q", "-o", out,
                         *options)
    return status, (open(out, "rb").read() if os.path.exists(out) else None), err


def test_cdf_scheduler_gives_the_same_release_file(client, data, tmp_path, cli):
    """Parquet files of 70000, 50000 and 777 records (partitions that are not whole
    chunks), given as a glob and as their directory, and CSV files by a glob: the release
    file is the same bytes on a scheduler as in memory, for the same seed."""
    pandas = pytest.importorskip("pandas")
    address = client.scheduler.address
    pieces = numpy.split(data[:120777], [70000, 120000])
    (tmp_path / "csv").mkdir()
    for i, piece in enumerate(pieces):
        pandas.DataFrame({"x": piece, "g": i}).to_parquet(tmp_path / f"part{i}.parquet")
        (tmp_path / "csv" / f"part{i}.csv").write_text(
            "x,g\n" + "".join(f"{v!r},{i}\n" for v in piece[:400].tolist()))
    glob = str(tmp_path / "part*.parquet")
    files = dataset_files(glob)
    column, _ = dataset_column(files, "x", -1.0, 2.0)
    assert column.chunks == ((120777,),)      # blocks of whole chunks, as in memory
    for method in ("direct", "moments"):      # the same bits
        assert numpy.array_equal(
            cdf.Statistics.from_data(column, lo=-1.0, hi=2.0, method=method).sums,
            cdf.Statistics.from_data(read_dataset_column(files, "x"), lo=-1.0, hi=2.0,
                                     method=method).sums)
    for method in ("direct", "histogram"):
        plain = cdf_release(cli, glob, "--method", method)
        assert plain[0] == 0 and plain[1], plain[2]
        assert cdf_release(cli, glob, "--method", method, "--scheduler", address) == plain
        assert cdf_release(cli, tmp_path, "--method", method, "--scheduler", address)[1] == \
            plain[1]
    assert f"N = {120777}" in cli("cdf", tmp_path, "--column", "x", "--lo", "-1", "--hi", "2",
                                  "--epsilon", "1", "--delta", "1e-6")[2]   # -o -: stderr
    outside = int(numpy.count_nonzero((data[:120777] < -1) | (data[:120777] > 2)))
    status, _, err = cli("cdf", tmp_path, "--column", "x", "--lo", "-1", "--hi", "2",
                         "--epsilon", "1", "--delta", "1e-6", "--scheduler", address)
    assert status == 0 and f"{outside} records clipped (not private)" in err
    csv = str(tmp_path / "csv" / "*.csv")
    plain = cdf_release(cli, csv)
    assert plain[0] == 0 and cdf_release(cli, csv, "--scheduler", address) == plain


def test_cdf_scheduler_gives_the_same_errors(client, tmp_path, cli):
    """A missing column, no matching file, an unreachable scheduler: one line, exit 2, the
    same text as in memory; a non-numeric value is a record taken as lo, as in memory."""
    address = client.scheduler.address
    (tmp_path / "a.csv").write_text("x,g\n1,0\n")
    (tmp_path / "b.csv").write_text("x,g\n2,0\nseven,0\n")
    for source, column in ((tmp_path / "*.csv", "y"), (tmp_path / "none*.csv", "x")):
        plain = cdf_release(cli, str(source), column=column)
        assert plain[0] == 2 and plain[2].count("\n") == 1, plain
        assert cdf_release(cli, str(source), "--scheduler", address, column=column) == plain
    plain = cdf_release(cli, str(tmp_path / "*.csv"))
    assert plain[0] == 0 and plain[1] is not None   # -q: the count is not shown
    assert cdf_release(cli, str(tmp_path / "*.csv"), "--scheduler", address) == plain
    status, _, err = cli("cdf", tmp_path / "a.csv", "--column", "x", "--column", "g", "--lo",
                         "0", "--lo", "0", "--hi", "1", "--hi", "1", "--epsilon", "1",
                         "--delta", "1e-6", "--scheduler", address)
    assert status == 2 and "--scheduler: a joint CDF" in err


def test_privatize_scheduler_gives_the_same_release_file(client, tmp_path, cli):
    """Batch Project-and-Privatize: projections on the workers (of the curves clipped to the
    bound, as in memory), noise drawn here in the curves' order, so the same file for the
    same seed, with and without clipping; other methods are refused; a curve
    outside the domain is released as the zero function, named alike in both."""
    address = client.scheduler.address
    t = numpy.linspace(0, 1, 20)
    rows = "".join(f"c{k},{float(ti)!r},{float(numpy.sin((k + 1) * ti))!r}\n"
                   for k in range(70) for ti in t)
    (tmp_path / "curves.csv").write_text("curve,t,y\n" + rows)
    files = []
    for bound in ((), ("--bound", "0.3")):   # 0.3: every curve is clipped (the curve, not c)
        for options in ((), ("--scheduler", address)):
            out = tmp_path / f"release{len(files)}.json"
            status, _, err = cli("privatize", "specs/linear.toml", tmp_path / "curves.csv",
                                 "--epsilon", "1", "--seed", "3", "-q", "-o", out, *bound,
                                 *options)
            assert status == 0, err
            files.append(out.read_bytes())
    assert files[0] == files[1] and files[0].count(b'"curve"') == 70
    assert files[2] == files[3] != files[0]
    status, _, err = cli("privatize", "specs/linear.toml", tmp_path / "curves.csv",
                         "--epsilon", "1", "--method", "seg", "--scheduler", address)
    assert status == 2 and "--method seg runs in this process" in err
    (tmp_path / "far.csv").write_text("curve,t,y\na,0,1\na,0.5,1\nb,0,1\nb,7,2\n")
    errors = [cli("privatize", "specs/linear.toml", tmp_path / "far.csv", "--epsilon", "1",
                  *options)[::2] for options in ((), ("--scheduler", address))]
    assert errors[0] == errors[1] and errors[0][0] == 0
    assert "1 of 2 curves was not valid" in errors[0][1] and "b (sample" in errors[0][1]


def test_scheduler_local_starts_a_cluster_and_a_bad_address_is_one_line(tmp_path, cli):
    (tmp_path / "x.csv").write_text("x\n" + "".join(f"{v / 100}\n" for v in range(300)))
    plain = cdf_release(cli, tmp_path / "x.csv")
    assert plain[0] == 0 and cdf_release(cli, tmp_path / "x.csv", "--scheduler", "local") == plain
    status, _, err = cli("cdf", tmp_path / "x.csv", "--column", "x", "--lo", "0", "--hi", "1",
                         "--epsilon", "1", "--delta", "1e-6", "--scheduler", "nonsense://x")
    assert status == 2 and err.startswith("gpcompiler: error: --scheduler nonsense://x: cannot "
                                          "connect") and err.count("\n") == 1, err


def test_cdf_scheduler_releases_nan_and_infinite_records_as_in_memory(client, tmp_path, cli):
    """A NaN and an infinite record: the same release on Dask as in memory, and as with the
    records replaced by their public values (NaN -> lo, +inf -> hi), named on stderr."""
    (tmp_path / "bad").mkdir()
    (tmp_path / "fixed").mkdir()
    (tmp_path / "bad" / "a.csv").write_text("x\n0.5\nnan\n1.25\ninf\n0\n")
    (tmp_path / "fixed" / "a.csv").write_text("x\n0.5\n-1\n1.25\n2\n0\n")
    plain = cdf_release(cli, tmp_path / "bad" / "a.csv")
    assert plain[0] == 0 and plain == cdf_release(cli, tmp_path / "fixed" / "a.csv")
    assert cdf_release(cli, tmp_path / "bad" / "a.csv", "--scheduler",
                       client.scheduler.address) == plain
    status, _, err = cli("cdf", tmp_path / "bad" / "a.csv", "--column", "x", "--lo", "-1",
                         "--hi", "2", "--epsilon", "1", "--delta", "1e-6", "--scheduler",
                         client.scheduler.address)
    assert status == 0 and "2 records not a finite number (not private)" in err
