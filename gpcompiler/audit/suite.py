"""The audit table and the power table (docs/design.md, "Auditing").

The audit table: negative controls that must be flagged, every shipped mechanism that must
pass. The power table: every shipped mechanism next to its mutants (gpcompiler.audit.mutants),
each run through the full audit -- the black box (gpcompiler.audit.blackbox) and, where the noise is
observable, white-box conformance (gpcompiler.audit.conformance).

False alarms: a table of N audits gives each audit alpha = ALPHA / N, which the audit
splits over the tests it runs (Bonferroni); ``false_alarm_bound`` adds up the levels of
the tests actually run, so the printed bound is computed, not asserted.

Run with `gpcompiler audit --suite` / `--power` (or the tests in tests/test_audit.py).
"""
import contextlib
import dataclasses
import math
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache

import numpy

from .. import adaptive, cdf
from . import mutants
from . import batched
from ..adaptive import seg, select
from .blackbox import (AuditReport, Claim, audit_fields, audit_module, audit_pair,
                    black_box_samples, pair_multiples)
from ..compiler.build import SHIPPED_MODULES, SHIPPED_SPECS, import_module_file
from ..cdf import estimators
from .conformance import (StepRecorder, conform_fields, conform_module, conformance,
                          default_draws, steps_report)

ALPHA = 1e-6
SETTINGS = {
    "full": {"black_box": 4e5, "least": 2000, "conformance": 4e7, "fewest": 1000000,
             "most": 1000000, "end_to_end": 2000, "adaptive": 100000, "spied": 2000},
    "quick": {"black_box": 1e4, "least": 500, "conformance": 2e5, "fewest": 500,
              "most": 20000, "end_to_end": 100, "adaptive": 50000, "spied": 100},
}


@dataclass(frozen=True)
class Audit:
    """The full audit of one mechanism: a black-box report and/or a conformance report."""
    name: str
    claim: str
    black_box: AuditReport = None
    conformance: object = None
    seconds: float = 0.0

    @property
    def parts(self):
        return [p for p in (self.black_box, self.conformance) if p is not None]

    @property
    def violated(self):
        return any(p.violated for p in self.parts)

    @property
    def stage(self):
        stages = [s for s, p in (("black box", self.black_box), ("conformance", self.conformance))
                  if p is not None and p.violated]
        return " + ".join(stages) or "-"

    @property
    def tests(self):
        return sum(p.tests for p in self.parts)

    @property
    def alpha(self):
        """The false-alarm probability of this audit: the sum of its tests' levels."""
        return sum(p.alpha for p in self.parts)


@dataclass(frozen=True)
class Row:
    """One audited mechanism and whether the auditor is expected to flag it."""
    name: str
    should_flag: bool
    audit: Audit

    @property
    def ok(self):
        return self.audit.violated == self.should_flag


def false_alarm_bound(audits):
    """(bound, tests): the sum of the levels of every test run (Bonferroni)."""
    return sum(a.alpha for a in audits), sum(a.tests for a in audits)


@lru_cache(maxsize=None)
def generated(name):
    """A committed generated module (imported once per process)."""
    return import_module_file(SHIPPED_MODULES / f"{name}.py", f"audited_{name}")


def shipped_specs():
    """Names of the shipped mechanism specs (not the CDF ones): curves, and functions on a
    box (audited end to end on gridded fields)."""
    return sorted(p.stem for p in SHIPPED_SPECS.glob("*.toml")
                  if 'kind = "cdf"' not in p.read_text())


def _draws(dimension, settings):
    return default_draws(dimension, settings["conformance"], settings["fewest"], settings["most"])


def _keyword(claim):
    return {"epsilon": claim.budget} if claim.model == "GP" else {"rho": claim.budget}


def _timed(name, claim_text, run):
    start = time.perf_counter()
    black_box, conformant = run()
    return Audit(name, claim_text, black_box, conformant, time.perf_counter() - start)


# -- generated modules ---------------------------------------------------------------------

def audit_mechanism(module, model, budget, *, mutant=None, mode="full", alpha=ALPHA, seed=0,
                    samples=None, draws=None, conformant=True):
    """Black box and (if ``conformant``) conformance of a generated module's privatize, or of
    a mutant of it, each with half of ``alpha``; ``samples`` (black-box samples per phase)
    and ``draws`` (conformance draws) default to the ``mode``'s budget for the dimension.
    A module over a box is audited end to end: its project_and_privatize on gridded
    fields (audit_fields, conform_fields)."""
    claim, s, d = Claim(model, budget), SETTINGS[mode], module.COEF_DIM
    share = alpha / 2 if conformant else alpha
    samples = samples or black_box_samples(d, s["black_box"], s["least"])
    if hasattr(module, "project_grid"):
        black_box_audit, conform = audit_fields, conform_fields
        keyword = {"release": mutant.release(module) if mutant else None}
    else:
        black_box_audit, conform = audit_module, conform_module
        keyword = {"privatize": mutant.privatize(module) if mutant else None}

    def run():
        black_box = black_box_audit(module, claim, alpha=share, seed=seed, samples=samples,
                                    **keyword)
        if not conformant:
            return black_box, None
        return black_box, conform(module, model, budget, alpha=alpha / 2, seed=seed,
                                  draws=draws or _draws(d, s), **keyword)
    name = f"{module.NAME} ({model})" + (f": {mutant.name}" if mutant else "")
    return _timed(name, claim.describe(1.0).split(",")[0], run)


def module_audit(spec, model, budget, mutant=None, mode="full", alpha=ALPHA, seed=0):
    """``audit_mechanism`` of the shipped module ``spec`` (a task for worker processes)."""
    return audit_mechanism(generated(spec), model, budget, mutant=mutant, mode=mode,
                           alpha=alpha, seed=seed)


# -- CDF methods ---------------------------------------------------------------------------

def _cdf_pair(n=1000, degree=10, method="direct", lo=0.0, hi=1.0):
    """Neighbouring datasets: all records at lo, or one moved to hi (the worst case)."""
    moved = numpy.full(n, lo)
    moved[0] = hi
    return [cdf.Statistics.from_data(x, lo=lo, hi=hi, degree=degree, method=method)
            for x in (numpy.full(n, lo), moved)]


def _noisy_sums(statistics, claim):
    """Sampler of the shipped Statistics.privatize, batched by broadcasting the sums."""
    def sample(count, rng):
        batch = dataclasses.replace(statistics, sums=numpy.broadcast_to(
            statistics.sums, (count,) + statistics.sums.shape))
        return batch.privatize(epsilon=claim.budget, delta=claim.delta, rng=rng).noisy_sums
    return sample


def cdf_audit(method, factor=1.0, mode="full", alpha=ALPHA, seed=50):
    """A CDF method with its sigma multiplied by ``factor`` (1: the shipped one). moments and
    direct: black box on the noisy sums and conformance of their noise against N(0, sigma^2 I)
    with the claimed sigma; histogram and adaptive quantiles: the black box end to end."""
    claim, s = Claim("DP", 1.0, 1e-5), SETTINGS[mode]
    name = f"CDF {method}" + (f": noise x{factor:g}" if factor != 1 else "")

    def run():
        with mutants.cdf_sigma_scaled(factor):
            if method in ("moments", "direct"):
                return _cdf_sums_audit(method, claim, s, alpha, seed, name)
            return _cdf_end_to_end(method, claim, s, alpha, seed, name), None
    return _timed(name, claim.describe(1.0), run)


def _cdf_sums_audit(method, claim, s, alpha, seed, name, pair=None, samples=None, draws=None,
                    conformant=True):
    """Black box of the noisy sums of ``pair`` (default _cdf_pair) and, if ``conformant``,
    conformance of their noise, each with half of ``alpha`` (all of it without)."""
    base, neighbour = pair or _cdf_pair(method=method)
    share = alpha / 2 if conformant else alpha
    samples = samples or black_box_samples(base.sums.size, s["black_box"] * 4, s["least"])
    audited = audit_pair(_noisy_sums(base, claim), _noisy_sums(neighbour, claim), claim, 1.0,
                         label=name, samples=samples, alpha=share,
                         rng=numpy.random.default_rng(seed))
    if not conformant:
        return AuditReport(name, claim, (audited,), share), None
    sigma = cdf.analytic_gaussian_sigma(claim.budget, claim.delta, base.sum_sensitivity())
    sample = _noisy_sums(base, claim)
    d = base.sums.size
    conformant = conformance(name, lambda count, rng: sample(count, rng) - base.sums, "Gaussian",
                             sigma, d, draws=draws or _draws(d, s),
                             alpha=alpha / 2, seed=seed)
    return AuditReport(name, claim, (audited,), share), conformant


def cdf_spec_audit(module, epsilon=1.0, delta=1e-5, *, mode="full", alpha=ALPHA, seed=50,
                   samples=None, draws=None, conformant=True):
    """A kind = "cdf" spec's release, as `gpcompiler cdf --spec` makes it: the direct
    method's noisy sums at the spec's bounds and degree, all records at lo against one
    moved to hi (the worst case), black box and conformance at (epsilon, delta)-DP."""
    claim = Claim("DP", epsilon, delta)
    name = f"{module.NAME} (CDF direct, K = {module.DEGREE})"
    pair = _cdf_pair(degree=module.DEGREE, lo=module.LO, hi=module.HI)
    return _timed(name, claim.describe(1.0), lambda: _cdf_sums_audit(
        "direct", claim, SETTINGS[mode], alpha, seed, name, pair, samples, draws, conformant))


def _cdf_end_to_end(method, claim, s, alpha, seed, name):
    n, grid = 200, numpy.linspace(0, 1, 32)
    data, moved = numpy.zeros(n), numpy.zeros(n)
    moved[0] = 1.0

    def sampler(values):
        return lambda count, g: numpy.stack([
            cdf.estimate(values, lo=0.0, hi=1.0, epsilon=1.0, delta=1e-5, degree=10,
                         method=method, rng=g).cdf(grid) for _ in range(count)])
    samples = s["end_to_end"] * 2
    pair = audit_pair(sampler(data), sampler(moved), claim, 1.0, label=name, samples=samples,
                      alpha=alpha, rng=numpy.random.default_rng(seed), pilot=samples // 4)
    return AuditReport(name, claim, (pair,), alpha)


def cdf_auto_pair():
    """Two neighbouring data sets of 200 records on [0, 1] whose noiseless best degree with
    the whole epsilon = 1 differs (4 against 2; tests/test_cdf_degree.py checks it): 130
    records at 0.05 and 70 at 0.6, and the same with one record moved from 0.05 to 0."""
    data = numpy.repeat([0.05, 0.6], [130, 70])
    moved = data.copy()
    moved[0] = 0.0
    return data, moved


def cdf_auto_audit(mutant=False, mode="full", alpha=ALPHA, seed=52):
    """degree="auto" end to end (docs/design.md, "CDF degree chosen privately"): black box
    on the released degree and the CDF on 32 public points, for ``cdf_auto_pair``; with
    ``mutant`` the selection is the noiseless best score, uncharged."""
    claim, s = Claim("DP", 1.0, 1e-5), SETTINGS[mode]
    name = "CDF direct, degree auto" + (": degree chosen without charge" if mutant else "")
    grid = numpy.linspace(0, 1, 32)

    def sampler(values):
        def sample(count, g):
            found = [cdf.estimate(values, lo=0.0, hi=1.0, epsilon=1.0, delta=1e-5,
                                  degree="auto", rng=g) for _ in range(count)]
            return numpy.array([[e.degree, *e.cdf(grid)] for e in found])
        return sample

    def run():
        with mutants.cdf_degree_uncharged() if mutant else contextlib.nullcontext():
            data, moved = cdf_auto_pair()
            samples = s["end_to_end"] * 2
            pair = audit_pair(sampler(data), sampler(moved), claim, 1.0, label=name,
                              samples=samples, alpha=alpha,
                              rng=numpy.random.default_rng(seed), pilot=samples // 4)
            return AuditReport(name, claim, (pair,), alpha), None
    return _timed(name, claim.describe(1.0), run)


# -- adaptive algorithms (end to end) -----------------------------------------------------

ADAPTIVE = {
    "PrivFuncSelect": ("legendre10", select, "priv_func_select", batched.SelectRuns, (-1.0, 1.0)),
    "PrivFuncSeg": ("linear", seg, "priv_func_seg", batched.seg_runs, (0.0, 1.0)),
    "PrivFuncUnbounded": ("linear", seg, "priv_func_unbounded", batched.unbounded_runs,
                          (-1.0, 1.0)),
}
ADAPTIVE_MUTANTS = {
    "SVT noise halved": mutants.first_svt_noise_halved,
    "final release charged half": mutants.final_release_half_charged,
    "final release in one coordinate": mutants.final_release_in_one_coordinate,
    "ramp clipping": lambda home: mutants.ramp_clipping(),
}


def _curve_pair(distance, interval):
    """q = 0 and q' = a bump of L2 norm ``distance`` in the middle of ``interval``
    (33 samples)."""
    a, b = interval
    t = numpy.linspace(a, b, 33)
    u = (2 * t - a - b) / (b - a)
    bump = numpy.maximum(0.0, 1 - 4 * u ** 2)
    y0, y1 = bump[:-1], bump[1:]
    norm = math.sqrt(numpy.sum(numpy.diff(t) * (y0 ** 2 + y0 * y1 + y1 ** 2)) / 3)
    return t, numpy.zeros_like(t), bump * distance / norm


def _spike_pair():
    """Issue 8's pair for clipping: 201 samples on [-0.01, 0.01], q = 1 at the first sample
    and 0 elsewhere, q' = 0 (dist 0.0058); the old ramp joined (-1, 0) to (-0.01, 1)."""
    t = numpy.linspace(-0.01, 0.01, 201)
    q = numpy.zeros_like(t)
    q[0] = 1.0
    return t, q, numpy.zeros_like(t), math.sqrt((t[1] - t[0]) / 3)


def adaptive_pairs(algorithm, model, samples):
    """The claim and the pairs (label, t, q, q', distance) of an adaptive algorithm's
    black box. The unbounded algorithm: issue 8's clipping pair at epsilon = 20 / rho = 20.
    The others at epsilon = 1 (at ln(samples)/3 units of 1/epsilon, pair_multiples: near
    the largest loss n samples can certify) or rho = 0.5 (at 1/sqrt(rho): rho dist^2 = 1
    already allows a loss near 6 on events of probability 1e-3): a bump against q = 0
    (SVT queries and projections differ) and a constant against its negative (equal SVT
    queries, so only the releases tell them apart: a release with too little noise shows
    undiluted)."""
    if algorithm == "PrivFuncUnbounded":
        t, q, q_prime, distance = _spike_pair()
        return Claim(model, 20.0), [("clipping pair", t, q, q_prime, distance)]
    claim = Claim(model, 1.0 if model == "GP" else 0.5)
    a, b = ADAPTIVE[algorithm][-1]
    distance = pair_multiples(samples)[-1] / claim.budget if model == "GP" else \
        1 / math.sqrt(claim.budget)
    t, zero, bump = _curve_pair(distance, (a, b))
    level = numpy.full_like(t, distance / (2 * math.sqrt(b - a)))
    return claim, [("bump against 0", t, zero, bump, distance),
                   ("constant against its negative", t, -level, level, distance)]


def adaptive_audit(algorithm, model, mutant=None, mode="full", alpha=ALPHA, seed=70):
    """End-to-end black box of an adaptive algorithm (or of a mutant patched in for the
    run) on ``adaptive_pairs``, its release evaluated on 24 public points, from batched
    runs (gpcompiler.audit.batched: the mode's "adaptive" samples per phase). Then
    the algorithm itself run "spied" times one at a time with spies on its SVTs and
    releases: the conformance of each noisy step with the budget its ledger charged
    (gpcompiler.audit.conformance.StepRecorder)."""
    spec, home, function_name, build, interval = ADAPTIVE[algorithm]
    module, s = generated(spec), SETTINGS[mode]
    samples = s["adaptive"]
    claim, pairs = adaptive_pairs(algorithm, model, samples)
    grid = numpy.linspace(*interval, 24)
    name = f"{algorithm} ({model})" + (f": {mutant}" if mutant else "")

    def sampler(t, y):
        plan = build(t, y, module, **_keyword(claim))
        return lambda count, g: plan.sample(count, g, grid).values.reshape(count, -1)

    def run():
        with ADAPTIVE_MUTANTS[mutant](home) if mutant else contextlib.nullcontext():
            try:
                audits = tuple(
                    audit_pair(sampler(t, q), sampler(t, q_prime), claim, distance,
                               label=f"{name}, {label}", samples=samples, alpha=alpha / 2,
                               events=len(pairs), rng=numpy.random.default_rng(seed + i),
                               pilot=samples // 4)
                    for i, (label, t, q, q_prime, distance) in enumerate(pairs))
            except batched.NoiseModelError as refused:
                audits, black_box = (), f"{name} (no black box: {refused})"
            else:
                black_box = name
            recorder = StepRecorder()
            _, t, _, q_prime, _ = pairs[0]
            rng = numpy.random.default_rng(seed + len(pairs))
            with mutants.patched(home, "svt", recorder.svt_spy), \
                    mutants.patched(home, "privatize_vector", recorder.release_spy):
                for _ in range(s["spied"]):
                    getattr(adaptive, function_name)(t, q_prime, module, rng=rng,
                                                     **_keyword(claim))
        return (AuditReport(black_box, claim, audits, alpha / 2),
                steps_report(name, recorder, alpha / 2))
    return _timed(name, claim.describe(pairs[0][-1]), run)


# -- negative controls ---------------------------------------------------------------------

def _spherical(rng, count, d):
    direction = rng.standard_normal((count, d))
    direction /= numpy.linalg.norm(direction, axis=1, keepdims=True)
    return rng.gamma(d, size=count)[:, None] * direction


def _hyperspherical_angles(rng, count, d):
    """The classic mistake: angles drawn uniformly, which is not uniform on the sphere."""
    angles = rng.uniform(0, math.pi, (count, d - 1))
    angles[:, -1] *= 2
    out = numpy.ones((count, d))
    for i in range(d - 1):
        out[:, i] *= numpy.cos(angles[:, i])
        out[:, i + 1:] *= numpy.sin(angles[:, i])[:, None]
    return rng.gamma(d, size=count)[:, None] * out


def _controls():
    """(name, claim, sampler x, sampler x', distance) of mechanisms breaking their claim."""
    linear = generated("linear")
    gram = linear.gram()
    a, b = numpy.array([2.0, 0.5]), numpy.array([0.5, 2.0])
    distance = math.sqrt((a - b) @ gram @ (a - b))
    laplace = (lambda c: lambda n, g: c + _spherical(g, n, 2))
    gaussian = (lambda c: lambda n, g: c + g.standard_normal((n, 2)) / math.sqrt(2 * 1.0))
    half = (lambda c: lambda n, g: linear.privatize(numpy.broadcast_to(c, (n, 2)), epsilon=2.0,
                                                    rng=g))
    angles = (lambda c: lambda n, g: c + _hyperspherical_angles(g, n, 3))
    claim = Claim("DP", 1.0, 1e-5)
    base, neighbour = _cdf_pair(method="moments")
    quarter = (lambda st: lambda n, g: st.sums + cdf.analytic_gaussian_sigma(
        1.0, 1e-5, base.sum_sensitivity() / 4) * g.standard_normal((n, st.sums.size)))
    return [
        ("isotropic Laplace on user coefficients (Sec. 3.1)", Claim("GP", 1.0),
         laplace(a), laplace(b), distance),
        ("isotropic Gaussian on user coefficients", Claim("CGP", 1.0),
         gaussian(a), gaussian(b), distance),
        ("linear: noise at half the required scale", Claim("GP", 1.0),
         half(numpy.zeros(2)), half(numpy.array([0.0, 3.0])), 3.0),
        ("direction from uniform hyperspherical angles (d = 3)", Claim("GP", 1.0),
         angles(numpy.zeros(3)), angles(numpy.array([0.0, 0.0, 1.0])), 1.0),
        ("CDF moments, sensitivity divided by 4", claim, quarter(base), quarter(neighbour), 1.0),
    ]


CONTROLS = 5


def control_audit(index, mode="full", alpha=ALPHA):
    """The black box of negative control ``index`` (0..CONTROLS-1)."""
    name, claim, x, y, distance = _controls()[index]
    samples = 20000 if mode == "full" else 10000

    def run():
        pair = audit_pair(x, y, claim, distance, label=name, samples=samples,
                          alpha=alpha, rng=numpy.random.default_rng(index))
        return AuditReport(name, claim, (pair,), alpha), None
    return _timed(name, claim.describe(distance), run)


# -- tables --------------------------------------------------------------------------------

def _call(function, args, alpha):
    return function(*args, alpha=alpha)


def _run(tasks, alpha, jobs=1, progress=None):
    """Run (function, args) tasks with false-alarm budget ``alpha`` each, in ``jobs`` worker
    processes if > 1; results in the order of the tasks."""
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            futures = [pool.submit(_call, f, args, alpha) for f, args in tasks]
            results = []
            for future in futures:
                results.append(future.result())
                if progress:
                    progress(results[-1])
            return results
    results = []
    for f, args in tasks:
        results.append(_call(f, args, alpha))
        if progress:
            progress(results[-1])
    return results


def suite_tasks(mode="full", end_to_end=True):
    """(should_flag, function, args without alpha) of the audit table."""
    tasks = [(True, control_audit, (i, mode)) for i in range(CONTROLS)]
    tasks.append((True, adaptive_audit, ("PrivFuncUnbounded", "GP", "ramp clipping", mode)))
    for spec in shipped_specs():
        for model, budget in (("GP", 1.0), ("CGP", 0.5)):
            tasks.append((False, module_audit, (spec, model, budget, None, mode)))
    for method in estimators.METHODS:
        if method in ("moments", "direct") or end_to_end:
            tasks.append((False, cdf_audit, (method, 1.0, mode)))
    if end_to_end:
        tasks.append((False, cdf_auto_audit, (False, mode)))
    for algorithm in ADAPTIVE:
        for model in ("GP", "CGP") if end_to_end else ("GP",):
            tasks.append((False, adaptive_audit, (algorithm, model, None, mode)))
    return tasks


def run_suite(mode="full", end_to_end=True, jobs=1, progress=None, alpha=ALPHA):
    """Every row of the audit table; the false-alarm budget ``alpha`` is split evenly."""
    planned = suite_tasks(mode, end_to_end)
    audits = _run([(f, args) for _, f, args in planned], alpha / len(planned), jobs, progress)
    return [Row(a.name, flag, a) for (flag, _, _), a in zip(planned, audits)]


ADAPTIVE_POWER = (("PrivFuncSelect", ("SVT noise halved",)),
                  ("PrivFuncSeg", ("SVT noise halved", "final release charged half")),
                  ("PrivFuncUnbounded", ("ramp clipping",)))


def power_tasks(mode="full", specs=None, end_to_end=True):
    """(group, function, args) of the power study: each mechanism and its mutants."""
    tasks = []
    for spec in specs or shipped_specs():
        for model, budget in (("GP", 1.0), ("CGP", 0.5)):
            group = f"{spec} ({model})"
            tasks.append((group, module_audit, (spec, model, budget, None, mode)))
            module = generated(spec)
            for mutant in mutants.module_mutants(model):
                if not mutant.equivalent(module):
                    tasks.append((group, module_audit, (spec, model, budget, mutant, mode)))
    for method in ("moments", "direct"):
        for factor in (1.0,) + mutants.SCALES:
            tasks.append((f"CDF {method}", cdf_audit, (method, factor, mode)))
    if end_to_end:
        for mutant in (False, True):
            tasks.append(("CDF direct, degree auto", cdf_auto_audit, (mutant, mode)))
        for algorithm, mutated in ADAPTIVE_POWER:
            for mutant in (None,) + mutated:
                tasks.append((f"{algorithm} (GP)", adaptive_audit,
                              (algorithm, "GP", mutant, mode)))
    return tasks


def run_power(mode="full", specs=None, end_to_end=True, jobs=1, progress=None, alpha=ALPHA):
    """[(group, audit, is_mutant)] for the power table, ``alpha`` split over all audits."""
    planned = power_tasks(mode, specs, end_to_end)
    audits = _run([(f, args) for _, f, args in planned], alpha / len(planned), jobs, progress)
    return [(group, audit, ":" in audit.name) for (group, _, _), audit in zip(planned, audits)]


def format_table(rows):
    """Markdown audit table: certified loss versus the claim, conformance verdict, time."""
    lines = ["| mechanism | claim | expected | flagged | stage | certified loss | claimed loss "
             "| conformance: scale [interval] vs claimed | time |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        audit = row.audit
        loss = claimed = "-"
        if audit.black_box:
            worst = audit.black_box.worst
            loss, claimed = f"{worst.certified_loss:.3f}", f"{worst.claimed_loss:.3f}"
        lines.append(f"| {row.name} | {audit.claim} | {'flag' if row.should_flag else 'pass'} | "
                     f"{'yes' if audit.violated else 'no'} | {audit.stage} | {loss} | {claimed} | "
                     f"{_conformance_cell(audit.conformance)} | {audit.seconds:.1f} s |")
    lines.append("\ncertified loss: a 1 - alpha lower confidence bound on the privacy loss of "
                 "the worst event found (below 0: none found); flagged when it exceeds the "
                 "claimed loss.")
    return "\n".join(lines)


def _conformance_cell(report):
    if report is None:
        return "-"
    lo, hi = report.interval
    return (f"{report.scale_estimate:.5g} [{lo:.5g}, {hi:.5g}] vs {report.claimed_scale:.5g} "
            f"(detects {100 * report.detectable:.2g}%)")


def format_power(results):
    """Markdown power table: per mechanism, the mutants flagged and by which stage."""
    lines = ["| mechanism | correct passes | mutants flagged | flagged by (stage: mutants) "
             "| smallest scale error detected | detectable scale error (conformance) | time |",
             "|---|---|---|---|---|---|---|"]
    groups = {}
    for group, audit, mutant in results:
        groups.setdefault(group, []).append((audit, mutant))
    for group, entries in groups.items():
        correct = [a for a, m in entries if not m]
        broken = [a for a, m in entries if m]
        flagged = [a for a in broken if a.violated]
        by_stage = {}
        for a in broken:
            by_stage.setdefault(a.stage, []).append(a.name.split(": ", 1)[1])
        stages = "; ".join(f"{stage}: {', '.join(names)}" for stage, names in by_stage.items())
        errors = [1 - float(a.name.split(" x")[1]) for a in flagged if " x" in a.name]
        conformant = [a.conformance for a in correct if a.conformance]
        detect = f"{100 * conformant[0].detectable:.2g}%" if conformant else "-"
        passes = "yes" if correct and not any(a.violated for a in correct) else \
            ("no" if correct else "-")
        seconds = sum(a.seconds for a, _ in entries)
        lines.append(f"| {group} | {passes} | {len(flagged)}/{len(broken)} | {stages} | "
                     f"{f'{100 * min(errors):.2g}%' if errors else '-'} | {detect} | "
                     f"{seconds:.0f} s |")
    return "\n".join(lines)
