"""The release files every command writes (docs/howto/read-a-release.md): JSON
or CSV with the metadata of the release, written atomically."""
import io
import json
import sys
from pathlib import Path

import numpy

from .. import __version__
from ..errors import UserError
from .common import STDOUT, not_private, say


def ledger_facts(ledger):
    """The public facts of an algorithm's last release (bound, slack, lattice step)."""
    last = ledger.releases[-1]
    return {"bound": last.bound, "slack": last.slack, "lattice": last.lattice}


def jsonable(value):
    """``value`` with arrays as lists; floats exactly (JSON writes their repr)."""
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    if isinstance(value, numpy.ndarray) and value.dtype.kind == "f":
        return value.tolist()
    if isinstance(value, (numpy.ndarray, tuple, list)):
        return [jsonable(v) for v in value]
    if isinstance(value, (numpy.integer, numpy.bool_)):
        return value.item()
    if isinstance(value, numpy.floating):
        return float(value)
    return value


COMPACT_SUFFIXES = (".npz", ".parquet", ".pq")
COEFFICIENTS = ("c: the released orthonormal coordinates (f = sum_j c_j e_j); a: the "
                "user-basis coefficients a = R^(-T) c (the module's to_user), each flattened "
                "in C order of COEF_SHAPE")


def coefficients_file(suffix, metadata, ids, c, a):
    """The bytes or text of a coefficient release: ``c`` (N, *COEF_SHAPE) released
    coordinates, ``a`` the user-basis coefficients, ``metadata`` the public facts."""
    from ..io.releases import coefficient_names
    metadata = {**metadata, "coef_shape": list(c.shape[1:]), "coefficients": COEFFICIENTS}
    if suffix == ".npz":
        buffer = io.BytesIO()
        numpy.savez(buffer, curve=numpy.array(ids, dtype=str), c=c, a=a,
                    metadata=numpy.array(json.dumps(metadata)))
        return buffer.getvalue()
    names = coefficient_names(c.shape[1:])
    flat_c, flat_a = c.reshape(len(ids), -1), a.reshape(len(ids), -1)
    if suffix == ".csv":
        rows = ([str(key), *map(repr, map(float, row_c)), *map(repr, map(float, row_a))]
                for key, row_c, row_a in zip(ids, flat_c, flat_a))
        return csv_text(metadata, ["curve", *names, *(f"a{n[1:]}" for n in names)], rows)
    import pyarrow
    import pyarrow.parquet
    columns = {"curve": pyarrow.array([str(key) for key in ids], pyarrow.string()),
               **{n: flat_c[:, j] for j, n in enumerate(names)},
               **{f"a{n[1:]}": flat_a[:, j] for j, n in enumerate(names)}}
    table = pyarrow.table(columns).replace_schema_metadata({"gpcompiler": json.dumps(metadata)})
    sink = pyarrow.BufferOutputStream()
    pyarrow.parquet.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def release_format(path, compact=False):
    """The release file format from its suffix, CSV for standard output (checked before any
    noise is drawn); ``compact``: also .npz and Parquet (released coefficients)."""
    from ..io.curves import check_writable
    if path == STDOUT:
        return ".csv"
    check_writable(path)    # first: a directory is named as one, whatever its suffix
    suffix = Path(path).suffix.lower()
    if suffix in (".csv", ".json") or compact and suffix in COMPACT_SUFFIXES:
        if suffix in (".parquet", ".pq"):
            _pyarrow(path)
        return suffix
    raise UserError(f"cannot write {path}: a release is .csv (released values on a public "
                    "grid) or .json (coefficients and the grid)"
                    + (", .npz or .parquet (released coefficients)" if compact else "")
                    + ", or - (standard output)")


def _pyarrow(path):
    try:
        import pyarrow.parquet  # noqa: F401 (only whether it is installed)
    except ImportError:
        raise UserError(f"cannot write {path}: Parquet needs pyarrow: pip install "
                        "'gpcompiler[dask]'") from None


def write_files(args, files):
    """Write (path, content) pairs: the files all or none, then `-o -` on standard output."""
    from ..io.curves import write_files_atomically
    written = [(path, content) for path, content in files if path != STDOUT]
    write_files_atomically(written)
    for path, _ in written:
        say(args, f"wrote {path}")
    for path, content in files:
        if path == STDOUT:
            sys.stdout.write(content)


def release_metadata(args, **extra):
    if args.epsilon is None:
        budget = {"rho": args.rho}
    else:
        budget = {"epsilon": args.epsilon, **({"delta": args.delta} if "delta" in args else {})}
    return {"gpcompiler": __version__, **extra, "method": args.method, "budget": budget,
            **_reproducible(args)}


def _reproducible(args):
    """A release whose noise a key or a seed reproduces says so: it is not private to
    whoever holds them (docs/threat-model.md, "Keyed releases")."""
    if getattr(args, "key", None) is not None:
        return {"randomness": "keyed (not private: whoever holds the key can subtract the noise)"}
    if getattr(args, "seed", None) is not None:
        return {"randomness": "seeded (not private: the seed reproduces the noise)"}
    return {}


def declared_units(units, curve=False):
    """Release metadata of the spec's declared units: {"units": {"domain": ..., "values":
    ...}} (a curve's domain unit as one string, a box's as one per variable), or nothing
    when the spec declares none."""
    domain = units["domain"][0] if curve else list(units["domain"])
    declared = {key: value for key, value in (("domain", domain), ("values", units["values"]))
                if value is not None and value != [None] * len(units["domain"])}
    return {"units": declared} if declared else {}


def csv_text(metadata, header, rows):
    """A release as CSV: ``#`` lines with the metadata, then the header and the rows."""
    lines = [f"# {key}: {json.dumps(value)}" for key, value in metadata.items()]
    lines.append(",".join(header))
    lines.extend(",".join(row) for row in rows)
    return "\n".join(lines) + "\n"


def exact_number(value):
    """A released number, exactly: the shortest string that reads back as the same float."""
    return repr(float(value))


def facts_metadata(ids, facts):
    """The bound B and slack (public, one value; with its condition if the module states
    one), and the lattice step gamma: one value, or one per curve where the final noise
    scale differs (seg: what ReduceSeg left)."""
    steps = {key: f["lattice"] for key, f in zip(ids, facts)}
    first = facts[0] if facts else {"bound": None, "slack": None}
    condition = {"slack_condition": first["slack_condition"]} if "slack_condition" in first else {}
    return {"bound": first["bound"], "slack": first["slack"], **condition,
            "lattice": steps[ids[0]] if len(set(steps.values())) == 1 else steps}


def tell_clipped(args, count, total, what, bound):
    """How many curves (fields) were clipped, if any (unless --quiet): to the data owner
    only, on standard error, labelled."""
    if count and not args.quiet:
        not_private(f"{count} of {total} {what} clipped to the bound B = {bound!r} (their "
                     "norm exceeded it; each was still released)")
