"""The audit table (DESIGN.md, Testing principles; false-alarm probability < 1e-6 overall)."""
import math

import numpy

from gpcompiler.audit import Claim, audit_pair, clopper_pearson
from gpcompiler.audit_suite import format_table, run_suite


def test_audit_table_flags_every_negative_control_and_passes_every_mechanism(capsys):
    rows = run_suite()
    with capsys.disabled():
        print("\n" + format_table(rows))
    flagged = {row.name for row in rows if row.report.violated}
    expected = {row.name for row in rows if row.should_flag}
    assert flagged == expected
    assert len(expected) == 5 and len(rows) - len(expected) >= 25
    counterexample = next(r for r in rows if "Sec. 3.1" in r.name).report.pairs[0]
    assert counterexample.certified_loss > 1.5 * counterexample.claimed_loss


def test_clopper_pearson_bounds_against_their_definition():
    from scipy import stats
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
