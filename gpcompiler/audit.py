"""Black-box privacy auditor (docs/design.md, "Auditing").

For two neighbouring inputs x, x' at a known distance the auditor samples the mechanism,
chooses a test event E on one half of the samples (thresholds on a fixed family of
scores: a projection on the mean difference, the distance to the x-mean, the spherical
Laplace likelihood-ratio statistic |o - m'| - |o - m|, the alignment of o - m with
each output axis, and a logistic-regression attack fitted on those scores), then estimates P = Pr[M(x) in E] and Q = Pr[M(x') in E] on fresh
samples with Clopper-Pearson bounds. The claim is violated when the certified P_lower
exceeds the largest P the claim allows for Q_upper:

  GP (epsilon):     P <= exp(epsilon dist) Q
  CGP (rho):        P <= min_{a > 1} exp((a - 1) rho dist^2) Q^((a - 1)/a)  (Renyi
                    probability preservation with D_a <= a rho dist^2)
  DP (eps, delta):  P <= exp(eps) Q + delta                                    (hockey stick)

Every evaluated event gets alpha / (2 * events) for each of its two bounds, so a correct
mechanism is flagged with probability below alpha (1e-6 by default) over a whole audit.
"""
import math
from dataclasses import dataclass

import numpy
from scipy import optimize, special, stats

QUANTILES = numpy.array([1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.2, 0.35, 0.5])
MAX_AXES = 16


@dataclass(frozen=True)
class Claim:
    """A privacy claim: model "GP" (epsilon), "CGP" (rho) or "DP" (epsilon, delta)."""
    model: str
    budget: float
    delta: float = 0.0

    def allowed(self, q, distance):
        """Largest Pr[M(x) in E] the claim permits when Pr[M(x') in E] = q (not capped
        at 1, so that events can be ranked by how close they come to the claim)."""
        if self.model == "GP":
            return math.exp(self.budget * distance) * q
        if self.model == "DP":
            return math.exp(self.budget) * q + self.delta
        if q <= 0:
            return 0.0
        scale = self.budget * distance ** 2
        alpha = max(math.sqrt(-math.log(q) / scale), 1.0 + 1e-12) if scale > 0 else math.inf
        if not math.isfinite(alpha):
            return q
        return math.exp((alpha - 1) * scale + (alpha - 1) / alpha * math.log(q))

    def describe(self, distance):
        if self.model == "GP":
            return f"{self.budget:g}-GP, dist {distance:.3g}"
        if self.model == "CGP":
            return f"{self.budget:g}-CGP, dist {distance:.3g}"
        return f"({self.budget:g}, {self.delta:g})-DP"


@dataclass(frozen=True)
class PairAudit:
    """The outcome for one neighbouring pair."""
    label: str
    distance: float
    event: str
    p_lower: float
    q_upper: float
    allowed: float
    certified_loss: float
    claimed_loss: float
    violated: bool


def clopper_pearson(successes, trials, alpha):
    """One-sided (lower, upper) Clopper-Pearson bounds, each holding w.p. >= 1 - alpha."""
    lower = 0.0 if successes == 0 else stats.beta.ppf(alpha, successes, trials - successes + 1)
    upper = 1.0 if successes == trials else stats.beta.ppf(1 - alpha, successes + 1, trials - successes)
    return float(lower), float(upper)


class _Features:
    """Scores of outputs, fixed from pilot means of M(x) and M(x')."""

    def __init__(self, mean_x, mean_y, rng):
        self.mean_x, self.mean_y = mean_x, mean_y
        direction = mean_y - mean_x
        norm = numpy.linalg.norm(direction)
        self.direction = direction / norm if norm > 0 else rng.standard_normal(direction.size)
        self.direction /= numpy.linalg.norm(self.direction)
        self.axes = min(mean_x.size, MAX_AXES)
        self.names = (["projection", "radius", "likelihood ratio"]
                      + [f"alignment with axis {i}" for i in range(self.axes)])

    def __call__(self, outputs):
        centred = outputs - self.mean_x
        radius = numpy.linalg.norm(centred, axis=1)
        safe = numpy.where(radius > 0, radius, 1.0)
        columns = [centred @ self.direction, radius,
                   numpy.linalg.norm(outputs - self.mean_y, axis=1) - radius]
        columns += [numpy.abs(centred[:, i]) / safe for i in range(self.axes)]
        return numpy.stack(columns, axis=1)


def _draw(sampler, count, rng, features, chunk=20000):
    parts = []
    for start in range(0, count, chunk):
        outputs = numpy.asarray(sampler(min(chunk, count - start), rng), dtype=float)
        parts.append(features(outputs.reshape(outputs.shape[0], -1)))
    return numpy.concatenate(parts)


def _logistic_attack(scores_x, scores_y):
    """A logistic regression telling M(x') from M(x) on the selection half (standardized
    scores, SciPy L-BFGS on the mean log-loss); returns a function appending its linear
    predictor to a score matrix as one more score."""
    data = numpy.concatenate([scores_x, scores_y])
    labels = numpy.concatenate([numpy.zeros(len(scores_x)), numpy.ones(len(scores_y))])
    centre, scale = data.mean(axis=0), data.std(axis=0)
    scale[scale == 0] = 1.0

    def design(scores):
        return numpy.column_stack([(scores - centre) / scale, numpy.ones(len(scores))])
    matrix = design(data)

    def loss(weights):
        margin = matrix @ weights
        value = numpy.mean(numpy.logaddexp(0.0, margin) - labels * margin)
        return value, matrix.T @ (special.expit(margin) - labels) / len(labels)
    weights = optimize.minimize(loss, numpy.zeros(matrix.shape[1]), jac=True, method="L-BFGS-B").x
    return lambda scores: numpy.column_stack([scores, design(scores) @ weights])


def _mean(sampler, count, rng, chunk=20000):
    """Mean output over ``count`` pilot samples (fixes the score family's centres)."""
    total = 0.0
    for start in range(0, count, chunk):
        size = min(chunk, count - start)
        total = total + numpy.asarray(sampler(size, rng), dtype=float).reshape(size, -1).sum(axis=0)
    return total / count


def _candidate_events(scores_x, scores_y):
    """(score index, threshold, upper tail?) from pooled selection quantiles."""
    pooled = numpy.concatenate([scores_x, scores_y])
    levels = numpy.concatenate([QUANTILES, 1 - QUANTILES])
    for j in range(pooled.shape[1]):
        for threshold in numpy.unique(numpy.quantile(pooled[:, j], levels)):
            yield j, threshold, True
            yield j, threshold, False


def _in_event(scores, event):
    j, threshold, upper = event
    return scores[:, j] > threshold if upper else scores[:, j] <= threshold


def _select_event(scores_x, scores_y, claim, distance, level):
    """The event and direction whose bounds at the test's confidence ``level`` exceed the
    claim most on the selection half (so the choice optimizes what will be certified)."""
    n = scores_x.shape[0]
    best, choice = -math.inf, None
    for event in _candidate_events(scores_x, scores_y):
        k_x, k_y = int(_in_event(scores_x, event).sum()), int(_in_event(scores_y, event).sum())
        for first, second, swapped in ((k_x, k_y, False), (k_y, k_x, True)):
            p_lower = clopper_pearson(first, n, level)[0]
            q_upper = clopper_pearson(second, n, level)[1]
            if p_lower <= 0:
                continue
            excess = math.log(p_lower) - math.log(max(claim.allowed(q_upper, distance), 1e-300))
            if excess > best:
                best, choice = excess, (event, swapped)
    return choice


def audit_pair(sample_x, sample_y, claim, distance, *, label="", samples=50000, alpha=1e-6,
               events=1, rng=None):
    """Audit one neighbouring pair: ``sample_x(count, rng)`` draws outputs of M(x).

    ``samples`` outputs per side are used to choose the event and as many fresh ones to
    test it; ``alpha`` is the false-alarm budget shared by ``events`` audited pairs.
    """
    rng = numpy.random.default_rng(0) if rng is None else rng
    features = _Features(_mean(sample_x, samples, rng), _mean(sample_y, samples, rng), rng)
    level = alpha / (2 * events)
    selection = (_draw(sample_x, samples, rng, features), _draw(sample_y, samples, rng, features))
    attack = _logistic_attack(*selection)
    selection = tuple(attack(s) for s in selection)
    event, swapped = _select_event(*selection, claim, distance, level)
    fresh_x, fresh_y = (attack(_draw(sample, samples, rng, features)) for sample in (sample_x, sample_y))
    if swapped:
        fresh_x, fresh_y = fresh_y, fresh_x
    p_lower = clopper_pearson(int(_in_event(fresh_x, event).sum()), samples, level)[0]
    q_upper = clopper_pearson(int(_in_event(fresh_y, event).sum()), samples, level)[1]
    allowed = claim.allowed(q_upper, distance)
    j, threshold, upper = event
    names = features.names + ["logistic-regression attack"]
    description = (f"{names[j]} {'>' if upper else '<='} {threshold:.4g}"
                   f"{' (roles swapped)' if swapped else ''}")
    certified = math.log(p_lower / q_upper) if p_lower > 0 else -math.inf
    return PairAudit(label, distance, description, p_lower, q_upper, allowed, certified,
                     math.log(allowed / q_upper), p_lower > allowed)


@dataclass(frozen=True)
class AuditReport:
    """All pairs of one mechanism; ``violated`` if any pair certifies a violation."""
    name: str
    claim: Claim
    pairs: tuple

    @property
    def violated(self):
        return any(p.violated for p in self.pairs)

    @property
    def worst(self):
        return max(self.pairs, key=lambda p: p.certified_loss - p.claimed_loss)


def module_pairs(module, scale):
    """Neighbouring user-coefficient inputs of a generated module, at known L2 distances:
    the hardest direction (smallest Gram eigenvalue), the easiest, and a random one, at
    small and large distances (multiples of ``scale`` = 1/epsilon or 1/sqrt(rho))."""
    gram = module.gram()
    values, vectors = numpy.linalg.eigh(gram)
    rng = numpy.random.default_rng(1)
    directions = [("hardest", vectors[:, 0]), ("easiest", vectors[:, -1]),
                  ("random", rng.standard_normal(gram.shape[0]))]
    pairs = []
    for name, direction in directions:
        for multiple in ((0.5, 3.0) if name == "hardest" else (1.0,)):
            length = math.sqrt(direction @ gram @ direction)
            step = numpy.zeros(module.COEF_SHAPE)
            if len(module.COEF_SHAPE) == 2:
                step[:, 0] = direction / length
            else:
                step[:] = direction / length
            pairs.append((f"{name} direction, {multiple:g}/budget", numpy.zeros(module.COEF_SHAPE),
                          multiple * scale * step, multiple * scale))
    return pairs


def audit_module(module, claim, *, samples=50000, alpha=1e-6, events=None, seed=0,
                 privatize=None):
    """Audit a generated module's privatize (or a replacement with the same signature)
    on user-coefficient inputs mapped through from_user."""
    privatize = privatize or module.privatize
    keyword = {"epsilon": claim.budget} if claim.model == "GP" else {"rho": claim.budget}
    scale = 1 / claim.budget if claim.model == "GP" else 1 / math.sqrt(claim.budget)
    pairs = module_pairs(module, scale)
    events = events or len(pairs)
    rng = numpy.random.default_rng(seed)
    results = []
    for label, a, b, distance in pairs:
        c_a, c_b = module.from_user(a), module.from_user(b)

        def sampler(center):
            return lambda count, g: privatize(numpy.broadcast_to(center, (count,) + center.shape),
                                              rng=g, **keyword)
        results.append(audit_pair(sampler(c_a), sampler(c_b), claim, distance, label=label,
                                  samples=samples, alpha=alpha, events=events, rng=rng))
    return AuditReport(module.NAME, claim, tuple(results))
