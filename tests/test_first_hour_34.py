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


@pytest.mark.parametrize("options", [("--degree", "100000"), ("--degree", "300", "--method",
                                                                "moments"),
                                     ("--degree", "300", "--column", "b", "--lo", "0",
                                      "--hi", "1")])
def test_cdf_degree_is_checked_before_any_data_is_read(cli, tmp_path, monkeypatch, options):
    """Item 7: `cdf --degree 100000` read the data, then refused a public option; the
    parser's range (>= 1) disagreed with the estimator's (0..1000)."""
    from gpcompiler.io import curves
    monkeypatch.setattr(curves, "read_text", lambda *a, **k: pytest.fail("data was read"))
    data = tmp_path / "d.csv"
    data.write_text("a,b\n1,2\n")
    status, out, err = cli("cdf", data, "--column", "a", "--lo", "0", "--hi", "1",
                           "--epsilon", "1", "--delta", "1e-6", *options)
    one_line_error(status, err, "--degree", "1..")
    assert out == ""


def test_the_cli_degree_limits_are_the_estimators():
    """Item 7: MAX_DEGREE (what the CLI checks first) is what the estimators accept."""
    import numpy
    from gpcompiler.cdf import Statistics, joint
    from gpcompiler.cli.cdf import MAX_DEGREE
    data = numpy.array([0.2, 0.7])
    for method in ("direct", "moments"):
        Statistics.from_data(data, lo=0, hi=1, degree=MAX_DEGREE[method], method=method)
        with pytest.raises(ValueError, match="degree"):
            Statistics.from_data(data, lo=0, hi=1, degree=MAX_DEGREE[method] + 1, method=method)
    joint._degrees(MAX_DEGREE["joint"], 2)
    with pytest.raises(ValueError, match="degree"):
        joint._degrees(MAX_DEGREE["joint"] + 1, 2)


@pytest.mark.parametrize("default", ["-1", "0", "1/0", "abc"])
def test_a_bad_parameter_default_is_its_only_error(cli, tmp_path, default):
    """Item 8: a bad default of T also gave `domain.intervals[0][1]: unknown name 'T'`; an
    independent error elsewhere in the spec is still reported."""
    text = (ROOT / "specs" / "linear.toml").read_text()
    spec = tmp_path / "bad.toml"
    spec.write_text(text.replace('parameters = { T = "1" }', f'parameters = {{ T = "{default}" }}'))
    status, _, err = cli("compile", spec, "-o", tmp_path / "out")
    one_line_error(status, err, "domain.parameters.T:")
    assert err.count("; ") == 0 and "'T'" not in err and "intervals" not in err, err
    spec.write_text(spec.read_text().replace('["t", "1"]', '["t", "q"]'))
    status, _, err = cli("compile", spec, "-o", tmp_path / "out")
    one_line_error(status, err, "domain.parameters.T:", "basis.functions[1]: unknown name 'q'")
    assert "'T'" not in err, err


def test_cdf_and_privatize_without_o_both_write_the_release_to_standard_output(cli, tmp_path):
    """Item 10: `cdf` without -o wrote nothing, `privatize` without -o wrote to stdout; now
    both write the release CSV to stdout (summaries to stderr), and --help says so."""
    data = tmp_path / "d.csv"
    data.write_text("t,y\n0,0.5\n0.5,0.25\n1,0.75\n")
    runs = {"cdf": ("cdf", data, "--column", "y", "--lo", "0", "--hi", "1", "--epsilon", "1",
                    "--delta", "1e-6"),
            "privatize": ("privatize", "specs/linear.toml", data, "--epsilon", "1")}
    for command, options in runs.items():
        status, out, err = cli(*options, "--seed", "3", "--grid", "5")
        assert status == 0, err
        header = "x,cdf" if command == "cdf" else "curve,t,"
        lines = [line for line in out.splitlines() if not line.startswith("#")]
        assert lines[0].startswith(header) and len(lines) == 1 + 5, (command, out)
        assert "wrote" not in err and ("private quantile" in err or command == "privatize")
        status, out, _ = cli(command, "--help")
        assert "(default: -, standard output" in " ".join(out.split()), command


def test_invalid_curves_are_one_summary_line_with_the_hint_once(cli, tmp_path):
    """Item 3: bundled:ais with specs/trajectory_linear.toml at T = 1 repeated the domain
    hint once per curve (12 times, a 1,493-character line); now one line says what
    happened, by design, each reason once, and the hint once."""
    status, _, err = cli("privatize", "specs/trajectory_linear.toml", "bundled:ais:12",
                         "--epsilon", "1", "--seed", "1", "-o", tmp_path / "r.csv")
    assert status == 0, err
    told = [line for line in err.splitlines() if line.startswith("not private:")]
    assert len(told) == 1 and len(told[0]) < 400, told
    line, = told
    assert "12 of 12 curves were not valid" in line and "zero function" in line
    assert "by design" in line and "and 7 more" in line
    assert line.count("--param T=VALUE") == 1 and line.count("must lie in") == 1


BY_DESIGN = "by design: one person's bad data never stops a release"


def test_an_all_text_cdf_column_is_released_as_the_docs_say_in_the_same_words(cli, tmp_path):
    """Item 2: an all-text CDF column is released (a point mass at lo) with exit 0, while
    docs/datasets_dask_units.md said it was an error; the command's summary line and every
    page that describes bad data now say the same words."""
    data = tmp_path / "text.csv"
    data.write_text("a\nx\ny\nz\n")
    status, out, err = cli("cdf", data, "--column", "a", "--lo", "0", "--hi", "1",
                           "--epsilon", "1", "--delta", "1e-6", "-o", tmp_path / "r.csv")
    assert status == 0 and (tmp_path / "r.csv").exists()
    told = [line for line in err.splitlines() if "not a finite number" in line]
    assert len(told) == 1 and "of 3" in told[0] and BY_DESIGN in told[0]
    assert "every record" in told[0]
    for page in ("README.md", "docs/datasets_dask_units.md", "docs/threat-model.md",
                 "docs/clipping.md"):
        text = " ".join((ROOT / page).read_text().split())
        assert BY_DESIGN in text and "all text is" in text, page
    assert "every value is finite" not in (ROOT / "docs/datasets_dask_units.md").read_text()


def test_unbounded_release_says_it_used_the_real_line_not_the_spec_domain(cli, tmp_path):
    """Item 6: --method unbounded on a spec over [0, 1] released over [-1, 1] while the
    metadata said "over the curve domain" (and gave the spec's parameter T, unused)."""
    data = tmp_path / "u.csv"
    data.write_text("t,y\n0,0.2\n0.5,0.9\n1,0.1\n")
    for suffix in ("csv", "json"):
        out = tmp_path / f"u.{suffix}"
        status, _, err = cli("privatize", "specs/linear.toml", data, "--method", "unbounded",
                             "--epsilon", "5", "--seed", "1", "--grid", "3", "-o", out)
        assert status == 0, err
        text = out.read_text()
        assert "the real line: --method unbounded does not use the spec's domain [0, 1]" in text
        assert "over the curve domain" not in text and '"parameters"' not in text
        assert "parameters:" not in text
    status, _, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "5", "--seed",
                         "1", "--grid", "3", "-o", tmp_path / "p.csv")
    text = (tmp_path / "p.csv").read_text()
    assert "over the curve domain" in text and "real line" not in text


def test_a_larger_epsilon_never_shrinks_the_default_bound_below_its_caps():
    """Item 9: the default bound fell as 1/epsilon, so a huge epsilon clipped every curve to
    about 0 (B = 4.9e-4 at epsilon 1e9 for specs/linear.toml; raising epsilon made a release
    worse). Now B stops shrinking above epsilon 1 and shrinks only where the slack 2 ETA B
    would pass the noise scale or B would pass 2^50 lattice steps (what a release allows)."""
    import math
    from fractions import Fraction
    from gpcompiler.compiler.build import load
    from gpcompiler.runtime.exact import lattice
    for name in ("linear", "harbour", "legendre10"):
        module = load(ROOT / "specs" / f"{name}.toml")
        bounds = []
        for epsilon in [10.0 ** k for k in range(0, 31)]:
            facts = module.release_facts(epsilon=epsilon)
            scale, bound = module._scale(epsilon, None), facts["bound"]
            assert Fraction(facts["slack"]) <= Fraction(scale)          # below the noise
            assert bound <= math.ldexp(lattice(scale), 50)
            binding = (bound == bounds[0] if bounds else True,
                       4 * Fraction(module.ETA) * Fraction(bound) > Fraction(scale),
                       2 * bound > math.ldexp(lattice(scale), 50))
            assert any(binding), (name, epsilon, bound)  # else a larger B was allowed
            bounds.append(bound)
        assert bounds == sorted(bounds, reverse=True), name
        assert bounds[3] == bounds[0], name                               # epsilon 1e3
    assert load(ROOT / "specs" / "linear.toml").default_bound(epsilon=1e9) >= 16


def test_a_users_own_cdf_spec_is_audited(cli, tmp_path):
    """Item 11: `gpcompiler audit wage_cdf.toml` was refused ("compiles CDF tables, not a
    curve mechanism"); now its direct release at its own bounds and degree is audited
    (black box and conformance) at (--epsilon, --delta)-DP."""
    import numpy
    from gpcompiler import cdf
    spec = tmp_path / "wage_cdf.toml"
    spec.write_text('name = "wage_cdf"\nkind = "cdf"\n[domain]\nintervals = [["0", "3000"]]\n'
                    '[basis]\nfamily = { name = "legendre", degree = 6 }\n')
    status, out, err = cli("audit", spec, "--quick", "--epsilon", "2", "--delta", "1e-6")
    assert status == 0, err
    assert "| wage_cdf (CDF direct, K = 6) | (2, 1e-06)-DP | pass | no |" in out, out
    sensitivity = cdf.Statistics.from_data(numpy.zeros(3), lo=0.0, hi=3000.0,
                                           degree=6).sum_sensitivity()
    claimed = cdf.analytic_gaussian_sigma(2.0, 1e-6, sensitivity)
    assert f"d = 7" in out and f"claimed {claimed:.6g}" in out and "conforms" in out, out
    one_line_error(*cli("audit", spec, "--rho", "1")[::2], "--rho", "(epsilon, delta)-DP")
    one_line_error(*cli("audit", "specs/linear.toml", "--delta", "1e-6")[::2], "--delta")


@pytest.mark.parametrize("method", ["direct", "moments", "histogram", "adaptive-quantiles"])
def test_every_cdf_estimate_reaches_1_at_the_public_upper_bound(method):
    """Item 4: the direct and histogram CDFs stopped short of 1 at hi (0.99887 and 0.9974
    on the wages at hi = 4000); every record is clipped into [lo, hi], so F(hi) = 1 is
    public and the post-processing says so, keeping the estimate non-decreasing."""
    import numpy
    from gpcompiler import cdf
    from gpcompiler.io.curves import read_column
    wages = numpy.clip(read_column("bundled:cps1988", "wage"), 0, 4000)
    for seed in range(3):
        estimate = cdf.estimate(wages, lo=0.0, hi=4000.0, epsilon=1.0, delta=1e-6,
                                method=method, rng=numpy.random.default_rng(seed))
        assert estimate.cdf(4000.0) == 1.0 and estimate.values[-1] == 1.0
        assert numpy.all(numpy.diff(estimate.values) >= 0)


@pytest.fixture
def figures(monkeypatch):
    from gpcompiler.cli import privatize as privatize_command
    shown = []
    monkeypatch.setattr(privatize_command, "png", lambda figure: shown.append(figure) or b"png")
    return shown


def test_identical_releases_stay_visible_and_seg_shows_its_breakpoints(cli, tmp_path,
                                                                        figures):
    """Item 12: identical releases on a shared axis hid each other (same style, drawn on
    top), and a seg plot omitted the released breakpoints."""
    data = tmp_path / "twins.csv"
    rows = "".join(f"{c},{k / 4!r},{k / 4 * 0.5!r}\n" for c in ("a", "b", "c") for k in range(5))
    data.write_text("curve,t,y\n" + rows)
    status, _, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "1", "--seed",
                         "2", "--grid", "9", "--method", "seg", "--plot", tmp_path / "p.png",
                         "-o", tmp_path / "r.json")
    assert status == 0, err
    axis = figures[0].axes[0]
    releases = [line for line in axis.lines if line.get_label().startswith("private")]
    dashes = {line._unscaled_dash_pattern[1] for line in releases}   # solid: None
    assert len(releases) == 3 and len(dashes) == 3, dashes
    import json
    released = json.loads((tmp_path / "r.json").read_text())["curves"]
    markers = [line for line in axis.lines if line.get_marker() == "o"]
    assert len(markers) == 3
    for line, curve in zip(markers, released):
        assert list(line.get_xdata()) == curve["breakpoints"]
    assert "released breakpoints" in [text.get_text() for text in axis.get_legend().texts]


def test_a_field_plot_keeps_the_box_aspect(cli, tmp_path, figures):
    """Item 12: field heat maps ignored the box's aspect ratio (a 4 x 1 box drawn square)."""
    spec = tmp_path / "wide.toml"
    spec.write_text('name = "wide"\n[domain]\nvariables = ["x", "y"]\nintervals = '
                    '[["0", "4"], ["0", "1"]]\n[basis]\nfamily = { name = "legendre", '
                    'degree = [1, 1] }\n')
    data = tmp_path / "f.csv"
    data.write_text("x,y,value\n" + "".join(f"{x},{y},{x + y}\n" for x in range(5)
                                            for y in (0, 1)))
    status, _, err = cli("privatize", spec, data, "--epsilon", "1", "--seed", "1",
                         "--plot", tmp_path / "f.png", "-o", tmp_path / "f.csv.out.csv")
    assert status == 0, err
    axis = figures[0].axes[0]
    assert axis.get_aspect() == 1.0


def test_a_joint_cdf_of_two_columns_is_plotted_with_labelled_axes(cli, tmp_path, monkeypatch):
    """Item 12: there was no joint-CDF plot (`--plot` was refused with two columns). The
    heat map is the released function on the public box (its corner at (hi, hi) is the
    release's last value), the axes name the columns with their units, and the colour bar
    says what the colour is; three columns are still refused, before any data is read."""
    import csv
    import numpy
    from gpcompiler.cli import cdf as cdf_command
    shown = []
    monkeypatch.setattr(cdf_command, "png", lambda figure: shown.append(figure) or b"png")
    out = tmp_path / "joint.csv"
    status, _, err = cli("cdf", "bundled:cps1988", "--column", "wage", "--column", "education",
                         "--lo", "0", "--lo", "0", "--hi", "2500", "--hi", "20", "--epsilon",
                         "1", "--delta", "1e-5", "--seed", "1", "--plot", tmp_path / "j.png",
                         "-o", out)
    assert status == 0, err
    axis = shown[0].axes[0]
    assert (axis.get_xlabel(), axis.get_ylabel()) == ("wage (USD per week)",
                                                            "education (years)")
    assert shown[0].axes[1].get_ylabel() == "P(wage ≤ x, education ≤ y)"
    heat = axis.collections[0].get_array().reshape(201, 201)        # rows: education
    for axis_ in (0, 1):      # non-decreasing up to the multilinear interpolation's rounding
        assert numpy.diff(heat, axis=axis_).min() > -1e-12
    rows = list(csv.reader(line for line in out.read_text().splitlines()
                           if not line.startswith("#")))
    assert [float(v) for v in rows[-1][:2]] == [2500.0, 20.0]
    assert heat[-1, -1] == float(rows[-1][-1])
    status, _, err = cli("cdf", tmp_path / "missing.csv", "--column", "a", "--column", "b",
                         "--column", "c", "--lo", "0", "--lo", "0", "--lo", "0", "--hi", "1",
                         "--hi", "1", "--hi", "1", "--epsilon", "1", "--delta", "1e-5",
                         "--plot", tmp_path / "k.png")
    one_line_error(status, err, "--plot draws the CDF of one column or the joint CDF of two")


def test_the_compared_empirical_joint_cdf_counts_records_as_the_estimate_does():
    """The --compare contours of a joint-CDF plot: the share of records below each grid
    point in both columns, checked against counting record by record (NaN and -inf at lo,
    +inf at hi, as the estimators place them)."""
    import numpy
    from gpcompiler.cli.cdf import _empirical_joint
    rng = numpy.random.default_rng(3)
    data = rng.uniform(-0.2, 1.2, (300, 2))
    data[:5, 0], data[5:8, 1], data[8:10, 0] = numpy.nan, numpy.inf, -numpy.inf
    grids = [numpy.linspace(0, 1, 7), numpy.linspace(0, 1, 5)]
    placed = numpy.stack([numpy.nan_to_num(data[:, 0], nan=0, neginf=0, posinf=1),
                          numpy.nan_to_num(data[:, 1], nan=0, neginf=0, posinf=1)], axis=1)
    counted = numpy.array([[numpy.mean((placed[:, 0] <= x) & (placed[:, 1] <= y))
                            for y in grids[1]] for x in grids[0]])
    assert numpy.array_equal(_empirical_joint(data, (0, 0), (1, 1), grids), counted)
