"""PrivFuncSelect's public budget split (docs/design.md, "PrivFuncSelect's budget"): any
split composes to the budget exactly, the final release gets what is left, the noise
target is the final release's expected noise norm, and bad splits are one-line errors."""
import math
from fractions import Fraction

import numpy
import pytest
from hypothesis import given, settings, strategies

from conftest import generated
from gpcompiler import cli, priv_func_select
from gpcompiler.cli import privatize as cli_privatize
from gpcompiler.adaptive import select
from gpcompiler.adaptive.ledger import PrivacyLedger
from gpcompiler.adaptive.noise import privatize_vector

T = numpy.linspace(-1.0, 1.0, 65)
Y = 3.0 * numpy.cos(4 * T) + T ** 3


@pytest.mark.parametrize("split, message", [
    ((0.5, 0.5), "four fractions"),
    (("1/4", "1/4", "1/4", "1/8"), "sum to exactly 1"),
    ((0.5, 0.25, 0.25, 0.5), "sum to exactly 1"),
    ((-0.25, 0.5, 0.25, 0.5), ">= 0"),
    ((0, 0.5, 0.25, 0.25), "positive share"),
    ((0.25, 0.5, 0, 0.25), "both zero or both positive"),
    ((0.5, 0, 0, 0.5 + 1e-17), None),      # 0.5 + 1e-17 is the float 0.5: exact sum 1
    (("a", 0, 0, 1), "four fractions"),
    ((True, 0, 0, 0), "four fractions"),
])
def test_bad_splits_are_refused_with_the_reason(split, message):
    if message is None:
        assert select.check_split(split) == (Fraction(1, 2), 0, 0, Fraction(1, 2))
        return
    with pytest.raises(ValueError, match=message):
        select.check_split(split)


def test_cli_default_is_the_library_default_and_a_bad_split_is_one_line(capsys):
    assert cli_privatize.DEFAULT_SPLIT == select.DEFAULT_SPLIT
    with pytest.raises(SystemExit):
        cli.main(["privatize", "specs/legendre10.toml", "missing.csv", "--epsilon", "1",
                  "--method", "select", "--split", "1/2,1/2,0,0"])
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "--split" in error[0] and "positive share" in error[0]


_SHARE = strategies.fractions(min_value=0, max_value=1, max_denominator=64)


@settings(max_examples=25, deadline=None)
@given(shares=strategies.tuples(_SHARE, _SHARE, _SHARE), prune=strategies.booleans(),
       model=strategies.sampled_from(["GP", "CGP"]), seed=strategies.integers(0, 2 ** 16))
def test_any_split_composes_to_the_budget_and_the_final_release_takes_the_rest(
        shares, prune, model, seed):
    total = sum(shares) + 1
    split = [shares[0] / total + Fraction(1, 64), shares[1] / total, shares[2] / total]
    if not prune:
        split[1] = split[2] = Fraction(0)
    split.append(1 - sum(split))
    if split[3] <= 0 or (split[1] == 0) != (split[2] == 0):
        return
    budget = 2.0 if model == "GP" else 0.5
    keyword = {"epsilon": budget} if model == "GP" else {"rho": budget}
    result = priv_func_select(T, Y, generated("legendre10"), split=split,
                              rng=numpy.random.default_rng(seed), **keyword)
    ledger = result.ledger
    assert ledger.spent <= Fraction(budget)                        # exact, Fractions
    assert Fraction(budget) - ledger.spent < Fraction(budget) / 2 ** 40   # nothing left idle
    labels = [s.label for s in ledger.spends]
    pruned = split[1] > 0 and dict(result.details)["first_size"] > 1
    assert labels == ["select: size: SVT"] + (["select: first release",
                                               "select: pruning: SVT"] if pruned else []) \
        + ["select: final release"]
    assert ledger.spends[0].cost <= Fraction(budget) * split[0]
    if pruned:
        assert ledger.spends[1].cost <= Fraction(budget) * split[1]
        assert ledger.spends[2].cost <= Fraction(budget) * split[2]
    assert ledger.spends[-1].cost >= Fraction(budget) * split[3] * (1 - Fraction(1, 2 ** 40))


@pytest.mark.parametrize("model, share", [("GP", 0.7), ("CGP", 0.3)])
def test_noise_target_is_the_expected_noise_norm_of_the_release(model, share):
    """GP: E||Z||/eps = n r/eps exactly (||Z|| ~ Gamma(n r)); CGP: sqrt(E||N||^2) =
    sqrt(n r/(2 rho)); both against 1500 releases of zeros through privatize_vector per
    (n, r) (5 standard errors: 4.5% of the GP target at n r = 6, far inside a wrong
    formula's miss)."""
    rng = numpy.random.default_rng(5)
    for n, r in [(1, 1), (1, 6), (2, 3)]:
        tau = select.noise_target(model, share, n)(r)
        norms = numpy.array([numpy.linalg.norm(privatize_vector(
            numpy.zeros((r, n)), PrivacyLedger(share, model), "x", share, rng=rng))
            for _ in range(1500)])
        estimate = norms.mean() if model == "GP" else math.sqrt((norms ** 2).mean())
        spread = norms.std() / math.sqrt(norms.size)
        assert abs(estimate - tau) < 5 * spread + 1e-12 * tau


def test_without_pruning_or_with_one_candidate_the_release_is_the_prefix():
    """k0 = 1 skips the first release and the pruning SVT even when the split has them
    (nothing to order): their shares go to the final release."""
    module = generated("legendre10")
    flat = numpy.full_like(T, 0.5)         # in the span of e_0: the first query crosses
    paper = (Fraction(1, 4),) * 4
    result = priv_func_select(T, flat, module, epsilon=50.0, split=paper, rng=1)
    assert dict(result.details)["first_size"] == 1 and result.basis_indices == (0,)
    assert [s.label for s in result.ledger.spends] == ["select: size: SVT",
                                                       "select: final release"]
    assert result.ledger.spends[-1].parameter >= 50.0 * 0.75 * (1 - 1e-12)
