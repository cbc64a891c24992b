"""The C runtime (gpcompiler/runtime/c/gp_runtime.c) against independent references: SHAKE128
against hashlib (OpenSSL's implementation, itself checked against the FIPS 202 examples in
tests/test_keyed.py), the addressed words against runtime/keyed.py, the scales against
Fractions, the clip against runtime/clip.py, and the exact releases against the Python
target's (runtime/exact.py) for the same key, bit for bit, including inputs engineered onto
lattice midpoints so that the C refinement kernel decides them. The driver is
tests/c/gp_runtime_driver.c, built once per session with the project's C flags."""
import hashlib
import math
import random
import shutil
import struct
import subprocess
from fractions import Fraction

import mpmath
import numpy
import pytest

from gpcompiler.runtime import clip, exact
from gpcompiler.runtime.keyed import KeyedGenerator
from gpcompiler.runtime.rounding import ceil_float, ceil_sqrt

from pathlib import Path

from c_build import FLAGS

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ROOT / "gpcompiler" / "runtime" / "c"
KEY = "a5" * 16 + "0123456789abcdef" * 2
OK, EINVAL, EENTROPY, ERANGE, ENOMEM, EUNDECIDED = range(6)
UNTOUCHED = -1234.5  # the driver's out before a call


@pytest.fixture(scope="session")
def driver(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        print("no C compiler: the C runtime's tests are skipped")
        pytest.skip("no C compiler (cc, gcc or clang) on PATH")
    build = tmp_path_factory.mktemp("c_runtime")
    binary = build / "driver"
    subprocess.run([cc, *FLAGS, "-DGP_STATS", f"-I{RUNTIME}", str(ROOT / "tests/c/gp_runtime_driver.c"),
                    "-o", str(binary), "-lm"], check=True, capture_output=True, text=True)
    return binary


def run(driver, commands):
    result = subprocess.run([str(driver)], input="\n".join(commands) + "\n", capture_output=True,
                            text=True, timeout=600, check=True)
    return result.stdout.splitlines()


def hexes(values):
    return " ".join(float(v).hex() for v in numpy.ravel(values))


def floats(fields):
    return numpy.array([float.fromhex(v) for v in fields])


def noise(driver, kind, x, scale, source="k", key=KEY, row=0):
    """(status, next row, refined coordinates, refined Gamma attempts, out) of one C call."""
    x = numpy.asarray(x, dtype=float)
    rows, d = x.shape
    line = run(driver, [f"noise {kind} {source} {key} {row} {rows} {d} {float(scale).hex()} {hexes(x)}"])
    fields = line[0].split()
    return (*map(int, fields[:4]), floats(fields[4:]).reshape(rows, d))


def same_bits(a, b):
    """Equal as float64 bit patterns (so -0.0 differs from +0.0)."""
    a, b = numpy.asarray(a, dtype=float), numpy.asarray(b, dtype=float)
    return a.shape == b.shape and bool((a.view(numpy.uint64) == b.view(numpy.uint64)).all())


# -- words ------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 1, 43, 44, 167, 168, 169, 200, 400])
def test_shake128_equals_hashlib(driver, size):
    """FIPS 202 SHAKE128: the empty message and 200 bytes 0xA3 are NIST's examples (their
    expected outputs taken from hashlib, an independent implementation that
    tests/test_keyed.py checks against the published digests); messages across the rate and
    500 output bytes (three blocks) exercise absorbing and squeezing."""
    message = bytes([0xA3]) * size if size in (0, 200) else bytes(range(256))[:size] * 1
    line = run(driver, [f"shake {message.hex() or '-'} 500"])[0]
    assert line == hashlib.shake_128(message).hexdigest(500)


def test_keyed_words_equal_keyed_py(driver):
    generator = KeyedGenerator(KEY)
    for row, level, count in [(0, 0, 50), (7, 1, 30), (2 ** 64 - 1, 64, 25), (123456789, 3, 70)]:
        words = [int(w) for w in run(driver, [f"words {KEY} {row} {level} {count}"])[0].split()]
        assert words == [int(w) for w in generator._addressed([(row, i, level) for i in range(count)])]


@pytest.mark.parametrize("text, status", [(KEY, OK), (KEY.upper(), OK), (KEY[:-1], EINVAL),
                                          (KEY + "0", EINVAL), ("g" + KEY[1:], EINVAL)])
def test_parse_key(driver, text, status):
    fields = run(driver, [f"parsekey {text}"])[0].split()
    assert int(fields[0]) == status
    assert fields[1] == (KEY[:2] + KEY[-2:] if status == OK else "0000")  # untouched on error


# -- scales, lattice, clip ---------------------------------------------------------------------

def _budgets(count, seed):
    """Random positive floats over every binade (subnormals and the extremes included)."""
    rng = random.Random(seed)
    values = [5e-324, 2.0 ** -1022, 1.7976931348623157e308, 1.0, 0.5, 1 / 3, 2.0 ** -1074 * 3,
              5.562684646268003e-309, 5.562684646268004e-309, 0.1, 10.0]
    while len(values) < count:
        bits = rng.getrandbits(63)
        if bits < 0x7FF0000000000000:
            values.append(struct.unpack("<d", struct.pack("<Q", bits))[0])
    return values


def test_scale_epsilon_is_one_over_epsilon_rounded_up(driver):
    budgets = _budgets(3000, 1)
    lines = run(driver, [f"scale e {b.hex()}" for b in budgets])
    for budget, line in zip(budgets, lines):
        status, value = line.split()
        exact_value = 1 / Fraction(budget)
        if exact_value > Fraction(1.7976931348623157e308):
            assert int(status) == ERANGE
        else:
            assert int(status) == OK and float.fromhex(value) == ceil_float(exact_value)


def test_scale_rho_is_the_root_rounded_up(driver):
    budgets = _budgets(3000, 2)
    lines = run(driver, [f"scale r {b.hex()}" for b in budgets])
    for budget, line in zip(budgets, lines):
        status, value = line.split()
        assert int(status) == OK and float.fromhex(value) == ceil_sqrt(1 / (2 * Fraction(budget)))


@pytest.mark.parametrize("kind", ["e", "r", "l"])
def test_bad_budgets_and_scales_are_refused(driver, kind):
    for value in [0.0, -1.0, math.inf, math.nan, -0.0] + ([2.0 ** -1007] if kind == "l" else []):
        status, out = run(driver, [f"scale {kind} {value.hex()}"])[0].split()
        assert int(status) == EINVAL and float.fromhex(out) == -1.0


def test_lattice_equals_exact_py(driver):
    scales = [s for s in _budgets(2000, 3) if s >= 2.0 ** -1006]
    lines = run(driver, [f"scale l {s.hex()}" for s in scales])
    for scale, line in zip(scales, lines):
        status, value = line.split()
        assert int(status) == OK and float.fromhex(value) == exact.lattice(scale)


def _clip_rows(rng, d):
    rows = rng.normal(size=(60, d)) * numpy.exp(rng.uniform(-5, 5, size=(60, 1)))
    rows[0] = 0.0
    rows[1] = -0.0
    rows[2] *= 2.0 ** 500  # sums of squares overflow: scaled
    rows[3] *= 2.0 ** -560  # underflow
    rows[4] = 0.0
    rows[4][0] = 5e-324
    norms = numpy.sqrt((rows[5:] ** 2).sum(axis=1))
    rows[5:25] /= norms[:20, None]  # on the unit sphere: the bound's boundary
    return rows


@pytest.mark.parametrize("d", [1, 2, 3, 7, 8, 9, 16, 17, 33, 800])
def test_clip_rows_equals_clip_py_bit_for_bit(driver, d):
    rng = numpy.random.default_rng(d)
    rows = _clip_rows(rng, d)
    for bound in [1.0, 3.0, 1e-300, 1e300, float(numpy.nextafter(1.0, 2.0))]:
        fields = run(driver, [f"clip {rows.shape[0]} {d} {bound.hex()} {hexes(rows)}"])[0].split()
        assert int(fields[0]) == OK
        assert same_bits(floats(fields[1:]).reshape(rows.shape), clip.clip_rows(rows.copy(), bound))


def test_clip_rows_refuses_non_finite_input_and_leaves_it(driver):
    rows = numpy.ones((3, 4))
    rows[2, 1] = math.nan
    for bound, values in [(1.0, rows), (0.0, numpy.ones((3, 4))), (math.inf, numpy.ones((3, 4)))]:
        fields = run(driver, [f"clip 3 4 {bound.hex()} {hexes(values)}"])[0].split()
        assert int(fields[0]) == EINVAL
        assert same_bits(floats(fields[1:]).reshape(3, 4), values)


# -- exact releases ---------------------------------------------------------------------------

def _python_mids(kind, key, rows, d, scale):
    """The Python fast path's midpoints of unit Z (in lattice steps) for rows 0..rows-1."""
    gamma = exact.lattice(scale)
    unit = scale / gamma
    rng = KeyedGenerator(key)
    p = (d + 1) // 2
    if kind == "g":
        words = rng._row_words(list(range(rows)), 2 * p)
        return exact._gaussian_balls(words, d, unit)[0]
    words, at = rng._row_words(list(range(rows)), exact._spherical_width(d, None)), list(range(rows))
    a = d - p
    if not a:
        tail = None
    elif exact._drawn_by_mt(d, None):
        tail = exact._gamma_tail(words[:, 2 * p:], a, rng, at, 2 * p)[0]
    else:
        tail = exact._exp_tail(words[:, 2 * p:])
    mid = exact._spherical_balls(words[:, :2 * p], d, unit, tail)[0]
    return exact._unpaired(mid, d)


def _inputs(kind, d, rows, scale, rng, midpoints):
    """Rows of x mixing zeros, -0.0, huge (near 2^50 lattice steps) and tiny values, and
    ``midpoints`` coordinates placed so that x / gamma + (the fast path's unit Z) is a lattice
    midpoint: the exact release is decided only by refinement."""
    gamma = exact.lattice(scale)
    x = rng.normal(size=(rows, d)) * scale * 3
    mask = rng.uniform(size=x.shape)
    x[mask < 0.1] = 0.0
    x[(mask >= 0.1) & (mask < 0.15)] = -0.0
    huge = (mask >= 0.15) & (mask < 0.2)
    x[huge] = rng.choice([-1, 1], size=huge.sum()) * rng.uniform(0.5, 1, size=huge.sum()) * 2.0 ** 50 * gamma
    x[(mask >= 0.2) & (mask < 0.25)] = 2.0 ** -1074 * rng.integers(1, 100, size=((mask >= 0.2) & (mask < 0.25)).sum())
    x[(mask >= 0.25) & (mask < 0.3)] *= 2.0 ** -60
    lattice_points = (mask >= 0.3) & (mask < 0.35)
    x[lattice_points] = numpy.rint(x[lattice_points] / gamma) * gamma
    if midpoints:
        mid = _python_mids(kind, KEY, rows, d, scale)
        chosen = rng.choice(rows * d, size=midpoints, replace=False)
        m = numpy.floor(mid.ravel()[chosen])
        x.ravel()[chosen] = ((m + 0.5) - mid.ravel()[chosen]) * gamma
    return x


CASES = [("g", 1, 1000), ("g", 2, 1000), ("g", 3, 1000), ("g", 33, 1000), ("g", 800, 100),
         ("s", 1, 1000), ("s", 2, 1000), ("s", 3, 1000), ("s", 33, 1000), ("s", 800, 60)]


@pytest.mark.parametrize("kind, d, rows", CASES)
def test_releases_equal_the_python_target_bit_for_bit(driver, kind, d, rows):
    """The same key gives the same bits as exact.gaussian / exact.spherical_laplace, over
    zeros, -0.0, huge, tiny and lattice-point inputs, inputs on lattice midpoints (decided
    by the C refinement kernel: some must be refined) and scales across many binades."""
    rng = numpy.random.default_rng(d * 7 + len(kind))
    python = exact.gaussian if kind == "g" else exact.spherical_laplace
    refined = 0
    for scale in [1.0, 2.0 ** -40 * 3.1, 7.3e12, 2.0 ** 300 / 3, 2.0 ** -900]:
        x = _inputs(kind, d, rows, scale, rng, midpoints=max(4, rows // 50))
        status, row, count, _, out = noise(driver, kind, x, scale)
        assert status == OK and row == rows
        assert same_bits(out, python(x, scale, KeyedGenerator(KEY)))
        refined += count
    assert refined >= 20  # the engineered midpoints went through the refinement kernel


def test_rows_at_any_address_and_batch_split(driver):
    """Row r of a batch equals the one-row call at address r (docs/reference/randomness.md)."""
    x = numpy.random.default_rng(5).normal(size=(6, 33))
    _, row, _, _, whole = noise(driver, "s", x, 0.25)
    assert row == 6
    for r in (0, 3, 5):
        _, row, _, _, alone = noise(driver, "s", x[r:r + 1], 0.25, row=r)
        assert row == r + 1 and same_bits(alone, whole[r:r + 1])


@pytest.mark.parametrize("kind", ["g", "s"])
def test_errors_leave_out_untouched(driver, kind):
    """NaN or inf input, a bad scale, a failing fill, and an overflowing release (an input
    near the largest float) give their status, write nothing and take no row address."""
    x = numpy.zeros((40, 33))  # 1320 values: the two-pass path
    small = numpy.zeros((2, 3))  # the buffered path
    for values, scale, source, status in [
            (numpy.where(numpy.arange(x.size).reshape(x.shape) == 700, math.nan, x), 1.0, "k", EINVAL),
            (numpy.where(numpy.arange(6).reshape(2, 3) == 5, -math.inf, small), 1.0, "k", EINVAL),
            (small, 0.0, "k", EINVAL), (small, math.nan, "k", EINVAL),
            (x, 1.0, "f", EENTROPY), (small, 1.0, "f", EENTROPY),
            (numpy.full((40, 33), 1.7976931348623157e308), 2.0 ** 1000, "k", ERANGE),
            (numpy.full((2, 3), -1.7976931348623157e308), 2.0 ** 1000, "k", ERANGE)]:
        got, row, _, _, out = noise(driver, kind, values, scale, source=source, row=9)
        assert got == status
        assert row == (9 if source == "k" else 0)
        assert (out == UNTOUCHED).all()


def test_an_overflow_is_the_python_target_refusal(driver):
    x = numpy.full((1, 3), 1.7976931348623157e308)
    assert noise(driver, "g", x, 2.0 ** 1000)[0] == ERANGE
    with pytest.raises(ValueError, match="overflows"):
        exact.gaussian(x, 2.0 ** 1000, KeyedGenerator(KEY))


def test_a_row_longer_than_the_buffers_is_refused(driver):
    status, row, _, _, out = noise(driver, "s", numpy.zeros((1, 1025)), 1.0, row=4)
    assert status == ENOMEM and row == 4 and (out == UNTOUCHED).all()


def test_callback_and_os_sources_release_on_the_lattice(driver):
    """A fill callback or the OS gives one fresh key per call: lattice points, fresh noise
    per call, and a deterministic callback gives deterministic releases."""
    x = numpy.zeros((50, 33))
    gamma = exact.lattice(1.0)
    first = noise(driver, "s", x, 1.0, source="c")[4]
    assert same_bits(first, noise(driver, "s", x, 1.0, source="c")[4])
    os_out = [noise(driver, "s", x, 1.0, source="o")[4] for _ in range(2)]
    for out in [first] + os_out:
        assert (numpy.rint(out / gamma) * gamma == out).all() and numpy.count_nonzero(out) > 1500
    assert not (os_out[0] == os_out[1]).all()


def test_status_messages_are_distinct(driver):
    messages = run(driver, [f"message {s}" for s in range(7)])
    assert len(set(messages)) == 7 and "64 refinements" in messages[EUNDECIDED]


# -- the libm assumption ----------------------------------------------------------------------

def test_libm_log_and_tan_within_the_assumed_ulps(driver):
    """The fast path's one assumption: libm's log on the uniforms' midpoints (0, 1) and tan on
    [0, pi/4] at the angles the sampler forms err by at most GP_LIB_ULPS = exact._LIB_ULPS
    ulps (glibc documents <= 1 ulp for both on x86-64), against 50-digit mpmath."""
    rng = numpy.random.default_rng(11)
    m = rng.integers(1, 1 << 52, size=3000).astype(float)
    m[:800] = rng.integers(1, 1 << 12, size=800)
    m[800:1600] = 2.0 ** 52 - rng.integers(1, 1 << 12, size=800)
    u = (2 * m + 1) * 2.0 ** -53
    angles = numpy.minimum(u, 1 - u) * (math.pi / 2)
    logs = floats(run(driver, [f"libm l {u.size} {hexes(u)}"])[0].split())
    tans = floats(run(driver, [f"libm t {angles.size} {hexes(angles)}"])[0].split())
    worst = 0.0
    with mpmath.workdps(50):
        for computed, value in [(logs[i], mpmath.log(mpmath.mpf(u[i]))) for i in range(u.size)] + \
                               [(tans[i], mpmath.tan(mpmath.mpf(angles[i]))) for i in range(u.size)]:
            worst = max(worst, float(abs(mpmath.mpf(computed) - value) / math.ulp(float(value))))
    assert worst <= exact._LIB_ULPS


def test_gamma_attempts_at_the_acceptance_boundary_decide_like_python(driver):
    """Marsaglia-Tsang attempts whose U_2 is placed at the acceptance boundary
    (-ln U_2 = -(x^2/2 + dd (1 - w^3 + 3 ln w)) at the first two words' midpoints): the C
    refinement (levels 1, 2, ... at the attempt's addresses) accepts or rejects each exactly
    as exact._mt_refine does, and an accepted G's ball meets Python's."""
    rng = numpy.random.default_rng(3)
    generator = KeyedGenerator(KEY)
    refined = 0
    commands, expected = [], []
    for trial in range(40):
        a, row, index = int(rng.choice([16, 17, 400])), int(rng.integers(0, 1000)), 2 * int(rng.integers(1, 400))
        w0, w1 = (int(w) for w in rng.integers(1 << 20, 1 << 64, size=2, dtype=numpy.uint64))
        with mpmath.workdps(40):
            u1, u2 = ((mpmath.mpf(w >> 12) + mpmath.mpf(1) / 2) * mpmath.mpf(2) ** -52 for w in (w0, w1))
            x = mpmath.sqrt(-2 * mpmath.log(u1)) * mpmath.cos(2 * mpmath.pi * u2)
            dd, c = mpmath.mpf(3 * a - 1) / 3, 1 / mpmath.sqrt(9 * a - 3)
            w = 1 + c * x
            if w <= 0:
                continue
            boundary = mpmath.exp(x * x / 2 + dd * (1 - w ** 3 + 3 * mpmath.log(w)))
            m = int(mpmath.floor(boundary * 2 ** 52))
        for shift in (-1, 0, 1):
            w2 = ((m + shift) << 12) | int(rng.integers(0, 1 << 12))
            words = numpy.array([w0, w1, w2], dtype=numpy.uint64)
            ball, accepted, rejected = exact._mt_balls(words[None, :], a)
            if accepted[0] or rejected[0]:
                python = (bool(accepted[0]), (float(ball[0][0]), float(ball[1][0])))
            else:
                ok, _, g = exact._mt_refine(generator, words, a, [(row, index + k) for k in range(3)])
                python = (ok, g)
            commands.append(f"mt {KEY} {row} {index} {a} {w0} {w1} {w2}")
            expected.append(python)
    for line, (accepted, g) in zip(run(driver, commands), expected):
        status, was_refined, decision, mid, rad = line.split()
        assert int(status) == OK and (int(decision) == 1) == accepted
        refined += int(was_refined)
        if accepted:
            assert abs(float.fromhex(mid) - g[0]) <= float.fromhex(rad) + g[1]
    print(f'{refined} of {len(commands)} attempts refined')
    assert refined >= 10
