"""Grading by distance to a singular end of the weight (issue 19): a node delta from the end
used to leave the piece next to it on a plain Gauss rule (weights 5e-2 off, the release
depending on the grid). Every piece within its own width of a singular end is now cut
geometrically by distance to it; weights against 40-digit mpmath (x = cos u makes the
Chebyshev integrand smooth), releases on grids with and without such nodes."""
import math

import mpmath
import numpy
import pytest
from scipy.interpolate import RegularGridInterpolator

from conftest import compiled, generated

DPS = 40
NEAR = [1 - 10.0 ** -k for k in (3, 6, 9, 12)]


@pytest.fixture(scope="module")
def chebyshev():
    """Monomials of degree 3 on [-1, 1] under the Chebyshev weight (a 1-D module)."""
    return compiled("kind_chebyshev")


def _hat_integrals(grid, kind, functions):
    """X[s, a] = int h_s(x) f_a(x) dx / sqrt(1 - x^2), h_s the hat function of node s
    ("linear") or the indicator of cell s ("cells"): with x = cos u the integrand is smooth
    (Gauss-Legendre in mpmath), the end angles from the exact float nodes."""
    with mpmath.workdps(DPS):
        t = [mpmath.mpf(float(v)) for v in grid]
        rows = len(t) if kind == "linear" else len(t) - 1
        out = [[mpmath.mpf(0)] * len(functions) for _ in range(rows)]
        for i in range(len(t) - 1):
            h = t[i + 1] - t[i]
            shares = ([(i, lambda x: 1)] if kind == "cells" else
                      [(i, lambda x: (t[i + 1] - x) / h), (i + 1, lambda x: (x - t[i]) / h)])
            for row, share in shares:
                for a, f in enumerate(functions):
                    out[row][a] += mpmath.quad(lambda u: share(mpmath.cos(u)) * f(mpmath.cos(u)),
                                               [mpmath.acos(t[i + 1]), mpmath.acos(t[i])],
                                               method="gauss-legendre")
        return numpy.array([[float(v) for v in row] for row in out])


def _row_errors(weights, reference):
    """Largest relative error per node (row), each row against its own largest entry."""
    scale = numpy.abs(reference).max(axis=1)
    return (numpy.abs(weights - reference).max(axis=1) / scale).max()


GRIDS = [numpy.array([-1.0, -0.5, 0.2, 0.7] + NEAR + [1.0]),
         numpy.array([-1.0, -1 + 1e-15, -1 + 1e-7, 0.1] + NEAR + [1 - 1e-15]),
         numpy.array([-1 + 1e-3, 1 - 1e-9]),          # one piece, near both ends
         numpy.array([-1.0, 1 - 3e-9, 1 - 2e-9, 1 - 1e-9])]


@pytest.mark.parametrize("grid", GRIDS)
def test_1d_weights_match_mpmath_next_to_the_singular_ends(chebyshev, grid):
    """B[s, k] = int hat_s t^k w = (A R^T)[s, k], A the module's weights (orthonormal)."""
    reference = _hat_integrals(grid, "linear", [lambda x, k=k: x ** k for k in range(4)])
    cholesky = chebyshev._cholesky(chebyshev._params({}))
    assert _row_errors(chebyshev.projection_weights(grid) @ cholesky.T, reference) < 1e-14


@pytest.mark.parametrize("kind", ["linear", "cells"])
@pytest.mark.parametrize("grid", GRIDS)
def test_box_axis_weights_match_mpmath_next_to_the_singular_ends(grid, kind):
    """int h_s w_x L_a dx along one axis of chebyshev_box, L_a the normalized Legendre atoms."""
    module = generated("chebyshev_box")
    legendre = [lambda x, a=a: mpmath.sqrt(a + mpmath.mpf(1) / 2) * mpmath.legendre(a, x)
                for a in range(6)]
    reference = _hat_integrals(grid, kind, legendre)
    weights, _ = module._axis_weights(grid, 0, kind, module._params({}))
    assert _row_errors(weights, reference) < 1e-14


def _with_near_nodes(grid):
    return numpy.union1d(grid, NEAR)


def _same(first, second):
    scale = numpy.abs(first).max()
    assert numpy.abs(numpy.asarray(first) - numpy.asarray(second)).max() <= 1e-9 * scale


@pytest.mark.parametrize("budget", [{"epsilon": 3.0}, {"rho": 2.0}])
def test_1d_release_does_not_depend_on_nodes_next_to_a_singular_end(chebyshev, budget):
    t = numpy.array([-1.0, -0.5, 0.2, 0.7, 1.0])
    fine = _with_near_nodes(t)
    for values in (lambda x: 100.0 + 0 * x, lambda x: 3 * x - 1):
        c = [chebyshev.project(g, values(g)) for g in (t, fine)]
        _same(c[0], c[1])
        _same(*(chebyshev.project_and_privatize(g, values(g), rng=4, **budget) for g in (t, fine)))
    for grid in (t, fine):     # the constant is in the span: ||Pq||^2 = 100^2 pi
        c = chebyshev.project(grid, numpy.full(grid.size, 100.0))
        assert c @ c == pytest.approx(1e4 * math.pi, rel=1e-12)


@pytest.mark.parametrize("budget", [{"epsilon": 3.0}, {"rho": 2.0}])
def test_box_release_does_not_depend_on_nodes_next_to_a_singular_edge(budget):
    module = generated("chebyshev_box")
    grids = (numpy.array([-1.0, -0.4, 0.3, 1.0]), numpy.array([-1.0, 0.5, 1.0]))
    fine = tuple(_with_near_nodes(g) for g in grids)
    field = numpy.random.default_rng(3).normal(size=(4, 3))
    interpolated = RegularGridInterpolator(grids, field)(
        numpy.stack(numpy.meshgrid(*fine, indexing="ij"), -1))
    for coarse, refined in ((numpy.full((4, 3), 100.0), numpy.full((8, 7), 100.0)),
                            (field, interpolated)):
        c = [module.project_grid(g, v) for g, v in ((grids, coarse), (fine, refined))]
        _same(c[0], c[1])
        _same(*(module.project_and_privatize(g, v, rng=4, **budget)
                for g, v in ((grids, coarse), (fine, refined))))
    cells = [numpy.full((3, 2), 100.0), numpy.full((7, 6), 100.0)]
    released = [module.project_and_privatize(g, v, kind="cells", rng=4, **budget)
                for g, v in zip((grids, fine), cells)]
    _same(*released)
    for g, v in zip((grids, fine), cells):    # the constant is in the span: 100^2 pi^2
        c = module.project_grid(g, v, kind="cells")
        assert c @ c == pytest.approx(1e4 * math.pi ** 2, rel=1e-12)


def test_a_node_a_subnormal_distance_from_a_singular_end_changes_nothing(tmp_path):
    """A weight singular at 0 (t^-1/2 (1 - t)^-1/4) and a node 1e-300 or 5e-324 from it: the
    distance of the last graded sub-pieces underflowed to 0 and made the coefficients NaN,
    so such a sample time decided whether a release was made (adversarial review). Now the
    same coefficients and the same release as without the node."""
    from gpcompiler.compiler.build import load
    spec = tmp_path / "jacobi0.toml"
    spec.write_text('name = "jacobi0"\n[domain]\nintervals = [["0", "1"]]\n[basis]\n'
                    'family = { name = "legendre", degree = 6 }\n[metric]\n'
                    'weight = "t**(-0.5)*(1-t)**(-0.25)"\n')
    module = load(spec)
    base = numpy.array([0.0, 0.25, 0.5, 0.75, 1.0])
    c0 = module.project(base, 2 + 3 * base)
    r0 = module.project_and_privatize(base, 2 + 3 * base, epsilon=1.0, rng=3)
    for extra in ([1e-300], [5e-324], [5e-324, 1e-323]):
        t = numpy.unique(numpy.r_[base, extra])
        numpy.testing.assert_allclose(module.project(t, 2 + 3 * t), c0, rtol=0,
                                      atol=1e-12 * numpy.abs(c0).max())
        numpy.testing.assert_allclose(module.project_and_privatize(t, 2 + 3 * t, epsilon=1.0,
                                                                   rng=3), r0, rtol=0,
                                      atol=1e-9 * numpy.abs(r0).max())
