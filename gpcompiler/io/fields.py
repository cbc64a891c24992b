"""Gridded data for mechanisms over a box (paper Sec. 3.2, "Multivariate functions"):
``.npy``/``.npz`` arrays or long-form CSV, read into :class:`Field` values on rectilinear
grids. A grid only says where the data were taken: the release depends on the field (the
interpolant or the cell function) alone (docs/design.md, "Privacy model")."""
import csv
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy

from .curves import read_text
from ..errors import DataError

ID_NAMES = ("field", "id")


@dataclass(frozen=True)
class Field:
    """One field: its id, k grids (node coordinates, or cell edges for cells) and values
    (S_1, ..., S_k[, n])."""
    id: str
    grids: tuple
    values: numpy.ndarray


def read_fields(source, variables, box, value_dim, kind):
    """Fields from ``source``: an ``.npy`` array (S_1, ..., S_k[, n]) or a batch (B, ...);
    an ``.npz`` with ``values`` and optionally one grid per variable name (default: nodes,
    or cell edges, evenly spaced over the box); or a CSV with header
    ``[field,]x,y[,...],value[,...]`` in long form (nodal values, kind "linear")."""
    suffix = Path(source).suffix.lower()
    if suffix in (".npy", ".npz"):
        try:
            loaded = numpy.load(source, allow_pickle=False)
        except OSError as error:
            raise DataError(f"cannot read {source}: {error}") from None
        except (ValueError, EOFError, zipfile.BadZipFile):
            raise DataError(f"cannot read {source}: empty, or not a numeric NumPy .npy/.npz "
                            "file (object arrays are refused)") from None
        return _arrays(source, loaded, suffix, variables, box, value_dim, kind)
    if kind != "linear":
        raise DataError(f"{source}: a long-form CSV gives values at grid nodes (--kind linear); "
                        "give cell values (--kind cells) as an .npy or .npz array")
    return _long_form(source, read_text(source), variables, box, value_dim)


def _arrays(source, loaded, suffix, variables, box, value_dim, kind):
    grids = {}
    if suffix == ".npz":
        unknown = sorted(set(loaded.files) - {"values", *variables})
        if "values" not in loaded.files or unknown:
            raise DataError(f"{source}: expected arrays 'values' and optionally "
                            f"{', '.join(map(repr, variables))} (the grids), got "
                            f"{', '.join(map(repr, loaded.files))}")
        grids = {name: numpy.asarray(loaded[name], dtype=float)
                 for name in variables if name in loaded.files}
        if grids and len(grids) != len(variables):
            raise DataError(f"{source}: give a grid for every variable "
                            f"({', '.join(map(repr, variables))}) or for none (even grids "
                            f"over the box), got {', '.join(map(repr, grids))}")
        loaded = loaded["values"]
    if loaded.dtype.kind not in "iuf":
        raise DataError(f"{source}: expected a numeric array, got dtype {loaded.dtype}")
    values = numpy.asarray(loaded, dtype=float)
    k = len(variables)
    trailing = 1 if value_dim > 1 else 0
    if values.ndim not in (k + trailing, k + trailing + 1) or (
            trailing and values.shape[-1] != value_dim):
        shape = ", ".join([f"S_{i + 1}" for i in range(k)] + [str(value_dim)] * trailing)
        raise DataError(f"{source}: values of shape {values.shape}: expected ({shape}) or a "
                        "batch (B, ...)")
    batch = values if values.ndim == k + trailing + 1 else values[None]
    sizes = batch.shape[1:k + 1]
    extra = 1 if kind == "cells" else 0
    axes = tuple(grids[name] if name in grids else numpy.linspace(lo, hi, size + extra)
                 for name, (lo, hi), size in zip(variables, box, sizes))
    return [Field(str(b), axes, batch[b]) for b in range(batch.shape[0])]


def _long_form(source, text, variables, box, value_dim):
    """Fields of a long-form CSV, one per id (or one, "0"); a header without rows is an
    error."""
    rows = [row for row in csv.reader(io.StringIO(text))
            if row and not row[0].lstrip().startswith("#")]
    if not rows:
        raise DataError(f"{source}: empty file (no header and no data)")
    header = [h.strip() for h in rows[0]]
    has_id = bool(header) and header[0].lower() in ID_NAMES
    names = header[1:] if has_id else header
    k = len(variables)
    if names[:k] != list(variables) or len(names) != k + value_dim:
        raise DataError(f"{source}: header must be {','.join(variables)} then {value_dim} "
                        f"value column(s), optionally preceded by field or id, got "
                        f"{ascii(','.join(header))}")
    groups = {}
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise DataError(f"{source}: line {number} has {len(row)} fields, expected {len(header)}")
        try:
            numbers = [float(v) for v in (row[1:] if has_id else row)]
        except ValueError:
            raise DataError(f"{source}: line {number}: a value is not a number") from None
        groups.setdefault(row[0] if has_id else "0", []).append(numbers)
    if not groups:  # as for curves (issue 34, item 1): no field at all, not a zero one
        raise DataError(f"{source}: no data rows (a header and nothing else)")
    return [_gridded(source, key, numpy.array(items), k, value_dim)
            for key, items in groups.items()]


def _gridded(source, key, array, k, value_dim):
    """A long-form table on a complete rectilinear grid, each node exactly once."""
    grids = tuple(numpy.unique(array[:, i]) for i in range(k))
    shape = tuple(g.size for g in grids)
    index = tuple(numpy.searchsorted(g, array[:, i]) for i, g in enumerate(grids))
    flat = numpy.ravel_multi_index(index, shape)
    nodes, counts = numpy.unique(flat, return_counts=True)
    missing = numpy.setdiff1d(numpy.arange(numpy.prod(shape)), nodes)
    if missing.size or counts.max() > 1:
        odd, what = (missing[0], "missing") if missing.size else \
            (nodes[counts > 1][0], "given twice")
        node = ", ".join(f"{g[i]:g}" for g, i in zip(grids, numpy.unravel_index(odd, shape)))
        raise DataError(f"{source}: field {key!r}: the rows must cover a rectilinear grid "
                        f"({' x '.join(map(str, shape))} nodes), each node once; node "
                        f"({node}) is {what}")
    values = numpy.empty((array.shape[0], value_dim))
    values[flat] = array[:, k:]
    return Field(key, grids, values.reshape(shape + ((value_dim,) if value_dim > 1 else ())))
