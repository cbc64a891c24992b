"""Robustness (issue 30, item 7): monomial specs under the H^1 and weighted metrics compile
(a new user's spec shape), and the suite's guards against load and hangs."""
import math
from fractions import Fraction

import numpy
import pytest

from gpcompiler.compiler.build import import_module_file

NEW_USERS_SPEC = '''name = "{name}"
title = "Monomials of degree {degree} under H1"

[domain]
intervals = [["{lo}", "{hi}"]]

[basis]
family = {{ name = "monomial", degree = {degree} }}

[metric]
{metric}
'''


def _compiled(cli, tmp_path, name, degree, lo, hi, metric):
    """Compile the spec with ``gpcompiler compile`` and import the module."""
    spec = tmp_path / f"{name}.toml"
    spec.write_text(NEW_USERS_SPEC.format(name=name, degree=degree, lo=lo, hi=hi, metric=metric))
    status, _, err = cli("compile", spec, "-o", tmp_path)
    assert status == 0, err
    return import_module_file(tmp_path / f"{name}.py", f"robust_{name}")


def _moment(lo, hi, n):
    """The exact integral of t^n over [lo, hi]."""
    return (Fraction(hi) ** (n + 1) - Fraction(lo) ** (n + 1)) / (n + 1)


def _sobolev_gram(lo, hi, m):
    """<t^j, t^k>_H1 = int t^(j+k) + jk int t^(j+k-2), exact."""
    return [[_moment(lo, hi, j + k) + (j * k * _moment(lo, hi, j + k - 2) if j and k else 0)
             for k in range(m)] for j in range(m)]


def _weighted_gram(lo, hi, m):
    """int t^(j+k) (1 + t) dt, exact."""
    return [[_moment(lo, hi, j + k) + _moment(lo, hi, j + k + 1) for k in range(m)]
            for j in range(m)]


def _exact_cholesky_squares(gram):
    """R_jk^2 = L_jk^2 D_k from the exact LDL^T of the Gram matrix, with R_jk's sign."""
    m = len(gram)
    lower, pivots = [[Fraction(0)] * m for _ in range(m)], []
    for j in range(m):
        for k in range(j + 1):
            value = gram[j][k] - sum(lower[j][i] * lower[k][i] * pivots[i] for i in range(k))
            if j == k:
                pivots.append(value)
                lower[j][j] = Fraction(1)
            else:
                lower[j][k] = value / pivots[k]
    return [[(lower[j][k] ** 2 * pivots[k], (lower[j][k] > 0) - (lower[j][k] < 0))
             for k in range(m)] for j in range(m)]


def _is_rounded_root(r, square, sign):
    """Whether the float r is sqrt(square) * sign correctly rounded: sqrt(square) lies
    within half an ulp of |r| (checked on exact squares)."""
    if sign == 0:
        return r == 0.0
    half = Fraction(math.ulp(abs(r))) / 2
    below = Fraction(abs(r)) - Fraction(math.ulp(math.nextafter(abs(r), 0))) / 2
    return (math.copysign(1, r) == sign and below ** 2 <= square <= (Fraction(abs(r)) + half) ** 2)


CASES = [(0, 0, 1), (1, 0, 1), (3, 0, 1), (3, -1, 2), (12, -1, 2)]


@pytest.mark.parametrize("degree, lo, hi", CASES)
def test_a_new_users_h1_monomial_spec_compiles_with_the_exact_gram(cli, tmp_path, degree, lo, hi):
    """monomial degree d with metric.sobolev = 1 (new-user review: "internal error: TypeError:
    mpq() requires numeric or string argument", sympy Integers reached gmpy2): the module's
    Gram is the exact H^1 Gram correctly rounded, and R = L D^(1/2) of its exact LDL^T."""
    module = _compiled(cli, tmp_path, f"h1_monomial_{degree}_{lo + 1}", degree, lo, hi,
                       "sobolev = 1")
    exact = _sobolev_gram(lo, hi, degree + 1)
    assert module.METRIC == "sobolev" and module.BASIS_SIZE == degree + 1
    assert module.gram().tolist() == [[float(v) for v in row] for row in exact]
    r = module._cholesky(module._params({}))
    squares = _exact_cholesky_squares(exact)
    assert all(_is_rounded_root(float(r[j, k]), *squares[j][k])
               for j in range(degree + 1) for k in range(degree + 1))


def test_a_weighted_monomial_spec_compiles_with_the_exact_gram(cli, tmp_path):
    """The weighted metric takes the same Legendre-expansion path (it failed alike)."""
    module = _compiled(cli, tmp_path, "weighted_monomial", 3, 0, 1, 'weight = "1 + t"')
    exact = _weighted_gram(0, 1, 4)
    assert module.gram().tolist() == [[float(v) for v in row] for row in exact]


def test_the_h1_monomial_module_is_orthonormal_in_h1(cli, tmp_path):
    """e = R^(-1) phi: its coefficients M in the monomials, read from the module at 4
    points, give M G M^T = I against the exact G (numerical: float coefficients)."""
    module = _compiled(cli, tmp_path, "h1_orthonormal", 3, 0, 1, "sobolev = 1")
    x = numpy.array([0.0, 0.25, 0.6, 1.0])
    coefficients = numpy.linalg.solve(module.basis(x), module.orthonormal_basis(x)).T
    gram = numpy.array(_sobolev_gram(0, 1, 4), dtype=float)
    assert numpy.abs(coefficients @ gram @ coefficients.T - numpy.eye(4)).max() < 1e-11
