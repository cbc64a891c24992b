"""Tests that fail when a privacy constant is wrong (issue 24): each checks a released
distribution, a ledger charge or a sensitivity against the proof, never the name of a
constant nor an exact seeded output. benchmarks/mutants.py names, for each mutant of the
privacy core, the tests here that kill it.

False alarms: every statistical test rejects at ALPHA = 1e-6 (two-sided, Bonferroni
within a test where it makes several checks), so a correct implementation fails one with
probability at most 1e-6 per seed. The tests' seeds are fixed. The laws are those of the
continuous noise: a release rounded to a lattice of 2^-20 of its noise scale moves every
probability used here by far less than the tests resolve (about 1e-2 relative).
"""
import math
from fractions import Fraction

import numpy
import pytest
from scipy import integrate, stats

from conftest import generated
from gpcompiler.audit import conformance, mutants
from gpcompiler.adaptive import noise, seg
from gpcompiler.adaptive.ledger import PrivacyLedger
from gpcompiler.cdf import estimators, gaussian, joint
from gpcompiler.errors import UserError
from gpcompiler.runtime.secure import SecureGenerator

ALPHA = 1e-6
LATTICE = 2.0 ** -18   # a few lattice steps of 2^-20 of the noise scale


def _rng(seed):
    return numpy.random.default_rng(seed)


def _budget(model):
    return {"epsilon": 1.5} if model == "GP" else {"rho": 0.75}


def _scale(model):
    return 1 / 1.5 if model == "GP" else 1 / math.sqrt(1.5)


# --- generated modules: the single-curve and batch laws -------------------------------

@pytest.mark.parametrize("name", ["linear", "legendre10", "two_circles"])
@pytest.mark.parametrize("model", ["GP", "CGP"])
def test_single_curve_release_is_the_batch_release_of_that_curve(name, model):
    """privatize(c, rng=s) == privatize(c[None], rng=s)[0]: the single-curve branch draws
    the batch's law. Today equal to within one ulp (the factor is rounded differently);
    allowed: a few lattice steps of the scale. A wrong radius or direction on one branch
    only is off by the order of the scale itself."""
    module = generated(name)
    c = numpy.linspace(1.0, -1.0, module.COEF_DIM).reshape(module.COEF_SHAPE)
    for seed in range(20):
        one = module.privatize(c, rng=_rng(seed), **_budget(model))
        batch = module.privatize(c[None], rng=_rng(seed), **_budget(model))[0]
        assert numpy.abs(one - batch).max() <= LATTICE * _scale(model), (seed, one - batch)


@pytest.mark.parametrize("model", ["GP", "CGP"])
def test_project_and_privatize_is_privatize_of_the_projection(model):
    """project_and_privatize(t, y, rng=s) == privatize(project(t, y), rng=s), one curve and
    a batch: the release draws the law of its claim (GP or CGP), not the other."""
    module = generated("legendre10")
    t = numpy.linspace(-1, 1, 41)
    for y in (numpy.cos(3 * t), numpy.stack([numpy.sin(k * t) for k in range(1, 5)])):
        for seed in range(10):
            direct = module.project_and_privatize(t, y, rng=_rng(seed), **_budget(model))
            composed = module.privatize(module.project(t, y), rng=_rng(seed), **_budget(model))
            assert numpy.abs(direct - composed).max() <= LATTICE * _scale(model), seed


def _noise_law(name, model, draws, single, through_projection=False, seed=0):
    """Conformance of a module's noise, one curve per call (``single``) or in batches."""
    module = generated(name)
    keyword = _budget(model)
    scale = _scale(model)
    if through_projection:   # noise added to the projection of a fixed curve
        t = numpy.linspace(*module.curve_interval(), 33)
        y = numpy.cos(2 * t)
        y = y if module.VALUE_DIM == 1 else numpy.stack([y] * module.VALUE_DIM, axis=-1)
        center = module.project(t, y)

        def release(c, rng, batch=None):
            values = y if batch is None else numpy.broadcast_to(y, (batch,) + y.shape)
            return module.project_and_privatize(t, values, rng=rng, **keyword)
    else:
        center = numpy.linspace(1.0, -1.0, module.COEF_DIM).reshape(module.COEF_SHAPE)

        def release(c, rng, batch=None):
            c = c if batch is None else numpy.broadcast_to(c, (batch,) + c.shape)
            return module.privatize(c, rng=rng, **keyword)
    d = module.COEF_DIM
    if single:
        def sample(count, rng):
            return numpy.stack([numpy.ravel(release(center, rng) - center)
                                for _ in range(count)])
    else:
        def sample(count, rng):
            return (release(center, rng, count) - center).reshape(count, d)
    return conformance.conformance(f"{name} {model}", sample,
                                   "GP" if model == "GP" else "Gaussian", scale, d,
                                   draws=draws, alpha=ALPHA, seed=seed,
                                   worst=conformance.gram_extremes(module))


@pytest.mark.parametrize("name, model", [("linear", "GP"), ("legendre10", "GP"),
                                         ("linear", "CGP")])
def test_single_curve_noise_has_the_exact_law(name, model):
    """Radius Gamma(d, 1/epsilon) and a uniform direction (GP), N(0, I/(2 rho)) (CGP), for
    releases of one curve per call (4,000 draws: the scale test resolves a relative error
    of about 6% at d = 2, so a radius Gamma(d - 1), a direction divided by sqrt(d)
    instead of its norm or a CGP scale off by sqrt(2) fails). Level ALPHA, Bonferroni over
    the checks."""
    report = _noise_law(name, model, 4000, single=True)
    assert not report.violated, report.describe()


@pytest.mark.parametrize("model", ["GP", "CGP"])
def test_project_and_privatize_noise_has_the_exact_law(model):
    """The same law for project_and_privatize of one curve per call (the shipped path of
    the CLI) on a curve whose projection is exact."""
    report = _noise_law("legendre10", model, 3000, single=True, through_projection=True)
    assert not report.violated, report.describe()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["linear", "legendre10", "fourier8", "two_circles",
                                  "sinc_ecg"])
@pytest.mark.parametrize("model", ["GP", "CGP"])
@pytest.mark.parametrize("single", [True, False], ids=["one curve", "batch"])
def test_noise_laws_at_a_million_draws(name, model, single):
    """Slow: 10^6 draws (batch) or 10^5 (one curve per call) of privatize and of
    project_and_privatize, at level ALPHA per report (Bonferroni over its checks): the
    scale test resolves relative errors of 0.5% (batch, d = 2)."""
    draws = 1000000 if not single else 100000
    for projected in (False, True):
        report = _noise_law(name, model, draws, single, projected, seed=11)
        assert not report.violated, report.describe()


# --- adaptive algorithms: each step's noise against its ledger charge -----------------

def test_laplace_difference_law_matches_numerical_integration():
    """The exact law the SVT spy uses, against quadrature of the Laplace densities."""
    for a, b, x in ((1.0, 1.0, 0.7), (2.0, 0.5, 1.3), (0.3, 3.0, -2.0), (1.0, 1 + 1e-12, 3.0)):
        def integrand(w):
            return 0.5 / b * math.exp(-abs(w) / b) * stats.laplace.sf(x + w, scale=a)
        reference = integrate.quad(integrand, -60 * b, 60 * b, points=[0.0, -x],
                                   epsabs=1e-13, limit=200)[0]
        assert conformance.laplace_difference_sf(x, a, b) == pytest.approx(reference, abs=1e-9)


def test_svt_index_law_and_poisson_binomial_against_references():
    """The SVT index law against closed forms: one query gives laplace_difference_sf; two
    queries at the threshold with equal scales give P[index 1] = E[F(W) (1 - F(W))] = 1/6
    (F(W) is uniform, F being W's own CDF); the law sums to 1. The Poisson-binomial
    p-value with equal probabilities is the binomial one."""
    one = conformance.svt_index_law([0.4], 1.0, 0.7, 1.3)
    assert one[0] == pytest.approx(conformance.laplace_difference_sf(0.6, 1.3, 0.7), abs=1e-10)
    two = conformance.svt_index_law([0.0, 0.0], 0.0, 1.0, 1.0)
    assert two[1] == pytest.approx(1 / 6, abs=1e-10) and two.sum() == pytest.approx(1.0)
    for hits in (3, 17, 40):
        assert conformance.poisson_binomial_p_value([0.3] * 50, hits) == pytest.approx(
            min(1.0, 2 * min(stats.binom.cdf(hits, 50, 0.3), stats.binom.sf(hits - 1, 50, 0.3))),
            rel=1e-9)


def _outcomes(module_, run, runs):
    """The SVT calls of ``runs`` runs; each splits its epsilon in Alg. 1's thirds (the
    split is the paper's, for utility: any split of the charge is private)."""
    recorder = conformance.SVTOutcomes()
    with mutants.patched(module_, "svt", recorder.svt_spy):
        for _ in range(runs):
            run()
    for label, _, _, epsilon1, epsilon2, *_ in recorder.calls:
        assert epsilon1 / (epsilon1 + epsilon2) == pytest.approx(1 / 3, rel=1e-12), label
    return recorder


@pytest.mark.parametrize("model, amplitude", [("GP", 420.0), ("CGP", 200.0)])
def test_seg_level_svt_noise_is_the_proofs_for_its_charge(model, amplitude):
    """PrivFuncSeg's level SVT: its queries are 1-Lipschitz (tests/test_privacy_boundary),
    so the proof's threshold noise is Lap(1/epsilon1) and query noise Lap(2/epsilon2) for
    the epsilon1 + epsilon2 the ledger is charged. The first level's choices (250 runs,
    first query about two noise scales below the threshold) follow that exact law, at
    level ALPHA; the same outcomes reject the halved noise of a constant 0.5."""
    module = generated("linear")
    t = numpy.linspace(0, 1, 9)
    rng = _rng(3)
    budget = {"epsilon": 1.0} if model == "GP" else {"rho": 0.5}
    recorder = _outcomes(seg, lambda: seg.priv_func_seg(
        t, amplitude * (t - 0.5) ** 2, module, rng=rng, **budget), 250)
    assert recorder.check({"seg: level": 1.0}).p_value > ALPHA
    assert recorder.check({"seg: level": 0.5}).p_value < 1e-9


def test_unbounded_clipping_svt_noise_is_the_proofs_for_its_charge():
    """The clipping SVT of the unbounded algorithm: g_j = ||q 1[-T_j, T_j]|| - ||q|| is
    2-Lipschitz (its two norms move by ||q - q'|| each), so its noise is Lap(2/epsilon1)
    and Lap(4/epsilon2). A curve beyond 2^19 makes all 20 queries equal, two noise scales
    below the threshold: the chosen indices of 200 runs follow the exact law (chi-square,
    level ALPHA); the same outcomes reject a constant 1 and a halved query noise."""
    module = generated("linear")
    t = 2.0 ** 20 + numpy.linspace(0, 1, 5)
    rng = _rng(4)
    recorder = _outcomes(seg, lambda: seg.priv_func_unbounded(
        t, numpy.full(5, 52.0), module, epsilon=1.0, levels=19, rng=rng), 200)
    label = "unbounded: clipping"
    assert recorder.check({label: 2.0, "seg: level": 1.0}).p_value > ALPHA
    assert recorder.index_check(label, 2.0).p_value > ALPHA
    assert recorder.index_check(label, 1.0).p_value < 1e-9
    assert recorder.index_check(label, 2.0, query_factor=0.5).p_value < 1e-9


def test_select_size_svt_noise_is_the_proofs_for_its_charge():
    """PrivFuncSelect's two SVTs (1-Lipschitz queries, Alg. 3): the size SVT's first query
    two noise scales below its threshold (q = 34 t in legendre10), 400 runs at level
    ALPHA; the same outcomes reject a size SVT of half the noise (at 250 runs that
    rejection reached only p = 3e-7 on one seed's stream)."""
    from gpcompiler.adaptive import select
    module = generated("legendre10")
    t = numpy.linspace(-1, 1, 17)
    rng = _rng(12)
    recorder = _outcomes(select, lambda: select.priv_func_select(
        t, 34.0 * t, module, epsilon=1.0, rng=rng), 400)
    assert recorder.check({"select: size": 1.0, "select: pruning": 1.0}).p_value > ALPHA
    assert recorder.check({"select: size": 0.5, "select: pruning": None}).p_value < 1e-9



def test_select_svt_queries_are_a_function_of_the_curve_not_its_grid():
    """PrivFuncSelect's size SVT queries tau(j) - dist2(P_j q, q) (1-Lipschitz in q, Alg. 3)
    are the same for one function sampled on [20, 70], with zero samples appended up to the
    domain's end, or with a zero sample before it: distances over the spec's domain, never
    over the samples' span (the sample times are private)."""
    from gpcompiler.adaptive import select
    module = generated("monomial32")
    t = numpy.linspace(20.0, 70.0, 200)
    y = 30 * numpy.sin(math.pi * (t - 20) / 50)
    grids = [(t, y), (numpy.concatenate([t, numpy.linspace(70, 100, 9)[1:]]),
                      numpy.concatenate([y, numpy.zeros(8)])),
             (numpy.concatenate([[5.0], t]), numpy.concatenate([[0.0], y]))]
    recorded = []

    def spy(shipped):
        def recording(queries, *args, **kwargs):
            recorded.append([float(q) for q in queries])
            return shipped(iter(recorded[-1]), *args, **kwargs)
        return recording
    with mutants.patched(select, "svt", spy):
        for grid in grids:
            select.priv_func_select(*grid, module, epsilon=2.0, rng=_rng(5))
    assert len(recorded) == 3
    for other in recorded[1:]:
        numpy.testing.assert_allclose(other, recorded[0], rtol=1e-9, atol=1e-9)

@pytest.mark.parametrize("model", ["GP", "CGP"])
def test_scalar_noise_has_the_scale_its_charge_pays_for(model):
    """One noisy scalar of sensitivity S charged epsilon (rho) is Laplace(S/epsilon)
    (N(0, S^2/(2 rho))): 4000 draws, exact scale test and KS, level ALPHA."""
    spy = conformance.ScalarNoise(2.5)
    draw = spy.spy(noise.scalar_noise)
    rng = _rng(5)
    for _ in range(4000):
        ledger = PrivacyLedger(1.0, model)
        draw(ledger, "scalar", 2.5, 0.375, rng=rng)
    checks = spy.checks()
    assert all(c.p_value > ALPHA / len(checks) for c in checks), checks


@pytest.mark.parametrize("model", ["GP", "CGP"])
def test_reduce_seg_noise_is_the_proofs_for_its_charge(model):
    """ReduceSeg adds noise to dist2(P q, q) on the coarser grid, a 1-Lipschitz function of
    q (projection residuals are distances to a subspace); every such noise value, in units
    of 1/(its charge) (GP) or 1/sqrt(2 charge) (CGP), is Laplace(1) or N(0, 1). Runs of
    PrivFuncSeg deep enough for ReduceSeg; level ALPHA, Bonferroni over the two checks."""
    module = generated("linear")
    t = numpy.linspace(0, 1, 257)
    y = numpy.where(t < 0.5, 0.0, 30 * numpy.sin(40 * t))
    spy = conformance.ScalarNoise(1.0)
    rng = _rng(6)
    budget = {"epsilon": 200.0} if model == "GP" else {"rho": 500.0}
    with mutants.patched(seg, "scalar_noise", spy.spy):
        while len(spy.units) < 600:
            seg.priv_func_seg(t, y, module, rng=rng, **budget)
    checks = spy.checks()
    assert all(c.p_value > ALPHA / 2 for c in checks), checks


def test_reduce_seg_residual_sensitivity_one_is_attained():
    """The ReduceSeg query's sensitivity 1 is attained, so no smaller constant is sound:
    a zigzag q' far from the piecewise-linear space next to q = 0 moves the coarse
    residual by nearly ||q' - q||."""
    from gpcompiler.adaptive import piecewise
    from gpcompiler.adaptive.curve import make_curve
    t = numpy.linspace(0, 1, 4097)
    zigzag = numpy.where(numpy.arange(t.size) % 2, 1.0, -1.0)
    q = make_curve(t, zigzag, (0.0, 1.0))
    zero = make_curve(t, numpy.zeros(t.size), (0.0, 1.0))
    coarse = piecewise.dyadic_grid(0.0, 1.0, 3)
    moved = math.sqrt(piecewise.project(q, coarse, 1)[1].sum()) \
        - math.sqrt(piecewise.project(zero, coarse, 1)[1].sum())
    assert moved > 0.99 * q.norm()


def test_a_release_whose_noise_would_vanish_is_refused_or_keeps_its_noise():
    """Coefficients of norm 2^65 noise scales: float64 cannot hold noise of a few scales
    beside them. A release must refuse them or carry noise in every coordinate (two
    seeds, two releases differing everywhere; the small coordinates keep theirs anyway)."""
    module = generated("linear")
    t = numpy.linspace(0, 1, 9)
    y = numpy.full(9, 2.0 ** 65)
    releases = []
    for seed in (1, 2):
        try:
            result = seg.piecewise_project_and_privatize(t, y, module, [0.0, 0.5, 1.0],
                                                         epsilon=1.0, rng=_rng(seed))
        except (UserError, ValueError):
            continue
        releases.append(result.coefficients)
    assert len(releases) in (0, 2)
    assert not releases or numpy.all(releases[0] != releases[1])



@pytest.mark.parametrize("model", ["GP", "CGP"])
def test_a_release_far_outside_its_bound_is_the_clipped_vector_plus_its_noise(model):
    """privatize_vector (every adaptive release) of a vector 1e30 times outside the bound
    B = 50 the ledger states: the release minus B times its direction has the exact noise
    law at the charged share (||Z|| ~ Gamma(d) scaled 1/epsilon, ||N||^2 ~ chi^2(d) / (2
    rho); KS at ALPHA over 300 releases). Clipping after the noise leaves no noise, and
    clipping to 2B a noise of norm B."""
    d, share = 6, 0.5
    direction = numpy.arange(1.0, d + 1) / numpy.linalg.norm(numpy.arange(1.0, d + 1))
    rng = _rng(21)
    noise_rows = []
    for _ in range(300):
        ledger = PrivacyLedger(1.0, model)
        released = noise.privatize_vector(direction * 1e30, ledger, "far", share, rng=rng,
                                          bound=50.0)
        assert ledger.releases[-1].bound == 50.0
        noise_rows.append(released - 50.0 * direction)
    rows = numpy.array(noise_rows)
    if model == "GP":
        test = stats.kstest(numpy.linalg.norm(rows, axis=1) * share, "gamma", args=(d,))
    else:
        test = stats.kstest((rows ** 2).sum(axis=1) * 2 * share, "chi2", args=(d,))
    assert test.pvalue > ALPHA

# --- the CSPRNG -----------------------------------------------------------------------

def test_secure_laplace_reaches_beyond_37_scales(monkeypatch):
    """A Laplace variate is -ln u for a uniform u reaching every binade: entropy starting
    with 48 zero bytes gives u below 2^-60 and a variate beyond 40 scales (a uniform on a
    53-bit grid stops at about 37, or returns u = 0)."""
    import ssl

    def stream():
        yield b"\0" * 48
        while True:
            yield b"\xa5" * 8

    def bytes_from(chunks):
        pending = bytearray()

        def random_bytes(n):
            while len(pending) < n:
                pending.extend(next(chunks))
            taken = bytes(pending[:n])
            del pending[:n]
            return taken
        return random_bytes
    monkeypatch.setattr(ssl, "RAND_bytes", bytes_from(stream()))
    u = SecureGenerator().random()
    assert 0 < u < 2.0 ** -60
    monkeypatch.setattr(ssl, "RAND_bytes", bytes_from(stream()))
    x = SecureGenerator().laplace(0.0, 1.0)
    assert math.isfinite(x) and abs(x) > 40


# --- CDF estimators: sensitivities by brute force, noise against them ------------------

def _neighbour_gap(method, data, index, replacement, **options):
    """l2 distance of the summed statistics of data and of data with record ``index``
    replaced (replace-one neighbours)."""
    other = numpy.array(data, dtype=float)
    other[index] = replacement
    a = estimators.Statistics.from_data(data, lo=-1.0, hi=1.0, method=method, **options)
    b = estimators.Statistics.from_data(other, lo=-1.0, hi=1.0, method=method, **options)
    return float(numpy.linalg.norm(a.sums - b.sums))


def _released_noise_scale(statistics, runs, seed):
    """(sigma estimate, (lo, hi)) of the noise of ``runs`` releases of the statistics:
    sum of squares / sigma^2 ~ chi2(n), interval at level ALPHA."""
    rng = _rng(seed)
    z = numpy.concatenate([statistics.privatize(epsilon=1.0, delta=1e-6, rng=rng).noisy_sums
                           - statistics.sums for _ in range(runs)])
    squares = float(z @ z)
    return (math.sqrt(squares / stats.chi2.isf(ALPHA / 2, z.size)),
            math.sqrt(squares / stats.chi2.ppf(ALPHA / 2, z.size)))


def test_adaptive_quantile_sensitivity_sqrt_t_is_attained_and_is_the_noise():
    """Replace-one moves every count #{x <= p_j} by 1 when a record moves from -1 to 1:
    sqrt(T), attained; the released noise has the analytic Gaussian sigma for sqrt(T)."""
    steps = 32
    data = numpy.linspace(-0.9, 0.9, 101)
    worst = max(_neighbour_gap("adaptive-quantiles", numpy.r_[data, x], 101, x2, steps=steps)
                for x in (-1.0, 1.0) for x2 in (-1.0, 1.0))
    assert worst == pytest.approx(math.sqrt(steps), rel=1e-12)
    statistics = estimators.Statistics.from_data(data, lo=-1.0, hi=1.0,
                                                 method="adaptive-quantiles", steps=steps)
    sigma = gaussian.analytic_gaussian_sigma(1.0, 1e-6, worst)
    lo, hi = _released_noise_scale(statistics, 300, 7)
    assert lo <= sigma <= hi, (lo, sigma, hi)


@pytest.mark.parametrize("degree", [0, 2])
def test_moment_sensitivity_is_never_exceeded_and_is_the_noise(degree):
    """The sums x^i, i = 1..K+1, move by at most the brute-force sup over neighbours
    (tables.moment_sensitivity_sup); the noise drawn is never below the analytic Gaussian
    sigma of that sup (K = 0: 4 against the paper's 4; K = 2: 8 against 9; the paper's
    bound one degree lower, 1.5 and 6.5, would be exceeded). Level ALPHA."""
    from gpcompiler.cdf.tables import moment_sensitivity_sup
    squared, where = moment_sensitivity_sup(degree)
    data = numpy.r_[numpy.linspace(-0.5, 0.5, 11), where[0]]
    gap = _neighbour_gap("moments", data, 11, where[1], degree=degree)
    assert gap == pytest.approx(math.sqrt(squared), rel=1e-9)
    statistics = estimators.Statistics.from_data(data, lo=-1.0, hi=1.0, method="moments",
                                                 degree=degree)
    needed = gaussian.analytic_gaussian_sigma(1.0, 1e-6, gap)
    declared = math.sqrt(statistics.privatize(epsilon=1.0, delta=1e-6,
                                              rng=_rng(0)).noise_variance)
    lo, hi = _released_noise_scale(statistics, 4000, 8)
    assert declared >= needed and hi >= needed, (declared, hi, needed)
    assert lo <= declared <= hi, (lo, declared, hi)


def test_joint_histogram_sensitivity_sqrt_2_is_attained_and_is_the_noise():
    """Moving one record between cells moves two counts by 1: sqrt(2), attained. The
    released counts (recovered from the cumulated release: every cell holds 1000 records,
    so no count is clipped at 0) carry the analytic Gaussian sigma of sqrt(2). Level ALPHA."""
    bins, n_side = 4, 1000
    centers = (numpy.arange(bins) + 0.5) / bins
    data = numpy.array([(a, b) for a in centers for b in centers for _ in range(n_side)])
    counts = numpy.histogramdd(data, bins=bins, range=[(0, 1)] * 2)[0]
    other = data.copy()
    other[0] = (0.99, 0.99)
    moved = numpy.histogramdd(other, bins=bins, range=[(0, 1)] * 2)[0]
    assert numpy.linalg.norm(moved - counts) == pytest.approx(math.sqrt(2))
    sigma = gaussian.analytic_gaussian_sigma(1.0, 1e-6, math.sqrt(2))
    rng = _rng(9)
    noise = []
    for _ in range(200):
        release = joint.joint_estimate(data, lo=0.0, hi=1.0, epsilon=1.0, delta=1e-6,
                                       method="histogram", bins=bins, rng=rng)
        cumulated = release.values * data.shape[0]
        cells = numpy.diff(numpy.diff(cumulated, axis=0), axis=1)
        noise.append((cells - counts).ravel()[:-1])   # the last cell's total may be clipped
    z = numpy.concatenate(noise)
    squares = float(z @ z)
    lo = math.sqrt(squares / stats.chi2.isf(ALPHA / 2, z.size))
    hi = math.sqrt(squares / stats.chi2.ppf(ALPHA / 2, z.size))
    assert lo <= sigma <= hi, (lo, sigma, hi)


@pytest.mark.parametrize("method", ["direct", "histogram"])
def test_joint_release_clips_a_record_far_outside_the_bounds(method):
    """A record at 10^6 times the bounds is released as the same record at the bounds
    (same seed): the data are clipped to the public box before anything is summed."""
    rng = _rng(10)
    data = rng.uniform(0, 1, (200, 2))
    far, edge = data.copy(), data.copy()
    far[0], edge[0] = (1e6, -1e6), (1.0, 0.0)
    releases = [joint.joint_estimate(d, lo=0.0, hi=1.0, epsilon=1.0, delta=1e-6,
                                     method=method, degree=4, bins=8, rng=_rng(11))
                for d in (far, edge)]
    assert numpy.array_equal(releases[0].values, releases[1].values)


@pytest.mark.parametrize("method", estimators.METHODS)
def test_cdf_release_clips_a_record_far_outside_the_bounds(method):
    """The 1-D estimators: a record at -10^6 is released as the record at lo (same seed)."""
    data = numpy.linspace(0.1, 0.9, 50)
    far, edge = numpy.r_[data, -1e6], numpy.r_[data, 0.0]
    releases = [estimators.estimate(d, lo=0.0, hi=1.0, epsilon=1.0, delta=1e-6,
                                    method=method, degree=6, rng=_rng(13)) for d in (far, edge)]
    assert numpy.array_equal(releases[0].values, releases[1].values)


@pytest.mark.parametrize("method", estimators.METHODS)
def test_cdf_release_takes_nan_and_infinite_records_as_public_values(method):
    """One NaN and one +inf record never stop a release: it is the release with the NaN at
    lo and the +inf at hi (a -inf at lo), in memory and from chunks (same seed)."""
    data = numpy.linspace(0.1, 0.9, 50)
    bad, fixed = numpy.r_[data, numpy.nan, numpy.inf, -numpy.inf], numpy.r_[data, 0.0, 1.0, 0.0]
    kwargs = dict(lo=0.0, hi=1.0, epsilon=1.0, delta=1e-6, method=method, degree=6)
    releases = [estimators.estimate(d, rng=_rng(14), **kwargs) for d in (bad, fixed)]
    streamed = estimators.Statistics.from_chunks([bad[:20], bad[20:]], **{
        k: kwargs[k] for k in ("lo", "hi", "method", "degree")}).privatize(
        epsilon=1.0, delta=1e-6, rng=_rng(14)).estimate()
    assert numpy.all(numpy.isfinite(releases[0].values))
    assert numpy.array_equal(releases[0].values, releases[1].values)
    assert numpy.array_equal(streamed.values, releases[1].values)


@pytest.mark.parametrize("method", ["direct", "histogram"])
def test_joint_release_takes_nan_and_infinite_records_as_public_values(method):
    data = _rng(15).uniform(0, 1, (100, 2))
    bad, fixed = data.copy(), data.copy()
    bad[0], bad[1], fixed[0], fixed[1] = (numpy.nan, numpy.inf), (-numpy.inf, 0.5), \
        (0.0, 1.0), (0.0, 0.5)
    releases = [joint.joint_estimate(d, lo=0.0, hi=1.0, epsilon=1.0, delta=1e-6,
                                     method=method, degree=4, bins=8, rng=_rng(16))
                for d in (bad, fixed)]
    assert numpy.array_equal(releases[0].values, releases[1].values)
    assert joint.joint_distances(releases[0], bad) == joint.joint_distances(releases[1], fixed)


def test_gaussian_sigma_of_a_sensitivity_is_never_rounded_down():
    """sigma(Delta) >= Delta sigma(1) exactly, for sensitivities whose float product with
    sigma(1) rounds to nearest below the exact value (there are such among them)."""
    base = gaussian.analytic_gaussian_sigma(1.0, 1e-6, 1.0)
    candidates = [math.sqrt(k) for k in range(2, 200)] + [1 + k / 7 for k in range(1, 60)]
    below = [d for d in candidates if Fraction(base * d) < Fraction(base) * Fraction(d)][:6]
    assert len(below) == 6
    for delta in below:
        sigma = gaussian.analytic_gaussian_sigma(1.0, 1e-6, delta)
        assert Fraction(sigma) >= Fraction(base) * Fraction(delta), delta
