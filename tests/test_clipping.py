"""Clipping to a public bound instead of refusing, and the float slack before noise
(docs/clipping.md): every curve is released; the ledger, explain and release files state
the bound B, the slack 2 eta B and the lattice step gamma."""
import json
import math
from fractions import Fraction

import mpmath
import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from conftest import BOX_SPECS, MECHANISM_SPECS, ROOT, generated
from gpcompiler import baseline_points, priv_func_select, priv_func_seg, priv_func_unbounded
from gpcompiler.compiler import slack
from gpcompiler.adaptive import piecewise_project_and_privatize
from gpcompiler.adaptive.curve import make_curve
from gpcompiler.adaptive.noise import clip
from gpcompiler.runtime.exact import lattice

ALGORITHMS = {
    "priv_func_select": lambda t, y, **k: priv_func_select(t, y, generated("monomial32"), **k),
    "priv_func_seg": lambda t, y, **k: priv_func_seg(t, y, generated("linear"), T=100.0, **k),
    "priv_func_unbounded": lambda t, y, **k: priv_func_unbounded(t - 50, y, generated("linear"),
                                                                 **k),
    "piecewise_project_and_privatize": lambda t, y, **k: piecewise_project_and_privatize(
        t, y, generated("linear"), numpy.linspace(0, 100, 9), T=100.0, **k),
    "baseline_points": lambda t, y, **k: baseline_points(t, y, 20, domain=(0.0, 100.0), **k),
}
OLD_LIMIT = 2.0 ** 40   # the old refusal: a released vector's norm above noise scale x 2^40


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_algorithms_release_curves_on_either_side_of_the_old_refusal_bound(name):
    """Two curves in one direction, 1e-6 below and above the old bound (the noise scale of
    the first release x 2^40, at most 1/epsilon x 2^40 x 20), and one 1e30 times larger:
    all are released, clipped to the same ball, so with one seed the releases coincide
    (the old code refused the larger ones; without the clip they would differ by 1e6)."""
    t = numpy.linspace(0.0, 100.0, 201)
    shape = numpy.sin(t / 7) + 2.0
    norm = make_curve(t, shape, (0.0, 100.0)).norm()
    runs = []
    for factor in (OLD_LIMIT * (1 - 1e-6), OLD_LIMIT * (1 + 1e-6), 1e30):
        y = shape * (factor * 20 if name == "baseline_points" else factor / norm * 20)
        runs.append(ALGORITHMS[name](t, y, epsilon=1.0, rng=numpy.random.default_rng(4)))
    for other in runs[1:]:
        assert numpy.allclose(other.coefficients, runs[0].coefficients, rtol=1e-9, atol=0)
    bound = runs[0].ledger.releases[-1].bound
    assert bound < OLD_LIMIT
    for release in runs[0].ledger.releases:   # the ledger states B, slack and gamma
        assert release.bound == bound and release.lattice > 0
        assert (release.slack is None) == (name == "baseline_points")


def test_generated_module_releases_coefficients_on_either_side_of_the_old_bound():
    """privatize of c with |c| = 2^40 (1 -+ 1e-6) (scale 1 at epsilon = 1): both released and
    clipped to B, so one seed gives one release; in a batch, one huge curve changes nothing
    in the others' releases."""
    module = generated("legendre10")
    d = module.COEF_DIM
    direction = numpy.arange(1.0, d + 1) / numpy.linalg.norm(numpy.arange(1.0, d + 1))
    below, above = (direction * OLD_LIMIT * f for f in (1 - 1e-6, 1 + 1e-6))
    first, second = (module.privatize(c, epsilon=1.0, rng=7) for c in (below, above))
    numpy.testing.assert_allclose(first, second, rtol=1e-12)
    bound = module.default_bound(epsilon=1.0)
    assert numpy.linalg.norm(first - bound * direction) < 10 * d   # noise about d
    others = numpy.random.default_rng(1).standard_normal((3, d))
    batch = [numpy.vstack([c, others]) for c in (numpy.full(d, 1e300), numpy.zeros(d))]
    huge, small = (module.privatize(b, rho=0.5, rng=9) for b in batch)
    assert numpy.array_equal(huge[1:], small[1:]) and numpy.isfinite(huge).all()


@pytest.mark.parametrize("name", ["legendre10", "trajectory_linear", "two_circles"])
def test_project_and_privatize_clips_the_curve_before_projecting(name):
    """A curve 1e300 times another (values near float64's limit) is released as the other
    scaled to the bound: one seed, one release (the curve is clipped before its float
    projection, so its projection error is at most ETA B)."""
    module = generated(name)
    t = numpy.linspace(*module.curve_interval(), 400)
    y = numpy.cos(3 * t)[:, None] * numpy.arange(1, module.VALUE_DIM + 1) + 0.5
    y = y[:, 0] if module.VALUE_DIM == 1 else y
    bound = module.default_bound(epsilon=1.0)
    scaled = y / make_curve(t, y, module.curve_interval()).norm() * bound
    releases = [module.project_and_privatize(t, v, epsilon=1.0, rng=3)
                for v in (y * 1e300, scaled)]
    numpy.testing.assert_allclose(releases[0], releases[1], rtol=1e-9, atol=1e-9 * bound)
    small = module.project_and_privatize(t, y * 1e-3, epsilon=1.0, rng=3, bound=bound)
    exact = module.privatize(module.project(t, y * 1e-3), epsilon=1.0, rng=3)
    assert numpy.array_equal(small, exact)   # inside the ball nothing changes


@pytest.mark.parametrize("name", ["harbour", "surface_total"])
def test_fields_are_clipped_not_refused(name):
    """A field 1e300 times another is released as the other scaled to the bound."""
    module = generated(name)
    grids = [numpy.linspace(lo, hi, 9) for lo, hi in module.domain()]
    x, y = numpy.meshgrid(*grids, indexing="ij")
    values = numpy.cos(x) + y ** 2 + 1
    bound = module.default_bound(rho=1.0)
    big = module.project_and_privatize(grids, values * 1e300, rho=1.0, rng=2)
    c = module.project_grid(grids, values)
    # the L2 norm of the field, from the mass matrices, is at least that of its projection
    scale = module._clip_fields(grids, values * 1e300, "linear", bound, None)[0, 0] / values[0, 0]
    assert scale * numpy.linalg.norm(c) <= bound * (1 + 1e-12)
    same = module.project_and_privatize(grids, values * scale, rho=1.0, rng=2)
    numpy.testing.assert_allclose(big, same, rtol=1e-9, atol=1e-9 * bound)


finite = st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=1, max_size=6),
       st.floats(1e-200, 1e200), st.integers(0, 3))
def test_clipping_is_non_expansive(pairs, bound, exponent):
    """||clip(a) - clip(b)|| <= ||a - b|| (the projection onto a ball), for the modules'
    clip and the adaptive algorithms' clip, with a rounding allowance (a float result): the
    clipped norm within 64 ulps of B, the gap within 1e-15 of |a - b| plus 16 ulps of B."""
    a, b = (numpy.array(v) * 10.0 ** (-50 * exponent) for v in zip(*pairs))
    module = generated("legendre10")
    a11, b11 = (numpy.resize(v, module.COEF_DIM) for v in (a, b))
    for clipped_a, clipped_b, distance in (
            (clip(a, bound), clip(b, bound), _norm(a / 2 - b / 2) * 2),
            (module._clip(a11, bound), module._clip(b11, bound), _norm(a11 / 2 - b11 / 2) * 2)):
        assert _norm(clipped_a) <= bound * (1 + 64 * 2.0 ** -52)
        gap = _norm(clipped_a / 2 - clipped_b / 2) * 2
        assert gap <= distance * (1 + 1e-15) + 16 * 2.0 ** -52 * bound


def _norm(v):
    """The Euclidean norm without overflow (math.hypot scales)."""
    return math.hypot(*numpy.ravel(v))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=30), st.floats(1e-3, 1e3))
def test_curve_clipping_is_non_expansive_in_l2(values, bound):
    """The 1-D modules' clip of curves (projection onto the L2 ball) on a shared grid:
    ||clip q - clip q'|| <= ||q - q'||, both measured exactly as piecewise-linear norms."""
    module = generated("linear")
    t = numpy.linspace(0.0, 1.0, len(values))
    y = numpy.array(values)
    other = y[::-1] * 0.5 + 1.0
    values, factors = module._clip_curves(t, numpy.vstack([y, other]), bound)
    clipped = values * factors[:, None]
    norm = lambda v: make_curve(t, v, (0.0, 1.0)).norm()   # noqa: E731
    assert norm(clipped[0]) <= bound * (1 + 1e-12)
    assert norm(clipped[0] - clipped[1]) <= norm(y - other) * (1 + 1e-12) + 1e-12 * bound


@pytest.mark.parametrize("name", MECHANISM_SPECS + BOX_SPECS)
def test_slack_at_the_default_bound_is_below_1e_6_of_the_noise_scale(name):
    """At the default bound the slack 2 ETA B is <= 1e-6 x the noise scale taken at least 1
    (SLACK_FRACTION; issue 34, item 9), B is the largest such power of two (2B is not,
    unless the slack would pass the noise scale or B 2^50 lattice steps), and the module
    and slack.py agree; a
    spec that declares its bound uses it and states its slack (sinc_ecg: B = 256, slack
    5.6e-7 of the noise at epsilon = 100)."""
    module = generated(name)
    for budget in ({"epsilon": 0.01}, {"epsilon": 1.0}, {"epsilon": 100.0}, {"rho": 3.0}):
        facts = module.release_facts(**budget)
        scale = (1 / budget["epsilon"] if "epsilon" in budget
                 else 1 / math.sqrt(2 * budget["rho"]))
        assert facts["lattice"] == lattice(module._scale(budget.get("epsilon"), budget.get("rho")))
        assert Fraction(facts["slack"]) >= 2 * Fraction(module.ETA) * Fraction(facts["bound"])
        assert slack.default_bound(module.ETA, module._scale(budget.get("epsilon"),
                                                             budget.get("rho")),
                                   module.BOUND) == facts["bound"]
        if module.BOUND is not None:
            assert facts["bound"] == module.BOUND
            continue
        assert module.SLACK_FRACTION == slack.SLACK_FRACTION == 1e-6
        assert facts["slack"] <= 1e-6 * max(scale, 1) * (1 + 1e-12)
        assert facts["slack"] <= scale * (1 + 1e-12)
        assert (2 * module.ETA * 2 * facts["bound"] > min(1e-6 * max(scale, 1), scale)
                or 2 * facts["bound"] > math.ldexp(facts["lattice"], 50))
        assert math.frexp(facts["bound"])[0] == 0.5
    if name == "sinc_ecg":
        ecg = module.release_facts(epsilon=100.0)
        assert ecg["bound"] == 256.0 and 5e-7 < ecg["slack"] / 0.01 < 6e-7


def test_a_bound_beyond_the_lattice_range_is_a_public_error():
    """B > 2^50 gamma (B + noise could leave the exact lattice range) is refused from public
    values alone: any curve, even zero, gets the same error."""
    module = generated("linear")
    with pytest.raises(ValueError, match="2\\^50 lattice steps"):
        module.privatize(numpy.zeros(2), epsilon=1.0, bound=2.0 ** 40)
    with pytest.raises(ValueError, match="positive finite"):
        module.project_and_privatize([0.0, 1.0], [1.0, 1.0], epsilon=1.0, bound=-1.0)


def _legendre_reference(t, y, degree):
    """<q, e_k> for the piecewise-linear q on [-1, 1], e_k = sqrt((2k+1)/2) P_k, at 40 digits
    (Gauss-Legendre with 7 nodes per piece: exact for degree <= 13)."""
    with mpmath.workdps(40):
        rule = list(zip(*_exact_rule(7)))
        total = [mpmath.mpf(0)] * (degree + 1)
        for s in range(len(t) - 1):
            a, b = mpmath.mpf(t[s]), mpmath.mpf(t[s + 1])
            ya, yb = mpmath.mpf(y[s]), mpmath.mpf(y[s + 1])
            half = (b - a) / 2
            for node, weight in rule:
                x = a + half * (node + 1)
                q = ya + (yb - ya) * (node + 1) / 2
                previous, current = mpmath.mpf(1), x
                values = [previous, current]
                for k in range(1, degree):
                    previous, current = current, ((2 * k + 1) * x * current
                                                  - k * previous) / (k + 1)
                    values.append(current)
                for k in range(degree + 1):
                    total[k] += weight * half * q * values[k]
        return [total[k] * mpmath.sqrt(mpmath.mpf(2 * k + 1) / 2) for k in range(degree + 1)]


def _exact_rule(order):
    """Gauss-Legendre nodes and weights at 40 digits (NumPy's nodes refined by Newton)."""
    nodes, weights = [], []
    for start in numpy.polynomial.legendre.leggauss(order)[0]:
        root = mpmath.findroot(lambda x: mpmath.legendre(order, x), mpmath.mpf(float(start)))
        derivative = mpmath.diff(lambda x: mpmath.legendre(order, x), root)
        nodes.append(root)
        weights.append(2 / ((1 - root ** 2) * derivative ** 2))
    return nodes, weights


@pytest.mark.parametrize("case", ["offset", "alternating", "many"])
def test_eta_bounds_the_measured_float_error_of_the_projection(case):
    """|project(q) - <q, e>| (40-digit mpmath) <= ETA ||q|| for adversarial curves: a large
    offset with small wiggles, alternating signs (||q|| ~ ||interpolant of |y|||/sqrt 3),
    and more samples than one contraction block (the pairwise sum of blocks), on random times."""
    module = generated("legendre10")
    rng = numpy.random.default_rng(11)
    size = {"offset": 300, "alternating": 300, "many": 1100}[case]
    t = numpy.sort(numpy.concatenate([[-1.0, 1.0], rng.uniform(-1, 1, size - 2)]))
    if case == "offset":
        y = 1e8 + rng.standard_normal(size)
    elif case == "alternating":
        y = 1e8 * (-1.0) ** numpy.arange(size) * (1 + rng.uniform(0, 1e-3, size))
    else:
        y = 3e5 * rng.uniform(0.5, 1.0, size)
    c = module.project(t, y)
    reference = numpy.array([float(v) for v in _legendre_reference(t, y, 10)])
    error = float(numpy.linalg.norm(c - reference))
    norm = make_curve(t, y, (-1.0, 1.0)).norm()
    assert error <= module.ETA * norm
    assert error > 0   # the reference resolves the float error


def test_the_cli_releases_every_curve_of_a_file_with_one_huge_curve(cli, tmp_path):
    """A file with a curve of values 1e308, a curve of L2 norm just above the old 2^24 x
    noise scale file refusal and one just below: all three are released (exit 0), the data
    owner hears on standard error how many were clipped ("not private"), and the release
    file states B, the slack and gamma, and its numbers exactly (the JSON coefficients are
    the module's own release with the same seed)."""
    module = generated("linear")
    t = numpy.linspace(0.0, 1.0, 5)
    rows = ["curve,t,y"]
    old = 2.0 ** 24   # noise scale 1 at epsilon = 1; ||q|| = |y| for a constant on [0, 1]
    curves = {"huge": numpy.full(5, 1e308), "above": numpy.full(5, old * (1 + 1e-6)),
              "below": numpy.full(5, old * (1 - 1e-6)), "small": numpy.linspace(0, 1, 5)}
    for key, y in curves.items():
        rows += [f"{key},{float(a)!r},{float(b)!r}" for a, b in zip(t, y)]
    data = tmp_path / "curves.csv"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "release.json"
    status, _, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "1", "--seed",
                         "5", "-o", out)
    assert status == 0, err
    assert "not private: 3 of 4 curves clipped" in err
    release = json.loads(out.read_text())
    facts = module.release_facts(epsilon=1.0)
    assert (release["bound"], release["slack"], release["lattice"]) == (
        facts["bound"], facts["slack"], facts["lattice"])
    assert [c["curve"] for c in release["curves"]] == list(curves)
    rng = numpy.random.default_rng(5)
    for record, y in zip(release["curves"], curves.values()):
        expected = module.project_and_privatize(t, y, epsilon=1.0, rng=rng)
        assert record["coefficients"] == expected.tolist()
    csv_out = tmp_path / "release.csv"
    status, _, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "1", "--seed",
                         "5", "--bound", "4", "-o", csv_out)
    assert status == 0 and "3 of 4 curves clipped to the bound B = 4.0" in err
    lines = csv_out.read_text().splitlines()
    assert "# bound: 4.0" in lines and any(line.startswith("# slack: ") for line in lines)
    values = [line.split(",")[-1] for line in lines if line.startswith("huge,")]
    assert all(v == repr(float(v)) for v in values) and max(map(abs, map(float, values))) < 50


def test_a_spec_bound_must_be_a_positive_number(cli, tmp_path):
    """[privacy] bound: a one-line spec error naming the key and the file."""
    text = (ROOT / "specs" / "linear.toml").read_text()
    for bad in ('"big"', "-1", "true", "inf"):
        spec = tmp_path / "bad.toml"
        spec.write_text(text + f"\n[privacy]\nbound = {bad}\n")
        status, _, err = cli("explain", spec)
        assert status == 2 and "privacy.bound" in err and "bad.toml" in err
        assert len(err.strip().splitlines()) == 1


def test_explain_states_eta_the_bound_rule_and_the_slack(cli):
    status, out, _ = cli("explain", "specs/sinc_ecg.toml")
    module = generated("sinc_ecg")
    facts = module.release_facts(epsilon=100.0)
    assert status == 0 and "## Clipping and the float slack" in out
    assert repr(module.ETA) in out and "`[privacy] bound` B = 256.0" in out
    assert f"| epsilon = 100 | 0.01 | 256.0 | {facts['slack']!r} | {facts['lattice']!r} |" in out


def test_one_invalid_curve_never_stops_a_file(cli, tmp_path):
    """A curve with a NaN, an infinite value, decreasing times or times outside the curve
    interval is released as the zero function: every curve of the file is released, and
    the others' releases are those of the file without the bad values (same seed)."""
    good = "a,0,1\na,0.5,2\na,1,0\n"
    bad = ["b,0,nan\nb,1,2\n", "b,0,1e309\nb,1,2\n", "b,0.5,1\nb,0.2,3\n", "b,0,1\nb,5,1\n"]
    zero = tmp_path / "zero.csv"
    zero.write_text("curve,t,y\n" + good + "b,0,0\nb,1,0\n")
    status, _, _ = cli("privatize", "specs/linear.toml", zero, "--epsilon", "1", "--seed", "3",
                       "-o", tmp_path / "zero.json")
    expected = json.loads((tmp_path / "zero.json").read_text())["curves"]
    for i, rows in enumerate(bad):
        data = tmp_path / f"bad{i}.csv"
        data.write_text("curve,t,y\n" + good + rows)
        out = tmp_path / f"bad{i}.json"
        status, _, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "1", "--seed",
                             "3", "-o", out)
        assert status == 0, err
        assert "1 of 2 curves was not valid" in err and "not private" in err
        assert json.loads(out.read_text())["curves"] == expected


def test_compare_and_public_times_with_an_invalid_curve(cli, tmp_path):
    """--compare works when a curve was replaced by the zero function; --at times outside
    the curve interval are a one-line error before any noise (public input)."""
    data = tmp_path / "c.csv"
    data.write_text("curve,t,y\na,0,1\na,1,2\nb,0,1\nb,5,1\n")
    status, _, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "1", "--seed", "1",
                         "--compare", "-o", tmp_path / "r.json")
    assert status == 0 and "b (sample times must lie" in err and "not private: a:" in err
    at = tmp_path / "at.txt"
    at.write_text("-3\n0.5\n")
    status, _, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "1", "--at", at,
                         "-o", tmp_path / "never.json")
    assert status == 2 and "--at: the public times must lie in" in err
    assert not (tmp_path / "never.json").exists()


def _noise_law_pvalue(noise, model, d):
    """KS p-value of release noise (rows) at scale 1: ||Z|| ~ Gamma(d) (GP), ||N||^2 ~
    chi^2(d) (CGP)."""
    if model == "GP":
        return stats.kstest(numpy.linalg.norm(noise, axis=1), "gamma", args=(d,)).pvalue
    return stats.kstest((noise ** 2).sum(axis=1), "chi2", args=(d,)).pvalue


@pytest.mark.parametrize("name", ["linear", "trajectory_linear"])
def test_the_coefficients_passed_to_the_noise_lie_in_the_ball(name, monkeypatch):
    """Lines a t + b over the whole domain (in the span: the clipped curve's projection has
    norm B up to its float error), norms 2^-20..2^60 on 2,000 random grids: the coefficients
    project_and_privatize passes to the noise have ||c|| <= B (1 + (d/2 + 3) u) (clip_rows:
    the sum of d squares, a square root, a division and a product), checked in Fractions.
    Without the coefficient clip after the projection, 8 and 16 of the grids exceed it (up
    to 14 u): the projection's own float error."""
    module = generated(name)
    bound = module.default_bound(epsilon=1.0)
    seen = []
    monkeypatch.setattr(module, "_add_noise", lambda c, *args, **kwargs: seen.append(c) or c)
    rng = numpy.random.default_rng(1)
    for _ in range(2000):
        t = numpy.sort(rng.uniform(*module.curve_interval(), int(rng.integers(2, 300))))
        t[0], t[-1] = module.curve_interval()
        a, b = rng.normal(size=(2, module.VALUE_DIM)) * 2.0 ** float(rng.integers(-20, 60))
        y = a * t[:, None] + b
        module.project_and_privatize(t, y[:, 0] if module.VALUE_DIM == 1 else y, epsilon=1.0,
                                     bound=bound, rng=0)
    u = Fraction(1, 2 ** 53)
    limit = (Fraction(bound) * (1 + (Fraction(module.COEF_DIM, 2) + 3) * u)) ** 2
    assert max(sum(Fraction(float(v)) ** 2 for v in c.ravel()) for c in seen) <= limit


@pytest.mark.parametrize("model", ["GP", "CGP"])
def test_a_release_far_outside_the_bound_carries_the_whole_noise(model):
    """Coefficients 1e30 (a held curve 1e300) times outside the bound B = 100: the release
    is the vector clipped to B plus noise of the exact law at scale 1 (epsilon = 1, rho =
    1/2; KS at 1e-6 over 300 releases each). Clipping after the noise, or to another bound
    than B, or not clipping a held curve (clipped as the curve held to [0, 10]), gives a
    noise of norm near 0 or near B."""
    from conftest import compiled
    budget = {"epsilon": 1.0} if model == "GP" else {"rho": 0.5}
    module = generated("legendre10")
    d = module.COEF_DIM
    direction = numpy.arange(1.0, d + 1) / numpy.linalg.norm(numpy.arange(1.0, d + 1))
    released = module.privatize(numpy.tile(direction * 1e30, (300, 1)), bound=100.0, rng=5,
                                **budget)
    assert _noise_law_pvalue(released - 100.0 * direction, model, d) > 1e-6
    held = compiled("kind_hold")
    t = numpy.linspace(2.0, 7.0, 40)
    y = numpy.tile((5 + numpy.sin(t)) * 1e300, (300, 1))
    centre = held.project_and_privatize(t, y[0], rho=1e12, bound=100.0, rng=0)  # noise 7e-7
    ends, values = numpy.concatenate([[0.0], t, [10.0]]), 5 + numpy.sin(t[[0, *range(40), -1]])
    norm = math.sqrt(numpy.sum(numpy.diff(ends) * (values[:-1] ** 2 + values[:-1] * values[1:]
                                                   + values[1:] ** 2)) / 3)  # the held curve's
    assert numpy.abs(centre - held.project(t, y[0] / 1e300) * 100.0 / norm).max() < 1e-4
    released = held.project_and_privatize(t, y, bound=100.0, rng=6, **budget)
    assert _noise_law_pvalue(released - centre, model, held.COEF_DIM) > 1e-6


def test_coefficient_clip_of_a_row_ignores_the_other_rows():
    """clip_rows is per row: a zero, tiny or huge row elsewhere in the batch (rows whose sum
    of squares leaves the safe range take the scaled path) does not move the bits of the
    others (adversarial review: a batch-wide path choice did, by up to 6e-16)."""
    from gpcompiler.runtime.clip import clip_rows
    c = numpy.random.default_rng(3).standard_normal((300, 33)) * 10
    alone = clip_rows(c, 1.0)
    for other in (numpy.zeros(33), numpy.full(33, 1e-200), numpy.full(33, 1e200)):
        together = clip_rows(numpy.vstack([c, other]), 1.0)
        assert numpy.array_equal(together[:-1], alone)
        assert numpy.array_equal(together[-1], clip_rows(other, 1.0))
    assert numpy.array_equal(clip_rows(numpy.zeros(33), 1.0), numpy.zeros(33))
    assert numpy.isclose(numpy.linalg.norm(clip_rows(numpy.full(33, 1e-200), 1e-250)), 1e-250)


@pytest.mark.parametrize("value, bound", [(1.7e308, 1.3259606401705517e-12), (1e130, 1e-190),
                                          (1e-250, 1e-300)])
def test_extreme_curves_clip_within_eta(value, bound):
    """Curves whose clip factor would be subnormal (huge values with a small bound, or a
    tiny bound on a safe sum) are scaled as (q / max|y|) (B / ||q / max|y| ||), never by a
    formed B / max|y|: the projection's norm stays within ETA B of B (second adversarial
    review: 6.2e-4 B, 4.9e8 ETA B, before)."""
    module = generated("legendre10")
    t = numpy.linspace(-1.0, 1.0, 5)
    c = module.project(t, numpy.full(5, value), bound=bound)
    assert abs(_norm(c) / bound - 1) <= module.ETA


def test_the_least_bound_keeps_the_projection_error_within_eta_b():
    """B = 2^-960, the least bound (slack.BOUND_FLOOR): the constant 1 on 2^16 pieces of
    [-1, 1] projects within ETA B of its exact clipped projection (at B = 1.3 2^-1022 the
    products underflowed: 1.75 ETA B at 2^16 pieces, 28 at 2^20; adversary of issue 30); a
    bound below it is refused in one line, and the default bound never goes below it."""
    module = generated("legendre10")
    bound = slack.BOUND_FLOOR
    t = numpy.linspace(-1.0, 1.0, 2 ** 16 + 1)
    exact = numpy.zeros(module.COEF_DIM)
    exact[0] = bound              # 1 is sqrt(2) L_0 on [-1, 1]; clipped to B: B L_0
    assert numpy.linalg.norm(module.project(t, numpy.ones(t.size), bound=bound) - exact) \
        <= module.ETA * bound
    with pytest.raises(ValueError, match="at least 2"):
        module.project_and_privatize(t, numpy.ones(t.size), epsilon=1.0, bound=bound / 2)
    assert module.default_bound(epsilon=1e297) >= slack.BOUND_FLOOR
    assert slack.default_bound(module.ETA, 1e-300) == slack.BOUND_FLOOR
