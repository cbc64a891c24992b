"""Noisy comparisons decided exactly (docs/threat-model.md, "Exact releases"): a noisy query
value + sum(sign * noise) is compared with a threshold as the real numbers compare it, each
noise a lazily sampled Laplace, normal or Gumbel variate whose bits are extended when a
comparison needs them (exact.py's fast-path balls first, then its interval refinement).
The SVT-style algorithms of the package use them; generated modules do not, so they do not
carry this part."""
import numpy

from .exact import (_GROW, _LEVELS, _LIB_ULPS, _TINY, _U, _Prefixes, _add, _exp_ball,
                    _interval_context, _iv_laplace, _iv_normals, _laplace_ball, _normal_balls,
                    _times, lattice, random_words)


def _lib(mid, rad):
    """A ball after a library function: the radius grows by _LIB_ULPS ulps of the result."""
    return (rad + _LIB_ULPS * 2 * _U * numpy.abs(mid) + _TINY) * _GROW


class Noise:
    """One lazily sampled noise value scale * Z, Z standard Laplace, normal (the cosine
    part of one Box-Muller pair) or Gumbel (-ln(-ln U): report-noisy-max with Gumbel noise
    is the exponential mechanism): its bits are drawn once and extended when a comparison
    needs them, so every comparison it takes part in sees the same real number."""

    def __init__(self, kind, scale, rng, words=None):
        if kind not in ("laplace", "gaussian", "gumbel"):
            raise ValueError(f"noise kind must be laplace, gaussian or gumbel, got {kind!r}")
        lattice(scale)  # a positive finite scale
        self.kind, self.scale, self.rng = kind, float(scale), rng
        self.words = (random_words(rng, 2 if kind == "gaussian" else 1) if words is None
                      else numpy.asarray(words, dtype=numpy.uint64))  # words: drawn already
        self.prefixes = _Prefixes(self.words)

    def ball(self):
        """(mid, rad) of the noise from its first 52 bits per uniform (the fast path)."""
        if self.kind == "laplace":
            mid, rad = _laplace_ball(self.words[:1])
        elif self.kind == "gumbel":
            e, e_rad = _exp_ball(self.words[:1])
            low = e - e_rad
            with numpy.errstate(divide="ignore", invalid="ignore"):
                mid, rad = -numpy.log(e), numpy.where(low > 0, e_rad / low, numpy.inf)
            rad = _lib(mid, rad)
        else:
            mid, _, rad = _normal_balls(self.words[:1], self.words[1:])
        return _times((self.scale, 0.0), (mid, rad))

    def interval(self, iv):
        """The noise as an interval from the bits drawn so far (after at least one extend)."""
        u = self.prefixes.intervals(iv)
        if self.kind == "laplace":
            z = _iv_laplace(iv, u[0], self.words[0])
        elif self.kind == "gumbel":
            z = -iv.log(-iv.log(u[0]))
        else:
            z = _iv_normals(iv, [u[0]], [u[1]], 1)[0]
        return iv.mpf(self.scale) * z

    def __add__(self, other):
        return Noisy(0.0, [(1, self)]) + other

    __radd__ = __add__


class Noisy:
    """value + sum(sign * noise): what a noisy query is; its comparisons are exact."""

    def __init__(self, value, terms):
        self.value, self.terms = float(value), list(terms)

    def __add__(self, other):
        if isinstance(other, Noise):
            return Noisy(self.value, self.terms + [(1, other)])
        if isinstance(other, Noisy):
            return Noisy(self.value + other.value, self.terms + other.terms)
        return Noisy(self.value + float(other), self.terms)  # a query computed in float

    __radd__ = __add__

    def _versus(self, other):
        """(value, threshold, terms) deciding self - other >= 0."""
        if isinstance(other, Noise):
            other = Noisy(0.0, [(1, other)])
        if isinstance(other, Noisy):
            return self.value, other.value, self.terms + [(-s, n) for s, n in other.terms]
        return self.value, float(other), self.terms

    def __ge__(self, other):
        return exceeds(*self._versus(other))

    __gt__ = __ge__  # ties have probability 0

    def __le__(self, other):
        value, threshold, terms = self._versus(other)
        return exceeds(threshold, value, [(-s, n) for s, n in terms])

    __lt__ = __le__


def exceeds(value, threshold, terms):
    """Whether value + sum(sign * noise for sign, noise in terms) >= threshold, for floats
    value and threshold taken as exact, decided as the real numbers decide it (ties have
    probability 0): the float balls first, then 64 more bits per uniform and level."""
    with numpy.errstate(over="ignore", invalid="ignore"):  # overflow: nan, refined below
        mid = numpy.array([value - threshold])
        rad = _U * numpy.abs(mid)
        for sign, noise in terms:
            m, r = noise.ball()
            mid, rad = mid + sign * m, rad + r + _U * numpy.abs(mid + sign * m)
        rad = (rad + _TINY) * _GROW
        if mid[0] - rad[0] > 0 or mid[0] + rad[0] < 0:
            return bool(mid[0] > 0)
    return _refine_sign(value, threshold, terms)


def _refine_sign(value, threshold, terms):
    """The sign of value - threshold + sum(sign * noise) in interval arithmetic, extending
    every noise's bits by one word per uniform and level until it is certain."""
    iv = _interval_context()
    for _ in range(_LEVELS):
        for _, noise in terms:
            noise.prefixes.extend(noise.rng)
        iv.prec = max(noise.prefixes.precision for _, noise in terms) + 64
        total = iv.mpf(value) - iv.mpf(threshold)
        for sign, noise in terms:
            total += sign * noise.interval(iv)
        if total > 0 or total < 0:  # True only when the whole interval is on one side
            return bool(total > 0)
    raise ArithmeticError("exact comparison: undecided after 64 refinements (p < 2^-4000)")


def svt_crossings(values, threshold, scales, rng):
    """Whether g_j + V_j >= T + W for a batch of SVT runs (the auditor's batched runs of
    paper Alg. 1): ``values`` (N, J), W ~ Lap(scales[0]) per run, V_j ~ Lap(scales[1]) per
    query, each comparison decided as the real numbers decide it: float balls for all, then
    the rare undecided ones by ``exceeds`` with Noise objects of the same words."""
    count, queries = values.shape
    w_words = random_words(rng, count)
    v_words = random_words(rng, count * queries).reshape(count, queries)
    w, v = (_times((scale, 0.0), _laplace_ball(words))
            for scale, words in zip(scales, (w_words, v_words)))
    gap = _add(_add((values, 0.0), (-float(threshold), 0.0)), v)
    total = _add(gap, (-w[0][:, None], w[1][:, None]))
    crossed = total[0] - total[1] > 0
    thresholds = {}  # one W per run, however many of its comparisons are refined
    for run, query in zip(*numpy.nonzero(~crossed & (total[0] + total[1] >= 0))):
        if run not in thresholds:
            thresholds[run] = Noise("laplace", scales[0], rng, words=[w_words[run]])
        query_noise = Noise("laplace", scales[1], rng, words=[v_words[run, query]])
        crossed[run, query] = exceeds(float(values[run, query]), float(threshold),
                                      [(1, query_noise), (-1, thresholds[run])])
    return crossed
