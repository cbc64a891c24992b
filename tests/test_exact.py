"""Exact releases (gpcompiler/runtime/exact.py): every release is round_gamma(x + scale Z) of
the ideal real-valued sample Z of the bits drawn, checked against 200-digit mpmath; the one
assumption (NumPy's log and tan within _LIB_ULPS ulps) checked against mpmath; the laws of
the lattice outputs checked by exact distribution tests."""
import math

import mpmath
import numpy
import pytest
from scipy import stats

from gpcompiler.runtime import compare, exact

mp = mpmath.MPContext()
mp.dps = 200


class Recording:
    """A seeded word stream that remembers every word it gave, in order."""

    def __init__(self, seed):
        self.rng = numpy.random.default_rng(seed)
        self.given = []

    def _words(self, count):
        words = self.rng.integers(0, 1 << 64, size=count, dtype=numpy.uint64)
        self.given.extend(int(w) for w in words)
        return words


def uniform(prefix, bits):
    """The midpoint of the prefix interval [M, M + 1] 2^-bits (200 digits)."""
    return (mp.mpf(prefix) + mp.mpf(1) / 2) * mp.mpf(2) ** -bits


def normals(u1, u2):
    r = mp.sqrt(-2 * mp.log(u1))
    return r * mp.cos(2 * mp.pi * u2), r * mp.sin(2 * mp.pi * u2)


def nearest(value, gamma):
    """The nearest lattice index, ties to even (200 digits are far from any tie here)."""
    return int(mp.nint(value / gamma))


def ulps(computed, exact_value):
    spacing = math.ulp(float(exact_value)) if exact_value else 2.0 ** -1074
    return abs(mp.mpf(float(computed)) - exact_value) / spacing


def test_library_functions_within_the_assumed_ulps():
    """The fast path's one assumption: numpy.log on (0, 1) and numpy.tan on [0, pi/4], at
    the arguments the sampler forms, err by at most _LIB_ULPS ulps."""
    rng = numpy.random.default_rng(7)
    m = rng.integers(1, 1 << 52, size=4000).astype(float)
    m[:1000] = rng.integers(1, 1 << 12, size=1000)  # tiny uniforms
    m[1000:2000] = 2.0 ** 52 - rng.integers(1, 1 << 12, size=1000)  # uniforms near 1
    u = (2 * m + 1) * 2.0 ** -53
    x = numpy.minimum(u, 1 - u) * (math.pi / 2)  # the angles of _angles: r in (0, 1/2]
    worst = max(max(ulps(numpy.log(u)[i], mp.log(mp.mpf(u[i]))) for i in range(u.size)),
                max(ulps(numpy.tan(x)[i], mp.tan(mp.mpf(x[i]))) for i in range(u.size)))
    assert worst <= exact._LIB_ULPS


def test_empty_batches_release_empty_arrays():
    for sample in (exact.spherical_laplace, exact.gaussian, exact.laplace):
        assert sample(numpy.zeros((0, 8)), 1.0, numpy.random.default_rng(0)).shape == (0, 8)


def test_lattice_is_public_power_of_two():
    assert exact.lattice(1.0) == 2.0 ** -exact.LATTICE_BITS
    assert exact.lattice(0.75) == 2.0 ** (-1 - exact.LATTICE_BITS)
    assert exact.lattice(3.0) == 2.0 ** (1 - exact.LATTICE_BITS)
    with pytest.raises(ValueError):
        exact.lattice(0.0)


def _prefixes(words, given):
    """The uniforms (midpoints, 200 digits) of one group (one Gaussian pair, one spherical
    row) after the refinements recorded in ``given``: one more word per uniform and level."""
    prefixes, bits = [w >> 12 for w in words], 52
    assert len(given) % len(words) == 0
    for level in range(0, len(given), len(words)):
        prefixes = [(p << 64) | w for p, w in zip(prefixes, given[level:level + len(words)])]
        bits += 64
    return [uniform(p, bits) for p in prefixes]


def _ties(values, gamma, rng):
    """x placing x + value within 1e-12 gamma of a tie between two lattice points."""
    offsets = [mp.mpf(1) / 2 + mp.mpf(rng.uniform(-1, 1)) / 10 ** 12 for _ in values]
    return numpy.array([float(gamma * (int(k) + o) - v) for k, o, v in
                        zip(rng.integers(-5, 5, len(values)), offsets, values)])


@pytest.mark.parametrize("seed", range(4))
def test_gaussian_refined_near_ties_equals_200_digit_ideal_sample(seed):
    """One pair with x within 1e-12 gamma of a tie of its ideal sample: the fast path
    cannot decide, the refinement draws more bits, and the release equals the 200-digit
    ideal value of all the bits drawn, rounded to gamma Z."""
    scale = 0.37
    gamma = exact.lattice(scale)
    words = [int(w) for w in Recording(seed)._words(2)]
    cos, sin = normals(*(uniform(w >> 12, 52) for w in words))
    x = _ties([mp.mpf(scale) * cos, mp.mpf(scale) * sin], gamma, numpy.random.default_rng(seed))
    source = Recording(seed)
    released = exact.gaussian(x, scale, source)
    given = source.given[2:]
    assert given, "no refinement was forced"
    cos, sin = normals(*_prefixes(words, given))
    expected = [nearest(mp.mpf(float(x[i])) + mp.mpf(scale) * z, gamma) * gamma
                for i, z in enumerate((cos, sin))]
    assert list(released) == expected


def _gamma_attempt(u, a):
    """Marsaglia and Tsang's attempt at 200 digits from three uniforms: (accepted, G)."""
    dd, c = mp.mpf(3 * a - 1) / 3, 1 / mp.sqrt(9 * a - 3)
    w = 1 + c * normals(u[0], u[1])[0]
    if w <= 0:
        return False, None
    x = normals(u[0], u[1])[0]
    return x * x / 2 + dd * (1 - w ** 3 + 3 * mp.log(w)) - mp.log(u[2]) > 0, dd * w ** 3


def _spherical_group(given, d, mt):
    """(the words of one row's group: 2p words, then the tail's: its a = d - p exponentials'
    or, with Marsaglia-Tsang (mt), the accepted attempt's x pair; the number of words its
    sampling drew) from the words ``given`` to a one-row call, replaying the Gamma(a)
    attempts (3 words each) at 200 digits."""
    p = (d + 1) // 2
    if not mt or d == p:
        return given[:d + p], d + p
    used = 2 * p + 3
    while not _gamma_attempt([uniform(w >> 12, 52) for w in given[used - 3:used]], d - p)[0]:
        used += 3
    return given[:2 * p] + given[used - 3:used - 1], used


def _ideal_spherical(uniforms, d, mt):
    """Z = R N / |N| at 200 digits from a row's group of uniforms: R = the sum of the p
    exponentials -ln U_i plus the tail G ~ Gamma(d - p) (the sum of its exponentials, or
    with mt dd (1 + c x)^3 of the accepted attempt's x), N the normals of the pairs
    (U_i, U_(p+i)), i < p = ceil(d/2)."""
    p = (d + 1) // 2
    radius = sum(-mp.log(u) for u in uniforms[:p])
    if d > p and mt:
        dd, c = mp.mpf(3 * (d - p) - 1) / 3, 1 / mp.sqrt(9 * (d - p) - 3)
        radius += dd * (1 + c * normals(uniforms[2 * p], uniforms[2 * p + 1])[0]) ** 3
    elif d > p:
        radius += sum(-mp.log(u) for u in uniforms[2 * p:])
    parts = [normals(u1, u2) for u1, u2 in zip(uniforms[:p], uniforms[p:2 * p])]
    z = ([c for c, _ in parts] + [s for _, s in parts])[:d]
    norm = mp.sqrt(sum(v * v for v in z))
    return [radius * v / norm for v in z]


@pytest.fixture(params=[False, True], ids=["sum", "mt"])
def mt(request, monkeypatch):
    """Both ways of drawing the radius's tail: a sum of exponentials and Marsaglia-Tsang."""
    monkeypatch.setattr(exact, "_MT_VALUES", 1 if request.param else 1 << 60)
    monkeypatch.setattr(exact, "_MT_SHAPE", 1)
    return request.param


@pytest.mark.parametrize("d, tied", [(1, "all"), (3, "all"), (4, "all"), (3, "last"),
                                     (4, "last")])
def test_spherical_laplace_refined_near_ties_equals_200_digit_ideal_sample(d, tied, mt):
    """Coordinates of a row within 1e-12 gamma of a tie (all of them, or only the last: a
    sine part, the others decided by the fast path and not recomputed): every release
    equals the 200-digit ideal value of all the bits drawn."""
    scale = 2.5
    gamma = exact.lattice(scale)
    group, used = _spherical_group([int(w) for w in Recording(d)._words(60)], d, mt)
    z = _ideal_spherical([uniform(w >> 12, 52) for w in group], d, mt)
    x = _ties([mp.mpf(scale) * v for v in z], gamma, numpy.random.default_rng(d))
    if tied == "last":  # the others at the middle of the cell of 0, far from its ties
        x[:-1] = [float(-mp.mpf(scale) * v) for v in z[:-1]]
    source = Recording(d)
    released = exact.spherical_laplace(x, scale, source)
    assert len(source.given) > used, "no refinement was forced"
    z = _ideal_spherical(_prefixes(group, source.given[used:]), d, mt)
    assert list(released) == [nearest(mp.mpf(float(x[i])) + mp.mpf(scale) * z[i], gamma)
                              * gamma for i in range(d)]


@pytest.mark.parametrize("d", [1, 2, 5, 8])
def test_spherical_laplace_equals_200_digit_ideal_sample(d, mt):
    """Random x of every size (tiny to huge): the release equals the 200-digit ideal
    value from the same 52-bit prefixes (trials that refined are checked above; rejected
    Gamma attempts are replayed)."""
    rng = numpy.random.default_rng(d)
    scale = 1.7
    gamma = exact.lattice(scale)
    for trial in range(20):
        x = rng.standard_normal(d) * 10.0 ** rng.integers(-20, 8)
        source = Recording(1000 * d + trial)
        released = exact.spherical_laplace(x, scale, source)
        group, used = _spherical_group(source.given, d, mt)
        assert len(source.given) == used
        z = _ideal_spherical([uniform(w >> 12, 52) for w in group], d, mt)
        assert list(released) == [nearest(mp.mpf(float(x[i])) + mp.mpf(scale) * z[i], gamma)
                                  * gamma for i in range(d)]


def test_laplace_equals_200_digit_ideal_sample():
    scale = 0.01
    gamma = exact.lattice(scale)
    source = Recording(5)
    x = numpy.random.default_rng(6).standard_normal(200)
    released = exact.laplace(x, scale, source)
    assert len(source.given) == 200
    for i, w in enumerate(source.given):
        e = -mp.log(uniform(w >> 12, 52))
        z = -e if w & 1 else e
        assert released[i] == nearest(mp.mpf(float(x[i])) + mp.mpf(scale) * z, gamma) * gamma


def test_outputs_lie_on_the_lattice_and_seeds_reproduce():
    x = numpy.random.default_rng(0).standard_normal((4, 6)) * 1e3
    for sample in (exact.gaussian, exact.laplace, exact.spherical_laplace):
        a = sample(x, 0.3, numpy.random.default_rng(9))
        b = sample(x, 0.3, numpy.random.default_rng(9))
        gamma = exact.lattice(0.3)
        assert numpy.array_equal(a, b)
        assert numpy.array_equal(a / gamma, numpy.rint(a / gamma))
        assert a.shape == x.shape


ALPHA = 1e-4  # false-alarm rate of each distribution test below


def test_gaussian_law():
    """KS of (release - x) / scale against N(0, 1); the lattice moves the CDF by at most
    pdf_max * gamma / scale = 0.4 * 2^-16 (6e-6), far below the KS critical value."""
    z = exact.gaussian(numpy.full(200000, 12.5), 2.0, numpy.random.default_rng(1))
    assert stats.kstest((z - 12.5) / 2.0, "norm").pvalue > ALPHA


def test_laplace_law():
    z = exact.laplace(numpy.zeros(200000), 0.5, numpy.random.default_rng(2))
    assert stats.kstest(z / 0.5, "laplace").pvalue > ALPHA


@pytest.mark.parametrize("d", [1, 3, 20])
def test_spherical_laplace_radius_and_direction(d, mt):
    """Radius |Z| ~ Gamma(d); direction: (u.Z/|Z| + 1)/2 ~ Beta((d-1)/2, (d-1)/2) for a fixed
    unit u (d > 1), and the sign for d = 1; with either way of drawing the radius's tail."""
    count = 40000
    z = exact.spherical_laplace(numpy.zeros((count, d)), 1.0, numpy.random.default_rng(d))
    radius = numpy.linalg.norm(z, axis=1)
    assert stats.kstest(radius, "gamma", args=(d,)).pvalue > ALPHA
    if d == 1:
        assert stats.binomtest(int((z[:, 0] > 0).sum()), count).pvalue > ALPHA
        return
    u = numpy.ones(d) / math.sqrt(d)
    cosine = (z @ u) / radius
    shape = (d - 1) / 2
    assert stats.kstest((cosine + 1) / 2, "beta", args=(shape, shape)).pvalue > ALPHA


def _certified_log_ratio(hits_a, hits_b, count, level=1e-3):
    """A lower confidence bound (each side at ``level``, Clopper-Pearson) on
    |log(P_a[E] / P_b[E])|: 0 when the intervals of the two rates overlap."""
    def interval(k):
        ci = stats.binomtest(k, count).proportion_ci(1 - level, method="exact")
        return ci.low, ci.high
    (a_lo, a_hi), (b_lo, b_hi) = interval(hits_a), interval(hits_b)
    if a_lo > b_hi:
        return math.log(a_lo / b_hi)
    if b_lo > a_hi:
        return math.log(b_lo / a_hi)
    return 0.0


def _low_bit_events(y):
    """The reviewers' event (2^-9 <= |y| < 2^-6, y not a multiple of 2^-57) and low-bit
    events of the lattice index and of the float's own mantissa."""
    magnitude = numpy.abs(y)
    band = (magnitude >= 2.0 ** -9) & (magnitude < 2.0 ** -6)
    mantissa = numpy.frexp(y)[0] * 2.0 ** 53
    return {"band, not a multiple of 2^-57": band & (numpy.fmod(y, 2.0 ** -57) != 0),
            "odd mantissa": numpy.fmod(mantissa, 2) != 0,
            "mantissa 0 mod 8": numpy.fmod(mantissa, 8) == 0,
            "band": band}


def _attack(release, count=60000):
    """Largest certified log-ratio over the events between c = 0 and c'_0 = 3 2^-58."""
    base = release(0.0, count)
    moved = release(3 * 2.0 ** -58, count)
    return max(_certified_log_ratio(int(a.sum()), int(b.sum()), count)
               for a, b in zip(_low_bit_events(base).values(), _low_bit_events(moved).values()))


@pytest.mark.parametrize("model", ["rho", "epsilon"])
def test_low_bit_attack_finds_no_separation(model):
    """Mironov-style attack on coordinate 0 of fourier8.privatize (OS entropy, batches of
    60,000 releases each): certified log-ratio below 0.3 for every event."""
    from conftest import generated
    module = generated("fourier8")

    def release(first, count):
        c = numpy.zeros((count,) + module.COEF_SHAPE)
        c[:, 0] = first
        return module.privatize(c, **{model: 0.5})[:, 0]
    assert _attack(release) < 0.3


def test_low_bit_attack_separates_float_noise():
    """The same attack against float64 Box-Muller noise (the samplers releases used before,
    kept for simulations) separates the two inputs: the test has power."""
    from gpcompiler.runtime.secure import SecureGenerator
    generator = SecureGenerator()

    def release(first, count):
        block = generator._BLOCK  # the first half of each block holds the cosine parts
        cosines = [generator.standard_normal(block)[:block // 2]
                   for _ in range(-(-2 * count // block))]
        return first + numpy.concatenate(cosines)[:count]
    assert _attack(release) > 1.0


def test_mironov_attack_on_cdf_gaussian():
    """The CDF estimators' Gaussian: neighbouring sums 1e-17 apart give lattice releases
    whose low bits carry no information (certified log-ratio below 0.3)."""
    from conftest import generated
    module = generated("cdf_wages")

    def release(first, count):
        vector = numpy.zeros(count)
        vector[:] = first
        return module.privatize(vector, 1.0)
    assert _attack(release) < 0.3


@pytest.mark.parametrize("kind", ["laplace", "gaussian", "gumbel"])
def test_comparisons_near_ties_equal_200_digit_decisions(kind):
    """value + V - W >= threshold with value within 3 ulps of the tie: the decision is
    the 200-digit one for all the bits the two noises drew (the fast path cannot decide)."""
    for seed in range(6):
        source = Recording(seed)
        v = compare.Noise(kind, 0.5, source)
        w = compare.Noise(kind, 2.0, source)
        first = list(source.given)
        ideal = [_noise_value(kind, scale, first[i * width:(i + 1) * width], [])
                 for i, (scale, width) in enumerate(((0.5, v.words.size), (2.0, w.words.size)))]
        tie = float(ideal[1] - ideal[0] + 1.25)
        value = tie + (seed - 3) * math.ulp(tie)
        decided = compare.exceeds(value, 1.25, [(1, v), (-1, w)])
        assert len(source.given) > len(first), "no refinement was forced"
        extra = source.given[len(first):]
        widths = (v.words.size, w.words.size)
        per_level = sum(widths)
        levels = [extra[i:i + per_level] for i in range(0, len(extra), per_level)]
        refined = [_noise_value(kind, 0.5, first[:widths[0]], [lv[:widths[0]] for lv in levels]),
                   _noise_value(kind, 2.0, first[widths[0]:], [lv[widths[0]:] for lv in levels])]
        assert decided == (mp.mpf(value) + refined[0] - refined[1] >= mp.mpf(1.25))


def test_batched_svt_crossings_equal_200_digit_decisions():
    """The auditor's batched SVT comparisons g_j + V_j >= T + W (compare.svt_crossings):
    one g_j within a few ulps of the tie of its ideal noises (the floats cannot decide it,
    so it is refined with the same words and decided as 200 digits of the bits drawn
    decide it), the others a few noise scales from theirs (decided as 52 bits do)."""
    runs, queries, scales = 5, 3, (2.0, 0.5)
    for seed in range(4):
        first = [int(w) for w in Recording(seed)._words(runs + runs * queries)]
        w = [_noise_value("laplace", scales[0], [first[r]], []) for r in range(runs)]
        v = [[_noise_value("laplace", scales[1], [first[runs + r * queries + q]], [])
              for q in range(queries)] for r in range(runs)]
        offsets = numpy.random.default_rng(seed).choice([-3.0, 3.0], (runs, queries))
        tie = (seed % runs, seed % queries)
        offsets[tie] = 0.0
        values = numpy.array([[float(w[r] - v[r][q] + 1.25) + offsets[r, q]
                               for q in range(queries)] for r in range(runs)])
        values[tie] += (seed - 2) * math.ulp(values[tie])
        source = Recording(seed)
        crossed = compare.svt_crossings(values, 1.25, scales, source)
        extra = source.given[len(first):]
        assert extra, "no refinement was forced"
        r, q = tie  # each level extends V, then W: one word each
        v[r][q] = _noise_value("laplace", scales[1], [first[runs + r * queries + q]],
                               [[word] for word in extra[0::2]])
        w[r] = _noise_value("laplace", scales[0], [first[r]], [[word] for word in extra[1::2]])
        assert crossed.tolist() == [[mp.mpf(values[i, j]) + v[i][j] - w[i] >= mp.mpf(1.25)
                                     for j in range(queries)] for i in range(runs)]


def _noise_value(kind, scale, words, levels):
    """The 200-digit noise of ``words`` refined by ``levels`` (one word per uniform each)."""
    prefixes, bits = [w >> 12 for w in words], 52
    for level in levels:
        prefixes = [(p << 64) | w for p, w in zip(prefixes, level)]
        bits += 64
    u = [uniform(p, bits) for p in prefixes]
    if kind == "laplace":
        return mp.mpf(scale) * (-mp.log(u[0])) * (-1 if words[0] & 1 else 1)
    if kind == "gumbel":
        return mp.mpf(scale) * -mp.log(-mp.log(u[0]))
    return mp.mpf(scale) * normals(u[0], u[1])[0]


def test_noisy_sums_compare_exactly_like_floats_far_from_ties():
    rng = numpy.random.default_rng(4)
    for _ in range(200):
        v = compare.Noise("laplace", 1.0, rng)
        value = float(v.ball()[0][0])
        assert (3.0 + v >= 3.0 + value + 1e-9) is False
        assert (3.0 + v >= 3.0 + value - 1e-9) is True
        assert (v + 1.0 <= value + 1.0 + 1e-9) is True


def test_gumbel_law():
    """The fast-path midpoints of Gumbel noises follow the Gumbel law (KS at ALPHA)."""
    rng = numpy.random.default_rng(11)
    values = [float(compare.Noise("gumbel", 1.0, rng).ball()[0][0]) for _ in range(20000)]
    assert stats.kstest(values, "gumbel_r").pvalue > ALPHA


def test_refinement_is_thread_safe_and_leaves_mpmath_alone():
    """Refinements in several threads at once, while another thread changes mpmath's global
    interval precision: each release equals the one computed alone, and the global
    precision is untouched (each refinement has its own context)."""
    import threading
    scale = 0.37
    gamma = exact.lattice(scale)
    inputs = []
    for seed in range(4):
        words = [int(w) for w in Recording(seed)._words(2)]
        cos, sin = normals(*(uniform(w >> 12, 52) for w in words))
        inputs.append(_ties([mp.mpf(scale) * cos, mp.mpf(scale) * sin], gamma,
                            numpy.random.default_rng(seed)))
    alone = [exact.gaussian(x, scale, Recording(seed)) for seed, x in enumerate(inputs)]
    mpmath.iv.prec = 53
    results, stop = {}, threading.Event()

    def disturb():
        while not stop.is_set():
            mpmath.iv.prec = 30

    def release(seed):
        results[seed] = exact.gaussian(inputs[seed], scale, Recording(seed))
    noise = threading.Thread(target=disturb)
    noise.start()
    workers = [threading.Thread(target=release, args=(s,)) for s in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    stop.set()
    noise.join()
    assert mpmath.iv.prec == 30
    mpmath.iv.prec = 53
    assert all(numpy.array_equal(results[s], alone[s]) for s in range(4))


def test_a_scale_whose_lattice_step_is_subnormal_is_refused():
    assert exact.lattice(2.0 ** (exact.LATTICE_BITS - 1022)) == 2.0 ** -1022
    with pytest.raises(ValueError, match="lattice step a normal float"):
        exact.lattice(8.1e-320)


def test_releases_far_from_zero_equal_200_digit_ideal_samples(mt):
    """x near 2^48 lattice steps (the bound allows 2^50): the float x + noise loses the
    lattice's last bits there, the exact release does not (Laplace and spherical Laplace
    against their 200-digit ideal samples)."""
    scale = 0.3
    gamma = exact.lattice(scale)
    rng = numpy.random.default_rng(12)
    x = (2.0 ** 48 + rng.uniform(0, 2.0 ** 48, 300)) * gamma * rng.choice([-1, 1], 300)
    source = Recording(13)
    released = exact.laplace(x, scale, source)
    assert len(source.given) == x.size
    for i, w in enumerate(source.given):
        e = -mp.log(uniform(w >> 12, 52))
        z = -e if w & 1 else e
        assert released[i] == nearest(mp.mpf(float(x[i])) + mp.mpf(scale) * z, gamma) * gamma
    d = 3
    for trial in range(30):
        source = Recording(100 + trial)
        released = exact.spherical_laplace(x[d * trial:d * trial + d], scale, source)
        group, used = _spherical_group(source.given, d, mt)
        assert len(source.given) == used
        z = _ideal_spherical([uniform(w >> 12, 52) for w in group], d, mt)
        assert list(released) == [nearest(mp.mpf(float(x[d * trial + i])) + mp.mpf(scale)
                                          * z[i], gamma) * gamma for i in range(d)]


def _words_with(m):
    """Words whose top 52 bits are m (random low 12 bits)."""
    low = numpy.random.default_rng(int(m[0]) % 1000).integers(0, 1 << 12, m.size)
    return (m.astype(numpy.uint64) << numpy.uint64(12)) | low.astype(numpy.uint64)


def test_fast_path_balls_hold_the_ideal_value_of_every_completion():
    """The fast path's balls (mid, rad) from 52-bit prefixes m hold the 50-digit ideal
    value for the uniforms at both ends of [m, m + 1] 2^-52 (Exp: monotone in U; a normal:
    the four corners and the middle of the angle), for m from 1 to 2^52 - 1: tiny uniforms
    (a radius near 1/(2m)) and uniforms next to 1."""
    rng = numpy.random.default_rng(17)
    m = rng.integers(1, 1 << 52, 600)
    m[:200] = 2 ** rng.integers(0, 52, 200) + rng.integers(0, 3, 200)
    m[200:260] = 2 ** 52 - 1 - rng.integers(0, 1 << 8, 60)
    m2 = rng.integers(1, 1 << 52, m.size)
    m2[:60] = (rng.integers(1, 4, 60) << 50) + rng.integers(-2, 2, 60)  # octant boundaries
    m2[60:70] = (1, 2, 3, 2 ** 52 - 1, 2 ** 52 - 2, 2 ** 51 - 1, 2 ** 51 + 1, 2 ** 51, 5, 7)
    words, second = _words_with(m), _words_with(m2)
    e_mid, e_rad = exact._exp_ball(words.copy())
    cos, sin, n_rad = exact._normal_balls(words.copy(), second.copy())
    with mpmath.workdps(50):
        for i in range(m.size):
            ends = [mpmath.mpf(int(m[i]) + k) * mpmath.mpf(2) ** -52 for k in (0, 1)]
            for u in ends:
                assert abs(-mpmath.log(u) - mpmath.mpf(e_mid[i])) <= e_rad[i]
            angles = [mpmath.mpf(int(m2[i]) + k) * mpmath.mpf(2) ** -52 for k in (0, 0.5, 1)]
            for u in ends:
                r = mpmath.sqrt(-2 * mpmath.log(u))
                for a in angles:
                    assert abs(r * mpmath.cos(2 * mpmath.pi * a) - mpmath.mpf(cos[i])) <= n_rad[i]
                    assert abs(r * mpmath.sin(2 * mpmath.pi * a) - mpmath.mpf(sin[i])) <= n_rad[i]


def test_angles_hold_cos_and_sin_of_every_completion():
    """_angles' cos~ and sin~ (one tangent on [0, pi/4], signs from the top two bits) lie
    within _TRIG of cos and sin of 2 pi U for U at both ends and the middle of
    [m, m + 1] 2^-52, m near the octant boundaries and random (the worst error is about
    9.6 _U: a bound of 8 _U, or a wrong sign, fails)."""
    rng = numpy.random.default_rng(29)
    m = rng.integers(1, 1 << 52, 1500)
    m[:400] = (rng.integers(1, 8, 400) << 49) + rng.integers(-3, 3, 400)
    m[400:406] = (1, 2, 2 ** 52 - 1, 2 ** 52 - 2, 3, 2 ** 52 - 3)
    cos, sin = exact._angles(_words_with(m))
    with mp.workdps(40):
        for i in range(m.size):
            for end in (0, 0.5, 1):
                theta = 2 * mp.pi * (mp.mpf(int(m[i])) + end) * mp.mpf(2) ** -52
                assert abs(mp.cos(theta) - mp.mpf(cos[i])) <= exact._TRIG, (i, end)
                assert abs(mp.sin(theta) - mp.mpf(sin[i])) <= exact._TRIG, (i, end)


@pytest.mark.parametrize("d, trials", [(1, 40), (2, 40), (3, 40), (6, 30), (9, 30), (800, 2)])
def test_spherical_balls_hold_the_ideal_value_of_every_completion(d, trials):
    """The spherical fast path's balls (mid, rad) of unit Z, and those of its Gamma(d - p)
    attempts, hold the 40-digit ideal values for completions of the bits not drawn: every
    uniform at the low end, the middle or the high end of [m, m + 1] 2^-52 (drawn per
    uniform), rows with a tiny uniform (E near 36, a radius near 1/(2m)) and with uniforms
    next to 1, odd and even d (checked to fail with E's slope term quartered, or the relative
    radius delta of R / sqrt(H) dropped)."""
    rng = numpy.random.default_rng(d)
    p, unit = (d + 1) // 2, 2.0 ** 16 * 1.37
    for trial in range(trials):
        m = rng.integers(1, 1 << 52, 2 * p + 2)
        if trial % 3 == 0:
            m[rng.integers(0, p)] = 2 ** rng.integers(0, 6)
        if trial % 3 == 1:
            m[rng.integers(0, 2 * p + 2, 2)] = 2 ** 52 - 1 - rng.integers(0, 4, 2)
        words = _words_with(m)
        tail = None
        if d > p:
            tail = exact._mt_balls(numpy.append(words[2 * p:], words[:1])[None, :], d - p)[0]
        mid, rad = exact._spherical_balls(words[None, :2 * p], d, unit, tail)
        mid, rad = mid[0].reshape(-1)[:d], numpy.concatenate([rad[0, 0], rad[0, 0]])[:d]
        with mp.workdps(40):
            for _ in range(3 if d < 100 else 1):
                ends = [(mp.mpf(2) ** -20, mp.mpf(1) / 2, 1 - mp.mpf(2) ** -20)[k]
                        for k in rng.integers(0, 3, m.size)]  # inside: U = 1 has E = 0
                u = [(mp.mpf(int(v)) + e) * mp.mpf(2) ** -52 for v, e in zip(m, ends)]
                z = _ideal_spherical(u, d, True)
                if d > p:
                    g = _gamma_attempt(u[2 * p:] + u[:1], d - p)[1]
                    assert abs(g - mp.mpf(float(tail[0][0]))) <= tail[1][0]
                errors = [abs(mp.mpf(unit) * z[k] - mp.mpf(mid[k])) for k in range(d)]
                assert all(error <= r for error, r in zip(errors, rad)), (d, trial)
                assert min(r for r in rad) > 0


def _replayed(given, a):
    """The 200-digit replay of fresh attempts (3 words each) until one is accepted: the
    number of words they take, or None if ``given`` ends first."""
    used = 0
    while used + 3 <= len(given):
        used += 3
        if _gamma_attempt([uniform(w >> 12, 52) for w in given[used - 3:used]], a)[0]:
            return used
    return None


def _attempt_signs(words, given, a):
    """The signs of f (the acceptance value; -1 where w <= 0) at the corners of the
    uniforms' intervals after the refinements ``given`` (every completion of the bits not
    drawn lies between them: f is monotone in U, and x's interval is tiny)."""
    prefixes, bits = [w >> 12 for w in words], 52 + 64 * (len(given) // 3)
    for level in range(0, len(given), 3):
        prefixes = [(q << 64) | w for q, w in zip(prefixes, given[level:level + 3])]
    dd, c = mp.mpf(3 * a - 1) / 3, 1 / mp.sqrt(9 * a - 3)
    signs = set()
    for corner in range(8):
        u = [(mp.mpf(q) + (corner >> k & 1)) * mp.mpf(2) ** -bits for k, q in enumerate(prefixes)]
        x = normals(u[0], u[1])[0]
        w = 1 + c * x
        f = x * x / 2 + dd * (1 - w ** 3 + 3 * mp.log(w)) - mp.log(u[2]) if w > 0 else -1
        signs.add(f > 0)
    return signs


@pytest.mark.parametrize("a", [1, 16, 400])
def test_gamma_attempt_at_its_boundary_is_decided_as_the_reals_decide_it(a):
    """A Marsaglia-Tsang attempt whose U lies at the acceptance boundary (-ln U = -f0,
    f0 = x^2/2 + dd (1 - w^3 + 3 ln w)) after 52 and after 116 bits: the fast path cannot
    decide it, nor can the first refinement level; the refinement stops only where every
    completion of the bits not drawn has the sign it decided (checked at the corners); an
    accepted attempt's G ball holds the ideal G, a rejected one is followed by fresh
    attempts (replayed at 200 digits)."""
    outcomes = []
    for seed in range(16):
        rng = numpy.random.default_rng(seed)
        pair = [int(w) for w in rng.integers(0, 1 << 64, 4, dtype=numpy.uint64)]
        x = normals(*(uniform(w >> 12, 52) for w in pair[:2]))[0]
        deep = normals(*_prefixes(pair[:2], pair[2:]))[0]  # x after one refinement level
        dd, c = mp.mpf(3 * a - 1) / 3, 1 / mp.sqrt(9 * a - 3)
        if 1 + c * x <= 0 or x * x / 2 + dd * (1 - (1 + c * x) ** 3 + 3 * mp.log(1 + c * x)) >= 0:
            continue
        boundary = int(mp.floor(mp.exp(deep * deep / 2 + dd * (1 - (1 + c * deep) ** 3
                                                              + 3 * mp.log(1 + c * deep)))
                                * mp.mpf(2) ** 116))
        words = pair[:2] + [((boundary >> 64) << 12) | int(rng.integers(0, 1 << 12))]
        _, accepted, rejected = exact._mt_balls(numpy.array(words, numpy.uint64)[None, :], a)
        assert not (accepted[0] or rejected[0]), "the fast path decided a boundary attempt"
        source = Scripted(pair[2:] + [boundary & ((1 << 64) - 1)], seed=100 + seed)
        source.given = []
        (mid, rad), attempts, refined = exact._gamma_tail(
            numpy.array(words, numpy.uint64)[None, :], a, _Remembering(source))
        given = source.given
        if 0 in refined:  # accepted after len(given) / 3 levels
            assert refined[0].bits == [52 + 64 * (len(given) // 3)] * 2 and len(given) > 3
            assert _attempt_signs(words, given, a) == {True}
            ok, g = _gamma_attempt(_prefixes(words, given), a)
            assert ok and abs(g - mp.mpf(float(mid[0]))) <= rad[0]
            assert [int(v) for v in attempts[0]] == words
        else:  # rejected at some level k > 1, then fresh attempts until one is accepted
            assert any(_attempt_signs(words, given[:3 * k], a) == {False}
                       and _replayed(given[3 * k:], a) == len(given) - 3 * k
                       for k in range(2, len(given) // 3))
        outcomes.append(0 in refined)
    assert True in outcomes and False in outcomes


class _Remembering:
    """A word stream that records in its source's ``given`` every word it hands out."""

    def __init__(self, source):
        self.source = source

    def _words(self, count):
        words = self.source._words(count)
        self.source.given.extend(int(w) for w in words)
        return words


class Scripted:
    """A word stream that gives the words of ``script`` first, then seeded ones."""

    def __init__(self, script, seed=0):
        self.script, self.rng = [int(w) for w in script], numpy.random.default_rng(seed)

    def _words(self, count):
        given, self.script = self.script[:count], self.script[count:]
        rest = self.rng.integers(0, 1 << 64, count - len(given), dtype=numpy.uint64)
        return numpy.concatenate([numpy.array(given, dtype=numpy.uint64), rest])


def test_refinement_goes_as_deep_as_the_bits_that_decide_the_cell():
    """f(U) = 1/2 + (U - T) 2^176 with T the middle of U's interval after two refinements:
    f's lattice cell (gamma = 1) is 1 if U > T, else 0, which only the third extension's
    word w3 decides (w3 >= 2^63). The refinement must draw it and return that cell: neither
    an interval across two cells nor its midpoint decides."""
    half = 1 << 63
    for seed in range(8):
        rng = numpy.random.default_rng(seed)
        w0, w1, w2 = (int(w) for w in rng.integers(0, 1 << 64, 3, dtype=numpy.uint64))
        w3 = half + int(rng.integers(0, 1 << 40)) if seed % 2 else half - 1 - int(
            rng.integers(0, 1 << 40))
        target = ((((w0 >> 12) << 128) | (w1 << 64) | w2) * 2 + 1, 52 + 128 + 1)

        def compute(iv, u):
            t = iv.mpf(target[0]) * iv.mpf(2) ** -target[1]
            return [iv.mpf(0.5) + (u[0] - t) * iv.mpf(2) ** 176]
        stream = Scripted([w1, w2, w3])
        cells = exact._refine(stream, exact._Prefixes([w0]), compute, 1.0)
        assert cells == [1 if w3 >= half else 0]
        assert stream.script == [], "the refinement stopped before the deciding word"


@pytest.mark.parametrize("kind", ["laplace", "gumbel"])
def test_a_comparison_decided_only_by_deeper_bits_refines_to_them(kind):
    """V >= W for two noises whose words agree for 116 bits (the first word and the first
    extension) and differ in the second: decided exactly as the 200-digit values of all
    the bits drawn decide it, and only after the second extension."""
    for seed in range(8):
        rng = numpy.random.default_rng(seed)
        first, level1, a, b = (int(w) for w in rng.integers(0, 1 << 64, 4, dtype=numpy.uint64))
        stream = Scripted([first, first, level1, level1, a, b])
        v, w = compare.Noise(kind, 1.0, stream), compare.Noise(kind, 1.0, stream)
        decided = compare.exceeds(0.0, 0.0, [(1, v), (-1, w)])
        assert stream.script == []
        ideal = (_noise_value(kind, 1.0, [first], [[level1], [a]])
                 - _noise_value(kind, 1.0, [first], [[level1], [b]]))
        assert decided == (ideal >= 0)


def test_inputs_near_the_largest_float_release_or_refuse_clearly():
    """|x| near 1e308 (exact.* called directly): x / gamma would overflow, but such x are
    lattice points, released as the float nearest the exact release (x itself when the
    noise is below half its ulp); a release beyond the largest float is a ValueError, not
    an OverflowError from the refinement; a comparison still decides exactly."""
    big = numpy.finfo(float).max
    x = numpy.array([1e308, -1e308, 1.5e308, big])
    for sample in (exact.laplace, exact.gaussian, exact.spherical_laplace):
        assert numpy.array_equal(sample(x, 1.0, numpy.random.default_rng(0)), x)
    with pytest.raises(ValueError, match="overflows float64"):
        exact.laplace(numpy.full(20, big), 2.0 ** 975, numpy.random.default_rng(1))
    assert exact._release(1 << 1100, 1.0) == math.inf
    assert exact._release(-3, 2.0 ** -16) == -3 * 2.0 ** -16
    noise = compare.Noise("laplace", 1.0, numpy.random.default_rng(2))
    assert compare.exceeds(1e308, -1e308, [(1, noise)])
    assert not compare.exceeds(-1e308, 1e308, [(1, noise)])
