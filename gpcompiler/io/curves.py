"""Reading curves: CSV files (wide or long format) and the bundled real ECG record."""
import array
import csv
import glob
import gzip
import io
import math
import os
import re
import tempfile
from datetime import datetime
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy

from ..errors import DataError

ECG_RATE = 360.0
ECG_WINDOW_SECONDS = 10.0
ECG_TIME_SCALE = 80.0   # paper Sec. 5.1: 10 s -> T = 800
AIS_CENTRE = (40.6803, -74.0142)   # degrees north, east: a fixed point in New York Harbor


@dataclass(frozen=True)
class Curves:
    """Sampled curves: ids, and per curve times (S,) and values (S,) or (S, n).

    ``time_label`` and ``value_labels`` name the axes with their units (for plots);
    ``seconds_per_unit`` converts the time to seconds where it is physical (else None).
    """
    ids: tuple
    times: tuple
    values: tuple
    value_names: tuple
    time_label: str = "t"
    value_labels: tuple = None
    seconds_per_unit: float = None
    invalid: tuple = ()   # (id, reason) of curves read leniently that were no valid function


def bundled_ecg(window=0):
    """One 10-second window (3600 samples, millivolts) of MIT-BIH record 208, lead MLII,
    with time scaled by 80 so that the window is [0, 800] (paper Sec. 5.1)."""
    with resources.files("gpcompiler").joinpath("data/mitbih_record208_360hz.npz").open("rb") as f:
        raw = numpy.load(f)["ecg"]
    samples = int(ECG_RATE * ECG_WINDOW_SECONDS)
    windows = raw.size // samples
    if not 0 <= window < windows:
        raise DataError(f"ECG window must be in 0..{windows - 1}, got {window}")
    millivolts = (raw[window * samples:(window + 1) * samples].astype(float) - 1024.0) / 200.0
    t = numpy.arange(samples) / ECG_RATE * ECG_TIME_SCALE
    return Curves((f"ecg208_w{window}",), (t,), (millivolts,), ("mV",),
                  f"t (1/{ECG_TIME_SCALE:g} s: the 10 s window is [0, 800], paper Sec. 5.1)",
                  ("ECG lead MLII (mV)",), 1 / ECG_TIME_SCALE)


def read_curves(source, lenient=False):
    """Curves from ``bundled:ecg[:W]``, ``bundled:ais[:N]`` (the first N vessel
    trajectories), a CSV file with columns t,y1..yn, optionally
    preceded by a curve id column named ``curve`` or ``id`` (long format), or a glob of
    such files (their curves in the order of the sorted file names; ids must differ).
    ``lenient``: a curve with a NaN or infinite value or decreasing times is read as the
    zero function (no samples) and its id listed in ``invalid``, so that one curve's
    values never decide whether a file is released (see parse_csv)."""
    if not source.startswith("bundled:") and glob.has_magic(source):
        return _read_curve_files(dataset_files(source), lenient)
    if source.startswith("bundled:"):
        parts = source.split(":")
        if parts[1] not in ("ecg", "ais") or len(parts) > 3:
            raise DataError(f"unknown bundled data {source!r} "
                            "(available: bundled:ecg[:WINDOW], bundled:ais[:COUNT])")
        try:
            number = int(parts[2]) if len(parts) == 3 else None
        except ValueError:
            raise DataError(f"bad number in {source!r}") from None
        if parts[1] == "ecg":
            return bundled_ecg(number or 0)
        trajectories = bundled_trajectories()
        count = 1 if number is None else number
        if not 1 <= count <= len(trajectories.ids):
            raise DataError(f"bundled:ais count must be in 1..{len(trajectories.ids)}, got {count}")
        return Curves(*(field[:count] for field in (trajectories.ids, trajectories.times,
                                                     trajectories.values)),
                      *(trajectories.value_names, trajectories.time_label,
                        trajectories.value_labels, trajectories.seconds_per_unit))
    return parse_csv(read_text(source, lines=True), source, lenient)


def _read_curve_files(files, lenient=False):
    """The curves of several CSV files, which must have the same value columns and
    different curve ids."""
    parts = [parse_csv(read_text(name, lines=True), name, lenient) for name in files]
    for name, part in zip(files[1:], parts[1:]):
        if part.value_names != parts[0].value_names:
            raise DataError(f"{name}: value columns {', '.join(part.value_names)} differ from "
                            f"{', '.join(parts[0].value_names)} in {files[0]}")
    seen = {}
    for name, part in zip(files, parts):
        for key in part.ids:
            if key in seen:
                raise DataError(f"{name}: curve {key!r} is also in {seen[key]}: give each "
                                "curve one id across the files")
            seen[key] = name
    return Curves(*(tuple(item for part in parts for item in getattr(part, field))
                    for field in ("ids", "times", "values")), parts[0].value_names,
                  invalid=tuple(key for part in parts for key in part.invalid))


GZIP_MAGIC = b"\x1f\x8b"     # the first two bytes of every gzip file (RFC 1952)


def read_text(source, lines=False):
    """The text of a UTF-8 file (a leading byte-order mark is dropped), gunzipped first when
    it is gzip; anything else is a :class:`DataError` naming the file (``lines``: bytes that
    are not UTF-8 text are kept as lone surrogates, for parse_csv to refuse their line)."""
    try:
        with open(source, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        raise DataError(f"cannot read {source}: {error.strerror}") from None
    if str(source).lower().endswith(".gz") and raw[:2] != GZIP_MAGIC:
        raise DataError(f"{source}: not gzip-compressed, though its name ends in .gz "
                        "(compress it with gzip, or drop .gz from its name)")
    return decode_text(raw, source, lines)


def decode_text(raw, source, lines=False):
    """Bytes of a UTF-8 (optionally gzip-compressed) text file as text, without a BOM; with
    ``lines``, only its first line must be text (see read_text)."""
    errors = "surrogateescape" if lines else "strict"
    try:
        text = (gzip.decompress(raw) if raw[:2] == GZIP_MAGIC else raw).decode("utf-8-sig",
                                                                              errors)
    except (OSError, EOFError, UnicodeDecodeError):
        text = "\0"
    if not _is_text(text.split("\n", 1)[0] if lines else text):
        raise DataError(f"{source}: not a UTF-8 CSV file (or a gzip of one)")
    return text


_NOT_TEXT = re.compile("[\0\udc80-\udcff]")  # NUL, or a byte that was not UTF-8


def _is_text(text):
    """No NUL and no lone surrogate (a byte that was not UTF-8): one scan in C."""
    return _NOT_TEXT.search(text) is None


TIME_NAMES = ("t", "time")
ID_NAMES = ("curve", "id")


def parse_csv(text, source="<csv>", lenient=False):
    """Parse CSV text into :class:`Curves`, with a message naming any bad row.

    The header is ``t,y1[,y2...]`` (``time`` for ``t``), optionally preceded by a curve id
    column ``curve`` or ``id``; lines starting with ``#`` are comments. Times are
    non-decreasing per curve; a curve may have any number of samples (docs/design.md,
    "Privacy model": fewer than two is the zero function, a repeated time is a jump).
    A NaN or infinite value, a field that is not a number, a line with the wrong number of
    fields, or decreasing times, are an error naming the line, unless ``lenient``: then
    that curve is the zero function and its id is listed in ``invalid`` (one curve's
    values never stop the others' releases).
    """
    numbered = ((number, row) for number, row in enumerate(_records(text), start=1)
                if row and not row[0].lstrip().startswith("#"))
    first = next(numbered, None)
    if first is None:
        raise DataError(f"{source}: empty file (no header and no data)")
    header = [h.strip() for h in first[1]]
    id_column = header[0] if header and header[0].lower() in ID_NAMES else None
    names = header[1:] if id_column else header
    if not names or names[0].lower() not in TIME_NAMES or len(names) < 2:
        raise DataError(f"{source}: header must be t,y1[,y2...] (or time,...) optionally "
                        f"preceded by curve or id, got {ascii(','.join(header))}")
    groups, invalid = {}, {}    # 8 bytes a number: read row by row, kept packed
    for number, row in numbered:
        key = row[0] if id_column else "curve"
        if isinstance(row, _Unreadable):
            if not lenient:
                raise DataError(f"{source}: line {number} is not UTF-8 CSV text ({row.why})")
            groups.setdefault(key, array.array("d"))
            invalid[key] = f"a line that is not UTF-8 CSV text ({row.why})"
            continue
        if len(row) != len(header):
            if not lenient:
                raise DataError(f"{source}: line {number} has {len(row)} fields, "
                                f"expected {len(header)}")
            groups.setdefault(key, array.array("d"))
            invalid[key] = f"a line with {len(row)} fields"
            continue
        numbers = [_number(source, number, name, value, lenient)
                   for name, value in zip(names, row[1:] if id_column else row)]
        groups.setdefault(key, array.array("d")).extend(numbers)
        if not all(numpy.isfinite(numbers)):
            if not lenient:
                raise DataError(f"{source}: line {number} has a NaN or infinite value")
            invalid[key] = "a value that is not a finite number"
    if not groups:  # a header and no rows: no curve at all, not one without samples
        raise DataError(f"{source}: no data rows (a header and nothing else)")
    times, values = [], []
    for key, items in groups.items():
        table = numpy.frombuffer(items, dtype=float).reshape(-1, len(names)).copy()
        if not invalid.get(key) and numpy.any(numpy.diff(table[:, 0]) < 0):
            if not lenient:
                raise DataError(f"{source}: curve {key!r}: sample times must be non-decreasing "
                                "(a repeated time is a jump)")
            invalid[key] = "decreasing times"
        if invalid.get(key):
            table = table[:0]
        times.append(table[:, 0])
        values.append(table[:, 1] if table.shape[1] == 2 else table[:, 1:])
    return Curves(tuple(groups), tuple(times), tuple(values), tuple(names[1:]),
                  invalid=tuple(invalid.items()))


class _Unreadable(list):
    """A line that is not CSV text: [its text up to the first comma] (its curve's id)."""

    def __init__(self, line, why):
        super().__init__([line.split(",", 1)[0]])
        self.why = why


def _records(text):
    """One CSV record per line: a quote never spans lines, so an unterminated quote, a NUL
    or bytes that are not UTF-8 spoil only their own line (and with ``lenient`` only that
    line's curve), never the lines after it."""
    for line in text.splitlines():
        if not _is_text(line):
            yield _Unreadable(line, "a NUL or bytes that are not UTF-8")
            continue
        try:
            yield next(csv.reader([line]), [])
        except csv.Error as error:
            yield _Unreadable(line, str(error))


def _number(source, line, column, text, lenient=False):
    """One CSV field as a float, else a DataError naming the line, column and value (NaN if
    ``lenient``: the caller gives the record or curve a public treatment)."""
    if lenient:
        return _float_or_nan(text)
    try:
        return float(text)
    except (TypeError, ValueError):
        raise DataError(f"{source}: line {line}: {column}={text!r} is not a number") from None


def _float_or_nan(text):
    """A CSV field as a float, NaN if it is not a number."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def _missing_directories(path):
    """The directories that writing ``path`` would have to create (innermost first) and
    the nearest existing ancestor (the root, should even the root not exist: a missing
    drive; each step shortens the path, so the loop ends)."""
    missing, directory = [], os.path.dirname(os.path.abspath(path))
    while not os.path.exists(directory) and os.path.dirname(directory) != directory:
        missing.append(directory)
        directory = os.path.dirname(directory)
    return missing, directory


def check_writable(path, directory=False):
    """Fail early (before any noise is drawn) when ``path`` (a file, or with ``directory``
    a directory) cannot be written. Missing parent directories are fine: they are created
    when the file is written, after every check."""
    target = os.path.abspath(path)
    if os.path.isdir(target) != directory and os.path.exists(target):
        raise DataError(f"cannot write {path}: it is " + ("not a directory" if directory
                                                          else "a directory, not a file name"))
    missing, existing = _missing_directories(os.path.join(target, "x") if directory else target)
    if not os.path.isdir(existing):
        raise DataError(f"cannot write {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK):
        raise DataError(f"cannot write {path}: directory {existing} is not writable")
    try:    # os.access says yes to root everywhere: a file made and removed is the proof
        tempfile.TemporaryFile(dir=existing).close()
    except OSError as error:
        raise DataError(f"cannot write {path}: no file can be created in {existing} "
                        f"({error.strerror})") from None


def write_text_atomically(path, text):
    """Write ``text`` (str or bytes) to ``path``; see ``write_files_atomically``."""
    write_files_atomically([(path, text)])


def write_files_atomically(files):
    """Write (path, text) pairs (str or bytes) through temporary files, creating missing
    parent directories: every file is staged before any is replaced, so a failure leaves
    none of them written (and removes the new directories again); an error names the path,
    never a temporary file."""
    staged, created, path = [], [], None
    try:
        for path, text in files:
            missing, _ = _missing_directories(path)
            for directory in reversed(missing):
                os.mkdir(directory)
                created.append(directory)
            staged.append((f"{path}.tmp", path))
            with open(staged[-1][0], "wb" if isinstance(text, bytes) else "w",
                      **({} if isinstance(text, bytes) else {"newline": ""})) as handle:
                handle.write(text)
        for temporary, path in staged:
            os.replace(temporary, path)
    except OSError as error:
        for temporary, _ in staged:
            if os.path.exists(temporary):
                os.remove(temporary)
        for directory in reversed(created):
            if os.path.isdir(directory):
                os.rmdir(directory)
        raise DataError(f"cannot write {path}: {error.strerror}") from None


def read_times(source):
    """Public evaluation times: the first column of a CSV file (a ``t``/``time`` header
    and ``#`` comment lines allowed), strictly increasing and finite."""
    rows = [row for row in csv.reader(io.StringIO(read_text(source)))
            if row and not row[0].lstrip().startswith("#")]
    if rows and rows[0][0].strip().lower() in TIME_NAMES:
        rows = rows[1:]
    try:
        times = numpy.array([float(row[0]) for row in rows])
    except ValueError:
        raise DataError(f"{source}: expected one number per line (the public times)") from None
    if not (times.size and numpy.all(numpy.isfinite(times)) and numpy.all(numpy.diff(times) > 0)):
        raise DataError(f"{source}: expected finite, strictly increasing times")
    return times


def read_column(source, column):
    """One numeric column of a CSV (optionally gzip) file, or of ``bundled:cps1988``."""
    if source == "bundled:cps1988":
        handle = resources.files("gpcompiler").joinpath("data/AER__CPS1988.csv.gz").open("rb")
        source_name = "CPS 1988"
        with handle:
            text = decode_text(handle.read(), source_name)
    else:
        text, source_name = read_text(source), source
    rows = csv.reader(line for line in io.StringIO(text) if not line.startswith("#"))
    fieldnames = next(rows, None)
    if not fieldnames:
        raise DataError(f"{source_name}: empty file (no header and no data)")
    if column is None:
        raise DataError(f"{source_name}: no column chosen (columns: {', '.join(fieldnames)})")
    if column not in fieldnames:
        raise DataError(f"{source_name}: no column {column!r} (columns: "
                        f"{', '.join(fieldnames)})")
    index = fieldnames.index(column)    # every line a record: blank, short or not a number is NaN
    data = numpy.array([_float_or_nan(row[index] if index < len(row) else "") for row in rows],
                       dtype=float)
    if data.size == 0:
        raise DataError(f"{source_name}: no data rows")
    return data


PARQUET_SUFFIXES = (".parquet", ".pq")


def dataset_files(source):
    """The files of a dataset, sorted: ``bundled:cps1988``, a CSV (optionally gzip) or
    Parquet file, a directory of Parquet files, or a glob of either kind (one kind only)."""
    if source == "bundled:cps1988":
        return [source]
    path = Path(source)
    if path.is_dir():
        files = sorted(str(p) for p in path.rglob("*") if p.suffix.lower() in PARQUET_SUFFIXES)
        what = f"{source}: a directory without Parquet files (*.parquet)"
    elif glob.has_magic(source):
        files = sorted(p for p in glob.glob(source) if not Path(p).is_dir())
        what = f"{source}: no file matches this pattern"
    else:
        files, what = [source], None
    if not files:
        raise DataError(what)
    if len({is_parquet(name) for name in files}) > 1:
        raise DataError(f"{source}: mixes Parquet and CSV files")
    return files


def is_parquet(name):
    """A Parquet file, by its name (``.parquet`` or ``.pq``)."""
    return Path(name).suffix.lower() in PARQUET_SUFFIXES


def read_dataset_column(files, column):
    """One numeric column of every file of :func:`dataset_files`, concatenated in order."""
    return numpy.concatenate([read_file_column(name, column) for name in files])


def read_file_column(name, column):
    """One numeric column of one CSV (:func:`read_column`) or Parquet file, checked alike:
    the column exists, is numeric, and has rows. A record that is not a number (NaN, a
    blank, text in a CSV, a Parquet null) is NaN, and NaN and infinite values are kept: the
    CDF estimators give them public values (gpcompiler.cdf.streaming.public_values), so
    one record never stops a release and every line counts as one record."""
    if not is_parquet(name):
        return read_column(name, column)
    try:
        import pyarrow.compute
        import pyarrow.parquet
    except ImportError:
        raise DataError(f"{name}: reading Parquet needs pyarrow: pip install "
                        "'gpcompiler[dask]'") from None
    try:
        schema = pyarrow.parquet.read_schema(name)
    except OSError as error:
        raise DataError(f"cannot read {name}: {str(error).splitlines()[0]}") from None
    if column is None or column not in schema.names:
        chosen = "no column chosen" if column is None else f"no column {column!r}"
        raise DataError(f"{name}: {chosen} (columns: {', '.join(schema.names)})")
    kind = schema.field(column).type
    if not (pyarrow.types.is_integer(kind) or pyarrow.types.is_floating(kind)):
        raise DataError(f"{name}: column {column!r} is not numeric (Parquet type {kind})")
    values = pyarrow.parquet.read_table(name, columns=[column]).column(column)
    data = pyarrow.compute.fill_null(values.cast(pyarrow.float64()), math.nan).to_numpy()
    if data.size == 0:
        raise DataError(f"{name}: no data rows")
    return data


def bundled_trajectories(minimum_points=100):
    """Vessel trajectories of the bundled AIS data (New York Harbor, 1-7 Dec 2020) in a
    local metric plane: equirectangular projection about the public point AIS_CENTRE
    (never a statistic of the vessels' data, so one vessel's release does not depend on
    another's), metres; time in minutes from each trajectory's start. Repeated timestamps
    are dropped."""
    with resources.files("gpcompiler").joinpath("data/nyharbor_ais_2020-12-01_07.csv.gz").open("rb") as f:
        rows = list(csv.DictReader(io.StringIO(gzip.decompress(f.read()).decode())))
    lon = numpy.array([float(r["lon"]) for r in rows])
    lat = numpy.array([float(r["lat"]) for r in rows])
    radius = 6371008.8
    lat0, lon0 = numpy.radians(AIS_CENTRE)
    x = radius * (numpy.radians(lon) - lon0) * numpy.cos(lat0)
    y = radius * (numpy.radians(lat) - lat0)
    seconds = numpy.array([datetime.fromisoformat(r["time"]).timestamp() for r in rows])
    ids, times, values = [], [], []
    keys = numpy.array([r["trajectory"] for r in rows])
    for key in dict.fromkeys(keys):
        index = numpy.flatnonzero(keys == key)
        t = (seconds[index] - seconds[index[0]]) / 60.0
        keep = numpy.concatenate([[True], numpy.diff(t) > 0])
        if keep.sum() >= minimum_points:
            ids.append(f"ais{key}")
            times.append(t[keep])
            values.append(numpy.stack([x[index][keep], y[index][keep]], axis=1))
    return Curves(tuple(ids), tuple(times), tuple(values), ("x_m", "y_m"),
                  "t (minutes from the trajectory's start)", ("x (m)", "y (m)"), 60.0)
