"""Every threshold of the exact rounding (gpcompiler/runtime/exact.py) crossed: just below,
at and just above each binade boundary its decision code branches on (|x| at 2^51, 2^52
and 2^53 lattice steps, the noise at 2^50 steps, the rint shift at 2^51, gamma above 2^900,
subnormal and near-overflow inputs, the refinement's float of a cell, the lattice step's
binades, the 2^50-lattice-step bound). Each release is checked against an exact reference
(Fractions; the noise of recorded words at 200 digits, as tests/test_exact.py reconstructs
it) and is a whole multiple of gamma: Fraction(v) / Fraction(gamma) is an integer."""
import math
from fractions import Fraction

import mpmath
import numpy
import pytest

from conftest import generated
from gpcompiler.adaptive import baseline
from gpcompiler.runtime import exact

mp = mpmath.MPContext()
mp.dps = 200


def _cell(value):
    """The nearest integer to a Fraction, None at a tie (value = n - 1/2)."""
    n = math.floor(value + Fraction(1, 2))
    return None if value + Fraction(1, 2) == n else n


def _lattice_float(cell, gamma):
    """The correctly rounded float of cell gamma (int / int division rounds correctly);
    None when it overflows."""
    try:
        return float(Fraction(cell) * Fraction(gamma))
    except OverflowError:
        return None


def _on_lattice(value, gamma):
    """A finite release is a whole multiple of gamma, and a zero release is +0."""
    assert math.isfinite(value)
    assert (Fraction(float(value)) / Fraction(gamma)).denominator == 1, (value, gamma)
    assert value != 0 or math.copysign(1.0, value) == 1.0, "a release of -0"


def _check_decided(x, gamma, mid, rad):
    """exact._decide on (x, mid, rad): each decided entry's whole ball x/gamma + [mid - rad,
    mid + rad] (exact) lies in one open lattice cell, and its release is that cell's float.
    Returns how many were decided."""
    out, undecided = exact._decide(x.copy(), gamma, mid.copy(), rad.copy())
    for i in numpy.flatnonzero(~undecided.reshape(-1)):
        centre = Fraction(float(x.flat[i])) / Fraction(gamma) + Fraction(float(mid.flat[i]))
        low = _cell(centre - Fraction(float(rad.flat[i])))
        assert low is not None and low == _cell(centre + Fraction(float(rad.flat[i]))), \
            (x.flat[i], gamma, mid.flat[i], rad.flat[i])
        assert out.flat[i] == _lattice_float(low, gamma), (x.flat[i], gamma, mid.flat[i])
        _on_lattice(out.flat[i], gamma)
    return int((~undecided).sum())


def _around(value):
    """value, its float neighbours and value +- 2 of its ulps."""
    return [value, math.nextafter(value, -math.inf), math.nextafter(value, math.inf),
            value - 2 * math.ulp(value), value + 2 * math.ulp(value)]


@pytest.mark.parametrize("gamma", [2.0 ** -1022, 2.0 ** -20, 1.0, 2.0 ** 901])
def test_a_noise_at_every_binade_is_decided_only_when_its_ball_is_in_one_cell(gamma):
    """The noise's mid M at and around every power of two up to 2^53 lattice steps (the
    branch to numpy.rint at 2^50 among them), each sign: x placed so that x/gamma + M lies
    within a few ulps of M of a tie, the ball's radius from 0 to a few ulps. The float
    error of x/gamma - k + M (at most half an ulp of M) must be counted: a ball that meets
    two cells is never decided."""
    decided = total = 0
    for e in range(-2, 54):
        for m0 in _around(2.0 ** e):
            for sign in (1.0, -1.0):
                mid0 = sign * m0
                u = math.ulp(mid0)
                offsets = [f * u for f in (-2, -1, -0.6, -0.5, -0.25, -0.125, 0.125, 0.25,
                                           0.5, 0.6, 1, 2)] + [-0.3, 0.2]
                rads = [0.0, u / 8, 0.6 * u, u, 3 * u]
                xs, mids, radii = [], [], []
                for k in (0, -(2 ** 20) - 1):
                    for offset in offsets:
                        # x / gamma = k + r with r = (round(M) + 1/2 + offset) - M
                        r = Fraction(round(mid0)) + Fraction(1, 2) + Fraction(offset) \
                            - Fraction(mid0)
                        x = float((k + r) * Fraction(gamma))
                        for rad in rads:
                            xs.append(x)
                            mids.append(mid0)
                            radii.append(rad)
                x, mid, rad = (numpy.array(v) for v in (xs, mids, radii))
                decided += _check_decided(x, gamma, mid, rad)
                total += x.size
    assert decided > total / 4   # the sweep decides many balls near ties, not none


@pytest.mark.parametrize("gamma", [2.0 ** -1022, 2.0 ** -20, 1.0, 2.0 ** 901, 2.0 ** 960])
def test_inputs_at_the_huge_and_lattice_point_thresholds_release_the_exact_cell(gamma):
    """|x| at 2^51 lattice steps (the switch to numpy.rint and the lattice-point test),
    2^52 (x is a lattice point from there), 2^53 (the release's float is rounded), just
    below, at and above, both signs, with noises between -40.3 and 40.3 steps and ties;
    subnormal x; rows (2-D mids: the float error bound per row)."""
    steps = [0.0, 0.3, -0.7, 0.5, -0.5, 40.25, -40.3, 1.5, 2.5]
    xs = [2.0 ** 50, 2.0 ** 51, 2.0 ** 52, 2.0 ** 53, 2.0 ** 60]
    values = []
    for boundary in xs:
        for v in _around(boundary) + [boundary - 0.5, boundary + 1, boundary - 1.5]:
            values += [v, -v]
    x = numpy.array([v * gamma for v in values if math.isfinite(v * gamma)])
    for step in steps:
        for rad in (0.0, 1e-9, 0.25):
            mid = numpy.full(x.shape, step)
            _check_decided(x, gamma, mid, numpy.full(x.shape, rad))
    tiny = numpy.array([5e-324, -5e-324, 2.0 ** -1060, -(2.0 ** -1022 - 2.0 ** -1074), 0.0])
    for step in steps:
        _check_decided(tiny, gamma, numpy.full(tiny.shape, step), numpy.zeros(tiny.shape))
    rows = numpy.array([[2.0 ** 51 * gamma, 0.3 * gamma], [-(2.0 ** 52 + 2) * gamma, gamma]])
    if numpy.all(numpy.isfinite(rows)):
        mid = numpy.array([[0.5, -0.25], [2.0 ** 49 + 0.5, -3.75]])
        assert _check_decided(rows, gamma, mid, numpy.zeros(rows.shape)) >= 2


def test_inputs_near_the_largest_float_are_lattice_points_released_exactly():
    """x up to the largest float with gamma >= 2^-16: huge x are lattice points, released
    as the float of the exact x + j gamma."""
    big = numpy.finfo(float).max
    for gamma in (2.0 ** -16, 1.0, 2.0 ** 901, 2.0 ** 960):
        x = numpy.array([big, -big, 1e308, math.nextafter(2.0 ** 1023, 0), 2.0 ** 1000])
        for step in (0.0, 0.4, -3.5, 2.0 ** 40 + 0.25):
            out, undecided = exact._decide(x.copy(), gamma, numpy.full(x.shape, step),
                                           numpy.zeros(x.shape))
            for i in numpy.flatnonzero(~undecided):
                cell = _cell(Fraction(float(x[i])) / Fraction(gamma) + Fraction(step))
                expected = _lattice_float(cell, gamma)
                assert out[i] == (math.copysign(math.inf, x[i]) if expected is None
                                  else expected)


SHIFT_CASES = ([0.5, -0.5, 1.5, -1.5, 2.5, 0.3, -0.3, 0.0, -0.0, 2.0 ** -1074]
               + [s * v for v in _around(2.0 ** 50) + _around(2.0 ** 51 - 0.5)
                  + [2.0 ** 51 - 1.5, 2.0 ** 51 - 0.5, 2.0 ** 50 + 0.5, 2.0 ** 50 + 1.5]
                  for s in (1, -1)])


def test_the_shift_rounds_to_the_nearest_integer_ties_to_even_below_2_51():
    """_shift_rint ((v + _SHIFT) - _SHIFT) equals numpy.rint for |v| < 2^51, including the
    ties at every magnitude there and the largest values below 2^51, and gives +0 (never
    -0); _rint equals numpy.rint everywhere, its switch at 2^51 included."""
    below = numpy.array([v for v in SHIFT_CASES if abs(v) < 2.0 ** 51])
    shifted = exact._shift_rint(below.copy())
    assert numpy.array_equal(shifted, numpy.rint(below))
    assert not numpy.any(numpy.signbit(shifted[shifted == 0]))
    beyond = [s * v for v in _around(2.0 ** 51) + _around(2.0 ** 52) + [2.0 ** 51 + 0.5,
                                                                        2.0 ** 51 + 1.5]
              for s in (1, -1)]
    for v in SHIFT_CASES + beyond:   # one at a time: _rint switches on the whole array
        assert exact._rint(numpy.array([v]))[0] == numpy.rint(v), v
    values = numpy.array(SHIFT_CASES + beyond)
    assert numpy.array_equal(exact._rint(values), numpy.rint(values))


def test_a_refined_cell_is_released_as_its_correctly_rounded_float():
    """exact._release (the refinement's cell -> float): cell gamma correctly rounded,
    at cells beyond 2^53 (rounding ties among them), for gamma from 2^-1022 to 2^960; an
    infinity when it overflows (refused by _finite_release)."""
    cells = [0, 1, -1, 2 ** 52 + 1, 2 ** 53 + 1, -(2 ** 53 + 3), 2 ** 60 + 2 ** 7,
             2 ** 60 + 2 ** 7 + 1, 3 << 100]
    for gamma in (2.0 ** -1022, 2.0 ** -16, 1.0, 2.0, 2.0 ** 901, 2.0 ** 960):
        top = Fraction(numpy.finfo(float).max) / Fraction(gamma)
        for cell in cells + [int(top), int(top) + 1, -int(top) - 2 ** 1000, int(2 * top)]:
            expected = _lattice_float(cell, gamma)
            released = exact._release(cell, gamma)
            assert (math.isinf(released) if expected is None else released == expected), \
                (cell, gamma)
            if expected is not None:
                _on_lattice(released, gamma)
    with pytest.raises(ValueError, match="overflows float64"):
        exact._finite_release(numpy.array([1.0, math.inf]))
    assert exact._finite_release(numpy.array([numpy.finfo(float).max])).size == 1


def test_the_lattice_step_at_every_binade_of_the_scale():
    """gamma = 2^(floor(log2 scale) - 16): at, just below and just above every power of
    two from the smallest allowed scale 2^(16 - 1022) up; below it, refused."""
    for e in range(exact.LATTICE_BITS - 1022, 1024):
        for scale in _around(2.0 ** e)[:3]:
            if not math.isfinite(scale) or scale < 2.0 ** (exact.LATTICE_BITS - 1022):
                continue
            gamma = exact.lattice(scale)
            power = Fraction(gamma) * 2 ** exact.LATTICE_BITS
            assert power <= Fraction(scale) < 2 * power, scale
            assert math.frexp(gamma)[0] == 0.5
    with pytest.raises(ValueError):
        exact.lattice(math.nextafter(2.0 ** (exact.LATTICE_BITS - 1022), 0))


def test_the_bound_may_reach_2_50_lattice_steps_and_no_further():
    """A generated module and the baseline accept a bound of exactly 2^50 lattice steps
    and state it; one ulp more is refused (beyond it the release may leave the exact
    lattice's range)."""
    module = generated("legendre10")
    for epsilon in (1.0, 0.37, 3e-7):
        limit = math.ldexp(module.release_facts(epsilon=epsilon, bound=1.0)["lattice"], 50)
        assert module.release_facts(epsilon=epsilon, bound=limit)["bound"] == limit
        with pytest.raises(ValueError, match="2\\^50 lattice steps"):
            module.release_facts(epsilon=epsilon, bound=math.nextafter(limit, math.inf))
        step = exact.lattice(baseline.release_scale("GP", epsilon))
        assert baseline.baseline_bound("GP", epsilon, math.ldexp(step, 50)) == math.ldexp(step, 50)
        with pytest.raises(ValueError, match="2\\^50 lattice steps"):
            baseline.baseline_bound("GP", epsilon, math.nextafter(math.ldexp(step, 50), math.inf))


class Recording:
    """A seeded word stream that remembers every word it gives, in order."""

    def __init__(self, seed):
        self.rng, self.given = numpy.random.default_rng(seed), []

    def _words(self, count):
        words = self.rng.integers(0, 1 << 64, size=count, dtype=numpy.uint64)
        self.given.extend(int(w) for w in words)
        return words


def _uniform(words, given):
    """The midpoint (200 digits) of one uniform's interval after the refinements in
    ``given`` (one more word per level), as tests/test_exact.py reconstructs it."""
    prefix, bits = words >> 12, 52
    for word in given:
        prefix, bits = (prefix << 64) | word, bits + 64
    return (mp.mpf(prefix) + mp.mpf(1) / 2) * mp.mpf(2) ** -bits


def _exact_fraction(value):
    """An mpf as an exact Fraction."""
    sign, man, exp, _ = mp.mpf(value)._mpf_
    return Fraction((-1) ** sign * int(man)) * Fraction(2) ** int(exp)


THRESHOLD_STEPS = [0.0, 0.25, 2.0 ** 50, 2.0 ** 51 - 1, 2.0 ** 51, 2.0 ** 51 + 1, 2.0 ** 52 - 0.5,
                   2.0 ** 52, 2.0 ** 52 + 1, 2.0 ** 53, 2.0 ** 53 + 2, 2.0 ** 70]


@pytest.mark.parametrize("scale", [2.0 ** -1006, 0.37, 1.7 * 2.0 ** 16, 1.1 * 2.0 ** 917])
def test_laplace_releases_at_every_threshold_equal_the_ideal_sample(scale):
    """exact.laplace of one entry at x = +-n gamma for n at every threshold (and subnormal
    x): the release is round_gamma(x + scale Z) of the 200-digit Z of the words drawn
    (refinements included), a whole multiple of gamma."""
    gamma = exact.lattice(scale)
    xs = [s * n * gamma for n in THRESHOLD_STEPS for s in (1, -1)] + [5e-324, -2.0 ** -1060]
    for seed, x in enumerate(xs):
        source = Recording(seed)
        released = exact.laplace(numpy.array([x]), scale, source)[0]
        word = source.given[0]
        z = -mp.log(_uniform(word, source.given[1:])) * (-1 if word & 1 else 1)
        cell = _cell(Fraction(x) / Fraction(gamma) + Fraction(scale) / Fraction(gamma)
                     * _exact_fraction(z))
        assert released == _lattice_float(cell, gamma), (x, scale)
        _on_lattice(released, gamma)


@pytest.mark.parametrize("scale", [2.0 ** -1006, 0.37, 1.1 * 2.0 ** 917])
def test_gaussian_releases_at_every_threshold_equal_the_ideal_sample(scale):
    """exact.gaussian of one pair (x at a threshold, -x): both releases equal round_gamma
    of x + scale N for the 200-digit normals of the words drawn."""
    gamma = exact.lattice(scale)
    for seed, n in enumerate(THRESHOLD_STEPS):
        x = numpy.array([n * gamma, -n * gamma - gamma / 2])
        source = Recording(100 + seed)
        released = exact.gaussian(x, scale, source)
        words, given = source.given[:2], source.given[2:]
        u = [_uniform(words[i], given[i::2]) for i in range(2)]
        r = mp.sqrt(-2 * mp.log(u[0]))
        for i, z in enumerate((r * mp.cos(2 * mp.pi * u[1]), r * mp.sin(2 * mp.pi * u[1]))):
            cell = _cell(Fraction(float(x[i])) / Fraction(gamma)
                         + Fraction(scale) / Fraction(gamma) * _exact_fraction(z))
            assert released[i] == _lattice_float(cell, gamma), (n, i, scale)
            _on_lattice(released[i], gamma)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("scale", [2.0 ** -1006, 0.37, 1.1 * 2.0 ** 917])
def test_spherical_laplace_rows_at_every_threshold_equal_the_ideal_sample(d, scale):
    """exact.spherical_laplace of one row whose coordinates sit at the thresholds (the
    fast path decides on the row's pairs, its float error from the row's largest noise):
    every coordinate is round_gamma(x + scale Z) of the 200-digit Z of the words drawn
    (tests/test_exact.py's reconstruction, refinements included)."""
    from test_exact import _ideal_spherical, _prefixes, _spherical_group
    gamma = exact.lattice(scale)
    for seed, n in enumerate(THRESHOLD_STEPS):
        x = numpy.array([n * gamma, -n * gamma - gamma / 2, 2.0 ** 51 * gamma][:d])
        source = Recording(300 + seed)
        released = exact.spherical_laplace(x, scale, source)
        group, used = _spherical_group(source.given, d, False)
        z = _ideal_spherical(_prefixes(group, source.given[used:]), d, False)
        for i in range(d):
            cell = _cell(Fraction(float(x[i])) / Fraction(gamma)
                         + Fraction(scale) / Fraction(gamma) * _exact_fraction(z[i]))
            assert released[i] == _lattice_float(cell, gamma), (n, i, scale)
            _on_lattice(released[i], gamma)
