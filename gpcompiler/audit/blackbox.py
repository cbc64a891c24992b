"""Black-box privacy auditor (docs/design.md, "Auditing").

For two neighbouring inputs x, x' at a known distance the auditor samples the mechanism,
chooses a test event E on one half of the samples (thresholds on a fixed family of
scores: a projection on the mean difference, the distance to the x-mean, the spherical
Laplace likelihood-ratio statistic |o - m'| - |o - m|, the alignment of o - m with
each output axis, a logistic-regression attack fitted on those scores, and heavy-tail
events beyond a radius the claimed noise almost never reaches), then estimates
P = Pr[M(x) in E] and Q = Pr[M(x') in E] on fresh samples with Clopper-Pearson bounds.
The claim is violated when the certified P_lower exceeds the largest P the claim allows
for Q_upper:

  GP (epsilon):     P <= exp(epsilon dist) Q
  CGP (rho):        P <= min_{a > 1} exp((a - 1) rho dist^2) Q^((a - 1)/a)  (Renyi
                    probability preservation with D_a <= a rho dist^2)
  DP (eps, delta):  P <= exp(eps) Q + delta                                    (hockey stick)

Every evaluated event gets alpha / (2 * events) for each of its two bounds, so a correct
mechanism is flagged with probability below alpha over a whole audit (``AuditReport.alpha``
is that sum, for a table's Bonferroni bound). What the black box cannot do: the loss an
event can certify from n samples is capped near ln n, and in high dimension the events
on which a 0.7x noise scale shows have tiny probability -- conformance
(gpcompiler.audit.conformance) tests the noise law itself.
"""
import math
from dataclasses import dataclass
from functools import lru_cache

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
    upper = 1.0 if successes == trials else \
        stats.beta.ppf(1 - alpha, successes + 1, trials - successes)
    return float(lower), float(upper)


class _Features:
    """Scores of outputs, fixed from pilot means of M(x) and M(x')."""

    def __init__(self, mean_x, mean_y, rng):
        self.mean_x, self.mean_y = mean_x, mean_y
        direction = mean_y - mean_x
        norm = numpy.linalg.norm(direction)
        self.direction = direction / norm if norm > 0 else rng.standard_normal(direction.size)
        self.direction /= numpy.linalg.norm(self.direction)
        self.gap = float(norm)
        self.axes = min(mean_x.size, MAX_AXES)
        self.names = (["projection", "radius", "likelihood ratio"]
                      + [f"alignment with axis {i}" for i in range(self.axes)])

    def __call__(self, outputs):
        centred = outputs - self.mean_x
        radius = numpy.linalg.norm(centred, axis=1)
        safe = numpy.where(radius > 0, radius, 1.0)
        columns = [numpy.einsum("ij,j->i", centred, self.direction), radius,
                   numpy.linalg.norm(outputs - self.mean_y, axis=1) - radius]
        columns += [numpy.abs(centred[:, i]) / safe for i in range(self.axes)]
        return numpy.stack(columns, axis=1)

    def tail_events(self, tail):
        """Heavy-tail events beyond ``tail``, a radius the claimed noise exceeds with
        negligible probability: a rare leak far outside the noise lands in one of them."""
        if tail is None:
            return []
        return [(0, -tail, False), (0, tail + self.gap, True), (1, tail + self.gap, True)]


def _draw(sampler, count, rng, features, chunk=20000):
    parts = []
    for start in range(0, count, chunk):
        outputs = numpy.asarray(sampler(min(chunk, count - start), rng), dtype=float)
        parts.append(features(outputs.reshape(outputs.shape[0], -1)))
    return numpy.concatenate(parts)


def _logistic_attack(scores_x, scores_y, fit=20000):
    """A logistic regression telling M(x') from M(x) on the selection half (the first
    ``fit`` rows of each side, standardized scores, SciPy BFGS on the mean log-loss);
    returns a function appending its linear predictor to a score matrix as one more score.
    BFGS and einsum products rather than L-BFGS-B and BLAS ones: on 2 shared cores
    OpenBLAS's threads made each fit about ten times slower (measured)."""
    scores_x, scores_y = scores_x[:fit], scores_y[:fit]
    data = numpy.concatenate([scores_x, scores_y])
    labels = numpy.concatenate([numpy.zeros(len(scores_x)), numpy.ones(len(scores_y))])
    centre, scale = data.mean(axis=0), data.std(axis=0)
    scale[scale == 0] = 1.0

    def design(scores):
        return numpy.column_stack([(scores - centre) / scale, numpy.ones(len(scores))])
    matrix = design(data)

    def loss(weights):
        margin = numpy.einsum("ij,j->i", matrix, weights)
        value = numpy.mean(numpy.logaddexp(0.0, margin) - labels * margin)
        return value, numpy.einsum("ij,i->j", matrix, special.expit(margin) - labels) / len(labels)
    weights = optimize.minimize(loss, numpy.zeros(matrix.shape[1]), jac=True, method="BFGS").x
    return lambda scores: numpy.column_stack([scores, numpy.einsum("ij,j->i", design(scores),
                                                                   weights)])


def _mean(sampler, count, rng, chunk=20000):
    """Mean output over ``count`` pilot samples (fixes the score family's centres)."""
    total = 0.0
    for start in range(0, count, chunk):
        size = min(chunk, count - start)
        total = total + numpy.asarray(sampler(size, rng), dtype=float).reshape(size, -1).sum(0)
    return total / count


def _candidate_events(scores_x, scores_y, extra=()):
    """(score index, threshold, upper tail?) from pooled selection quantiles, and ``extra``."""
    yield from extra
    pooled = numpy.concatenate([scores_x, scores_y])
    levels = numpy.concatenate([QUANTILES, 1 - QUANTILES])
    for j in range(pooled.shape[1]):
        for threshold in numpy.unique(numpy.quantile(pooled[:, j], levels)):
            yield j, threshold, True
            yield j, threshold, False


def _in_event(scores, event):
    j, threshold, upper = event
    return scores[:, j] > threshold if upper else scores[:, j] <= threshold


def _counts(scores, events):
    """How many rows of ``scores`` fall in each event (one sort per score column)."""
    ordered = numpy.sort(scores, axis=0)
    out = numpy.empty(len(events), dtype=numpy.int64)
    for index, (j, threshold, upper) in enumerate(events):
        below = numpy.searchsorted(ordered[:, j], threshold, side="right")
        out[index] = scores.shape[0] - below if upper else below
    return out


def _select_event(scores_x, scores_y, claim, distance, level, extra=()):
    """The event and direction whose bounds at the test's confidence ``level`` exceed the
    claim most on the selection half (so the choice optimizes what will be certified)."""
    n = scores_x.shape[0]
    events = list(_candidate_events(scores_x, scores_y, extra))
    k_x, k_y = _counts(scores_x, events), _counts(scores_y, events)
    best, choice = -math.inf, None
    for first, second, swapped in ((k_x, k_y, False), (k_y, k_x, True)):
        p_lower = numpy.where(first > 0, stats.beta.ppf(level, first, n - first + 1), 0.0)
        q_upper = numpy.where(second < n, stats.beta.ppf(1 - level, second + 1, n - second), 1.0)
        for index in numpy.flatnonzero(p_lower > 0):
            allowed = claim.allowed(float(q_upper[index]), distance)
            excess = math.log(p_lower[index]) - math.log(max(allowed, 1e-300))
            if excess > best:
                best, choice = excess, (events[index], swapped)
    return choice


def audit_pair(sample_x, sample_y, claim, distance, *, label="", samples=50000, alpha=1e-6,
               events=1, rng=None, tail=None, pilot=20000, progress=None):
    """Audit one neighbouring pair: ``sample_x(count, rng)`` draws outputs of M(x).

    ``pilot`` outputs per side fix the score family's centres; ``samples`` outputs per side
    are used to choose the event and as many fresh ones to test it; ``alpha`` is the
    false-alarm budget shared by ``events`` audited pairs; ``tail`` (optional) is a radius
    the claimed noise exceeds with negligible probability, adding heavy-tail events.
    """
    rng = numpy.random.default_rng(0) if rng is None else rng
    pilot = min(pilot, samples)
    features = _Features(_mean(sample_x, pilot, rng), _mean(sample_y, pilot, rng), rng)
    level = alpha / (2 * events)
    selection = (_draw(sample_x, samples, rng, features), _draw(sample_y, samples, rng, features))
    attack = _logistic_attack(*selection)
    selection = tuple(attack(s) for s in selection)
    event, swapped = _select_event(*selection, claim, distance, level, features.tail_events(tail))
    fresh_x, fresh_y = (attack(_draw(sample, samples, rng, features))
                        for sample in (sample_x, sample_y))
    if progress:
        progress(2 * (pilot + 2 * samples))
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
    """All pairs of one mechanism; ``violated`` if any pair certifies a violation.
    ``alpha`` is the false-alarm budget of its 2 x pairs one-sided bounds."""
    name: str
    claim: Claim
    pairs: tuple
    alpha: float = 1e-6

    @property
    def violated(self):
        return any(p.violated for p in self.pairs)

    @property
    def tests(self):
        return 2 * len(self.pairs)

    @property
    def worst(self):
        return max(self.pairs, key=lambda p: p.certified_loss - p.claimed_loss)


def pair_multiples(samples):
    """Distances (in units of 1/epsilon or 1/sqrt(rho)) of the hardest-direction pairs: a
    small one (a rare leak is certified best where the claim allows little), 1, and one
    near the largest certifiable loss, ln(samples)/3 (a log-ratio from n samples is capped
    near ln n)."""
    return (0.1, 1.0, round(math.log(samples) / 3, 2))


@lru_cache(maxsize=None)
def gram_eigh(module):
    """Eigenvalues and eigenvectors of a generated module's Gram matrix (cached)."""
    return numpy.linalg.eigh(module.gram())


def module_pairs(module, scale, samples=50000):
    """Neighbouring user-coefficient inputs of a generated module at known L2 distances,
    symmetric about 0 (so that any sign-dependent leak differs between them): the hardest
    direction (smallest Gram eigenvalue) at ``pair_multiples``, the easiest and a random
    one at 1 (multiples of ``scale`` = 1/epsilon or 1/sqrt(rho))."""
    gram = module.gram()
    values, vectors = gram_eigh(module)
    rng = numpy.random.default_rng(1)
    directions = [("hardest", vectors[:, 0]), ("easiest", vectors[:, -1]),
                  ("random", rng.standard_normal(gram.shape[0]))]
    pairs = []
    for name, direction in directions:
        for multiple in (pair_multiples(samples) if name == "hardest" else (1.0,)):
            length = math.sqrt(direction @ gram @ direction)
            step = numpy.zeros(module.COEF_SHAPE)
            if len(module.COEF_SHAPE) == 2:
                step[:, 0] = direction / length
            else:
                step[:] = direction / length
            half = multiple * scale * step / 2
            pairs.append((f"{name} direction, {multiple:g}/budget", -half, half, multiple * scale))
    return pairs


def noise_tail(claim, dimension, probability=1e-12):
    """A radius the claimed noise of a module exceeds with probability ``probability``."""
    if claim.model == "GP":
        return float(stats.gamma.isf(probability, dimension)) / claim.budget
    return float(stats.chi.isf(probability, dimension)) / math.sqrt(2 * claim.budget)


def black_box_samples(dimension, values=4e5, least=2000, most=100000):
    """Samples per phase for a module of dimension d: ``values`` scalars, clipped."""
    return int(min(most, max(least, values // dimension)))


def audit_module(module, claim, *, samples=None, alpha=1e-6, events=None, seed=0,
                 privatize=None, progress=None):
    """Audit a generated module's privatize (or a replacement with the same signature)
    on user-coefficient inputs mapped through from_user; ``alpha`` is shared by the pairs
    (``events``: how many pairs share it, default the pairs of this audit)."""
    privatize = privatize or module.privatize
    samples = samples or black_box_samples(module.COEF_DIM)
    keyword = {"epsilon": claim.budget} if claim.model == "GP" else {"rho": claim.budget}

    def sampler(center):
        return lambda count, g: privatize(numpy.broadcast_to(center, (count,) + center.shape),
                                          rng=g, **keyword)
    pairs = [(label, sampler(module.from_user(a)), sampler(module.from_user(b)), distance)
             for label, a, b, distance in module_pairs(module, _unit(claim), samples)]
    return _audit_samplers(module, claim, pairs, samples, alpha, events, seed, progress)


def audit_grid(module):
    """The public grid of a module over a box on which fields are audited: 3 nodes per
    variable spanning the box."""
    return tuple(numpy.linspace(lo, hi, 3) for lo, hi in module.domain())


def field_pairs(module, scale, samples=50000):
    """Neighbouring fields of a module over a box on ``audit_grid``, symmetric about 0,
    in the first value component: the multilinear product prod_i (x_i - centre_i) at
    ``pair_multiples``, the constant and a random nodal field at 1 (multiples of
    ``scale``). The distance is that of their projections, |c - c'| in orthonormal
    coordinates of the spec's metric (L2, weighted or H^1): Project-and-Privatize's loss
    on the pair is exactly epsilon |c - c'| (or rho |c - c'|^2), which is at most the
    proof's bound, since the projection is non-expansive in that metric."""
    grids = audit_grid(module)
    points = numpy.meshgrid(*grids, indexing="ij")
    rng = numpy.random.default_rng(1)
    directions = [("multilinear", math.prod(x - x.mean() for x in points)),
                  ("constant", numpy.ones(points[0].shape)),
                  ("random", rng.standard_normal(points[0].shape))]
    pairs = []
    for name, v in directions:
        field = numpy.zeros(v.shape + (module.VALUE_DIM,))
        field[..., 0] = v
        field = field if module.VALUE_DIM > 1 else field[..., 0]
        field = field / numpy.linalg.norm(module.project_grid(grids, field))
        for multiple in (pair_multiples(samples) if name == "multilinear" else (1.0,)):
            half = multiple * scale * field / 2
            pairs.append((f"{name} field, {multiple:g}/budget", -half, half, multiple * scale))
    return grids, pairs


def audit_fields(module, claim, *, samples=None, alpha=1e-6, seed=0, release=None,
                 progress=None):
    """Audit a module over a box end to end: its project_and_privatize (or a replacement
    with the same signature) on the neighbouring gridded fields of ``field_pairs``."""
    release = release or module.project_and_privatize
    samples = samples or black_box_samples(module.COEF_DIM)
    keyword = {"epsilon": claim.budget} if claim.model == "GP" else {"rho": claim.budget}
    grids, fields = field_pairs(module, _unit(claim), samples)

    def sampler(field):
        return lambda count, g: release(grids, numpy.broadcast_to(field, (count,) + field.shape),
                                        rng=g, **keyword)
    pairs = [(label, sampler(a), sampler(b), distance) for label, a, b, distance in fields]
    return _audit_samplers(module, claim, pairs, samples, alpha, None, seed, progress)


def _unit(claim):
    """The distance unit of the pairs: 1/epsilon (GP) or 1/sqrt(rho) (CGP)."""
    return 1 / claim.budget if claim.model == "GP" else 1 / math.sqrt(claim.budget)


def _audit_samplers(module, claim, pairs, samples, alpha, events, seed, progress):
    """audit_pair over (label, sampler x, sampler x', distance) pairs sharing ``alpha``."""
    events = events or len(pairs)
    rng = numpy.random.default_rng(seed)
    tail = noise_tail(claim, module.COEF_DIM)
    results = [audit_pair(x, y, claim, distance, label=label, samples=samples, alpha=alpha,
                          events=events, rng=rng, tail=tail, progress=progress)
               for label, x, y, distance in pairs]
    return AuditReport(module.NAME, claim, tuple(results), alpha * len(pairs) / events)
