"""The command line (issue 9, and issue 8 item 4): user errors are one line and exit 2,
never a traceback; releases contain only released values; comparisons are opt-in.

``cli`` runs a command in-process (fast; an exception escaping ``main`` fails the test);
``run`` runs it in a subprocess where the process boundary matters.
"""
import fcntl
import gzip
import json
import math
import os
import pty
import struct
import subprocess
import sys
import termios

import numpy
import pytest
import sympy

from conftest import ROOT
from gpcompiler import cli as cli_module
from gpcompiler import errors
from gpcompiler.cli import privatize as privatize_command


def run(*args, cwd=ROOT, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "gpcompiler", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, **kwargs)


def one_line_error(status, err, *needles):
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpcompiler: error:"), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def write_csv(path, t, y, header="t,y"):
    path.write_text(header + "\n" + "".join(f"{float(a)!r},{float(b)!r}\n" for a, b in zip(t, y)))
    return path


def release_bytes(cli, spec, sources, *options, suffix="csv"):
    """The release files of ``privatize SPEC SOURCE OPTIONS -o FILE`` for each source."""
    files = []
    for number, source in enumerate(sources):
        out = source.parent / f"release{number}.{suffix}"
        status, _, err = cli("privatize", spec, source, *options, "-o", out)
        assert status == 0, err
        files.append(out.read_bytes())
    return files


def data_rows(path):
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


# ----- the defect table of issue 9, one test per row --------------------------------------

def test_privatize_requires_an_input(cli):
    one_line_error(*cli("privatize", "specs/linear.toml", "--epsilon", "1")[::2],
                   "required", "input")


def test_no_cache_gives_the_same_release_and_leaves_the_cache_alone(cli, tmp_path,
                                                                    monkeypatch):
    """privatize --no-cache (issue 19 item 3): the same release file for the same seed, and
    the module's cache of recent grids neither read nor written (written without it)."""
    modules = []
    mechanism = privatize_command.load_mechanism
    monkeypatch.setattr(privatize_command, "load_mechanism", lambda spec: modules.append(
        mechanism(spec)) or modules[-1])
    mechanism("specs/linear.toml")._GRIDS.clear()
    t = numpy.linspace(0, 1, 7)
    plain = write_csv(tmp_path / "c.csv", t, numpy.sin(5 * t))
    releases, cached = [], []
    for options in (("--no-cache",), ()):
        modules.clear()
        releases += release_bytes(cli, "specs/linear.toml", (plain,), "--epsilon", "1",
                                  "--seed", "4", *options)
        cached.append(any(numpy.array_equal(numpy.frombuffer(key[1]), t)
                          for key, _, _ in modules[0]._GRIDS))
    assert releases[0] == releases[1] and cached == [False, True]
    one_line_error(*cli("privatize", "specs/linear.toml", plain, "--epsilon", "1",
                        "--no-cache=yes")[::2], "--no-cache")


def test_gzip_input_is_read_and_binary_input_is_one_line_error(cli, tmp_path):
    t = numpy.linspace(0, 1, 5)
    plain = write_csv(tmp_path / "c.csv", t, t ** 2)
    packed = tmp_path / "c.csv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    outputs = release_bytes(cli, "specs/linear.toml", (plain, packed), "--epsilon", "1",
                            "--seed", "4")
    assert outputs[0] == outputs[1]
    binary = tmp_path / "x.npz"
    binary.write_bytes(bytes(range(256)) * 4)
    one_line_error(*cli("privatize", "specs/linear.toml", binary, "--epsilon", "1")[::2],
                   "x.npz", "not a UTF-8 CSV")
    nul = tmp_path / "nul.csv"     # a NUL in a data line spoils its curve, not the file
    nul.write_bytes(b"t,y\n0,0\x00\n1,1\n")
    status, _, err = cli("privatize", "specs/linear.toml", nul, "--epsilon", "1", "-o",
                         tmp_path / "nul.out.csv")
    assert status == 0 and "1 of 1 curve was not valid" in err, err
    nul.write_bytes(b"t,y\x00\n0,0\n1,1\n")   # in the header: not a CSV file
    one_line_error(*cli("privatize", "specs/linear.toml", nul, "--epsilon", "1")[::2],
                   "nul.csv", "not a UTF-8 CSV")


def test_negative_seed_is_one_line_error(cli):
    one_line_error(*cli("privatize", "specs/linear.toml", "bundled:ecg", "--epsilon", "1",
                        "--seed", "-1")[::2], "--seed")


def test_budget_whose_noise_overflows_is_refused(cli):
    for option, value in (("--epsilon", "1e-300"), ("--rho", "1e-250"), ("--epsilon", "0"),
                          ("--epsilon", "nan"), ("--epsilon", "-1"), ("--rho", "inf")):
        one_line_error(*cli("privatize", "specs/linear.toml", "bundled:ecg", option,
                            value)[::2], option)
    status, _, err = cli("privatize", "specs/linear.toml", "bundled:ecg", "--epsilon", "1e-300")
    assert "overflows float64" in err


def test_unwritable_destination_is_checked_first_and_named(cli, tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(privatize_command, "_release", lambda *a: drawn.append(a))
    blocker = tmp_path / "file"     # a file where a directory should be (fails even as root)
    blocker.write_text("")
    target = blocker / "dir" / "x.csv"
    status, _, err = cli("privatize", "specs/linear.toml", "bundled:ecg", "--epsilon", "1",
                         "-o", target)
    one_line_error(status, err, str(target), "not a directory")
    assert ".tmp" not in err and not drawn
    one_line_error(*cli("privatize", "specs/linear.toml", "bundled:ecg", "--epsilon", "1",
                        "-o", tmp_path / "x.txt")[::2], ".csv", ".json")
    one_line_error(*cli("privatize", "specs/linear.toml", "bundled:ecg", "--epsilon", "1",
                        "--plot", blocker / "x.png")[::2], "x.png")
    one_line_error(*cli("explain", "specs/linear.toml", "-o", blocker / "x.md")[::2], "x.md")
    assert not drawn


def test_a_directory_as_output_file_is_named_a_directory(cli, tmp_path, monkeypatch):
    """-o (or --plot) at an existing directory says so, whatever its name ends with, before
    any noise is drawn (it said a release is .csv or .json)."""
    drawn = []
    monkeypatch.setattr(privatize_command, "_release", lambda *a: drawn.append(a))
    (tmp_path / "out.csv").mkdir()
    for target in (tmp_path, tmp_path / "out.csv"):
        for options in (("-o", target), ("-o", tmp_path / "x.csv", "--plot", target)):
            one_line_error(*cli("privatize", "specs/linear.toml", "bundled:ecg", "--epsilon",
                                "1", *options)[::2], f"cannot write {target}: it is a directory")
        one_line_error(*cli("cdf", "bundled:cps1988", "--lo", "0", "--hi", "1", "--epsilon", "1",
                            "--delta", "1e-5", "-o", target)[::2], "it is a directory")
    assert not drawn


def test_a_gz_file_that_is_not_gzip_is_named_so(cli, tmp_path):
    """A file named .gz whose bytes are not gzip (here a plain CSV with another header) is
    one line saying so, for curves and for a CDF column (it was a header error)."""
    fake = tmp_path / "c.csv.gz"
    fake.write_text("x,wage\n0,1\n1,2\n")
    for command in (("privatize", "specs/linear.toml", fake, "--epsilon", "1"),
                    ("cdf", fake, "--column", "wage", "--lo", "0", "--hi", "3", "--epsilon",
                     "1", "--delta", "1e-5")):
        one_line_error(*cli(*command)[::2], f"{fake}: not gzip-compressed")


def test_check_outside_the_repository_says_where_it_looked(cli, tmp_path, monkeypatch):
    """`gpcompiler check` from another directory names the directory it looked for and
    --specs / --generated (it said only "no spec directory specs")."""
    monkeypatch.chdir(tmp_path)          # after the fixture's chdir to the repository
    one_line_error(*cli("check")[::2], f"no spec directory specs (looked for {tmp_path}",
                   "--specs DIR")
    (tmp_path / "specs").mkdir()
    one_line_error(*cli("check")[::2], f"no spec (*.toml) in specs ({tmp_path}", "--specs DIR")
    (tmp_path / "specs" / "linear.toml").write_bytes((ROOT / "specs/linear.toml").read_bytes())
    one_line_error(*cli("check")[::2], f"no directory of generated modules generated (looked "
                                       f"for {tmp_path}", "--generated DIR")


def test_several_value_columns_on_a_scalar_spec_are_ambiguous(cli, tmp_path):
    two = tmp_path / "two.csv"
    two.write_text("t,a,b\n0,1,2\n1,3,4\n")
    one_line_error(*cli("privatize", "specs/linear.toml", two, "--epsilon", "1")[::2],
                   "two.csv", "2 value column", "batch")


def test_bom_time_header_and_comments_are_accepted(cli, tmp_path):
    t = numpy.linspace(0, 1, 6)
    plain = write_csv(tmp_path / "plain.csv", t, numpy.sin(t))
    decorated = tmp_path / "decorated.csv"
    body = plain.read_text().splitlines()
    decorated.write_bytes(("\ufeff# exported by a logger\n" + "time,y\n" + "\n".join(body[1:3])
                           + "\n# a comment between rows\n" + "\n".join(body[3:]) + "\n")
                          .encode("utf-8"))
    outputs = release_bytes(cli, "specs/linear.toml", (plain, decorated), "--epsilon", "2",
                            "--seed", "5")
    assert outputs[0] == outputs[1]
    bad = tmp_path / "bad.csv"
    bad.write_bytes("\ufeffx,y\n0,1\n1,2\n".encode())
    status, _, err = cli("privatize", "specs/linear.toml", bad, "--epsilon", "1")
    one_line_error(status, err, "'x,y'")
    assert err.isascii()


def test_check_fails_on_missing_or_empty_spec_directory_and_reports_stale(cli, tmp_path):
    one_line_error(*cli("check", "--specs", tmp_path / "nowhere")[::2], "nowhere")
    (tmp_path / "empty").mkdir()
    one_line_error(*cli("check", "--specs", tmp_path / "empty")[::2], "empty")
    specs, generated = tmp_path / "specs", tmp_path / "generated"
    specs.mkdir()
    (specs / "linear.toml").write_bytes((ROOT / "specs" / "linear.toml").read_bytes())
    (generated / "c").mkdir(parents=True)
    (generated / "js").mkdir()
    for name in ("linear.py", "c/linear.h", "c/linear.c", "c/linear_device.c",
                 "c/linear_main.c", "js/linear.mjs"):  # every target
        (generated / name).write_bytes((ROOT / "generated" / name).read_bytes())
    status, out, _ = cli("check", "--specs", specs, "--generated", generated)
    assert status == 0, out
    (generated / "removed_spec.py").write_text("NAME = 'removed_spec'\n")
    status, out, _ = cli("check", "--specs", specs, "--generated", generated)
    assert status == 1 and "stale" in out and "removed_spec.py" in out


def _api_release(method, t, y, grid, **params):
    """The same release through the Python API (seed 3, epsilon 1)."""
    import gpcompiler
    module = gpcompiler.load(ROOT / "specs" / "linear.toml")
    rng = numpy.random.default_rng(3)
    if method == "select":
        result = gpcompiler.priv_func_select(t, y, module, epsilon=1.0, rng=rng, **params)
    elif method == "seg":
        result = gpcompiler.priv_func_seg(t, y, module, epsilon=1.0, rng=rng, **params)
    else:
        result = gpcompiler.baseline_points(t, y, 10, domain=(0.0, params["T"]), epsilon=1.0,
                                            rng=rng)
    return result.evaluate(grid)


@pytest.mark.parametrize("method", ["select", "seg", "baseline"])
def test_param_is_used_by_the_adaptive_methods(cli, tmp_path, method):
    """Needs the issue-8 adaptive API (spec parameters as keyword arguments)."""
    t = numpy.linspace(0, 1.5, 40)
    source = write_csv(tmp_path / "c.csv", t, 1 + t)
    out = tmp_path / "out.json"
    status, _, err = cli("privatize", "specs/linear.toml", source, "--method", method,
                         "--param", "T=2", "--epsilon", "1", "--seed", "3",
                         *(["--k", "10"] if method == "baseline" else []),
                         "--grid", "9", "-o", out)
    assert status == 0, err
    release = json.loads(out.read_text())
    assert release["parameters"] == {"T": 2.0}   # so evaluate(c, t, T=2) reads it back
    (curve,) = release["curves"]
    grid = numpy.linspace(0, 2, 9)
    assert curve["grid"] == grid.tolist()
    expected = _api_release(method, t, 1 + t, grid, T=2.0)
    numpy.testing.assert_allclose(numpy.ravel(curve["values"]), expected, rtol=1e-9, atol=1e-12)


def test_unbounded_releases_a_curve_beyond_the_specs_domain(cli, tmp_path):
    """--method unbounded on samples outside [0, 1] (what the method is for): a release,
    the Python API's (new-user review: the clip count used the spec's domain and failed)."""
    import gpcompiler
    t, y = numpy.array([0.0, 5.0, 30.0]), numpy.array([1.0, 2.0, 0.5])
    out = tmp_path / "out.json"
    status, _, err = cli("privatize", "specs/linear.toml", write_csv(tmp_path / "w.csv", t, y),
                         "--method", "unbounded", "--epsilon", "5", "--seed", "3",
                         "--grid", "7", "-o", out)
    assert status == 0, err
    (curve,) = json.loads(out.read_text())["curves"]
    module = gpcompiler.load(ROOT / "specs" / "linear.toml")
    expected = gpcompiler.priv_func_unbounded(t, y, module, epsilon=5.0,
                                              rng=numpy.random.default_rng(3))
    numpy.testing.assert_allclose(numpy.ravel(curve["values"]),
                                  expected.evaluate(numpy.array(curve["grid"])), rtol=1e-9)


def test_an_unwritable_build_cache_is_named(cli, monkeypatch):
    monkeypatch.setenv("GPCOMPILER_CACHE", "/proc/gpcompiler-cache")
    one_line_error(*cli("explain", "specs/linear.toml")[::2], "GPCOMPILER_CACHE",
                   "/proc/gpcompiler-cache")


def test_param_with_unbounded_is_an_error(cli):
    one_line_error(*cli("privatize", "specs/trajectory_linear.toml", "bundled:ais:1",
                        "--method", "unbounded", "--param", "T=400", "--epsilon", "1")[::2],
                   "unbounded")


def test_broken_pipe_is_a_quiet_exit():
    """The release goes to standard output (no -o); its reader has gone."""
    process = subprocess.Popen([sys.executable, "-m", "gpcompiler", "privatize", "-q",
                                "specs/trajectory_linear.toml", "bundled:ais:40", "--param",
                                "T=1e4", "--epsilon", "1"], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    process.stdout.close()
    err = process.stderr.read().decode()
    process.wait()
    assert err == "" and process.returncode == 141


def test_python_api_accepts_an_int_seed():
    """Needs the issue-8 adaptive API (rng: None, an int seed or a Generator)."""
    import gpcompiler
    t = numpy.linspace(0, 1, 30)
    module = gpcompiler.load(ROOT / "specs" / "linear.toml")
    for function in (gpcompiler.priv_func_select, gpcompiler.priv_func_seg):
        by_int = function(t, t ** 2, module, epsilon=1.0, rng=42)
        by_generator = function(t, t ** 2, module, epsilon=1.0, rng=numpy.random.default_rng(42))
        numpy.testing.assert_array_equal(by_int.evaluate(t), by_generator.evaluate(t))


def test_gram_error_names_the_spec(cli, tmp_path):
    spec = tmp_path / "dep.toml"
    spec.write_text('name = "dep"\n[domain]\nintervals = [["0", "1"]]\n'
                    '[basis]\nfunctions = ["t", "2*t"]\n')
    for command in (("explain", spec), ("compile", spec, "-o", tmp_path / "out"),
                    ("privatize", spec, "bundled:ecg", "--epsilon", "1")):
        one_line_error(*cli(*command)[::2], "dep.toml", "linearly dependent")


def test_budget_error_comes_before_the_data_is_read(cli, tmp_path, monkeypatch):
    from gpcompiler.io import curves
    monkeypatch.setattr(curves, "read_curves", lambda *a: pytest.fail("data was read"))
    for budget in (("--epsilon", "-1"), ("--rho", "0"), ("--epsilon", "1e-300")):
        status, _, err = cli("privatize", "specs/linear.toml", tmp_path / "missing.csv", *budget)
        one_line_error(status, err, budget[0])
        assert "curve" not in err.split("error:")[1]


TABLE = [
    ("privatize", "specs/linear.toml", "--epsilon", "1"),
    ("privatize", "specs/linear.toml", "{binary}", "--epsilon", "1"),
    ("privatize", "specs/linear.toml", "{gzip}", "--epsilon", "1"),
    ("privatize", "specs/linear.toml", "bundled:ecg", "--epsilon", "1", "--seed", "-1"),
    ("privatize", "specs/linear.toml", "{huge}", "--epsilon", "1", "-o", "{tmp}/o.csv",
     "--plot", "{tmp}/o.png"),
    ("privatize", "specs/linear.toml", "bundled:ecg", "--epsilon", "1e-300"),
    ("privatize", "specs/linear.toml", "bundled:ecg", "--epsilon", "1",
     "-o", "{huge}/x.csv"),
    ("privatize", "specs/linear.toml", "{two}", "--epsilon", "1"),
    ("privatize", "specs/linear.toml", "{bom}", "--epsilon", "1"),
    ("check", "--specs", "{tmp}/nowhere"),
    ("check", "--specs", "{tmp}"),
    ("privatize", "specs/linear.toml", "{gzip}", "--method", "select", "--param", "T=2",
     "--epsilon", "1"),
    ("privatize", "specs/linear.toml", "{gzip}", "--method", "seg", "--param", "T=2",
     "--epsilon", "1"),
    ("privatize", "specs/linear.toml", "{gzip}", "--method", "baseline", "--param", "T=2",
     "--epsilon", "1"),
    ("privatize", "specs/trajectory_linear.toml", "bundled:ais:1", "--method", "unbounded",
     "--param", "T=2", "--epsilon", "1"),
    ("explain", "{dep}"),
    ("privatize", "specs/linear.toml", "{tmp}/missing.csv", "--epsilon", "-1"),
    ("privatize", "specs/linear.toml", "{tmp}/missing.csv", "--epsilon", "1"),
    ("privatize", "specs/linear.toml", "{gzip}", "--epsilon", "1", "--at", "{tmp}/missing.csv"),
    ("cdf", "{gzip}", "--lo", "0", "--hi", "1", "--epsilon", "1", "--delta", "2"),
    ("cdf", "{gzip}", "--spec", "specs/linear.toml", "--epsilon", "1", "--delta", "1e-5"),
]


@pytest.mark.parametrize("command", TABLE, ids=lambda c: " ".join(c)[:60])
def test_no_command_prints_a_traceback(cli, tmp_path, command):
    t = numpy.linspace(0, 1, 5)
    files = {"tmp": tmp_path, "binary": tmp_path / "b.bin", "gzip": tmp_path / "c.csv.gz",
             "huge": write_csv(tmp_path / "h.csv", t, [1e308] * 5),
             "two": tmp_path / "two.csv", "bom": tmp_path / "bom.csv", "dep": tmp_path / "d.toml"}
    files["binary"].write_bytes(bytes(range(256)))
    files["gzip"].write_bytes(gzip.compress(b"t,y\n0,0\n0.5,1\n1,0\n"))
    files["two"].write_text("t,a,b\n0,1,2\n1,3,4\n")
    files["bom"].write_bytes("\ufefftime,y\n# c\n0,1\n1,2\n".encode())
    files["dep"].write_text('name = "d"\n[domain]\nintervals = [["0", "1"]]\n'
                            '[basis]\nfunctions = ["t", "2*t"]\n')
    status, _, err = cli(*(part.format(**files) for part in command))
    assert status in (0, 2), err
    if status == 2:
        one_line_error(status, err)


def test_an_internal_error_is_one_line_and_exit_3(cli, monkeypatch, tmp_path):
    """A bug in gpcompiler (here: explain raising a TypeError) is one line naming it, exit
    3; GPCOMPILER_DEBUG=1 re-raises it with its traceback (an empty build cache: another
    test's explain of the spec is not read instead)."""
    import gpcompiler.compiler.explain
    monkeypatch.setenv("GPCOMPILER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(gpcompiler.compiler.explain, "explain",
                        lambda *a, **k: (_ for _ in ()).throw(TypeError("complex pivot")))
    status, out, err = cli("explain", "specs/linear.toml")
    assert status == 3 and err.count("\n") == 1
    assert "internal error: TypeError: complex pivot" in err and "GPCOMPILER_DEBUG=1" in err
    monkeypatch.setenv("GPCOMPILER_DEBUG", "1")
    with pytest.raises(TypeError, match="complex pivot"):
        cli("explain", "specs/linear.toml")


# ----- what users expect of a CLI ---------------------------------------------------------

def test_version_and_quiet(cli, tmp_path):
    from gpcompiler import __version__
    status, out, _ = cli("--version")
    assert status == 0 and out.strip() == f"gpcompiler {__version__}"
    out_file = tmp_path / "q.csv"
    for quiet in (("--quiet", "privatize"), ("privatize", "-q")):
        status, out, err = cli(*quiet, "specs/linear.toml", "bundled:ecg", "--param", "T=800",
                               "--epsilon", "1", "-o", out_file)
        assert status == 0 and out == "" and err == "" and out_file.exists()


def test_help_has_every_option_with_its_default():
    parser = cli_module.build_parser()
    (commands,) = [a for a in parser._actions if a.choices and "privatize" in a.choices]
    for name, sub in commands.choices.items():
        text = " ".join(sub.format_help().split())
        for action in sub._actions:
            if action.dest == "help":
                continue
            assert action.help, (name, action.dest)
            if action.option_strings and action.default not in (None, False, "==SUPPRESS=="):
                assert f"default: {action.default}" in text, (name, action.dest)
            elif action.option_strings and not isinstance(action, type(sub._actions[0])) \
                    and action.nargs != 0:
                assert "default" in action.help or action.required, (name, action.dest)


def test_progress_bar_on_a_terminal_only(tmp_path):
    args = ("compile", "specs/linear.toml", "-o", str(tmp_path))
    quiet = run(*args)
    assert quiet.returncode == 0 and quiet.stderr == ""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "gpcompiler", *args], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=follower,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:          # the terminal's other end closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert process.wait() == 0
    assert "0/1" in shown.decode(errors="replace") and "spec" in shown.decode(errors="replace")


def test_plot_labels_units_epsilon_and_the_original_beneath(cli, tmp_path, monkeypatch):
    figures = []
    monkeypatch.setattr(privatize_command, "png", lambda figure: figures.append(figure) or b"png")
    for compare in ((), ("--compare",)):
        status, _, err = cli("privatize", "specs/linear.toml", "bundled:ecg:2", "--param",
                             "T=800", "--epsilon", "100", "--seed", "1", "--grid", "50",
                             "--plot", tmp_path / "x.png", *compare)
        assert status == 0, err
    private, compared = (figure.axes[0] for figure in figures)
    assert "1/80 s" in private.get_xlabel() and private.get_ylabel().endswith("(mV)")
    seconds = [axis for axis in figures[0].axes[0].child_axes]
    assert seconds and seconds[0].get_xlabel() == "time (s)"
    assert "ε = 100" in private.get_title() and "not private" not in private.get_title()
    assert [text.get_text() for text in private.get_legend().get_texts()] == [
        "private release"]
    assert [text.get_text() for text in compared.get_legend().get_texts()] == [
        "original (true data)", "private release"]
    assert "not private" in compared.get_title()
    assert compared.lines[0].get_zorder() <= compared.lines[1].get_zorder()


def test_trajectory_plot_is_labelled_in_metres(cli, tmp_path, monkeypatch):
    figures = []
    monkeypatch.setattr(privatize_command, "png", lambda figure: figures.append(figure) or b"png")
    status, _, err = cli("privatize", "specs/trajectory_linear.toml", "bundled:ais:2",
                         "--param", "T=1e4", "--rho", "10", "--plot", tmp_path / "t.png")
    assert status == 0, err
    axis = figures[0].axes[0]
    assert (axis.get_xlabel(), axis.get_ylabel()) == ("x (m)", "y (m)")
    assert "ρ = 10" in axis.get_title()


# ----- releases contain only what was released (issue 8, item 4) --------------------------

def test_release_file_holds_only_released_values(cli, tmp_path):
    out = tmp_path / "ecg.csv"
    status, stdout, err = cli("privatize", "specs/linear.toml", "bundled:ecg", "--param",
                              "T=800", "--epsilon", "100", "--seed", "1", "--grid", "11",
                              "--bound", "1024", "-o", out)
    assert status == 0 and err == ""   # nothing clipped: nothing about the data on stderr
    rows = data_rows(out)
    assert rows[0] == "curve,t,mV" and len(rows) == 12
    assert [float(r.split(",")[1]) for r in rows[1:]] == numpy.linspace(0, 800, 11).tolist()
    header = out.read_text()
    for needle in ("linear", "sha256", '"epsilon": 100.0'):
        assert needle in header
    assert "3600" not in header and "3600" not in stdout and "RMS" not in stdout
    status, stdout, err = cli("privatize", "specs/linear.toml", "bundled:ecg", "--param",
                              "T=800", "--epsilon", "100", "--seed", "1", "--compare",
                              "-o", out)
    assert "3600" not in stdout and err.startswith("not private:") and "3600 samples" in err
    times = tmp_path / "times.csv"
    times.write_text("t\n# public times\n0\n400\n800\n")
    json_out = tmp_path / "ecg.json"
    status, _, err = cli("privatize", "specs/linear.toml", "bundled:ecg", "--param", "T=800",
                         "--epsilon", "100", "--seed", "1", "--at", times, "-o", json_out)
    assert status == 0, err
    release = json.loads(json_out.read_text())
    (curve,) = release["curves"]
    assert set(curve) == {"curve", "coefficients", "grid", "values"}
    assert curve["grid"] == [0.0, 400.0, 800.0] and len(curve["coefficients"]) == 2
    assert (release["spec"], release["budget"]) == ("linear", {"epsilon": 100.0})


@pytest.mark.parametrize("suffix", ["csv", "json"])
def test_same_function_on_different_sample_grids_gives_the_same_file(cli, tmp_path, suffix):
    """A tent on [0, 1] sampled at its corners, with extra samples on its pieces, and with
    zero samples appended up to the domain's end: the same bytes for the same seed."""
    grids = [([0, 0.5, 0.75], [0, 1, 0]),
             ([0, 0.125, 0.25, 0.5, 0.6, 0.75], [0, 0.25, 0.5, 1, 0.6, 0]),
             ([0, 0.5, 0.75, 0.9, 1.0], [0, 1, 0, 0, 0])]
    sources = [write_csv(tmp_path / f"s{number}.csv", t, y) for number, (t, y) in enumerate(grids)]
    files = release_bytes(cli, "specs/linear.toml", sources, "--epsilon", "3", "--seed", "11",
                          "--grid", "21", suffix=suffix)
    assert files[0] == files[1] == files[2]


def test_cdf_prints_true_values_only_with_compare_and_writes_its_release(cli, tmp_path):
    common = ("--epsilon", "1", "--delta", "1e-5", "--seed", "1", "--grid", "26")
    out_spec, out_bounds = tmp_path / "spec.json", tmp_path / "bounds.json"
    status, stdout, err = cli("cdf", "bundled:cps1988", "--spec", "specs/cdf_wages.toml",
                              *common, "-o", out_spec)
    from gpcompiler.io.curves import read_column
    wages = read_column("bundled:cps1988", "wage")
    clipped = f"{numpy.count_nonzero(wages > 2500)} records clipped (not private): outside " \
              "the public bounds [0, 2500]\n"      # issue 20: the data owner is told
    assert status == 0 and err == clipped and "true quantile" not in stdout
    status, _, err = cli("cdf", "bundled:cps1988", "--lo", "0", "--hi", "2500", "--degree", "10",
                         *common, "-o", out_bounds, "--compare")
    assert status == 0 and err.startswith(clipped + "not private:") and "true quantiles" in err
    assert cli("cdf", "bundled:cps1988", "--lo", "0", "--hi", "2500", "-q", *common)[2] == ""
    by_spec, by_bounds = (json.loads(p.read_text()) for p in (out_spec, out_bounds))
    assert by_spec["spec"] == "cdf_wages" and len(by_spec["spec_sha256"]) == 64
    for key in ("coefficients", "grid", "cdf", "budget", "lo", "hi", "degree"):
        assert by_spec[key] == by_bounds[key], key
    assert len(by_spec["coefficients"]) == 11 and len(by_spec["grid"]) == 26
    assert by_spec["grid"][-1] == 2500.0 and numpy.all(numpy.diff(by_spec["cdf"]) >= 0)
    from gpcompiler import cdf   # the noise facts: public, and those the noise was drawn with
    from gpcompiler.runtime import exact
    statistics = cdf.Statistics.from_data(numpy.clip(wages, 0, 2500), lo=0.0, hi=2500.0,
                                          degree=10)
    sigma = cdf.analytic_gaussian_sigma(1.0, 1e-5, statistics.sum_sensitivity())
    assert by_spec["noise"] == {"sum_sensitivity": statistics.sum_sensitivity(), "sigma": sigma,
                                "lattice": exact.lattice(sigma)}
    assert statistics.sum_sensitivity() > math.sqrt(2)
    steps = numpy.array(by_spec["coefficients"]) * wages.size / by_spec["noise"]["lattice"]
    assert numpy.abs(steps - numpy.round(steps)).max() < 1e-6   # noisy sums on gamma Z
    csv_out = tmp_path / "cdf.csv"
    status, _, _ = cli("cdf", "bundled:cps1988", "--spec", "specs/cdf_wages.toml", *common,
                       "-o", csv_out)
    rows = data_rows(csv_out)
    assert rows[0] == "x,cdf" and len(rows) == 27
    one_line_error(*cli("cdf", "bundled:cps1988", "--spec", "specs/cdf_wages.toml",
                        "--lo", "1", *common)[::2], "--lo")
    one_line_error(*cli("cdf", "bundled:cps1988", "--spec", "specs/linear.toml", *common)[::2],
                   "linear.toml", "not a kind = \"cdf\" spec")
    one_line_error(*cli("cdf", tmp_path / "cdf.csv", "--lo", "0", "--hi", "1", *common)[::2],
                   "no column chosen")


# ----- earlier behaviour that stays -----------------------------------------------------

def test_bad_spec_is_one_line_exit_2(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[domain]\nintervals = [["0", "1"]]\n[basis]\nfunctions = ["t", "t^2"]\n')
    one_line_error(*cli("compile", bad, "-o", tmp_path / "out")[::2], "basis.functions[1]")
    assert not (tmp_path / "out" / "bad.py").exists()


def test_privatize_bundled_ecg_with_sinc_writes_csv_and_plot(cli, tmp_path):
    out, plot = tmp_path / "ecg.csv", tmp_path / "ecg.png"
    status, text, err = cli("privatize", "specs/sinc_ecg.toml", "bundled:ecg:3", "--epsilon",
                            "100", "--seed", "1", "-o", out, "--plot", plot, "--compare")
    assert status == 0, err
    assert "expected L2 noise 8" in text
    assert len(data_rows(out)) == 1001 and plot.stat().st_size > 10000


def test_privatize_csv_long_format_and_bad_data(cli, tmp_path):
    good = tmp_path / "curves.csv"
    t = numpy.linspace(0, 1, 5)
    lines = ["curve,t,x,y"] + [f"{k},{ti},{ti * s},{1 - ti}" for k, s in (("a", 1), ("b", 2)) for ti in t]
    good.write_text("\n".join(lines) + "\n")
    status, _, err = cli("privatize", "specs/trajectory_linear.toml", good, "--rho", "10",
                         "--seed", "2", "--grid", "5", "-o", tmp_path / "out.csv")
    assert status == 0, err
    assert len(data_rows(tmp_path / "out.csv")) == 11
    bad = tmp_path / "bad.csv"
    # a curve that is no valid function (a NaN, text or a blank for a number, a short line,
    # times outside the interval) is released as the zero function, named to the data
    # owner: one curve's values never stop a file (adversarial review: a text field did)
    for text, needle in (("t,x,y\n0,0,0\n0.5,nan,1\n1,1,1\n", "not a finite number"),
                         ("t,x,y\n0,0,0\n1,np.float64(0.0),1\n", "not a finite number"),
                         ("t,x,y\n0,0,0\n1,,1\n", "not a finite number"),
                         ("t,x,y\n0,0,0\n1,1\n", "a line with 2 fields"),
                         ("t,x,y\n0,0,0\n2,1,1\n", "must lie in")):
        bad.write_text(text)
        status, _, err = cli("privatize", "specs/trajectory_linear.toml", bad, "--rho", "1",
                             "--seed", "1", "-o", tmp_path / "zero.csv")
        assert status == 0 and "not private: 1 of 1 curve was not valid" in err
        assert needle in err and (tmp_path / "zero.csv").exists()


def test_explain_prints_gram_certificate_and_errors(cli):
    status, text, _ = cli("explain", "specs/ellipse.toml")
    assert status == 0
    for needle in ("## Gram matrix", "\\pi", "pivot", "\\kappa_2(G)", "G \\otimes I_2", "d = 6"):
        assert needle in text


def test_explain_opens_infinite_ends_and_keeps_the_box_factor_order(cli, tmp_path):
    """An infinite end is open, (-oo, oo), a finite one closed; a box family's phi_j lists
    its factors in the order of the variables, as the module's basis is built (phi_3 of
    degrees (1, 1) is P_1 in x times P_0 in y: SymPy's product printed P_0(2y - 1) first)."""
    from gpcompiler.compiler.spec import load_spec
    line = tmp_path / "herm.toml"
    line.write_text('name = "herm"\n[domain]\nintervals = [["-oo", "oo"]]\n'
                    'curve_interval = ["-3", "3"]\n[basis]\n'
                    'family = { name = "hermite", degree = 2 }\n')
    status, text, err = cli("explain", line)
    assert status == 0, err
    assert "Domain $I = (-\\infty, \\infty)$" in text and "Curves live on $[-3, 3]$" in text
    box = tmp_path / "box.toml"
    box.write_text('name = "box"\n[domain]\nvariables = ["x", "y"]\n'
                   'intervals = [["0", "2"], ["0", "1"]]\n[basis]\n'
                   'family = { name = "legendre", degree = [1, 1] }\n')
    status, text, err = cli("explain", box)
    assert status == 0, err
    x, y = "P_{%d}\\left(x - 1\\right)", "P_{%d}\\left(2 y - 1\\right)"
    for j, (a, b) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        assert f"\\varphi_{{{j + 1}}}(x, y) = {x % a} {y % b}$" in text
    u, v = (sympy.Symbol(n, real=True) for n in "xy")
    functions = load_spec(box).functions
    assert sympy.expand(functions[2][0].doit()) == u - 1     # phi_3 = P_1(x - 1): in x only
    assert sympy.expand(functions[1][0].doit()) == 2 * v - 1
    assert "Box $I = [0, 2] \\times [0, 1]$" in text


def test_one_segment_is_singular(cli, tmp_path):
    """The summary of a release counts in the singular for one ("1 segment", was
    "1 segments"); several stay plural."""
    status, out, err = cli("privatize", "specs/linear.toml", "bundled:ecg", "--param", "T=800",
                           "--method", "seg", "--epsilon", "1", "--seed", "1",
                           "-o", tmp_path / "seg.csv")
    assert status == 0, err
    assert "seg: 1 segment, ledger total 1" in out
    from gpcompiler.cli.common import plural
    assert (plural(1, "basis function"), plural(7, "point")) == ("1 basis function", "7 points")


def test_privatize_with_every_method(cli, tmp_path):
    t = numpy.linspace(0, 1, 60)
    path = tmp_path / "path.csv"
    path.write_text("t,x,y\n" + "".join(f"{a},{numpy.cos(6 * a)},{a * a}\n" for a in t))
    cubic = write_csv(tmp_path / "cubic.csv", 2 * t - 1, (2 * t - 1) ** 3)
    for method in ("select", "seg", "unbounded", "baseline"):
        spec = "specs/legendre10.toml" if method == "select" else "specs/trajectory_linear.toml"
        extra = (["--continuous"] if method == "seg" else ["--k", "30", "--window", "3"]
                 if method == "baseline" else [])
        status, out, err = cli("privatize", spec, cubic if method == "select" else path,
                               "--method", method, "--epsilon", "1", "--seed", "3",
                               "-o", tmp_path / f"{method}.json", *extra)
        assert status == 0, err
        assert "ledger total 1" in out
        assert json.loads((tmp_path / f"{method}.json").read_text())["method"] == method


def test_param_option_and_unknown_parameters(cli):
    status, _, err = cli("privatize", "specs/trajectory_linear.toml", "bundled:ais:1",
                         "--epsilon", "0.1", "--param", "T=400", "--seed", "1")
    assert status == 0 and "expected L2 noise" in err
    one_line_error(*cli("privatize", "specs/trajectory_linear.toml", "bundled:ais:1",
                        "--epsilon", "0.1", "--param", "Q=1")[::2], "unknown parameter 'Q'")


def test_audit_command_on_one_spec_or_module(cli):
    status, out, err = cli("audit", "specs/linear.toml", "--samples", "3000", "--quick")
    assert status == 0, err
    assert "| linear (GP) |" in out and "false-alarm probability" in out
    status, out, _ = cli("audit", "generated/ellipse.py", "--epsilon", "2", "--samples", "3000",
                         "--quick")
    assert status == 0 and "| ellipse (GP) | 2-GP" in out
    status, _, err = cli("audit", "generated/missing.py")
    assert status == 2 and "no generated module" in err


def test_explain_writes_out_the_orthonormal_basis(cli):
    _, out, _ = cli("explain", "specs/linear.toml")
    assert "e_{1}(t) = \\frac{\\sqrt{3} t}{T^{\\frac{3}{2}}}" in out
    assert "D_{1} = \\frac{T^{3}}{3}, D_{2} = \\frac{T}{4}" in out


def test_cdf_spec_is_refused_by_curve_commands(cli):
    """privatize refuses a CDF spec, and audit a generated CDF module (a CDF spec itself is
    audited: tests/test_first_hour_34.py)."""
    for command in (("privatize", "specs/cdf_wages.toml", "--epsilon", "1"),
                    ("audit", "generated/cdf_wages.py")):
        status, _, err = cli(*command)                 # cli: no traceback either
        assert status == 2 and "gpcompiler: error:" in err


@pytest.mark.parametrize("options, message", [
    (["--samples", "-5"], "--samples: expected an integer"),
    (["--samples", "0"], "--samples: expected an integer"),
    (["--epsilon", "-1"], "--epsilon: expected a positive finite number"),
    (["--seed", "-1"], "--seed: expected an integer >= 0"),
    (["--rho", "0"], "--rho: expected a positive finite number"),
    (["--epsilon", "1e-300"], "overflows float64"),
])
def test_audit_refuses_bad_options_in_one_line(options, message, capsys):
    """New-user review: these printed tracebacks, ran the default claim for --rho 0, or
    audited a budget whose noise overflows float64."""
    from gpcompiler.cli import main
    with pytest.raises(SystemExit) as exit_info:
        main(["audit", "specs/linear.toml", *options])
    error = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in error and "Traceback" not in error
    assert len(error.strip().splitlines()) == 1


# ----- a new user's findings (F4-F14 of the review of main 368274c) ------------------------

SHORT = {"one": "t,y\n0.3,1\n", "jump": "t,y\n0,1\n0.5,2\n0.5,0\n1,0\n",
         "batch": "curve,t,y\nA,0,1\nA,1,2\nB,0.5,1\n"}
@pytest.mark.parametrize("method", ["seg", "baseline", "project", "select"])
def test_short_curves_and_repeated_times_are_released(cli, tmp_path, method):
    """F4: a curve of one sample is the zero function and a repeated time is a jump (README
    "Privacy model"): released like any curve, byte-identical to the API's release; one
    short curve does not stop a batch."""
    sources = {name: tmp_path / f"{name}.csv" for name in SHORT}
    for name, text in SHORT.items():
        sources[name].write_text(text)
    zero = write_csv(tmp_path / "zero.csv", [0.0, 1.0], [0.0, 0.0])
    options = ("--method", method, "--epsilon", "3", "--seed", "7", "--grid", "5")
    one, zeros = release_bytes(cli, "specs/linear.toml", (sources["one"], zero), *options)
    assert one == zeros
    jump = tmp_path / "jump.json"
    status, _, err = cli("privatize", "specs/linear.toml", sources["jump"], *options, "-o", jump)
    assert status == 0, err
    grid = numpy.linspace(0, 1, 5)
    import gpcompiler
    module = gpcompiler.load(ROOT / "specs" / "linear.toml")
    t, y = numpy.array([0, 0.5, 0.5, 1]), numpy.array([1.0, 2, 0, 0])
    rng = numpy.random.default_rng(7)
    expected = (module.evaluate(module.privatize(module.project(t, y), epsilon=3.0, rng=rng),
                                grid) if method == "project" else
                gpcompiler.baseline_points(t, y, 100, domain=(0.0, 1.0), epsilon=3.0,
                                           rng=rng).evaluate(grid) if method == "baseline" else
                getattr(gpcompiler, f"priv_func_{method}")(t, y, module, epsilon=3.0,
                                                           rng=rng).evaluate(grid))
    released = numpy.ravel(json.loads(jump.read_text())["curves"][0]["values"])
    numpy.testing.assert_allclose(released, numpy.ravel(expected), rtol=1e-9, atol=1e-12)
    status, out, err = cli("privatize", "specs/linear.toml", sources["batch"], *options)
    assert status == 0, err
    assert [row.split(",")[0] for row in data_rows_of(out)] == ["curve"] + ["A"] * 5 + ["B"] * 5


def data_rows_of(text):
    return [line for line in text.splitlines() if not line.startswith("#")]


def test_csv_reader_accepts_any_sample_count_and_refuses_decreasing_times(tmp_path):
    """F4: the reader passes short curves and repeated times through unchanged; decreasing
    times are an error naming the curve; a header without rows is an error (issue 34,
    item 1), not an empty wide-format curve."""
    from gpcompiler.io.curves import parse_csv
    curves = parse_csv(SHORT["batch"], "b.csv")
    assert curves.ids == ("A", "B") and curves.times[1].tolist() == [0.5]
    assert curves.values[1].tolist() == [1.0]
    jump = parse_csv(SHORT["jump"])
    assert jump.times[0].tolist() == [0, 0.5, 0.5, 1] and jump.values[0].tolist() == [1, 2, 0, 0]
    with pytest.raises(errors.DataError, match=r"e.csv: no data rows"):
        parse_csv("t,x,y\n", "e.csv")
    with pytest.raises(errors.DataError, match=r"d.csv: curve 'B': .*non-decreasing"):
        parse_csv("id,t,y\nA,0,1\nB,1,0\nB,0.5,0\n", "d.csv")


def test_release_goes_to_standard_output_without_o(cli, tmp_path):
    """F5: no -o (or -o -) writes the release CSV to stdout, summaries to stderr; -q keeps
    the release."""
    out = tmp_path / "r.csv"
    options = ("privatize", "specs/linear.toml", "bundled:ecg", "--param", "T=800",
               "--epsilon", "5", "--seed", "2", "--grid", "7")
    status, stdout, err = cli(*options, "-o", out)
    assert status == 0 and "expected L2 noise" in stdout
    for extra in ((), ("-o", "-"), ("-q",)):
        status, stdout, err = cli(*options, *extra)
        assert status == 0 and stdout == out.read_text(), extra
        assert ("expected L2 noise" in err) == (extra != ("-q",)), err
    status, stdout, err = cli("cdf", "--epsilon", "1", "--delta", "1e-6", "--lo", "0",
                              "--hi", "2000", "--grid", "3", "-o", "-")
    assert status == 0, err
    assert [row.split(",")[0] for row in data_rows_of(stdout)] == ["x", "0.0", "1000.0",
                                                                   "2000.0"]
    assert "private quantile" in err


def test_l2_norm_is_exact_and_does_not_overflow(cli, tmp_path):
    """F6: the norm is exact (no nan from overflowing squares; it decides the clipping),
    agreeing with an mpmath evaluation; such a curve is released, clipped."""
    import mpmath
    t, y = numpy.array([0.0, 0.25, 0.25, 1.0]), numpy.array([1e200, -3e199, 2e200, -1e200])
    with mpmath.workdps(40):
        exact = mpmath.sqrt(sum((mpmath.mpf(t1) - t0) * (mpmath.mpf(a) ** 2 + mpmath.mpf(a) * b
                                                         + mpmath.mpf(b) ** 2) / 3
                                for t0, t1, a, b in zip(t, t[1:], y, y[1:])))
    from gpcompiler.adaptive.curve import make_curve
    assert make_curve(t, y, (0, 1)).norm() == pytest.approx(float(exact), rel=1e-14)
    assert make_curve([0.3], [5.0], (0, 1)).norm() == 0.0
    assert make_curve([], [], (0, 1)).norm() == 0.0
    big = write_csv(tmp_path / "big.csv", [0, 1], [1e200, -1e200])
    status, out, err = cli("privatize", "specs/linear.toml", big, "--epsilon", "1")
    assert status == 0 and err.startswith("not private: 1 of 1 curves clipped")
    assert "e+199" not in out   # released clipped to the bound, not refused


def test_cdf_releases_a_file_with_a_nan_and_an_infinite_record(cli, tmp_path):
    """The same release file as with the NaN at lo and the inf at hi; the data owner is told
    how many records were not numbers (not private), unless -q."""
    (tmp_path / "bad.csv").write_text("x\n3\nnan\n5.5\ninf\n7\n1\n")
    (tmp_path / "fixed.csv").write_text("x\n3\n0\n5.5\n10\n7\n1\n")
    common = ("--column", "x", "--lo", "0", "--hi", "10", "--epsilon", "1", "--delta", "1e-6",
              "--seed", "3")
    for method in ("direct", "histogram"):
        files = []
        for name in ("bad", "fixed"):
            out = tmp_path / f"{name}-{method}.json"
            status, _, err = cli("cdf", tmp_path / f"{name}.csv", *common, "--method", method,
                                 "--compare", "-o", out)
            assert status == 0 and ("2 records not a finite number (not private)" in err) == \
                (name == "bad")
            files.append(out.read_bytes())
        assert files[0] == files[1]
    status, _, err = cli("cdf", tmp_path / "bad.csv", *common, "-q")
    assert status == 0 and err == ""


def test_cdf_counts_every_line_as_a_record_and_never_stops_on_one(cli, tmp_path):
    """Adversarial review: a blank line was dropped (N, which the release states, told it
    was there) and a text or empty field stopped the release. Every line is a record, and
    one that is no number is NaN, taken as lo: the same release as with 0 written there."""
    (tmp_path / "bad.csv").write_text("x,z\n3,1\n\n5.5,1\nNA,2\n7\n,4\n1,1\n")
    (tmp_path / "fixed.csv").write_text("x,z\n3,1\n0,0\n5.5,1\n0,2\n7,0\n0,4\n1,1\n")
    common = ("--column", "x", "--lo", "0", "--hi", "10", "--epsilon", "1", "--delta", "1e-6",
              "--seed", "3")
    files = []
    for name in ("bad", "fixed"):
        status, _, err = cli("cdf", tmp_path / f"{name}.csv", *common, "-o",
                             tmp_path / f"{name}.json")
        assert status == 0 and ("3 records not a finite number" in err) == (name == "bad")
        files.append((tmp_path / f"{name}.json").read_bytes())
    assert files[0] == files[1] and b'"records": 7' in files[0]


def test_cdf_refuses_overflowing_bounds_and_degree_below_one(cli, tmp_path):
    """F7: one-line errors for bounds whose width overflows or is not finite and for K < 1;
    data beyond huge bounds gives no overflow warning."""
    import warnings
    common = ("--epsilon", "1", "--delta", "1e-6", "--seed", "1")
    for bounds in (("--lo", "0", "--hi", "1e308"), ("--lo", "-1e308", "--hi", "1e308"),
                   ("--lo", "nan", "--hi", "1"), ("--lo", "0", "--hi", "inf"),
                   ("--lo", "2", "--hi", "1")):
        one_line_error(*cli("cdf", *bounds, *common)[::2], "--lo/--hi")
    one_line_error(*cli("cdf", "--lo", "0", "--hi", "1", "--degree", "0", *common)[::2],
                   "--degree")
    one_line_error(*cli("cdf", "--lo", "0", "--hi", "1", "--degree", "3", "--method",
                        "histogram", *common)[::2], "--degree", "histogram")
    huge = tmp_path / "huge.csv"
    huge.write_text("v\n1.5e308\n-1.7e308\n3\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        status, _, err = cli("cdf", huge, "--column", "v", "--lo", "-4e307", "--hi", "4e307",
                             *common)
    assert status == 0, err


def test_negative_numbers_in_scientific_notation_are_values(cli):
    """F8: `--lo -5e3` is a value on every parser, not an option."""
    status, out, err = cli("cdf", "--lo", "-5e3", "--hi", "3000", "--epsilon", "1",
                           "--delta", "1e-6", "--seed", "1", "--grid", "3", "-o", "-")
    assert status == 0, err
    assert "# lo: -5000.0" in out
    parser = cli_module.build_parser()
    args = parser.parse_args(["cdf", "--lo", "-.5E+2", "--hi", "-1e-3", "--epsilon", "1",
                              "--delta", "0.1"])
    assert (args.lo, args.hi) == ([-50.0], [-0.001])  # once per column


@pytest.mark.parametrize("method, option", [
    ("project", ("--continuous",)), ("select", ("--continuous",)), ("baseline", ("--continuous",)),
    ("project", ("--k", "5")), ("seg", ("--k", "5")), ("select", ("--window", "2")),
    ("project", ("--beta", "0.2")), ("baseline", ("--beta", "0.2"))])
def test_options_of_other_methods_are_errors(cli, tmp_path, monkeypatch, method, option):
    """F9: an option that does not apply to the method is a one-line error, exit 2, before
    the data is read."""
    from gpcompiler.io import curves
    monkeypatch.setattr(curves, "read_curves", lambda *a: pytest.fail("data was read"))
    one_line_error(*cli("privatize", "specs/linear.toml", tmp_path / "c.csv", "--epsilon", "1",
                        "--method", method, *option)[::2], option[0], method)


def test_errors_name_file_curve_and_cause(cli, tmp_path, monkeypatch):
    """F10 (the file, curve, --param hint and the column and value of a non-number:
    test_privatize_csv_long_format_and_bad_data): "empty file" in cdf too; spec/method
    mismatches before the data is read."""
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    for command in (("privatize", "specs/linear.toml", empty, "--epsilon", "1"),
                    ("cdf", empty, "--column", "w", "--lo", "0", "--hi", "1", "--epsilon", "1",
                     "--delta", "1e-6")):
        one_line_error(*cli(*command)[::2], "empty.csv: empty file")
    from gpcompiler.io import curves
    monkeypatch.setattr(curves, "read_curves", lambda *a: pytest.fail("data was read"))
    for spec, method, needle in (("specs/fourier8.toml", "seg", "all polynomials"),
                                 ("specs/circle_shift.toml", "unbounded", "all polynomials"),
                                 ("specs/circle_shift.toml", "select", "scalar basis")):
        one_line_error(*cli("privatize", spec, tmp_path / "c.csv", "--epsilon", "1",
                            "--method", method)[::2], spec, f"--method {method}", needle)


def test_select_needs_a_bounded_curve_domain():
    """F10: a spec whose curve domain is the real line is refused for select (by the spec)."""
    from types import SimpleNamespace
    module = SimpleNamespace(METRIC="L2", VECTOR_BASIS=False, POLYNOMIAL_DEGREE=None,
                             curve_interval=lambda: (-numpy.inf, numpy.inf))
    with pytest.raises(errors.UserError, match="h.toml: --method select needs a bounded"):
        privatize_command._check_spec_for_method("h.toml", module, "select", {})
    privatize_command._check_spec_for_method("h.toml", module, "project", {})


def test_missing_directories_are_created_by_every_o_option(cli, tmp_path, monkeypatch):
    """F12: one rule for compile, explain, privatize and cdf: a missing parent directory is
    created when the file is written (after every check); a file in the way is refused
    before any work; a failed write removes the directories it made."""
    made = tmp_path / "a" / "b"
    for command in (("compile", "specs/linear.toml", "-o", made / "gen"),
                    ("explain", "specs/linear.toml", "-o", made / "x.md"),
                    ("privatize", "specs/linear.toml", "bundled:ecg", "--param", "T=800",
                     "--epsilon", "1", "--grid", "3", "-o", made / "r.json",
                     "--plot", made / "p" / "r.png"),
                    ("cdf", "--lo", "0", "--hi", "2000", "--epsilon", "1", "--delta", "1e-6",
                     "--grid", "3", "-o", made / "c" / "c.csv")):
        status, _, err = cli(*command)
        assert status == 0, err
    assert sorted(p.relative_to(made).as_posix() for p in made.rglob("*.*")) == [
        "c/c.csv", "gen/linear.py", "p/r.png", "r.json", "x.md"]
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    from gpcompiler.compiler import build
    monkeypatch.setattr(build, "compile_spec", lambda *a: pytest.fail("compiled"))
    one_line_error(*cli("compile", "specs/linear.toml", "-o", blocker / "gen")[::2],
                   "blocker", "not a directory")
    one_line_error(*cli("cdf", "--lo", "0", "--hi", "1", "--epsilon", "1", "--delta", "1e-6",
                        "-o", blocker / "c.csv")[::2], "not a directory")
    from gpcompiler.io.curves import write_text_atomically

    def refuse(*args):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(errors.DataError, match="No space left"):
        write_text_atomically(tmp_path / "new" / "deeper" / "x.csv", "x")
    assert not (tmp_path / "new").exists()


def test_batch_plot_has_a_colour_and_legend_entry_per_curve(cli, tmp_path, monkeypatch):
    """F14: two curves get two colours and two legend entries; the title shows T."""
    figures = []
    monkeypatch.setattr(privatize_command, "png", lambda figure: figures.append(figure) or b"png")
    two = tmp_path / "two.csv"
    two.write_text("curve,t,y\nA,0,1\nA,10,2\nB,0,3\nB,10,0\n")
    status, _, err = cli("privatize", "specs/linear.toml", two, "--param", "T=10", "--epsilon",
                         "1", "--grid", "5", "--plot", tmp_path / "two.png", "--compare")
    assert status == 0, err
    axis = figures[0].axes[0]
    releases = [line for line in axis.lines if line.get_label().startswith("private")]
    assert [line.get_label() for line in releases] == ["private release: A",
                                                       "private release: B"]
    assert releases[0].get_color() != releases[1].get_color()
    assert [text.get_text() for text in axis.get_legend().get_texts()] == [
        "original (true data), faded in its release's colour", "private release: A",
        "private release: B"]
    true = [line for line in axis.lines if not line.get_label().startswith("private")]
    assert [line.get_color() for line in true] == [r.get_color() for r in releases]
    assert "T = 10" in axis.get_title() and "ε = 1" in axis.get_title()


def test_a_plot_that_cannot_be_written_leaves_no_release(cli, tmp_path, monkeypatch):
    """The release and its figure are written all or none: a figure that fails at the
    last moment must not leave a written release (a rerun would spend the budget twice)."""
    from gpcompiler.io import curves
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(curves.DataError, match="cannot write .*b.png"):
        curves.write_files_atomically([(tmp_path / "a.csv", "1"), (blocker / "b.png", b"2")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    monkeypatch.setattr("gpcompiler.io.curves.check_writable", lambda *a, **k: None)
    status, _, err = cli("privatize", "specs/linear.toml", "bundled:ecg", "--param", "T=800",
                         "--epsilon", "1", "-o", tmp_path / "r.csv", "--plot",
                         blocker / "p.png")
    assert status == 2 and "cannot write" in err and not (tmp_path / "r.csv").exists()


def test_cdf_budget_range_is_checked_first_and_stated_in_help(cli, tmp_path):
    """--epsilon and --delta outside the analytic Gaussian mechanism's calibrated range are
    one-line errors naming the flag, against one range each (issue 20: --delta 0.7 and 1.5
    were refused with two different ranges); --help states the same range as the code."""
    from gpcompiler.cdf.gaussian import DELTA_RANGE, EPSILON_RANGE
    data = tmp_path / "x.csv"
    data.write_text("x\n1\n2\n3\n")
    ranges = {"--epsilon": f"[{EPSILON_RANGE[0]:g}, {EPSILON_RANGE[1]:g}]",
              "--delta": f"[{DELTA_RANGE[0]:g}, {DELTA_RANGE[1]:g})"}
    for flag, value in (("--epsilon", "1e-5"), ("--epsilon", "51"), ("--epsilon", "-1"),
                        ("--delta", "0.5"), ("--delta", "0.7"), ("--delta", "1.5")):
        budget = {"--epsilon": "1", "--delta": "1e-6", flag: value}
        status, _, err = cli("cdf", data, "--lo", 0, "--hi", 4,
                             *[item for pair in budget.items() for item in pair])
        assert status == 2 and err.startswith(f"gpcompiler: error: argument {flag}: ") and \
            f"expected a number in {ranges[flag]}, where the analytic Gaussian mechanism is " \
            "calibrated" in err and err.count("\n") == 1, err
    status, out, _ = cli("cdf", "--help")
    text = " ".join(out.split())
    assert f"[{EPSILON_RANGE[0]:g}, {EPSILON_RANGE[1]:g}]" in text
    assert f"[{DELTA_RANGE[0]:g}, {DELTA_RANGE[1]:g})" in text


def test_compile_names_the_specs_whose_module_names_clash(cli, tmp_path):
    """Two specs with one module name: a one-line error naming both files, nothing written."""
    for name in ("a", "b"):
        (tmp_path / f"{name}.toml").write_text((ROOT / "specs" / "linear.toml").read_text())
    status, _, err = cli("compile", tmp_path / "a.toml", tmp_path / "b.toml", "-o",
                         tmp_path / "out")
    assert status == 2 and "module name 'linear' is used by" in err
    assert f"{tmp_path / 'a.toml'}, {tmp_path / 'b.toml'}" in err
    assert not list((tmp_path / "out").glob("*.py"))


def test_a_field_with_a_nan_is_the_zero_field_and_the_others_are_released(cli, tmp_path):
    """New-user review: one NaN in one field of a batch stopped every field's release. It is
    released as the zero field (named to the data owner, not private), and the file is the
    one with that field's values replaced by zeros, bit for bit."""
    values = numpy.random.default_rng(4).normal(size=(3, 6, 5))
    bad, zero = values.copy(), values.copy()
    bad[1, 2, 3], zero[1] = numpy.nan, 0.0
    files = []
    for name, array in (("bad", bad), ("zero", zero)):
        numpy.save(tmp_path / f"{name}.npy", array)
        status, _, err = cli("privatize", "specs/legendre_box.toml", tmp_path / f"{name}.npy",
                             "--epsilon", "10", "--seed", "5", "-o", tmp_path / f"{name}.csv")
        assert status == 0 and ("1 of 3 fields was not valid" in err) == (name == "bad")
        files.append((tmp_path / f"{name}.csv").read_bytes())
    assert files[0] == files[1]


def test_audit_refuses_options_the_chosen_audit_would_ignore(cli):
    """New-user review: `audit SPEC --suite`, `--suite --power` and `--suite --epsilon 3`
    started the long suite and ignored the spec and the budget; now one line, exit 2."""
    for options, needle in ((("specs/linear.toml", "--suite"), "the spec specs/linear.toml"),
                            (("--suite", "--power", "--quick"), "choose one"),
                            (("--power", "--epsilon", "3", "--quick"), "--epsilon is for"),
                            (("--suite", "--seed", "4", "--no-conformance"),
                             "--no-conformance, --seed are for"),
                            (("specs/linear.toml", "--jobs", "2"), "--jobs is for")):
        one_line_error(*cli("audit", *options)[::2], needle)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_standard_output_is_named(tmp_path):
    """A release printed to a full device: one line naming standard output (it said
    'No space left on device: ' with nothing after the colon)."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "gpcompiler", "privatize",
                               "specs/sinc_ecg.toml", "bundled:ecg:2", "--epsilon", "1", "-q"],
                              cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    one_line_error(done.returncode, done.stderr, "No space left on device: standard output")


@pytest.mark.parametrize("bad", [b'b,3,"4', b"b,0.5,4\x00", b"b,0.5,\xff"])
def test_one_lines_bad_bytes_spoil_only_its_curve(cli, tmp_path, bad):
    """An unterminated quote, a NUL or a byte that is not UTF-8 on one curve's line: that
    curve is released as the zero function and named; the curves after it are released as
    if it were absent (an open quote swallowed every line after it, and a NUL or a non-UTF-8
    byte refused the whole file; new-user review of issue 30)."""
    good = b"curve,t,y\na,0,1\na,1,2\n"
    rest = b"c,0,1\nc,1,2\n"
    outputs, errors = [], []
    for name, body in (("with", good + bad + b"\n" + rest),
                       ("without", good + b"b,0,0\nb,1,0\n" + rest)):
        data = tmp_path / f"{name}.csv"
        data.write_bytes(body)
        out = tmp_path / f"{name}.out.csv"
        status, _, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "1",
                             "--seed", "4", "-o", out)
        assert status == 0, err
        errors.append(err)
        outputs.append([line for line in out.read_text().splitlines()
                         if not line.startswith("#")])
    assert "1 of 3 curves was not valid" in errors[0] and "b (" in errors[0]
    assert outputs[0] == outputs[1]
