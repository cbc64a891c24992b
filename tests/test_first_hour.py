"""Defects a new user hit in the first hour (issue 20, "Defects found" 1-5 and 9): each test
fails on main at 6dfa791."""
import pytest

from conftest import ROOT
from gpcompiler.compiler import build
import gpcompiler
from gpcompiler.cli import cdf as cdf_command, common, figures as cli_figures
from gpcompiler.cli import privatize as privatize_command
from gpcompiler.errors import NotPositiveDefiniteError, SpecError

SPEC = """name = "{name}"
title = "{name}"
[domain]
intervals = [["{lo}", "{hi}"]]
[basis]
{basis}
"""


def write_spec(directory, name, basis, lo="0", hi="1"):
    path = directory / f"{name}.toml"
    path.write_text(SPEC.format(name=name, basis=basis, lo=lo, hi=hi))
    return path


def one_line_error(status, err, *needles):
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith("gpcompiler: error:"), err
    for needle in needles:
        assert needle in err, (needle, err)


def test_explain_of_a_fourier_spec_names_its_atoms(cli, tmp_path):
    """Defect 1: every Fourier-family spec ended in `internal error: KeyError: 'fourier'`."""
    path = write_spec(tmp_path, "fourier2", 'family = { name = "fourier", order = 2 }',
                      "-pi", "pi")
    status, out, err = cli("explain", path)
    assert status == 0, err
    assert "\\cos(k\\omega t), \\sin(k\\omega t)$ for $k = 1..2$" in out
    assert "$$ K = " in out or "K_{" in out or "\\frac{1}{\\sqrt{\\pi}}" in out


def test_an_identically_zero_basis_function_is_a_spec_error(cli, tmp_path):
    """Defect 2: `functions = ["0", "t"]` ended in `ValueError: max() arg is an empty
    sequence` in compile and in gpcompiler.load."""
    path = write_spec(tmp_path, "zero", 'functions = ["t", "0"]')
    one_line_error(*cli("compile", path, "-o", tmp_path / "out")[::2],
                   "zero.toml", "basis.functions[1]", "identically zero")
    with pytest.raises(SpecError, match=r"basis.functions\[1\]: '0' is identically zero"):
        build.load(path, cache=tmp_path / "cache")
    vector = write_spec(tmp_path, "zero2", 'functions = [["t", "1"], ["t - t", "0"]]\n'
                        "[values]\ndimension = 2")
    one_line_error(*cli("compile", vector, "-o", tmp_path / "out")[::2],
                   "basis.functions[1]", "identically zero")


def test_a_zero_polynomial_reaching_the_analysis_is_a_dependence():
    """The analysis itself (below the spec check) names a zero polynomial row as a
    dependence instead of failing on an empty row."""
    import dataclasses

    import sympy

    from gpcompiler.compiler.analysis import analyze
    from gpcompiler.compiler.spec import load_spec
    spec = load_spec(ROOT / "specs" / "linear.toml")
    t = spec.variable
    spec = dataclasses.replace(spec, functions=((sympy.Integer(0),), (t,)))
    with pytest.raises(NotPositiveDefiniteError, match=r"linearly dependent, \(1\)\*\[0\] = 0"):
        analyze(spec)


def test_a_dependence_hidden_by_an_identity_is_named_proven_or_numerical(cli, tmp_path):
    """Defect 3: sin^2 + cos^2 = 1 got "LDL^T pivot 2 is -0E-198 ... not positive definite".
    SymPy proves that combination; atan(t) + atan(1/t) = pi/2 on [1, 2] it cannot prove,
    so the combination is given numerically (-2/pi = -0.636620) and said to be."""
    path = write_spec(tmp_path, "pythagoras", 'functions = ["sin(t)**2", "cos(t)**2", "1"]')
    status, _, err = cli("compile", path, "-o", tmp_path / "out")
    one_line_error(status, err, "linearly dependent, (-1)*[sin(t)**2] + (-1)*[cos(t)**2] + "
                   "(1)*[1] = 0 on the domain (proven by SymPy)")
    path = write_spec(tmp_path, "arctan", 'functions = ["atan(t)", "atan(1/t)", "1"]', "1", "2")
    status, _, err = cli("compile", path, "-o", tmp_path / "out")
    one_line_error(status, err, "(-0.636620)*[atan(t)] + (-0.636620)*[atan(1/t)] + "
                   "(1.00000)*[1] = 0 on the domain numerically", "could not prove")
    assert "pivot" not in err


def test_progress_bar_counts_specs_not_stages(cli, tmp_path, monkeypatch):
    """Defect 4: stage messages of a long compile advanced the spec bar (`100% 2/2` during
    the first of two specs, then `9spec`)."""
    from gpcompiler.compiler.analysis import core as analysis

    class Bar:
        def __init__(self, *args, **kwargs):
            self.n, self.total, self.postfixes = 0, kwargs.get("total", args[1]), []

        def update(self, count=1):
            self.n += count
            assert self.n <= self.total

        def set_postfix_str(self, text):
            self.postfixes.append((self.n, text))

        def close(self):
            pass
    bars = []
    monkeypatch.setattr(common, "progress_bar",
                        lambda *a, **k: bars.append(Bar(*a, **k)) or bars[-1])
    monkeypatch.setattr(analysis, "PROGRESS_AFTER", 0.0)     # every stage is reported
    specs = [write_spec(tmp_path, f"s{i}", f'functions = ["1", "t**{i + 1}"]') for i in range(2)]
    status, _, err = cli("compile", *specs, "-o", tmp_path / "out")
    assert status == 0, err
    bar, = bars
    assert bar.n == 1        # the second spec started; the bar closes after the last
    stages = [(n, text) for n, text in bar.postfixes if ": " in text]
    assert len(stages) >= 4 and {n for n, _ in stages} == {0, 1}
    assert all(text.startswith(specs[n].name) for n, text in stages)


@pytest.mark.parametrize("command", ["compile", "check", "explain", "privatize", "audit",
                                     "cdf", "experiment"])
def test_every_command_has_version(cli, command):
    """Defect 5: `gpcompiler privatize --version` failed with "the following arguments
    are required"."""
    status, out, err = cli(command, "--version")
    assert (status, out.strip()) == (0, f"gpcompiler {gpcompiler.__version__}"), err


def test_negative_infinity_is_an_option_value(cli, tmp_path):
    """Defect 9: `--lo -inf` was parsed as a missing argument; it is a value, refused as
    an unbounded public bound."""
    data = tmp_path / "x.csv"
    data.write_text("x\n1\n2\n")
    for text in ("-inf", "-Infinity"):
        one_line_error(*cli("cdf", data, "--column", "x", "--lo", text, "--hi", "3",
                            "--epsilon", "1", "--delta", "1e-6")[::2],
                       "--lo/--hi: the public bounds need finite lo < hi, got [-inf, 3]")


def test_explain_is_served_from_the_build_cache(cli, tmp_path, monkeypatch):
    """Defect 9: `explain` re-derived everything on each call; the second call reads the
    build cache (the compiler is not run), a changed spec is derived again."""
    monkeypatch.setenv("GPCOMPILER_CACHE", str(tmp_path / "cache"))
    path = write_spec(tmp_path, "cached", 'functions = ["1", "exp(t)"]')
    first = cli("explain", path)
    assert first[0] == 0 and "e^{t}" in first[1], first[2]

    def refuse(*args, **kwargs):
        raise AssertionError("derived again")
    monkeypatch.setattr(build, "compile_spec", refuse)
    assert cli("explain", path) == first
    path.write_text(path.read_text().replace("exp(t)", "exp(2*t)"))
    status, _, err = cli("explain", path)
    assert status == 3 and "derived again" in err


def test_cdf_tells_the_data_owner_how_many_records_were_clipped(cli, tmp_path):
    """Defect 9: `cdf` clipped records outside the public bounds silently; the count goes to
    standard error, labelled not private, and never into the release."""
    data = tmp_path / "x.csv"
    data.write_text("x,y\n-5,0.5\n0.5,0.5\n0.7,9\n3,0.2\n0.1,0.1\n")
    out = tmp_path / "release.csv"
    common = ("--epsilon", "1", "--delta", "1e-6", "--seed", "1", "-o", out)
    status, _, err = cli("cdf", data, "--column", "x", "--lo", "0", "--hi", "1", *common)
    assert status == 0
    assert err == "2 records clipped (not private): outside the public bounds [0, 1]\n"
    assert "clipped" not in out.read_text()
    status, _, err = cli("cdf", data, "--column", "x", "--column", "y", "--lo", "0", "--lo", "0",
                         "--hi", "1", "--hi", "1", *common)
    assert (status, err) == (0, "3 records clipped (not private): outside the public bounds of "
                                "some column\n")
    status, _, err = cli("cdf", data, "--column", "y", "--lo", "0", "--hi", "10", *common)
    assert (status, err) == (0, "")


UNITS_SPEC = """name = "seconds"
title = "Linear functions on [0, 1] s"
[domain]
intervals = [["0", "1"]]
units = "s"
[basis]
functions = ["t", "1"]
[values]
units = "mV"
"""


def curves_csv(path, count, samples=8):
    t = [k / (samples - 1) for k in range(samples)]
    path.write_text("curve,t,y\n" + "".join(f"c{c},{ti!r},{(c % 7) * ti - c % 3!r}\n"
                                            for c in range(count) for ti in t))
    return path


def overlaps(a, b):
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.fixture
def figures(monkeypatch):
    shown = []
    for command in (privatize_command, cdf_command):
        monkeypatch.setattr(command, "png", lambda figure: shown.append(figure) or b"png")
    return shown


def test_declared_units_label_the_plot_and_the_release(cli, tmp_path, figures):
    """Items 5 and 7: [domain] units and [values] units go on the plot axes and into the
    release metadata (JSON and CSV); a curve's own labelled units win on the plot."""
    import json
    spec = tmp_path / "seconds.toml"
    spec.write_text(UNITS_SPEC)
    data = curves_csv(tmp_path / "one.csv", 1)
    out = tmp_path / "release.json"
    status, _, err = cli("privatize", spec, data, "--epsilon", "1", "--seed", "2", "-o", out,
                         "--plot", tmp_path / "one.png")
    assert status == 0, err
    assert json.loads(out.read_text())["units"] == {"domain": "s", "values": "mV"}
    axis = figures[0].axes[0]
    assert (axis.get_xlabel(), axis.get_ylabel()) == ("t (s)", "y (mV)")
    status, _, err = cli("privatize", spec, data, "--epsilon", "1", "-o", tmp_path / "r.csv")
    assert status == 0 and '# units: {"domain": "s", "values": "mV"}' in \
        (tmp_path / "r.csv").read_text()
    status, _, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "1", "-o", out)
    assert status == 0 and "units" not in json.loads(out.read_text())
    assert cli_figures.with_unit("ECG lead MLII (mV)", "V") == "ECG lead MLII (mV)"


def test_bad_units_are_spec_errors(cli, tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text(UNITS_SPEC.replace('units = "mV"', "units = 3"))
    one_line_error(*cli("compile", spec, "-o", tmp_path)[::2], "values.units",
                   "expected a unit name")
    spec.write_text(UNITS_SPEC.replace('intervals = [["0", "1"]]\nunits = "s"',
                                       'variables = ["x", "y"]\nintervals = [["0", "1"], '
                                       '["0", "1"]]\nunits = ["m"]'))
    one_line_error(*cli("compile", spec, "-o", tmp_path)[::2], "domain.units",
                   "one unit per variable (2)")


@pytest.mark.parametrize("count", [1, 5, 12])
def test_the_legend_never_covers_the_data(cli, tmp_path, figures, count, monkeypatch):
    """Item 5: at 1 and 5 curves one axis, one distinct colour per curve, the legend beside
    it; more are small multiples (one panel per curve, shared axes, at most MAX_PANELS: 10
    of 12 here; docs/images has 100) and one figure legend outside every panel."""
    monkeypatch.setattr(cli_figures, "MAX_PANELS", 10)
    spec = tmp_path / "seconds.toml"
    spec.write_text(UNITS_SPEC)
    status, _, err = cli("privatize", spec, curves_csv(tmp_path / "c.csv", count), "--epsilon",
                         "1", "--seed", "2", "--grid", "20", "--compare",
                         "--plot", tmp_path / "c.png")
    assert status == 0, err
    figure, = figures
    figure.canvas.draw()
    panels = [axis for axis in figure.axes if axis.get_visible()]
    legends = [axis.get_legend() for axis in panels if axis.get_legend()] + figure.legends
    assert len(legends) == 1
    box = legends[0].get_window_extent()
    assert not any(overlaps(box, axis.get_window_extent()) for axis in panels)
    assert len(panels) == (1 if count <= cli_figures.SHARED_AXIS else 10)
    if count > cli_figures.SHARED_AXIS:
        assert figure.get_supxlabel() == "t (s)" and figure.get_supylabel() == "y (mV)"
        assert "(the first 10 of 12 curves)" in figure.get_suptitle()
        assert [axis.get_title() for axis in panels[:2]] == ["c0", "c1"]
    else:
        releases = [line for line in panels[0].lines if line.get_label().startswith("private")]
        assert len({line.get_color() for line in releases}) == count


def test_privatize_reads_a_glob_of_csv_files_as_one_batch(cli, tmp_path):
    """Item 6: a dataset as a glob; the release equals that of one file with the same
    curves in the order of the sorted file names; an id in two files is refused."""
    rows = {name: [f"{name}{k},{t / 4!r},{k * t / 4 - 1!r}" for k in range(2) for t in range(5)]
            for name in ("a", "b")}
    (tmp_path / "parts").mkdir()
    for name, lines in rows.items():
        (tmp_path / "parts" / f"{name}.csv").write_text("curve,t,y\n" + "\n".join(lines))
    (tmp_path / "all.csv").write_text("curve,t,y\n" + "\n".join(rows["a"] + rows["b"]))
    releases = []
    for source in (tmp_path / "all.csv", tmp_path / "parts" / "*.csv"):
        out = tmp_path / f"release{len(releases)}.json"
        status, _, err = cli("privatize", "specs/linear.toml", source, "--epsilon", "1",
                             "--seed", "5", "-q", "-o", out)
        assert status == 0, err
        releases.append(out.read_bytes())
    assert releases[0] == releases[1] and releases[0].count(b'"curve"') == 4
    (tmp_path / "parts" / "c.csv").write_text("curve,t,y\nb1,0,1\nb1,1,1\n")
    one_line_error(*cli("privatize", "specs/linear.toml", tmp_path / "parts" / "*.csv",
                        "--epsilon", "1")[::2], "c.csv: curve 'b1' is also in", "b.csv")
    one_line_error(*cli("privatize", "specs/linear.toml", tmp_path / "none" / "*.csv",
                        "--epsilon", "1")[::2], "no file matches this pattern")
