"""Exact releases (docs/threat-model.md, "Exact releases").

Every released number is round_gamma(x + scale Z): the ideal mechanism's real-valued output
(x the float input taken as an exact rational, Z the paper's real noise) rounded to the
nearest point of the public lattice gamma Z (ties to even), gamma = lattice(scale). Every
noisy comparison is decided as the real numbers decide it. The release is a post-processing
of the ideal mechanism, so the paper's theorems hold with no floating-point loss in the noise.

Noise as a function of random bits (the partially sampled random number technique): each
uniform is U = (m + V) 2^-52, m the top 52 bits of a 64-bit word and V in [0, 1) the bits of
further words, drawn only when needed. The ideal variates are
- Exp(1): E = -ln U; Laplace: a sign bit (the word's lowest bit) times E;
- normal pairs (Box-Muller): sqrt(-2 ln U1) (cos, sin)(2 pi U2); a vector of n normals takes
  ceil(n/2) pairs, the cosine parts first, then the sine parts;
- spherical Laplace in R^d (paper Thm 3.2): Z = R N / |N|, R = E_1 + ... + E_d ~ Gamma(d)
  and N a vector of d normals.
A vectorized float64 pass bounds every output rigorously (ball arithmetic: a midpoint and a
radius that covers the bits not drawn and every rounding error, under one assumption: NumPy's
log, cos and sin err by at most _LIB_ULPS ulps, checked in tests/test_exact.py) and decides
almost every coordinate. A coordinate whose ball meets two lattice cells is recomputed with
64 more bits per uniform in mpmath interval arithmetic, until its cell is certain.
"""
import math

import numpy

LATTICE_BITS = 16  # gamma = 2^(floor(log2 scale) - LATTICE_BITS): docs/threat-model.md
_U = 2.0 ** -53  # unit roundoff: a correctly rounded operation errs by <= _U |result|
_LIB_ULPS = 4  # assumed error bound of numpy.log, numpy.cos, numpy.sin in ulps (<= 2 _U |v|)
_TINY = 2.0 ** -1000  # an absolute floor under every radius (covers underflow)
_GROW = 1 + 2.0 ** -40  # covers the rounding of the few operations that form a radius
_LEVELS = 64  # refinement levels before giving up (probability < 2^-4000 per coordinate)


def lattice(scale):
    """The public lattice step gamma of a noise scale: the largest power of two <= scale,
    times 2^-LATTICE_BITS (a function of public values only)."""
    if not (math.isfinite(scale) and scale >= 2.0 ** (LATTICE_BITS - 1022)):
        raise ValueError(f"a noise scale must be finite and at least 2^{LATTICE_BITS - 1022} "
                         f"(its lattice step a normal float), got {scale!r}")
    return math.ldexp(1.0, math.frexp(scale)[1] - 1 - LATTICE_BITS)


def random_words(rng, count):
    """``count`` random 64-bit words: a SecureGenerator's OS entropy, or the stream of a
    seeded numpy Generator (tests: the same exact-rounding semantics, reproducibly)."""
    if hasattr(rng, "_words"):
        return numpy.array(rng._words(count), dtype=numpy.uint64)
    return rng.integers(0, 1 << 64, size=count, dtype=numpy.uint64, endpoint=False)


# -- the fast path: balls (mid, rad) in float64 -------------------------------------------


def _lib(mid, rad):
    """A ball after a library function: the radius grows by _LIB_ULPS ulps of the result."""
    return (rad + _LIB_ULPS * 2 * _U * numpy.abs(mid) + _TINY) * _GROW


def _times(a, b):
    """The ball of a product: |xy - ab| <= |a| rb + |b| ra + ra rb, plus its rounding."""
    mid = a[0] * b[0]
    rad = numpy.abs(a[0]) * b[1] + numpy.abs(b[0]) * a[1] + a[1] * b[1]
    return mid, (rad + _U * numpy.abs(mid) + _TINY) * _GROW


def _laplace_ball(words):
    """Laplace = a sign bit (the word's lowest) times E = -ln U."""
    mid, rad = _exp_ball(words)
    return numpy.where(words & numpy.uint64(1), -mid, mid), rad


def _exp_ball(words):
    """E = -ln U with U in [m, m + 1] 2^-52: at the midpoint (2m + 1) 2^-53, radius the slope
    bound 2^-53 / (m 2^-52) = 1 / (2m); m = 0 gives an infinite radius (refined later)."""
    m = (words >> numpy.uint64(12)).astype(float)
    mid = m * 2.0
    mid += 1.0
    mid *= 2.0 ** -53
    numpy.log(mid, out=mid)
    numpy.negative(mid, out=mid)
    with numpy.errstate(divide="ignore"):
        rad = numpy.divide(0.5, m, out=m)
    rad += (2 * _LIB_ULPS * _U) * mid
    rad += _TINY
    rad *= _GROW
    return mid, rad


def _sqrt_ball(a):
    """sqrt of a ball of non-negative reals: for x in [m - r, m + r],
    |sqrt(x) - sqrt(m)| = |x - m| / (sqrt(x) + sqrt(m)) <= r / (sqrt(max(m - r, 0)) + sqrt(m))."""
    mid = numpy.sqrt(a[0])
    low = numpy.sqrt(numpy.maximum(a[0] - a[1], 0.0)) + mid
    with numpy.errstate(divide="ignore", invalid="ignore"):
        rad = a[1] / low
    return mid, (rad + _U * mid + _TINY) * _GROW


# |theta - 2 pi U| <= 2 pi 2^-53 (the bits not drawn) + 2^-51 (2 pi as a float) + 2^-51
# (the product's rounding) < 24 _U; |cos|, |sin| <= 1, so the library's error is below
# 2 _LIB_ULPS _U, and the product's rounding below 2 _U of the radius r (|N| <= r).
_ANGLE = (24 + 2 * _LIB_ULPS + 4) * _U


def _normal_balls(first, second):
    """Box-Muller from two arrays of words: the cosine parts, the sine parts, and one
    radius for both: |N - r cos| <= rad(r) + r _ANGLE (with a cross term below _GROW)."""
    e_mid, e_rad = _exp_ball(first)
    e_mid *= 2.0
    e_rad *= 2.0
    r, r_rad = _sqrt_ball((e_mid, e_rad))
    theta = ((second >> numpy.uint64(12)).astype(float) * 2 + 1) * (2.0 ** -53 * 2 * math.pi)
    cos, sin = numpy.cos(theta), numpy.sin(theta, out=theta)
    cos *= r
    sin *= r
    r *= _ANGLE
    r += r_rad
    r += _TINY
    r *= _GROW
    return cos, sin, r


def _pair_layout(n):
    """Pairs for n normals: ceil(n/2); element i < pairs is the cosine part of pair i,
    element pairs + i the sine part of pair i."""
    return (n + 1) // 2


def _normals(words, n):
    """Balls of n normals (last axis) from words of shape (..., 2 pairs)."""
    pairs = _pair_layout(n)
    cos, sin, rad = _normal_balls(words[..., :pairs], words[..., pairs:])
    return (numpy.concatenate([cos, sin], axis=-1)[..., :n],
            numpy.concatenate([rad, rad], axis=-1)[..., :n])


def _tree_sum(values):
    """Pairwise sum over the last axis in a fixed order, and its number of levels L: for
    non-negative terms the float sum errs by at most L _U (1 + small) times the sum."""
    levels = 0
    while values.shape[-1] > 1:
        if values.shape[-1] % 2:
            values = numpy.concatenate([values, numpy.zeros(values.shape[:-1] + (1,))], -1)
        values = values[..., 0::2] + values[..., 1::2]
        levels += 1
    return values[..., 0], levels


def _sum_ball(mid, rad):
    """The ball of a sum of balls of non-negative reals over the last axis."""
    total, levels = _tree_sum(mid)
    spread, _ = _tree_sum(rad)
    rad = spread * (1 + 2 * levels * _U) + (levels + 1) * _U * total
    return total, (rad + _TINY) * _GROW


def _spherical_balls(words, d):
    """Balls of Z = R N / |N| per row, from words (..., d) for R then (..., 2 pairs) for N."""
    radius = _sum_ball(*_exp_ball(words[..., :d]))
    normal = _normals(words[..., d:], d)
    norm = _sqrt_ball(_sum_ball(*_times(normal, normal)))
    low = norm[0] - norm[1]
    with numpy.errstate(divide="ignore", invalid="ignore"):
        factor = radius[0] / norm[0]
        rad = (radius[1] + factor * norm[1]) / low
    rad = numpy.where(low > 0, (rad + _U * factor + _TINY) * _GROW, numpy.inf)
    return _times((factor[..., None], rad[..., None]), normal)


_SHIFT = 1.5 * 2.0 ** 52  # (v + _SHIFT) - _SHIFT rounds v to an integer, ties to even


def _rint(v):
    """numpy.rint, by the shift (exact for |v| < 2^51; numpy.rint beyond), several times
    faster."""
    if not numpy.abs(v).max(initial=0.0) < 2.0 ** 51:
        return numpy.rint(v)
    out = v + _SHIFT
    out -= _SHIFT
    return out


def _decide(x, scale, noise, gamma):
    """round_gamma(x + scale z) for z in the ball ``noise``: (release, decided). With
    k = rint(x / gamma), r = x - k gamma is exact, and the release is (k + j) gamma with j
    the cell of r + scale z when both ends of its ball fall in one cell."""
    k = _rint(x / gamma)
    r = x - k * gamma
    v = _times((scale, 0.0), noise)
    mid = r + v[0]
    rad = (v[1] + 2 * _U * numpy.abs(mid) + _TINY) * _GROW
    low, high = _rint((mid - rad) / gamma), _rint((mid + rad) / gamma)
    return (k + low) * gamma + 0.0, low == high


# -- the rigorous fallback: mpmath intervals on longer prefixes ---------------------------


class _Prefixes:
    """The bits drawn so far of a group of uniforms: U_i in [M_i, M_i + 1] 2^-bits."""

    def __init__(self, words):
        self.values = [int(w) >> 12 for w in words]
        self.bits = 52

    def extend(self, rng):
        """64 more bits for every uniform (drawn in order, one word each)."""
        fresh = random_words(rng, len(self.values))
        self.values = [(v << 64) | int(w) for v, w in zip(self.values, fresh)]
        self.bits += 64

    def intervals(self, iv):
        step = iv.mpf(2) ** -self.bits
        return [iv.mpf([v, v + 1]) * step for v in self.values]


def _iv_normals(iv, first, second, n):
    """Interval normals from interval uniforms (the layout of _pair_layout)."""
    cos, sin = [], []
    for u1, u2 in zip(first, second):
        radius = iv.sqrt(-2 * iv.log(u1))
        angle = 2 * iv.pi * u2
        cos.append(radius * iv.cos(angle))
        sin.append(radius * iv.sin(angle))
    return (cos + sin)[:n]


def _iv_laplace(iv, u, word):
    """The Laplace variate of an interval uniform u and its word's sign bit."""
    return -iv.log(u) * (-1 if int(word) & 1 else 1)


def _index(end, power):
    """The nearest integer (ties to even) to an exact mpmath endpoint (sign, man, exp, bc)
    divided by gamma = 2^power, in integer arithmetic; None for an infinite endpoint."""
    sign, man, exp, _ = end
    if not man:
        return None if exp else 0
    man, shift = (-man if sign else man), exp - power
    if shift >= 0:
        return man << shift
    n = man >> -shift
    rest, half = man - (n << -shift), 1 << (-shift - 1)
    return n + (rest > half or (rest == half and n & 1))


def _nearest(value, gamma):
    """The lattice index of an interval if both its ends round to one, else None."""
    power = math.frexp(gamma)[1] - 1
    low, high = (_index(end, power) for end in value._mpi_)  # mpmath 1.3 endpoints
    return low if low is not None and low == high else None


def _interval_context():
    """A private mpmath interval context: its precision is this call's alone (mpmath.iv's
    is global to the process, so threads refining at once would change each other's)."""
    from mpmath.ctx_iv import MPIntervalContext
    return MPIntervalContext()


def _refine(rng, words, compute, gamma):
    """Lattice indices of the outputs of ``compute(iv, uniforms)`` (intervals), refined by 64
    bits per uniform and level until every output lies in one lattice cell."""
    iv = _interval_context()
    prefixes = _Prefixes(words)
    for _ in range(_LEVELS):
        prefixes.extend(rng)
        iv.prec = prefixes.bits + 64
        cells = [_nearest(v, gamma) for v in compute(iv, prefixes.intervals(iv))]
        if None not in cells:
            return cells
    raise ArithmeticError("exact noise: no lattice cell after 64 refinements (p < 2^-4000)")


def _finish(x, scale, words, balls, gamma, rng, rows, compute):
    """Releases of a batch of rows: decided by the fast path where possible, the undecided
    rows refined one by one (their order fixed, so a seeded rng is reproducible)."""
    out, decided = _decide(x, scale, balls, gamma)
    for row in numpy.flatnonzero(~decided.reshape(rows, -1).all(axis=1)):
        xs = x.reshape(rows, -1)[row]

        def cells(iv, uniforms, xs=xs):
            s = iv.mpf(float(scale))
            return [iv.mpf(float(a)) + s * z for a, z in zip(xs, compute(iv, uniforms))]
        out.reshape(rows, -1)[row] = [c * gamma + 0.0 for c in
                                      _refine(rng, words.reshape(rows, -1)[row], cells, gamma)]
    return out


def _as_input(x):
    x = numpy.array(x, dtype=float)
    if not numpy.isfinite(x).all():
        raise ValueError("exact noise: the input contains NaN or infinite values")
    return x


def gaussian(x, scale, rng):
    """round_gamma(x + scale N), N iid standard normal per entry of x (any shape),
    gamma = lattice(scale): CGP (paper Thm 3.3) and the Gaussian mechanisms."""
    x, gamma = _as_input(x), lattice(scale)
    n = x.size
    pairs = _pair_layout(n)
    words = random_words(rng, 2 * pairs)  # the U1 of every pair, then the U2
    balls = tuple(ball.reshape(x.shape) for ball in _normals(words, n))
    out, decided = _decide(x, scale, balls, gamma)
    flat, ok = out.reshape(-1), decided.reshape(-1)
    for pair in sorted({i % pairs for i in numpy.flatnonzero(~ok)}):
        members = [i for i in (pair, pair + pairs) if i < n]

        def cells(iv, u, members=members):
            s = iv.mpf(float(scale))
            z = _iv_normals(iv, [u[0]], [u[1]], 2)
            return [iv.mpf(float(x.flat[i])) + s * z[j] for j, i in enumerate(members)]
        for i, c in zip(members, _refine(rng, words[[pair, pairs + pair]], cells, gamma)):
            flat[i] = c * gamma + 0.0
    return out


def laplace(x, scale, rng):
    """round_gamma(x + scale L), L iid standard Laplace per entry of x (any shape)."""
    x, gamma = _as_input(x), lattice(scale)
    words = random_words(rng, x.size).reshape(x.shape)
    out, decided = _decide(x, scale, _laplace_ball(words), gamma)
    for i in numpy.flatnonzero(~decided.reshape(-1)):
        def cells(iv, u, i=i):
            return [iv.mpf(float(x.flat[i]))
                    + iv.mpf(float(scale)) * _iv_laplace(iv, u[0], words.flat[i])]
        out.flat[i] = _refine(rng, words.flat[i:i + 1], cells, gamma)[0] * gamma + 0.0
    return out


def spherical_laplace(x, scale, rng):
    """round_gamma(x + scale Z) per row of x (..., d): Z spherical Laplace in R^d, density
    proportional to exp(-|z|) (epsilon-GP with scale 1/epsilon, paper Thm 3.2)."""
    x, gamma = _as_input(x), lattice(scale)
    d = x.shape[-1]
    rows = x.size // d if d else 0
    width = d + 2 * _pair_layout(d)
    words = random_words(rng, rows * width).reshape(x.shape[:-1] + (width,))
    balls = _spherical_balls(words, d)

    def compute(iv, u):
        radius = sum((-iv.log(v) for v in u[:d]), iv.mpf(0))
        pairs = _pair_layout(d)
        normal = _iv_normals(iv, u[d:d + pairs], u[d + pairs:], d)
        norm = iv.sqrt(sum((v * v for v in normal), iv.mpf(0)))
        return [radius * v / norm for v in normal]
    return _finish(x, scale, words, balls, gamma, rng, rows, compute)


# -- noisy comparisons: decided as the real numbers decide them ---------------------------


class Noise:
    """One lazily sampled noise value scale * Z, Z standard Laplace, normal (the cosine
    part of one Box-Muller pair) or Gumbel (-ln(-ln U): report-noisy-max with Gumbel noise
    is the exponential mechanism): its bits are drawn once and extended when a comparison
    needs them, so every comparison it takes part in sees the same real number."""

    def __init__(self, kind, scale, rng):
        if kind not in ("laplace", "gaussian", "gumbel"):
            raise ValueError(f"noise kind must be laplace, gaussian or gumbel, got {kind!r}")
        lattice(scale)  # a positive finite scale
        self.kind, self.scale, self.rng = kind, float(scale), rng
        self.words = random_words(rng, 2 if kind == "gaussian" else 1)
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
        iv.prec = max(noise.prefixes.bits for _, noise in terms) + 64
        total = iv.mpf(value) - iv.mpf(threshold)
        for sign, noise in terms:
            total += sign * noise.interval(iv)
        if total > 0 or total < 0:  # True only when the whole interval is on one side
            return bool(total > 0)
    raise ArithmeticError("exact comparison: undecided after 64 refinements (p < 2^-4000)")
