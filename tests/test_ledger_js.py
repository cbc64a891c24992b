"""The JS target writes the ledger's records and keeps a budget across days (issue 35): its
ledgerRecord line is the Python target's line byte for byte (but the label, id and time), its
costs Python's str(Fraction(value)); records of the Python, C and JS targets read back to the
same exact totals; a ledger and store written by Python's DeviceLedger and by the JS
DeviceLedger are one ledger (the same memo keys, caps and totals, `gpcompiler ledger`)."""
import datetime
import json
import subprocess
from fractions import Fraction

import numpy
import pytest

from conftest import ROOT
from gpcompiler.accounting import DeviceLedger, compose, in_model, privatize_on_device, records
from test_js_target import node_missing
from test_ledger import curves_csv, validate
from test_ledger_c import CGP, GP, RELEASE_ID, TIME, c_record, driver  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(node_missing() is not None, reason=str(node_missing()))


def node(script, payload):
    """The JSON that `script` (an ES module run in the repository, `payload` in its
    variable input) prints."""
    prelude = "const input = JSON.parse(process.argv[1]);\n"
    done = subprocess.run(["node", "--input-type=module", "-e", prelude + script,
                           json.dumps(payload)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


RECORD = """import * as m from "./generated/js/%s.mjs";
console.log(JSON.stringify(input.map(([budget, value, bound, count, label, id, time]) => {
    try { return m.ledgerRecord(budget, value, bound, count, label ?? undefined, id, time); }
    catch (error) { return error.status; }
})));"""


@pytest.mark.parametrize("name, option, value, bound", [("linear", "--epsilon", 0.3, 0.0),
                                                        ("linear", "--rho", 0.05, 2.0),
                                                        ("legendre10", "--rho", 7e-5, 0.0)])
def test_js_writes_the_python_targets_line(driver, cli, tmp_path, name, option, value, bound):
    """The record of the same release from the Python, C and JS targets: JS's line is
    Python's byte for byte given Python's label, id and time (every float its repr, the
    cost exact); schema-valid; a file of the three composes to three times one's cost."""
    ledger = tmp_path / "l.jsonl"
    bound_option = ("--bound", bound) if bound else ()
    assert cli("privatize", f"specs/{name}.toml", curves_csv(tmp_path / "c.csv"), option, value,
               *bound_option, "--ledger", ledger, "-q", "-o", tmp_path / "r.csv")[0] == 0
    line = ledger.read_text()
    python = json.loads(line)
    budget = "epsilon" if option == "--epsilon" else "rho"
    same, mine = node(RECORD % name, [
        [budget, value, bound, 2, python["label"], python["release_id"], python["time"]],
        [budget, value, bound, 2, None, RELEASE_ID, TIME]])
    assert same == line
    js = records.check(json.loads(mine))
    validate(js)
    assert (js["label"], js["release_id"], js["time"]) == (f"{name}: privatize (JS target)",
                                                           RELEASE_ID, TIME)
    records.append(ledger, [c_record(driver, name, GP if budget == "epsilon" else CGP, value,
                                     bound=bound), js])
    items = records.read(ledger)
    (total, _), = compose(items).values()
    assert total == in_model(items, "CGP" if budget == "rho" else "GP") == 3 * Fraction(value)


def test_js_cost_is_pythons_exact_fraction():
    """The cost is str(Fraction(value)) (BigInt arithmetic), from denominators near 2^1074
    to numerators of 300 digits, under each budget whose release the facts allow; a bad
    argument is C's GP_EINVAL."""
    values = [0.1, 3.0, 2.5, 1e-300, 1e300, 2.0 ** 1000 + 2.0 ** 948, 5e-324, 0.7 * 2 ** -1000]
    calls = [[budget, v, 0, 1, "x", RELEASE_ID, TIME] for v in values
             for budget in ("epsilon", "rho")]
    lines = node(RECORD % "linear", calls)
    written = [(call[1], json.loads(line)["cost"]) for call, line in zip(calls, lines)
               if not line.startswith("GP_")]
    assert len(written) >= len(values) and all(cost == str(Fraction(v)) for v, cost in written)
    assert {v for v, _ in written} >= {1e-300, 1e300, 0.1}


EPOCHS = """import * as m from "./generated/js/linear.mjs";
const storage = { name: "days", read: () => input.lines, append() {}, get: () => null, put() {} };
const totals = (length) => new m.DeviceLedger(storage).totals(length)
    .map((g) => [g.epoch, g.model, g.cost, g.records]);
console.log(JSON.stringify([totals("day"), totals("week")]));"""


def test_js_epochs_and_totals_are_pythons():
    """Records at the turns of days, ISO weeks and years (2026-12-31 is in 2026-W53,
    2027-01-04 starts 2027-W01), read by the JS ledger: its exact totals per UTC day and
    week are records.compose's."""
    start = datetime.datetime(2026, 12, 27, 23, 59, 59, tzinfo=datetime.timezone.utc)
    metric = records.replace_one_identity()
    items = [records.record(label="x", model=("DP", "zCDP")[k % 2], metric=metric,
                            cost=0.1 * (k + 1), parameter=1.0, noise=("Gaussian", 1.0),
                            delta=1e-9 if k % 2 == 0 else None,
                            time=start + datetime.timedelta(hours=7 * k))
             for k in range(60)]
    days, weeks = node(EPOCHS, {"lines": records.to_jsonl(items)})
    for got, length in ((days, "day"), (weeks, "week")):
        count = {}
        for i in items:
            key = (i["model"], records.epoch(records.when(i), length))
            count[key] = count.get(key, 0) + 1
        expected = sorted((epoch, model, str(cost), count[model, epoch])
                          for (model, _, epoch), (cost, _) in compose(items, length).items())
        assert sorted(map(tuple, got)) == expected
    assert {w[0] for w in weeks} == {"2026-W52", "2026-W53", "2027-W01", "2027-W02"}


DEVICE = """import * as m from "./generated/js/linear.mjs";
const device = new m.DeviceLedger(await m.fileStorage(input.path), {
    cap: input.cap, clock: () => new Date(input.now) });
const out = [];
for (const y of input.curves) {
    try { out.push(m.privatizeOnDevice(device, input.t, y, "epsilon", input.epsilon)); }
    catch (error) { out.push(error.message); }
}
console.log(JSON.stringify(out.map((r) => (typeof r === "string" ? r
    : [Array.from(r.coefficients), r.charged]))));"""


def test_a_ledger_kept_by_python_and_js_is_one_ledger(cli, tmp_path):
    """Python's DeviceLedger releases a curve; the JS DeviceLedger on the same file finds its
    stored release (the same memo key: device.digest and sha256_json matched), charges a
    new curve, and refuses a third over the cap; Python then sees JS's charge, and
    `gpcompiler ledger FILE` prints the exact total of both."""
    now = datetime.datetime(2026, 3, 1, 9, tzinfo=datetime.timezone.utc)
    path = tmp_path / "watch.jsonl"
    device = DeviceLedger(path, cap=0.7, clock=lambda: now)
    t = numpy.linspace(0, 1, 60)
    curves = [numpy.sin(3 * t), numpy.cos(t), t * t]
    python, charged = privatize_on_device(device, "specs/linear.toml", t, curves[0], epsilon=0.3)
    assert charged
    stored, second, refused = node(DEVICE, {
        "path": str(path), "cap": 0.7, "now": "2026-03-01T17:00:00Z", "epsilon": 0.3,
        "t": t.tolist(), "curves": [c.tolist() for c in curves]})
    assert stored == [python.tolist(), False] and second[1] is True
    assert "GP cap 0.7 per UTC day (2026-03-01) is spent to 0.6" in refused
    assert "this release costs 0.3" in refused
    items = records.read(path)
    assert [i["label"] for i in items] == ["device: linear"] * 2
    assert device.spent("GP") == 2 * Fraction(0.3)
    roomier = DeviceLedger(path, cap=0.9, clock=lambda: now)     # the cap before the memo
    again, charged = privatize_on_device(roomier, "specs/linear.toml", t, curves[1], epsilon=0.3)
    assert not charged and again.tolist() == second[0]       # JS's store, read by Python
    status, out, _ = cli("ledger", path)
    total = 2 * Fraction(0.3)
    assert status == 0 and f"epsilon per unit distance {total} = {float(total)!r}" in out
