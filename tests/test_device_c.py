"""The C target's device ledger (issue 35 item 3; docs/reference/c.md, "The device ledger"):
NAME_device_release on a simulated clock keeps the cap per UTC epoch exactly, checks it
before any noise, returns the stored release of a repeated curve charging nothing, and shares
one ledger (records and stored releases) with the Python target's DeviceLedger."""
import datetime
import os
import subprocess
from fractions import Fraction

import numpy
import pytest

from c_build import build_spec_driver
from conftest import ROOT
from gpcompiler.accounting import CapExceededError, compose, records
from gpcompiler.accounting.device import DeviceLedger, privatize_on_device

GP, CGP, DAY, WEEK = 1, 2, 1, 2          # enum gp_budget, enum gp_epoch
OK, EINVAL, ECAP, ELEDGER = 0, 1, 6, 7   # enum gp_status
START = datetime.datetime(2026, 3, 1, 9, tzinfo=datetime.timezone.utc)
T = numpy.linspace(0, 1, 60)


@pytest.fixture(scope="module")
def device(tmp_path_factory):
    """run(name, calls) -> one (status, charged, fills, out, message) per call: tests/c/
    device_driver.c built against the spec's C target and its NAME_device.c (once per name)."""
    directory = tmp_path_factory.mktemp("device_c")
    built = {}

    def run(name, calls):
        if name not in built:
            built[name] = build_spec_driver(directory, name, "device_driver.c", "-O1", True)
        return run_driver(built[name], calls)
    return run


def run_driver(program, calls):
    done = subprocess.run([str(program)], input="".join(map(_line, calls)),
                          capture_output=True, text=True, check=True, timeout=120)
    results = []
    for line in done.stdout.splitlines():
        numbers, message = line.split(" | ", 1)
        status, charged, fills, *out = numbers.split()
        results.append((int(status), int(charged), int(fills),
                        None if out[0] == "#" else [float.fromhex(v) for v in out], message))
    return results


def _line(call):
    path, cap, epoch, now, budget, value, bound, release_id, t, y = call
    numbers = " ".join(repr(float(v)) for v in (*t, *numpy.ravel(y)))
    return (f"{path} {cap!r} {epoch} {int(now.timestamp())} {budget} {value!r} {bound!r} "
            f"{release_id} {len(t)} {numbers}\n")


def call(path, y, now, *, cap=1.0, epoch=DAY, budget=GP, value=0.3, bound=0.0, number=0):
    return (path, cap, epoch, now, budget, value, bound, f"{number:032x}", T, y)


def test_c_thirty_days_on_the_device(device, tmp_path):
    """tests/test_ledger.py's 30 days in C: each day the curve of the morning (charged),
    again 5 hours later (the stored release: same values, nothing drawn or charged), two
    new curves, then a fourth that the cap 1 per day refuses before any noise, naming the
    spend exactly, and the morning's curve again, refused in the same words (the cap before
    the memo). The store is 0700, its files 0600. Every day's spend is 3 x 0.3 <= 1 exactly, 90 stored releases, no values
    in the ledger; then a week's cap reached exactly (0.9 + 0.3 = 1.2 as Fractions: allowed),
    the next refused, and a rho cap counting each GP step eps^2/2."""
    path, calls = tmp_path / "watch.jsonl", []
    for day in range(30):
        now = START + datetime.timedelta(days=day)
        curves = [numpy.sin(3 * T) + day, numpy.cos(T) + day, T + day, T * T + day]
        calls += [call(path, curves[0], now, number=4 * day),
                  call(path, curves[0], now + datetime.timedelta(hours=5), number=4 * day + 1),
                  *(call(path, y, now, number=4 * day + k) for k, y in ((2, curves[1]),
                                                                      (3, curves[2]))),
                  call(path, curves[3], now, number=999),
                  call(path, curves[0], now, number=998)]     # stored, but the cap is spent
    monday = START + datetime.timedelta(days=29)          # 2026-03-30: 0.9 spent this week
    calls += [call(path, T - 1, monday, cap=1.2, epoch=WEEK, number=1000),
              call(path, T - 2, monday, cap=1.2, epoch=WEEK, number=1001),
              call(path, T - 3, monday, cap=0.4, budget=CGP, value=0.3, number=1002)]
    results = device("linear", calls)
    spent = str(3 * Fraction(0.3))
    for day in range(30):
        first, again, second, third, refused, unchanged = results[6 * day:6 * day + 6]
        assert first[:3] == second[:3] == third[:3] == (OK, 1, 1)
        assert again[:3] == (OK, 0, 0) and again[3] == first[3]
        assert refused[:4] == unchanged[:4] == (ECAP, -1, 0, None)
        date = (START + datetime.timedelta(days=day)).date().isoformat()
        assert refused[4] == (f"{path}: refused before any noise: the GP cap 1 per UTC day "
                              f"({date}) is spent to 0.9 (exactly {spent}); "
                              "this release costs 0.3") == unchanged[4]
    week_last, week_over, rho_over = results[180:]
    assert week_last[:3] == (OK, 1, 1) and week_over[:2] == (ECAP, -1)
    assert "GP cap 1.2 per UTC week (2026-W14) is spent to 1.2 (exactly " \
        f"{4 * Fraction(0.3)})" in week_over[4]
    assert f"CGP cap 0.4 per UTC day (2026-03-30) is spent to 0.18 (exactly " \
        f"{4 * Fraction(0.3) ** 2 / 2})" in rho_over[4]
    items = records.read(path)
    assert len(items) == 91
    days = compose(items, "day")
    assert [total for total, _ in days.values()] == [3 * Fraction(0.3)] * 29 + [4 * Fraction(0.3)]
    (total, _), = compose(items).values()
    assert total == 91 * Fraction(0.3)
    assert len(os.listdir(f"{path}.releases")) == 91
    assert os.stat(f"{path}.releases").st_mode & 0o777 == 0o700
    assert {os.stat(entry).st_mode & 0o777 for entry in os.scandir(f"{path}.releases")} == {0o600}
    assert "release" not in path.read_text().replace('"release_id"', "")


@pytest.mark.parametrize("when", ["2026-12-31", "2027-01-01", "2024-12-30", "2021-01-03",
                                  "2000-02-29", "1970-01-01"])
def test_c_names_the_utc_epoch_as_python(device, tmp_path, when):
    """The refusal names the epoch as records.epoch does: the UTC day, and the ISO week (the
    week of a year's first Thursday is week 1; 2027-01-01 is in 2026-W53)."""
    now = datetime.datetime.fromisoformat(when).replace(hour=23, minute=59, second=59,
                                                        tzinfo=datetime.timezone.utc)
    results = device("linear", [call(tmp_path / "l.jsonl", T, now, cap=0.1, epoch=epoch)
                                for epoch in (DAY, WEEK)])
    for (status, *_, message), length in zip(results, ("day", "week")):
        assert status == ECAP and f"per UTC {length} ({records.epoch(now, length)})" in message


@pytest.mark.parametrize("name", ["linear", "trajectory_linear"])
def test_python_and_c_share_one_ledger(device, tmp_path, name):
    """Python's DeviceLedger and the C device ledger on one file: each target's stored
    release is the other's memoized re-release (the same values, nothing charged or drawn),
    the spend counts both targets' records, and the refusal of the fourth curve is Python's
    line in C, leaving the ledger and its store untouched; `gpcompiler ledger` reads the
    exact total."""
    path = tmp_path / "shared.jsonl"
    python = DeviceLedger(path, cap=1.0, clock=lambda: START)
    shape = (len(T), 2) if name == "trajectory_linear" else (len(T),)
    curves = [numpy.reshape(numpy.sin(k * numpy.arange(numpy.prod(shape))), shape)
              for k in (1, 2, 3, 4)]
    spec = f"specs/{name}.toml"
    released = {0: privatize_on_device(python, spec, T, curves[0], epsilon=0.3)}
    (memo, fresh), = [device(name, [call(path, curves[0], START, number=1),
                                    call(path, curves[1], START, number=2)])]
    assert memo[:3] == (OK, 0, 0) and memo[3] == list(numpy.ravel(released[0][0]))
    assert fresh[:3] == (OK, 1, 1)
    again, charged = privatize_on_device(python, spec, T, curves[1], epsilon=0.3)
    assert not charged and list(numpy.ravel(again)) == fresh[3]
    assert privatize_on_device(python, spec, T, curves[2], epsilon=0.3)[1]
    before = (path.read_bytes(), sorted(os.listdir(f"{path}.releases")))
    with pytest.raises(CapExceededError) as refused:
        privatize_on_device(python, spec, T, curves[3], epsilon=0.3)
    (status, charged, fills, out, message), = device(name, [call(path, curves[3], START)])
    assert (status, charged, fills, out) == (ECAP, -1, 0, None)
    assert message == str(refused.value)
    assert (path.read_bytes(), sorted(os.listdir(f"{path}.releases"))) == before
    labels = [item["label"] for item in records.read(path)]
    assert labels == [f"device: {name}", f"{name}: privatize (C target)", f"device: {name}"]
    done = subprocess.run(["python", "-m", "gpcompiler", "ledger", str(path)], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    assert f"epsilon per unit distance {3 * Fraction(0.3)} = " in done.stdout


def test_c_refuses_what_it_cannot_compose_exactly(device, tmp_path):
    """Before any noise and with nothing written: a torn last line, a cost that is no
    float's exact value (1/3), a CGP step in a GP cap (Python's refusal), and bad arguments
    (a cap of 0 or inf, a bad release id: the ledger is not even created). A batch of 3
    curves at 0.25 over another metric counts 0.75 against the cap (one budget, each curve
    counted): 0.3 more is refused, 0.25 more reaches the cap exactly."""
    path = tmp_path / "l.jsonl"
    other = records.record(label="x", model="GP", metric={"name": "L2", "sha256": "0" * 64},
                           cost=0.25, parameter=0.25, noise=("spherical Laplace", 4.0),
                           time=START, count=3)
    records.append(path, [other])
    over, last = device("linear", [call(path, T, START, number=1),
                                   call(path, T, START, value=0.25, number=2)])
    assert over[:3] == (ECAP, -1, 0) and "spent to 0.75 (exactly 3/4)" in over[4]
    assert last[:3] == (OK, 1, 1)
    cases = {"torn": path.read_text() + '{"format"',
             "third": records.to_jsonl([{**other, "cost": "1/3"}]),
             "cgp": records.to_jsonl([{**other, "model": "CGP", "cost": "1/4"}])}
    for case, text in cases.items():
        path.write_text(text)
        before = path.read_bytes()
        (status, charged, fills, out, message), = device("linear", [call(path, T + 5, START)])
        assert (status, charged, fills, out) == (ELEDGER, -1, 0, None), case
        assert {"torn": "last line is torn", "third": "cost 1/3 is not a float's exact value",
                "cgp": "a CGP step has no cost in a GP ledger"}[case] in message
        assert path.read_bytes() == before
    fresh = tmp_path / "new" / "l.jsonl"
    (tmp_path / "new").mkdir()
    bad = [call(fresh, T, START, cap=0.0), call(fresh, T, START, cap=float("inf")),
           (*call(fresh, T, START)[:7], "0" * 31, T, T)]
    assert [result[:4] for result in device("linear", bad)] == [(EINVAL, -1, 0, None)] * 3
    assert os.listdir(tmp_path / "new") == []


HOSTILE_LINES = ["{", '"abc', '{"x":}', "[" * 100 + "]" * 100, '{"time": "2026-03-01T09:0',
                 "\\", '{"format":"gpcompiler-ledger/1","model":"GP","metric":{"sha256":1},'
                 '"time":"2026-02-30T00:00:00Z","cost":"1"}', '{"a":"\\u00"}']


def test_c_reads_hostile_ledger_text_without_memory_errors(tmp_path):
    """Built with AddressSanitizer and UBSan: ledger lines that are not records (unclosed,
    deeply nested, a bad date, odd escapes) and a stored release that is not one are each
    GP_ELEDGER with nothing drawn; a charged release, its memoized re-release and a
    refusal run clean."""
    try:
        program = build_spec_driver(tmp_path, "linear", "device_driver.c", "-O1", True,
                                    ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
    except subprocess.CalledProcessError as error:
        pytest.skip(f"no sanitizer runtime for this compiler: {error.stderr.splitlines()[-1:]}")
    calls = []
    for number, line in enumerate(HOSTILE_LINES):
        (tmp_path / f"{number}.jsonl").write_text(line + "\n")
        calls.append(call(tmp_path / f"{number}.jsonl", T, START))
    path = tmp_path / "l.jsonl"
    calls += [call(path, T, START), call(path, T, START), call(path, T + 1, START, cap=0.5)]
    results = run_driver(program, calls)
    assert [result[:3] for result in results] == \
        [(ELEDGER, -1, 0)] * len(HOSTILE_LINES) + [(OK, 1, 1), (OK, 0, 0), (ECAP, -1, 0)]
    stored, = (tmp_path / "l.jsonl.releases").iterdir()
    stored.write_text(stored.read_text()[:-5] + "\n")
    (status, _, fills, out, message), = run_driver(program, [call(path, T, START)])
    assert (status, fills, out) == (ELEDGER, 0, None) and "not a stored release" in message
