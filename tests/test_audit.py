"""The audit table and the auditor's power (docs/design.md, "Auditing"; false-alarm
probability < 1e-6 over each table, computed from the tests run)."""
import contextlib
import math

import numpy
import pytest
from scipy import stats

from gpcompiler.audit import suite as audit_suite, mutants
from gpcompiler.audit.blackbox import Claim, audit_pair, clopper_pearson
from gpcompiler.audit.conformance import conformance


# The quick audit table, run_suite("quick", end_to_end=False), one test per row (so that
# the workers share it): each row runs as run_suite runs it, at its share of the table's
# false-alarm budget, ALPHA / rows (run_suite's split itself: the test after these).
TABLE = audit_suite.suite_tasks("quick", end_to_end=False)
ROW_ALPHA = audit_suite.ALPHA / len(TABLE)


def test_audit_table_has_the_negative_controls_and_every_shipped_mechanism():
    assert sum(flag for flag, _, _ in TABLE) == 6 and len(TABLE) - 6 >= 27
    modules = {args[:2] for _, function, args in TABLE if function is audit_suite.module_audit}
    assert {("surface_total", "GP"), ("harbour", "CGP")} <= modules
    assert {spec for spec, _ in modules} == set(audit_suite.shipped_specs())


@pytest.mark.parametrize("should_flag, function, args", TABLE,
                         ids=[f"{f.__name__}{list(a[:-1])}" for _, f, a in TABLE])
def test_audit_table_flags_every_negative_control_and_passes_every_mechanism(
        capsys, should_flag, function, args):
    audit = function(*args, alpha=ROW_ALPHA)
    with capsys.disabled():
        print("\n" + audit_suite.format_table([audit_suite.Row(audit.name, should_flag, audit)]))
    assert audit.violated == should_flag, audit.stage
    # the rows' levels sum to at most ALPHA = 1e-6 (Bonferroni over the tests they ran)
    bound, tests = audit_suite.false_alarm_bound([audit])
    assert bound <= ROW_ALPHA * (1 + 1e-12) and tests >= (2 if should_flag else 9)
    assert should_flag or audit.conformance
    if "Sec. 3.1" in audit.name:
        counterexample = audit.black_box.pairs[0]
        assert counterexample.certified_loss > 1.5 * counterexample.claimed_loss
    if "ramp clipping" in audit.name:
        assert audit.black_box.violated


def test_run_suite_splits_the_budget_over_the_rows_in_their_order(monkeypatch):
    controls = [task for task in TABLE if task[1] is audit_suite.control_audit][:2]
    monkeypatch.setattr(audit_suite, "suite_tasks", lambda mode, end_to_end: controls)
    rows = audit_suite.run_suite("quick", end_to_end=False, alpha=1e-6)
    assert [row.name for row in rows] == [audit_suite.control_audit(*args, alpha=1e-6).name
                                          for _, _, args in controls]
    assert all(row.should_flag and row.ok for row in rows)
    assert audit_suite.false_alarm_bound([row.audit for row in rows])[0] <= 1e-6 * (1 + 1e-12)
    assert all(row.audit.alpha > 0.4e-6 for row in rows)


@pytest.mark.parametrize("spec, model, budget, mutant, stage", [
    ("sinc_ecg", "GP", 1.0, mutants.Mutant("scale", 0.7), "conformance"),
    ("linear", "GP", 1.0, mutants.Mutant("scale", 0.5), "black box + conformance"),
    ("linear", "CGP", 0.5, mutants.Mutant("leak", 1e-3), "conformance"),
    ("two_circles", "GP", 1.0, mutants.Mutant("user basis"), "conformance"),
])
def test_mutants_are_flagged_by_the_stage_that_can_see_them(spec, model, budget, mutant, stage):
    audit = audit_suite.module_audit(spec, model, budget, mutant, "quick", alpha=1e-7)
    assert audit.violated and stage in audit.stage, audit.stage


@pytest.mark.parametrize("mutant", [mutants.Mutant("scale", f) for f in mutants.SCALES]
                         + [mutants.Mutant("laplace")], ids=lambda m: m.name)
def test_mutants_of_a_2d_module_are_flagged_end_to_end(mutant):
    """surface_total (d = 15) audited through project_and_privatize on gridded fields; x0.99
    needs 100,000 draws (detectable scale error about 0.5%)."""
    module = audit_suite.generated("surface_total")
    draws = 100000 if mutant.parameter == 0.99 else None
    audit = audit_suite.audit_mechanism(module, "GP", 1.0, mutant=mutant, mode="quick",
                                        alpha=1e-7, draws=draws)
    assert audit.violated and "conformance" in audit.stage, audit.stage


def test_field_pairs_are_as_far_apart_as_their_projections():
    """The audit's distance is that of the projections (the loss Project-and-Privatize
    incurs); for an L2 spec it is the exact L2 distance of the fields in the span (the
    multilinear and constant ones, by the hat functions' Gram matrix: h/3, h/6 per piece)
    and less for the random field, which the projection shortens."""
    from gpcompiler.audit.blackbox import field_pairs
    module = audit_suite.generated("surface_total")
    grids, pairs = field_pairs(module, 1.0, 2000)
    mass = numpy.ones((1, 1))
    for t in grids:
        h = numpy.diff(t)
        one = numpy.diag(numpy.r_[h, 0] / 3 + numpy.r_[0, h] / 3)
        mass = numpy.kron(mass, one + numpy.diag(h / 6, 1) + numpy.diag(h / 6, -1))
    for label, a, b, distance in pairs:
        gap = numpy.linalg.norm(module.project_grid(grids, b) - module.project_grid(grids, a))
        assert abs(gap - distance) < 1e-12 * distance, label
        exact = math.sqrt((b - a).ravel() @ mass @ (b - a).ravel())
        if label.startswith("random"):
            assert gap < exact * (1 - 1e-3)
        else:
            assert abs(gap - exact) < 1e-12 * exact, label


@pytest.mark.parametrize("algorithm, mutant, runs", [
    ("PrivFuncSeg", "final release charged half", 50),
    ("PrivFuncSelect", "SVT noise halved", 50),
    ("PrivFuncSelect", "final release in one coordinate", 400)])
def test_adaptive_mutants_are_flagged_by_step_conformance(monkeypatch, algorithm, mutant, runs):
    """A few spied runs (the correct algorithms pass the same tests in the audit table)."""
    monkeypatch.setitem(audit_suite.SETTINGS["quick"], "spied", runs)
    monkeypatch.setitem(audit_suite.SETTINGS["quick"], "adaptive", 500)
    broken = audit_suite.adaptive_audit(algorithm, "GP", mutant, "quick", alpha=1e-7)
    assert broken.conformance.violated
    step = "release" if "release" in mutant else "SVT"
    assert any(name.startswith(step) for name in broken.conformance.failed)


def test_batched_black_box_flags_the_half_charged_final_release():
    """50,000 batched runs per phase (gpcompiler.audit.batched): the black box now sees
    PrivFuncSeg's final release drawing the noise of twice its charge, on the pair whose
    SVT queries are equal (2,000 one-at-a-time runs per phase did not)."""
    assert audit_suite.SETTINGS["quick"]["adaptive"] >= 50000
    audit = audit_suite.adaptive_audit("PrivFuncSeg", "GP", "final release charged half",
                                       "quick", alpha=1e-7)
    constant = audit.black_box.pairs[1]
    assert "constant" in constant.label and constant.violated
    assert constant.certified_loss > constant.claimed_loss + 0.5


def test_batched_runs_refuse_a_release_that_is_not_their_noise_law():
    """A final release with the right radius in one coordinate (the rest exact) would be
    sampled as a correct one if the batched runs read only its scale (third adversary
    review): they check the release against its recorded draws and refuse it."""
    from gpcompiler.audit import batched
    from gpcompiler.adaptive import select
    module = audit_suite.generated("legendre10")
    t = numpy.linspace(-1, 1, 33)
    batched.SelectRuns(t, numpy.cos(t), module, epsilon=2.0)
    with mutants.final_release_in_one_coordinate(select):
        with pytest.raises(batched.NoiseModelError, match="final release: the noise is not"):
            batched.SelectRuns(t, numpy.cos(t), module, epsilon=2.0)
    with mutants.final_release_half_charged(select):
        halved = batched.SelectRuns(t, numpy.cos(t), module, epsilon=2.0)
    assert halved.final == batched.SelectRuns(t, numpy.cos(t), module, epsilon=2.0).final / 2


def test_user_basis_mutant_of_an_orthonormal_basis_is_equivalent():
    assert mutants.Mutant("user basis").equivalent(audit_suite.generated("sinc_ecg"))
    assert not mutants.Mutant("user basis").equivalent(audit_suite.generated("linear"))


def _spherical(scale, d):
    def sample(count, rng):
        direction = rng.standard_normal((count, d))
        direction /= numpy.linalg.norm(direction, axis=1, keepdims=True)
        return scale * rng.gamma(d, size=count)[:, None] * direction
    return sample


def test_conformance_interval_covers_the_true_scale_and_detects_two_percent():
    exact = conformance("exact", _spherical(2.0, 5), "GP", 2.0, 5, draws=60000, alpha=1e-6)
    lo, hi = exact.interval
    assert not exact.violated and lo < 2.0 < hi
    assert abs(exact.detectable - stats.norm.isf(1e-6 / exact.tests / 2) / math.sqrt(3e5)) < 1e-12
    small = conformance("x0.98", _spherical(1.96, 5), "GP", 2.0, 5, draws=60000, alpha=1e-6)
    assert small.violated and small.failed[0].startswith("scale") and small.interval[1] < 2.0


def test_conformance_sees_a_correlated_gaussian_and_anisotropic_directions():
    def correlated(count, rng):
        z = rng.standard_normal((count, 3))
        z[:, 1] = 0.97 * z[:, 1] + 0.243 * z[:, 0]
        return z
    report = conformance("corr", correlated, "Gaussian", 1.0, 3, draws=30000, alpha=1e-6)
    assert any(name.startswith("covariance") for name in report.failed)

    def squashed(count, rng):
        return _spherical(1.0, 3)(count, rng) * numpy.array([1.1, 1.0, 0.9])
    report = conformance("squashed", squashed, "GP", 1.0, 3, draws=30000, alpha=1e-6)
    assert any(name.startswith("direction KS along axis") for name in report.failed)


def test_clopper_pearson_bounds_against_their_definition():
    lower, upper = clopper_pearson(30, 1000, 1e-3)
    assert abs(stats.binom.sf(29, 1000, lower) - 1e-3) < 1e-9
    assert abs(stats.binom.cdf(30, 1000, upper) - 1e-3) < 1e-9
    assert clopper_pearson(0, 50, 0.01) == (0.0, clopper_pearson(0, 50, 0.01)[1])


def test_renyi_bound_matches_its_minimization():
    claim = Claim("CGP", 0.5)
    q, distance = 1e-3, 1.5
    grid = numpy.linspace(1.0001, 50, 200000)
    brute = numpy.min(numpy.exp((grid - 1) * 0.5 * distance ** 2 + (grid - 1) / grid * math.log(q)))
    assert abs(claim.allowed(q, distance) / brute - 1) < 1e-6


def test_identical_mechanisms_are_never_flagged():
    def same(count, rng):
        return rng.standard_normal((count, 3))
    result = audit_pair(same, same, Claim("GP", 0.01), 0.01, samples=20000)
    assert not result.violated and result.certified_loss < 0.2


def test_heavy_tail_event_certifies_a_rare_leak():
    def leaky(sign):
        def sample(count, rng):
            out = rng.laplace(size=(count, 1)) + sign * 0.05
            out[rng.random(count) < 1e-3, 0] = sign * 1e6
            return out
        return sample
    result = audit_pair(leaky(-1), leaky(1), Claim("GP", 1.0), 0.1, samples=200000,
                        tail=float(stats.gamma.isf(1e-12, 1)))
    assert result.violated and "projection" in result.event


@pytest.mark.slow
def test_power_study_flags_every_mutant_and_passes_every_mechanism(capsys):
    results = audit_suite.run_power("full")
    with capsys.disabled():
        print("\n" + audit_suite.format_power(results))
    assert all(audit.violated == mutant for _, audit, mutant in results), \
        [a.name for _, a, m in results if a.violated != m]
    bound, _ = audit_suite.false_alarm_bound([a for _, a, _ in results])
    assert bound <= 1e-6 * (1 + 1e-12)


def test_audit_command_prints_the_bound_of_the_tests_it_ran(capsys):
    from gpcompiler.cli import main
    status = main(["audit", "specs/linear.toml", "--quick", "--draws", "5000", "--samples", "2000",
                   "--alpha", "1e-4"])
    out = capsys.readouterr().out
    assert status == 0 and "| linear (GP) |" in out and "| linear (CGP) |" in out
    line = next(x for x in out.splitlines() if x.startswith("false-alarm probability"))
    # 2 audits x (10 black-box bounds + 11 or 13 conformance tests), sharing 1e-4 in all
    assert "<= 0.0001 (Bonferroni over the 44 tests of 2 audits actually run)" in line
    status = main(["audit", "specs/linear.toml", "--epsilon", "1", "--no-conformance",
                   "--samples", "2000"])
    out = capsys.readouterr().out
    assert status == 0 and "<= 1e-06 (Bonferroni over the 10 tests of 1 audits" in out


@pytest.mark.parametrize("model", ["GP", "CGP"])
def test_step_conformance_sees_noise_confined_to_two_coordinates_or_shared(model):
    """Second review: a final release whose noise has the right radius but lies in two
    coordinates (GP), or is one draw shared by every coordinate (CGP), passed the radius
    and per-coordinate tests; the random and all-ones direction tests fail it."""
    from gpcompiler.adaptive import select
    from gpcompiler.audit.conformance import StepRecorder, steps_report

    def confined(privatize_vector):
        def mutated(vector, ledger, label, share, *, rng, **keywords):
            out = privatize_vector(vector, ledger, label, share, rng=rng, **keywords)
            if "final" not in label or numpy.size(vector) < 3:
                return out
            vector = numpy.asarray(vector, dtype=float)
            noise, flat = numpy.ravel(out - vector), numpy.ravel(vector).copy()
            if model == "GP":
                flat[:2] += noise[:2] * numpy.linalg.norm(noise) / numpy.linalg.norm(noise[:2])
            else:
                flat += noise[0]
            return flat.reshape(vector.shape)
        return mutated
    module = audit_suite.generated("legendre10")
    t = numpy.linspace(-1, 1, 33)
    budget = {"epsilon": 400.0} if model == "GP" else {"rho": 40000.0}
    rng = numpy.random.default_rng(5)
    reports = []
    for mutate in (False, True):
        recorder = StepRecorder()
        with (mutants.patched(select, "privatize_vector", confined) if mutate
              else contextlib.nullcontext()), \
                mutants.patched(select, "privatize_vector", recorder.release_spy):
            for _ in range(300):
                select.priv_func_select(t, numpy.cos(9 * t), module, rng=rng, **budget)
        reports.append(steps_report(model, recorder, 1e-7))
    assert not reports[0].violated
    assert reports[1].violated and any("direction" in name for name in reports[1].failed)
