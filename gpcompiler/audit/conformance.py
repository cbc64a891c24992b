"""White-box conformance of a mechanism's noise (docs/design.md, "Auditing").

The noise W = c~ - c that a generated module adds to orthonormal coordinates c (or a CDF
method adds to its sufficient statistics) is tested against the distribution its claim
requires:

  GP (epsilon):   W = R U with R ~ Gamma(d, s), s = 1/epsilon, and U uniform on the sphere;
  CGP (rho):      W ~ N(0, s^2 I), s = 1/sqrt(2 rho);
  Gaussian sigma: W ~ N(0, sigma^2 I) (the analytic Gaussian mechanism of the CDF methods).

Tests (each a p-value; a report is violated when one falls below alpha / #tests):
  scale        exact likelihood-ratio test of s with the sufficient statistic (GP: the sum
               of radii ~ Gamma(n d, s); Gaussian: sum of squares / s^2 ~ chi2(n d)), and its
               confidence interval at the same level;
  radius       Kolmogorov-Smirnov of |W|/s against Gamma(d) (GP) or chi(d) (Gaussian);
               the KS tests (asymptotic p-values) use the first 200,000 draws, the scale and
               tail tests all;
  tails        count of draws whose radius lies beyond the claim's 1e-3/n quantiles
               (binomial; catches a rare leak that the KS statistic cannot see);
  directions   KS of projections on worst-case and random unit directions (the coordinate
               axes, the Gram matrix's extreme eigenvectors mapped to orthonormal
               coordinates, random ones): GP: (u.v + 1)/2 ~ Beta((d-1)/2, (d-1)/2) for the
               unit direction u; Gaussian: v.W/s ~ N(0, 1);
  coordinates  (Gaussian) each coordinate's sum of squares ~ s^2 chi2(n), Bonferroni over d;
  covariance   (Gaussian) off-diagonal sample covariances, sqrt(m) C_ij/s^2 ~ N(0, 1)
               (asymptotic, on the first m <= 20,000 draws), Bonferroni over the pairs.

With n draws in dimension d the scale test detects a relative error of about
z / sqrt(n d) (GP) or z / sqrt(2 n d) (Gaussian), z the normal quantile at the test's level:
the report states this figure.
"""
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy
from scipy import integrate, stats

from ..adaptive.noise import clip
from .blackbox import audit_grid, gram_eigh

MAX_AXES = 16
RANDOM_DIRECTIONS = 4
COVARIANCE_DRAWS = 20000
KS_DRAWS = 200000
CHUNK_VALUES = 1 << 22


@dataclass(frozen=True)
class Check:
    """One statistical test of the noise."""
    name: str
    p_value: float


@dataclass(frozen=True)
class ConformanceReport:
    """The noise tests of one mechanism; ``alpha`` is shared by its checks (Bonferroni)."""
    name: str
    model: str
    dimension: int
    draws: int
    claimed_scale: float
    scale_estimate: float
    interval: tuple
    detectable: float
    checks: tuple
    alpha: float

    @property
    def tests(self):
        return len(self.checks)

    @property
    def level(self):
        return self.alpha / len(self.checks)

    @property
    def failed(self):
        return tuple(c.name for c in self.checks if c.p_value < self.level)

    @property
    def violated(self):
        return bool(self.failed)

    def describe(self):
        """One line: estimated scale with its interval beside the claimed one."""
        lo, hi = self.interval
        verdict = f"FAILED: {', '.join(self.failed)}" if self.violated else "conforms"
        return (f"{self.name}: {self.model} noise, d = {self.dimension}, {self.draws} draws; "
                f"scale {self.scale_estimate:.6g} [{lo:.6g}, {hi:.6g}] vs claimed "
                f"{self.claimed_scale:.6g} (detectable relative error {self.detectable:.2g}); "
                f"{self.tests} tests, {verdict}")


def unit_directions(dimension, worst=(), rng=None):
    """(name, unit vector) pairs: worst-case directions, coordinate axes, random ones."""
    rng = numpy.random.default_rng(7) if rng is None else rng
    out = [(name, v / numpy.linalg.norm(v)) for name, v in worst]
    axes = range(dimension) if dimension <= MAX_AXES else \
        sorted(set(numpy.linspace(0, dimension - 1, MAX_AXES).astype(int)))
    out += [(f"axis {i}", numpy.eye(dimension)[i]) for i in axes]
    for k in range(RANDOM_DIRECTIONS):
        v = rng.standard_normal(dimension)
        out.append((f"random direction {k}", v / numpy.linalg.norm(v)))
    return out


class _Accumulator:
    """Streaming statistics of noise draws (n, d), fed chunk by chunk."""

    def __init__(self, dimension, directions):
        self.matrix = numpy.stack([v for _, v in directions], axis=1)
        self.radii, self.projections = [], []
        self.squares = numpy.zeros(dimension)
        self.covariance = numpy.zeros((dimension, dimension))
        self.covariance_draws = 0

    def add(self, noise):
        radius = numpy.linalg.norm(noise, axis=1)
        self.radii.append(radius)
        self.projections.append(noise @ self.matrix)
        self.squares += numpy.einsum("ij,ij->j", noise, noise)
        take = min(noise.shape[0], COVARIANCE_DRAWS - self.covariance_draws)
        if take > 0:
            self.covariance += noise[:take].T @ noise[:take]
            self.covariance_draws += take

    def finish(self):
        self.radii = numpy.concatenate(self.radii)
        self.projections = numpy.concatenate(self.projections)
        return self


def collect(sample_noise, draws, dimension, directions, rng, progress=None):
    """Draw ``draws`` noise vectors from ``sample_noise(count, rng)`` in chunks."""
    chunk = max(1, min(draws, CHUNK_VALUES // dimension))
    accumulator = _Accumulator(dimension, directions)
    for start in range(0, draws, chunk):
        size = min(chunk, draws - start)
        noise = numpy.asarray(sample_noise(size, rng), dtype=float).reshape(size, dimension)
        accumulator.add(noise)
        if progress:
            progress(size)
    return accumulator.finish()


def _ks(values, law, *args):
    """Kolmogorov-Smirnov p-value (asymptotic) of ``values`` against scipy's ``law``."""
    return float(stats.kstest(values, law, args=args, method="asymp").pvalue)


def _two_sided(cdf, sf):
    return float(min(1.0, 2 * min(cdf, sf)))


def _tail_check(radii, law, name):
    """Binomial test of the count beyond both 1e-3/n quantiles of ``law``."""
    n = radii.size
    p0 = 1e-3 / n
    count = int(numpy.sum((radii < law.ppf(p0)) | (radii > law.isf(p0))))
    return Check(f"{name} tails (count {count} beyond the 1e-3/n quantiles)",
                 float(stats.binom.sf(count - 1, n, 2 * p0)) if count else 1.0)


def _gp_checks(acc, scale, directions, level):
    n, d = acc.radii.size, acc.matrix.shape[0]
    total = float(acc.radii.sum())
    shape = n * d
    p = _two_sided(stats.gamma.cdf(total / scale, shape), stats.gamma.sf(total / scale, shape))
    interval = (total / stats.gamma.isf(level / 2, shape),
                total / stats.gamma.ppf(level / 2, shape))
    checks = [Check("scale (exact LR test, sum of radii ~ Gamma(n d, s))", p),
              Check("radius KS against Gamma(d)",
                    _ks(acc.radii[:KS_DRAWS] / scale, "gamma", d)),
              _tail_check(acc.radii / scale, stats.gamma(d), "radius")]
    if d > 1:
        safe = numpy.where(acc.radii > 0, acc.radii, 1.0)[:, None]
        aligned = (acc.projections[:KS_DRAWS] / safe[:KS_DRAWS] + 1) / 2
        half = (d - 1) / 2
        for (name, _), column in zip(directions, aligned.T):
            checks.append(Check(f"direction KS along {name}",
                                _ks(column, "beta", half, half)))
    return total / shape, interval, checks


def _gaussian_checks(acc, scale, directions, level):
    n, d = acc.radii.size, acc.matrix.shape[0]
    squares = float(acc.squares.sum())
    dof = n * d
    ratio = squares / scale ** 2
    p = _two_sided(stats.chi2.cdf(ratio, dof), stats.chi2.sf(ratio, dof))
    interval = (math.sqrt(squares / stats.chi2.isf(level / 2, dof)),
                math.sqrt(squares / stats.chi2.ppf(level / 2, dof)))
    per = acc.squares / scale ** 2
    coordinate_p = numpy.minimum(1.0, 2 * numpy.minimum(stats.chi2.cdf(per, n),
                                                        stats.chi2.sf(per, n)))
    checks = [Check("scale (exact LR test, sum of squares / s^2 ~ chi2(n d))", p),
              Check("radius KS against chi(d)",
                    _ks(acc.radii[:KS_DRAWS] / scale, "chi", d)),
              _tail_check(acc.radii / scale, stats.chi(d), "radius"),
              Check("per-coordinate variance (Bonferroni over d)",
                    float(min(1.0, d * coordinate_p.min())))]
    for (name, _), column in zip(directions, acc.projections[:KS_DRAWS].T):
        checks.append(Check(f"normality KS along {name}",
                            _ks(column / scale, "norm")))
    if d > 1:
        m = acc.covariance_draws
        z = acc.covariance / (m * scale ** 2) * math.sqrt(m)
        off = numpy.abs(z[numpy.triu_indices(d, 1)]).max()
        pairs = d * (d - 1) / 2
        checks.append(Check(f"covariance off-diagonal (first {m} draws, asymptotic)",
                            float(min(1.0, pairs * 2 * stats.norm.sf(off)))))
    return math.sqrt(squares / dof), interval, checks


def conformance(name, sample_noise, model, scale, dimension, *, draws, alpha=1e-6, worst=(),
                seed=0, progress=None):
    """Test ``sample_noise(count, rng) -> (count, dimension)`` against the claim's noise law.

    ``model`` is "GP" (radius Gamma(d, scale), uniform direction) or "Gaussian" (N(0,
    scale^2 I), for CGP and the CDF methods); ``worst`` adds named directions to test.
    """
    rng = numpy.random.default_rng(seed)
    directions = unit_directions(dimension, worst, numpy.random.default_rng(seed + 1))
    acc = collect(sample_noise, draws, dimension, directions, rng, progress)
    extra = len(directions) if dimension > 1 or model != "GP" else 0
    planned = (3 if model == "GP" else 4 + (dimension > 1)) + extra
    level = alpha / max(planned, 1)
    checker = _gp_checks if model == "GP" else _gaussian_checks
    estimate, interval, checks = checker(acc, scale, directions, level)
    per_unit = stats.norm.isf(alpha / len(checks) / 2)
    detectable = per_unit / math.sqrt(draws * dimension * (1 if model == "GP" else 2))
    return ConformanceReport(name, "GP" if model == "GP" else "Gaussian", dimension, draws, scale,
                             estimate, interval, detectable, tuple(checks), alpha)


def default_draws(dimension, values=4e7, least=1000000, most=1000000):
    """Draws for a row: ``values`` noise scalars in all, clipped to [least, most]. The
    default is 10^6 draws whatever d: a leak of probability p shows in about n p draws, so
    p = 1e-5 is missed with probability e^-10."""
    return int(min(most, max(least, values // dimension)))


def gram_extremes(module):
    """The Gram matrix's extreme eigenvectors v mapped to orthonormal coordinates (R^T v):
    the directions in which noise added in the user basis is largest and smallest."""
    values, vectors = gram_eigh(module)
    worst = []
    for label, v in (("smallest Gram eigenvector", vectors[:, 0]),
                     ("largest Gram eigenvector", vectors[:, -1])):
        a = numpy.zeros(module.COEF_SHAPE)
        if len(module.COEF_SHAPE) == 2:
            a[:, 0] = v
        else:
            a[:] = v
        worst.append((label, numpy.asarray(module.from_user(a), dtype=float).ravel()))
    return worst


def conform_module(module, model, budget, *, draws=None, alpha=1e-6, seed=0, privatize=None,
                   center=None, progress=None):
    """Conformance of a generated module's privatize (or a replacement with its signature):
    the noise at ``center`` (orthonormal coordinates; default a fixed nonzero point)."""
    privatize = privatize or module.privatize
    if center is None:
        center = numpy.linspace(1.0, -1.0, module.COEF_DIM).reshape(module.COEF_SHAPE)

    def release(count, keyword, rng):
        batch = numpy.broadcast_to(center, (count,) + center.shape)
        return privatize(batch, rng=rng, **keyword) - batch
    return _conform(module, model, budget, release, draws, alpha, seed, progress)


def conform_fields(module, model, budget, *, draws=None, alpha=1e-6, seed=0, release=None,
                   progress=None):
    """Conformance of a module over a box end to end: the noise its project_and_privatize
    (or a replacement with its signature) adds to the projection of a fixed nonzero field
    on the public grid ``audit_grid``, its L2 norm within a quarter of the default clip
    bound (so the release adds noise to the projection itself; docs/clipping.md)."""
    release = release or module.project_and_privatize
    grids = audit_grid(module)
    shape = tuple(t.size for t in grids) + ((module.VALUE_DIM,) if module.VALUE_DIM > 1 else ())
    bound = module.default_bound(**({"epsilon": budget} if model == "GP" else {"rho": budget}))
    volume = math.prod(hi - lo for lo, hi in module.domain())
    size = bound / 4 / math.sqrt(volume * module.VALUE_DIM)   # max |f| x sqrt(volume n)
    field = numpy.linspace(size, -size, math.prod(shape)).reshape(shape)
    c = module.project_grid(grids, field)

    def noise(count, keyword, rng):
        batch = numpy.broadcast_to(field, (count,) + shape)
        return release(grids, batch, rng=rng, **keyword) - c
    return _conform(module, model, budget, noise, draws, alpha, seed, progress)


def _conform(module, model, budget, noise, draws, alpha, seed, progress):
    """``conformance`` of ``noise(count, keyword, rng)``, the noise of ``count`` releases
    under the budget keyword, against the law of the module's claim."""
    d = int(module.COEF_DIM)
    keyword = {"epsilon": budget} if model == "GP" else {"rho": budget}
    scale = 1 / budget if model == "GP" else 1 / math.sqrt(2 * budget)
    return conformance(f"{module.NAME} ({model})",
                       lambda count, rng: noise(count, keyword, rng).reshape(count, d),
                       "GP" if model == "GP" else "Gaussian", scale, d,
                       draws=draws or default_draws(d), alpha=alpha,
                       worst=gram_extremes(module), seed=seed, progress=progress)


class _Recording:
    """A generator proxy recording the Laplace variates drawn through it (minus loc)."""

    audit_replay = True  # draws floats: adaptive.noise.draw

    def __init__(self, rng):
        self.rng, self.values = rng, []

    def laplace(self, loc=0.0, scale=1.0, size=None):
        value = self.rng.laplace(loc, scale, size)
        self.values.extend(numpy.ravel(numpy.asarray(value) - loc))
        return value

    def __getattr__(self, name):
        return getattr(self.rng, name)


class StepRecorder:
    """Spies on the noisy steps of an adaptive algorithm, installed from the audit side
    around its ``svt`` and ``privatize_vector``: each SVT variate divided by the scale its
    charge pays for (lipschitz/epsilon1 for the threshold, 2 lipschitz/epsilon2 per query)
    and each release's noise in units of the share it was charged."""

    def __init__(self):
        self.svt, self.gp, self.gaussian, self.projections = [], [], [], []
        self.directions = numpy.random.default_rng(20261130)

    def svt_spy(self, svt):
        def spied(queries, threshold, lipschitz, epsilon1, epsilon2, *, rng, ledger, label):
            recording = _Recording(rng)
            result = svt(queries, threshold, lipschitz, epsilon1, epsilon2, rng=recording,
                         ledger=ledger, label=label)
            scales = [lipschitz / epsilon1] + [2 * lipschitz / epsilon2] * len(recording.values)
            self.svt.extend(v / b for v, b in zip(recording.values, scales))
            return result
        return spied

    def release_spy(self, privatize_vector):
        def spied(vector, ledger, label, share, *, rng, **keywords):
            out = privatize_vector(vector, ledger, label, share, rng=rng, **keywords)
            clipped = clip(vector, keywords.get("bound", math.inf))  # what the noise is added to
            noise = numpy.ravel(numpy.asarray(out, dtype=float) - clipped)
            if ledger.model == "GP":
                radius = float(numpy.linalg.norm(noise))
                self.gp.append((radius * float(share), noise.size,
                                (noise[0] / radius) ** 2 if radius > 0 else math.nan))
            else:
                self.gaussian.append(noise * math.sqrt(2 * float(share)))
            self._project(noise, ledger.model, share)
            return out
        return spied

    def _project(self, noise, model, share):
        """The noise on a fresh random unit direction and on the all-ones direction: GP as
        squared cosines (~ Beta(1/2, (d - 1)/2) for a uniform direction), CGP in units of
        the charged scale (~ N(0, 1)), with the dimension d."""
        d = noise.size
        if d < 2:
            return
        random = self.directions.standard_normal(d)
        units = (random / numpy.linalg.norm(random), numpy.full(d, 1 / math.sqrt(d)))
        if model == "GP":
            radius = numpy.linalg.norm(noise)
            self.projections.append(tuple((u @ noise / radius) ** 2 for u in units) + (d,))
        else:
            factor = math.sqrt(2 * float(share))
            self.projections.append(tuple(u @ noise * factor for u in units) + (d,))


def _projection_checks(recorder):
    """KS tests of the release noise on a random direction and on the all-ones direction
    (GP: squared cosines ~ Beta(1/2, (d - 1)/2); CGP: ~ N(0, 1)): noise confined to a few
    coordinates, or one draw shared by all, fails them."""
    if not recorder.projections:
        return []
    random, ones, d = (numpy.array(column) for column in zip(*recorder.projections))
    if recorder.gp:
        return [Check(f"release direction KS on {name} (Beta(1/2, (d-1)/2))",
                      _ks(stats.beta.cdf(v, 0.5, (d - 1) / 2), "uniform"))
                for name, v in (("random directions", random), ("the all-ones direction", ones))]
    return [Check(f"release noise KS on {name} against N(0, 1)", _ks(v, "norm"))
            for name, v in (("random directions", random), ("the all-ones direction", ones))]


def steps_report(name, recorder, alpha):
    """Conformance of recorded adaptive steps: SVT variates ~ Laplace(1) and release noise
    ~ the law its charged share requires (GP radius x share ~ Gamma(d, 1); CGP noise x
    sqrt(2 share) ~ N(0, 1)), each with an exact scale test and a KS test."""
    checks = []
    if recorder.svt:
        v = numpy.abs(numpy.asarray(recorder.svt))
        checks += [Check("SVT noise scale (sum |V|/b ~ Gamma(N, 1))",
                         _two_sided(stats.gamma.cdf(v.sum(), v.size),
                                    stats.gamma.sf(v.sum(), v.size))),
                   Check("SVT noise KS against Laplace(b)", _ks(v, "expon"))]
    level = alpha / (len(checks) + (3 if recorder.gp else 2) + 2 * bool(recorder.projections))
    if recorder.gp:
        radii, sizes, first = (numpy.array(column) for column in zip(*recorder.gp))
        total, shape = float(radii.sum()), float(sizes.sum())
        p = _two_sided(stats.gamma.cdf(total, shape), stats.gamma.sf(total, shape))
        several = sizes > 1
        checks += [Check("release radius x share (sum ~ Gamma(sum d, 1))", p),
                   Check("release radius KS (Gamma(d) CDF values ~ U(0, 1))",
                         _ks(stats.gamma.cdf(radii, sizes), "uniform")),
                   Check("release direction KS (u_1^2 ~ Beta(1/2, (d-1)/2) for d > 1)",
                         _ks(stats.beta.cdf(first[several], 0.5, (sizes[several] - 1) / 2),
                             "uniform"))]
        estimate = total / shape
        interval = (total / stats.gamma.isf(level / 2, shape),
                    total / stats.gamma.ppf(level / 2, shape))
        model, units = "GP", shape
    else:
        z = numpy.concatenate(recorder.gaussian)
        squares, shape = float(numpy.sum(z * z)), z.size
        checks += [Check("release noise scale (sum z^2 ~ chi2(N))",
                         _two_sided(stats.chi2.cdf(squares, shape),
                                    stats.chi2.sf(squares, shape))),
                   Check("release noise KS against N(0, 1)", _ks(z, "norm"))]
        estimate = math.sqrt(squares / shape)
        interval = (math.sqrt(squares / stats.chi2.isf(level / 2, shape)),
                    math.sqrt(squares / stats.chi2.ppf(level / 2, shape)))
        model, units = "Gaussian", 2 * shape
    checks += _projection_checks(recorder)
    detectable = stats.norm.isf(alpha / len(checks) / 2) / math.sqrt(units)
    runs = len(recorder.gp) or len(recorder.gaussian)
    return ConformanceReport(name, model, int(shape / max(runs, 1)), runs, 1.0, estimate,
                             interval, detectable, tuple(checks), alpha)


def laplace_difference_sf(x, a, b):
    """P[V - W >= x] for independent V ~ Laplace(a), W ~ Laplace(b) (the law of V + W:
    density (a^2 f_a - b^2 f_b)/(a^2 - b^2), f_s the Laplace(s) density; for a = b,
    P[V - W >= x] = e^(-x/a) (2 + x/a)/4 for x >= 0)."""
    if x < 0:
        return 1.0 - laplace_difference_sf(-x, a, b)
    if abs(a - b) <= 1e-9 * max(a, b):
        s = (a + b) / 2
        return math.exp(-x / s) * (2 + x / s) / 4
    return (a * a * math.exp(-x / a) - b * b * math.exp(-x / b)) / (2 * (a * a - b * b))


def poisson_binomial_p_value(probabilities, hits):
    """Two-sided exact p-value of ``hits`` successes among independent Bernoulli trials
    of the given probabilities (the distribution by convolution, O(N^2))."""
    pmf = numpy.ones(1)
    for p in probabilities:
        pmf = numpy.append(pmf * (1 - p), 0.0) + numpy.append(0.0, pmf * p)
    lower, upper = float(pmf[:hits + 1].sum()), float(pmf[hits:].sum())
    return _two_sided(lower, upper)


class SVTOutcomes:
    """A spy on an adaptive algorithm's ``svt`` that checks its noise from what it
    releases, not from the constants the algorithm passes: each call records its first
    query g_0, its threshold T, its split (epsilon1, epsilon2), what the ledger was charged
    and the index chosen. With the Lipschitz constant L of the proof (given by the
    auditor, never read from the call) the proof's SVT draws W ~ Lap(L/epsilon1) and
    V_j ~ Lap(2L/epsilon2): it chooses the first query with probability
    P[V - W >= T - g_0] (``check``: the count of such choices against its exact
    Poisson-binomial law), and, for runs whose queries are all the same (a fixed input),
    index k with probability int f_W(w) prod_(j<k) F_V(T + w - g_j) (1 - F_V(T + w - g_k))
    dw (``index_check``: the counts of indices against that law)."""

    def __init__(self):
        self.calls = []

    def svt_spy(self, svt):
        def spied(queries, threshold, lipschitz, epsilon1, epsilon2, *, rng, ledger, label):
            values = []

            def recorded():
                for value in queries:
                    values.append(float(value))
                    yield value
            before = ledger.spent
            found = svt(recorded(), threshold, lipschitz, epsilon1, epsilon2, rng=rng,
                        ledger=ledger, label=label)
            self.calls.append((label, values, float(threshold), float(epsilon1),
                               float(epsilon2), ledger.spent - before, ledger.model, found))
            return found
        return spied

    def check(self, lipschitz):
        """Check of the first-query choices under the proof's Lipschitz constants
        ``lipschitz`` ({label: L}, L None for a label not tested here; a call of a label
        not named is refused, so no SVT goes unchecked by mistake), and of each split:
        epsilon1 + epsilon2 must cost at most the charge."""
        probabilities, hits = [], 0
        for label, values, threshold, epsilon1, epsilon2, charge, model, found in self.calls:
            if label not in lipschitz:
                raise AssertionError(f"an SVT labelled {label!r} has no Lipschitz constant")
            _check_charge(label, epsilon1, epsilon2, charge, model)
            constant = lipschitz[label]
            if constant is None:
                continue
            probabilities.append(laplace_difference_sf(
                threshold - values[0], 2 * constant / epsilon2, constant / epsilon1))
            hits += found == 0
        expected = sum(probabilities)
        return Check(f"SVT first-query choices ({hits} of {len(probabilities)}, {expected:.1f} "
                     "expected)",
                     poisson_binomial_p_value(probabilities, hits))


    def index_check(self, label, lipschitz, query_factor=1.0):
        """Chi-square test (asymptotic; cells of expected count < 5 pooled) of the indices
        chosen by the SVTs labelled ``label``, which must all have asked the same queries,
        against the law of the proof's constant ``lipschitz`` (``query_factor`` scales the
        query noise: 1 for the proof, others only to show the test's power)."""
        calls = [c for c in self.calls if c[0] == label]
        longest = max((c[1] for c in calls), key=len)
        _, _, threshold, epsilon1, epsilon2 = calls[0][:5]
        for _, values, *rest in calls:
            _check_charge(label, *rest[1:5])
            if tuple(rest[:3]) != (threshold, epsilon1, epsilon2) or \
                    not numpy.allclose(values, longest[:len(values)], rtol=1e-9, atol=1e-12):
                raise AssertionError(f"{label}: the runs asked different queries")
        law = svt_index_law(longest, threshold, lipschitz / epsilon1,
                            2 * lipschitz / epsilon2 * query_factor)
        counts = numpy.zeros(law.size)
        for call in calls:
            found = call[7]
            counts[min(len(longest) if found is None else found, law.size - 1)] += 1
        observed, expected = _pooled(counts, law * len(calls))
        statistic = float(((observed - expected) ** 2 / expected).sum())
        return Check(f"{label}: SVT indices (chi-square, {observed.size} cells)",
                     float(stats.chi2.sf(statistic, max(observed.size - 1, 1))))


def _check_charge(label, epsilon1, epsilon2, charge, model):
    """Refuse an SVT whose epsilon1 + epsilon2 costs more than its ledger was charged."""
    total = Fraction(epsilon1) + Fraction(epsilon2)
    if (total if model == "GP" else total ** 2 / 2) > charge:
        raise AssertionError(f"{label}: the SVT uses epsilon {float(total)!r} but was "
                             f"charged {float(charge)!r}")


def svt_index_law(values, threshold, threshold_scale, query_scale):
    """P[index = k], k = 0..len(values) - 1, then P[no crossing among them], for the SVT
    with W ~ Lap(threshold_scale), V_j ~ Lap(query_scale) on the queries ``values``."""
    values = numpy.asarray(values, dtype=float)

    def below(x):   # the Laplace(query_scale) CDF
        return 0.5 * math.exp(x / query_scale) if x < 0 else 1 - 0.5 * math.exp(-x / query_scale)

    def density(w, k):
        product = math.prod(below(threshold + w - v) for v in values[:k])
        cross = 1.0 if k == values.size else 1 - below(threshold + w - values[k])
        return math.exp(-abs(w) / threshold_scale) / (2 * threshold_scale) * product * cross
    edges = sorted({float(v - threshold) for v in values} | {0.0})
    span = 60 * max(threshold_scale, query_scale)
    return numpy.array([integrate.quad(density, edges[0] - span, edges[-1] + span, args=(k,),
                                       points=edges, limit=400, epsabs=1e-12)[0]
                        for k in range(values.size + 1)])


def _pooled(observed, expected):
    """Adjacent cells merged until each expects at least 5."""
    merged_o, merged_e, o, e = [], [], 0.0, 0.0
    for a, b in zip(observed, expected):
        o, e = o + a, e + b
        if e >= 5:
            merged_o.append(o)
            merged_e.append(e)
            o, e = 0.0, 0.0
    if e and merged_e:
        merged_o[-1] += o
        merged_e[-1] += e
    elif e:
        merged_o.append(o)
        merged_e.append(e)
    return numpy.array(merged_o), numpy.array(merged_e)


def _noise_value(noise):
    """A noise's value as a float: a compare.Noise's midpoint from its first 52 bits per
    uniform (within 2^-50 relative of the real value), or a float replay draw as it is."""
    return float(noise.ball()[0][0]) if hasattr(noise, "ball") else float(noise)


class ScalarNoise:
    """A spy on an algorithm's ``scalar_noise`` recording each returned noise value in
    units of the scale its ledger charge pays for at the proof's ``sensitivity`` (GP:
    sensitivity/epsilon, Laplace; CGP: sensitivity/sqrt(2 rho), normal), never at the
    sensitivity the call passes."""

    def __init__(self, sensitivity):
        self.sensitivity, self.units, self.model = sensitivity, [], None

    def spy(self, scalar_noise):
        def spied(ledger, label, sensitivity, share, *, rng):
            before = ledger.spent
            value = scalar_noise(ledger, label, sensitivity, share, rng=rng)
            charge = ledger.spent - before
            self.model = ledger.model
            scale = self.sensitivity / (float(charge) if ledger.model == "GP"
                                        else math.sqrt(2 * float(charge)))
            self.units.append(_noise_value(value) / scale)
            return value
        return spied

    def checks(self):
        """Exact scale test (GP: sum |v| ~ Gamma(N, 1); CGP: sum v^2 ~ chi2(N)) and KS."""
        v = numpy.asarray(self.units)
        if self.model == "GP":
            total = float(numpy.abs(v).sum())
            return [Check("scalar noise scale (sum |v| ~ Gamma(N, 1))",
                          _two_sided(stats.gamma.cdf(total, v.size),
                                     stats.gamma.sf(total, v.size))),
                    Check("scalar noise KS against Laplace(1)", _ks(v, "laplace"))]
        squares = float(v @ v)
        return [Check("scalar noise scale (sum v^2 ~ chi2(N))",
                      _two_sided(stats.chi2.cdf(squares, v.size), stats.chi2.sf(squares, v.size))),
                Check("scalar noise KS against N(0, 1)", _ks(v, "norm"))]
