"""PrivFuncSelect's closed forms (gpcompiler/adaptive/closed_form.py) against a 40-digit
mpmath reference on random piecewise-linear curves, and against the Gauss-rule path they
replaced: the same selections and releases on seeded generators."""
from unittest import mock

import mpmath
import numpy
import pytest

from conftest import generated
from gpcompiler import priv_func_select
from gpcompiler.adaptive import closed_form, select
from gpcompiler.adaptive.curve import make_curve

def _reference_atoms(name, x, a, b, m):
    """The orthonormal basis at an mpf point: normalized Legendre or the Fourier atoms."""
    if name == "fourier8":
        omega = 2 * mpmath.pi / (b - a)
        out = [1 / mpmath.sqrt(2 * mpmath.pi)]
        for k in range(1, (m - 1) // 2 + 1):
            out += [mpmath.cos(k * omega * x) / mpmath.sqrt(mpmath.pi),
                    mpmath.sin(k * omega * x) / mpmath.sqrt(mpmath.pi)]
        return out
    u = (2 * x - a - b) / (b - a)
    values = [mpmath.mpf(1), u]
    for k in range(1, m - 1):
        values.append(((2 * k + 1) * u * values[k] - k * values[k - 1]) / (k + 1))
    return [values[k] * mpmath.sqrt(mpmath.mpf(2 * k + 1) / (b - a)) for k in range(m)]


def _reference(name, t, y, a, b, m):
    """(c, ||q - P q||^2) at 40 digits: per piece a 24-node Gauss rule (exact for these
    polynomials; for frequencies <= 8 on pieces up to length 2, below 1e-30 relative), the
    residual ||q||^2 - ||c||^2 (the subtraction costs a few of the 40 digits)."""
    with mpmath.workdps(40):
        nodes, weights = zip(*mpmath.calculus.quadrature.GaussLegendre(mpmath.mp)
                             .calc_nodes(4, mpmath.mp.prec))  # 3 * 2^(4-1) = 24 nodes
        knots = [mpmath.mpf(a), mpmath.mpf(t[0])] + [mpmath.mpf(v) for v in t] + [
            mpmath.mpf(t[-1]), mpmath.mpf(b)]
        values = [0, 0] + [mpmath.mpf(v) for v in y] + [0, 0]
        c, norm = [mpmath.mpf(0)] * m, mpmath.mpf(0)
        for lo, hi, y0, y1 in zip(knots[:-1], knots[1:], values[:-1], values[1:]):
            if hi == lo:
                continue
            norm += (hi - lo) * (y0 * y0 + y0 * y1 + y1 * y1) / 3
            for node, weight in zip(nodes, weights):
                s = (node + 1) / 2
                e = _reference_atoms(name, lo + s * (hi - lo), a, b, m)
                q = y0 * (1 - s) + y1 * s
                c = [cj + weight * (hi - lo) / 2 * q * ej for cj, ej in zip(c, e)]
        return c, norm - sum(cj * cj for cj in c)


@pytest.mark.parametrize("name", ["monomial32", "fourier8", "legendre10"])
def test_closed_forms_match_a_40_digit_reference_on_random_curves(name):
    module = generated(name)
    a, b = module.curve_interval()
    table = closed_form.cells(module, {})
    eta = closed_form.query_eta(table, (a, b))
    rng = numpy.random.default_rng(len(name))
    for offset in (0.0, 30.0):                             # a large offset: ||q|| >> residual
        t = numpy.sort(a + (b - a) * (0.02 + 0.96 * rng.uniform(size=16)))
        t[1:] = t[0] + numpy.cumsum(numpy.minimum(numpy.diff(t), (b - a) / 6))
        t[5] = t[4]                                         # a jump
        t[9] = table.edges[numpy.searchsorted(table.edges, t[9])]  # a sample on a cell edge
        t.sort()
        y = rng.normal(size=t.size) + offset
        curve = make_curve(t, y, (a, b))
        c, residual = closed_form.project_and_residual(curve, table)
        exact_c, exact_residual = _reference(name, t, y, a, b, module.BASIS_SIZE)
        norm = curve.norm()
        error_c = max(abs(float(cj - ej)) for cj, ej in zip(c[:, 0], exact_c))
        error_d = abs(numpy.sqrt(residual) - float(mpmath.sqrt(exact_residual)))
        assert error_c <= 1e-13 * norm            # measured: about 1e-15 ||q||
        assert error_d <= 1e-13 * norm
        assert error_d <= eta * norm and error_c <= eta * norm
        assert abs(residual / float(exact_residual) - 1) <= 1e-12


def test_only_legendre_and_fourier_modules_take_the_closed_forms():
    assert closed_form.cells(generated("fourier8"), {}) is not None
    assert closed_form.cells(generated("linear"), {}) is not None
    assert closed_form.cells(generated("sinc_ecg"), {}) is None
    assert closed_form.cells(generated("circle_shift"), {}) is None


@pytest.mark.parametrize("name, rho", [("monomial32", None), ("fourier8", None),
                                       ("fourier8", 0.5)])
def test_selections_and_releases_agree_with_the_gauss_rule_path(name, rho):
    module = generated(name)
    a, b = module.curve_interval()
    t = numpy.linspace(a + 0.1, b - 0.2, 3001)
    y = 2 * numpy.cos(5 * (t - a) / (b - a)) + numpy.sin(17 * (t - a) / (b - a))
    budget = {"epsilon": 50.0} if rho is None else {"rho": rho}
    for seed in (1, 2):
        new = priv_func_select(t, y, module, rng=seed, **budget)
        with mock.patch.object(closed_form, "cells", return_value=None):
            old = priv_func_select(t, y, module, rng=seed, **budget)
        assert new.basis_indices == old.basis_indices
        numpy.testing.assert_array_equal(new.coefficients, old.coefficients)
    curve = make_curve(t, y, (a, b))
    distances = select.prefix_distances(module, curve, {})[2]
    with mock.patch.object(closed_form, "cells", return_value=None):
        before = select.prefix_distances(module, curve, {})[2]
    assert numpy.max(numpy.abs(distances - before)) <= 1e-12 * curve.norm()
