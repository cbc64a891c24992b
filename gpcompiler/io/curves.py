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
from datetime import datetime, timezone
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


def read_curves(source, lenient=False, columns=None):
    """Curves from ``bundled:ecg[:W]``, ``bundled:ais[:N]`` (the first N vessel
    trajectories), a CSV file with columns t,y1..yn, optionally
    preceded by a curve id column named ``curve`` or ``id`` (long format), or a glob of
    such files (their curves in the order of the sorted file names; ids must differ).
    ``lenient``: a curve with a NaN or infinite value or decreasing times is read as the
    zero function (no samples) and its id listed in ``invalid``, so that one curve's
    values never decide whether a file is released (see parse_csv). ``columns``: the
    public :class:`Columns` of a CSV's timestamps and coordinates."""
    if source.startswith("bundled:") and columns not in (None, Columns()):
        raise DataError(f"{source}: --origin, --time-unit and --reference read CSV files "
                        "(the bundled data is in numbers already)")
    if not source.startswith("bundled:") and glob.has_magic(source):
        return _read_curve_files(dataset_files(source), lenient, columns)
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
    return parse_csv(read_text(source, lines=True), source, lenient, columns)


def _read_curve_files(files, lenient=False, columns=None):
    """The curves of several CSV files, which must have the same value columns and
    different curve ids."""
    parts = [parse_csv(read_text(name, lines=True), name, lenient, columns) for name in files]
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
                  parts[0].time_label, parts[0].value_labels, parts[0].seconds_per_unit,
                  tuple(key for part in parts for key in part.invalid))


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

# --time-unit: nanoseconds per unit (exact integers)
TIME_UNITS = {"s": 10 ** 9, "min": 60 * 10 ** 9, "h": 3600 * 10 ** 9, "day": 86400 * 10 ** 9}
# The mean radius R1 = (2a + b)/3 of the WGS-84 ellipsoid, metres (IUGG; Moritz, Geodetic
# Reference System 1980): the sphere of the local equirectangular projection.
EARTH_RADIUS = 6371008.8
LONGITUDE_NAMES, LATITUDE_NAMES = ("lon", "longitude"), ("lat", "latitude")
_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.(\d{1,9}))?)?)?)"
                        r"(Z|[+-]\d{2}:\d{2})?")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def nanoseconds(stamp):
    """Integer nanoseconds since 1970-01-01T00:00:00Z of an ISO-8601 timestamp
    (``YYYY-MM-DD[THH:MM[:SS[.fffffffff]]][Z|+HH:MM]``, ``T`` or a space; no zone is UTC),
    exactly; a ValueError if it is not one."""
    match = _TIMESTAMP.fullmatch(stamp.strip())
    if match is None:
        raise ValueError(f"{stamp!r} is not an ISO-8601 timestamp")
    whole, fraction, zone = match.groups()
    whole = whole[:len(whole) - len(fraction) - 1] if fraction else whole
    moment = datetime.fromisoformat(whole + (zone or ""))     # checks the calendar
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    since = moment - _EPOCH
    return ((since.days * 86400 + since.seconds) * 10 ** 6 + since.microseconds) * 1000 \
        + int((fraction or "0").ljust(9, "0"))


def _nanoseconds_or_none(text):
    try:
        return nanoseconds(text)
    except ValueError:
        return None


def timestamps_to_times(stamps, origin, unit="s"):
    """Times (float64) of ISO-8601 timestamps (str) or numpy ``datetime64`` values since
    the public ``origin`` (either kind), in ``unit`` (s, min, h or day): the integer
    nanoseconds elapsed divided by the unit's, correctly rounded (one rounding: Python's
    integer true division)."""
    if unit not in TIME_UNITS:
        raise DataError(f"time unit {unit!r}: expected one of {', '.join(TIME_UNITS)}")
    start = _stamp_nanoseconds(origin)
    return numpy.array([(_stamp_nanoseconds(stamp) - start) / TIME_UNITS[unit]
                        for stamp in numpy.ravel(stamps)], dtype=float).reshape(numpy.shape(stamps))


def _stamp_nanoseconds(stamp):
    """Integer nanoseconds since the epoch of an ISO-8601 string or a numpy datetime64."""
    if isinstance(stamp, str):
        return nanoseconds(stamp)
    value = numpy.datetime64(stamp)
    if numpy.isnat(value):
        raise DataError("a timestamp is NaT (not a time)")
    return int(value.astype("datetime64[ns]").astype(numpy.int64))


def lonlat_to_metres(lon, lat, reference):
    """(x, y) in metres east and north of the public ``reference`` (lon0, lat0) in degrees:
    the local equirectangular projection on the sphere of radius EARTH_RADIUS,
    x = R (lon - lon0) cos(lat0), y = R (lat - lat0), angles in radians, evaluated in
    float64 in this order (docs/reference/cli.md, "Timestamps and coordinates")."""
    lon0, lat0 = math.radians(reference[0]), math.radians(reference[1])
    return (EARTH_RADIUS * (numpy.radians(lon) - lon0) * math.cos(lat0),
            EARTH_RADIUS * (numpy.radians(lat) - lat0))


@dataclass(frozen=True)
class Columns:
    """Public ways to read a CSV's columns: ``origin`` (ISO-8601) and ``unit`` of a time
    column of timestamps, and the ``reference`` (lon, lat) of ``lon``/``lat`` columns."""
    origin: str = None
    unit: str = "s"
    reference: tuple = None

    def time_reader(self):
        """text -> float of the time column: a number, or a timestamp with an origin."""
        if self.origin is None:
            return float
        start, scale = nanoseconds(self.origin), TIME_UNITS[self.unit]
        return lambda text: (nanoseconds(text) - start) / scale

    def coordinate_indices(self, source, names):
        """The column indices [lon, lat] to project (none without a reference point)."""
        if self.reference is None:
            return []
        lowered = [name.lower() for name in names]
        found = [next((i for i, name in enumerate(lowered) if name in choices), None)
                 for choices in (LONGITUDE_NAMES, LATITUDE_NAMES)]
        if None in found:
            raise DataError(f"{source}: --reference projects lon and lat columns, and the "
                            f"header has {', '.join(names)}")
        return found

    def value_names(self, names):
        """The value columns' names after projection: lon -> x_m, lat -> y_m."""
        if self.reference is None:
            return names
        return ["x_m" if name.lower() in LONGITUDE_NAMES else "y_m"
                if name.lower() in LATITUDE_NAMES else name for name in names]

    def labels(self, names):
        """(time_label, value_labels, seconds_per_unit) of the plots."""
        if self.origin is None:
            time = ("t", None, None)
        else:
            time = (f"t ({self.unit} since {self.origin})", None,
                    TIME_UNITS[self.unit] / 10 ** 9)
        if self.reference is None:
            return time
        lon, lat = self.reference
        return (time[0], tuple(f"{name} (m from {lon:g}, {lat:g})"
                               for name in self.value_names(names)), time[2])


def parse_csv(text, source="<csv>", lenient=False, columns=None):
    """Parse CSV text into :class:`Curves`, with a message naming any bad row.

    The header is ``t,y1[,y2...]`` (``time`` for ``t``), optionally preceded by a curve id
    column ``curve`` or ``id``; lines starting with ``#`` are comments. Times are
    non-decreasing per curve; a curve may have any number of samples (docs/design.md,
    "Privacy model": fewer than two is the zero function, a repeated time is a jump).
    A NaN or infinite value, a field that is not a number, a line with the wrong number of
    fields, or decreasing times, are an error naming the line (and the column), unless
    ``lenient``: then that curve is the zero function and its id is listed in ``invalid``
    with its first bad line (one curve's values never stop the others' releases).
    ``columns`` (public, :class:`Columns`): the time column holds ISO-8601 timestamps read
    from its origin in its unit, and ``lon``/``lat`` columns become metres about its
    reference point (:func:`lonlat_to_metres`), named ``x_m`` and ``y_m``.
    """
    columns = columns or Columns()
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
    coordinates = columns.coordinate_indices(source, names)
    readers = [columns.time_reader(), *[float] * (len(names) - 1)]
    groups, invalid = {}, {}    # 8 bytes a number: read row by row, kept packed
    for number, row in numbered:
        key = row[0] if id_column else "curve"
        if isinstance(row, _Unreadable):
            if not lenient:
                raise DataError(f"{source}: line {number} is not UTF-8 CSV text ({row.why})")
            groups.setdefault(key, array.array("d"))
            invalid.setdefault(key, f"a line that is not UTF-8 CSV text ({row.why})")
            continue
        if len(row) != len(header):
            if not lenient:
                raise DataError(f"{source}: line {number} has {len(row)} fields, "
                                f"expected {len(header)}")
            groups.setdefault(key, array.array("d"))
            invalid.setdefault(key, f"a line with {len(row)} fields")
            continue
        fields = row[1:] if id_column else row
        try:
            numbers = [read(value) for read, value in zip(readers, fields)]
        except (TypeError, ValueError):   # a field that cannot be read is NaN, named below
            numbers = [_number(read, value) for read, value in zip(readers, fields)]
        groups.setdefault(key, array.array("d")).extend(numbers)
        if not all(map(math.isfinite, numbers)):
            reason = _unreadable(names, fields, numbers, number, columns)
            if not lenient:
                raise DataError(f"{source}: {reason}")
            invalid.setdefault(key, reason)
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
        if coordinates:
            table[:, coordinates] = numpy.stack(
                lonlat_to_metres(*table[:, coordinates].T, columns.reference), axis=1)
        times.append(table[:, 0])
        values.append(table[:, 1] if table.shape[1] == 2 else table[:, 1:])
    return Curves(tuple(groups), tuple(times), tuple(values),
                  tuple(columns.value_names(names[1:])), *columns.labels(names[1:]),
                  invalid=tuple(invalid.items()))


def _unreadable(names, fields, numbers, line, columns):
    """Why a line is no valid sample: its first field that is not a finite number, named
    by column and line (a timestamp without --origin says how to read it)."""
    index = next(i for i, value in enumerate(numbers) if not math.isfinite(value))
    name, text = names[index], fields[index]
    if index == 0 and columns.origin is not None:
        return f"line {line}: {name}={text!r} is not an ISO-8601 timestamp"
    hint = ""
    if index == 0 and _nanoseconds_or_none(text) is not None:
        hint = " (it is a timestamp: give its public --origin, and --time-unit)"
    return f"line {line}: {name}={text!r} is not a finite number{hint}"


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


def _number(read, text):
    """One CSV field through its column's reader, NaN if it cannot be read (the caller
    names the line and column)."""
    try:
        return read(text)
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
    data = numpy.array([_number(float, row[index] if index < len(row) else "") for row in rows],
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
    x, y = lonlat_to_metres(numpy.array([float(r["lon"]) for r in rows]),
                            numpy.array([float(r["lat"]) for r in rows]), AIS_CENTRE[::-1])
    stamps = [nanoseconds(r["time"]) for r in rows]   # UTC (gpcompiler/data/PROVENANCE.md)
    ids, times, values = [], [], []
    keys = numpy.array([r["trajectory"] for r in rows])
    for key in dict.fromkeys(keys):
        index = numpy.flatnonzero(keys == key)
        t = numpy.array([(stamps[i] - stamps[index[0]]) / TIME_UNITS["min"] for i in index])
        keep = numpy.concatenate([[True], numpy.diff(t) > 0])
        if keep.sum() >= minimum_points:
            ids.append(f"ais{key}")
            times.append(t[keep])
            values.append(numpy.stack([x[index][keep], y[index][keep]], axis=1))
    return Curves(tuple(ids), tuple(times), tuple(values), ("x_m", "y_m"),
                  "t (minutes from the trajectory's start)", ("x (m)", "y (m)"), 60.0)
