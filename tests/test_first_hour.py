"""Defects a new user hit in the first hour (issue 20, "Defects found" 1-5 and 9): each test
fails on main at 6dfa791."""
import pytest

from conftest import ROOT
from gpcompiler import build
from gpcompiler import cli as cli_module
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

    from gpcompiler.analysis import analyze
    from gpcompiler.spec import load_spec
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
    from gpcompiler import analysis

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
    monkeypatch.setattr(cli_module, "_bar", lambda *a, **k: bars.append(Bar(*a, **k)) or bars[-1])
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
    assert (status, out.strip()) == (0, f"gpcompiler {cli_module.__version__}"), err


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
