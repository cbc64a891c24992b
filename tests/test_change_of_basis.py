"""The monomial change of basis to Legendre (issue 22, compile time): the rows of C on
demand equal the exact rational recurrence, and every float64 of R = C D^(1/2) equals the
value the earlier path rounded from 60 mpmath digits, which is checked in turn to be the
correctly rounded one with exact integers; the packed literals are textwrap's lines."""
import math
import random
import textwrap
from fractions import Fraction

import mpmath
import pytest

from conftest import ROOT  # noqa: F401  (puts the worktree on sys.path)
from gpcompiler.compiler.analysis import legendre as analysis
from gpcompiler.compiler.emit.common import _fill_words
from gpcompiler.compiler.spec import load_spec

INTERVALS = [("0", "100"), ("-1", "1"), ("-3", "1"), ("1/3", "7/2"), ("-2/7", "5"),
             ("0", "1000000000")]     # beta > 0, beta = 0, beta < 0, fractions, overflow to inf


def _spec(tmp_path, lo, hi, degree, family=True):
    basis = (f'family = {{ name = "monomial", degree = {degree} }}' if family else
             "functions = [" + ", ".join(f'"t**{j}"' for j in range(degree + 1)) + "]")
    path = tmp_path / f"m{degree}{'f' if family else 'u'}.toml"
    path.write_text(f'name = "m"\n[domain]\nvariables = ["t"]\nintervals = [["{lo}", "{hi}"]]\n'
                    f"[basis]\n{basis}\n")
    return load_spec(path)


def _old_float(c, norm):
    """The earlier as_float: one 60-digit mpmath context per entry."""
    with mpmath.workdps(60):
        root = mpmath.sqrt(mpmath.mpf(int(norm.numerator)) / int(norm.denominator))
        value = mpmath.mpf(int(c.numerator)) / int(c.denominator) * root
        return float(value) if abs(value) < 2 ** 1024 else math.copysign(math.inf, value)


def _is_correctly_rounded(f, c, norm):
    """f is the float64 nearest to c sqrt(norm) (ties to even), by exact rationals."""
    c, norm = Fraction(int(c.numerator), int(c.denominator)), Fraction(int(norm.numerator),
                                                                        int(norm.denominator))
    square, sign = c * c * norm, 1 if c > 0 else -1
    if math.isinf(f):
        top = Fraction(2 ** 1024 - 2 ** 970)          # the midpoint above the largest float
        return f == sign * math.inf and square >= top * top
    a = abs(f)
    below, above = Fraction(a) - Fraction(a - math.nextafter(a, 0)) / 2, \
        Fraction(a) + Fraction(math.nextafter(a, math.inf) - a) / 2
    if math.copysign(1, f) != sign or not below * below <= square <= above * above:
        return False
    tie = square in (below * below, above * above)
    return not tie or math.frexp(a)[0] * 2 ** 53 % 2 == 0


@pytest.mark.parametrize("lo, hi", INTERVALS)
def test_rows_equal_the_exact_recurrence(tmp_path, lo, hi):
    """Row j on demand (closed form) = the field recurrence of the user basis t^j, as dicts."""
    family, user = _spec(tmp_path, lo, hi, 24), _spec(tmp_path, lo, hi, 24, family=False)
    field, rows, norms, _ = analysis.legendre_expansion(family)
    _, reference, _, _ = analysis.legendre_expansion(user)
    assert isinstance(rows, analysis._MonomialRows) and isinstance(reference[0], dict)
    assert [dict(row) for row in rows] == reference
    assert [rows[j][j] for j in range(25)] == [reference[j][j] for j in range(25)]


@pytest.mark.parametrize("lo, hi", INTERVALS)
def test_floats_equal_the_old_path_and_are_correctly_rounded(tmp_path, lo, hi):
    """Every float64 of R, from the certified recurrence and from the generic path, equals
    the 60-digit path's and is the correctly rounded value; STEP_ERROR = 2^50 (a bound of
    about 2^-50) sends most entries through the exact fallback, with the same result."""
    field, rows, norms, _ = analysis.legendre_expansion(_spec(tmp_path, lo, hi, 48))
    exact = [dict(row) for row in rows]
    reference = {(j, k): _old_float(c, norms[k]) for j, row in enumerate(exact)
                 for k, c in row.items()}
    assert all(_is_correctly_rounded(f, exact[j][k], norms[k])
               for (j, k), f in reference.items())
    lower = [reference.get((j, k), 0.0) for j in range(len(exact)) for k in range(j + 1)]
    assert rows.floats(norms).tolist() == lower          # row by row, 0.0 where C_jk = 0
    assert analysis._change_floats(exact, norms) == reference
    saved, analysis.STEP_ERROR = analysis.STEP_ERROR, 2 ** 50
    try:
        assert rows.floats(norms).tolist() == lower
    finally:
        analysis.STEP_ERROR = saved


def test_rounded_root_product_ties_range_and_signs():
    """Exact rounding of (p/q) sqrt(r/s): ties go to even, overflow to inf, subnormals."""
    half = Fraction(1, 2 ** 53)
    for value, expected in ((1 + half, 1.0), (1 + 3 * half, 1 + 4 * half),      # ties
                            (Fraction(2 ** 1024 - 2 ** 970), math.inf),
                            (Fraction(2 ** 1024 - 2 ** 970 - 1), 1.7976931348623157e308),
                            (Fraction(3, 2 ** 1076), math.ulp(0.0))):   # subnormal
        # value = (value / 2) * sqrt(4)
        got = analysis._rounded_root_product(value.numerator, 2 * value.denominator,
                                             Fraction(4))
        assert got == float(expected), (value, got)
        assert analysis._rounded_root_product(-value.numerator, 2 * value.denominator,
                                              Fraction(4)) == -float(expected)
    rng = random.Random(5)
    for _ in range(300):
        c = Fraction(rng.randrange(1, 10 ** rng.randrange(1, 60)),
                     rng.randrange(1, 10 ** rng.randrange(1, 60))) * rng.choice((1, -1))
        norm = Fraction(rng.randrange(1, 10 ** 6), rng.randrange(1, 10 ** 6))
        f = analysis._rounded_root_product(c.numerator, c.denominator, norm)
        assert _is_correctly_rounded(f, c, norm) and f == _old_float(c, norm)


def test_fill_words_is_textwrap():
    """The packed literal's lines are textwrap.wrap's, width 91."""
    rng = random.Random(3)
    for _ in range(200):
        codes = tuple(rng.choice(["1.5", "-math.inf", "math.nan", "0.0",
                                  repr(rng.uniform(-1e300, 1e300)), repr(rng.random() * 1e-7)])
                      for _ in range(rng.randrange(1, 80)))
        assert _fill_words(codes, 91) == textwrap.wrap(", ".join(codes) + ",", 91)


def _legendre_coefficients(lo, hi, m):
    """C_jk of t^j = sum_k C_jk P_k(u), u = (2t - lo - hi)/(hi - lo), by Fractions alone:
    t = alpha u + beta and u P_k = ((k + 1) P_(k+1) + k P_(k-1))/(2k + 1)."""
    alpha, beta = (hi - lo) / 2, (hi + lo) / 2
    rows = [{0: Fraction(1)}]
    for _ in range(m - 1):
        new = {}
        for k, c in rows[-1].items():
            for key, value in ((k, beta * c), (k + 1, alpha * c * (k + 1) / (2 * k + 1)),
                               (k - 1, alpha * c * k / (2 * k + 1))):
                if key >= 0 and value:
                    new[key] = new.get(key, 0) + value
        rows.append(new)
    return rows


def _float(value):
    """The float64 nearest to a Fraction, +-inf beyond the range."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


@pytest.mark.parametrize("lo, hi, degree", [("-7/2", "-1/3", 60), ("0", "100", 170)])
def test_packed_module_literals_are_the_mpmath_rounding(tmp_path, lo, hi, degree):
    """The generated module of a packed monomial basis (more than COMPACT_LIMIT entries):
    every float64 literal of R = C D^(1/2) equals the 60-digit mpmath value of the
    Fraction recurrence rounded once (inf beyond the range on [0, 100]), every literal of G
    the exactly rounded moment, and the zeros above the diagonal stay zero."""
    from gpcompiler.compiler.build import compile_spec
    _spec(tmp_path, lo, hi, degree)
    source = compile_spec(tmp_path / f"m{degree}f.toml").source
    assert "values = numpy.array((" in source and max(map(len, source.splitlines())) < 100
    namespace = {}
    exec(compile(source, "packed", "exec"), namespace)
    p = namespace["_params"]({})
    cholesky, gram = namespace["_cholesky"](p), namespace["_gram"](p)
    a, b = Fraction(lo), Fraction(hi)
    rows, m = _legendre_coefficients(a, b, degree + 1), degree + 1
    expected = [[0.0] * m for _ in range(m)]
    for j, row in enumerate(rows):
        for k, c in row.items():
            expected[j][k] = _old_float(c, (b - a) / (2 * k + 1))
    assert cholesky.tolist() == expected
    if lo == "0":
        assert math.isinf(cholesky[degree, 0]) and math.isfinite(cholesky[degree, degree])
    moments = [_float((b ** (n + 1) - a ** (n + 1)) / (n + 1)) for n in range(2 * m - 1)]
    assert gram.tolist() == [[moments[j + k] for k in range(m)] for j in range(m)]
