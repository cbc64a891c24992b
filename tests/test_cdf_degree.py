"""degree="auto" of the direct CDF estimator (gpcompiler/cdf/degree.py; docs/design.md,
"CDF degree chosen privately"): the score's sensitivity derived exactly and checked by
brute force, the exponential mechanism's law, the ledger of a release, the joint CDF, the
CLI, utility on a real column and the auditor on the mechanism and on an uncharged mutant."""
import gzip
import math
from fractions import Fraction
from importlib import resources

import mpmath
import numpy
import pytest
import sympy
from scipy import stats

from gpcompiler.audit import suite as audit_suite, mutants; from gpcompiler import cdf
from gpcompiler.cdf import degree
from gpcompiler.cdf.estimators import Statistics
from gpcompiler.cdf.joint import computed_sum_sensitivity
from gpcompiler.cdf.release import record_contributions
from gpcompiler.io.curves import read_column


def test_the_largest_tail_above_degree_2_of_a_step_is_one_eighth_exactly():
    """g_2^2 = max over x in [-1, 1] of ||P_(2, oo) 1_[x, 1]||^2 = (1 - x) - sum_{k<=2}
    (int_x^1 e_k)^2, a polynomial maximised exactly (critical points and ends)."""
    x, s = sympy.symbols("x s", real=True)
    tail = (1 - x) - sum(sympy.integrate(sympy.sqrt(sympy.Rational(2 * k + 1, 2))
                                         * sympy.legendre(k, s), (s, x, 1)) ** 2
                         for k in range(3))
    tail = sympy.expand(tail)
    points = [r for r in sympy.solve(sympy.diff(tail, x), x) if r.is_real and -1 <= r <= 1]
    values = [sympy.nsimplify(tail.subs(x, p)) for p in points + [-1, 1]]
    assert max(values) == degree.TAIL_SUP_SQUARED_2 == Fraction(1, 8)
    assert tail.subs(x, 0) == sympy.Rational(1, 8)


def test_weighted_tails_of_every_larger_candidate_stay_below_the_k2_bound():
    """(K + 1) g_K^2 <= 3 g_2^2 = 3/8 for every candidate (the score's sensitivity): the
    Ehlich-Zeller certificate is below 3/8 for K >= 4, above the maximum over a 2x finer
    grid, and its K = 2 value is within 1% of 3/8; the sums of squares agree with the exact
    P_n(0) at x = 0, where the maximum sits."""
    certified = degree.weighted_tail_certificate()
    assert degree.WEIGHTED_TAIL_SUP_SQUARED == Fraction(3, 8)
    assert max(certified[1:]) < 0.35 < 0.375 and 0.37 < certified[0] < 0.376
    top = max(degree.CANDIDATES)
    fine = numpy.linspace(-1, 1, 2 * 16 * (2 * top + 2) + 1)
    squares = record_contributions(fine, top, "direct") ** 2
    for k, bound in zip(degree.CANDIDATES[:-1], certified):
        assert (k + 1) * squares[:, k + 1:].sum(axis=1).max() <= bound

    def p_at_zero(n):   # P_n(0) exactly: 0 for odd n, (-1)^(n/2) C(n, n/2) / 2^n
        return 0 if n % 2 else Fraction((-1) ** (n // 2) * math.comb(n, n // 2), 2 ** n)
    at_zero = [((p_at_zero(k - 1) if k else 1) - p_at_zero(k + 1)) ** 2 / (2 * (2 * k + 1))
               for k in range(top + 1)]
    zero = numpy.flatnonzero(fine == 0)[0]
    for k in (2, 24, 128):
        exact = (k + 1) * sum(at_zero[k + 1:])
        assert abs((k + 1) * squares[zero, k + 1:].sum() - exact) <= 1e-13 * exact


def test_score_sensitivity_holds_by_brute_force_and_is_not_loose_by_much():
    """Every candidate's score moves by at most sqrt(3/2)/N when one record moves, over
    small data sets and every move on a grid; the largest move seen is within 1.7x of it."""
    rng = numpy.random.default_rng(4)
    grid = numpy.linspace(-1, 1, 81)
    top = max(degree.CANDIDATES)
    worst = 0.0
    for n in (3, 7, 20):
        bound = degree.score_sensitivity(n)
        assert bound == pytest.approx(math.sqrt(1.5) / n, rel=1e-15) and \
            Fraction(bound) ** 2 * n * n >= Fraction(3, 2)
        for _ in range(3):
            x = rng.uniform(-1, 1, n)
            base = record_contributions(x, top, "direct").sum(axis=0) / n
            moved = numpy.repeat(x[None], grid.size, axis=0)
            moved[:, 0] = grid
            rows = record_contributions(moved.ravel(), top, "direct").reshape(grid.size, n, -1)
            for coefficients in rows.sum(axis=1) / n:
                for noise in (0.0, 1e-3):
                    energy = [noise * (k + 1) for k in degree.CANDIDATES]
                    change = numpy.abs(
                        degree.tail_scores(coefficients, degree.CANDIDATES, energy)
                        - degree.tail_scores(base, degree.CANDIDATES, energy))
                    assert change.max() <= bound * (1 + 1e-9)
                    worst = max(worst, change.max() / bound)
    assert worst > 0.6   # so the unweighted bound 1/(sqrt(2) N) = 0.577 of it is exceeded


def _exact_direct_sums(x, top, digits=60):
    """sum_n int_(x_n)^1 e_k, k = 0..top, at ``digits`` digits (Legendre recurrence)."""
    with mpmath.workdps(digits):
        sums = [mpmath.mpf(0)] * (top + 1)
        for value in map(mpmath.mpf, x):
            p = [mpmath.mpf(1), value]
            for n in range(1, top + 1):
                p.append(((2 * n + 1) * value * p[n] - n * p[n - 1]) / (n + 1))
            for k in range(top + 1):
                sums[k] += ((p[k - 1] if k else 1) - p[k + 1]) / mpmath.sqrt(2 * (2 * k + 1))
        return sums


def test_computed_scores_lie_within_score_error_of_the_exact_scores():
    """The scores choose_degree ranks, computed from the computed direct sums at
    Kmax = 256, lie within score_error (eta) of the exact scores of the exact coefficients
    (60 digits) for records at and next to the ends and random ones; the exponential
    mechanism then runs with sqrt(3/2)/N + 2 eta, rounded up, so the choice is epsilon_s-DP
    for the computed scores (a mechanism given score_sensitivity alone fails here)."""
    rng = numpy.random.default_rng(12)
    x = numpy.concatenate([[-1.0, 1.0, 1 - 2.0 ** -52, -1 + 2.0 ** -52, 0.0, 2.0 ** -1074],
                           rng.uniform(-1, 1, 34)])
    top, n = max(degree.CANDIDATES), x.size
    sums = Statistics.from_data(x, lo=-1.0, hi=1.0, degree=top, method="direct").sums
    energy = degree.noise_energy(n, 0.8, 1e-6, degree.CANDIDATES)
    computed = degree.tail_scores(sums / n, degree.CANDIDATES, energy)
    eta = degree.score_error(n, degree.CANDIDATES, energy)
    with mpmath.workdps(60):
        c = [v / n for v in _exact_direct_sums(x, top)]
        for k, energy_k, value in zip(degree.CANDIDATES, energy, computed):
            exact = -mpmath.sqrt((k + 1) * sum(v * v for v in c[k + 1:]) + mpmath.mpf(energy_k))
            assert abs(mpmath.mpf(float(value)) - exact) <= eta
    seen = []

    def mechanism(values, sensitivity, epsilon, rng):
        seen.append(sensitivity)
        return 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(degree, "exponential_mechanism", mechanism)
        degree.choose_degree(sums / n, n, 1.0, 1e-6, rng)
    release_energy = degree.noise_energy(n, degree.split_budget(1.0)[1], 1e-6, degree.CANDIDATES)
    assert Fraction(seen[0]) >= Fraction(degree.score_sensitivity(n)) + 2 * Fraction(
        degree.score_error(n, degree.CANDIDATES, release_energy)) > Fraction(
        degree.score_sensitivity(n))


def test_exponential_mechanism_draws_its_law():
    values = numpy.array([-0.3, -0.1, -0.2, -0.1001, -5.0])
    rng = numpy.random.default_rng(8)
    draws = [degree.exponential_mechanism(values, 0.05, 1.0, rng) for _ in range(3000)]
    weights = numpy.exp(values / 0.1)
    expected = weights / weights.sum() * len(draws)
    counts = numpy.bincount(draws, minlength=values.size)
    keep = expected > 5
    assert stats.chisquare(counts[keep], expected[keep] * counts[keep].sum()
                           / expected[keep].sum()).pvalue > 1e-4
    assert degree.exponential_mechanism(numpy.array([-1.0, 0.0]), 1e-6, 1.0, rng) == 1


def test_auto_release_charges_both_steps_and_uses_the_prefix_of_the_sums():
    rng = numpy.random.default_rng(1)
    x = rng.beta(2, 5, 3000)
    found = cdf.estimate(x, lo=0.0, hi=1.0, epsilon=1.0, delta=1e-5, degree="auto", rng=2)
    (selection, zero, n1), (release, delta, n2) = found.spent
    assert found.degree in degree.CANDIDATES and found.epsilon == 1.0 and zero == 0.0
    assert (n1, n2, delta) == (3000, 3000, 1e-5)
    assert Fraction(selection) + Fraction(release) <= 1 and selection == pytest.approx(0.2)
    top = Statistics.from_data(x, lo=0.0, hi=1.0, degree=max(degree.CANDIDATES))
    chosen = Statistics("direct", found.degree, 0.0, 1.0, 3000, top.sums[:found.degree + 1])
    assert found.sigma == cdf.analytic_gaussian_sigma(release, 1e-5,
                                                      chosen.sum_sensitivity()) / 3000
    for k in (2, 24):
        own = Statistics.from_data(x, lo=0.0, hi=1.0, degree=k).sums
        assert numpy.allclose(top.sums[:k + 1], own, rtol=0, atol=1e-9 * x.size)
    with pytest.raises(ValueError, match="direct method"):
        cdf.estimate(x, lo=0.0, hi=1.0, epsilon=1.0, delta=1e-5, degree="auto", method="moments")
    with pytest.raises(ValueError, match="epsilon >="):
        cdf.estimate(x, lo=0.0, hi=1.0, epsilon=0.01, delta=1e-5, degree="auto")


def test_auto_on_cps_wages_beats_the_64_bin_histogram():
    """The bundled CPS 1988 wages in [0, 2500] at epsilon = 1 (5 seeds each): mean
    Kolmogorov distance of auto below the 64-bin histogram's and within 1.25x the best of
    K = 8, 16 (about the best fixed K here, docs/howto/choose-basis-and-budget.md)."""
    raw = resources.files("gpcompiler").joinpath("data/AER__CPS1988.csv.gz").read_bytes()
    lines = gzip.decompress(raw).decode().splitlines()
    column = lines[0].split(",").index('"wage"') if '"wage"' in lines[0] else \
        lines[0].split(",").index("wage")
    wages = numpy.array([float(line.split(",")[column]) for line in lines[1:]])

    def ks(**options):
        return numpy.mean([cdf.distances(cdf.estimate(
            wages, lo=0.0, hi=2500.0, epsilon=1.0, delta=1e-5, rng=seed, **options), wages)[0]
            for seed in range(5)])
    auto = ks(degree="auto")
    assert auto < ks(method="histogram", bins=64)
    assert auto < 1.25 * min(ks(degree=8), ks(degree=16))


def test_joint_auto_chooses_a_degree_per_column_and_charges_the_whole_epsilon(monkeypatch):
    """Each column's choice runs with the computed scores' sensitivity (above sqrt(3/2)/N
    by the float error, as in 1-D), and the whole release is charged."""
    rng = numpy.random.default_rng(3)
    smooth, rough = rng.uniform(0, 1, 4000), rng.choice([0.1, 0.2, 0.6, 0.9], 4000)
    data = numpy.stack([smooth, rough], axis=1)
    shipped, seen = degree.exponential_mechanism, []
    monkeypatch.setattr(degree, "exponential_mechanism",
                        lambda values, sensitivity, *rest: seen.append(sensitivity)
                        or shipped(values, sensitivity, *rest))
    found = cdf.estimate(data, lo=[0, 0], hi=[1, 1], epsilon=1.0, delta=1e-5, degree="auto",
                         rng=5)
    assert len(seen) == 2 and all(Fraction(v) > Fraction(degree.score_sensitivity(4000))
                                  for v in seen)
    assert found.epsilon == 1.0 and len(found.degree) == 2
    assert all(d in degree.CANDIDATES and (d + 1) ** 2 <= 100_000 for d in found.degree)
    assert found.sigma == cdf.analytic_gaussian_sigma(degree.split_budget(1.0)[1], 1e-5,
                                                      computed_sum_sensitivity(found.degree,
                                                                               4000)) / 4000
    (first, d1, n1), (second, d2, n2), (release, delta, n3) = found.spent
    selection, planned = degree.split_budget(1.0)
    assert first == second > 0 and 2 * Fraction(first) <= Fraction(selection)
    assert (d1, d2, delta, n1, n2, n3) == (0.0, 0.0, 1e-5, 4000, 4000, 4000)
    assert release == planned and Fraction(first) + Fraction(second) + Fraction(release) <= 1
    fixed = cdf.estimate(data, lo=[0, 0], hi=[1, 1], epsilon=1.0, delta=1e-5, degree=4, rng=5)
    histogram = cdf.estimate(data, lo=[0, 0], hi=[1, 1], epsilon=1.0, delta=1e-5,
                             method="histogram", rng=5)
    assert fixed.spent == histogram.spent == ((1.0, 1e-5, 4000),)


def test_cli_degree_auto(cli, tmp_path):
    out = tmp_path / "cdf.json"
    status, said, _ = cli("cdf", "bundled:cps1988", "--lo", "0", "--hi", "2500", "--epsilon",
                          "1", "--delta", "1e-5", "--degree", "auto", "--seed", "3", "-o",
                          str(out))
    assert status == 0 and "chosen privately with epsilon 0.2" in said
    import json
    release = json.loads(out.read_text())
    assert release["degree"] in degree.CANDIDATES
    assert release["degree_selection_epsilon"] == pytest.approx(0.2)
    seen = []   # the stated selection noise is the one the mechanism draws with
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(degree, "exponential_mechanism",
                      lambda values, sensitivity, epsilon, rng: seen.append(
                          (sensitivity, degree.gumbel_scale(sensitivity, epsilon))) or 0)
        cdf.estimate(numpy.clip(read_column("bundled:cps1988", "wage"), 0, 2500), lo=0.0,
                     hi=2500.0, epsilon=1.0, delta=1e-5, degree="auto", rng=1)
    assert release["degree_selection_noise"] == {"score_sensitivity": seen[0][0],
                                                 "gumbel_scale": seen[0][1]}
    status, _, err = cli("cdf", "bundled:cps1988", "--lo", "0", "--hi", "2500", "--epsilon",
                         "1", "--delta", "1e-5", "--degree", "auto", "--method", "moments")
    assert status != 0 and len(err.strip().splitlines()) == 1 and \
        "--degree auto needs --method direct, got --method moments" in err
    status, _, err = cli("cdf", "bundled:cps1988", "--degree", "autoo", "--lo", "0", "--hi", "1",
                         "--epsilon", "1", "--delta", "1e-5")
    assert status == 2 and 'an integer in 1..1000 or "auto"' in err


def test_the_audit_pair_separates_the_uncharged_mutant():
    """The mutant's degree is a function of the data: 4 on one side, 2 on the other (so a
    black box sees it with certainty); the mechanism's is random on both."""
    data, moved = audit_suite.cdf_auto_pair()
    with mutants.cdf_degree_uncharged():
        chosen = [cdf.estimate(x, lo=0.0, hi=1.0, epsilon=1.0, delta=1e-5, degree="auto",
                               rng=0) for x in (data, moved)]
    assert [c.degree for c in chosen] == [4, 2] and chosen[0].spent[1][0] == 1.0
    spread = {cdf.estimate(data, lo=0.0, hi=1.0, epsilon=1.0, delta=1e-5, degree="auto",
                           rng=seed).degree for seed in range(20)}
    assert len(spread) >= 3


@pytest.mark.slow
def test_auditor_passes_auto_and_flags_the_uncharged_mutant():
    """End to end with the auditor (quick mode, about 10 s each)."""
    correct = audit_suite.cdf_auto_audit(False, mode="quick", alpha=1e-6)
    mutant = audit_suite.cdf_auto_audit(True, mode="quick", alpha=1e-6)
    assert not correct.black_box.violated
    assert mutant.black_box.violated and mutant.black_box.pairs[0].certified_loss > 1.5


@pytest.mark.slow
def test_auto_degree_table_beats_the_histogram_on_every_column():
    """The table of docs/howto/choose-basis-and-budget.md with 3 seeds (about a minute):
    auto below the 64-bin histogram on every column."""
    from gpcompiler.experiments import auto_degree
    rows = auto_degree.table(3).splitlines()[2:]
    assert len(rows) == len(auto_degree.COLUMNS)
    assert all(float(row.split("|")[-2]) < 1 for row in rows)
