"""Batched runs of the adaptive algorithms, for auditing (docs/design.md, "Adaptive
algorithms" and "Auditing").

A black-box audit of PrivFuncSelect (paper Alg. 3 / 7), PrivFuncSeg (Alg. 4 / 8 with
ReduceSeg, Alg. 5 / 9) or the unbounded algorithm (Sec. 4.3) wants about 10^5 releases of
one fixed input; one at a time that takes minutes. What an algorithm computes before its
noise (projections, prefix residual distances, dyadic projections and residuals, the SVT
query values, the clipping) depends on the input alone, so it is computed once, and the
noise of N runs is drawn as arrays: SVT thresholds (N,) and query noises (N, queries),
each run's branch by vectorized comparison, release noise (N, d) for each group of runs
that took the same branch.

Nothing about the noise is restated here; the algorithms' own code is run:

- ``SelectRuns`` (PrivFuncSelect) computes the queries with select.py's functions and every
  noise scale by calling select.py's ``svt`` and ``privatize_vector`` on a real
  PrivacyLedger with a probe generator that reports the scale of each draw.
- ``ScriptedRuns`` (PrivFuncSeg, the unbounded algorithm) runs the public function itself,
  once per distinct sequence of noisy decisions, with a generator whose scalar variates are
  symbolic: the arithmetic applied to them is recorded, and a comparison of them is
  answered from a script of decisions or, past its end, stops the replay. The batched runs
  that reached that comparison draw the variates it involves as arrays and split by its
  outcome. The final release is read by a spy on ``privatize_vector`` (its noise-free
  vector and, through a probe, the scale of its noise); the runs of one path share the
  ledger its replay charged.

Names are looked up in the algorithm's module when a step is taken, so a mutant patched
there (gpcompiler.audit.mutants) is what gets sampled. The runs have the algorithm's
distribution (tests/test_batched.py compares them with the algorithm run one at a time);
a value may differ from a one-at-a-time run in its last bits (sums in another order).
"""
import copy
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy

from ..adaptive import piecewise, seg, select
from ..adaptive.curve import Curve, prepare_run
from ..adaptive.noise import clip
from ..runtime import compare, exact
from .mutants import patched
from ..runtime.rounding import floor_float


@dataclass(frozen=True)
class Runs:
    """N runs on one input: ``values`` (N, T, n), each release on the public grid;
    ``details`` maps a name to each run's choice (N,); run i's ledger is
    ``ledgers[path[i]]``."""
    values: numpy.ndarray
    details: dict
    ledgers: tuple
    path: numpy.ndarray


class _Probe:
    """A generator stand-in that reveals a noisy step's scales: a Laplace draw records its
    scale and returns loc + scale, a normal draw is the first unit vector (or 1), a Gamma
    draw its scale; so a release of zeros returns its noise scale in coordinate 0."""

    audit_replay = True  # draws floats: adaptive.noise.draw

    def __init__(self):
        self.scales = []

    def laplace(self, loc=0.0, scale=1.0, size=None):
        self.scales.append(scale)
        return loc + scale

    def standard_normal(self, size=None):
        if size is None:
            return 1.0
        unit = numpy.zeros(size)
        unit.flat[0] = 1.0
        return unit

    def gamma(self, shape, scale=1.0, size=None):
        return numpy.full(() if size is None else size, float(scale))


def probe_svt(svt, ledger, label, threshold, lipschitz, epsilon1, epsilon2):
    """Charge an SVT to ``ledger`` through ``svt``; its (threshold, query) noise scales."""
    probe = _Probe()
    svt([-math.inf], threshold, lipschitz, epsilon1, epsilon2, rng=probe, ledger=ledger,
        label=label)
    return tuple(probe.scales)


class NoiseModelError(ValueError):
    """A release's noise is not the law the batched runs draw (one spherical Laplace vector
    for GP, one isotropic Gaussian vector for CGP), so batched runs would not sample it."""


class _Recorder:
    """A seeded generator that records the normal and Gamma draws of one release; a
    release that draws any other variate is not of the batched runs' law."""

    audit_replay = True  # draws floats: adaptive.noise.draw

    def __init__(self):
        self.rng, self.normals, self.gammas = numpy.random.default_rng(0), [], []

    def standard_normal(self, size=None):
        self.normals.append(numpy.ravel(self.rng.standard_normal(size)))
        return self.normals[-1].reshape(() if size is None else size)

    def gamma(self, shape, scale=1.0, size=None):
        value = self.rng.gamma(shape, scale, size)
        self.gammas.append((shape, scale, value))
        return value

    def __getattr__(self, name):
        raise NoiseModelError(f"a release drew {name} variates")


def probe_release(privatize_vector, ledger, label, share, size):
    """Charge a release to ``ledger`` through ``privatize_vector``; its noise scale (read
    from a release of zeros by the probe), after ``check_release`` on a copy of the ledger."""
    check_release(privatize_vector, copy.deepcopy(ledger), label, share, size)
    return float(privatize_vector(numpy.zeros(size), ledger, label, share, rng=_Probe())[0])


def check_release(privatize_vector, ledger, label, share, size):
    """NoiseModelError unless one release of zeros, its draws recorded, is the recorded
    spherical Laplace (GP: Gamma(size) radius times the normalized normal vector) or
    Gaussian vector (CGP) times one scale: a release with noise in fewer coordinates, or
    a Gamma of another shape, is not what ``release_noise`` samples (compared to 1e-9
    relative: float rounding)."""
    recorder = _Recorder()
    noise = numpy.ravel(privatize_vector(numpy.zeros(size), ledger, label, share,
                                         rng=recorder))
    gp = ledger.model == "GP"
    if len(recorder.normals) != 1 or recorder.normals[0].size != size or \
            [g[:2] for g in recorder.gammas] != ([(size, 1.0)] if gp else []):
        raise NoiseModelError(f"{label}: expected one normal vector of {size} coordinates"
                              + (f" and one Gamma({size}) radius" if gp else ""))
    normal = recorder.normals[0]
    unit = normal / numpy.linalg.norm(normal)
    radius = float(recorder.gammas[0][2]) if gp else float(numpy.linalg.norm(normal))
    scale = float(numpy.linalg.norm(noise)) / radius
    if not numpy.allclose(noise, scale * radius * unit, rtol=1e-9, atol=0):
        raise NoiseModelError(f"{label}: the noise is not one scale times the recorded "
                              + ("spherical Laplace" if gp else "Gaussian") + " vector")


def first_crossing(values, threshold, scales, rng):
    """SVT (Alg. 1) for a batch of runs: ``values`` (N, J) their query values, W ~
    Lap(scales[0]) per run and V_j ~ Lap(scales[1]) per query; each run's first j with
    g_j + V_j >= T + W, J where none crosses, every comparison decided as the real numbers
    decide it, as svt's are (runtime/compare.py, svt_crossings)."""
    crossed = compare.svt_crossings(values, threshold, scales, rng)
    return numpy.where(crossed.any(axis=1), crossed.argmax(axis=1), values.shape[1])


def release_noise(model, rng, count, size, scale):
    """``count`` release noise vectors (count, size) of the probed ``scale``: spherical
    Laplace (GP) or N(0, scale^2 I) (CGP), exactly rounded as noise.privatize_vector
    releases one (runtime/exact.py)."""
    sample = exact.spherical_laplace if model == "GP" else exact.gaussian
    return sample(numpy.zeros((count, size)), scale, rng)


class SelectRuns:
    """Batched PrivFuncSelect (Alg. 3 / 7) on one curve, with priv_func_select's arguments;
    ``sample(count, rng, grid)`` returns Runs (details: first_size k0, final size). Two
    ledgers: runs without pruning (k0 = 1 or a split without it) and runs with it."""

    def __init__(self, t, y, spec, *, epsilon=None, rho=None, beta=0.1,
                 split=select.DEFAULT_SPLIT, bound=None, **params):
        module = select.load_module(spec)
        split = select.check_split(split)
        bound = select.release_bound(module, bound, epsilon, rho)
        curve, ledger, _ = prepare_run(t, y, module.curve_interval(**params), epsilon, rho,
                                       beta, _Probe(), bound, module.OUTSIDE)
        select._check_module(module, curve.value_dim)
        self.module, self.params, self.split = module, params, split
        self.c, self.residual, tails = select.prefix_distances(module, curve, params)
        m, n = self.c.shape
        self.energy = (self.c ** 2).sum(axis=1)
        tau = select.noise_target(ledger.model, ledger.share(split[3]), n)
        values = numpy.array([tau(j + 1) for j in range(m)]) - tails
        self.size = (values, 0.0, probe_svt(select.svt, ledger, "select: size", 0.0, 1.0,
                                            *select._svt_pair(ledger, split[0])))
        plain = copy.deepcopy(ledger)
        self.final = probe_release(select.privatize_vector, plain, "select: final release",
                                   floor_float(plain.remaining), m * n)
        self.ledgers = (plain,)
        if split[1] > 0:
            share = ledger.share(split[1])
            tau1 = select.noise_target(ledger.model, share, n)
            self.tau = numpy.array([tau1(r) for r in range(1, m + 1)])
            self.first = probe_release(select.privatize_vector, ledger, "select: first release",
                                       share, m * n)
            self.pruning = probe_svt(select.svt, ledger, "select: pruning", 0.0, 1.0,
                                     *select._svt_pair(ledger, split[2]))
            self.pruned_final = probe_release(select.privatize_vector, ledger,
                                              "select: final release",
                                              floor_float(ledger.remaining), m * n)
            self.ledgers = (plain, ledger)

    def sample(self, count, rng, grid):
        m, n = self.c.shape
        values, threshold, scales = self.size
        k0 = numpy.minimum(first_crossing(numpy.broadcast_to(values, (count, m)), threshold,
                                          scales, rng) + 1, m)
        coefficients, size = numpy.zeros((count, m, n)), numpy.empty(count, dtype=int)
        pruned = (k0 > 1) & (self.split[1] > 0)
        for k in numpy.unique(k0):
            rows = numpy.flatnonzero(k0 == k)
            if pruned[rows[0]]:
                size[rows] = self._prune(rows, k, coefficients, rng)
            else:
                size[rows] = k
                noise = release_noise(self.ledgers[0].model, rng, rows.size, k * n,
                                      self.final).reshape(-1, k, n)
                coefficients[rows, :k] = self.c[:k] + noise
        basis = self.module.orthonormal_basis(numpy.asarray(grid, dtype=float), **self.params)
        return Runs(numpy.einsum("tm,imn->itn", basis, coefficients),
                    {"first_size": k0, "size": size}, self.ledgers, pruned.astype(int))

    def _prune(self, rows, k, coefficients, rng):
        """Steps 3-5 for the runs ``rows`` whose first SVT kept k0 = k: first release,
        ordering by noisy norm, the pruning SVT (tau(r) - dist2, by Pythagoras), final
        release of the chosen coordinates into ``coefficients``; returns the sizes."""
        n, model = self.c.shape[1], self.ledgers[-1].model
        c = self.c[:k]
        noisy = c + release_noise(model, rng, rows.size, k * n, self.first).reshape(-1, k, n)
        order = numpy.argsort(-numpy.linalg.norm(noisy, axis=2), axis=1, kind="stable")
        chosen = numpy.argsort(order, axis=1)[:, None, :] < numpy.arange(1, k + 1)[:, None]
        missed = ((c - noisy) ** 2).sum(axis=2)[:, None, :]
        distance = (self.residual + (chosen * missed).sum(axis=2) + self.energy[k:].sum()
                    + (~chosen * self.energy[:k]).sum(axis=2))
        size = numpy.minimum(first_crossing(self.tau[:k] - numpy.sqrt(distance), 0.0,
                                            self.pruning, rng) + 1, k)
        for s in numpy.unique(size):
            kept = rows[size == s]
            chosen_rows = numpy.sort(order[size == s, :s], axis=1)
            noise = release_noise(model, rng, kept.size, s * n, self.pruned_final)
            noise = noise.reshape(-1, s, n)
            coefficients[kept[:, None], chosen_rows] = self.c[chosen_rows] + noise
        return size


# -- scripted replays (PrivFuncSeg, unbounded) ----------------------------------------------

class _Undecided(Exception):
    """A replay reached a comparison of noise that its script does not decide."""

    def __init__(self, compare):
        super().__init__("undecided comparison")
        self.compare = compare


def _value(x, group):
    return x.value(group) if isinstance(x, _Variate) else x


class _Variate:
    """A scalar noise value in a replay, for a whole group of runs: ``value(group)``
    evaluates it with the float operations the algorithm applied; a comparison asks the
    script."""
    __array_ufunc__ = None      # numpy scalars defer to the reflected operations below

    def __init__(self, script, value):
        self.script, self.value = script, value

    def _derived(self, value):
        return _Variate(self.script, value)

    def __add__(self, other):
        return self._derived(lambda g: self.value(g) + _value(other, g))

    def __radd__(self, other):
        return self._derived(lambda g: other + self.value(g))

    def __sub__(self, other):
        return self._derived(lambda g: self.value(g) - _value(other, g))

    def __rsub__(self, other):
        return self._derived(lambda g: other - self.value(g))

    def __mul__(self, other):
        return self._derived(lambda g: self.value(g) * _value(other, g))

    def __rmul__(self, other):
        return self._derived(lambda g: other * self.value(g))

    def __ge__(self, other):
        return self.script.decide(lambda g: self.value(g) >= _value(other, g))

    def __gt__(self, other):
        return self.script.decide(lambda g: self.value(g) > _value(other, g))

    def __le__(self, other):
        return self.script.decide(lambda g: self.value(g) <= _value(other, g))

    def __lt__(self, other):
        return self.script.decide(lambda g: self.value(g) < _value(other, g))

    def __bool__(self):
        raise TypeError("a replay's noise is only added, scaled and compared")


class _Script:
    """The generator of one replay: the k-th scalar Laplace or normal draw is variate k
    (the same random variable in every replay with the same decisions); comparisons follow
    ``decisions``. Releases are spied, so vector draws never reach it."""

    audit_replay = True  # draws floats: adaptive.noise.draw

    def __init__(self, decisions):
        self.decisions, self.made, self.draws = decisions, 0, 0

    def _variate(self, draw, size):
        if size is not None:
            raise TypeError("a replay draws scalars; releases go through the spy")
        index = self.draws
        self.draws += 1
        return _Variate(self, lambda group: group.variate(index, draw))

    def laplace(self, loc=0.0, scale=1.0, size=None):
        return self._variate(lambda rng, count: rng.laplace(loc, scale, count), size)

    def standard_normal(self, size=None):
        return self._variate(lambda rng, count: rng.standard_normal(count), size)

    def gamma(self, shape, scale=1.0, size=None):
        raise TypeError("a replay draws no Gamma variate; releases go through the spy")

    def decide(self, compare):
        if self.made == len(self.decisions):
            raise _Undecided(compare)
        self.made += 1
        return self.decisions[self.made - 1]


class _Group:
    """Rows of a batch that took the same decisions, with the variates drawn for them."""

    def __init__(self, rows, drawn, rng):
        self.rows, self.drawn, self.rng = rows, drawn, rng

    def variate(self, index, draw):
        if index not in self.drawn:
            self.drawn[index] = draw(self.rng, self.rows.size)
        return self.drawn[index]

    def split(self, mask):
        return [_Group(self.rows[part], {k: v[part] for k, v in self.drawn.items()}, self.rng)
                for part in (mask, ~mask)]


@dataclass(frozen=True)
class _End:
    """A finished replay: the release (PrivateFunction, its coefficients noise-free), the
    spied final release (noise-free vector, model, noise scale)."""
    result: object
    vector: numpy.ndarray
    model: str
    scale: float


class ScriptedRuns:
    """Batched runs of ``algorithm(rng)``: PrivFuncSeg or the unbounded algorithm on one
    input (continuous=False), whose final release goes through ``home.privatize_vector``;
    ``sample(count, rng, grid)`` returns Runs (details: the release's details and its
    number of segments). Cost: one replay per distinct path of decisions, kept for later
    samples (the audit's inputs: 60-150 paths for PrivFuncSeg, 600-1,300 for the unbounded
    algorithm over 120,000 runs), noise-free results shared between replays."""

    def __init__(self, algorithm, home):
        self.algorithm, self.home, self.replays, self.cache = algorithm, home, {}, {}

    def _memo(self, function):
        """``function`` (noise-free: the dyadic projections of a curve, its restriction)
        computed once per plan for each argument list, Curves compared by content."""
        def memoized(*args):
            key = (function,) + tuple((a.t.tobytes(), a.y.tobytes(), a.domain)
                                      if isinstance(a, Curve) else a for a in args)
            if key not in self.cache:
                self.cache[key] = function(*args)
            return self.cache[key]
        return memoized

    def _replay(self, decisions):
        """The comparison where the script ``decisions`` ends, or the _End (cached)."""
        if decisions not in self.replays:
            releases = []

            def spy(installed):
                def spied(vector, ledger, label, share, *, rng, **keywords):
                    vector = clip(vector, keywords.get("bound", math.inf))
                    releases.append((vector, ledger.model,
                                     probe_release(installed, ledger, label, share, vector.size)))
                    return vector
                return spied
            try:
                with patched(self.home, "privatize_vector", spy), \
                        patched(piecewise, "DyadicProjections", self._memo), \
                        patched(Curve, "restricted", self._memo):
                    result = self.algorithm(_Script(decisions))
                self.replays[decisions] = _End(result, *releases[-1])
            except _Undecided as stop:
                self.replays[decisions] = stop.compare
        return self.replays[decisions]

    def sample(self, count, rng, grid):
        grid = numpy.asarray(grid, dtype=float)
        ends, path, parts = [], numpy.empty(count, dtype=int), []
        pending = [((), _Group(numpy.arange(count), {}, rng))]
        while pending:  # one decision-tree node a pass: <= count x the decisions of one run
            decisions, group = pending.pop()
            node = self._replay(decisions)
            if isinstance(node, _End):
                path[group.rows] = len(ends)
                ends.append(node)
                parts.append((group.rows, _release_values(node, grid, rng, group.rows.size)))
                continue
            for outcome, part in zip((True, False), group.split(numpy.asarray(node(group)))):
                if part.rows.size:
                    pending.append((decisions + (outcome,), part))
        values = numpy.empty((count,) + parts[0][1].shape[1:])
        for rows, part in parts:
            values[rows] = part
        details = {name: numpy.array([dict(e.result.details)[name] for e in ends])[path]
                   for name, _ in ends[0].result.details}
        details["segments"] = numpy.array([len(e.result.breakpoints) - 1 for e in ends])[path]
        return Runs(values, details, tuple(e.result.ledger for e in ends), path)


def _release_values(end, grid, rng, count):
    """``count`` releases of a finished path on the grid: its noise-free function plus the
    release noise, both through the piecewise evaluation (zero outside the breakpoints)."""
    breakpoints, vector = end.result.breakpoints, end.vector
    base = end.result.evaluate(grid).reshape(grid.size, -1)
    segment = numpy.clip(numpy.searchsorted(breakpoints, grid, side="right") - 1,
                         0, len(breakpoints) - 2)
    basis = piecewise.local_basis(grid, breakpoints[segment], breakpoints[segment + 1],
                                  vector.shape[1] - 1)
    basis[(grid < breakpoints[0]) | (grid > breakpoints[-1])] = 0.0
    noise = release_noise(end.model, rng, count, vector.size, end.scale).reshape(
        (count,) + vector.shape)
    return base + numpy.einsum("tk,itkr->itr", basis, noise[:, segment])


def seg_runs(t, y, spec, **keywords):
    """Batched adaptive.priv_func_seg(t, y, spec, **keywords) (continuous=False)."""
    module = seg._polynomial_module(spec)
    return ScriptedRuns(lambda rng: seg.priv_func_seg(t, y, module, rng=rng, **keywords), seg)


def unbounded_runs(t, y, spec, **keywords):
    """Batched adaptive.priv_func_unbounded(t, y, spec, **keywords) (continuous=False)."""
    module = seg._polynomial_module(spec)
    return ScriptedRuns(lambda rng: seg.priv_func_unbounded(t, y, module, rng=rng, **keywords),
                        seg)
