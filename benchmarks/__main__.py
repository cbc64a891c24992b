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
S = 1e3..1e6), select (PrivFuncSelect, S = 1e3..1e6), cdf (cdf.estimate, N = 1e7, K = 20),
dask (privatize_batch, B = 4096, then a Parquet dataset on a 2-worker LocalCluster with a
per-worker memory limit, or a scheduler address), timing (the weight cache's timing side
channel, with and without cache=False), c (the C target: benchmarks/c_target.py), js (the
JS target: benchmarks/js_target.py).
"""
import argparse
import math
import os
import sys
import time
import tracemalloc
from pathlib import Path
from unittest import mock

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the condition: one BLAS thread
import numpy  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpcompiler import cdf  # noqa: E402
from gpcompiler.adaptive import piecewise, priv_func_select, priv_func_seg, seg  # noqa: E402
from gpcompiler.adaptive import closed_form, select  # noqa: E402
from gpcompiler.adaptive.curve import make_curve  # noqa: E402
from gpcompiler.compiler.build import import_module_file  # noqa: E402
from gpcompiler.io.curves import bundled_ecg  # noqa: E402
from gpcompiler.runtime.secure import SecureGenerator  # noqa: E402

from benchmarks.original import original_weights  # noqa: E402

SECTIONS = ("privatize", "exact", "seg", "select", "cdf", "dask", "timing", "c", "js")


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
    """Weights and Project-and-Privatize (exact noise) on sinc_ecg and monomial32, 3600
    samples per curve:
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
    bench_shapes(args)


def bench_shapes(args):
    """Every input shape of Project-and-Privatize against its floor, in the same run (seeded
    noise): t (B, S) with identical rows and with G grids interleaved (G = 8 for sinc_ecg,
    whose 23 MB weights fill the cache's 256 MB; 16 for monomial32), against the
    shared-grid call t (S,); the first call on G grids (cache emptied) against G weight
    builds and the shared call; 24 curves of different lengths, one call each, one curve of
    S = 1e6, and fields over a box (64 x 64 grid), against privatize(y @ W) with the
    weights precomputed (the same noise)."""
    rng = numpy.random.default_rng(0)
    for name, size, count in (("sinc_ecg", 64, 8), ("monomial32", args.batch, 16)):
        generated = module(name)
        p = generated._params({})
        lo, hi = generated._curve_interval(p)
        t = numpy.linspace(lo, hi, 3600)
        y = numpy.cumsum(rng.normal(size=(size, t.size)), axis=1) / 60
        grids = [numpy.linspace(lo, hi - k * (hi - lo) / 1e3, t.size) for k in range(count)]
        mixed = numpy.stack([grids[b % count] for b in range(size)])

        def release(grid, values=y):
            return generated.project_and_privatize(grid, values, epsilon=1.0, rng=1)
        header(f"privatize shapes: {name}, B = {size}, S = {t.size}")
        times = best_times([lambda: release(t), lambda: release(numpy.tile(t, (size, 1)))],
                           args.repeats + 2)
        row("t (B, S), identical rows", times[1], "t (S,) shared", times[0])
        row(f"t (B, S), {count} grids interleaved", best_time(lambda: release(mixed),
                                                             args.repeats + 1),
            "t (S,) shared", times[0])

        def cold():
            generated._GRIDS.clear()
            release(mixed)
        floor = best_time(lambda: [generated._weights(g, p) for g in grids], args.repeats)
        row("  the same, first call (cache empty)", best_time(cold, args.repeats),
            f"{count} builds + shared call", floor + times[0])
    generated = module("monomial32")
    p = generated._params({})
    lo, hi = generated._curve_interval(p)
    curves = [numpy.linspace(lo, hi, 1000 + 97 * k) for k in range(24)]
    values = [numpy.sin(3 * c) for c in curves]
    weights = [generated.projection_weights(c) for c in curves]
    header("privatize shapes: monomial32, one curve per call")
    row("24 curves, S = 1000..3231, in turn", best_time(lambda: [
        generated.project_and_privatize(c, v, epsilon=1.0, rng=1)
        for c, v in zip(curves, values)], args.repeats),
        "privatize(v @ W), in turn", best_time(lambda: [
            generated.privatize(v @ w, epsilon=1.0, rng=1) for v, w in zip(values, weights)],
            args.repeats))
    big = numpy.linspace(lo, hi, 10 ** 6)
    curve, matrix = numpy.sin(3 * big), generated.projection_weights(big)
    row("one curve, S = 1e6 (cached grid)", best_time(
        lambda: generated.project_and_privatize(big, curve, epsilon=1.0, rng=1), args.repeats),
        "privatize(v @ W)", best_time(lambda: generated.privatize(
            curve @ matrix, epsilon=1.0, rng=1), args.repeats))
    box = module("legendre_box")
    axes = tuple(numpy.linspace(a, b, 64) for a, b in box.domain())
    fields = rng.normal(size=(args.batch, 64, 64))
    matrix = box.projection_weights(axes).reshape(64 * 64, -1)
    header(f"privatize shapes: legendre_box, 64 x 64 grid -> {box.COEF_DIM} coefficients")
    for size in (1, args.batch):
        row(f"fields over a box, B = {size}", best_time(
            lambda: box.project_and_privatize(axes, fields[:size], epsilon=1.0, rng=1),
            args.repeats), "privatize(y @ W)", best_time(lambda: box.privatize(
                fields[:size].reshape(size, -1) @ matrix, epsilon=1.0, rng=1), args.repeats))


def bench_exact(args):
    """The exact sampler's rare refinement: how often a row of sinc_ecg's d = 800 spherical
    Laplace needs one (over --rounds batches of --batch rows, OS entropy) and what one costs
    (a row placed at a lattice tie, against the fast path of the whole batch)."""
    from gpcompiler.runtime import exact
    d, rows = 800, args.batch
    counts = {"_refine": 0, "_mt_refine": 0}

    def counted(name):
        original = getattr(exact, name)

        def call(*arguments):
            counts[name] += 1
            return original(*arguments)
        return mock.patch.object(exact, name, call)
    zeros = numpy.zeros((rows, d))
    with counted("_refine"), counted("_mt_refine"):
        for _ in range(args.rounds):
            exact.spherical_laplace(zeros, 1.0, SecureGenerator())
    header(f"exact: spherical Laplace, d = {d}, {args.rounds} x {rows} rows")
    print(f"  rows refined: {counts['_refine']} in {args.rounds * rows} "
          f"({counts['_refine'] / (args.rounds * rows):.2e} per row); Gamma attempts refined: "
          f"{counts['_mt_refine']}", flush=True)
    p = exact._pair_layout(d)
    words = exact.random_words(numpy.random.default_rng(0), exact._spherical_width(d))[None, :]
    ball = exact._spherical_balls(words[:, :2 * p], d, 1.0, exact._exp_tail(words[:, 2 * p:]))
    tie = exact.lattice(1.0) * 0.5 - ball[0][0, 0, 0]

    def one_refinement():
        x = numpy.zeros(d)
        x[0] = tie
        exact.spherical_laplace(x, 1.0, numpy.random.default_rng(0))
    row("one row refined (d = 800)", best_time(one_refinement, args.repeats),
        f"fast path, {rows} rows", best_time(lambda: exact.spherical_laplace(zeros, 1.0,
                                                                         SecureGenerator()),
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
    """PrivFuncSelect (epsilon = 10) on monomial32 and fourier8, S = 1e3..1e6, against one
    exact L2-norm pass of the same curve (Curve.norm_squared), interleaved, best of
    --repeats; the Gauss-rule path it replaced (the closed forms switched
    off) in the same run, once per size; the queries alone (prefix_distances: coordinates,
    residual, distances) against the same floor; traced peak memory at S = 1e6."""
    for name in ("monomial32", "fourier8"):
        generated = module(name)
        a, b = generated.curve_interval()
        header(f"select: PrivFuncSelect ({name}); floor: one exact L2-norm pass of the curve")
        for size in (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6):
            t = numpy.linspace(a, b, size)
            y = numpy.sin(12 * (t - a) / (b - a)) + numpy.cos(3 * (t - a) / (b - a))
            curve = make_curve(t, y, (a, b))

            def run():
                priv_func_select(t, y, generated, epsilon=10.0, rng=1)
            def queries():
                select.prefix_distances(generated, curve, {})
            seconds, distances, floor = best_times([run, queries, curve.norm_squared],
                                                   args.repeats)
            row(f"priv_func_select S = {size:.0e}", seconds, "norm_squared, same curve", floor)
            row(f"  its queries (c, residual, d_j)", distances, "norm_squared, same curve", floor)
            with mock.patch.object(closed_form, "cells", return_value=None):
                before = best_time(run, 1)
            row(f"  before: Gauss rule S = {size:.0e}", before, "norm_squared, same curve", floor)
        _, peak = traced_peak(run)
        print(f"  peak traced memory at S = 1e6: {peak / 1e6:.0f} MB "
              f"(curve {2 * t.nbytes / 1e6:.0f} MB)", flush=True)


def bench_cdf(args):
    """cdf.estimate at N = 1e7, K = 20, against one in-place Horner pass of degree 21 over
    the data (21 products and 21 sums into one buffer: the floor of a degree-21 recurrence);
    peak traced memory beyond the input array."""
    data = numpy.random.default_rng(0).gamma(2.0, 300.0, 10 ** 7)
    header(f"cdf: estimate, N = {data.size:.0e}, K = 20 (input {data.nbytes / 1e6:.0f} MB)")

    def horner():
        value = numpy.ones_like(data)
        for _ in range(21):
            value *= data
            value += 1.0
    reference = best_time(horner, args.repeats)
    for method in cdf.METHODS:
        def run():
            cdf.estimate(data, lo=0, hi=2500, epsilon=1.0, delta=1e-6, degree=20,
                         method=method, rng=1)
        seconds = best_time(run, args.repeats)
        _, peak = traced_peak(run)
        row(f"estimate {method}", seconds, "in-place Horner, degree 21", reference,
            f"peak {peak / 1e6:.1f} MB beyond the input")


def _random_walks(index, rows, size):
    """Block ``index`` of the Dask benchmark's curves: random walks, made on a worker."""
    return numpy.cumsum(numpy.random.default_rng(index).normal(size=(rows, size)), axis=1) / 60


def bench_dask_privatize(args):
    """privatize_batch on sinc_ecg, --dask-batch curves of 3600 samples in blocks of 256 rows
    made and persisted on the workers, on two 2-worker LocalClusters started with Dask's
    defaults: threads (as `--scheduler local`) and worker processes of 1 GB each (a
    worker's own footprint is about 250 MB, a block's temporaries about 60 MB), against one
    in-process project_and_privatize of the same (B, S) array (seeded noise). The three
    calls are timed in turn, best of --repeats rounds, so a shared machine's load weighs on
    all of them alike; the first round builds each worker's weights. The workers' memory
    warnings (unmanaged memory, spilling, pausing) are counted from their logs, the pieces
    of data they spilled to disk from their metrics; a worker process's memory (resident)
    is measured at the end (with threads: this process's)."""
    import psutil
    from distributed import Client, LocalCluster

    from gpcompiler.engines.dask import privatize_batch
    generated = module("sinc_ecg")
    size, rows = 3600, 256
    t = numpy.linspace(*generated.curve_interval(), size)
    header(f"dask: privatize_batch, sinc_ecg, B = {args.dask_batch}, S = {size}")
    clusters = [LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                             memory_limit="1GB" if processes else 0, dashboard_address=":0")
                for processes in (False, True)]
    clients = [Client(cluster, set_as_default=False) for cluster in clusters]
    curves = [client.persist(_dask_curves(args.dask_batch, rows, size)) for client in clients]
    y = clients[0].compute(curves[0]).result()

    def on(client, lazy):
        return lambda: client.compute(privatize_batch(generated, t, lazy, epsilon=1.0,
                                                      seed=1)).result()
    calls = [on(client, lazy) for client, lazy in zip(clients, curves)]
    times = best_times(calls + [lambda: generated.project_and_privatize(t, y, epsilon=1.0,
                                                                         rng=1)],
                       args.repeats)
    for where, seconds, client in zip(("threads", "processes, 1 GB each"), times, clients):
        resident = max(client.run(lambda: psutil.Process().memory_info().rss).values())
        row(f"privatize_batch, 2 workers ({where})", seconds, "in-process call", times[2],
            "memory warnings {}, spilled {}; largest worker process {:.0f} MB".format(
                *_memory_events(client), resident / 1e6))
    for client, cluster in reversed(list(zip(clients, clusters))):   # each restores its logs
        client.close()
        cluster.close()


def _dask_curves(count, rows, size):
    """The Dask benchmark's curves: ``count`` random walks of ``size`` samples, blocks of
    ``rows`` made on the workers."""
    import dask.array
    from dask import delayed
    return dask.array.concatenate([
        dask.array.from_delayed(delayed(_random_walks)(i, min(rows, count - s), size),
                                (min(rows, count - s), size), float)
        for i, s in enumerate(range(0, count, rows))])


def _memory_events(client):
    """(lines of the workers' logs about memory: unmanaged memory, spilling, pausing;
    pieces of data the workers spilled to disk, which they do without a log line)."""
    words = ("unmanaged memory", "spill", "paus")
    lines = sum(any(word in line.lower() for word in words)
                for logs in client.get_worker_logs().values() for _, line in logs)
    spilled = client.run(lambda dask_worker: sum(
        value for key, value in dask_worker.digests_total.items()
        if isinstance(key, tuple) and key[-2:] == ("disk-write", "count")))
    return lines, int(sum(spilled.values()))


def bench_dask(args):
    """A CDF from a Parquet dataset of --records records, on a 2-worker LocalCluster with
    --memory-limit per worker (or on --scheduler), against Statistics.from_chunks reading the
    same files in pieces in this process; the two releases must be identical. First
    bench_dask_privatize."""
    import pyarrow
    import pyarrow.parquet
    from distributed import Client, LocalCluster

    import dask.dataframe
    bench_dask_privatize(args)
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


def bench_c(args):
    """The C target: benchmarks/c_target.py."""
    from benchmarks.c_target import bench
    bench(args)


def bench_js(args):
    """The JS target: benchmarks/js_target.py."""
    from benchmarks.js_target import bench
    bench(args)


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
    parser.add_argument("--dask-batch", type=int, default=4096,
                        help="dask: curves of privatize_batch (default 4096)")
    parser.add_argument("--records", type=float, default=1e8, help="dask records (default 1e8)")
    parser.add_argument("--data-dir", default="/tmp/gpcompiler-bench-parquet",
                        help="where the Parquet dataset is written once and reused "
                             "(default /tmp/gpcompiler-bench-parquet)")
    parser.add_argument("--memory-limit", default="400MB", help="per local worker (default 400MB)")
    parser.add_argument("--scheduler", default=None,
                        help="Dask scheduler address (default: a local 2-worker cluster)")
    args = parser.parse_args(argv)
    print(f"gpcompiler benchmarks, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"numpy {numpy.__version__}; OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}; "
          f"load average {os.getloadavg()[0]:.2f}")
    for section in args.only:
        globals()[f"bench_{section}"](args)


if __name__ == "__main__":
    main()
