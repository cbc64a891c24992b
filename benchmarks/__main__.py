"""Benchmarks of gpcompiler, each row against a reference measured in the same run.

Every row prints its time (best of --repeats, except the single long runs), the time of its
reference, and the ratio; memory rows print the peak traced by tracemalloc beyond the
inputs. Ratios are what matter on a shared, noisy machine.

    python -m benchmarks                       # everything but the 1e8-record Dask run
    python -m benchmarks --only seg cdf        # some sections
    python -m benchmarks --only dask --records 1e8 [--scheduler tcp://HOST:8786]

BLAS runs one thread unless OPENBLAS_NUM_THREADS is set. Sections: privatize (weights,
Project-and-Privatize: sinc_ecg, monomial32, and the floors of its noise), exact (the
refinement rate of exact noise and the cost of one refinement), seg (PrivFuncSeg,
S = 1e3..1e6), select (PrivFuncSelect, S = 1e6), cdf (cdf.estimate, N = 1e7, K = 20), dask
(a Parquet dataset on a 2-worker LocalCluster with a per-worker memory limit, or a scheduler
address), timing (the weight cache's timing side channel, with and without cache=False).
"""
import argparse
import math
import os
import sys
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the condition: one BLAS thread
import numpy  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpcompiler import cdf  # noqa: E402
from gpcompiler.adaptive import piecewise, priv_func_select, priv_func_seg, seg  # noqa: E402
from gpcompiler.adaptive.curve import make_curve  # noqa: E402
from gpcompiler.build import import_module_file  # noqa: E402
from gpcompiler.curves import bundled_ecg  # noqa: E402
from gpcompiler.secure import SecureGenerator  # noqa: E402

from benchmarks.original import original_weights  # noqa: E402

SECTIONS = ("privatize", "exact", "seg", "select", "cdf", "dask", "timing")


def best_time(function, repeats):
    """Minimum wall time of ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def best_times(functions, repeats):
    """Minimum wall time of each function over ``repeats`` rounds that call them in turn, so
    that a shared machine's changing load weighs on all of them alike."""
    best = [math.inf] * len(functions)
    for _ in range(repeats):
        for i, function in enumerate(functions):
            start = time.perf_counter()
            function()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def traced_peak(function):
    """(seconds, peak bytes allocated by ``function`` as traced by tracemalloc)."""
    tracemalloc.start()
    start = time.perf_counter()
    function()
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, peak


def row(name, seconds, reference_name, reference, extra=""):
    print(f"  {name:<38} {seconds * 1e3:10.3f} ms   {reference_name:<30} "
          f"{reference * 1e3:10.3f} ms   {seconds / reference:7.2f}  {extra}", flush=True)


def header(title):
    print(f"\n{title}\n  {'row':<38} {'time':>13}   {'reference':<30} {'time':>13}   "
          f"{'ratio':>7}", flush=True)


def module(name):
    return import_module_file(ROOT / "generated" / f"{name}.py")


def bench_privatize(args):
    """Weights and Project-and-Privatize (exact noise) on sinc_ecg and monomial32, 3600 samples per curve:
    the first-call weight build against the original build (benchmarks/original.py), and
    B = 1 (best of many calls in a row) and B = --batch curves (best of 20 rounds that time
    each call in turn) against the bare matrix product y @ W of the same shapes; the floors
    of the batch's noise: as many PCG64 normals, and the entropy of the secure normals
    (8 bytes each, SHAKE-128 keyed from os.urandom: SecureGenerator._words)."""
    windows = [bundled_ecg(w % 30) for w in range(args.batch)]
    seeded, entropy = numpy.random.default_rng(0), SecureGenerator()
    for name in ("sinc_ecg", "monomial32"):
        generated = module(name)
        p = generated._params({})
        lo, hi = generated._curve_interval(p)
        t = windows[0].times[0] if name == "sinc_ecg" else numpy.linspace(lo, hi, 3600)
        y = numpy.stack([w.values[0] for w in windows])
        header(f"privatize: {name}, {t.size} samples -> {generated.COEF_DIM} coefficients")
        row("weights, first call on a grid", best_time(lambda: generated._weights(t, p),
                                                       args.repeats),
            "original build", best_time(lambda: original_weights(generated, t, p),
                                        args.repeats))
        weights = generated.projection_weights(t)
        normals = args.batch * generated.COEF_DIM
        curve = y[0]
        calls = [lambda: curve @ weights] + [
            lambda rng=rng: generated.project_and_privatize(t, curve, epsilon=1.0, rng=rng)
            for rng in (seeded, None)]
        one = [best_time(call, 100 * args.repeats + 1) for call in calls]
        batch = best_times([lambda: y @ weights] + [
            lambda rng=rng: generated.project_and_privatize(t, y, epsilon=1.0, rng=rng)
            for rng in (seeded, None)] + [
            lambda: seeded.standard_normal(normals), lambda: entropy._words(normals)], 20)
        for size, times in ((1, one), (args.batch, batch)):
            for noise, seconds in (("seeded", times[1]), ("secure", times[2])):
                row(f"project_and_privatize B = {size}, {noise}", seconds, "y @ W", times[0])
        row(f"  floor: {normals} PCG64 normals", batch[3], "y @ W, B = batch", batch[0])
        row(f"  floor: entropy, {8 * normals} bytes", batch[4], "y @ W, B = batch", batch[0])


class _Counting(SecureGenerator):
    """OS entropy, counting the draws: one per batch, then one per refinement level."""

    def __init__(self):
        self.draws = 0

    def _words(self, count):
        self.draws += 1
        return super()._words(count)


def bench_exact(args):
    """The exact sampler's rare refinement: how often a row of sinc_ecg's d = 800 spherical
    Laplace needs one (over --rounds batches of --batch rows, OS entropy) and what one costs
    (a row placed at a lattice tie, against the fast path of the whole batch)."""
    from gpcompiler.runtime import exact
    d, rows = 800, args.batch
    source = _Counting()
    zeros = numpy.zeros((rows, d))
    for _ in range(args.rounds):
        exact.spherical_laplace(zeros, 1.0, source)
    refined = source.draws - args.rounds
    header(f"exact: spherical Laplace, d = {d}, {args.rounds} x {rows} rows")
    print(f"  refinement levels drawn: {refined} in {args.rounds * rows} rows "
          f"({refined / (args.rounds * rows):.2e} per row)", flush=True)
    words = exact.random_words(numpy.random.default_rng(0), exact._spherical_width(d))
    ball = exact._spherical_balls(words[None, :], d)
    tie = exact.lattice(1.0) * 0.5 - ball[0][0, 0]

    def one_refinement():
        x = numpy.zeros(d)
        x[0] = tie
        exact.spherical_laplace(x, 1.0, numpy.random.default_rng(0))
    row("one row refined (d = 800)", best_time(one_refinement, args.repeats),
        f"fast path, {rows} rows", best_time(lambda: exact.spherical_laplace(zeros, 1.0, source),
                                             args.repeats))


def threshold_accuracy(first, second):
    """The best accuracy of one threshold telling calls of ``first`` from ``second`` by time
    (0.5: no signal; fitted on the same samples, so slightly above 0.5 by chance)."""
    times = numpy.concatenate([first, second])
    labels = numpy.concatenate([numpy.zeros(len(first)), numpy.ones(len(second))])
    order = numpy.argsort(times)
    below = numpy.cumsum(labels[order] == 0) / len(first)       # first-class calls <= cut
    above = 1 - numpy.cumsum(labels[order] == 1) / len(second)  # second-class calls > cut
    return float(max(0.5, numpy.max((below + above) / 2)))


def bench_timing(args):
    """The timing side channel of the weight cache (docs/threat-model.md): sinc_ecg, 3600
    sample times, one curve per call. A call on the previous caller's grid (a cache hit)
    against a call on the same grid with one sample time moved (a miss), interleaved in
    random order, with the cache and with cache=False; the gap and the best accuracy of a
    threshold on the time that tells the two apart."""
    generated = module("sinc_ecg")
    t, y = bundled_ecg(0).times[0], bundled_ecg(0).values[0]
    rounds = max(20, 10 * args.repeats)
    header(f"timing: sinc_ecg, {t.size} samples, {rounds} calls of each kind, interleaved")
    order = numpy.random.default_rng(0).permutation(2 * rounds) % 2
    for cache in (True, False):
        generated.project_and_privatize(t, y, epsilon=1.0, rng=0, cache=cache)
        times = ([], [])
        for i, moved in enumerate(order):
            grid = t
            if moved:
                grid = t.copy()
                grid[t.size // 2] += (i + 1) * 1e-9 * (t[t.size // 2 + 1] - t[t.size // 2])
            start = time.perf_counter()
            generated.project_and_privatize(grid, y, epsilon=1.0, rng=0, cache=cache)
            times[moved].append(time.perf_counter() - start)
            if moved:    # the next caller's grid is the shared one again, as for a hit
                generated.project_and_privatize(t, y, epsilon=1.0, rng=0, cache=cache)
        same, other = (numpy.median(x) for x in times)
        row(f"cache={cache}: one time moved (median)", other, "same grid as before", same,
            f"threshold tells them apart {threshold_accuracy(*times):.0%} of the time")


def bench_seg(args):
    """PrivFuncSeg on the linear spec, S = 1e3..1e6, against one projection of the same
    curve on the finest dyadic grid (2^14 segments), itself O(S + 2^14): the ratio shows
    time linear in S + 2^L. A smooth curve (level <= 7: one pass on 2^7 segments) at every
    S, and a busy one (level > 7: two passes) at S = 1e6."""
    linear = module("linear")
    header("seg: PrivFuncSeg (linear spec)")
    noise = numpy.random.default_rng(0)
    cases = [(size, 40, 1e4) for size in (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6)]
    for size, frequency, epsilon in cases + [(10 ** 6, 400, 1e6)]:
        t = numpy.linspace(0, 1, size)
        y = numpy.sin(frequency * t) + 0.01 * noise.normal(size=size)
        curve = make_curve(t, y, (0.0, 1.0))
        grid = piecewise.dyadic_grid(0.0, 1.0, seg.MAX_LEVEL)
        level = dict(priv_func_seg(t, y, linear, epsilon=epsilon, rng=1).details)["level"]
        seconds = best_time(lambda: priv_func_seg(t, y, linear, epsilon=epsilon, rng=1),
                            args.repeats)
        reference = best_time(lambda: piecewise.project(curve, grid, 1), args.repeats)
        row(f"priv_func_seg S = {size:.0e}, level {level}", seconds,
            "one projection, 2^14 segments", reference)


def bench_select(args):
    """PrivFuncSelect on fourier8 at S = 1e6: time and traced peak memory, against one
    generated-module projection of the whole curve."""
    fourier = module("fourier8")
    size = 10 ** 6
    t = numpy.linspace(-3, 3, size)
    y = numpy.sin(3 * t) + numpy.cos(t)
    header(f"select: PrivFuncSelect (fourier8, S = {size:.0e}); peak traced memory")
    seconds, peak = traced_peak(lambda: priv_func_select(t, y, fourier, epsilon=10.0, rng=1))
    reference, reference_peak = traced_peak(lambda: fourier.project(t[None], y[None]))
    row("priv_func_select", seconds, "module.project, whole curve", reference,
        f"peak {peak / 1e6:.0f} MB (reference {reference_peak / 1e6:.0f} MB)")


def bench_cdf(args):
    """cdf.estimate at N = 1e7, K = 20, against one polyval of degree 21 over the data; peak
    traced memory beyond the input array."""
    data = numpy.random.default_rng(0).gamma(2.0, 300.0, 10 ** 7)
    coefficients = numpy.ones(22)
    header(f"cdf: estimate, N = {data.size:.0e}, K = 20 (input {data.nbytes / 1e6:.0f} MB)")
    reference = best_time(lambda: numpy.polynomial.polynomial.polyval(data, coefficients),
                          args.repeats)
    for method in cdf.METHODS:
        def run():
            cdf.estimate(data, lo=0, hi=2500, epsilon=1.0, delta=1e-6, degree=20,
                         method=method, rng=1)
        seconds = best_time(run, args.repeats)
        _, peak = traced_peak(run)
        row(f"estimate {method}", seconds, "polyval, degree 21", reference,
            f"peak {peak / 1e6:.1f} MB beyond the input")


def bench_dask(args):
    """A CDF from a Parquet dataset of --records records, on a 2-worker LocalCluster with
    --memory-limit per worker (or on --scheduler), against Statistics.from_chunks reading the
    same files in pieces in this process; the two releases must be identical."""
    import pyarrow
    import pyarrow.parquet
    from distributed import Client, LocalCluster

    import dask.dataframe
    from gpcompiler.cdf.streaming import CHUNK
    directory = Path(args.data_dir)
    rows = 16 * CHUNK
    files = max(1, math.ceil(args.records / rows))
    if len(list(directory.glob("*.parquet"))) != files:
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("*.parquet"):
            old.unlink()
        rng = numpy.random.default_rng(0)
        for i in range(files):
            table = pyarrow.table({"x": rng.normal(0.0, 1.0, rows)})
            pyarrow.parquet.write_table(table, directory / f"part{i:05d}.parquet")
    count = files * rows
    options = dict(lo=-5.0, hi=5.0, epsilon=1.0, delta=1e-9, degree=20, method="direct")
    cluster = None if args.scheduler else LocalCluster(
        n_workers=2, threads_per_worker=1, memory_limit=args.memory_limit,
        dashboard_address=None)
    where = args.scheduler or f"LocalCluster, 2 workers, {args.memory_limit} each"
    header(f"dask: {count:.3g} records ({8 * count / 1e9:.2f} GB float64) in {files} Parquet "
           f"files; {where}")
    with Client(args.scheduler or cluster):
        start = time.perf_counter()
        column = dask.dataframe.read_parquet(directory)["x"]
        distributed_release = cdf.estimate(column, rng=7, **options)
        seconds = time.perf_counter() - start
    if cluster is not None:
        cluster.close()

    def pieces():
        for path in sorted(directory.glob("*.parquet")):
            yield pyarrow.parquet.read_table(path, columns=["x"])["x"].to_numpy()
    start = time.perf_counter()
    statistics = cdf.Statistics.from_chunks(pieces(), **{k: options[k] for k in (
        "lo", "hi", "degree", "method")})
    local = statistics.privatize(epsilon=1.0, delta=1e-9, rng=7).estimate()
    reference = time.perf_counter() - start
    same = numpy.array_equal(local.values, distributed_release.values)
    row("estimate on Dask (direct, K = 20)", seconds, "from_chunks, one process", reference,
        f"identical release: {same}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=SECTIONS,
                        default=[s for s in SECTIONS if s != "dask"],
                        help="sections to run (default: all but dask)")
    parser.add_argument("--repeats", type=int, default=3, help="best of (default 3)")
    parser.add_argument("--batch", type=int, default=256, help="privatize batch (default 256)")
    parser.add_argument("--rounds", type=int, default=200,
                        help="exact: batches counted for the refinement rate (default 200)")
    parser.add_argument("--records", type=float, default=1e8, help="dask records (default 1e8)")
    parser.add_argument("--data-dir", default="/tmp/gpcompiler-bench-parquet",
                        help="where the Parquet dataset is written once and reused "
                             "(default /tmp/gpcompiler-bench-parquet)")
    parser.add_argument("--memory-limit", default="400MB", help="per local worker (default 400MB)")
    parser.add_argument("--scheduler", default=None, help="Dask scheduler address (default: a local "
                                                             "2-worker cluster)")
    args = parser.parse_args(argv)
    print(f"gpcompiler benchmarks, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"numpy {numpy.__version__}; OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}; "
          f"load average {os.getloadavg()[0]:.2f}")
    for section in args.only:
        globals()[f"bench_{section}"](args)


if __name__ == "__main__":
    main()
