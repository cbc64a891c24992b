"""Every stated fact is the one the mechanism used, on every path that states one
(docs/clipping.md, docs/howto/read-a-release.md): the bound B, the slack 2 eta B and the
lattice step gamma of every generated module's release_facts (curves, vectors, boxes;
privatize and project_and_privatize; GP and CGP; default and given bound), of every
adaptive algorithm's ledger, of the CLI's release files and of `explain`; the CDF
releases' (sensitivity, sigma, lattice) and the auto degree's Gumbel scale. Each test
intercepts the values passed to the clip and to the noise and compares them with what is
stated; noise scales are also checked against their exact definition (Fractions)."""
import json
import math
from fractions import Fraction

import numpy
import pytest

from conftest import BOX_SPECS, MECHANISM_SPECS, generated
from gpcompiler import cdf
from gpcompiler.adaptive import baseline, noise, seg, select
from gpcompiler.cdf import degree
from gpcompiler.cdf.joint import joint_estimate
from gpcompiler.compiler.slack import curve_eta
from gpcompiler.runtime import exact
from gpcompiler.runtime.rounding import ceil_float

BUDGETS = [{"epsilon": 0.3}, {"epsilon": 7.0}, {"rho": 0.2}]


def _smallest_float_at_least(value):
    """Whether a float is the smallest float >= the exact ``value`` (a Fraction)."""
    def check(x):
        return Fraction(x) >= value and Fraction(math.nextafter(x, -math.inf)) < value
    return check


def _is_scale(scale, budget):
    """The noise scale of a budget, by its definition: the smallest float >= 1/epsilon
    (GP) or >= sqrt(1/(2 rho)) (CGP, compared by squares)."""
    if "epsilon" in budget:
        return _smallest_float_at_least(1 / Fraction(budget["epsilon"]))(scale)
    target = 1 / (2 * Fraction(budget["rho"]))
    return Fraction(scale) ** 2 >= target > Fraction(math.nextafter(scale, 0)) ** 2


def _slack_of(eta, bound):
    return _smallest_float_at_least(2 * Fraction(eta) * Fraction(bound))


def _on_lattice(values, gamma):
    return all((Fraction(float(v)) / Fraction(gamma)).denominator == 1
               for v in numpy.ravel(values))


def _spy_module(monkeypatch, module):
    """Record what a generated module's release passes to its clips and its noise."""
    seen = {"clip": [], "project": [], "noise": []}
    for name in ("spherical_laplace", "gaussian"):
        real = getattr(module, name)

        def sample(x, scale, rng, real=real):
            seen["noise"].append((numpy.array(x), scale))
            return real(x, scale, rng)
        monkeypatch.setattr(module, name, sample)
    real_clip = module._clip
    monkeypatch.setattr(module, "_clip",
                        lambda c, bound: seen["clip"].append(bound) or real_clip(c, bound))
    for name in ("_project", "_project_grid"):   # the curve's or field's clip, before projecting
        if hasattr(module, name):
            real = getattr(module, name)

            def project(*args, real=real):
                seen["project"].append(args[4])
                return real(*args)
            monkeypatch.setattr(module, name, project)
    return seen


def _inputs(module, rng):
    """Large inputs (every release clipped): coefficients, and a curve or a gridded field."""
    c = rng.standard_normal(module.COEF_SHAPE) * 1e6
    if hasattr(module, "project_grid"):
        grids = [numpy.linspace(lo, hi, 7) for lo, hi in module.domain()]
        values = rng.standard_normal((7,) * module.DIMENSION) * 1e6
        return c, lambda **k: module.project_and_privatize(grids, values, **k)
    a, b = module.curve_interval()
    t = numpy.linspace(a, b, 40)
    y = rng.standard_normal((40, module.VALUE_DIM) if module.VALUE_DIM > 1 else 40) * 1e6
    return c, lambda **k: module.project_and_privatize(t, y, **k)


@pytest.mark.parametrize("name", sorted(MECHANISM_SPECS + BOX_SPECS))
def test_release_facts_are_what_every_generated_release_uses(monkeypatch, name):
    """release_facts(B, slack, gamma) of each generated module against privatize and
    project_and_privatize (the curve's or field's clip and the coefficients' clip, the
    noise's scale): both paths, both models, the default and a given bound."""
    module = generated(name)
    seen = _spy_module(monkeypatch, module)
    rng = numpy.random.default_rng(1)
    c, project_and_privatize = _inputs(module, rng)
    for budget in BUDGETS:
        for bound in (None, 0.75):
            facts = module.release_facts(bound=bound, **budget)
            for path in (lambda **k: module.privatize(c, **k), project_and_privatize):
                for key in seen:
                    seen[key].clear()
                released = path(rng=2, bound=bound, **budget)
                assert seen["clip"] and set(seen["clip"]) == {facts["bound"]}, (name, budget)
                assert set(seen["project"]) <= {facts["bound"]}
                (flat, scale), = seen["noise"]
                assert _is_scale(scale, budget), (name, budget, scale)
                assert facts["lattice"] == exact.lattice(scale)
                assert _on_lattice(released, facts["lattice"])
                norms = numpy.sqrt((flat.reshape(-1, module.COEF_DIM) ** 2).sum(axis=1))
                assert norms.max() <= facts["bound"] * (1 + 1e-12)   # the clip's float rounding
            assert _slack_of(module.ETA, facts["bound"])(facts["slack"]), (name, budget)
            if bound is not None:
                assert facts["bound"] == bound


class _Releases:
    """Spies on the adaptive releases: the arguments of privatize_vector (in every
    algorithm's module), the bound of noise.clip and the scale of the noise."""

    def __init__(self, monkeypatch):
        self.calls, self.bounds, self.scales = [], [], []
        for module in (select, seg, baseline):
            real = module.privatize_vector

            def spy(vector, ledger, label, share, *, rng, bound=math.inf, eta=None, real=real):
                self.calls.append((label, share, bound, eta, numpy.shape(vector)))
                return real(vector, ledger, label, share, rng=rng, bound=bound, eta=eta)
            monkeypatch.setattr(module, "privatize_vector", spy)
        real_clip, real_noise = noise.clip, noise._add_noise
        monkeypatch.setattr(noise, "clip", lambda v, b: self.bounds.append(b) or real_clip(v, b))

        def add(vector, gp, scale, rng):
            self.scales.append(scale)
            return real_noise(vector, gp, scale, rng)
        monkeypatch.setattr(noise, "_add_noise", add)

    def check(self, ledger, slack_stated=True):
        """Each release the ledger states is the one made: its bound the clip's, its lattice
        that of the noise's scale, its slack 2 eta B of the eta passed (rounded up), its
        charge the share passed, and the scale that share's."""
        assert len(ledger.releases) == len(self.calls) == len(self.scales) > 0
        spends = {s.label: s for s in ledger.spends}
        for stated, call, bound, scale in zip(ledger.releases, self.calls, self.bounds,
                                              self.scales):
            label, share, passed, eta, _ = call
            assert stated.label == label and stated.bound == bound == passed
            assert stated.lattice == exact.lattice(scale)
            assert spends[label].parameter == share
            assert _is_scale(scale, {"epsilon" if ledger.model == "GP" else "rho": share})
            if slack_stated:
                assert eta is not None and stated.slack is not None, label
                assert _slack_of(eta, bound)(stated.slack), label
            else:
                assert stated.slack is None and eta is None


def _curve(n=600):
    rng = numpy.random.default_rng(4)
    t = numpy.linspace(0.0, 1.0, n)
    return t, numpy.cumsum(rng.standard_normal(n)) * 50


@pytest.mark.parametrize("model", ["epsilon", "rho"])
@pytest.mark.parametrize("algorithm", ["select", "select_pruned", "seg", "unbounded",
                                       "piecewise", "baseline"])
def test_every_ledger_states_the_releases_it_made(monkeypatch, algorithm, model):
    """The ledgers of PrivFuncSelect (with and without its first release), PrivFuncSeg,
    the unbounded domain (whose releases go through a sub-ledger), piecewise
    Project-and-Privatize and the baseline: every release states its bound, slack and
    lattice as used; the slack is 2 module.ETA B for select and the piecewise projection's
    eta (slack.curve_eta of the released shape) for seg; the baseline states none."""
    spies = _Releases(monkeypatch)
    t, y = _curve()
    budget = {model: 4.0}
    linear = generated("linear")
    if algorithm.startswith("select"):
        module = generated("legendre10")
        split = (("1/8", "1/4", "1/8", "1/2") if algorithm == "select_pruned"
                 else select.DEFAULT_SPLIT)
        result = select.priv_func_select(2 * t - 1, y, module, split=split, rng=3, **budget)
        assert {eta for *_, eta, _ in spies.calls} == {module.ETA}
    elif algorithm == "unbounded":
        result = seg.priv_func_unbounded(t, y, linear, rng=3, **budget)
    elif algorithm == "baseline":
        result = baseline.baseline_points(t, y, 6, domain=(0.0, 1.0), rng=3, **budget)
    elif algorithm == "piecewise":
        result = seg.piecewise_project_and_privatize(t, y, linear, [0.0, 0.25, 0.5, 1.0],
                                                     rng=3, **budget)
    else:
        result = seg.priv_func_seg(t, y, linear, rng=3, **budget)
    if algorithm in ("seg", "unbounded", "piecewise"):
        (_, _, _, eta, shape), = spies.calls
        assert eta == curve_eta(shape[1], shape[2], False, math.prod(shape))
    spies.check(result.ledger, slack_stated=algorithm != "baseline")


@pytest.mark.parametrize("method", ["project", "project_bound", "select", "select_pruned",
                                    "seg", "unbounded", "baseline"])
def test_cli_release_files_state_the_facts_of_the_release_made(cli, monkeypatch, tmp_path,
                                                                method):
    """`privatize` release files: bound, slack and lattice are those of the last release
    made (adaptive methods: its ledger's, intercepted; PrivFuncSelect with its first
    release makes two), or of the module's clip and noise (project)."""
    name = "legendre10" if method.startswith("select") else "linear"
    module = generated(name)
    seen = _spy_module(monkeypatch, module)
    monkeypatch.setattr("gpcompiler.compiler.build.load", lambda spec, **k: module)
    spies = _Releases(monkeypatch)
    t, y = _curve(200)
    t = 2 * t - 1 if name == "legendre10" else t
    data = tmp_path / "curve.csv"
    data.write_text("t,y\n" + "".join(f"{a!r},{b!r}\n" for a, b in zip(t, y)))
    out = tmp_path / "release.json"
    split = ("--split", "1/8,1/4,1/8,1/2") if method == "select_pruned" else ()
    bound = ("--bound", "3.0") if method == "project_bound" else ()
    status, _, err = cli("privatize", f"specs/{name}.toml", data, "--epsilon", "2",
                         "--method", method.split("_")[0], *split, *bound, "--seed", "3",
                         "-o", out)
    assert status == 0, err
    assert len(spies.calls) == (2 if split else 0 if method.startswith("project")
                                else 100 if method == "baseline" else 1)   # --k: 100
    release = json.loads(out.read_text())
    if method.startswith("project"):
        (_, scale), = seen["noise"]
        assert not bound or seen["clip"] == [3.0]
        used = {"bound": seen["clip"][-1], "lattice": exact.lattice(scale),
                "slack": ceil_float(2 * Fraction(module.ETA) * Fraction(seen["clip"][-1]))}
    else:
        label, _, bound, eta, _ = spies.calls[-1]
        used = {"bound": bound, "lattice": exact.lattice(spies.scales[-1]),
                "slack": None if eta is None else ceil_float(2 * Fraction(eta) * Fraction(bound))}
    assert {key: release[key] for key in used} == used


@pytest.mark.parametrize("bound", [(), ("--bound", "2.5")])
@pytest.mark.parametrize("budget", [("--epsilon", "10"), ("--rho", "3")])
def test_cli_field_release_files_state_the_facts_of_the_release_made(cli, monkeypatch,
                                                                      tmp_path, budget, bound):
    """`privatize` of gridded fields (a box spec): the file's bound, slack and lattice are
    the bound of the fields' and coefficients' clips and the lattice of the noise's scale."""
    module = generated("legendre_box")
    seen = _spy_module(monkeypatch, module)
    monkeypatch.setattr("gpcompiler.compiler.build.load", lambda spec, **k: module)
    numpy.save(tmp_path / "fields.npy", numpy.random.default_rng(4).normal(size=(3, 6, 5)) * 1e4)
    out = tmp_path / "release.json"
    status, _, err = cli("privatize", "specs/legendre_box.toml", tmp_path / "fields.npy",
                         *budget, *bound, "--seed", "5", "-o", out)
    assert status == 0, err
    release = json.loads(out.read_text())
    assert not bound or release["bound"] == 2.5
    scales = {scale for _, scale in seen["noise"]}
    bounds = set(seen["clip"]) | set(seen["project"])
    assert len(scales) == 1 and bounds == {release["bound"]}
    assert release["lattice"] == exact.lattice(scales.pop())
    assert _slack_of(module.ETA, release["bound"])(release["slack"])


@pytest.mark.parametrize("name", sorted(MECHANISM_SPECS + BOX_SPECS))
def test_explain_states_the_facts_the_module_uses(cli, monkeypatch, name):
    """Every row of `explain`'s clipping table (budget, noise scale, B, slack, lattice)
    equals the facts of the generated module's release at that budget, and the noise scale
    the module draws with."""
    module = generated(name)
    seen = _spy_module(monkeypatch, module)
    status, out, err = cli("explain", f"specs/{name}.toml")
    assert status == 0, err
    rows = [line for line in out.splitlines() if line.startswith(("| epsilon = ", "| rho = "))]
    assert len(rows) == 8
    c = numpy.zeros(module.COEF_SHAPE)
    for row in rows:
        budget_text, scale, bound, slack, step = (cell.strip()
                                                  for cell in row.strip("|").split("|"))
        model, value = budget_text.split(" = ")
        budget = {model: float(value)}
        facts = module.release_facts(**budget)
        assert (float(bound), float(slack), float(step)) == (
            facts["bound"], facts["slack"], facts["lattice"]), (name, row)
        seen["noise"].clear()
        module.privatize(c, rng=0, **budget)
        assert float(scale) == seen["noise"][0][1], (name, row)


class _GumbelScales:
    """compare, for cdf/degree.py: Noise records each Gumbel scale it is drawn with."""

    def __init__(self, compare):
        self.scales, self.real = [], compare

    def Noise(self, kind, scale, rng):
        self.scales.append(scale)
        return self.real.Noise(kind, scale, rng)


def _intercept_cdf_noise(monkeypatch):
    """(the sigmas the exact Gaussian draws with, the Gumbel scales the exponential
    mechanism draws with): both recorded as the noise is drawn."""
    drawn = []
    real = exact.gaussian
    monkeypatch.setattr(exact, "gaussian",
                        lambda x, sigma, rng: drawn.append(sigma) or real(x, sigma, rng))
    gumbel = _GumbelScales(degree.compare)
    monkeypatch.setattr(degree, "compare", gumbel)
    return drawn, gumbel


@pytest.mark.parametrize("method", ["direct", "moments", "histogram", "adaptive-quantiles",
                                    "auto", "joint", "joint histogram", "joint auto"])
def test_cdf_noise_facts_are_the_noise_drawn(monkeypatch, method):
    """Every CDF release's stated (sum sensitivity, sigma, lattice): sigma is the one the
    exact Gaussian draws with, the lattice its step, and sigma is the analytic Gaussian
    sigma of the stated sensitivity at the release's (epsilon, delta); degree="auto"
    states its Gumbel scale (selection_noise, as the CLI writes it) as drawn."""
    drawn, gumbel = _intercept_cdf_noise(monkeypatch)
    rng = numpy.random.default_rng(5)
    data = rng.standard_normal((400, 2))
    epsilon, delta = 1.5, 1e-6
    if method.startswith("joint"):
        keywords = ({"method": "histogram", "bins": 6} if "histogram" in method
                    else {"degree": "auto"} if "auto" in method else {})
        result = joint_estimate(data, lo=[-4, -4], hi=[4, 4], epsilon=epsilon,
                               delta=delta, rng=1, **keywords)
    else:
        keywords = ({"degree": "auto"} if method == "auto" else {"method": method})
        result = cdf.estimate(data[:, 0], lo=-4, hi=4, epsilon=epsilon, delta=delta, rng=1,
                              **keywords)
    (sensitivity, sigma, lattice), = result.noise
    assert drawn == [sigma] and lattice == exact.lattice(sigma)
    release_epsilon = result.spent[-1][0]
    assert sigma == cdf.analytic_gaussian_sigma(release_epsilon, delta, sensitivity)
    assert bool(gumbel.scales) == ("auto" in method)
    if method == "auto":
        stated = degree.selection_noise(400, epsilon, delta)
        assert set(gumbel.scales) == {stated["gumbel_scale"]}
        assert stated["gumbel_scale"] == degree.gumbel_scale(stated["score_sensitivity"],
                                                             result.spent[0][0])


@pytest.mark.parametrize("options", [("--degree", "auto"), ("--method", "moments"),
                                     ("--method", "histogram"), ("--columns", "a,b")])
def test_cdf_release_files_state_the_noise_drawn(cli, monkeypatch, tmp_path, options):
    """`cdf` release files: "noise" (sum sensitivity, sigma, lattice) is the sigma the exact
    Gaussian drew with and its lattice, and with --degree auto "degree_selection_noise"
    states the Gumbel scale the exponential mechanism drew with."""
    drawn, gumbel = _intercept_cdf_noise(monkeypatch)
    data = tmp_path / "data.csv"
    rows = numpy.random.default_rng(6).standard_normal((300, 2))
    data.write_text("a,b\n" + "".join(f"{x!r},{y!r}\n" for x, y in rows))
    columns = ("--lo", "-4", "--lo", "-4", "--hi", "4", "--hi", "4") if "--columns" in options \
        else ("--column", "a", "--lo", "-4", "--hi", "4")
    out = tmp_path / "release.json"
    status, _, err = cli("cdf", data, *columns, *options, "--epsilon", "1.5", "--delta", "1e-6",
                         "--seed", "2", "-o", out)
    assert status == 0, err
    release = json.loads(out.read_text())
    sigma, = drawn
    assert release["noise"]["sigma"] == sigma
    assert release["noise"]["lattice"] == exact.lattice(sigma)
    epsilon = degree.split_budget(1.5)[1] if "auto" in options else 1.5
    assert sigma == cdf.analytic_gaussian_sigma(epsilon, 1e-6, release["noise"]["sum_sensitivity"])
    if "auto" in options:
        assert set(gumbel.scales) == {release["degree_selection_noise"]["gumbel_scale"]}
    else:
        assert not gumbel.scales and "degree_selection_noise" not in release
