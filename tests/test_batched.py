"""Batched runs of the adaptive algorithms (gpcompiler/audit/batched.py) against the
algorithms run one at a time: the same distribution (two-sample chi-square on the choices
each run makes, KS on a released value) and the same ledger and noise scales."""
import collections
import math
from fractions import Fraction

import numpy
import pytest
from scipy import stats

from gpcompiler import adaptive; from gpcompiler.audit import suite as audit_suite, mutants
from gpcompiler.audit import batched
from gpcompiler.adaptive import seg, select
from gpcompiler.runtime.rounding import ceil_float, ceil_sqrt

PAPER_SPLIT = (Fraction(1, 4),) * 4    # with the pruning steps (the paper's Alg. 3 split)
LEVEL = 1e-4       # a correct sampler fails one of these comparisons w.p. < 1e-4 per test


def _bump(interval, norm, samples=33):
    t, _, y = audit_suite._curve_pair(norm, interval)
    return t, y


def _unbounded_curve():
    """A curve on [-3, 3] (the clipping SVT's first two queries are not zero)."""
    t = numpy.linspace(-3.0, 3.0, 61)
    return t, numpy.cos(t) * numpy.exp(-t * t / 4)


CASES = {
    "select": (lambda: _bump((-1.0, 1.0), 5.0), "legendre10",
               adaptive.priv_func_select, batched.SelectRuns, ("first_size", "size"), 400),
    "seg": (lambda: _bump((0.0, 1.0), 6.0), "linear",
            adaptive.priv_func_seg, batched.seg_runs, ("level", "segments"), 500),
    "unbounded": (_unbounded_curve, "linear",
                  adaptive.priv_func_unbounded, batched.unbounded_runs,
                  ("half_width", "segments"), 300),
}


def _choices(result, names):
    details = dict(result.details)
    details["size"] = len(result.basis_indices or ())
    details["segments"] = len(result.breakpoints) - 1 if result.breakpoints is not None else 0
    return tuple(details[name] for name in names)


def _homogeneity(first, second):
    """Two-sample chi-square p-value of two lists of categories (categories expected < 5
    times in the smaller sample pooled)."""
    a, b = collections.Counter(first), collections.Counter(second)
    scale = len(first) / (len(first) + len(second))
    common = [k for k in set(a) | set(b) if (a[k] + b[k]) * scale >= 5]
    rows = [[a[k] for k in common] + [len(first) - sum(a[k] for k in common)],
            [b[k] for k in common] + [len(second) - sum(b[k] for k in common)]]
    if rows[0][-1] + rows[1][-1] == 0:
        rows = [r[:-1] for r in rows]
    return stats.chi2_contingency(rows)[1]


def _real(case, keyword, seed=11):
    """The algorithm run one at a time."""
    make, spec, real, _, _, runs = CASES[case]
    t, y = make()
    module = audit_suite.generated(spec)
    rng = numpy.random.default_rng(seed)
    return [real(t, y, module, rng=rng, **keyword) for _ in range(runs)]


def _batched(case, keyword):
    make, spec, _, build, _, _ = CASES[case]
    t, y = make()
    return build(t, y, audit_suite.generated(spec), **keyword)


GRID = {"select": numpy.linspace(-1, 1, 9), "seg": numpy.linspace(0, 1, 9),
        "unbounded": numpy.linspace(-4, 4, 9)}


@pytest.mark.parametrize("case, keyword", [
    ("select", {"epsilon": 1.0}), ("select", {"rho": 0.5}),
    ("select", {"epsilon": 1.0, "split": PAPER_SPLIT}),
    ("seg", {"epsilon": 1.0}), ("seg", {"rho": 0.5}),
    ("unbounded", {"epsilon": 2.0}),
])
def test_batched_runs_have_the_distribution_of_the_algorithm(case, keyword):
    names, count = CASES[case][4], CASES[case][5]
    real = _real(case, keyword)
    runs = _batched(case, keyword).sample(40000, numpy.random.default_rng(12), GRID[case])
    real_choices = [_choices(r, names) for r in real]
    batched_choices = list(zip(*(runs.details[name].tolist() for name in names)))
    assert len(set(real_choices)) >= 4, "the case must exercise several branches"
    assert _homogeneity(real_choices, batched_choices) > LEVEL
    values = numpy.array([r.evaluate(GRID[case]) for r in real]).reshape(count, -1)
    for column in (2, 4, 6):
        assert stats.ks_2samp(values[:, column], runs.values[:, column, 0]).pvalue > LEVEL / 3
    signatures = {_signature(ledger) for ledger in runs.ledgers}
    assert {_signature(r.ledger) for r in real} <= signatures


def _signature(ledger):
    return tuple((s.label, s.model, s.parameter, s.cost) for s in ledger.spends)


def test_the_comparison_sees_a_sampler_with_halved_svt_noise():
    """The same two-sample test, with as many correct runs as above, rejects a sampler of
    a mutant (the level SVT with half its noise)."""
    names, count = CASES["seg"][4], CASES["seg"][5]
    correct = _batched("seg", {"epsilon": 1.0}).sample(count, numpy.random.default_rng(11),
                                                         GRID["seg"])
    with mutants.first_svt_noise_halved(seg):
        runs = _batched("seg", {"epsilon": 1.0}).sample(40000, numpy.random.default_rng(12),
                                                          GRID["seg"])
    p = _homogeneity(list(zip(*(correct.details[n].tolist() for n in names))),
                     list(zip(*(runs.details[n].tolist() for n in names))))
    assert p < 1e-6


class _ScaleRecorder:
    """A generator proxy keeping the scale of every Laplace draw (a replay object: the
    algorithm draws its noise as floats through it)."""

    audit_replay = True

    def __init__(self, rng):
        self.rng, self.scales = rng, []

    def laplace(self, loc=0.0, scale=1.0, size=None):
        self.scales.append(scale)
        return self.rng.laplace(loc, scale, size)

    def __getattr__(self, name):
        return getattr(self.rng, name)


@pytest.mark.parametrize("keyword", [{"epsilon": 1.0}, {"rho": 0.5}])
def test_select_scales_are_the_ones_the_algorithm_draws_and_its_ledger_charges(keyword):
    t, y = CASES["select"][0]()
    module = audit_suite.generated("legendre10")
    keyword = dict(keyword, split=PAPER_SPLIT)
    recorder = _ScaleRecorder(numpy.random.default_rng(3))
    real = adaptive.priv_func_select(t, y, module, rng=recorder, **keyword)
    plan = batched.SelectRuns(t, y, module, **keyword)
    assert plan.size[2] == plan.pruning == tuple(recorder.scales[:2])
    assert set(recorder.scales) == set(plan.pruning)
    assert _signature(real.ledger) in {_signature(ledger) for ledger in plan.ledgers}
    pruned = dict(real.details)["first_size"] > 1
    share = next(s.parameter for s in real.ledger.spends if s.label == "select: final release")
    expected = ceil_float(1 / Fraction(share)) if "epsilon" in keyword else \
        ceil_sqrt(1 / (2 * Fraction(share)))
    assert (plan.pruned_final if pruned else plan.final) == expected
    assert plan.first == plan.pruned_final          # both a quarter: the paper's split
    assert sum(s.cost for s in plan.ledgers[1].spends) <= Fraction(real.ledger.budget)
    assert 0 <= plan.ledgers[0].remaining < Fraction(plan.ledgers[0].budget) / 2 ** 50  # all used
    with mutants.first_svt_noise_halved(select):
        halved = batched.SelectRuns(t, y, module, **keyword)
    assert halved.size[2] == tuple(s / 2 for s in plan.size[2]) and halved.pruning == plan.pruning


def test_seg_release_scale_follows_the_ledger_and_a_patched_mutant():
    t, y = CASES["seg"][0]()
    module = audit_suite.generated("linear")
    grid = GRID["seg"]
    plan = batched.seg_runs(t, y, module, epsilon=1.0)
    runs = plan.sample(2000, numpy.random.default_rng(0), grid)
    ends = [e for e in plan.replays.values() if isinstance(e, batched._End)]
    assert len(ends) == len(runs.ledgers) >= 3
    for end in ends:
        final = end.result.ledger.spends[-1]
        assert final.label == "seg: final release" and end.result.ledger.spent <= 1
        assert end.scale == ceil_float(1 / Fraction(final.parameter))
    with mutants.final_release_half_charged(seg):
        mutant = batched.seg_runs(t, y, module, epsilon=1.0)
        mutant.sample(2000, numpy.random.default_rng(0), grid)
    scales = {e.result.ledger.spends[-1].parameter: e.scale for e in mutant.replays.values()
              if isinstance(e, batched._End)}
    assert all(scale == ceil_float(1 / Fraction(p)) / 2 for p, scale in scales.items())


def test_a_replay_refuses_anything_but_adding_scaling_and_comparing_noise():
    script = batched._Script(())
    with pytest.raises(TypeError):
        bool(script.laplace(0.0, 1.0))
    with pytest.raises(TypeError):
        script.laplace(0.0, 1.0, size=3)
    with pytest.raises(batched._Undecided):
        if math.sqrt(2.0) + script.standard_normal() * 2.0 > 1.0:
            pass
