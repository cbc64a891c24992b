"""Privacy ledger: every noisy step records its spend; overspending raises before noise.

Amounts are kept as exact fractions of the float parameters actually used, so the ledger
total is exact. Shares of a budget are rounded *down* to a float (a smaller epsilon or rho
means more noise), which keeps the exact total <= the budget. In a CGP ledger a GP step
with parameter epsilon costs epsilon^2/2 (epsilon-GP implies epsilon^2/2-CGP).
"""
import math
import uuid
from dataclasses import dataclass
from fractions import Fraction

from ..errors import UserError
from ..runtime.rounding import ceil_sqrt, floor_float


class BudgetExceededError(UserError, ValueError):
    """A step would spend more than the ledger's remaining budget."""


@dataclass(frozen=True)
class Spend:
    """One noisy step: its label, the model and parameter it used, its cost, and its noise
    (family, scale, sensitivity; sensitivity None: per unit distance)."""
    label: str
    model: str
    parameter: float
    cost: Fraction
    noise: tuple = (None, None, None)


@dataclass(frozen=True)
class Release:
    """One released vector (docs/clipping.md): its clip bound B, the distance slack
    2 eta B of its float projection (loss <= epsilon (d + slack); None: not stated) and
    its lattice step."""
    label: str
    bound: float
    slack: float
    lattice: float


def _gp_epsilon(cost):
    """The exact epsilon of a GP step of CGP cost epsilon^2/2 (a rational square root)."""
    twice = 2 * Fraction(cost)
    return Fraction(math.isqrt(twice.numerator), math.isqrt(twice.denominator))


SMALLEST_BUDGET = 1e-100   # below this, noise scales leave float64 arithmetic


def check_budget(epsilon, rho):
    """Return ("GP", epsilon) or ("CGP", rho); exactly one must be a positive finite number,
    at least SMALLEST_BUDGET (the shares of smaller budgets give noise scales near the
    float64 limit, where the noise itself overflows)."""
    if (epsilon is None) == (rho is None):
        raise ValueError("pass exactly one of epsilon (GP) or rho (CGP)")
    value = epsilon if rho is None else rho
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value > 0):
        raise ValueError(f"the privacy budget must be positive and finite, got {value!r}")
    if value < SMALLEST_BUDGET:
        raise ValueError(f"a privacy budget below {SMALLEST_BUDGET:g} gives noise beyond float64 "
                         f"arithmetic, got {value!r}")
    return ("GP", float(value)) if rho is None else ("CGP", float(value))


class PrivacyLedger:
    """Budget of one model ("GP": epsilon, "CGP": rho) and the labelled steps spending it."""

    def __init__(self, budget, model):
        if model not in ("GP", "CGP"):
            raise ValueError(f"model must be 'GP' or 'CGP', got {model!r}")
        check_budget(budget if model == "GP" else None, budget if model == "CGP" else None)
        self.model = model
        self.budget = float(budget)
        self.spends = []
        self.releases = []
        self._spent = Fraction(0)

    @property
    def spent(self):
        """Exact total spent (the running sum of every recorded cost)."""
        return self._spent

    @property
    def total(self):
        return float(self.spent)

    @property
    def remaining(self):
        return Fraction(self.budget) - self.spent

    def share(self, fraction):
        """A float parameter for ``fraction`` of the budget, rounded down."""
        return floor_float(Fraction(self.budget) * Fraction(fraction))

    def _record(self, label, model, parameter, cost, noise=(None, None, None)):
        if cost <= 0:
            raise ValueError(f"{label}: a privacy parameter must be positive")
        if self._spent + cost > Fraction(self.budget):
            raise BudgetExceededError(
                f"{label}: spending {float(cost):.6g} would exceed the {self.model} budget "
                f"{self.budget:.6g} ({float(self.remaining):.6g} left)")
        self.spends.append(Spend(label, model, parameter, cost, noise))
        self._spent += cost
        return parameter

    def spend_gp(self, label, epsilon, noise=(None, None, None)):
        """Record an epsilon-GP step (costs epsilon^2/2 in a CGP ledger); returns epsilon.
        ``noise``: its (family, scale, sensitivity), for the ledger file."""
        exact = Fraction(epsilon)
        cost = exact if self.model == "GP" else exact ** 2 / 2
        return self._record(label, "GP", float(exact), cost, noise)

    def spend_cgp(self, label, rho, noise=(None, None, None)):
        """Record a rho-CGP step; only a CGP ledger accepts it. Returns rho."""
        if self.model != "CGP":
            raise BudgetExceededError(f"{label}: a CGP step cannot be charged to a GP budget")
        return self._record(label, "CGP", float(rho), Fraction(float(rho)), noise)

    def spend(self, label, amount):
        """Record a step of the ledger's own model."""
        return self.spend_gp(label, amount) if self.model == "GP" else self.spend_cgp(label, amount)

    def note_release(self, label, bound, slack, lattice):
        """Record the public facts of one released vector (bound, slack, lattice step)."""
        self.releases.append(Release(label, float(bound), None if slack is None else float(slack),
                                     float(lattice)))

    def to_jsonl(self, *, metric, spec=None, release_id=None, time=None):
        """Every step as a ledger record (docs/reference/ledger.md), one JSON line each, with
        its own model and exact cost (an SVT step's cost is epsilon1 + epsilon2 exactly) and
        the bound, slack and lattice step of the release of the same label; one release id
        and time for the run. gpcompiler.accounting.records.in_model re-composes
        ``spent``."""
        from ..accounting import records
        release_id = release_id or uuid.uuid4().hex
        time = time or records.utc_now()
        facts = {release.label: release for release in self.releases}
        lines = []
        for step in self.spends:
            family, scale, sensitivity = step.noise
            release = facts.get(step.label)
            lines.append(records.record(
                label=step.label, model=step.model, metric=metric, spec=spec,
                cost=step.cost if step.model == self.model else _gp_epsilon(step.cost),
                parameter=step.parameter, noise=(family, scale), sensitivity=sensitivity,
                **({} if release is None else {"lattice": release.lattice, "bound": release.bound,
                                               "slack": release.slack}),
                release_id=release_id, time=time))
        return records.to_jsonl(lines)

    def gp_parameter_for(self, cost):
        """The largest epsilon whose cost in this ledger is <= ``cost`` (exact Fraction)."""
        if self.model == "GP":
            return floor_float(cost)
        root = ceil_sqrt(2 * Fraction(cost))      # the smallest float with root^2 >= 2 cost
        return root if Fraction(root) ** 2 == 2 * cost else math.nextafter(root, 0.0)

    def __repr__(self):
        lines = [f"PrivacyLedger({self.model}, budget {self.budget:.6g}, spent {self.total:.6g})"]
        lines += [f"  {s.label}: {s.model} {s.parameter:.6g} -> {float(s.cost):.6g}" for s in self.spends]
        lines += [f"  {r.label}: bound B {r.bound!r}, slack 2 eta B "
                  f"{'not stated' if r.slack is None else repr(r.slack)}, lattice gamma "
                  f"{r.lattice!r}" for r in self.releases]
        return "\n".join(lines)
