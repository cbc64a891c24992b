"""The ledger file (docs/reference/ledger.md): JSON Lines, one record per privacy step,
appended atomically, read back and composed exactly (Fractions).

A record's ``cost`` is exact: GP, epsilon per unit distance (loss <= epsilon (d + slack));
CGP, rho per unit squared distance (loss <= rho (d + slack)^2); DP, epsilon with ``delta``;
zCDP, rho. Costs compose by summing within one model and one metric.
"""
import datetime
import hashlib
import json
import os
import uuid
from fractions import Fraction

from ..errors import UserError

FORMAT = "gpcompiler-ledger/1"      # the JSON Schema docs/reference/ledger.schema.json
MODELS = ("GP", "CGP", "DP", "zCDP")
REQUIRED = ("format", "release_id", "time", "label", "model", "metric", "spec", "cost",
            "delta", "parameter", "sensitivity", "noise", "lattice", "bound", "slack", "count")


class LedgerError(UserError, ValueError):
    """A ledger file cannot be read or appended to as given."""


def rational(value):
    """The exact value of a float or Fraction as "p/q" (or "p")."""
    return str(Fraction(value))


def sha256_json(value):
    """sha256 of the canonical JSON of ``value`` (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def metric_identity(spec_path, parameters):
    """{"name", "sha256"} of a spec file's metric (:func:`metric_identity_of`)."""
    import tomllib
    try:
        with open(spec_path, "rb") as handle:
            document = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise LedgerError(f"{spec_path}: cannot read its metric: {error}") from None
    return metric_identity_of({"metric": document.get("metric", {}),
                               "domain": document.get("domain", {})}, parameters)


def metric_identity_of(tables, parameters):
    """{"name", "sha256"} of a metric: the spec's [metric] and [domain] ``tables`` with the
    parameter values of the release (the distance d that a GP/CGP cost multiplies); the
    compiler states the same in the C target (NAME_METRIC_SHA256)."""
    table = tables["metric"]
    name = ("H1" if table.get("sobolev") else "weighted" if "weight" in table
            else table.get("inner_product", "L2"))
    return {"name": name, "sha256": sha256_json({**tables, "parameters": dict(parameters)})}


# The neighbouring relation of the CDF releases (gpcompiler/cdf/estimators.py): N public.
REPLACE_ONE = "records: replace one (N public)"


def replace_one_identity():
    return {"name": REPLACE_ONE, "sha256": hashlib.sha256(REPLACE_ONE.encode()).hexdigest()}


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def record(*, label, model, metric, cost, parameter, noise, spec=None, delta=None,
           sensitivity=None, lattice=None, bound=None, slack=None, count=1, release_id=None,
           time=None):
    """One ledger record (``noise``: (family, scale)); costs are written exactly."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
    family, scale = noise
    return {"format": FORMAT, "release_id": release_id or uuid.uuid4().hex,
            "time": (time or utc_now()).isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "label": label, "model": model, "metric": metric, "spec": spec,
            "cost": rational(cost), "delta": None if delta is None else rational(delta),
            "parameter": float(parameter),
            "sensitivity": None if sensitivity is None else float(sensitivity),
            "noise": {"family": family, "scale": None if scale is None else float(scale)},
            "lattice": lattice, "bound": bound, "slack": slack, "count": int(count)}


def to_jsonl(records):
    """The records as JSON Lines (one line each, "\\n"-terminated)."""
    return "".join(json.dumps(item, separators=(",", ":")) + "\n" for item in records)


def append(path, records):
    """Append ``records`` with one os.write on an O_APPEND descriptor: a crash leaves all
    of them or none (a torn last line, which :func:`read` refuses); a short write is an
    error naming the file."""
    data = to_jsonl(records).encode()
    descriptor = open_ledger(path, os.O_WRONLY)
    try:
        written = os.write(descriptor, data)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    if written != len(data):
        raise LedgerError(f"{path}: only {written} of {len(data)} bytes appended (disk full?): "
                          "its last line is torn")


def open_ledger(path, mode):
    """A descriptor of the ledger file for appending (created with its directories)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return os.open(path, mode | os.O_APPEND | os.O_CREAT, 0o600)


def read(path):
    """The records of a ledger file, each checked (:func:`check`); a torn last line (no
    line end: an interrupted append) or a line that is not a record is one error."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise LedgerError(f"{path}: {error.strerror}") from None
    if data and not data.endswith(b"\n"):
        raise LedgerError(f"{path}: the last line is torn (no line end: an append was "
                          "interrupted); the records before it are intact: remove the last "
                          "line to read them")
    records = []
    for number, line in enumerate(data.splitlines(), 1):
        try:
            records.append(check(json.loads(line)))
        except (ValueError, TypeError, KeyError, ArithmeticError) as error:
            raise LedgerError(f"{path}, line {number}: not a {FORMAT} record ({error})") from None
    return records


def check(item):
    """``item`` if it is a record of this format (the schema's structure, and exact costs)."""
    if not isinstance(item, dict) or item.get("format") != FORMAT:
        raise ValueError(f"format is not {FORMAT!r}")
    missing = [key for key in REQUIRED if key not in item]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    if item["model"] not in MODELS:
        raise ValueError(f"model {item['model']!r}")
    if cost(item) < 0 or (item["delta"] is not None and not 0 <= Fraction(item["delta"]) < 1):
        raise ValueError("a cost is negative or delta is not in [0, 1)")
    when(item)
    return item


def cost(item):
    """The exact cost of a record (Fraction of its rational string)."""
    return Fraction(item["cost"])


def when(item):
    """The record's time (UTC)."""
    moment = datetime.datetime.fromisoformat(item["time"].replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError("time has no time zone")
    return moment.astimezone(datetime.timezone.utc)


def epoch(moment, length):
    """The UTC epoch of a time: "YYYY-MM-DD" (day) or "YYYY-Www" (ISO week, from Monday)."""
    if length == "day":
        return moment.date().isoformat()
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def group(item):
    """What composes by summing: (model, metric sha256)."""
    return item["model"], item["metric"]["sha256"]


def compose(records, length=None):
    """{(model, metric sha256[, epoch]): (sum of costs, sum of deltas)}, exactly; with
    ``length`` ("day"/"week") per UTC epoch too."""
    totals = {}
    for item in records:
        key = group(item) + ((epoch(when(item), length),) if length else ())
        spent, delta = totals.get(key, (Fraction(0), Fraction(0)))
        totals[key] = (spent + cost(item), delta + Fraction(item["delta"] or 0))
    return totals


def in_model(records, model):
    """The exact total of ``records`` in a ledger of ``model`` (GP or CGP): a GP step of
    epsilon costs epsilon^2/2 in CGP (adaptive/ledger.py); a CGP step has no GP cost."""
    total = Fraction(0)
    for item in records:
        if item["model"] == model:
            total += cost(item)
        elif (item["model"], model) == ("GP", "CGP"):
            total += cost(item) ** 2 / 2
        else:
            raise LedgerError(f"a {item['model']} step has no cost in a {model} ledger")
    return total
