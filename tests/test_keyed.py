"""Addressed randomness (gpcompiler/runtime/keyed.py, docs/reference/randomness.md): SHAKE128
against FIPS 202 vectors and an independent Keccak, golden words of the address scheme, the
same release however a keyed batch is split, exact rounding of the ideal sample of the
addressed words (200-digit mpmath) where the fast path cannot decide, and the laws."""
import hashlib
import itertools

import mpmath
import numpy
import pytest
from scipy import stats

from gpcompiler.runtime import exact
from gpcompiler.runtime.keyed import KeyedGenerator

mp = mpmath.MPContext()
mp.dps = 200
KEY = bytes(range(32))


# -- SHAKE128: FIPS 202 vectors and an independent Keccak-f[1600] ---------------------------

def _rc(t):
    """FIPS 202 Algorithm 5: the bit rc(t) of the LFSR x^8 + x^6 + x^5 + x^4 + 1."""
    r = 1
    for _ in range(t % 255):
        r <<= 1
        if r & 0x100:
            r ^= 0x171
    return r & 1


ROUND_CONSTANTS = [sum(_rc(j + 7 * ir) << (2 ** j - 1) for j in range(7)) for ir in range(24)]
MASK = (1 << 64) - 1


def _offsets():
    """FIPS 202 Sec. 3.2.2: the rho offsets along the walk (x, y) -> (y, 2x + 3y)."""
    offsets, (x, y) = {(0, 0): 0}, (1, 0)
    for t in range(24):
        offsets[x, y] = (t + 1) * (t + 2) // 2 % 64
        x, y = y, (2 * x + 3 * y) % 5
    return offsets


OFFSETS = _offsets()


def _rot(v, n):
    return ((v << n) | (v >> (64 - n))) & MASK if n else v


def keccak_f(a):
    """Keccak-f[1600] on lanes a[x][y] (FIPS 202 Sec. 3.3: theta, rho, pi, chi, iota)."""
    for rc in ROUND_CONSTANTS:
        c = [a[x][0] ^ a[x][1] ^ a[x][2] ^ a[x][3] ^ a[x][4] for x in range(5)]
        d = [c[(x - 1) % 5] ^ _rot(c[(x + 1) % 5], 1) for x in range(5)]
        a = [[a[x][y] ^ d[x] for y in range(5)] for x in range(5)]
        b = [[0] * 5 for _ in range(5)]
        for x, y in itertools.product(range(5), range(5)):
            b[y][(2 * x + 3 * y) % 5] = _rot(a[x][y], OFFSETS[x, y])
        a = [[b[x][y] ^ (~b[(x + 1) % 5][y] & b[(x + 2) % 5][y]) for y in range(5)]
             for x in range(5)]
        a[0][0] ^= rc
    return a


def shake128(message, length):
    """SHAKE128 (rate 168 bytes, suffix 1111 then pad10*1) with the Keccak above."""
    rate = 168
    padded = bytearray(message + b"\x1f" + bytes(-(len(message) + 1) % rate))
    padded[-1] |= 0x80
    a = [[0] * 5 for _ in range(5)]
    for start in range(0, len(padded), rate):
        block = padded[start:start + rate]
        for i in range(rate // 8):
            a[i % 5][i // 5] ^= int.from_bytes(block[8 * i:8 * i + 8], "little")
        a = keccak_f(a)
    out = b""
    while len(out) < length:
        out += b"".join(a[i % 5][i // 5].to_bytes(8, "little") for i in range(rate // 8))
        a = keccak_f(a)
    return out[:length]


# FIPS 202 example values (NIST CSRC, SHAKE128_Msg0 and SHAKE128_Msg1600: 200 bytes 0xA3)
SHAKE128_EMPTY = ("7f9c2ba4e88f827d616045507605853ed73b8093f6efbc88eb1a6eacfa66ef26"
                  "3cb1eea988004b93103cfb0aeefd2a686e01fa4a58e8a3639ca8a1e3f9ae57e2")
SHAKE128_A3 = ("131ab8d2b594946b9c81333f9bb6e0ce75c3b93104fa3469d3917457385da037"
               "cf232ef7164a6d1eb448c8908186ad852d3f85a5cf28da1ab6fe343817197846")


@pytest.mark.parametrize("shake", [lambda m, n: hashlib.shake_128(m).digest(n), shake128])
def test_shake128_matches_the_fips202_examples(shake):
    assert shake(b"", 64).hex() == SHAKE128_EMPTY
    assert shake(b"\xa3" * 200, 64).hex() == SHAKE128_A3


def test_hashlib_shake128_equals_an_independent_keccak():
    """Messages across the rate (our 44-byte address message among them), outputs longer
    than a block (a row's words span many)."""
    rng = numpy.random.default_rng(5)
    for size in (0, 1, 44, 135, 167, 168, 169, 300):
        message = rng.bytes(size)
        assert hashlib.shake_128(message).digest(400) == shake128(message, 400)


# -- the address scheme ----------------------------------------------------------------------

def doc_word(key, row, index, level):
    """docs/reference/randomness.md: bytes 8 index .. 8 index + 7 (little-endian) of
    SHAKE128(key || row as 8 bytes LE || level as 4 bytes LE)."""
    stream = shake128(key + row.to_bytes(8, "little") + level.to_bytes(4, "little"), 8 * index + 8)
    return int.from_bytes(stream[8 * index:], "little")


GOLDEN = {(0, 0, 0): 0xc55d347b24dc8d73, (0, 1, 0): 0xdb0e177b056d1544,
          (1, 0, 0): 0xbdba19cb56f251b2, (0, 0, 1): 0x95c1d4cc49435b48,
          (2 ** 64 - 1, 25, 3): 0x6a24b05f84dd9c98}


def test_golden_words_of_the_address_scheme():
    generator = KeyedGenerator(KEY.hex())
    addresses = list(GOLDEN)
    words = [int(w) for w in generator._addressed(addresses)]
    assert words == [doc_word(KEY, *a) for a in addresses]
    assert words == list(GOLDEN.values())
    assert [int(w) for w in generator._row_words([0, 1], 2).ravel()] == [
        GOLDEN[0, 0, 0], GOLDEN[0, 1, 0], GOLDEN[1, 0, 0], doc_word(KEY, 1, 1, 0)]


@pytest.mark.parametrize("key, row", [("00" * 31, 0), ("zz" * 32, 0), (b"\0" * 31, 0),
                                      (KEY, -1), (KEY, 2 ** 64), (KEY, True), (KEY, 1.0)])
def test_bad_keys_and_rows_are_refused(key, row):
    with pytest.raises(ValueError):
        KeyedGenerator(key, row)


def test_sequential_consumers_refuse_a_key():
    """Words in order would depend on the consumer's history: only exact releases take one."""
    with pytest.raises(TypeError, match="by address"):
        exact.random_words(KeyedGenerator(KEY), 3)


# -- (a) the same release however the batch is split -----------------------------------------

CASES = [(exact.spherical_laplace, 11), (exact.spherical_laplace, 3),
         (exact.spherical_laplace, 800),  # the tail by Marsaglia-Tsang whatever the batch
         (exact.gaussian, 11), (exact.gaussian, 2), (exact.laplace, 5)]


@pytest.mark.parametrize("release, d", CASES)
def test_a_row_is_released_the_same_in_any_batch(release, d):
    x = numpy.random.default_rng(d).normal(size=(7, d)) * 3
    whole = release(x, 0.25, KeyedGenerator(KEY))
    split = KeyedGenerator(KEY)
    parts = [release(x[a:b], 0.25, split) for a, b in ((0, 2), (2, 3), (3, 7))]
    assert numpy.array_equal(numpy.concatenate(parts), whole) and split.row == 7
    for r in (6, 0, 3):  # any order, each with its address
        assert numpy.array_equal(release(x[r], 0.25, KeyedGenerator(KEY, row=r)), whole[r])
    assert not numpy.array_equal(release(x, 0.25, KeyedGenerator(KEY, row=1)), whole)


def test_a_keyed_release_is_not_the_unkeyed_one():
    """The key changes the words; the seeded stream is untouched (test_exact pins it)."""
    x = numpy.zeros((3, 4))
    keyed = exact.gaussian(x, 1.0, KeyedGenerator(KEY))
    other = exact.gaussian(x, 1.0, KeyedGenerator(bytes(32)))
    assert not numpy.array_equal(keyed, other)


# -- (b) refinement gives the exact rounding of the ideal sample of the addressed words ------

class Spy(KeyedGenerator):
    """A keyed generator that records the addresses of refinement words."""

    def __init__(self, key):
        super().__init__(key)
        self.refined = []

    def _addressed(self, addresses):
        self.refined += addresses
        return super()._addressed(addresses)


def uniform_interval(row, index, levels):
    """U's interval [M, M + 1] 2^-bits from the addressed words of levels 0..levels-1: M the
    top 52 bits of the level-0 word, then each level's 64 bits (docs/reference/randomness.md)."""
    m, bits = doc_word(KEY, row, index, 0) >> 12, 52
    for level in range(1, levels):
        m, bits = (m << 64) | doc_word(KEY, row, index, level), bits + 64
    step = mp.mpf(2) ** -bits
    return mp.mpf(m) * step, mp.mpf(m + 1) * step


def laplace_z(u, row):
    sign = -1 if doc_word(KEY, row, 0, 0) & 1 else 1
    return [sign * -mp.log(u[0])]


def gaussian_z(u, row):
    r = mp.sqrt(-2 * mp.log(u[0]))
    return [r * mp.cos(2 * mp.pi * u[1]), r * mp.sin(2 * mp.pi * u[1])]


def spherical_z3(u, row):
    """d = 3: p = 2 pairs (E_1, E_2 from uniforms 0, 1; angles from 2, 3), the tail
    G = -ln U_4; R = E_1 + E_2 + G, H = E_1 + E_2 cos^2, Z = R / sqrt(H) (sqrt(E_1) cos,
    sqrt(E_2) cos, sqrt(E_1) sin) (runtime/exact.py, spherical_laplace)."""
    e = [-mp.log(v) for v in u[:2]]
    t = [2 * mp.pi * v for v in u[2:4]]
    h = e[0] + e[1] * mp.cos(t[1]) ** 2
    f = (e[0] + e[1] - mp.log(u[4])) / mp.sqrt(h)
    return [f * mp.sqrt(e[0]) * mp.cos(t[0]), f * mp.sqrt(e[1]) * mp.cos(t[1]),
            f * mp.sqrt(e[0]) * mp.sin(t[0])]


@pytest.mark.parametrize("release, ideal, d, uniforms", [
    (exact.laplace, laplace_z, 1, 1), (exact.gaussian, gaussian_z, 2, 2),
    (exact.spherical_laplace, spherical_z3, 3, 5)])
def test_forced_refinement_is_the_exact_rounding_of_the_addressed_words(release, ideal, d,
                                                                        uniforms):
    """Each row's first coordinate is placed on a lattice midpoint as seen from its level-0
    words, so the fast path cannot decide it; its release must be the rounding of x + Z at
    200 digits from the words of levels 0..3 (every corner of their box in one cell)."""
    scale, gamma, rows = 0.75, exact.lattice(0.75), 6
    x = numpy.full((rows, d), 0.5)
    for row in range(rows):
        mids = [(a + b) / 2 for a, b in (uniform_interval(row, i, 1) for i in range(uniforms))]
        x[row, 0] = float((mp.mpf(5) + mp.mpf(1) / 2) * gamma - scale * ideal(mids, row)[0])
    spy = Spy(KEY)
    released = release(x, scale, spy)
    for row in range(rows):
        assert (row, 0, 1) in spy.refined
        boxes = [uniform_interval(row, i, 4) for i in range(uniforms)]
        values = [ideal(corner, row) for corner in itertools.product(*boxes)]
        for k in range(d):
            cells = {int(mp.nint((mp.mpf(float(x[row, k])) + scale * z[k]) / gamma))
                     for z in values}
            assert len(cells) == 1
            assert released[row, k] == cells.pop() * gamma


# -- (c) the laws with keyed words over many addresses ---------------------------------------

def test_keyed_laws():
    """Laplace and Gaussian marginals, the spherical radius Gamma(d) and direction (a
    coordinate u of a uniform direction in R^5 has (u + 1) / 2 ~ Beta(2, 2)) (KS, at a scale
    where the lattice step 2^-16 is negligible), over 12000 rows of addresses."""
    generator = KeyedGenerator(KEY, row=10 ** 6)
    laplace = exact.laplace(numpy.zeros((4000, 3)), 1.0, generator).ravel()
    normal = exact.gaussian(numpy.zeros((4000, 3)), 1.0, generator).ravel()
    sphere = exact.spherical_laplace(numpy.zeros((4000, 5)), 1.0, generator)
    assert generator.row == 10 ** 6 + 12000
    assert stats.kstest(laplace, stats.laplace.cdf).pvalue > 1e-4
    assert stats.kstest(normal, stats.norm.cdf).pvalue > 1e-4
    radius = numpy.linalg.norm(sphere, axis=1)
    assert stats.kstest(radius, stats.gamma(5).cdf).pvalue > 1e-4
    assert stats.kstest((sphere[:, 2] / radius + 1) / 2, stats.beta(2, 2).cdf).pvalue > 1e-4


def test_a_keyed_or_seeded_release_file_says_it_is_not_private(cli, tmp_path):
    """--key and --seed releases are reproducible by whoever holds the key or seed: the
    release file says so (new-user review of issue 30); an OS-entropy release says nothing."""
    data = tmp_path / "c.csv"
    data.write_text("curve,t,y\na,0,1\na,1,2\n")
    for flags, says in ((["--key", "00" * 32], "keyed (not private"),
                        (["--seed", "3"], "seeded (not private"), ([], None)):
        out = tmp_path / "r.csv"
        status, _, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "1",
                             *flags, "-o", out)
        assert status == 0, err
        header = [line for line in out.read_text().splitlines() if line.startswith("# randomness")]
        assert (header[0].startswith(f'# randomness: "{says}') if says else not header), header
