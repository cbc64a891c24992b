"""The ledger that travels (issue 35): records in one versioned format with exact costs,
written by every releasing command and read back to the same exact totals; a torn append
is refused; a budget across days on the device (cap per UTC epoch, memoized re-release)."""
import datetime
import json
import math
import os
from fractions import Fraction

import numpy
import pytest

from conftest import ROOT
from gpcompiler.accounting import (CapExceededError, DeviceLedger, LedgerError, compose,
                                   in_model, privatize_on_device, read)
from gpcompiler.accounting import records

SCHEMA = json.loads((ROOT / "docs" / "reference" / "ledger.schema.json").read_text())


def validate(item):
    """The record against the versioned JSON Schema of the docs."""
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema validates the schema")
    jsonschema.validate(item, SCHEMA, format_checker=jsonschema.FormatChecker())


def curves_csv(path, shift=0.0):
    t = numpy.linspace(0, 1, 40)
    rows = [f"{key},{a!r},{b!r}" for key, scale in (("a", 1.0), ("b", -2.0))
            for a, b in zip(t, scale * numpy.sin(3 * t) + shift)]
    path.write_text("curve,t,y\n" + "\n".join(rows) + "\n")
    return path


def metadata(path):
    """The # key: value lines of a CSV release."""
    lines = [line[2:].split(": ", 1) for line in path.read_text().splitlines()
             if line.startswith("# ")]
    return {key: json.loads(value) for key, value in lines}


@pytest.mark.parametrize("model, budget", [("GP", 0.7), ("CGP", 0.3)])
def test_adaptive_steps_recompose_exactly(tmp_path, model, budget):
    """PrivacyLedger.to_jsonl: each step of a PrivFuncSeg run one record (schema-valid),
    read back to the ledger's exact spend; under CGP the SVT steps are GP steps of
    epsilon1 + epsilon2 (not a float) whose CGP cost is epsilon^2/2."""
    from gpcompiler.adaptive import priv_func_seg
    t = numpy.linspace(0, 1, 200)
    result = priv_func_seg(t, numpy.sin(6 * t), "specs/linear.toml", rng=3,
                           **{"epsilon" if model == "GP" else "rho": budget})
    ledger = result.ledger
    metric = records.metric_identity(ROOT / "specs/linear.toml", {"T": 1.0})
    path = tmp_path / "ledger.jsonl"
    records.append(path, [json.loads(line) for line in ledger.to_jsonl(metric=metric).splitlines()])
    items = read(path)
    assert len(items) == len(ledger.spends) and len({i["release_id"] for i in items}) == 1
    for item in items:
        validate(item)
    assert in_model(items, model) == ledger.spent <= Fraction(budget)
    svt = [item for item in items if "SVT" in item["label"]]
    assert svt and all(item["model"] == "GP" for item in svt)
    final = [item for item in items if item["label"] == "seg: final release"]
    assert final[0]["lattice"] == ledger.releases[-1].lattice and final[0]["bound"] > 0
    if model == "CGP":     # the GP steps' exact epsilon: sqrt(2 cost), never float(epsilon)
        gp = [s for s in ledger.spends if s.model == "GP"]
        assert [Fraction(i["cost"]) ** 2 / 2 for i in svt] == [s.cost for s in gp]
        with pytest.raises(LedgerError, match="no cost in a GP ledger"):
            in_model(items, "GP")


def test_every_releasing_command_appends(cli, tmp_path):
    """privatize (project, seg, fields) and cdf (auto degree: two steps; joint) append
    schema-valid records whose facts are those of the release file; `gpcompiler ledger`
    prints the exact composed totals and plots them."""
    data, ledger = curves_csv(tmp_path / "c.csv"), tmp_path / "l.jsonl"
    out, field = tmp_path / "r.csv", tmp_path / "field.npy"
    numpy.save(field, numpy.outer(numpy.linspace(0, 1, 5), numpy.ones(4)))
    runs = [("privatize", "specs/linear.toml", data, "--epsilon", "0.3", "-o", out),
            ("privatize", "specs/linear.toml", data, "--epsilon", "0.2", "--method", "seg",
             "-o", tmp_path / "s.json"),
            ("privatize", "specs/legendre_box.toml", field, "--rho", "0.5", "--grid", "16",
             "-o", tmp_path / "f.csv"),
            ("cdf", "--lo", "0", "--hi", "2500", "--epsilon", "1", "--delta", "1e-6",
             "--degree", "auto", "-o", tmp_path / "c1.csv"),
            ("cdf", "--column", "wage", "--column", "education", "--lo", "0", "--lo", "0",
             "--hi", "2500", "--hi", "20", "--epsilon", "0.5", "--delta", "1e-7",
             "-o", tmp_path / "c2.csv")]
    for run in runs:
        status, _, err = cli(*run, "--ledger", ledger, "-q")
        assert status == 0, err
    items = read(ledger)
    for item in items:
        validate(item)
    cgp, = [i for i in items if i["model"] == "CGP"]
    assert (Fraction(cgp["cost"]), cgp["count"], cgp["spec"]["name"]) == (Fraction(1, 2), 1,
                                                                           "legendre_box")
    assert cgp["lattice"] == metadata(tmp_path / "f.csv")["lattice"]
    gp = [i for i in items if i["model"] == "GP"]
    assert [Fraction(i["cost"]) for i in gp] == [Fraction(0.3), Fraction(0.2)]
    assert [i["count"] for i in gp] == [2, 2]
    facts = metadata(out)
    assert (gp[0]["bound"], gp[0]["slack"], gp[0]["lattice"]) == (
        facts["bound"], facts["slack"], facts["lattice"])
    scale = gp[0]["noise"]["scale"]        # 1/epsilon rounded up to the next float
    assert gp[0]["noise"]["family"] == "spherical Laplace"
    assert Fraction(math.nextafter(scale, 0)) < 1 / Fraction(0.3) <= Fraction(scale)
    assert gp[1]["noise"]["scale"] is None          # seg: its steps have their own scales
    dp = [i for i in items if i["model"] == "DP"]
    assert [i["delta"] for i in dp] == ["0", records.rational(1e-6), records.rational(1e-7)]
    assert sum(Fraction(i["cost"]) for i in dp[:2]) <= 1    # the degree choice and release
    assert dp[1]["noise"]["scale"] == metadata(tmp_path / "c1.csv")["noise"]["sigma"]
    status, out_text, _ = cli("ledger", ledger, "--plot", tmp_path / "p.png")
    assert status == 0 and (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    total = Fraction(0.3) + Fraction(0.2)
    assert f"epsilon per unit distance {total} = {float(total)!r}" in out_text
    dp_total = sum(Fraction(i["cost"]) for i in dp)
    assert f"epsilon {dp_total} = {float(dp_total)!r}, delta" in out_text


def test_torn_append_is_refused(cli, tmp_path, monkeypatch):
    """An append is one os.write: a crash in it leaves a torn last line, which the reader
    refuses in one message (and `gpcompiler ledger` in one line, exit 2)."""
    path = tmp_path / "l.jsonl"
    metric = records.replace_one_identity()
    line = records.record(label="x", model="DP", metric=metric, cost=0.5, delta=1e-6,
                          parameter=0.5, noise=("Gaussian", 3.0), sensitivity=1.0)
    records.append(path, [line, line])
    assert len(read(path)) == 2
    calls = []

    def crash(descriptor, data):
        calls.append(data)
        real_write(descriptor, data[:len(data) // 2 + 7])     # into the second line
        raise OSError(28, "No space left on device")
    real_write = os.write
    monkeypatch.setattr(os, "write", crash)
    with pytest.raises(OSError):
        records.append(path, [line, line])
    monkeypatch.setattr(os, "write", real_write)
    assert len(calls) == 1 and calls[0].count(b"\n") == 2      # both records, one write
    with pytest.raises(LedgerError, match="last line is torn"):
        read(path)
    status, _, err = cli("ledger", path)
    assert status == 2 and len(err.strip().splitlines()) == 1 and "torn" in err


def test_thirty_days_on_the_device(tmp_path):
    """30 simulated days (injected UTC clock): the watch privatizes its curve four times a
    day, the same curve twice (memoized: the stored release, charged nothing) and two new
    ones, then a third new one that the cap 1 per day refuses before any noise; every
    day's exact spend is 3 x 0.3 <= 1, the store holds one file per charged release, and
    nothing else holds the released values."""
    now = [datetime.datetime(2026, 3, 1, 9, tzinfo=datetime.timezone.utc)]
    device = DeviceLedger(tmp_path / "watch.jsonl", cap=1.0, clock=lambda: now[0])
    t = numpy.linspace(0, 1, 60)
    refused = 0
    for day in range(30):
        now[0] = datetime.datetime(2026, 3, 1, 9, tzinfo=datetime.timezone.utc) + \
            datetime.timedelta(days=day)
        curves = [numpy.sin(3 * t) + day, numpy.cos(t) + day, t + day, t * t + day]
        first, charged = privatize_on_device(device, "specs/linear.toml", t, curves[0],
                                             epsilon=0.3)
        now[0] += datetime.timedelta(hours=5)
        again, charged_again = privatize_on_device(device, "specs/linear.toml", t, curves[0],
                                                   epsilon=0.3)
        assert charged and not charged_again and numpy.array_equal(first, again)
        for y in curves[1:3]:
            assert privatize_on_device(device, "specs/linear.toml", t, y, epsilon=0.3)[1]
        with pytest.raises(CapExceededError, match=r"cap 1 per UTC day .* spent to 0\.9") \
                as changed:
            privatize_on_device(device, "specs/linear.toml", t, curves[3], epsilon=0.3)
        with pytest.raises(CapExceededError) as unchanged:   # the cap before the memo
            privatize_on_device(device, "specs/linear.toml", t, curves[0], epsilon=0.3)
        assert str(unchanged.value) == str(changed.value)
        refused += 1
    items = read(device.path)
    assert len(items) == 90 and refused == 30
    days = compose(items, "day")
    assert len(days) == 30 and all(spent == 3 * Fraction(0.3) <= 1
                                   for spent, _ in days.values())
    (total, _), = compose(items).values()
    assert total == 90 * Fraction(0.3)
    stored = list((tmp_path / "watch.jsonl.releases").iterdir())
    assert {oct(path.stat().st_mode & 0o777) for path in stored} == {"0o600"}
    assert oct((tmp_path / "watch.jsonl.releases").stat().st_mode & 0o777) == "0o700"
    assert len(stored) == 90 and sorted(os.listdir(tmp_path)) == ["watch.jsonl",
                                                                   "watch.jsonl.releases"]
    assert "coefficients" not in (tmp_path / "watch.jsonl").read_text()
    weekly = DeviceLedger(tmp_path / "watch.jsonl", cap=6.3, epoch="week",
                          clock=lambda: now[0])   # 2026-03-30 (a Monday): 1 day of the week
    assert weekly.spent("GP") == 3 * Fraction(0.3)
    assert DeviceLedger(tmp_path / "watch.jsonl", cap=2.7, clock=lambda: now[0]).spent("CGP") == \
        3 * Fraction(0.3) ** 2 / 2         # in a CGP cap, each GP release costs eps^2/2


def test_cap_and_memo_from_the_command_line(cli, tmp_path, monkeypatch):
    """--cap: a repeated release is the stored one (same bytes, ledger unchanged); a
    release over the cap is refused before any noise source is made, in one line naming
    the cap and the spend, nothing written, and so is a repeat of stored data (the cap
    before the memo: the same line); the same for cdf; --cap needs --ledger."""
    from gpcompiler.cli import privatize as privatize_command
    data, ledger = curves_csv(tmp_path / "c.csv"), tmp_path / "l.jsonl"
    common = ("privatize", "specs/linear.toml", data, "--epsilon", "0.4", "--ledger", ledger,
              "--cap", "2", "-q")                    # two curves: 0.8 a release
    assert cli(*common, "-o", tmp_path / "a.csv")[0] == 0
    assert cli(*common, "-o", tmp_path / "b.csv")[0] == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert len(read(ledger)) == 1
    assert cli(*common[:2], curves_csv(tmp_path / "d.csv", 1.0), *common[3:],
               "-o", tmp_path / "d_out.csv")[0] == 0
    before = ledger.read_bytes()

    def no_noise(args):
        raise AssertionError("noise drawn")
    monkeypatch.setattr(privatize_command, "_noise_source", no_noise)
    status, out, err = cli(*common[:2], curves_csv(tmp_path / "e.csv", 2.0), *common[3:],
                           "-o", tmp_path / "e_out.csv")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "GP cap 2 per UTC day" in err and "spent to 1.6" in err and "costs 0.8" in err
    assert ledger.read_bytes() == before and not (tmp_path / "e_out.csv").exists()
    assert cli(*common, "-o", tmp_path / "a_again.csv") == (2, "", err)     # stored data
    assert ledger.read_bytes() == before and not (tmp_path / "a_again.csv").exists()
    cdf = ("cdf", "--lo", "0", "--hi", "2500", "--epsilon", "1", "--delta", "1e-6",
           "--ledger", tmp_path / "cdf.jsonl", "--cap", "2.5", "--epoch", "week", "-q")
    assert cli(*cdf, "-o", tmp_path / "w1.json")[0] == cli(*cdf, "-o", tmp_path / "w2.json")[0] == 0
    assert (tmp_path / "w1.json").read_bytes() == (tmp_path / "w2.json").read_bytes()
    assert cli(*cdf, "--grid", "50", "-o", tmp_path / "w3.json")[0] == 0   # new options
    status, _, err = cli(*cdf, "-o", tmp_path / "w4.json")      # w1's, with the cap spent
    assert status == 2 and "DP cap 2.5 per UTC week" in err and len(read(tmp_path / "cdf.jsonl")) == 2
    status, _, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "1",
                         "--cap", "1")
    assert status == 2 and "--cap and --epoch apply to a --ledger FILE" in err


def test_a_batch_spends_the_cap_once_per_curve(cli, tmp_path):
    """A batch of 400 curves at epsilon 1 is 400 curves of the wearer: refused under
    --cap 1 (nothing written), and under --cap 400 the spend is 400 (was 1: the record's
    count ignored)."""
    t = numpy.linspace(0, 1, 8)
    data = tmp_path / "batch.csv"
    data.write_text("curve,t,y\n" + "".join(f"c{k},{a!r},{a * k!r}\n" for k in range(400)
                                            for a in t))
    ledger = tmp_path / "l.jsonl"
    run = ("privatize", "specs/linear.toml", data, "--epsilon", "1", "--ledger", ledger, "-q")
    status, _, err = cli(*run, "--cap", "1", "-o", tmp_path / "r.csv")
    assert status == 2 and "costs 400" in err and not (tmp_path / "r.csv").exists()
    assert cli(*run, "--cap", "400", "-o", tmp_path / "r.csv")[0] == 0
    item, = read(ledger)
    assert item["count"] == 400 and DeviceLedger(ledger, cap=400).spent("GP") == 400


def test_one_cap_over_every_metric(tmp_path):
    """A reworded spec (T = "1.0": another metric sha256, the same metric) draws on the
    same cap: the device's budget is one budget, whatever the metric's text."""
    reworded = tmp_path / "linear.toml"
    reworded.write_text((ROOT / "specs/linear.toml").read_text().replace('T = "1"', 'T = "1.0"'))
    device = DeviceLedger(tmp_path / "l.jsonl", cap=1.0)
    t = numpy.linspace(0, 1, 30)
    assert privatize_on_device(device, "specs/linear.toml", t, t, epsilon=0.6)[1]
    with pytest.raises(CapExceededError, match=r"spent to 0\.6 .*; this release costs 0\.6$"):
        privatize_on_device(device, reworded, t, t + 1, epsilon=0.6)
    assert privatize_on_device(device, reworded, t, t + 1, epsilon=0.4)[1]
    first, second = read(device.path)
    assert first["metric"]["sha256"] != second["metric"]["sha256"]
    assert device.spent("GP") == Fraction(0.6) + Fraction(0.4)


def test_two_releases_at_once_never_both_pass_the_cap(tmp_path):
    """Two processes release at once under a cap that allows one: the ledger is locked
    from the check to the append, so the second sees the first's charge and is refused
    (each draw takes 0.3 s: without the lock both would pass the check)."""
    import multiprocessing
    import time
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(2), context.Queue()
    metric = records.replace_one_identity()

    def release(key):
        device = DeviceLedger(tmp_path / "l.jsonl", cap=1.0)

        def draw():
            time.sleep(0.3)
            return [key], [records.record(label=key, model="DP", metric=metric, cost=0.75,
                                          delta=1e-6, parameter=0.75, noise=("Gaussian", 5.0),
                                          sensitivity=1.0)]
        barrier.wait()
        try:
            device.release(key, "DP", Fraction(0.75), draw)
            results.put("charged")
        except CapExceededError:
            results.put("refused")
    workers = [context.Process(target=release, args=(key,)) for key in ("a", "b")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert sorted(results.get(timeout=5) for _ in workers) == ["charged", "refused"]
    assert len(read(tmp_path / "l.jsonl")) == 1


def test_a_binary_release_by_a_shipped_specs_name_is_memoized(cli, tmp_path):
    """--cap with a shipped spec named (not a path) and an .npz release: the repeat is the
    stored bytes and is charged once (the name once failed to give a metric, and the
    binary release to be stored: charged each time, nothing written)."""
    data, ledger = curves_csv(tmp_path / "c.csv"), tmp_path / "l.jsonl"
    common = ("privatize", "linear", data, "--epsilon", "0.4", "--ledger", ledger, "--cap", "2",
              "-q")
    assert cli(*common, "-o", tmp_path / "a.npz")[0] == 0
    assert cli(*common, "-o", tmp_path / "b.npz")[0] == 0
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    assert len(read(ledger)) == 1


def test_the_plot_of_one_record_and_of_none(cli, tmp_path, monkeypatch):
    """One record is a step from 0 over an hour either side (matplotlib chose four years);
    an empty ledger with --plot is one line, exit 2, nothing printed or written."""
    from gpcompiler.cli import ledger as ledger_command
    data, ledger = curves_csv(tmp_path / "c.csv"), tmp_path / "l.jsonl"
    assert cli("privatize", "linear", data, "--epsilon", "0.5", "--ledger", ledger, "-q",
               "-o", tmp_path / "a.csv")[0] == 0
    figures = []
    real = ledger_command._cumulative_figure
    monkeypatch.setattr(ledger_command, "_cumulative_figure",
                        lambda *args: figures.append(real(*args)) or figures[-1])
    assert cli("ledger", ledger, "--plot", tmp_path / "p.png")[0] == 0
    axis = figures[0].axes[0]
    lo, hi = axis.get_xlim()
    assert axis.get_ylim()[0] == 0 and abs((hi - lo) - 2 / 24) < 1e-9   # days
    assert list(axis.lines[0].get_ydata()) == [0.0, 0.5]
    (tmp_path / "empty.jsonl").write_text("")
    status, out, err = cli("ledger", tmp_path / "empty.jsonl", "--plot", tmp_path / "e.png")
    assert (status, out) == (2, "") and "no records to plot" in err
    assert not (tmp_path / "e.png").exists()
