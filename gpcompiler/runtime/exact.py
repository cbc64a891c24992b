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
  and N a vector of d normals whose ceil(d/2) pairs take their radii sqrt(2 E_i) from the
  first E_i (so R is Gamma(d) and independent of the direction: see _spherical_balls).
A vectorized float64 pass bounds every output rigorously (ball arithmetic: a midpoint and a
radius that covers the bits not drawn and every rounding error, under one assumption: NumPy's
log and tan err by at most _LIB_ULPS ulps, checked in tests/test_exact.py) and decides
almost every coordinate. A coordinate whose ball meets two lattice cells is recomputed with
64 more bits per uniform in mpmath interval arithmetic, until its cell is certain. Noisy
comparisons are in compare.py (the package's only).
"""
import math

import numpy

LATTICE_BITS = 16  # gamma = 2^(floor(log2 scale) - LATTICE_BITS): docs/threat-model.md
_U = 2.0 ** -53  # unit roundoff: a correctly rounded operation errs by <= _U |result|
_LIB_ULPS = 4  # assumed error bound of numpy.log and numpy.tan in ulps (<= 2 _U |v|)
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
        return numpy.asarray(rng._words(count), dtype=numpy.uint64)  # read only: never written
    return rng.integers(0, 1 << 64, size=count, dtype=numpy.uint64, endpoint=False)


def _keyed(rng):
    """Whether rng gives words by address (a KeyedGenerator: docs/reference/randomness.md)."""
    return hasattr(rng, "_row_words")


def _layout_words(rng, rows, width):
    """The level-0 words (rows, width) of ``rows`` rows of ``width`` uniforms, and the rows'
    addresses: by address (row, index, 0) from a keyed rng, else drawn in order (None)."""
    if _keyed(rng):
        at = rng._reserve(rows)
        return rng._row_words(at, width), at
    return random_words(rng, rows * width).reshape(rows, width), None


def _prefixes(words, at, row, indices):
    """The uniforms of the level-0 ``words`` at places ``indices`` of row ``row``'s layout,
    with their addresses when keyed (``at``: the rows' addresses, else None)."""
    return _Prefixes(words, None if at is None else [(at[row], int(i)) for i in indices])


# -- the fast path: balls (mid, rad) in float64 -------------------------------------------


def _times(a, b):
    """The ball of a product: |xy - ab| <= |a| rb + |b| ra + ra rb, plus its rounding."""
    mid = a[0] * b[0]
    rad = numpy.abs(a[0]) * b[1] + numpy.abs(b[0]) * a[1] + a[1] * b[1]
    return mid, (rad + _U * numpy.abs(mid) + _TINY) * _GROW


def _laplace_ball(words):
    """Laplace = a sign bit (the word's lowest) times E = -ln U."""
    mid, rad = _exp_ball(words)
    return numpy.where(words & numpy.uint64(1), -mid, mid), rad


_HALF_BELOW_ONE = 1 - 2.0 ** -53


def _uniform_mids(words):
    """The midpoints (2m + 1) 2^-53 of the uniforms' intervals [m, m + 1] 2^-52, m the top 52
    bits of each word, exactly: with m as its mantissa, a float is 1 + m 2^-52, and taking
    1 - 2^-53 from it is exact (the difference is a float). No integer-to-float conversion."""
    bits = words >> numpy.uint64(12)
    bits |= numpy.uint64(0x3FF0000000000000)
    mids = bits.view(float)
    mids -= _HALF_BELOW_ONE
    return mids


def _exp_ball(words):
    """E = -ln U with U in [m, m + 1] 2^-52: at the midpoint u = (2m + 1) 2^-53, radius the
    slope bound 2^-53 / (m 2^-52) = 1 / (2m) <= 2 / (2m + 1) = 2^-52 / u (m >= 1), plus the
    library's _LIB_ULPS ulps; m = 0 (u = 2^-53) gives an infinite radius (refined later)."""
    e, v = _exponentials(words)
    return e, _exp_radius(e, v)


def _exponentials(words):
    """(e, v): E = -ln U at the uniforms' midpoints u (_uniform_mids) and v = 1/u, v = inf
    where m = 0 (u = 2^-53: E unbounded above)."""
    u = _uniform_mids(words)
    v = numpy.divide(1.0, u)
    if u.size and u.min() == 2.0 ** -53:
        v[u == 2.0 ** -53] = numpy.inf
    return numpy.negative(numpy.log(u, out=u), out=u), v


def _exp_radius(e, v):
    """E's radius (_exp_ball): the slope bound 2^-52 v plus the library's error 2 _LIB_ULPS
    _U e, and the rounding of this sum."""
    rad = 2.0 ** -52 * v
    rad += (2 * _LIB_ULPS * _U) * e
    rad += _TINY
    rad *= _GROW
    return rad


# The angle theta = 2 pi U (docs/design.md, "Noise as a function of random bits"): with b, c
# the word's top two bits, S = 2U - b in [0, 1) and R = min(S, 1 - S) in [0, 1/2],
# theta = pi b + pi S gives cos theta = (-1)^(b xor c) cos 2x and sin theta = (-1)^b sin 2x,
# x = pi R / 2 in [0, pi/4]. From r = R's midpoint (exact), |fl(r fl(pi/2)) - x| <= (pi/2)
# (2^-52 + _U/2 + _U/2) < 5 _U, so 2x errs by < 10 _U; tan's _LIB_ULPS ulps move 2 arctan t
# by at most 2 _LIB_ULPS _U (its slope 2 / (1 + t^2) <= 1 / t); and (1 - t^2, 2t) / (1 + t^2),
# computed as (w - 1, t w) with w = 2 / (1 + t^2) in [1, 2] within 2.5 _U (1 + 2^-40)
# relatively (w - 1 exact), errs by at most 5 _U (1 + 2^-40) + _U. Hence _TRIG (the angle
# 10, the tangent 2 _LIB_ULPS, the map 7), and _ANGLE with the product's rounding.
_TRIG = (10 + 2 * _LIB_ULPS + 7) * _U  # |cos~ - cos 2 pi U| and the same for sin
_ANGLE = _TRIG + 4 * _U
_SIGN = numpy.uint64(1 << 63)


def _angles(words):
    """cos and sin of theta = 2 pi U, each within _TRIG (see above), by one tangent of an
    angle in [0, pi/4] (libm's cosine and sine are slower, and slowest on [0, 2 pi))."""
    r = (words >> numpy.uint64(11)) & numpy.uint64((1 << 52) - 1)  # the bits of S, from bit 62
    r |= numpy.uint64(0x3FF0000000000001)  # 1 + (2 m' + 1) 2^-52: S's midpoint plus one
    r = r.view(float)
    r -= 1.0
    numpy.minimum(r, 1.0 - r, out=r)
    r *= math.pi / 2
    t = numpy.tan(r, out=r)
    w = numpy.multiply(t, t)
    w += 1.0
    numpy.divide(2.0, w, out=w)
    t *= w  # sin 2x
    w -= 1.0  # cos 2x
    sign = words & _SIGN
    t.view(numpy.uint64)[...] ^= sign
    sign ^= words << numpy.uint64(1) & _SIGN
    w.view(numpy.uint64)[...] ^= sign
    return w, t


def _root_ball(e_mid, e_rad, times=1.0):
    """sqrt(times E) for E in the ball (e_mid, e_rad), e_mid > 0, times a power of two:
    |sqrt(tE) - sqrt(te)| = t |E - e| / (sqrt(tE) + sqrt(te)) <= t rad / sqrt(te), and the
    square root's rounding (_U); the mid times e_mid stays exact. Radius inf if e_mid = 0."""
    g = numpy.sqrt(e_mid * times)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        rad = (e_rad * times) / g
    rad += _U * g
    rad += _TINY
    rad *= _GROW
    return g, rad


def _normal_balls(first, second):
    """Box-Muller from two arrays of words: the cosine parts, the sine parts, and one
    radius for both: |N - r cos| <= rad(r) + r _ANGLE (with a cross term below _GROW)."""
    r, r_rad = _root_ball(*_exp_ball(first), times=2.0)
    cos, sin = _angles(second)
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


def _tree_sum(values):
    """Pairwise sum over the last axis in a fixed tree (zeros appended up to a power of two:
    exact), and its number of levels L: for non-negative terms the float sum errs by at most
    L _U (1 + small) times the sum."""
    n = values.shape[-1]
    if n == 0:
        return numpy.zeros(values.shape[:-1]), 0
    levels = (n - 1).bit_length()
    if n != 1 << levels:
        values = numpy.concatenate([values, numpy.zeros(values.shape[:-1] + ((1 << levels) - n,))],
                                   axis=-1)
    for level in range(levels, 0, -1):
        half = 1 << (level - 1)
        values = values[..., :half] + values[..., half:]
    return values[..., 0], levels


def _add(a, b):
    """The ball of a sum of two balls: the radii plus the rounding of the sum."""
    mid = a[0] + b[0]
    return mid, (a[1] + b[1] + _U * numpy.abs(mid) + _TINY) * _GROW


_MT_VALUES = 8192  # from this many tail exponentials per call, Marsaglia-Tsang draws them
_MT_SHAPE = 16  # ... if a row's tail has at least this many (below, the sum is faster)


def _tail_words(d, rows):
    """Words per row for the rest of the radius, G ~ Gamma(a), a = d - ceil(d/2): a words
    for a sum of a exponentials, or, when a >= _MT_SHAPE and rows * a >= _MT_VALUES (then
    fewer words and logarithms pay for its fixed cost), 3 for a first Marsaglia-Tsang
    attempt. Both are exact Gamma(a); the choice depends on the shapes only."""
    return 3 if _drawn_by_mt(d, rows) else d - _pair_layout(d)


def _drawn_by_mt(d, rows):
    """Whether the radius's tail Gamma(d - ceil(d/2)) is drawn by Marsaglia-Tsang; rows None
    (a keyed release: its words must not depend on the batch) whenever a >= _MT_SHAPE."""
    a = d - _pair_layout(d)
    return a >= _MT_SHAPE and (rows is None or rows * a >= _MT_VALUES)


def _spherical_width(d, rows=1):
    """Words per row of a spherical Laplace sample in R^d: p = ceil(d/2) for the normal
    pairs' exponentials E_1..E_p, p angles, and the words of the radius's tail."""
    return 2 * _pair_layout(d) + _tail_words(d, rows)


def _exp_tail(words):
    """The ball of G = E_1 + ... + E_a per row from a words (rows, a) (_exp_sum)."""
    return _exp_sum(*_exponentials(words))


def _spherical_balls(words, d, unit, tail):
    """Balls of unit Z per row, Z = R N / |N| spherical Laplace in R^d (paper Thm 3.2), from
    words (..., 2p), p = ceil(d/2) pairs, and the ball ``tail`` (mid, rad) per row of
    G ~ Gamma(d - p) (_gamma_tail; None when d = 1): E_i = -ln U_i from the first p words,
    R = E_1 + ... + E_p + G ~ Gamma(d), and the normals N of the pairs (sqrt(2 E_i), the
    angle of word p + i), cosine parts first. Then |N|^2 / 2 = H = E_1 + ... + E_p for even
    d (for odd d the last pair's sine part is dropped: H = E_1 + ... + E_(p-1) + E_p cos^2),
    R - H is independent of N (G, and for odd d the dropped sine part's E_p sin^2), so R is
    Gamma(d) and independent of the direction N / |N|, as the law requires.
    Z_k = F sqrt(E_i) cos(theta_i) (or sin) with F = R / sqrt(H): the factor sqrt(2) cancels.

    Returns (mid, rad): mid (..., 2, p), the cosine parts then the sine parts (for odd d the
    last sine part is not part of Z), and rad (..., 1, p), one radius for both parts of a
    pair. With v = 1/u the uniform's midpoint, E's radius is 2^-52 v + 8 _U E (_exp_ball);
    G = sqrt(E) is within rad_E / g~ + _U g~ of g~, and rad_E / g~ <= 2^-52 v / g~
    + 8 _U (1 + 2 _U) g~. The float product fl(fl(F'~ g~) c~), F' = unit F, is within
    |F'~| (rad_G (1 + delta) + g~ (delta + _TRIG + 2.01 _U)) of F' G C, delta = rad_F / |F'~|
    (|G C - g~ c~| <= rad_G + g~ _TRIG since |C| <= 1; |c~| <= 1 + _TRIG). So the radius is
    a v / g~ + b g~ with per-row a, b; unit is a float taken as exact."""
    p = _pair_layout(d)
    e, v = _exponentials(words[..., :p])
    cos, sin = _angles(words[..., p:2 * p])
    half = _exp_sum(e[..., :d // 2], v[..., :d // 2])
    if d % 2:  # R gains E_p; H gains E_p cos^2: the cosine ball (cos~, _TRIG) squared
        last = (e[..., p - 1], _exp_radius(e[..., p - 1], v[..., p - 1]))
        radius = _add(half, last)
        half = _add(half, _times(last, _times((cos[..., p - 1], _TRIG), (cos[..., p - 1], _TRIG))))
    else:
        radius = half
    if tail is not None:
        radius = _add(radius, tail)
    root = _root_ball(*half)
    low = root[0] - root[1]
    factor = radius[0] / root[0] * unit  # R >= E_1 > 0 and H >= E_1 > 0
    ratios = (radius[1] / radius[0],  # the relative radii of R and 1/sqrt(H)
              numpy.divide(root[1], low, out=numpy.full(low.shape, numpy.inf), where=low > 0))
    delta = (ratios[0] + ratios[1] + ratios[0] * ratios[1] + 4 * _U) * _GROW
    size = numpy.abs(factor) * _GROW ** 2
    a = (size * (1 + delta) * 2.0 ** -52)[..., None, None] + _TINY
    b = (size * ((1 + delta) * (9 + 2.0 ** -40) * _U + delta + _TRIG + 2.01 * _U))[..., None, None]
    g = numpy.sqrt(e[..., None, :])
    rad = numpy.divide(v[..., None, :], g)
    rad *= a
    rad += numpy.multiply(g, b, out=v[..., None, :])
    g *= factor[..., None, None]
    mid = numpy.empty(g.shape[:-2] + (2, p))
    numpy.multiply(g[..., 0, :], cos, out=mid[..., 0, :])
    numpy.multiply(g[..., 0, :], sin, out=mid[..., 1, :])
    return mid, rad


def _mt_constants(a):
    """Balls of Marsaglia and Tsang's constants for Gamma(a), a >= 1 an integer:
    dd = a - 1/3 (one division of integers: _U) and c = 1 / sqrt(9 dd) = 1 / sqrt(9a - 3)
    (a square root and a division: 2 _U)."""
    dd, c = (3 * a - 1) / 3, 1 / math.sqrt(9 * a - 3)
    return (dd, dd * _U * _GROW), (c, 2.01 * _U * c * _GROW)


def _mt_balls(words, a):
    """One Marsaglia-Tsang attempt per row from words (rows, 3) (2000, ACM TOMS 26: exact
    for a >= 1): x the cosine part of the Box-Muller pair of words 0 and 1, U from word 2,
    w = 1 + c x; accept when w > 0 and f = x^2/2 + dd (1 - w^3 + 3 ln w) - ln U > 0, then
    G = dd w^3 ~ Gamma(a). Returns (G's ball, accepted, rejected) as balls decide them (a row
    in neither is decided by _mt_refine)."""
    dd, c = _mt_constants(a)
    x_mid, _, x_rad = _normal_balls(words[:, 0], words[:, 1])
    x = (x_mid, x_rad)
    w = _add((1.0, 0.0), _times(c, x))
    low = w[0] - w[1]
    positive = low > 0
    log_w = numpy.log(numpy.where(positive, w[0], 1.0))
    log_rad = (w[1] / numpy.where(positive, low, 1.0) + 2 * _LIB_ULPS * _U * numpy.abs(log_w)
               + _TINY) * _GROW  # |ln W - ln w~| <= rad / low, and the library's ulps
    cube = _times(_times(w, w), w)
    inner = _add(_add((1.0, 0.0), (-cube[0], cube[1])), _times((3.0, 0.0), (log_w, log_rad)))
    square = _times(x, x)
    f = _add(_add((square[0] * 0.5, square[1] * 0.5), _times(dd, inner)), _exp_ball(words[:, 2]))
    accepted = positive & (f[0] - f[1] > 0)
    rejected = (w[0] + w[1] <= 0) | (positive & (f[0] + f[1] < 0))
    return _times(dd, cube), accepted, rejected


def _iv_mt(iv, u, a):
    """Marsaglia-Tsang's x, w, f and G in interval arithmetic from interval uniforms u."""
    dd, c = iv.mpf(3 * a - 1) / 3, 1 / iv.sqrt(iv.mpf(9 * a - 3))
    x = _iv_normals(iv, u[:1], u[1:2], 1)[0]
    w = 1 + c * x
    return w, (lambda: x * x / 2 + dd * (1 - w ** 3 + 3 * iv.log(w)) - iv.log(u[2])), dd * w ** 3


def _mt_refine(rng, words, a, addresses=None):
    """Decide one attempt exactly (64 more bits per uniform and level): (accepted, the
    prefixes of its x pair, G's ball) or (False, None, None). addresses: the words' (row,
    index) with a keyed rng."""
    iv = _interval_context()
    prefixes = _Prefixes(words, addresses)
    for _ in range(_LEVELS):
        prefixes.extend(rng)
        iv.prec = prefixes.precision + 64
        w, f, g = _iv_mt(iv, prefixes.intervals(iv), a)
        if w < 0 or (w > 0 and f() < 0):  # True only when the whole interval is on one side
            return False, None, None
        if w > 0 and f() > 0:
            mid = float(g.mid)
            pair = _Prefixes((), addresses and addresses[:2])
            pair.values, pair.bits = prefixes.values[:2], prefixes.bits[:2]
            return True, pair, (mid, (float(g.delta) + 4 * _U * abs(mid) + _TINY) * _GROW)
    raise ArithmeticError("exact noise: Gamma attempt undecided after 64 refinements")


def _gamma_tail(words, a, rng, at=None, start=0):
    """G ~ Gamma(a) per row by Marsaglia-Tsang from first attempts ``words`` (rows, 3), each
    rejected row drawing 3 new words (the number of draws depends on random bits only; with
    a keyed rng, attempt k of a row takes the uniforms start + 3k, +1, +2 of its layout, at
    the rows' addresses ``at``): (G's balls (mid, rad), the accepted attempts' words
    (rows, 3), {row: the x pair's prefixes} for the rare attempts decided in interval
    arithmetic and, keyed, the rows accepted at a later attempt, with its addresses)."""
    attempts = numpy.array(words, dtype=numpy.uint64)
    mid, rad = numpy.empty(attempts.shape[0]), numpy.empty(attempts.shape[0])
    refined, todo = {}, numpy.arange(attempts.shape[0])
    starts = numpy.full(attempts.shape[0], start)
    while todo.size:  # a row is accepted w.p. >= 0.95 (a >= 1), on random bits only
        ball, accepted, rejected = _mt_balls(attempts[todo], a)
        mid[todo[accepted]], rad[todo[accepted]] = ball[0][accepted], ball[1][accepted]
        for i in numpy.flatnonzero(~(accepted | rejected)):  # rare: interval arithmetic
            row = todo[i]
            addresses = None if at is None else [(at[row], int(starts[row]) + k) for k in range(3)]
            ok, pair, ball = _mt_refine(rng, attempts[row], a, addresses)
            if ok:
                refined[row], (mid[row], rad[row]) = pair, ball
            rejected[i] = not ok
        todo = todo[rejected]
        starts[todo] += 3
        attempts[todo] = (random_words(rng, 3 * todo.size) if at is None else rng._addressed(
            [(at[row], int(starts[row]) + k, 0) for row in todo for k in range(3)])).reshape(-1, 3)
    for row in [] if at is None else numpy.flatnonzero(starts != start):
        refined.setdefault(row, _prefixes(attempts[row, :2], at, row, starts[row] + [0, 1]))
    return (mid, rad), attempts, refined


def _exp_sum(e, v):
    """The ball of E_1 + ... + E_n over the last axis from the exponentials' midpoints e and
    the reciprocals v of their uniforms (E_i's radius _exp_radius): the
    mids in a fixed tree (_tree_sum, L levels: L _U of the sum), the radii in any order (a
    float sum of n non-negative terms is at least (1 - n _U) times the real one)."""
    total, levels = _tree_sum(e)
    spread = 2.0 ** -52 * numpy.sum(v, axis=-1) + (2 * _LIB_ULPS * _U) * total
    rad = spread * (1 + 2 * (v.shape[-1] + 3) * _U) + (levels + 1) * _U * total
    return total, (rad + _TINY) * _GROW


_SHIFT = 1.5 * 2.0 ** 52  # (v + _SHIFT) - _SHIFT rounds v to an integer, ties to even


def _within(v, limit):
    """Whether every |v| < limit (two reductions, no temporary; False for a NaN)."""
    return not v.size or bool(v.max() < limit and -v.min() < limit)


def _rint(v):
    """numpy.rint, by the shift (exact for |v| < 2^51; numpy.rint beyond), several times
    faster."""
    return _shift_rint(v) if _within(v, 2.0 ** 51) else numpy.rint(v)


def _shift_rint(v):
    """rint(v) ties to even for |v| < 2^51: (v + _SHIFT) - _SHIFT, both steps exact there."""
    out = v + _SHIFT
    out -= _SHIFT
    return out


def _decide(x, gamma, mid, rad):
    """round_gamma(x + v) for v in the ball (mid, rad) of v / gamma (rad broadcast against
    mid): (release, undecided). x / gamma is exact (gamma a power of two; entries with
    |x| >= 2^52 gamma are lattice points, taken as k gamma = x, r = 0); k = rint(x / gamma),
    r = x / gamma - k is exact with |r| <= 1/2; t = fl(r + mid) errs by at most
    _U (1/2 + |mid|) <= _U (1/2 + M), M the largest |mid| of the row (first axis; all of mid
    for 1-D); j = rint(t) and t - j are exact. When |t - j| + rad + that error < 1/2
    (computed: fl is monotone, so a float sum below 1/2 means the real one is), r + v / gamma
    lies in the open cell of j, whatever the tie rule, and the release is (k + j) gamma (a
    float: |k + j| < 2^53; beyond, its correctly rounded float, still a function of the exact
    release). The rints by the shift give +0, never -0."""
    huge = not _within(x, 2.0 ** 51 * gamma)  # |x / gamma| >= 2^51 somewhere
    if huge:
        with numpy.errstate(over="ignore", invalid="ignore"):
            lattice_point = numpy.abs(x) >= 2.0 ** 52 * gamma
            scaled = numpy.where(lattice_point, 0.0, x * (1 / gamma))
    else:
        scaled = x * (1 / gamma)
    axes = tuple(range(1, mid.ndim)) if mid.ndim > 1 else None
    largest = numpy.maximum(mid.max(axis=axes, keepdims=True),
                            -mid.min(axis=axes, keepdims=True))
    k = _rint(scaled) if huge else _shift_rint(scaled)
    scaled -= k
    scaled += mid
    t = scaled
    j = _rint(t) if not largest.size or largest.max() >= 2.0 ** 50 else _shift_rint(t)
    error = (rad + (largest + 0.5) * _U) * _GROW
    t -= j
    numpy.abs(t, out=t)
    t += error
    undecided = numpy.logical_not(t < 0.5, out=numpy.empty(t.shape, bool))  # NaN: undecided
    k += j
    if huge or gamma > 2.0 ** 900:
        with numpy.errstate(over="ignore", invalid="ignore"):
            k *= gamma
            out = numpy.where(lattice_point, x + j * gamma, k) + 0.0 if huge else k
    else:
        out = k
        out *= gamma
    return out, undecided


# -- the rigorous fallback: mpmath intervals on longer prefixes ---------------------------


class _Prefixes:
    """The bits drawn so far of a group of uniforms: U_i in [M_i, M_i + 1] 2^-bits_i."""

    def __init__(self, words, addresses=None):
        """words: the uniforms' level-0 words; addresses: their (row, index) when keyed."""
        self.values = [int(w) >> 12 for w in words]
        self.bits = [52] * len(self.values)
        self.addresses = addresses

    @classmethod
    def joined(cls, parts):
        """One group of the uniforms of several groups, in order, with their bits."""
        group = cls((), None if any(part.addresses is None for part in parts) else [])
        for part in parts:
            group.values, group.bits = group.values + part.values, group.bits + part.bits
            if group.addresses is not None:
                group.addresses = group.addresses + part.addresses
        return group

    @property
    def precision(self):
        return max(self.bits, default=52)

    def extend(self, rng):
        """64 more bits for every uniform: one word each, drawn in order, or (keyed) the
        word of its next level, (row, index, level) with level = (bits - 52) / 64 + 1."""
        fresh = (random_words(rng, len(self.values)) if self.addresses is None else
                 rng._addressed([(row, index, (bits - 52) // 64 + 1)
                                 for (row, index), bits in zip(self.addresses, self.bits)]))
        self.values = [(v << 64) | int(w) for v, w in zip(self.values, fresh)]
        self.bits = [b + 64 for b in self.bits]

    def intervals(self, iv):
        steps = {b: iv.mpf(2) ** -b for b in set(self.bits)}
        return [iv.mpf([v, v + 1]) * steps[b] for v, b in zip(self.values, self.bits)]


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


def _refine(rng, prefixes, compute, gamma):
    """Lattice indices of the outputs of ``compute(iv, uniforms)`` (intervals) of the
    uniforms ``prefixes`` (a _Prefixes), refined by 64 bits per uniform and level until every
    output lies in one lattice cell."""
    iv = _interval_context()
    for _ in range(_LEVELS):
        prefixes.extend(rng)
        iv.prec = prefixes.precision + 64
        cells = [_nearest(v, gamma) for v in compute(iv, prefixes.intervals(iv))]
        if None not in cells:
            return cells
    raise ArithmeticError("exact noise: no lattice cell after 64 refinements (p < 2^-4000)")


def _refine_undecided(x, scale, gamma, rng, out, undecided, group_of, group):
    """Complete the fast path's releases ``out``: every group of outputs (those sharing
    uniforms: a Laplace entry, a Gaussian pair, a spherical row) with an undecided member
    is refined in interval arithmetic until each member's cell is certain, the groups in
    increasing order of ``group_of(flat index)`` (so a seeded rng is reproducible).
    ``group(key)`` gives the group's flat indices, its uniforms (a _Prefixes) and
    variates(iv, uniforms, wanted): the interval variates Z of the members at the positions
    ``wanted``, in order; a member's release is x + scale Z. Only the undecided members are
    computed: a decided member's ball lies in one open cell, which deeper bits keep."""
    flat_x, flat_out, flat_open = x.reshape(-1), out.reshape(-1), undecided.reshape(-1)
    keys = numpy.flatnonzero(flat_open) if undecided.any() else ()
    for key in sorted({group_of(i) for i in keys}):
        members, prefixes, variates = group(key)
        wanted = [k for k, i in enumerate(members) if flat_open[i]]

        def cells(iv, uniforms, members=members, variates=variates, wanted=wanted):
            s = iv.mpf(float(scale))
            return [iv.mpf(float(flat_x[members[k]])) + s * z
                    for k, z in zip(wanted, variates(iv, uniforms, wanted))]
        for k, cell in zip(wanted, _refine(rng, prefixes, cells, gamma)):
            flat_out[members[k]] = _release(cell, gamma)
    return _finite_release(out)


def _as_input(x, scale):
    """x as a float array (finite), the lattice step gamma and unit = scale / gamma (exact:
    gamma is a power of two; unit lies in [2^16, 2^17), so the noise in units of gamma
    never overflows)."""
    x = numpy.asarray(x, dtype=float)  # read only
    if not _within(x, math.inf):
        raise ValueError("exact noise: the input contains NaN or infinite values")
    gamma = lattice(scale)
    return x, gamma, scale / gamma


def _release(cell, gamma):
    """The float of the lattice point cell gamma (cell a Python int), correctly rounded as
    the fast path's is; inf when it overflows (refused by _finite_release)."""
    power = math.frexp(gamma)[1] - 1
    try:
        return (cell << power if power >= 0 else cell / (1 << -power)) + 0.0
    except OverflowError:
        return math.inf


def _gaussian_balls(words, n, unit):
    """Balls of unit N for n normals (last axis) from words (..., 2 pairs): per pair,
    fl(fl(unit r~) c~) is within unit (rad_r + r~ _TRIG) + 2.01 _U unit r~ of unit r C
    (|C| <= 1, |c~| <= 1 + _TRIG)."""
    pairs = _pair_layout(n)
    r, r_rad = _root_ball(*_exp_ball(words[..., :pairs]), times=2.0)
    cos, sin = _angles(words[..., pairs:])
    h = r * unit
    mid = numpy.concatenate([h * cos, h * sin], axis=-1)[..., :n]
    r *= _TRIG + 2.01 * _U
    r += r_rad
    r *= unit
    r += _TINY
    r *= _GROW
    return mid, numpy.concatenate([r, r], axis=-1)[..., :n]


def gaussian(x, scale, rng):
    """round_gamma(x + scale N), N iid standard normal per entry of x (any shape),
    gamma = lattice(scale): CGP (paper Thm 3.3) and the Gaussian mechanisms. The pairs are
    laid out over all of x as one row, or with a keyed rng per row of the last axis."""
    x, gamma, unit = _as_input(x, scale)
    n = x.shape[-1] if x.ndim and _keyed(rng) else x.size
    rows, pairs = (x.size // n if n else 0), _pair_layout(n)
    words, at = _layout_words(rng, rows, 2 * pairs)  # per row the U1 of every pair, then the U2
    mid, rad = (ball.reshape(x.shape) for ball in _gaussian_balls(words, n, unit))

    def pair(key):
        row, k = divmod(key, pairs)
        return ([row * n + i for i in (k, k + pairs) if i < n],
                _prefixes(words[row, [k, pairs + k]], at, row, [k, pairs + k]), normals)

    def normals(iv, u, wanted):
        both = _iv_normals(iv, [u[0]], [u[1]], 2)  # once for the pair's two members
        return [both[k] for k in wanted]
    return _refine_undecided(x, scale, gamma, rng, *_decide(x, gamma, mid, rad),
                             lambda i: i // n * pairs + i % n % pairs, pair)


def laplace(x, scale, rng):
    """round_gamma(x + scale L), L iid standard Laplace per entry of x (any shape)."""
    x, gamma, unit = _as_input(x, scale)
    n = x.shape[-1] if x.ndim and _keyed(rng) else x.size  # one row, or keyed rows
    rows = x.size // n if n else 0
    layout, at = _layout_words(rng, rows, n)
    words = layout.reshape(x.shape)

    def entry(i):
        return ([i], _prefixes(words.flat[i:i + 1], at, i // n, [i % n]),
                lambda iv, u, wanted: [_iv_laplace(iv, u[0], words.flat[i])])
    return _refine_undecided(x, scale, gamma, rng,
                             *_decide(x, gamma, *_times((unit, 0.0), _laplace_ball(words))),
                             lambda i: i, entry)


def spherical_laplace(x, scale, rng):
    """round_gamma(x + scale Z) per row of x (..., d): Z spherical Laplace in R^d, density
    proportional to exp(-|z|) (epsilon-GP with scale 1/epsilon, paper Thm 3.2)."""
    x, gamma, unit = _as_input(x, scale)
    d = x.shape[-1]
    rows, p = (x.size // d if d else 0), _pair_layout(d)
    shapes = None if _keyed(rng) else rows  # keyed: the layout of a row is that of d alone
    words, at = _layout_words(rng, rows, _spherical_width(d, shapes))
    a, drawn = d - p, _drawn_by_mt(d, shapes)
    if not a:
        tail, attempts, refined = None, words[:, :0], {}
    elif drawn:
        tail, attempts, refined = _gamma_tail(words[:, 2 * p:], a, rng, at, 2 * p)
    else:
        tail, attempts, refined = _exp_tail(words[:, 2 * p:]), words[:, 2 * p:], {}

    def variates(iv, u, wanted):  # Z_k = F sqrt(E_i) (cos, sin) (_spherical_balls)
        e = [-iv.log(v) for v in u[:p]]
        half = sum(e[:d // 2], iv.mpf(0))
        if d % 2:
            half += e[p - 1] * iv.cos(2 * iv.pi * u[2 * p - 1]) ** 2
        radius = sum(e, iv.mpf(0))
        if a:
            radius += _iv_mt(iv, u[2 * p:], a)[2] if drawn else sum(-iv.log(v) for v in u[2 * p:])
        factor, turn = radius / iv.sqrt(half), 2 * iv.pi
        return [factor * iv.sqrt(e[k % p]) * (iv.sin if k >= p else iv.cos)(turn * u[p + k % p])
                for k in wanted]

    def row(key):
        tail_words = attempts[key, :2] if drawn else attempts[key]
        rest = refined.get(key) or _prefixes(tail_words, at, key,
                                             range(2 * p, 2 * p + tail_words.size))
        return (list(range(key * d, key * d + d)),
                _Prefixes.joined([_prefixes(words[key, :2 * p], at, key, range(2 * p)), rest]),
                variates)
    out, undecided = _spherical_fast_path(x.reshape(rows, d), words[:, :2 * p], tail, gamma,
                                          unit)
    return _refine_undecided(x, scale, gamma, rng, out.reshape(x.shape),
                             undecided.reshape(x.shape), lambda i: i // d, row)


_EXACT_CHUNK = 32768  # values per chunk of rows in the fast path: its temporaries stay in cache


def _spherical_fast_path(x, words, tail, gamma, unit):
    """The fast path of spherical_laplace for rows x (rows, d): (releases, undecided), in
    chunks of about _EXACT_CHUNK values (each row's arithmetic is the same in any chunk)."""
    rows, d = x.shape
    out, undecided = numpy.empty((rows, d)), numpy.empty((rows, d), bool)
    step = max(1, _EXACT_CHUNK // max(d, 1))
    for start in range(0, rows, step):
        part = slice(start, start + step)
        balls = _spherical_balls(words[part], d, unit,
                                 None if tail is None else (tail[0][part], tail[1][part]))
        released, open_cells = _decide(_paired(x[part]), gamma, *balls)
        out[part], undecided[part] = _unpaired(released, d), _unpaired(open_cells, d)
    return out, undecided


def _paired(x):
    """x (..., d) in the layout of the pairs (..., 2, p), cosine parts then sine parts: a view
    for even d; for odd d a copy with a zero for the dropped sine part."""
    d = x.shape[-1]
    p = _pair_layout(d)
    if d % 2:
        x = numpy.concatenate([x, numpy.zeros(x.shape[:-1] + (1,))], axis=-1)
    return x.reshape(x.shape[:-1] + (2, p))


def _unpaired(values, d):
    """The (..., 2, p) layout back to (..., d), contiguous."""
    flat = values.reshape(values.shape[:-2] + (-1,))
    return flat if flat.shape[-1] == d else numpy.ascontiguousarray(flat[..., :d])


def _finite_release(out):
    """The releases, refused when one overflows float64 (an input near the largest float:
    the exact release is not a float)."""
    if not _within(out, math.inf):
        raise ValueError("exact noise: a release overflows float64 (an input within the noise "
                         "of the largest float): clip the input to a bound first")
    return out
