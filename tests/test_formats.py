"""Issue 33, items 3-5: timestamps and coordinates read exactly with public parameters,
compact coefficient releases read back by gpcompiler.evaluate, one summary line a batch,
and shipped specs by name (the installed wheel: tests/test_installed.py)."""
import csv
import gzip
import io
import json
import math
from fractions import Fraction
from importlib import resources

import mpmath
import numpy
import pytest

from conftest import ROOT

KEY = "3c" * 32
REFERENCE = (-74.0142, 40.6803)     # lon, lat: gpcompiler.io.curves.AIS_CENTRE
TIME_PARAM = "T=480"                 # minutes: public, longer than every trajectory used


def _ais_rows(keys):
    """The bundled AIS rows (trajectory, time, lon, lat) of ``keys``, repeated times dropped
    as bundled:ais drops them."""
    with resources.files("gpcompiler").joinpath(
            "data/nyharbor_ais_2020-12-01_07.csv.gz").open("rb") as handle:
        rows = list(csv.DictReader(io.StringIO(gzip.decompress(handle.read()).decode())))
    kept = []
    for row in rows:
        if row["trajectory"] in keys and not (kept and kept[-1]["trajectory"] == row["trajectory"]
                                              and kept[-1]["time"] == row["time"]):
            kept.append(row)
    return kept


def _nanoseconds(stamp):
    """Independent reference: numpy's datetime64 reading of a zone-less ISO timestamp."""
    return int(numpy.datetime64(stamp, "ns").astype(numpy.int64))


def test_timestamps_are_integer_nanoseconds_rounded_once():
    from gpcompiler.io.curves import nanoseconds, timestamps_to_times
    assert nanoseconds("2020-12-01T11:31:39.123456789+05:30") == \
        _nanoseconds("2020-12-01T06:01:39.123456789")
    assert nanoseconds("2020-12-01 11:31:39Z") == _nanoseconds("2020-12-01T11:31:39")
    assert nanoseconds("1969-12-31T23:59:59.999999999") == -1
    stamps = ["2020-12-01T00:00:00.000000001", "2020-12-01T11:31:39.123456789",
              "2020-12-07T23:59:59.999999999", "2021-03-01T00:00:00.333333333"]
    origin = "2020-11-30T21:07:13.7"
    for unit, scale in (("s", 10 ** 9), ("min", 6 * 10 ** 10), ("h", 36 * 10 ** 11),
                        ("day", 864 * 10 ** 11)):
        got = timestamps_to_times(stamps, origin, unit)
        exact = [float(Fraction(_nanoseconds(s) - _nanoseconds(origin), scale)) for s in stamps]
        assert got.tolist() == exact
        assert timestamps_to_times(numpy.array(stamps, dtype="datetime64[ns]"),
                                   numpy.datetime64(origin), unit).tolist() == exact
    # what the one rounding buys: float seconds since the epoch, subtracted, lose digits
    naive = [(_nanoseconds(s) / 1e9 - _nanoseconds(origin) / 1e9) for s in stamps]
    assert naive != timestamps_to_times(stamps, origin, "s").tolist()
    for bad in ("2020-13-01", "2020-12-01T25:00", "yesterday", "2020-12-01T11:31.5"):
        with pytest.raises(ValueError):
            nanoseconds(bad)


def test_lonlat_projection_is_the_stated_formula():
    """x = R (lon - lon0) cos(lat0), y = R (lat - lat0) against 40-digit mpmath: within
    1e-8 m (numerical: the float64 radians and the cancellation in lon - lon0)."""
    from gpcompiler.io.curves import EARTH_RADIUS, lonlat_to_metres
    mpmath.mp.dps = 40
    lon = numpy.array([-74.03917, -74.0142, -73.7, -74.3])
    lat = numpy.array([40.71079, 40.6803, 40.9, 40.5])
    x, y = lonlat_to_metres(lon, lat, REFERENCE)
    degree = mpmath.pi / 180
    for i in range(len(lon)):
        exact_x = EARTH_RADIUS * (mpmath.mpf(lon[i]) - mpmath.mpf(REFERENCE[0])) * degree \
            * mpmath.cos(mpmath.mpf(REFERENCE[1]) * degree)
        exact_y = EARTH_RADIUS * (mpmath.mpf(lat[i]) - mpmath.mpf(REFERENCE[1])) * degree
        assert abs(x[i] - exact_x) < 1e-8 and abs(y[i] - exact_y) < 1e-8
    assert x[1] == 0 and y[1] == 0


def _coefficient_rows(path):
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


def test_ais_timestamps_and_lonlat_give_the_pre_projected_release_bit_for_bit(cli, tmp_path):
    """The raw AIS columns (ISO time, lon, lat) with a public origin, unit and reference
    release exactly what bundled:ais (projected by the package) and a CSV projected here
    (times by Fractions, metres by the stated formula) release, for the same key."""
    rows = _ais_rows({"4", "5", "6"})
    raw = tmp_path / "raw.csv"
    raw.write_text("curve,time,lon,lat\n" + "".join(
        f"ais{r['trajectory']},{r['time']},{r['lon']},{r['lat']}\n" for r in rows))
    first = rows[0]["time"]
    common = dict(spec="trajectory_linear", param=TIME_PARAM, key=KEY)

    def release(source, name, *options):
        status, _, err = cli("privatize", common["spec"], source, "--param", common["param"],
                             "--rho", "1", "--key", common["key"], "--format", "coefficients",
                             "-o", tmp_path / name, *options)
        assert status == 0, err
        return _coefficient_rows(tmp_path / name)

    one = raw.with_name("one.csv")
    one.write_text("".join(line for line in raw.read_text().splitlines(keepends=True)
                           if line.startswith(("curve,", "ais4,"))))
    reading = ["--time-unit", "min", "--reference", ",".join(map(str, REFERENCE))]
    assert release("bundled:ais:1", "bundled.csv") == \
        release(one, "one_raw.csv", "--origin", first, *reading)
    origin = min(r["time"] for r in rows)
    lon0, lat0 = (math.radians(v) for v in REFERENCE)
    pre = raw.with_name("pre.csv")
    pre.write_text("curve,t,x,y\n" + "".join(
        f"ais{r['trajectory']},"
        f"{float(Fraction(_nanoseconds(r['time']) - _nanoseconds(origin), 6 * 10 ** 10))!r},"
        f"{6371008.8 * (math.radians(float(r['lon'])) - lon0) * math.cos(lat0)!r},"
        f"{6371008.8 * (math.radians(float(r['lat'])) - lat0)!r}\n" for r in rows))
    projected = release(pre, "pre_release.csv")
    from_raw = release(raw, "raw_release.csv", "--origin", origin, *reading)
    assert len(projected) == 4 and projected == from_raw
    facts = (tmp_path / "raw_release.csv").read_text()
    assert f"min since {origin}" in facts and "radius 6371008.8 m" in facts


def test_a_value_that_cannot_be_read_is_named_by_column_and_line(cli, tmp_path):
    from gpcompiler.errors import DataError
    from gpcompiler.io.curves import parse_csv
    with pytest.raises(DataError, match=r"line 3: y='abc' is not a finite number"):
        parse_csv("t,y\n0,1\n1,abc\n", "a.csv")
    data = tmp_path / "stamps.csv"
    data.write_text("curve,time,y\na,2020-12-01T00:00:00,1\na,2020-12-01T00:10:00,2\n"
                    "b,2020-12-01T00:00:00,1\nb,2020-13-01T00:10:00,2\n")

    def told(*options):
        status, _, err = cli("privatize", "linear", data, "--rho", "1", "--seed", "1",
                             "--param", "T=20", "-o", tmp_path / "r.csv", *options)
        assert status == 0
        return err

    without = told()
    assert "2 of 2 curves were not valid" in without
    assert ("line 2: time='2020-12-01T00:00:00' is not a finite number (it is a timestamp: "
            "give its public --origin") in without
    bad_one = told("--origin", "2020-12-01", "--time-unit", "min")
    assert "1 of 2 curves was not valid" in bad_one
    assert "b (line 5: time='2020-13-01T00:10:00' is not an ISO-8601 timestamp)" in bad_one
    for options, needle in ((["--reference", "-74,40.7"], "--reference projects lon and lat"),
                            (["--time-unit", "h"], "--time-unit is the unit of timestamps"),
                            (["--origin", "noon"], "argument --origin")):
        status, out, err = cli("privatize", "linear", data, "--rho", "1", *options)
        assert status == 2 and out == "" and err.count("\n") == 1 and needle in err, err


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Three curves of the ellipse (values in R^2) released with one key in every format."""
    from gpcompiler import cli as cli_module
    base = tmp_path_factory.mktemp("formats")
    data = base / "curves.csv"
    t = numpy.linspace(0, 2 * numpy.pi, 9)
    data.write_text("curve,t,x,y\n" + "".join(
        f"{key},{ti!r},{s * math.cos(ti)!r},{math.sin(ti)!r}\n"
        for key, s in (("a", 1), ("b", 2), ("c", 3)) for ti in t))
    files = {}
    for name, options in (("r.json", []), ("values.csv", []),
                          ("coefficients.csv", ["--format", "coefficients"]), ("r.npz", []),
                          ("r.parquet", [])):
        files[name] = base / name
        assert cli_module.main(["-q", "privatize", str(ROOT / "specs/ellipse.toml"), str(data),
                                "--rho", "2", "--key", KEY, "--grid", "7",
                                "-o", str(files[name]), *options]) == 0
    return files


def test_every_release_format_reads_back_and_evaluates_the_release(batch):
    import gpcompiler
    from gpcompiler.io.releases import read_release
    ellipse = gpcompiler.load(str(ROOT / "specs/ellipse.toml"))
    released = json.loads(batch["r.json"].read_text())
    c = numpy.array([curve["coefficients"] for curve in released["curves"]])
    t = numpy.array([0.0, 0.3, 2.0, 6.0])
    for name in ("r.json", "coefficients.csv", "r.npz", "r.parquet"):
        metadata, ids, read, _, _ = read_release(batch[name])
        assert ids == ["a", "b", "c"] and read.tolist() == c.tolist(), name
        for fact in ("spec_sha256", "bound", "slack", "lattice", "budget", "randomness"):
            assert metadata[fact] == released[fact], (name, fact)
        got_ids, values = gpcompiler.evaluate(batch[name], t, spec=ROOT / "specs/ellipse.toml")
        assert got_ids == ids and values.tolist() == ellipse.evaluate(c, t).tolist()
    grid = numpy.array(released["curves"][1]["grid"])[[0, 3, 6]]
    _, values = gpcompiler.evaluate(batch["values.csv"], grid)
    assert values.tolist() == [numpy.array(curve["values"])[[0, 3, 6]].tolist()
                               for curve in released["curves"]]
    with pytest.raises(gpcompiler.UserError, match="holds released values on a grid"):
        gpcompiler.evaluate(batch["values.csv"], [0.1])


def test_coefficient_releases_hold_released_values_and_public_facts_only(batch):
    import gpcompiler
    import pyarrow.parquet
    ellipse = gpcompiler.load(str(ROOT / "specs/ellipse.toml"))
    with numpy.load(batch["r.npz"]) as data:
        assert sorted(data.files) == ["a", "c", "curve", "metadata"]
        assert data["a"].tolist() == ellipse.to_user(data["c"]).tolist()
        metadata = json.loads(str(data["metadata"]))
    assert metadata["coef_shape"] == [3, 2] and "to_user" in metadata["coefficients"]
    header = _coefficient_rows(batch["coefficients.csv"])[0].split(",")
    names = [f"{x}{j}_{k}" for x in "ca" for j in (1, 2, 3) for k in (1, 2)]
    assert header == ["curve", *names]
    assert pyarrow.parquet.read_schema(batch["r.parquet"]).names == ["curve", *names]
    # the ellipse's truth (3 cos t, sin t: user coefficients 3, 1) is nowhere in the files
    for name in ("coefficients.csv", "r.npz", "r.parquet"):
        assert b"x,y" not in batch[name].read_bytes()


def test_coefficient_releases_are_refused_where_they_do_not_apply(cli, tmp_path):
    for options, needle in ((["--method", "select", "-o", tmp_path / "r.npz"],
                             "is of --method project"),
                            (["--format", "values", "-o", tmp_path / "r.npz"],
                             "holds coefficients, not values"),
                            (["--format", "coefficients", "-o", tmp_path / "r.json"],
                             "--format chooses what a .csv holds"),
                            (["-o", tmp_path / "r.txt"], ".npz or .parquet")):
        status, out, err = cli("privatize", "legendre10", "bundled:ecg", "--epsilon", "1",
                               *options)
        assert status == 2 and out == "" and err.count("\n") == 1 and needle in err, err
        assert not list(tmp_path.iterdir())


def test_a_20000_curve_batch_prints_one_summary_line_and_its_coefficients_fit_in_the_input(
        cli, tmp_path):
    """Every curve small (8 samples of the linear spec, 2 coefficients), two of them not
    valid: one line for the batch, one for the invalid ones (counted), none per curve; the
    coefficient release is no larger than the input."""
    rng = numpy.random.default_rng(7)
    t = [f"{v:.3g}" for v in numpy.linspace(0, 1, 8)]
    values = rng.normal(size=(20000, 8)).round(3)
    values[[5, 17]] = numpy.nan
    data = tmp_path / "many.csv"
    data.write_text("curve,t,y\n" + "".join(f"c{k},{ti},{v}\n" for k, row in enumerate(values)
                                            for ti, v in zip(t, row)))
    out_file = tmp_path / "many_coefficients.csv"
    status, out, err = cli("privatize", "linear", data, "--rho", "1", "--seed", "3",
                           "--format", "coefficients", "-o", out_file)
    assert status == 0
    assert out.splitlines() == ["20000 curves: project: 2 orthonormal coefficients, expected "
                                f"L2 noise 0.8862 (each)", f"wrote {out_file}"]
    assert err.count("\n") == 1 and "2 of 20000 curves were not valid" in err
    assert "c5 (line 42: y='nan' is not a finite number)" in err
    assert len(_coefficient_rows(out_file)) == 20001
    assert out_file.stat().st_size <= data.stat().st_size, (out_file.stat().st_size,
                                                            data.stat().st_size)


def test_shipped_specs_by_name_in_process(cli, tmp_path):
    import gpcompiler
    assert gpcompiler.load("fourier8").NAME == "fourier8"
    status, out, _ = cli("specs")
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert status == 0 and set(lines) == {p.stem for p in (ROOT / "specs").glob("*.toml")}
    assert "t -> R^2" in lines["ellipse"] and "(x, y) -> R^1" in lines["harbour"]
    assert "Fourier basis 1, cos(kt), sin(kt)" in lines["fourier8"]
    status, _, err = cli("compile", "linear", "-o", tmp_path / "out")
    assert status == 0 and "NAME = 'linear'" in (tmp_path / "out" / "linear.py").read_text()
    status, out, err = cli("explain", "no_such_spec")
    assert status == 2 and err.count("\n") == 1 and "shipped: cdf_wages, " in err


@pytest.mark.parametrize("shadow", ["file", "folder"])
def test_a_shipped_name_is_the_shipped_spec_whatever_the_cwd_holds(cli, tmp_path, monkeypatch,
                                                                   shadow):
    """`cc ... -o linear` then `privatize linear d.csv`: the bare name is the shipped spec,
    not the binary (or a folder) of that name; `./linear` is the local file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.csv").write_text("t,y\n0,0.5\n0.5,0.25\n1,0\n")
    if shadow == "file":
        (tmp_path / "linear").write_bytes(b"\x7fELF\x02\x01\x01\x00 not TOML")
    else:
        (tmp_path / "linear").mkdir()
    status, _, err = cli("privatize", "linear", "d.csv", "--rho", "1", "--seed", "1",
                         "--grid", "3", "-o", "r.csv")
    assert status == 0, err
    assert '# spec: "linear"' in (tmp_path / "r.csv").read_text()
    if shadow == "file":
        (tmp_path / "linear").write_bytes((ROOT / "specs" / "fourier8.toml").read_bytes())
        status, _, err = cli("privatize", "./linear", "d.csv", "--rho", "1", "--seed", "1",
                             "--grid", "3", "-o", "f.csv")
        assert status == 0, err
        assert '# spec: "fourier8"' in (tmp_path / "f.csv").read_text()
