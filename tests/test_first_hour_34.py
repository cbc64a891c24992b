"""What a new user still tripped on (issue 34, "What a user still trips on", items 1-12):
each test fails on main at 343c2c6."""
import pytest

from conftest import ROOT


def one_line_error(status, err, *needles):
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith("gpcompiler: error:"), err
    for needle in needles:
        assert needle in err, (needle, err)


@pytest.mark.parametrize("header", ["t,y", "time,y", "# a comment\nt,y"])
def test_a_header_without_rows_is_an_error_in_privatize_as_in_cdf(cli, tmp_path, header):
    """Item 1: a header and no rows released one pure-noise curve named `curve` (exit 0)."""
    data, out = tmp_path / "empty.csv", tmp_path / "release.csv"
    data.write_text(header + "\n")
    status, stdout, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "1", "-o", out)
    one_line_error(status, err, "no data rows")
    assert stdout == "" and not out.exists()
    status, stdout, err = cli("cdf", data, "--column", "y", "--lo", "0", "--hi", "1",
                              "--epsilon", "1", "--delta", "1e-6", "-o", out)
    one_line_error(status, err, "no data rows")
    assert not out.exists()


def test_compile_writes_only_where_told(cli, tmp_path):
    """Item 5: `compile SPEC` wrote into the committed generated/ by default (then `check`
    failed as stale); now -o is required and nothing is written without it."""
    before = {p: p.stat().st_mtime_ns for p in (ROOT / "generated").iterdir()}
    spec = tmp_path / "stray.toml"
    spec.write_text('name = "stray"\n[domain]\nintervals = [["0", "1"]]\n[basis]\n'
                    'functions = ["1", "t"]\n')
    status, out, err = cli("compile", spec)
    one_line_error(status, err, "-o/--output")
    assert out == "" and {p: p.stat().st_mtime_ns for p in (ROOT / "generated").iterdir()} == before
    status, _, err = cli("compile", spec, "-o", tmp_path / "build")
    assert status == 0 and (tmp_path / "build" / "stray.py").exists(), err
