"""The privacy boundary (docs/design.md, Privacy model): a release depends on a user's curve
only through the function q (zero outside its samples, on the spec's public domain), never
on its sample times or their number; every map applied before noise is non-expansive."""
import ast
import math
import random
from fractions import Fraction
from pathlib import Path

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, generated
from gpcompiler import baseline_points, priv_func_select, priv_func_seg, priv_func_unbounded
from gpcompiler import cdf
from gpcompiler.adaptive import piecewise, piecewise_project_and_privatize
from gpcompiler.adaptive.curve import make_curve
from gpcompiler.adaptive.select import prefix_distances
from gpcompiler.runtime.secure import SecureGenerator


# --- curves and their exact distances ---------------------------------------------------

def _bump(t, lo, hi):
    """A curve that is zero at and beyond lo and hi (so zero samples extend it exactly)."""
    u = numpy.clip((t - lo) / (hi - lo), 0, 1)
    return numpy.sin(numpy.pi * u) * (1 + 3 * u) + 0.5 * numpy.sin(9 * numpy.pi * u) * u * (1 - u)


def _grids(lo, hi, domain, size=400):
    """The same function on four sample grids: plain; extra samples inside (interpolated
    exactly, the function being piecewise linear on the plain grid); zero samples appended
    up to the domain's end; a zero sample before a shifted first sample."""
    t = numpy.linspace(lo, hi, size)
    y = _bump(t, lo, hi)
    dense_t = numpy.union1d(t, numpy.linspace(lo, hi, 3 * size + 7))
    dense_y = numpy.interp(dense_t, t, y)
    tail_t = numpy.concatenate([t, numpy.linspace(hi, domain[1], 9)[1:]])
    tail_y = numpy.concatenate([y, numpy.zeros(8)])
    head_t = numpy.concatenate([[domain[0] + 0.3 * (lo - domain[0])], t])
    head_y = numpy.concatenate([[0.0], y])
    return [(t, y), (dense_t, dense_y), (tail_t, tail_y), (head_t, head_y)]


def exact_distance(a, b, domain):
    """dist2 of two sampled curves (zero outside their samples) on the merged grid: both
    are linear on every merged interval, so the integral of the squared difference is
    exact (h (d0^2 + d0 d1 + d1^2) / 3)."""
    (ta, ya), (tb, yb) = a, b
    knots = numpy.union1d(numpy.union1d(ta, tb), domain)

    def values(t, y, x, side):
        inside = (x >= t[0]) & (x <= t[-1]) if side is None else side
        return numpy.where(inside, numpy.interp(x, t, y), 0.0)
    lo, hi = knots[:-1], knots[1:]
    mid = (lo + hi) / 2
    d = []
    for x in (lo, hi):
        d.append(values(ta, ya, x, (mid > ta[0]) & (mid < ta[-1]))
                 - values(tb, yb, x, (mid > tb[0]) & (mid < tb[-1])))
    return math.sqrt(float(numpy.sum((hi - lo) * (d[0] ** 2 + d[0] * d[1] + d[1] ** 2)) / 3))


def _same(first, second, what):
    first, second = numpy.asarray(first, dtype=float), numpy.asarray(second, dtype=float)
    assert first.shape == second.shape, what
    scale = max(1.0, float(numpy.abs(first).max(initial=0.0)))
    assert numpy.allclose(first, second, rtol=1e-9, atol=1e-9 * scale), what


# --- same function, different grids, same seed: same release ---------------------------

RELEASES = {
    "priv_func_select": lambda t, y, **k: priv_func_select(t, y, generated("monomial32"), **k),
    "priv_func_seg": lambda t, y, **k: priv_func_seg(t, y, generated("linear"), T=100.0, **k),
    "priv_func_seg continuous": lambda t, y, **k: priv_func_seg(
        t, y, generated("linear"), continuous=True, T=100.0, **k),
    "priv_func_unbounded": lambda t, y, **k: priv_func_unbounded(t - 50, y, generated("linear"),
                                                                 **k),
    "piecewise_project_and_privatize": lambda t, y, **k: piecewise_project_and_privatize(
        t, y, generated("linear"), numpy.linspace(0, 100, 9), T=100.0, **k),
    "baseline_points": lambda t, y, **k: baseline_points(t, y, 50, domain=(0.0, 100.0),
                                                         window=3, **k),
}


@pytest.mark.parametrize("name", sorted(RELEASES))
@pytest.mark.parametrize("budget", [{"epsilon": 2.0}, {"epsilon": 200.0}, {"rho": 50.0}])
def test_adaptive_release_does_not_depend_on_the_sample_grid(name, budget):
    grids = _grids(20.0, 70.0, (0.0, 100.0))
    public = numpy.linspace(0.0, 100.0, 1001)
    releases = [RELEASES[name](t, 30 * y, rng=numpy.random.default_rng(5), **budget)
                for t, y in grids]
    first = releases[0]
    for other in releases[1:]:
        assert [s.label for s in other.ledger.spends] == [s.label for s in first.ledger.spends]
        assert other.details == first.details
        assert other.basis_indices == first.basis_indices
        if first.breakpoints is not None:
            assert numpy.array_equal(other.breakpoints, first.breakpoints)
        _same(first.coefficients, other.coefficients, name)
        _same(first.evaluate(public if name != "priv_func_unbounded" else public - 50),
              other.evaluate(public if name != "priv_func_unbounded" else public - 50), name)


HELD = {
    "priv_func_select": lambda m, t, y: priv_func_select(t, y, m, epsilon=50.0, rng=3),
    "priv_func_seg": lambda m, t, y: priv_func_seg(t, y, m, epsilon=50.0, rng=3),
    "piecewise_project_and_privatize": lambda m, t, y: piecewise_project_and_privatize(
        t, y, m, numpy.linspace(0, 10, 5), epsilon=50.0, rng=3),
    "baseline_points": lambda m, t, y: baseline_points(t, y, 20, domain=(0.0, 10.0),
                                                       outside=m.OUTSIDE, epsilon=50.0, rng=3),
    "project_and_privatize": lambda m, t, y: m.project_and_privatize(t, y, epsilon=50.0, rng=3),
}


@pytest.mark.parametrize("name", sorted(HELD))
def test_releases_of_a_held_curve_do_not_depend_on_the_grid(name):
    """[curve] outside = "hold" (issue 20 item 3): samples on [2, 7] held out to [0, 10] are
    the same function as those samples with the end values repeated at 0 and 10 (or one
    sample as a constant); the same release, and not that of the zero-padded curve."""
    from conftest import compiled
    module = compiled("kind_hold")
    t = numpy.linspace(2.0, 7.0, 40)
    y = 5 + numpy.sin(t)
    grids = [(t, y), (numpy.concatenate([[0.0, 1e-9], t, [10.0]]),
                      numpy.concatenate([[y[0], y[0]], y, [y[-1]]]))]
    releases = [HELD[name](module, *grid) for grid in grids]
    values = [getattr(r, "coefficients", r) for r in releases]
    _same(values[0], values[1], name)
    if name == "baseline_points":     # the zero-padded curve is another function
        zero = baseline_points(t, y, 20, domain=(0.0, 10.0), epsilon=50.0, rng=3)
        assert not numpy.allclose(values[0], zero.coefficients)
    constant = [HELD[name](module, *grid) for grid in (([4.0], [3.0]), ([0.0, 10.0], [3.0, 3.0]))]
    _same(getattr(constant[0], "coefficients", constant[0]),
          getattr(constant[1], "coefficients", constant[1]), name + " constant")


def test_every_public_releasing_function_is_covered():
    """A new releasing function cannot be exported without joining the test above."""
    import gpcompiler.adaptive as adaptive
    releasing = {name for name in adaptive.__all__
                 if name.startswith(("priv_func", "piecewise", "baseline"))}
    assert releasing == {name.split()[0] for name in RELEASES}


def test_the_comparison_catches_a_domain_taken_from_the_samples():
    """Negative control: the baseline on [t_0, t_last] (the rule before issue 8) gives
    different releases on the grids above, and the comparison says so."""
    releases = [baseline_points(t, y, 50, domain=(t[0], t[-1]), epsilon=200.0, rng=5)
                for t, y in _grids(20.0, 70.0, (0.0, 100.0))]
    with pytest.raises(AssertionError):
        for other in releases[1:]:
            _same(releases[0].evaluate(numpy.linspace(0, 100, 101)),
                  other.evaluate(numpy.linspace(0, 100, 101)), "baseline")


@pytest.mark.parametrize("name", ["linear", "monomial32", "fourier8", "sinc_ecg",
                                  "trajectory_linear", "ellipse"])
@pytest.mark.parametrize("budget", [{"epsilon": 3.0}, {"rho": 2.0}])
def test_generated_project_and_privatize_does_not_depend_on_the_sample_grid(name, budget):
    module = generated(name)
    params = {"T": 100.0} if "T" in module.PARAMETERS else {}
    domain = module.curve_interval(**params)
    lo, hi = domain[0] + 0.2 * (domain[1] - domain[0]), domain[0] + 0.7 * (domain[1] - domain[0])
    releases = []
    for t, y in _grids(lo, hi, domain, size=300):
        values = numpy.stack([y, -2 * y], axis=1) if module.VALUE_DIM == 2 else y
        releases.append(module.project_and_privatize(t, values, rng=numpy.random.default_rng(9),
                                                     **budget, **params))
    for other in releases[1:]:
        _same(releases[0], other, name)


@pytest.mark.parametrize("budget", [{"epsilon": 3.0}, {"rho": 2.0}])
def test_box_release_under_a_singular_weight_does_not_depend_on_the_grid(budget):
    """chebyshev_box (weight singular on every edge of the square, graded by distance): the
    same field on a refined grid, and cells split into sub-cells, give the same release."""
    from scipy.interpolate import RegularGridInterpolator
    module = generated("chebyshev_box")
    rng = numpy.random.default_rng(12)
    grids = (numpy.array([-1.0, -0.4, 0.3, 1.0]), numpy.array([-1.0, 0.5, 0.9999]))
    values = rng.normal(size=(4, 3))
    fine = tuple(numpy.union1d(g, rng.uniform(g[0], g[-1], 5)) for g in grids)
    refined = RegularGridInterpolator(grids, values)(
        numpy.stack(numpy.meshgrid(*fine, indexing="ij"), -1))
    _same(module.project_and_privatize(grids, values, rng=7, **budget),
          module.project_and_privatize(fine, refined, rng=7, **budget), "linear")
    split = tuple(numpy.union1d(g, (g[:-1] + g[1:]) / 2) for g in grids)
    cells = numpy.repeat(numpy.repeat(values[:-1, :-1], 2, axis=0), 2, axis=1)
    _same(module.project_and_privatize(grids, values[:-1, :-1], kind="cells", rng=7, **budget),
          module.project_and_privatize(split, cells, kind="cells", rng=7, **budget), "cells")


@pytest.mark.parametrize("method", cdf.METHODS)
def test_cdf_release_does_not_depend_on_record_order(method):
    data = numpy.random.default_rng(3).lognormal(6, 0.6, size=3000)
    shuffled = numpy.random.default_rng(4).permutation(data)
    first, second = (cdf.estimate(x, lo=0.0, hi=3000.0, epsilon=1.0, delta=1e-6, method=method,
                                  rng=numpy.random.default_rng(8)) for x in (data, shuffled))
    assert numpy.array_equal(first.grid, second.grid)
    _same(first.values, second.values, method)


def test_samples_outside_the_domain_are_an_error():
    t = numpy.linspace(0, 120, 50)
    with pytest.raises(ValueError, match="domain"):
        priv_func_seg(t, numpy.sin(t), generated("linear"), epsilon=1.0, T=100.0)
    with pytest.raises(ValueError, match="domain"):
        priv_func_select(t, numpy.sin(t), generated("monomial32"), epsilon=1.0)
    with pytest.raises(ValueError, match="domain"):
        baseline_points(t, numpy.sin(t), 5, domain=(0.0, 100.0), epsilon=1.0)


def test_unbounded_asks_a_public_number_of_queries():
    """Zero samples far away (here at +-1000) change neither the queries nor the clipping
    interval's distribution; the number of SVT queries is the public ``levels`` + 1 at most."""
    t = numpy.linspace(-0.5, 0.5, 101)
    y = numpy.cos(numpy.pi * t)
    y[[0, -1]] = 0.0
    far_t = numpy.concatenate([[-1000.0], t, [1000.0]])
    far_y = numpy.concatenate([[0.0], y, [0.0]])
    widths = [[dict(priv_func_unbounded(tt, yy, generated("linear"), epsilon=0.5, levels=6,
                                        rng=numpy.random.default_rng(s)).details)["half_width"]
               for s in range(40)] for tt, yy in ((t, y), (far_t, far_y))]
    assert widths[0] == widths[1]
    assert max(widths[0]) <= 2.0 ** 6


# --- every pre-noise map is non-expansive -----------------------------------------------

@st.composite
def curve_pairs(draw, domain=(0.0, 1.0)):
    """Two curves with different sample grids inside the domain."""
    def one():
        size = draw(st.integers(2, 30))
        times = draw(st.lists(st.floats(domain[0], domain[1]), min_size=size, max_size=size,
                              unique=True))
        t = numpy.sort(numpy.array(times))
        if numpy.any(numpy.diff(t) < 1e-9):
            t = numpy.linspace(domain[0], domain[1], size)
        scale = draw(st.sampled_from([1.0, 1e3, 1e8]))
        y = numpy.array(draw(st.lists(st.floats(-1, 1), min_size=size, max_size=size))) * scale
        return t, y
    return one(), one()


NONEXPANSIVE = settings(max_examples=60, deadline=None)


@NONEXPANSIVE
@given(curve_pairs(), st.floats(0.0, 0.5), st.floats(0.5, 1.0))
def test_clipping_is_non_expansive(pair, lo, hi):
    (ta, ya), (tb, yb) = pair
    def samples(curve):
        """A clipped curve's samples; fewer than two is the zero function."""
        if curve.t.size >= 2:
            return curve.t, curve.y[:, 0]
        return numpy.array([lo, hi]), numpy.zeros(2)
    a = make_curve(ta, ya, (0.0, 1.0)).restricted(lo, hi)
    b = make_curve(tb, yb, (0.0, 1.0)).restricted(lo, hi)
    before = exact_distance(pair[0], pair[1], (0.0, 1.0))
    after = exact_distance(samples(a), samples(b), (lo, hi))
    assert after <= before * (1 + 1e-12) + 1e-300


def test_clipping_matches_the_indicator_exactly():
    """The ramp of the old clipping (issue 8, finding 1): one nonzero sample at the start of
    [-0.01, 0.01]; clipped to [-1, 1] the function must not change at all."""
    t = numpy.linspace(-0.01, 0.01, 201)
    y = numpy.zeros_like(t)
    y[0] = 1.0
    clipped = make_curve(t, y, (-math.inf, math.inf)).restricted(-1.0, 1.0)
    assert clipped.norm_squared() == pytest.approx(make_curve(t, y, (-1, 1)).norm_squared(),
                                                   rel=1e-15)
    assert numpy.all(clipped(numpy.array([-0.5, -0.02, 0.5])) == 0.0)


@NONEXPANSIVE
@given(curve_pairs(), st.sampled_from(["linear", "monomial32", "fourier8"]))
def test_projection_is_non_expansive(pair, name):
    module = generated(name)
    params = {"T": 1.0} if name == "linear" else {}
    domain = module.curve_interval(**params)
    scale = domain[1] - domain[0]
    pair = tuple((domain[0] + t * scale, y) for t, y in pair)
    ca, cb = (module.project(t, y, **params) for t, y in pair)
    before = exact_distance(pair[0], pair[1], domain)
    assert numpy.linalg.norm(ca - cb) <= before * (1 + 1e-9) + 1e-12 * max(
        numpy.linalg.norm(ca), numpy.linalg.norm(cb))


@NONEXPANSIVE
@given(curve_pairs(), st.integers(0, 6))
def test_piecewise_projection_is_non_expansive(pair, level):
    breakpoints = numpy.linspace(0.0, 1.0, 2 ** level + 1)
    (ta, ya), (tb, yb) = pair
    pa, _ = piecewise.project(make_curve(ta, ya, (0.0, 1.0)), breakpoints, 1)
    pb, _ = piecewise.project(make_curve(tb, yb, (0.0, 1.0)), breakpoints, 1)
    before = exact_distance(pair[0], pair[1], (0.0, 1.0))
    scale = max(numpy.linalg.norm(pa.coefficients), numpy.linalg.norm(pb.coefficients))
    assert numpy.linalg.norm(pa.coefficients - pb.coefficients) <= before * (1 + 1e-12) \
        + 1e-13 * scale


@NONEXPANSIVE
@given(curve_pairs(), st.integers(0, 8))
def test_seg_level_queries_are_1_lipschitz(pair, level):
    """g_j = tau_j - ||q - P_j q||: the residual part is 1-Lipschitz, zero pieces included."""
    breakpoints = numpy.linspace(0.0, 1.0, 2 ** level + 1)
    residuals = [math.sqrt(piecewise.project(make_curve(t, y, (0.0, 1.0)), breakpoints,
                                             1)[1].sum()) for t, y in pair]
    norms = [math.sqrt(make_curve(t, y, (0.0, 1.0)).norm_squared()) for t, y in pair]
    before = exact_distance(pair[0], pair[1], (0.0, 1.0))
    assert abs(residuals[0] - residuals[1]) <= before * (1 + 1e-12) + 1e-12 * max(norms)


@pytest.mark.parametrize("offset", [0.0, 1e4, 1e6, 1e8])
def test_select_queries_are_1_lipschitz_with_large_offsets(offset):
    """Finding 9: sqrt(||q||^2 - sum c^2) cancels (0.005 off at an offset of 1e6); the
    queries are now sums of non-negative terms and 1-Lipschitz to 1e-12 of ||q||."""
    module = generated("monomial32")
    rng = numpy.random.default_rng(int(offset) % 1000)
    for _ in range(6):
        ta = numpy.sort(numpy.concatenate([[0.0, 100.0], rng.uniform(0, 100, 300)]))
        tb = numpy.sort(numpy.concatenate([[0.0, 100.0], rng.uniform(0, 100, 200)]))
        ya = offset + numpy.sin(ta / 7) * 3 + rng.normal(size=ta.size) * 0.1
        yb = offset + numpy.interp(tb, ta, ya - offset) + rng.normal(size=tb.size) * 0.3
        queries, norms = [], []
        for t, y in ((ta, ya), (tb, yb)):
            curve = make_curve(t, y, (0.0, 100.0))
            queries.append(prefix_distances(module, curve, {})[2])
            norms.append(math.sqrt(curve.norm_squared()))
        distance = exact_distance((ta, ya), (tb, yb), (0.0, 100.0))
        assert numpy.all(numpy.abs(queries[0] - queries[1])
                         <= distance * (1 + 1e-12) + 1e-12 * max(norms))


# --- findings 5, 7, 10 and 11 ------------------------------------------------------------

def test_nothing_draws_from_an_unseeded_numpy_generator():
    """Finding 5: numpy.random.default_rng() without a seed (PCG64 from OS entropy, not a
    CSPRNG) and the legacy global numpy.random.* samplers are never used for noise, in the
    package or in any generated module (which the templates produce)."""
    offenders = []
    for path in [*(ROOT / "gpcompiler").rglob("*.py"), *(ROOT / "generated").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = ast.unparse(node.func)
                if name.endswith("random.default_rng") and not node.args:
                    offenders.append(f"{path.name}:{node.lineno}")
                if name.startswith(("numpy.random.", "np.random.")) and \
                        not name.endswith(("default_rng", "Generator")):
                    offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []


def test_generated_cdf_module_noise_comes_from_os_entropy(monkeypatch):
    module = generated("cdf_wages")
    calls = []
    monkeypatch.setattr(numpy.random, "default_rng", lambda *a: calls.append(a))
    module.privatize(numpy.zeros(4), 1.0)
    assert calls == []
    assert isinstance(module.default_generator(None), module.SecureGenerator)


def test_cgp_noise_scale_is_never_below_one_over_sqrt_two_rho():
    """Finding 7: scale^2 * 2 rho >= 1 exactly (Fractions) for 3 10^4 random rho, including
    rho = 138.20202832096663, where nextafter(1/sqrt(2 rho)) was below."""
    module = generated("linear")
    rng = random.Random(7)
    values = [138.20202832096663] + [math.exp(rng.uniform(-30, 30)) for _ in range(30_000)]
    for rho in values:
        scale = module._scale(None, rho)  # the scale privatize passes to the exact sampler
        assert Fraction(scale) ** 2 * 2 * Fraction(rho) >= 1, rho


def test_uniform_reaches_every_binade():
    """Finding 10: P[u < 2^-k] = 2^-k. The exponent is 1 + the number of leading zero bits
    of the random stream (top 12 bits of the first word, then whole words): check it maps
    every stream with k - 1 leading zeros to a uniform in [2^-k, 2^(1-k)), for k up to 140,
    and count the binades of a large sample against their binomial distribution."""
    class Stream(SecureGenerator):
        def __init__(self, words):
            self.words = list(words)

        def _words(self, count):
            taken, self.words = self.words[:count], self.words[count:]
            return numpy.array(taken, dtype=numpy.uint64)
    bits = random.Random(1)
    for k in range(1, 141):
        stream = "0" * (k - 1) + "1" + "".join(bits.choice("01") for _ in range(200))
        first = int(stream[:12].ljust(12, "0"), 2) << 52 | bits.getrandbits(52)
        rest = [int(stream[12 + 64 * i: 76 + 64 * i], 2) for i in range(3)]
        if k <= 12:
            rest = []
        generator = Stream(rest)
        u = generator._uniforms(numpy.array([first], dtype=numpy.uint64))[0]
        assert 2.0 ** -k <= u < 2.0 ** (1 - k), k
    from scipy import stats
    u = SecureGenerator().random(2_000_000)
    assert u.min() > 0 and u.max() < 1
    for k in range(1, 21):
        count = int(numpy.sum(u < 2.0 ** -k))
        assert stats.binomtest(count, u.size, 2.0 ** -k).pvalue > 1e-6, k
    z = SecureGenerator().standard_normal(10)
    assert z.shape == (10,)


@pytest.mark.parametrize("budget", [True, "2", 1e-320, float("nan"), -1.0, None])
def test_generated_privatize_rejects_budgets_that_are_not_usable_numbers(budget):
    module = generated("linear")
    with pytest.raises(ValueError):
        module.privatize(numpy.zeros(2), epsilon=budget)
    with pytest.raises(ValueError):
        module.project_and_privatize([0.0, 1.0], [0.0, 1.0], epsilon=budget)


def test_rng_accepts_an_int_seed():
    module = generated("linear")
    first = module.privatize(numpy.zeros(2), epsilon=1.0, rng=42)
    assert numpy.array_equal(first, module.privatize(numpy.zeros(2), epsilon=1.0,
                                                     rng=numpy.random.default_rng(42)))
    t = numpy.linspace(0, 1, 20)
    a = priv_func_seg(t, t, generated("linear"), epsilon=1.0, rng=7)
    b = priv_func_seg(t, t, generated("linear"), epsilon=1.0, rng=numpy.random.default_rng(7))
    assert numpy.array_equal(a.coefficients, b.coefficients)
    with pytest.raises(ValueError, match="seed"):
        module.privatize(numpy.zeros(2), epsilon=1.0, rng=-1)


def test_merged_cdf_statistics_report_the_largest_delta():
    """Finding 6: spent ((1.0, 1e-10), (0.9, 0.01)) is (1.0, 0.01)-DP, not (1.0, 1e-10)."""
    rng = numpy.random.default_rng(0)
    parts = [cdf.Statistics.from_data(rng.uniform(0, 1, 500), lo=0.0, hi=1.0).privatize(
        epsilon=e, delta=d, rng=rng) for e, d in ((1.0, 1e-10), (0.9, 0.01))]
    merged = parts[0].merge(parts[1]).estimate()
    assert (merged.epsilon, merged.delta) == (1.0, 0.01)


# --- the adversary's findings (review of issue 8) ----------------------------------------

def _compiled(tmp_path_factory, name, basis, interval):
    import gpcompiler
    path = tmp_path_factory.mktemp("specs") / f"{name}.toml"
    path.write_text(f'name = "{name}"\n[domain]\nintervals = [{interval}]\n'
                    f'[basis]\nfunctions = {basis}\n')
    return gpcompiler.load(path, cache=tmp_path_factory.mktemp("cache"))


def test_degree_zero_residual_is_exact(tmp_path_factory):
    """(q - Pq)^2 has degree 2 on a linear piece even for a constant basis: a midpoint rule
    would call every linear piece a perfect fit and make the queries depend on the grid."""
    constant = _compiled(tmp_path_factory, "constant", '["1"]', '["0", "1"]')
    coarse = (numpy.array([0.0, 1.0]), numpy.array([0.0, 1.0]))
    fine_t = numpy.linspace(0.0, 1.0, 1025)
    distances = [prefix_distances(constant, make_curve(t, y, (0.0, 1.0)), {})[2][0]
                 for t, y in (coarse, (fine_t, fine_t))]
    assert distances == pytest.approx([math.sqrt(1 / 12)] * 2, rel=1e-14)
    levels = [[dict(priv_func_seg(t, y, constant, epsilon=30.0, rng=s).details)["level"]
               for s in range(10)] for t, y in (coarse, (fine_t, fine_t))]
    assert levels[0] == levels[1]


def test_select_residual_resolves_the_basis_frequency(tmp_path_factory):
    highfreq = _compiled(tmp_path_factory, "highfreq", '["1", "sin(80*t)", "cos(80*t)"]',
                         '["-pi", "pi"]')
    period = 2 * math.pi / 80
    sparse_t = numpy.linspace(0.0, 4 * period, 801)
    sparse_y = 1e4 * numpy.sin(80 * sparse_t)
    dense_t = numpy.concatenate([sparse_t, numpy.linspace(4 * period, math.pi, 2000)[1:]])
    dense_y = numpy.concatenate([sparse_y, numpy.zeros(1999)])
    queries = [prefix_distances(highfreq, make_curve(t, y, (-math.pi, math.pi)), {})[2]
               for t, y in ((sparse_t, sparse_y), (dense_t, dense_y))]
    norm = math.sqrt(make_curve(sparse_t, sparse_y, (-math.pi, math.pi)).norm_squared())
    assert numpy.abs(queries[0] - queries[1]).max() <= 1e-12 * norm


def test_nearly_coincident_sample_times_give_finite_releases():
    """Two samples 2 subnormals apart: a slope (y1 - y0)/(t1 - t0) would overflow to inf."""
    t = numpy.array([-1.0, -5e-324, 5e-324, 1.0])
    for y in ([0.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0 + 1e-14, 0.0]):
        curve = make_curve(t, y, (-1.0, 1.0))
        assert numpy.isfinite(curve(numpy.array([0.0]))).all()
        release = piecewise_project_and_privatize(t, y, generated("legendre10"), [-1.0, 0.0, 1.0],
                                                  epsilon=1.0, rng=0)
        assert numpy.isfinite(release.coefficients).all()


def test_short_curves_and_jumps_are_released_not_refused():
    """The number of samples never decides whether there is a release: fewer than two
    samples is the zero function; a repeated time is a jump."""
    zero = [priv_func_seg(t, y, generated("linear"), epsilon=2.0, rng=4).coefficients
            for t, y in (([], []), ([0.5], [3.0]), ([0.2, 0.7], [0.0, 0.0]))]
    for other in zero[1:]:
        _same(zero[0], other, "zero function")
    jump = ([0.0, 0.5, 0.5, 1.0], [1.0, 1.0, -1.0, -1.0])
    split = ([0.0, 0.5 - 1e-300, 0.5, 1.0], [1.0, 1.0, -1.0, -1.0])
    for algorithm in (lambda t, y: priv_func_seg(t, y, generated("linear"), epsilon=50.0, rng=1),
                      lambda t, y: baseline_points(t, y, 9, domain=(0, 1), epsilon=50.0, rng=1)):
        _same(algorithm(*jump).coefficients, algorithm(*split).coefficients, "jump")


def test_a_batch_released_twice_cannot_be_merged_as_if_disjoint():
    """Adversary finding: merging two releases of the same records reported one epsilon
    while the noise of the merge is that of a single release at a larger epsilon."""
    data = numpy.random.default_rng(0).lognormal(6, 0.6, size=2000)
    batch = cdf.Statistics.from_data(data, lo=0.0, hi=3000.0, degree=10)
    first = batch.privatize(epsilon=1.0, delta=1e-6, rng=1)
    with pytest.raises(ValueError, match="share a batch"):
        first.merge(batch.privatize(epsilon=1.0, delta=1e-6, rng=2))
    with pytest.raises(ValueError, match="share a batch"):
        batch.merge(batch)
    other = cdf.Statistics.from_data(data[:500], lo=0.0, hi=3000.0, degree=10)
    merged = first.merge(other.privatize(epsilon=0.5, delta=1e-6, rng=3)).estimate()
    assert (merged.epsilon, merged.delta) == (1.0, 1e-6)


@pytest.mark.parametrize("method", cdf.METHODS)
def test_the_same_records_read_again_cannot_be_merged_as_if_disjoint(method):
    """Issue 19 item 4: the same records re-read into a new Statistics (in another order and
    chunking) merged silently; their fingerprint is the same and the merge is refused.
    Batches that differ in one record, or in one bit of one record, still merge (what the
    check cannot see). A release carries no fingerprint (adversarial review: two releases
    told, without noise, whether they held the same records): its names are random tokens,
    the same for the same batch released twice and unrelated to the records."""
    data = numpy.random.default_rng(0).lognormal(6, 0.6, size=3000)
    options = dict(lo=0.0, hi=3000.0, method=method)
    first = cdf.Statistics.from_data(data, **options)
    again = cdf.Statistics.from_chunks(numpy.array_split(data[::-1], 7), **options)
    assert first.batches == again.batches
    with pytest.raises(ValueError, match="same records read again"):
        first.merge(again)
    released = [s.privatize(epsilon=1.0, delta=1e-6, rng=k) for k, s in enumerate((first, again))]
    assert released[0].batches == first.releases and not released[0].batches & first.batches
    assert not released[0].batches & released[1].batches
    with pytest.raises(ValueError, match="released twice"):
        released[0].merge(first.privatize(epsilon=1.0, delta=1e-6, rng=3))
    nudged = data.copy()
    nudged[17] = numpy.nextafter(nudged[17], numpy.inf)
    for other in (data[1:], nudged):
        merged = first.merge(cdf.Statistics.from_data(other, **options))
        assert merged.count == 3000 + other.size


@pytest.mark.parametrize("basis, interval", [
    ('["1", "1/(1+t**2)"]', '["-5", "5"]'),                 # poles near the interval
    ('["sin(t)**15", "1"]', '["-pi", "pi"]'),               # a power raises the frequency
    ('["1", "1/((t-0.2)**2+1e-6)"]', '["0", "1"]'),         # a narrow peak between tiles
])
def test_generated_projection_does_not_depend_on_the_grid_for_hard_bases(
        tmp_path_factory, basis, interval):
    """Adversary findings: the symbolic frequency bound missed these, so the Gauss rule
    was wrong on coarse grids (release gaps 0.23, 0.06, 2.8) and the projection could
    expand. The compile-time rule is now sized by poles and rates and verified."""
    module = _compiled(tmp_path_factory, "hard", basis, interval)
    lo, hi = module.curve_interval()
    coarse, fine = numpy.array([lo, hi]), numpy.linspace(lo, hi, 1001)
    constant = [module.project(t, 100 * numpy.ones_like(t)) for t in (coarse, fine)]
    assert numpy.abs(constant[0] - constant[1]).max() <= 1e-9 * numpy.abs(constant[1]).max()
    for c in constant:      # q = 100 lies in the span: ||P q|| = ||q||, never more
        assert numpy.linalg.norm(c) <= 100 * math.sqrt(hi - lo) * (1 + 1e-12)


@pytest.mark.parametrize("ulps", [1, 4, 64, 2 ** 20])
def test_piecewise_projection_is_non_expansive_on_segments_a_few_ulps_wide(ulps):
    """Adversary finding: nodes rebuilt from x = lo + h s collapsed onto the ends of a tiny
    segment (||P(q 1_seg)|| was 8.2 ||q 1_seg|| at 1 ulp); they sit at exact Gauss points."""
    curve = make_curve(numpy.array([-1.0, 1.0]), numpy.array([1.0, 1.0]), (-1.0, 1.0))
    hi = 0.5
    for _ in range(ulps):
        hi = math.nextafter(hi, 1.0)
    function, _ = piecewise.project(curve, numpy.array([-1.0, 0.5, hi, 1.0]), 10)
    assert numpy.linalg.norm(function.coefficients[1]) <= math.sqrt(hi - 0.5) * (1 + 1e-12)


# --- a systematic grid-independence generator (issue 19 item 2) --------------------------
# Random functions, then random refinements that place nodes where a rule might depend on
# the grid: 1e-3 ... 1e-15 (relative) from each end of the domain (where a weight may be
# singular), next to breakpoints and jumps, repeated times, the domain's ends themselves
# (padding), cells split next to an edge. Same function, same seed: same release.

SHIPPED = sorted(p.stem for p in (ROOT / "generated").glob("*.py"))
CURVE_KINDS = ["kind_bounded", "kind_chebyshev", "kind_sobolev", "kind_hold"]
BOX_KINDS = ["kind_sobolev_box"]
EXAMPLES = 3


def _module_for(name):
    from conftest import compiled
    return compiled(name) if name.startswith("kind_") else generated(name)


def _near(rng, point, width, side):
    """A point 10^-k width from ``point`` on ``side`` (+1, -1), k in 3..15."""
    return point + side * width * 10.0 ** -int(rng.integers(3, 16))


def _base_curve(rng, lo, hi, dim, hold, full):
    """A sampled curve: reaching both domain ends (``full``), or inside them with zero end
    values unless held (so samples padding it are the same function), with one jump half
    of the time."""
    a, b = (lo, hi) if full else sorted(lo + (hi - lo) * rng.uniform(0.05, 0.95, 2))
    t = numpy.sort(numpy.concatenate([[a, b], rng.uniform(a, b, int(rng.integers(3, 9)))]))
    y = rng.normal(size=(t.size, dim)) * 10.0
    if not (full or hold):
        y[[0, -1]] = 0.0
    if rng.random() < 0.5:        # a jump: the time of one inner sample repeated
        j = int(rng.integers(1, t.size - 1))
        t, y = numpy.insert(t, j, t[j]), numpy.insert(y, j, rng.normal(size=dim) * 10.0, axis=0)
    return t, y


def _value(t, y, s, hold):
    """The curve at a new time s (not a sample time): interpolated between its neighbours,
    zero (or the held end value) outside the samples."""
    if s < t[0] or s > t[-1]:
        return y[0] * hold if s < t[0] else y[-1] * hold
    i = int(numpy.searchsorted(t, s))
    u = (s - t[i - 1]) / (t[i] - t[i - 1])
    return (1 - u) * y[i - 1] + u * y[i]


def _refined_curve(rng, t, y, lo, hi, hold):
    """The same function with adversarial extra samples (see above)."""
    width = hi - lo
    inner = numpy.flatnonzero(numpy.diff(t) > 0)
    new = [_near(rng, lo, width, 1), _near(rng, hi, width, -1), lo, hi]
    for i in rng.choice(inner, min(3, inner.size), replace=False):
        h = t[i + 1] - t[i]
        new += [_near(rng, t[i], h, 1), _near(rng, t[i + 1], h, -1)]
    new = [s for s in new if lo <= s <= hi and s not in t]
    times, values = list(t), list(y)
    for s in sorted(set(new)):
        i = int(numpy.searchsorted(times, s))
        times.insert(i, s)
        values.insert(i, _value(t, y, s, hold))
    j = int(rng.integers(len(times)))      # a repeated time with an equal value: no jump
    times.insert(j, times[j])
    values.insert(j, values[j])
    return numpy.array(times), numpy.array(values)


def _curve_cases(name):
    module = _module_for(name)
    lo, hi = module.curve_interval()
    hold = getattr(module, "OUTSIDE", "zero") == "hold"
    rng = numpy.random.default_rng(sum(map(ord, name)))
    for example in range(EXAMPLES):
        t, y = _base_curve(rng, lo, hi, module.VALUE_DIM, hold, example % 2 == 0)
        yield module, (t, y), _refined_curve(rng, t, y, lo, hi, hold)


@pytest.mark.parametrize("name", [n for n in SHIPPED if n not in ("cdf_wages",)
                                  and not hasattr(generated(n), "DIMENSION")] + CURVE_KINDS)
def test_generated_curves_do_not_depend_on_adversarial_grids(name):
    for module, base, refined in _curve_cases(name):
        releases = []
        for t, y in (base, refined):
            values = y if module.VALUE_DIM > 1 else y[:, 0]
            releases.append(module.project_and_privatize(t, values, epsilon=2.0, rng=11))
            _same(releases[-1], module.project_and_privatize(t, values, epsilon=2.0, rng=11,
                                                             cache=False), "cache=False")
        scale = numpy.abs(releases[0]).max()
        assert numpy.abs(releases[0] - releases[1]).max() <= 1e-9 * scale, name


def _refined_axis(rng, g, lo, hi, cells):
    """Extra nodes on one axis: 1e-3 ... 1e-15 from the domain's ends (inside the grid),
    next to nodes, and (cells) splitting a cell next to an edge and one empty cell padded
    up to the domain's end."""
    new = [_near(rng, lo, hi - lo, 1), _near(rng, hi, hi - lo, -1)]
    for i in rng.choice(g.size - 1, min(2, g.size - 1), replace=False):
        h = g[i + 1] - g[i]
        new += [_near(rng, g[i], h, 1), _near(rng, g[i + 1], h, -1)]
    fine = numpy.union1d(g, [s for s in new if g[0] < s < g[-1]])
    pad = cells and g[-1] < hi
    return numpy.append(fine, hi) if pad else fine, pad


def _box_cases(name):
    module = _module_for(name)
    box = module.domain()
    rng = numpy.random.default_rng(sum(map(ord, name)))
    kinds = ["linear"] if module.METRIC == "sobolev" else ["linear", "cells"]
    for example in range(EXAMPLES):
        kind = kinds[example % len(kinds)]
        grids = []
        for lo, hi in box:
            ends = [lo, hi] if example % 2 == 0 else list(lo + (hi - lo) * numpy.sort(
                rng.uniform(0.02, 0.98, 2)))
            grids.append(numpy.sort(numpy.concatenate([ends, rng.uniform(ends[0], ends[1], 2)])))
        refined = [_refined_axis(rng, g, lo, hi, kind == "cells") for g, (lo, hi) in
                   zip(grids, box)]
        fine = tuple(r for r, _ in refined)
        shape = tuple(g.size - (kind == "cells") for g in grids)
        values = rng.normal(size=shape) * 10.0
        if kind == "linear":
            from scipy.interpolate import RegularGridInterpolator
            points = numpy.stack(numpy.meshgrid(*fine, indexing="ij"), -1)
            fine_values = RegularGridInterpolator(grids, values)(points)
        else:   # each fine cell takes the value of the coarse cell holding it, 0 if padded
            fine_values = values
            for axis, (g, (f, pad)) in enumerate(zip(grids, refined)):
                mids = (f[:-1] + f[1:]) / 2
                index = numpy.clip(numpy.searchsorted(g, mids) - 1, 0, g.size - 2)
                fine_values = numpy.take(fine_values, index, axis=axis)
                if pad:
                    last = [slice(None)] * fine_values.ndim
                    last[axis] = -1
                    fine_values[tuple(last)] = 0.0
        yield module, kind, (tuple(grids), values), (fine, fine_values)


@pytest.mark.parametrize("name", [n for n in SHIPPED if hasattr(generated(n), "DIMENSION")]
                         + BOX_KINDS)
def test_generated_fields_do_not_depend_on_adversarial_grids(name):
    for module, kind, base, refined in _box_cases(name):
        releases = [module.project_and_privatize(g, v, kind=kind, rho=3.0, rng=5)
                    for g, v in (base, refined)]
        scale = numpy.abs(releases[0]).max()
        assert numpy.abs(releases[0] - releases[1]).max() <= 1e-9 * scale, (name, kind)


def test_the_cdf_module_does_not_depend_on_the_order_of_records():
    """cdf_wages: the records are its "grid"; in another order, with records at the bounds
    and 1e-3 ... 1e-15 (relative) inside them, the same release."""
    module = generated("cdf_wages")
    rng = numpy.random.default_rng(2)
    width = module.HI - module.LO
    data = numpy.concatenate([rng.lognormal(6, 0.6, 2000), [module.LO, module.HI],
                              module.LO + width * 10.0 ** -numpy.arange(3, 16),
                              module.HI - width * 10.0 ** -numpy.arange(3, 16)])
    releases = [module.privatize(module.coefficients(x), 0.01, rng=3)
                for x in (data, rng.permutation(data))]
    assert numpy.abs(releases[0] - releases[1]).max() <= 1e-9 * numpy.abs(releases[0]).max()


def test_the_generator_covers_every_shipped_module_and_weight_kind():
    """Every module in generated/ and each weight kind (bounded, singular, H^1, and the
    hold option) is run by the generator above."""
    curves = {n for n in SHIPPED if n != "cdf_wages" and not hasattr(generated(n), "DIMENSION")}
    boxes = {n for n in SHIPPED if hasattr(generated(n), "DIMENSION")}
    assert curves | boxes | {"cdf_wages"} == set(SHIPPED)
    metrics = {_module_for(n).METRIC for n in sorted(curves) + CURVE_KINDS + sorted(boxes)
               + BOX_KINDS}
    assert metrics == {"L2", "weighted", "sobolev"}
    assert {_module_for(n).OUTSIDE for n in sorted(curves) + CURVE_KINDS} == {"zero", "hold"}
