"""Dask as the distributed engine (optional extra ``gpcompiler[dask]``; docs/design.md, CDF
estimation and Mechanisms).

CDF statistics: each partition of a Dask array or DataFrame column is summed on a worker in
fixed chunks (cdf/streaming.py); the partial sums, which are exact and so independent of
the order of combination, are reduced as a tree; the client then adds the noise once,
with the same accounting as in memory. The partial sums are not private: they stay inside
the cluster of the data holder, like the data.

Batch Project-and-Privatize: a generated module's ``project_and_privatize`` mapped over row
blocks of a (B, S) Dask array on a shared grid; every curve gets independent noise (OS
entropy on each worker by default, or a seeded stream per block for tests).

Command line, the same on a laptop (a local cluster) and on a cluster (its address):
    python -m gpcompiler.dask DATA.parquet --column wage --lo 0 --hi 2500 \\
        --epsilon 1 --delta 1e-5 [--scheduler tcp://HOST:8786]
"""
import argparse
import sys

import dask
import dask.array
import numpy
from dask import delayed
from numpy.random import SeedSequence

from .adaptive.select import load_module
from .build import import_module_file
from .cdf.streaming import partial_sums

SPLIT_EVERY = 8


def dask_partial(data, lo, hi, method, size):
    """Partial sums of every partition of ``data`` (Dask array or DataFrame column),
    combined as a tree with fan-in SPLIT_EVERY, computed on the current scheduler."""
    if getattr(data, "ndim", 1) != 1 and not isinstance(data, dask.array.Array):
        raise ValueError("pass one column of a Dask DataFrame, e.g. frame['wage']")
    blocks = data.to_delayed()
    parts = [delayed(_partition)(block, lo, hi, method, size)
             for block in numpy.asarray(blocks, dtype=object).ravel()]
    while len(parts) > 1:
        parts = [delayed(_combine)(*parts[i:i + SPLIT_EVERY])
                 for i in range(0, len(parts), SPLIT_EVERY)]
    return dask.compute(parts[0])[0]


def _partition(block, lo, hi, method, size):
    return partial_sums([numpy.asarray(block, dtype=float)], lo, hi, method, size)


def _combine(first, *others):
    for other in others:
        first.merge(other)
    return first


def privatize_batch(module, t, y, *, epsilon=None, rho=None, seed=None, **params):
    """Project-and-Privatize each curve (row) of the Dask array ``y`` (B, S) or (B, S, n)
    sampled on the shared grid ``t`` with a generated ``module`` (or a spec path), on the
    workers; a Dask
    array (B,) + COEF_SHAPE. Every curve spends the whole budget on its own data. Noise:
    OS entropy on each worker (``seed=None``), or numpy SeedSequence(seed).spawn, one
    stream per row block (reproducible, for tests)."""
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
    module = import_module_file(path)
    rng = None if stream is None else numpy.random.default_rng(stream)
    return module.project_and_privatize(t, block, epsilon=epsilon, rho=rho, rng=rng, **params)


def _read(path, column):
    import dask.dataframe
    if str(path).endswith((".csv", ".csv.gz")):
        return dask.dataframe.read_csv(path, usecols=[column])[column]
    return dask.dataframe.read_parquet(path, columns=[column])[column]


def main(argv=None):
    """(epsilon, delta)-DP CDF of one column of a Parquet dataset or CSV files on Dask."""
    from distributed import Client, LocalCluster

    from . import cdf
    parser = argparse.ArgumentParser(prog="python -m gpcompiler.dask", description=main.__doc__,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("data", help="Parquet file or directory, or CSV file(s) (glob)")
    parser.add_argument("--column", required=True, help="numeric column")
    parser.add_argument("--lo", type=float, required=True, help="public lower bound")
    parser.add_argument("--hi", type=float, required=True, help="public upper bound")
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, required=True)
    parser.add_argument("--degree", type=int, default=10, help="Legendre degree K")
    parser.add_argument("--method", default="direct", choices=cdf.METHODS)
    parser.add_argument("--scheduler", default=None,
                        help="address of a Dask scheduler (default: a local cluster)")
    parser.add_argument("--workers", type=int, default=2, help="local cluster workers")
    parser.add_argument("--memory-limit", default="2GB", help="per local worker")
    args = parser.parse_args(argv)
    cluster = None if args.scheduler else LocalCluster(
        n_workers=args.workers, threads_per_worker=1, memory_limit=args.memory_limit)
    try:
        with Client(args.scheduler or cluster):
            result = cdf.estimate(_read(args.data, args.column), lo=args.lo, hi=args.hi,
                                  epsilon=args.epsilon, delta=args.delta, degree=args.degree,
                                  method=args.method)
    except (ValueError, KeyError, OSError) as error:
        print(f"error: {args.data}: {error}", file=sys.stderr)
        return 2
    finally:
        if cluster is not None:
            cluster.close()
    print(f"{args.method}: N = {result.spent[0][2]}, sigma = {result.sigma:.4g}, budget "
          f"(epsilon, delta) = ({args.epsilon}, {args.delta})")
    print("      p   private quantile")
    for p in (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95):
        print(f"  {p:5.2f}   {float(result.quantile(p)):16.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
