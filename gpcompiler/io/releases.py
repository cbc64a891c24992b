"""Reading any release file of `privatize` back, and evaluating its released curves
(docs/howto/read-a-release.md)."""
import csv
import io
import json
from pathlib import Path

import numpy

from ..errors import DataError, UserError

def coefficient_names(shape):
    """Column names of one curve's coefficients: c1..cm, or c1_1..cm_n for (m, n)."""
    return [f"c{'_'.join(str(i + 1) for i in index)}" for index in numpy.ndindex(*shape)]


def read_release(path):
    """(metadata, ids, c or None, grids, values) of any release file of `privatize`: c the
    released orthonormal coordinates (N, *COEF_SHAPE) where the file has them, else the
    released values on their public grids."""
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".npz":
            with numpy.load(path, allow_pickle=False) as data:
                return (json.loads(str(data["metadata"])), [str(key) for key in data["curve"]], data["c"],
                        None, None)
        if suffix in (".parquet", ".pq"):
            return _read_parquet(path)
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, KeyError, ValueError) as error:
        raise DataError(f"cannot read the release {path}: {error}") from None
    if suffix == ".json":
        return _read_json(path, text)
    return _read_csv(path, text)


def _read_parquet(path):
    import pyarrow.parquet
    table = pyarrow.parquet.read_table(path)
    metadata = json.loads(table.schema.metadata[b"gpcompiler"])
    names = coefficient_names(metadata["coef_shape"])
    c = numpy.stack([table.column(n).to_numpy() for n in names], axis=-1)
    return (metadata, table.column("curve").to_pylist(),
            c.reshape(len(c), *metadata["coef_shape"]), None, None)


def _read_json(path, text):
    document = json.loads(text)
    curves = document.pop("curves", None)
    if curves is None:
        raise DataError(f"{path}: not a release of curves (no \"curves\")")
    ids = [curve["curve"] for curve in curves]
    if document.get("method") == "project":
        return document, ids, numpy.array([curve["coefficients"] for curve in curves]), None, None
    return (document, ids, None, [numpy.array(curve["grid"]) for curve in curves],
            [numpy.array(curve["values"]) for curve in curves])


def _read_csv(path, text):
    lines = text.splitlines()
    comments = [line[2:] for line in lines if line.startswith("# ")]
    metadata = {key: json.loads(value) for key, _, value in
                (line.partition(": ") for line in comments)}
    rows = list(csv.reader(line for line in lines if not line.startswith("#")))
    if not rows or rows[0][0] != "curve":
        raise DataError(f"{path}: not a release of curves (its header is not curve,...)")
    if "coef_shape" in metadata:
        c = numpy.array([[float(v) for v in row[1:1 + len(row) // 2]] for row in rows[1:]])
        return (metadata, [row[0] for row in rows[1:]],
                c.reshape(len(c), *metadata["coef_shape"]), None, None)
    ids, grids, values = [], [], []
    for row in rows[1:]:
        if not ids or ids[-1] != row[0]:
            ids.append(row[0])
            grids.append([])
            values.append([])
        grids[-1].append(float(row[1]))
        values[-1].append([float(v) for v in row[2:]])
    return (metadata, ids, None, [numpy.array(g) for g in grids],
            [numpy.squeeze(numpy.array(v), axis=-1) if len(rows[0]) == 3 else numpy.array(v)
             for v in values])


def evaluate(path, t, spec=None):
    """(ids, values) of the curves released in the file ``path`` (any format `privatize`
    writes) at the times ``t``: values (N, T) or (N, T, n). A file with coefficients
    (--format coefficients, .npz, Parquet, and .json of --method project) is evaluated by
    its spec's module, anywhere: ``spec`` (a path or a shipped name; default the shipped spec
    the file names), whose sha256 must be the file's. A file of values on a grid answers at
    its grid points only."""
    metadata, ids, c, grids, values = read_release(path)
    t = numpy.asarray(t, dtype=float)
    if c is None:
        return ids, numpy.array([_on_grid(path, grid, value, t)
                                 for grid, value in zip(grids, values)])
    module = _module(path, metadata, spec)
    return ids, module.evaluate(c, t, **metadata.get("parameters", {}))


def _on_grid(path, grid, value, t):
    """Released values at points of their public grid (a file without coefficients)."""
    index = numpy.searchsorted(grid, t)
    if not numpy.all((index < len(grid)) & (grid[numpy.minimum(index, len(grid) - 1)] == t)):
        raise UserError(f"{path} holds released values on a grid, not coefficients: evaluate "
                        "it at its grid points, or release with --format coefficients (or "
                        ".npz, .parquet, .json)")
    return value[index]


def _module(path, metadata, spec):
    """The generated module of the release's spec, checked by the spec's sha256."""
    from ..compiler.build import load, shipped_names
    if spec is None and metadata["spec"] not in shipped_names():
        raise UserError(f"{path} was released with spec {metadata['spec']!r}, which is not "
                        "shipped: pass spec= its spec file")
    module = load(spec if spec is not None else metadata["spec"])
    if module.SPEC_SHA256 != metadata["spec_sha256"]:
        raise UserError(f"{path} was released with spec {metadata['spec']!r} of sha256 "
                        f"{metadata['spec_sha256'][:12]}..., and {spec or metadata['spec']} has "
                        f"{module.SPEC_SHA256[:12]}...: pass spec= the spec file it was "
                        "released with")
    return module
