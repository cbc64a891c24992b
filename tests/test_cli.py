"""The command line: real runs in subprocesses; user errors are one line, never a traceback."""
import subprocess
import sys

import numpy

from conftest import ROOT


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "gpcompiler", *args], cwd=cwd,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT),
                                                                "PATH": "/usr/bin:/bin"})


def test_bad_spec_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[domain]\nintervals = [["0", "1"]]\n[basis]\nfunctions = ["t", "t^2"]\n')
    result = run("compile", str(bad), "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("gpcompiler: error:")
    assert "basis.functions[1]" in result.stderr
    assert not (tmp_path / "out" / "bad.py").exists()


def test_dependent_basis_is_a_user_error(tmp_path):
    spec = tmp_path / "dep.toml"
    spec.write_text('name = "dep"\n[domain]\nintervals = [["0", "1"]]\n[basis]\nfunctions = ["t", "2*t"]\n')
    result = run("explain", str(spec))
    assert result.returncode == 2 and "linearly dependent" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_passes_on_the_repository():
    result = run("check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_privatize_bundled_ecg_writes_csv_and_plot(tmp_path):
    out, plot = tmp_path / "ecg.csv", tmp_path / "ecg.png"
    result = run("privatize", "specs/sinc_ecg.toml", "bundled:ecg:3", "--epsilon", "100",
                 "--seed", "1", "-o", str(out), "--plot", str(plot))
    assert result.returncode == 0, result.stderr
    assert "L2 noise" in result.stdout
    rows = out.read_text().splitlines()
    assert rows[0] == "curve,t,mV" and len(rows) == 3601
    assert plot.stat().st_size > 10000


def test_privatize_csv_long_format_and_bad_data(tmp_path):
    good = tmp_path / "curves.csv"
    t = numpy.linspace(0, 1, 5)
    lines = ["curve,t,x,y"] + [f"{k},{ti},{ti * s},{1 - ti}" for k, s in (("a", 1), ("b", 2)) for ti in t]
    good.write_text("\n".join(lines) + "\n")
    result = run("privatize", "specs/trajectory_linear.toml", str(good), "--rho", "10",
                 "--seed", "2", "-o", str(tmp_path / "out.csv"))
    assert result.returncode == 0, result.stderr
    assert len((tmp_path / "out.csv").read_text().splitlines()) == 11
    bad = tmp_path / "bad.csv"
    bad.write_text("t,x,y\n0,0,0\n0.5,nan,1\n1,1,1\n")
    result = run("privatize", "specs/trajectory_linear.toml", str(bad), "--rho", "1")
    assert result.returncode == 2 and "line 3 has a NaN" in result.stderr
    outside = tmp_path / "outside.csv"
    outside.write_text("t,x,y\n0,0,0\n2,1,1\n")
    result = run("privatize", "specs/trajectory_linear.toml", str(outside), "--rho", "1",
                 "-o", str(tmp_path / "never.csv"))
    assert result.returncode == 2 and "must lie in" in result.stderr
    assert not (tmp_path / "never.csv").exists()


def test_explain_prints_gram_certificate_and_errors():
    result = run("explain", "specs/ellipse.toml")
    assert result.returncode == 0
    text = result.stdout
    for needle in ("## Gram matrix", "\\pi", "pivot", "\\kappa_2(G)", "G \\otimes I_2", "d = 6"):
        assert needle in text


def test_privatize_with_every_method(tmp_path):
    for method in ("select", "seg", "unbounded", "baseline"):
        spec = "specs/legendre10.toml" if method == "select" else "specs/trajectory_linear.toml"
        source = "bundled:ecg" if method == "select" else "bundled:ais:2"
        extra = ["--continuous"] if method == "seg" else ["--k", "30", "--window", "3"] if method == "baseline" else []
        if method == "select":
            source = str(tmp_path / "curve.csv")
            t = numpy.linspace(-1, 1, 50)
            (tmp_path / "curve.csv").write_text("t,y\n" + "".join(f"{a},{a ** 3}\n" for a in t))
        result = run("privatize", spec, source, "--method", method, "--epsilon", "1", "--seed", "3",
                     "-o", str(tmp_path / f"{method}.csv"), *extra)
        assert result.returncode == 0, result.stderr
        assert "ledger total 1" in result.stdout
        assert (tmp_path / f"{method}.csv").exists()


def test_param_option_and_unknown_parameters():
    result = run("privatize", "specs/trajectory_linear.toml", "bundled:ais:1", "--epsilon", "0.1",
                 "--param", "T=400", "--seed", "1")
    assert result.returncode == 0 and "L2 noise" in result.stdout
    result = run("privatize", "specs/trajectory_linear.toml", "bundled:ais:1", "--epsilon", "0.1",
                 "--param", "Q=1")
    assert result.returncode == 2 and "unknown parameter 'Q'" in result.stderr


def test_audit_command_on_one_spec_or_module():
    result = run("audit", "specs/linear.toml", "--samples", "3000")
    assert result.returncode == 0, result.stderr
    assert "| linear (GP) |" in result.stdout and "false-alarm probability" in result.stdout
    result = run("audit", "generated/ellipse.py", "--epsilon", "2", "--samples", "3000")
    assert result.returncode == 0 and "| ellipse (GP) | 2-GP" in result.stdout
    result = run("audit", "generated/missing.py")
    assert result.returncode == 2 and "no generated module" in result.stderr


def test_explain_writes_out_the_orthonormal_basis():
    result = run("explain", "specs/linear.toml")
    assert "e_{1}(t) = \\frac{\\sqrt{3} t}{T^{\\frac{3}{2}}}" in result.stdout
    assert "D_{1} = \\frac{T^{3}}{3}, D_{2} = \\frac{T}{4}" in result.stdout


def test_cdf_spec_is_refused_by_curve_commands():
    for command in (("privatize", "specs/cdf_wages.toml", "--epsilon", "1"),
                    ("audit", "specs/cdf_wages.toml"), ("audit", "generated/cdf_wages.py")):
        result = run(*command)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert "gpcompiler: error:" in result.stderr


def test_unwritable_output_is_a_one_line_error(tmp_path):
    result = run("explain", "specs/linear.toml", "-o", str(tmp_path / "missing" / "x.md"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "No such file or directory" in result.stderr
