"""Weighted L2 and Sobolev H^1 metrics, and the numerical-quadrature fallback, against mpmath."""
import mpmath
import numpy
import pytest

from gpcompiler import load
from gpcompiler.compiler.analysis import gram as analysis_module
from gpcompiler.compiler.analysis import analyze
from gpcompiler.compiler.spec import load_spec


def _module(tmp_path, name, body):
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\n' + body)
    return load(path, cache=tmp_path / "cache"), load_spec(path)


def _gauss(lo, hi, count=200):
    nodes, weights = numpy.polynomial.legendre.leggauss(count)
    return (hi - lo) / 2 * nodes + (hi + lo) / 2, weights * (hi - lo) / 2


def test_weighted_metric_gram_orthonormality_and_projection(tmp_path):
    module, _ = _module(tmp_path, "weighted", '[domain]\nintervals = [["0", "2"]]\n'
                        '[basis]\nfunctions = ["1", "t", "t**2"]\n[metric]\nweight = "exp(-t)"\n')
    with mpmath.workdps(50):
        reference = [[mpmath.quad(lambda x: mpmath.exp(-x) * x ** (j + k), [0, 2]) for k in range(3)]
                     for j in range(3)]
    assert numpy.allclose(module.gram(), numpy.array(reference, dtype=float), rtol=1e-14, atol=0)
    x, w = _gauss(0, 2)
    e = module.orthonormal_basis(x)
    assert numpy.abs(numpy.einsum("t,tj,tk->jk", w * numpy.exp(-x), e, e) - numpy.eye(3)).max() < 1e-13
    t = numpy.array([0.0, 0.3, 1.1, 2.0])
    y = numpy.array([1.0, -1.0, 0.5, 2.0])
    with mpmath.workdps(50):
        def q(v):
            return numpy.interp(float(v), t, y)
        rhs = [sum(mpmath.quad(lambda v: mpmath.exp(-v) * mpmath.mpf(q(v)) * v ** j, [t[i], t[i + 1]])
                   for i in range(3)) for j in range(3)]
        a = mpmath.lu_solve(mpmath.matrix(reference), mpmath.matrix(rhs))
    assert numpy.allclose(module.to_user(module.project(t, y)), [float(v) for v in a], atol=1e-12)


def test_sobolev_metric_gram_and_projection(tmp_path):
    module, _ = _module(tmp_path, "sobolev", '[domain]\nintervals = [["0", "1"]]\n'
                        '[basis]\nfunctions = ["1", "t", "t**2", "t**3"]\n[metric]\nsobolev = 1\n')
    gram = numpy.array([[1 / (j + k + 1) + (j * k / (j + k - 1) if j and k else 0.0)
                         for k in range(4)] for j in range(4)])
    assert numpy.allclose(module.gram(), gram, rtol=1e-15, atol=0)
    t = numpy.linspace(0, 1, 7)
    y = numpy.sin(3 * t)
    slopes = numpy.diff(y) / numpy.diff(t)
    rhs = []
    for j in range(4):
        value = 0.0
        for i in range(6):
            x, w = _gauss(t[i], t[i + 1], 10)
            value += numpy.sum(w * numpy.interp(x, t, y) * x ** j)
            value += slopes[i] * (t[i + 1] ** j - t[i] ** j)
        rhs.append(value)
    expected = numpy.linalg.solve(gram, rhs)
    assert numpy.allclose(module.to_user(module.project(t, y)), expected, atol=1e-9)
    x, w = _gauss(0, 1)
    e = module.orthonormal_basis(x)
    h = 1e-6
    derivative = (module.orthonormal_basis(x + h * (x < 0.5)) - module.orthonormal_basis(x - h * (x >= 0.5)))
    derivative /= h
    inner = numpy.einsum("t,tj,tk->jk", w, e, e) + numpy.einsum("t,tj,tk->jk", w, derivative, derivative)
    assert numpy.abs(inner - numpy.eye(4)).max() < 1e-4


def test_no_closed_form_falls_back_to_flagged_mpmath_quadrature(tmp_path, monkeypatch):
    monkeypatch.setattr(analysis_module, "INTEGRATION_SECONDS", 0.5)   # no closed form: the limit ends it
    path = tmp_path / "numerical.toml"
    path.write_text('name = "numerical"\n[domain]\nintervals = [["0", "1"]]\n'
                    '[basis]\nfunctions = ["1", "exp(sin(3*t))"]\n')
    result = analyze(load_spec(path))
    assert result.gram_method.startswith("numerical") and result.numerical
    with mpmath.workdps(50):
        reference = mpmath.quad(lambda x: mpmath.exp(2 * mpmath.sin(3 * x)), [0, 1])
        assert abs(mpmath.mpf(str(result.gram[1, 1])) - reference) < mpmath.mpf(10) ** -45


def test_numerical_gram_with_parameters_refuses_other_values(tmp_path, monkeypatch):
    monkeypatch.setattr(analysis_module, "INTEGRATION_SECONDS", 0.5)   # no closed form: the limit ends it
    module, _ = _module(tmp_path, "numerical_param", '[domain]\nintervals = [["0", "T"]]\n'
                        'parameters = { T = "1" }\n[basis]\nfunctions = ["1", "exp(sin(3*t))"]\n')
    assert module.PARAMETERS_FIXED and "numerical" in module.GRAM_METHOD
    module.gram(T=1.0)
    with pytest.raises(ValueError, match="holds at .* only"):
        module.gram(T=2.0)
