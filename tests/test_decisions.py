"""Every algorithmic choice reads only released values (docs/threat-model.md: a release
depends on private data only through noise the proof accounts for).

Each test runs a choice on two different private inputs under a source of noise that
makes every released value the same for both: the noise of a query is drawn once its value
g is known, as r - g with r a scripted released value, and a released vector is scripted
outright (its noise is r - clip(c)). A choice that reads only released values then makes
the same choices (which functions, which segments, which degree) on both inputs; one that
reads the private value beside its noise does not. Each test also checks that the scripts
move the choices (otherwise equality would hold for any code)."""
import importlib
import math
import zlib

import numpy
import pytest

from conftest import generated
from gpcompiler.adaptive import baseline, closed_form, noise, piecewise, seg, select
from gpcompiler.adaptive.ledger import PrivacyLedger
from gpcompiler.cdf import degree

svt = importlib.import_module("gpcompiler.adaptive.svt")   # the package exports the function


class Released:
    """A replay source (``audit_replay``: adaptive.noise.draw takes float noise from it)
    under which every noisy value is scripted: an SVT's threshold noise is 0 (the released
    threshold is the public T), the noise of a query or a noisy scalar of value g is r - g,
    and a released vector is r. r is +-``size`` times the noise scale, its sign drawn with
    P[+] = ``crossing`` from a stream seeded by (seed, label, index), so the same labels
    release the same values whatever the data."""

    audit_replay = True

    def __init__(self, seed, crossing=0.3, size=3.0):
        self.seed, self.crossing, self.size = seed, crossing, size
        self.label, self.index, self.value = "", 0, None

    def _stream(self):
        key = [self.seed, zlib.crc32(self.label.encode()), self.index]
        self.index += 1
        return numpy.random.default_rng(key)

    def watch(self, label, values):
        """The values of one SVT's queries, each recorded before its noise is drawn (none
        before the threshold's)."""
        self.label, self.index, self.value = label, 0, None
        return (self._record(value) for value in values)

    def _record(self, value):
        self.value = float(value)
        return value

    def laplace(self, loc=0.0, scale=1.0, size=None):
        if self.value is None:
            return 0.0
        sign = 1.0 if self._stream().random() < self.crossing else -1.0
        return sign * self.size * scale - self.value

    def integers(self, *args, **keywords):
        """A generator's face (baseline takes any source with one); no step draws words."""
        raise AssertionError("a noisy step drew unscripted noise")

    def vector(self, shape, scale):
        """A scripted released vector of ``shape`` (the noise r - clip(c))."""
        return self._stream().standard_normal(shape) * scale


@pytest.fixture
def scripted(monkeypatch):
    """Route every noisy step of the adaptive algorithms through a Released source: the
    SVTs' queries are watched, the released vectors scripted, ReduceSeg's noisy residuals
    scripted (its value is the residual's root, recorded when it is computed)."""
    real_svt, real_scalar = svt.svt, seg.scalar_noise
    real_residual = piecewise.DyadicProjections.residual

    def watched(queries, *args, rng, label, **keywords):
        return real_svt(rng.watch(label, queries), *args, rng=rng, label=label, **keywords)

    def scalar(ledger, label, sensitivity, share, *, rng):
        rng.label, rng.index = label, 0
        return real_scalar(ledger, label, sensitivity, share, rng=rng)

    def residual(self, breakpoints):
        found = real_residual(self, breakpoints)
        residual.source.value = math.sqrt(found)
        return found

    def vector(vector, gp, scale, rng):
        rng.label = f"vector {vector.shape} {rng.label}"
        return rng.vector(vector.shape, scale)
    for module in (select, seg):
        monkeypatch.setattr(module, "svt", watched)
    monkeypatch.setattr(seg, "scalar_noise", scalar)
    monkeypatch.setattr(piecewise.DyadicProjections, "residual", residual)
    monkeypatch.setattr(noise, "_add_noise", vector)

    def source(seed, **keywords):
        residual.source = Released(seed, **keywords)
        return residual.source
    return source


def _curve(seed, n=400):
    """A random walk on [-1, 1]: curves of different seeds differ everywhere."""
    rng = numpy.random.default_rng(seed)
    t = numpy.linspace(-1.0, 1.0, n)
    return t, numpy.cumsum(rng.standard_normal(n)) * rng.uniform(0.2, 3.0)


def test_svt_decides_on_the_noisy_values_only():
    """svt.svt: queries of two inputs with the same noisy values g_j + V_j (V_j scripted
    as r_j - g_j) give the same index, and the index follows the released r_j."""
    indices = set()
    for seed in range(40):
        rng = numpy.random.default_rng(seed)
        first, second = rng.normal(size=(2, 12)) * 50
        found = []
        for queries in (first, second):
            source = Released(seed)
            ledger = PrivacyLedger(1.0, "GP")
            found.append(svt.svt(source.watch("q", queries), 0.0, 1.0, 0.25, 0.5, rng=source,
                                 ledger=ledger, label="q"))
        assert found[0] == found[1], seed
        indices.add(found[0])
    assert len(indices) >= 4


@pytest.fixture(scope="module")
def expression_module(tmp_path_factory):
    """A basis without closed forms (PrivFuncSelect's generic path: the module's projection
    and a Gauss rule for the residual)."""
    import gpcompiler
    path = tmp_path_factory.mktemp("specs") / "trig_select.toml"
    path.write_text('name = "trig_select"\n[domain]\nintervals = [["-1", "1"]]\n[basis]\n'
                    'functions = ["1", "t", "sin(2*t)", "exp(t)"]\n')
    return gpcompiler.load(path, cache=tmp_path_factory.mktemp("cache"))


def _select_choices(source_of, module, t, y, seed, split):
    a, b = module.curve_interval()
    result = select.priv_func_select(a + (t + 1) / 2 * (b - a), y, module, epsilon=4.0,
                                     split=split, rng=source_of(seed, crossing=0.2))
    return result.basis_indices, result.coefficients.tolist(), dict(result.details)["first_size"]


@pytest.mark.parametrize("name", ["legendre10", "fourier8", "expressions"])
@pytest.mark.parametrize("split", [select.DEFAULT_SPLIT, ("1/8", "1/4", "1/8", "1/2")])
def test_priv_func_select_chooses_from_released_values_only(scripted, expression_module, name,
                                                            split):
    """PrivFuncSelect (size SVT, first release, ordering by the released norms, pruning
    SVT, final release), on closed-form Legendre and Fourier queries and on the generic
    path: the same functions, in the same order, with the same released coefficients, for
    two different curves under the same released values."""
    module = expression_module if name == "expressions" else generated(name)
    assert (closed_form.cells(module, {}) is None) == (name == "expressions")
    choices = set()
    for seed in range(12):
        a = _select_choices(scripted, module, *_curve(2 * seed), seed, split)
        b = _select_choices(scripted, module, *_curve(2 * seed + 1), seed, split)
        assert a == b, seed
        choices.add(a[0])
    assert len(choices) >= 4


def _seg_choices(source_of, t, y, seed, algorithm, span):
    module = generated("linear")
    if algorithm == "unbounded":
        result = seg.priv_func_unbounded(t * span, y, module, epsilon=50.0, levels=6,
                                         rng=source_of(seed, crossing=0.15, size=30.0))
    else:
        result = seg.priv_func_seg((t + 1) / 2, y, module, epsilon=50.0,
                                   continuous=algorithm == "seg_continuous",
                                   rng=source_of(seed, crossing=0.15, size=30.0))
    return (dict(result.details), result.breakpoints.tolist(), result.coefficients.tolist())


@pytest.mark.parametrize("algorithm", ["seg", "seg_continuous", "unbounded"])
def test_priv_func_seg_chooses_from_released_values_only(scripted, algorithm):
    """PrivFuncSeg (the level SVT, ReduceSeg's noisy residuals on the four quarters, the
    final release, the continuous post-processing of the released pieces) and the unbounded
    domain's clipping SVT: the same level, half width,
    breakpoints and released coefficients for two different curves (on the whole line,
    spanning [-3, 3] and [-6, 6])."""
    choices = set()
    for seed in range(10):
        a = _seg_choices(scripted, *_curve(2 * seed, 3000), seed, algorithm, 3.0)
        b = _seg_choices(scripted, *_curve(2 * seed + 1, 3000), seed, algorithm, 6.0)
        assert a == b, seed
        choices.add(len(a[1]))
    assert len(choices) >= 3


def test_reduce_seg_merges_on_the_noisy_residual_only(scripted):
    """ReduceSeg alone, at level 10 with k1 = 4: a flat curve (residual 0) and a rough one
    (every residual far above the target) merge the same segments under the same released
    residuals, and which segments merge follows the released values."""
    module = generated("linear")
    t = numpy.linspace(0.0, 1.0, 5000)
    rough = numpy.sin(4000 * t) * 100
    results = set()
    for seed in range(16):
        found = []
        for y in (0.0 * t, rough):
            curve = seg.prepare_run(t, y, (0.0, 1.0), 50.0, None, 0.1, None, math.inf)[0]
            projections = piecewise.DyadicProjections(curve, module.POLYNOMIAL_DEGREE, 10)
            grid = piecewise.dyadic_grid(0.0, 0.25, 8)
            ledger = PrivacyLedger(50.0, "GP")
            source = scripted(seed, crossing=0.5, size=1e4)
            found.append(tuple(seg.reduce_seg(projections, 0.0, 0.25, grid, 1, 4, 0.1,
                                              ledger.share(1 / 16), ledger, source)))
        assert found[0] == found[1], seed
        results.add(found[0])
    assert len(results) >= 4


def test_baseline_releases_only_its_released_points(scripted):
    """baseline_points with a sliding window: the smoothing reads the released points, so
    two curves under the same released points give the same function."""
    outputs = set()
    for seed in range(6):
        found = [baseline.baseline_points(*_curve(2 * seed + i), 9, domain=(-1.0, 1.0),
                                          epsilon=1.0, window=3, rng=scripted(seed))
                 for i in (0, 1)]
        values = [tuple(f.coefficients.ravel()) for f in found]
        assert values[0] == values[1], seed
        outputs.add(values[0])
    assert len(outputs) == 6


class _Gumbel:
    """compare.Noise replaced, for degree.exponential_mechanism, by the float r_i - u_i:
    the i-th noisy score is the scripted r_i whatever the score u_i."""

    def __init__(self, released):
        self.released, self.scores, self.index = released, None, 0

    def Noise(self, kind, scale, rng):
        i = self.index
        self.index += 1
        return self.released[i] - self.scores[i]


def test_degree_auto_chooses_from_the_noisy_scores_only(monkeypatch):
    """degree="auto" (cdf/degree.py, choose_degree): two data sets with different scores
    u(K) under Gumbel noise making the noisy scores equal choose the same K, and K follows
    the noisy scores."""
    fake = _Gumbel(None)
    real_scores = degree.tail_scores

    def scores(*args):
        fake.scores, fake.index = real_scores(*args), 0
        return fake.scores
    monkeypatch.setattr(degree, "compare", fake)
    monkeypatch.setattr(degree, "tail_scores", scores)
    rng = numpy.random.default_rng(0)
    top = max(degree.CANDIDATES)
    smooth = numpy.zeros(top + 1)
    smooth[:3] = 0.5
    rough = rng.standard_normal(top + 1) * 0.05
    chosen = set()
    for seed in range(30):
        fake.released = numpy.random.default_rng(seed).standard_normal(len(degree.CANDIDATES))
        found = [degree.choose_degree(c, 1000, 1.0, 1e-6, rng)[0] for c in (smooth, rough)]
        assert found[0] == found[1], seed
        assert found[0] == degree.CANDIDATES[int(numpy.argmax(fake.released))]
        chosen.add(found[0])
    assert len(chosen) >= 6


def test_joint_auto_degrees_are_chosen_from_the_noisy_scores_only(monkeypatch):
    """A joint CDF with degree="auto" (cdf/joint.py): each column's degree follows its
    scripted noisy scores, whatever the data's scores."""
    from gpcompiler.cdf.joint import joint_estimate
    fake = _Gumbel(None)
    real_scores = degree.tail_scores

    def scores(*args):
        fake.scores, fake.index = real_scores(*args), 0
        fake.released = next(scripts)
        return fake.scores
    monkeypatch.setattr(degree, "compare", fake)
    monkeypatch.setattr(degree, "tail_scores", scores)
    rng = numpy.random.default_rng(1)
    smooth, rough = rng.uniform(-1, 1, (500, 2)), rng.standard_normal((500, 2)) * 3
    chosen = set()
    for seed in range(8):
        found = []
        for data in (smooth, rough):
            script = numpy.random.default_rng(seed)
            scripts = iter([script.standard_normal(16), script.standard_normal(16)])
            result = joint_estimate(data, lo=[-4, -4], hi=[4, 4], epsilon=2.0, delta=1e-6,
                                    degree="auto", rng=0)
            found.append(result.degree)
        assert found[0] == found[1], seed
        chosen.add(found[0])
    assert len(chosen) >= 3
