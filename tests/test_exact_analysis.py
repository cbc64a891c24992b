"""Exact analysis at any size (issue 10): exact certificates, closed forms, infinite and
singular domains, against mpmath references at >= 50 digits."""
import math

import mpmath
import numpy
import pytest
import sympy

from gpcompiler import build, load
from gpcompiler.analysis import analyze
from gpcompiler.errors import NotPositiveDefiniteError, SpecError, SymbolicLimitError
from gpcompiler.spec import parse_spec

DPS = 60


def _spec(body, name="s"):
    return parse_spec(f'name = "{name}"\n{body}'.encode(), f"{name}.toml")


def _monomials(degree, lo=0, hi=100):
    return _spec(f'[domain]\nintervals = [["{lo}", "{hi}"]]\n'
                 f'[basis]\nfamily = {{ name = "monomial", degree = {degree} }}\n')


def _module(tmp_path, name, body):
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\n' + body)
    return load(path, cache=tmp_path / "cache")


def _leading_pivot(n, length=100):
    """LDL^T pivot n of monomials on [0, L]: (L^n n!^2/(2n)!)^2 L/(2n+1) (t^n's P_n part)."""
    lead = sympy.Integer(length) ** n * sympy.factorial(n) ** 2 / sympy.factorial(2 * n)
    return lead ** 2 * sympy.Integer(length) / (2 * n + 1)


@pytest.mark.parametrize("degree", [35, 64, 100])
def test_high_degree_monomials_get_an_exact_certificate(degree):
    """Degrees >= 35 were rejected as dependent by a float threshold; the pivots are exact."""
    analysis = analyze(_monomials(degree))
    assert analysis.pivots[degree] == _leading_pivot(degree)
    assert all(p.is_Rational and p > 0 for p in analysis.pivots)
    assert "exact triangular change of basis" in analysis.certificate
    with mpmath.workdps(DPS):
        for j, k in [(0, 0), (degree, 3), (degree, degree)]:
            reference = mpmath.quad(lambda x: x ** (j + k), [0, 25, 50, 75, 100])
            exact = mpmath.mpf(analysis.gram[j, k].p) / analysis.gram[j, k].q
            assert abs(exact / reference - 1) < mpmath.mpf(10) ** -50


def test_nearly_dependent_basis_is_not_rejected_and_dependent_one_is():
    near = _spec('[domain]\nintervals = [["0", "1"]]\n'
                 '[basis]\nfunctions = ["1", "t", "t + t**2/10**60"]\n')
    assert analyze(near).pivots[2] == sympy.Rational(1, 180 * 10 ** 120)
    dependent = _spec('[domain]\nintervals = [["0", "1"]]\n'
                      '[basis]\nfunctions = ["1", "t", "t**2", "t**2 - 3*t + 1"]\n')
    with pytest.raises(NotPositiveDefiniteError, match=r"\(-1\)\*\[1\] \+ \(3\)\*\[t\]"):
        analyze(dependent)


def test_a_weight_that_changes_sign_is_reported_as_not_positive():
    spec = _spec('[domain]\nintervals = [["-1", "1"]]\n'
                 '[basis]\nfunctions = ["1"]\n[metric]\nweight = "t"\n')
    with pytest.raises(SpecError, match="metric.weight: the weight t is not positive"):
        analyze(spec)


@pytest.mark.parametrize("family, option, size", [("legendre", "degree", 400),
                                                  ("fourier", "order", 200)])
def test_orthogonal_families_have_a_diagonal_closed_form(family, option, size):
    interval = '["-1", "1"]' if family == "legendre" else '["0", "3"]'
    analysis = analyze(_spec(f'[domain]\nintervals = [{interval}]\n'
                             f'[basis]\nfamily = {{ name = "{family}", {option} = {size} }}\n'))
    assert all(i == j for i, j in analysis.gram.keys())
    m = analysis.spec.basis_size
    expected = ([sympy.Rational(2, 2 * k + 1) for k in range(m)] if family == "legendre"
                else [sympy.Integer(3)] + [sympy.Rational(3, 2)] * (m - 1))
    assert list(analysis.pivots) == expected
    assert [analysis.gram[k, k] for k in range(m)] == expected


def test_degree_200_monomials_gram_orthonormality_and_projection(tmp_path):
    """Gram entries against mpmath, the module's basis orthonormal to 1e-12, and the
    projection of a piecewise-linear curve against 60-digit Legendre coefficients."""
    module = _module(tmp_path, "mono200", '[domain]\nintervals = [["0", "100"]]\n'
                     '[basis]\nfamily = { name = "monomial", degree = 200 }\n')
    gram = module.gram()
    with mpmath.workdps(DPS):
        for j, k in [(0, 0), (20, 10), (70, 80)]:
            reference = mpmath.quad(lambda x: x ** (j + k), [0, 50, 100])
            assert gram[j, k] == float(reference)
    assert math.isinf(gram[200, 200])    # 100^401/401 exceeds float64, exactly so
    nodes, weights = numpy.polynomial.legendre.leggauss(202)
    x, w = 50 * nodes + 50, 50 * weights
    e = module.orthonormal_basis(x)
    assert numpy.abs(numpy.einsum("t,tj,tk->jk", w, e, e) - numpy.eye(201)).max() < 1e-12
    t = numpy.array([0.0, 13.0, 40.5, 41.0, 77.0, 100.0])
    y = numpy.array([1.0, -2.0, 0.5, 3.0, 0.0, 1.5])
    c = module.project(t, y)
    with mpmath.workdps(DPS):
        def q(v):
            i = min(int(numpy.searchsorted(t, float(v), side="right")) - 1, len(t) - 2)
            lam = (v - t[i]) / (t[i + 1] - t[i])
            return y[i] * (1 - lam) + y[i + 1] * lam
        for k in (0, 1, 7, 60, 200):
            def psi(v, k=k):
                return mpmath.sqrt(mpmath.mpf(2 * k + 1) / 100) * mpmath.legendre(k, v / 50 - 1)
            points = sorted(set(numpy.linspace(0, 100, 41)) | set(t))
            reference = mpmath.quad(lambda v: q(v) * psi(v), [mpmath.mpf(p) for p in points])
            assert abs(c[k] - float(reference)) < 1e-12


def test_to_user_round_trip_where_conditioning_allows(tmp_path):
    """Degree 35 on [-1, 1]: a = R^(-T) c against a 60-digit solve with the exact R."""
    module = _module(tmp_path, "mono35", '[domain]\nintervals = [["-1", "1"]]\n'
                     '[basis]\nfamily = { name = "monomial", degree = 35 }\n')
    analysis = analyze(_monomials(35, -1, 1))
    c = numpy.random.default_rng(2).normal(size=36)
    with mpmath.workdps(DPS):
        upper = mpmath.matrix(36, 36)
        for (j, k), value in analysis.cholesky.todok().items():
            upper[k, j] = mpmath.mpf(sympy.N(value, DPS + 5))
        a = mpmath.lu_solve(upper, mpmath.matrix(c.tolist()))
        condition = mpmath.mnorm(upper, 1) * mpmath.mnorm(upper ** -1, 1)
    a = numpy.array([float(v) for v in a])
    assert numpy.abs(module.to_user(c) - a).max() <= 1e-15 * float(condition) * numpy.abs(a).max()
    assert numpy.allclose(module.from_user(a), c, rtol=0, atol=1e-13 * numpy.abs(a).max())


def test_size_cap_is_checked_before_any_expression_is_built(monkeypatch):
    from gpcompiler import spec as spec_module
    monkeypatch.setattr(spec_module, "_family_functions", lambda *a: pytest.fail("built"))
    with pytest.raises(SpecError, match="basis size 3000 exceeds 2000"):
        _spec('[domain]\nintervals = [["-oo", "oo"]]\n'
              '[basis]\nfamily = { name = "sinc", count = 3000 }\n')


def test_time_out_names_the_environment_variable(tmp_path, monkeypatch):
    path = tmp_path / "slow.toml"
    path.write_text('name = "slow"\n[domain]\nintervals = [["0", "1"]]\n[basis]\nfunctions = ["1"]\n')
    monkeypatch.setenv("GPCOMPILER_TIME_LIMIT", "0.2")
    monkeypatch.setattr(build, "analyze", lambda spec, stage: __import__("time").sleep(3))
    with pytest.raises(SymbolicLimitError, match="GPCOMPILER_TIME_LIMIT = 0.2 s"):
        build.compile_spec(path)


def test_long_compiles_report_their_stages(tmp_path, monkeypatch):
    from gpcompiler import analysis as analysis_module
    monkeypatch.setattr(analysis_module, "PROGRESS_AFTER", 0.0)
    path = tmp_path / "m.toml"
    path.write_text('name = "m"\n[domain]\nintervals = [["0", "1"]]\n'
                    '[basis]\nfamily = { name = "monomial", degree = 3 }\n')
    messages = []
    build.compile_spec(path, progress=messages.append)
    stages = [m.split(": ")[1].split(" (")[0] for m in messages]
    assert stages == ["Gram matrix", "certificate", "orthonormal basis", "emit"]
