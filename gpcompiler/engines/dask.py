"""Dask as the distributed engine (optional extra ``gpcompiler[dask]``; docs/design.md, CDF
estimation and Mechanisms).

CDF statistics: each partition of a Dask array or DataFrame column is summed on a worker in
fixed chunks (cdf/streaming.py); the partial sums, which are exact and so independent of
the order of combination, are reduced as a tree; the client then adds the noise once,
with the same accounting as in memory. The partial sums are not private: they stay inside
the cluster of the data holder, like the data.

Batch Project-and-Privatize: a generated module's ``project_and_privatize`` mapped over row
blocks of a (B, S) Dask array on a shared grid; every curve gets independent noise (OS
entropy on each worker by default, or a seeded stream per block for tests). In a worker
process a block's temporaries are kept by the allocator (:func:`block_heap`) instead of being
mapped afresh, as they are in a plain process.

Command line: ``gpcompiler cdf ... --scheduler ADDRESS|local`` and ``gpcompiler privatize
... --scheduler ADDRESS|local`` (:func:`dataset_column`, :func:`project_batch`), the same
on a laptop (a local cluster) and on a cluster (its address), with the same release file
as without Dask for the same seed.
"""
import ctypes
import logging
import os
import sys
import types
from contextlib import contextmanager
from pathlib import Path

import dask
import dask.array
import numpy
from dask import delayed
from distributed import Client, LocalCluster
from numpy.random import SeedSequence

from ..adaptive.select import load_module
from ..cdf.streaming import CHUNK
from ..compiler.build import import_module_file
from ..errors import CURVE_ERRORS, DataError, UserError
from ..io.curves import read_file_column


ALIGNED = 64 * CHUNK    # records per block of a dataset column: a multiple of CHUNK


CONNECT_SECONDS = 10

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3     # glibc's mallopt parameters
MMAP_THRESHOLD_MAX = 32 << 20   # glibc's cap of its adaptive mmap threshold (64-bit)
FIXED_BY = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")
_HEAP = {"mmap": 0}     # the largest mmap threshold block_heap was asked for here


def privatize_batch(module, t, y, *, epsilon=None, rho=None, seed=None, **params):
    """Project-and-Privatize each curve (row) of the Dask array ``y`` (B, S) or (B, S, n)
    sampled on the shared grid ``t`` with a generated ``module`` (or a spec path), on the
    workers; a Dask
    array (B,) + COEF_SHAPE. Every curve spends the whole budget on its own data. Noise:
    OS entropy on each worker (``seed=None``), or numpy SeedSequence(seed).spawn, one
    stream per row block (reproducible, for tests). The module and its grid's weights are
    built once per worker process (the module's cache), not shipped with the blocks; a
    worker process's allocator keeps a block's temporaries (:func:`block_heap`).

    The result is lazy: with OS entropy every evaluation (compute, persist) draws fresh
    noise, so two evaluations are two releases of the same curves and spend the budget
    twice. Evaluate it once (``.persist()`` or ``.compute()``) and use that."""
    module = load_module(module)
    path = module.__file__
    y = y.rechunk({axis: -1 for axis in range(1, y.ndim)})
    blocks = numpy.asarray(y.to_delayed(), dtype=object).reshape(y.numblocks[0])
    seeds = (SeedSequence(seed).spawn(len(blocks)) if seed is not None
             else [None] * len(blocks))
    parts = [dask.array.from_delayed(
        delayed(_privatize_block)(path, t, block, epsilon, rho, stream, params),
        shape=(rows,) + tuple(module.COEF_SHAPE), dtype=float)
        for block, rows, stream in zip(blocks, y.chunks[0], seeds)]
    return dask.array.concatenate(parts)


def _privatize_block(path, t, block, epsilon, rho, stream, params):
    block_heap(block.nbytes)
    module = import_module_file(path)
    rng = None if stream is None else numpy.random.default_rng(stream)
    return module.project_and_privatize(t, block, epsilon=epsilon, rho=rho, rng=rng, **params)


def block_heap(nbytes):
    """Let glibc's allocator in this process reuse the temporaries of a block of ``nbytes``
    instead of mapping each afresh; (mmap, trim) thresholds set, or None if it changed
    nothing.

    A Dask nanny sets MALLOC_TRIM_THRESHOLD_ in its workers' environment
    (distributed.nanny.pre-spawn-environ), which fixes glibc's thresholds: every array
    above 128 KiB is then a new mapping whose pages fault on first touch, and
    Project-and-Privatize of a (256, 3600) sinc_ecg block faults in 7.6 times the block's
    pages and takes 1.5-2 times as long as in a plain process (docs/evidence/benchmarks.md,
    Dask). This sets what glibc's adaptive rule would reach: the mmap threshold to twice
    the block (at most its cap of 32 MiB), the trim threshold to twice that (the free
    memory a worker keeps), neither below the environment's value. Left alone: a process
    without these variables (threads in the client: adaptive thresholds), one whose
    environment already maps only larger arrays, any system but Linux with glibc."""
    fixed = [os.environ.get(name, "") for name in FIXED_BY]
    if not any(fixed) or not sys.platform.startswith("linux"):
        return None
    trim_floor, mmap_floor = (int(value) if value.isdigit() else 0 for value in fixed)
    mmap = min(2 * nbytes, MMAP_THRESHOLD_MAX)
    if mmap <= max(_HEAP["mmap"], mmap_floor):
        return None
    _HEAP["mmap"] = mmap
    libc = ctypes.CDLL(None)
    if not (hasattr(libc, "gnu_get_libc_version") and libc.mallopt(M_MMAP_THRESHOLD, mmap)):
        return None
    if 2 * mmap > trim_floor:
        libc.mallopt(M_TRIM_THRESHOLD, 2 * mmap)
    return mmap, max(2 * mmap, trim_floor)


def dataset_column(files, column, lo, hi):
    """(Dask array, (finite records outside [lo, hi], records not finite)) of one numeric
    column of a dataset's files
    (:func:`gpcompiler.io.curves.dataset_files`) on the current scheduler. Each file is read
    and checked on a worker as in memory (:func:`gpcompiler.io.curves.read_file_column`: the
    same errors), first to count its records, then to sum; the array is cut into blocks of
    ALIGNED records, so the chunks of the partial sums (cdf/streaming.py) are those of the
    data in memory and the statistics, hence the release, are the same bits."""
    counts = dask.compute(*[delayed(_counts)(name, column, lo, hi) for name in files])
    for count in counts:       # the first bad file, in order, as in memory
        if isinstance(count, DataError):
            raise count
    parts = [dask.array.from_delayed(delayed(read_file_column)(name, column), shape=(rows,),
                                     dtype=float)
             for name, (rows, _, _) in zip(files, counts)]
    data = dask.array.concatenate(parts).rechunk(ALIGNED)
    return data, tuple(sum(count[i] for count in counts) for i in (1, 2))


def _counts(name, column, lo, hi):
    """(records, finite records outside [lo, hi], records not finite) of one file, or its
    DataError."""
    try:
        data = read_file_column(name, column)
    except DataError as error:
        return error
    finite = numpy.isfinite(data)
    return (data.size, int(numpy.count_nonzero(finite & ((data < lo) | (data > hi)))),
            int(data.size - numpy.count_nonzero(finite)))


def project_batch(module, curves, params, bound=None, cache=True, block=64):
    """Project-and-Privatize's projections (paper Alg. 2, the step that reads the samples)
    of every curve of ``curves`` on the workers, ``block`` curves per task, each curve first
    clipped to ``bound`` as in memory (docs/clipping.md); a list of coefficient arrays (or
    the error of a curve) in the order of the curves. The noise is drawn by the caller, in
    that order, with privatize(c, bound=bound), so the release equals the one computed in
    memory for the same seed."""
    source = Path(module.__file__).read_text()
    tasks = [delayed(_project_block)(module.__name__, source, curves.times[i:i + block],
                                     curves.values[i:i + block], params, bound, cache)
             for i in range(0, len(curves.ids), block)]
    return [c for part in dask.compute(*tasks) for c in part]


def _project_block(name, source, times, values, params, bound, cache):
    """The projections of some curves by the generated module ``name`` (its source is
    shipped: a worker need not see the client's files); a curve that cannot be projected
    gives its error (raised by the caller when it reaches that curve, as in memory)."""
    module = sys.modules.get(name) or _module_from_source(name, source)
    return [_projection(module, t, y, params, bound, cache) for t, y in zip(times, values)]


def _module_from_source(name, source):
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    sys.modules[name] = module
    return module


def _projection(module, t, y, params, bound, cache):
    try:
        return module.project(t, y, bound=bound, cache=cache, **params)
    except CURVE_ERRORS as error:
        return error


@contextmanager
def connected(address, workers=2):
    """A Dask client of ``address``: a scheduler address (tcp://HOST:8786), or "local", a
    LocalCluster of ``workers`` threads started here and closed at the end. A scheduler
    that cannot be reached is a :class:`UserError`; Dask's own logs are silenced (errors
    reach the command line as one line)."""
    with _silenced("distributed"), _cluster(address, workers) as cluster:
        try:
            client = Client(cluster or address, timeout=CONNECT_SECONDS)
        except (OSError, ValueError, TypeError) as error:
            text = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise UserError(f"--scheduler {address}: cannot connect to a Dask scheduler "
                            f"({text})") from None
        with client:
            yield client


@contextmanager
def _cluster(address, workers):
    """A LocalCluster for "local" (closed at the end), else None."""
    if address != "local":
        yield None
        return
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=False,
                           dashboard_address=":0")
    try:
        yield cluster
    finally:
        cluster.close()


@contextmanager
def _silenced(name):
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


if __name__ == "__main__":     # the command line of issue 14, folded into the main CLI
    print("gpcompiler: error: the Dask command line is `gpcompiler cdf ... --scheduler "
          "ADDRESS|local` (and `gpcompiler privatize ... --scheduler ...`)", file=sys.stderr)
    sys.exit(2)
