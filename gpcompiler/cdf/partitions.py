"""Sufficient statistics of a Dask array or DataFrame column: the
partial sums of its partitions (streaming.py), combined as a tree with fan-in SPLIT_EVERY
on the current scheduler. Dask is read here only as a collection; clients, clusters and
batch releases are the distributed engine's (gpcompiler/engines/dask.py)."""
import dask
import dask.array
import numpy
from dask import delayed

from .streaming import partial_sums


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
