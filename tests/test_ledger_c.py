"""The C target writes the ledger's records (issue 35 item 1): NAME_ledger_record gives the
record the Python target's `privatize --ledger` writes for the same release (its exact cost,
metric, spec and facts), valid under the schema, and the two read back to the same exact
totals; bad arguments are refused with out untouched."""
import json
import subprocess
from fractions import Fraction

import pytest

from c_build import build_spec_driver
from gpcompiler.accounting import compose, records
from test_ledger import curves_csv, validate

GP, CGP = 1, 2      # enum gp_budget
RELEASE_ID, TIME = "0123456789abcdef" * 2, "2026-03-01T09:00:00.250000Z"


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    """tests/c/ledger_driver.c built with the strict flags against each spec's C target."""
    directory = tmp_path_factory.mktemp("ledger_c")
    built = {}

    def run(name, lines):
        if name not in built:
            built[name] = build_spec_driver(directory, name, "ledger_driver.c")
        done = subprocess.run([str(built[name])], input="".join(f"{line}\n" for line in lines),
                              capture_output=True, text=True, check=True, timeout=60)
        return [line.split(" ", 2) for line in done.stdout.splitlines()]
    return run


def c_record(driver, name, budget, value, count=2, bound=0.0):
    (status, untouched, line), = driver(name, [f"{budget} {value!r} {bound!r} {count} "
                                               f"{RELEASE_ID} {TIME} 4096"])
    assert (status, untouched) == ("0", "0"), line
    return records.check(json.loads(line))


SAME = ("model", "metric", "spec", "cost", "delta", "parameter", "sensitivity", "noise",
        "lattice", "bound", "slack", "count")


@pytest.mark.parametrize("name, option, value, bound", [("linear", "--epsilon", 0.3, 0.0),
                                                        ("linear", "--rho", 0.05, 2.0),
                                                        ("legendre10", "--rho", 7e-5, 0.0)])
def test_c_writes_the_python_targets_record(driver, cli, tmp_path, name, option, value, bound):
    """The record of the same release from both targets: every field but the label, id and
    time equal (the cost exactly); a file of both composes to twice one's total, exactly."""
    ledger = tmp_path / "l.jsonl"
    data = curves_csv(tmp_path / "c.csv")
    bound_option = ("--bound", bound) if bound else ()
    assert cli("privatize", f"specs/{name}.toml", data, option, value, *bound_option,
               "--ledger", ledger, "-o", tmp_path / "r.csv", "-q")[0] == 0
    python, = records.read(ledger)
    c = c_record(driver, name, GP if option == "--epsilon" else CGP, value, bound=bound)
    validate(c)
    assert {key: c[key] for key in SAME} == {key: python[key] for key in SAME}
    assert (c["release_id"], c["time"]) == (RELEASE_ID, TIME)
    records.append(ledger, [c])
    (total, _), = compose(records.read(ledger)).values()
    assert total == 2 * Fraction(value)


@pytest.mark.parametrize("value", [0.1, 3.0, 2.5, 1e-300, 1e300, 2.0 ** 1000 + 2.0 ** 948])
def test_c_cost_is_pythons_exact_fraction(driver, value):
    """The cost is str(Fraction(value)): p/q in lowest terms, or p for an integer, from
    denominators near 2^1000 to numerators of 300 digits, under each budget whose release
    the facts allow."""
    lines = driver("linear", [f"{budget} {value!r} 0 1 {RELEASE_ID} {TIME} 4096"
                              for budget in (GP, CGP)])
    written = [json.loads(line) for status, _, line in lines if status == "0"]
    assert written and all(item["cost"] == str(Fraction(value)) for item in written)


def test_c_refuses_bad_arguments_and_leaves_out_untouched(driver):
    """A release id that is not 32 lowercase hex digits, a time that is not UTC (or would
    need escaping), no curves, a bad budget or too small a buffer: an error, out untouched."""
    good = f"{RELEASE_ID} {TIME}"
    lines = [f"1 0.5 0 1 {RELEASE_ID.upper()} {TIME} 4096",
             f"1 0.5 0 1 {RELEASE_ID[1:]} {TIME} 4096",
             f"1 0.5 0 1 {RELEASE_ID} 2026-03-01T09:00:00+01:00 4096",
             f'1 0.5 0 1 {RELEASE_ID} 2026-03-01T09:00:00"Z 4096',
             f"1 0.5 0 0 {good} 4096", f"3 0.5 0 1 {good} 4096", f"1 -0.5 0 1 {good} 4096",
             f"1 0.5 0 1 {good} 100"]
    results = driver("linear", lines)
    assert [(status, untouched) for status, untouched, _ in results] == \
        [("1", "1")] * 7 + [("4", "1")]
