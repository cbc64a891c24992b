"""Generated modules over a box (paper Sec. 3.2, "Multivariate functions"): project_grid
against mpmath projections of the interpolant, the noise, and the privacy boundary."""
import json
import math

import mpmath
import numpy
import pytest
from scipy import stats
from scipy.interpolate import RegularGridInterpolator

from conftest import BOX_SPECS, generated
from gpcompiler.compiler.build import compile_spec, import_module_file, load

ALPHA = 1e-6
# the projections are compared at 1e-12 (relative): a 20-digit reference is 1e8 times finer
# than that (35 digits took twice the time on the expression bases and gave the same floats)
REFERENCE_DPS = 20
POLYNOMIALS = '''name = "box_poly"
[domain]
variables = ["x", "y"]
intervals = [["0", "2"], ["-1", "1"]]
[basis]
functions = ["1", "x", "y", "x*y", "x**2*y"]
'''
EXPRESSIONS = '''name = "box_expressions"
[domain]
variables = ["x", "y"]
intervals = [["0", "2"], ["0", "1"]]
[basis]
functions = ["1", "x*y", "exp(-x)*cos(pi*y)", "y*sin(3*x)"]
'''
VECTOR = '''name = "box_vector"
[domain]
variables = ["x", "y"]
intervals = [["0", "1"], ["0", "1"]]
[basis]
family = { name = "legendre", total_degree = 2 }
[values]
dimension = 2
'''
WEIGHTED = '''name = "box_weighted"
[domain]
variables = ["x", "y"]
intervals = [["0", "1"], ["-1", "1"]]
[basis]
functions = ["1", "x", "y", "x*y", "x**2 - y"]
[metric]
weight = "exp(-x)*(1 + y**2)"
'''
SOBOLEV = '''name = "box_sobolev"
[domain]
variables = ["x", "y"]
intervals = [["0", "1"], ["0", "2"]]
[basis]
functions = ["1", "x", "y", "x*y", "x**2*y"]
[metric]
sobolev = 1
'''
VECTOR_BASIS = '''name = "box_vector_basis"
[domain]
variables = ["x", "y"]
intervals = [["0", "1"], ["0", "2"]]
[basis]
functions = [["1", "0"], ["0", "1"], ["x", "y"], ["-y", "x"], ["cos(pi*x)", "sin(pi*y/2)"]]
[values]
dimension = 2
[metric]
weight = "1 + x*y"
'''
VECTOR_PHI = [lambda x, y: (1, 0), lambda x, y: (0, 1), lambda x, y: (x, y),
              lambda x, y: (-y, x),
              lambda x, y: (mpmath.cos(mpmath.pi * x), mpmath.sin(mpmath.pi * y / 2))]
H1_EXPRESSIONS = EXPRESSIONS.replace("box_expressions", "box_h1_expressions") + """[metric]
sobolev = 1
"""
H1_VECTOR_BASIS = VECTOR_BASIS.replace("box_vector_basis", "box_h1_vector_basis").replace(
    'weight = "1 + x*y"', "sobolev = 1")
FOURIER = '''name = "box_fourier"
[domain]
variables = ["x", "y"]
intervals = [["0", "1"], ["0", "2"]]
[basis]
family = { name = "fourier", order = [2, 1] }
'''

# one worker runs this file (--dist loadgroup): the nine specs of ``compiled`` are compiled once
pytestmark = pytest.mark.xdist_group("box_module")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Modules of specs compiled for the tests: polynomial functions (K != I), any
    expressions (the issue's example), a vector-valued field (d = m n), a weight, the
    Sobolev metric (polynomials and expressions), and vector-valued basis functions under
    a weight and under H^1 (d = m)."""
    directory = tmp_path_factory.mktemp("box")
    out = {}
    for text in (POLYNOMIALS, EXPRESSIONS, VECTOR, WEIGHTED, SOBOLEV, FOURIER, VECTOR_BASIS,
                 H1_EXPRESSIONS, H1_VECTOR_BASIS):
        name = text.split('"')[1]
        (directory / f"{name}.toml").write_text(text)
        # into the session's build cache: `privatize` of the same spec file name and bytes
        # (test_cli_privatizes_a_field_of_a_vector_valued_basis) loads this build
        out[name] = load(directory / f"{name}.toml")
    return out


def mp_vector_projection(phi, box, grids, values, kind, points, weight):
    """The weighted L2 projection onto span(phi), phi vector-valued, of the interpolant of
    vector values (..., n) per component: G_jk = int w <phi_j, phi_k>, b_j = int w <f,
    phi_j>, solved in mpmath at 20 digits (Gauss-Legendre per cell; REFERENCE_DPS); values
    at points."""
    m, n = len(phi), values.shape[-1]

    def inner(u, v):
        return lambda x, y: weight(x, y) * mpmath.fsum(a * b for a, b in zip(u(x, y), v(x, y)))
    with mpmath.workdps(REFERENCE_DPS):
        gx, gy = ([mpmath.mpf(float(v)) for v in g] for g in grids)
        gram = mpmath.matrix(m, m)
        for j in range(m):
            for k in range(j + 1):
                gram[j, k] = gram[k, j] = mpmath.quad(inner(phi[j], phi[k]), *box,
                                                      method="gauss-legendre")
        b = mpmath.matrix(m, 1)
        for i in range(len(gx) - 1):
            for l in range(len(gy) - 1):
                parts = [_cell_field(values[..., r], kind, gx, gy, i, l)[0] for r in range(n)]
                field = lambda x, y, parts=parts: [f(x, y) for f in parts]  # noqa: E731
                for j in range(m):
                    b[j] += mpmath.quad(inner(field, phi[j]), [gx[i], gx[i + 1]],
                                        [gy[l], gy[l + 1]], method="gauss-legendre")
        a = mpmath.lu_solve(gram, b)
        return numpy.array([[float(mpmath.fsum(a[j] * phi[j](mpmath.mpf(x), mpmath.mpf(y))[r]
                                               for j in range(m))) for r in range(n)]
                            for x, y in points])


def mp_projection(phi, box, grids, values, kind, points, weight=None, gradients=None):
    """The projection onto span(phi) of the multilinear interpolant of nodal values
    ("linear") or of the piecewise-constant cell function ("cells"), in L2, in L2 with a
    ``weight`` w(x, y), or in H^1 (``gradients``: per function, its (d/dx, d/dy); the
    field's gradient is the interpolant's, cell by cell), solved in mpmath at 20 digits
    (REFERENCE_DPS; G a = b, every integral by Gauss-Legendre quadrature per cell),
    evaluated at points."""
    m = len(phi)
    w = weight or (lambda x, y: 1)
    with mpmath.workdps(REFERENCE_DPS):
        gx, gy = ([mpmath.mpf(float(v)) for v in g] for g in grids)

        def inner(u, du, v, dv):
            """<u, v> on a region: w u v, plus du . dv under H^1."""
            if gradients is None:
                return lambda x, y: w(x, y) * u(x, y) * v(x, y)
            return lambda x, y: (u(x, y) * v(x, y)
                                 + mpmath.fsum(a * b for a, b in zip(du(x, y), dv(x, y))))
        grad = (lambda j: gradients[j]) if gradients else (lambda j: None)
        gram = mpmath.matrix(m, m)
        for j in range(m):
            for k in range(j + 1):
                gram[j, k] = gram[k, j] = mpmath.quad(inner(phi[j], grad(j), phi[k], grad(k)),
                                                      *box, method="gauss-legendre")
        b = mpmath.matrix(m, 1)
        for i in range(len(gx) - 1):
            for l in range(len(gy) - 1):
                field, slope = _cell_field(values, kind, gx, gy, i, l)
                for j in range(m):
                    b[j] += mpmath.quad(inner(field, slope, phi[j], grad(j)),
                                        [gx[i], gx[i + 1]], [gy[l], gy[l + 1]],
                                        method="gauss-legendre")
        a = mpmath.lu_solve(gram, b)
        return numpy.array([float(mpmath.fsum(a[j] * phi[j](mpmath.mpf(x), mpmath.mpf(y))
                                              for j in range(m))) for x, y in points])


def _cell_field(values, kind, gx, gy, i, l):
    """The field on cell (i, l) and its gradient, as mpmath functions."""
    if kind == "cells":
        value = mpmath.mpf(float(values[i, l]))
        return (lambda x, y: value), (lambda x, y: (0, 0))
    v = [[mpmath.mpf(float(values[i + a, l + c])) for c in (0, 1)] for a in (0, 1)]
    hx, hy = gx[i + 1] - gx[i], gy[l + 1] - gy[l]

    def field(x, y):
        s, r = (x - gx[i]) / hx, (y - gy[l]) / hy
        return (1 - s) * ((1 - r) * v[0][0] + r * v[0][1]) + s * ((1 - r) * v[1][0] + r * v[1][1])

    def slope(x, y):
        s, r = (x - gx[i]) / hx, (y - gy[l]) / hy
        return (((1 - r) * (v[1][0] - v[0][0]) + r * (v[1][1] - v[0][1])) / hx,
                ((1 - s) * (v[0][1] - v[0][0]) + s * (v[1][1] - v[1][0])) / hy)
    return field, slope


def _legendre(n, lo, hi):
    return lambda x: mpmath.legendre(n, (2 * x - lo - hi) / (hi - lo))


def test_box_specs_are_shipped():
    assert {"legendre_box", "surface_total"} <= set(BOX_SPECS)


@pytest.mark.parametrize("kind", ["linear", "cells"])
def test_project_grid_matches_mpmath_projection_total_degree(kind):
    """surface_total: monomials of total degree <= 4 on [-1, 1] x [0, 2], a non-uniform grid
    that does not cover the box (the field is zero outside it)."""
    module = generated("surface_total")
    rng = numpy.random.default_rng(3)
    grids = (numpy.array([-1.0, -0.4, 0.1, 0.9]), numpy.array([0.2, 0.7, 1.1, 2.0]))
    if kind == "linear":
        x, y = numpy.meshgrid(*grids, indexing="ij")
        values = numpy.sin(2 * x) + x * y ** 2
    else:
        values = rng.normal(size=(3, 3))
    phi = [lambda x, y, i=i, j=j: x ** i * y ** j for i in range(5) for j in range(5 - i)]
    points = rng.uniform([-1, 0], [1, 2], size=(6, 2))
    reference = mp_projection(phi, [[-1, 1], [0, 2]], grids, values, kind, points)
    c = module.project_grid(grids, values, kind=kind)
    assert numpy.abs(module.evaluate(c, points) - reference).max() < 1e-12 * (1 + abs(reference).max())


def test_project_grid_matches_mpmath_projection_polynomial_functions(compiled):
    """Polynomial functions (tensor Legendre atoms with a non-identity K)."""
    module = compiled["box_poly"]
    grids = (numpy.array([0.0, 0.5, 2.0]), numpy.array([-1.0, 0.3, 1.0]))
    values = numpy.array([[1.0, -2.0, 0.5], [3.0, 0.0, 1.5], [-1.0, 2.5, 4.0]])
    phi = [lambda x, y: 1, lambda x, y: x, lambda x, y: y, lambda x, y: x * y,
           lambda x, y: x * x * y]
    points = numpy.array([[0.1, -0.9], [1.7, 0.4], [1.0, 0.0]])
    reference = mp_projection(phi, [[0, 2], [-1, 1]], grids, values, "linear", points)
    c = module.project_grid(grids, values)
    assert numpy.abs(module.evaluate(c, points) - reference).max() < 1e-12 * abs(reference).max()


@pytest.mark.parametrize("kind", ["linear", "cells"])
def test_project_grid_matches_mpmath_projection_expressions(compiled, kind):
    """Expression atoms (exp(-x) cos(pi y), y sin(3x)): tensor Gauss rules per sub-cell."""
    module = compiled["box_expressions"]
    grids = (numpy.array([0.0, 0.2, 0.9, 2.0]), numpy.array([0.0, 0.45, 1.0]))
    rng = numpy.random.default_rng(7)
    values = rng.normal(size=(4, 3) if kind == "linear" else (3, 2))
    phi = [lambda x, y: 1, lambda x, y: x * y,
           lambda x, y: mpmath.exp(-x) * mpmath.cos(mpmath.pi * y),
           lambda x, y: y * mpmath.sin(3 * x)]
    points = rng.uniform([0, 0], [2, 1], size=(5, 2))
    reference = mp_projection(phi, [[0, 2], [0, 1]], grids, values, kind, points)
    c = module.project_grid(grids, values, kind=kind)
    assert numpy.abs(module.evaluate(c, points) - reference).max() < 1e-12 * abs(reference).max()
    weights = module.projection_weights(grids, kind=kind)
    assert numpy.allclose(numpy.tensordot(values, weights, 2), c, rtol=0, atol=1e-14)


@pytest.mark.parametrize("kind", ["linear", "cells"])
def test_weighted_projection_matches_mpmath(compiled, kind):
    """Weight exp(-x)(1 + y^2): <f, e_j>_w by Gauss rules per sub-cell (frequency bound)."""
    module = compiled["box_weighted"]
    grids = (numpy.array([0.0, 0.3, 0.8, 1.0]), numpy.array([-1.0, -0.2, 0.5, 1.0]))
    rng = numpy.random.default_rng(21)
    values = rng.normal(size=(4, 4) if kind == "linear" else (3, 3))
    phi = [lambda x, y: 1, lambda x, y: x, lambda x, y: y, lambda x, y: x * y,
           lambda x, y: x * x - y]
    points = rng.uniform([0, -1], [1, 1], size=(5, 2))
    reference = mp_projection(phi, [[0, 1], [-1, 1]], grids, values, kind, points,
                              weight=lambda x, y: mpmath.exp(-x) * (1 + y * y))
    c = module.project_grid(grids, values, kind=kind)
    assert numpy.abs(module.evaluate(c, points) - reference).max() < 1e-12 * abs(reference).max()
    weights = module.projection_weights(grids, kind=kind)
    assert numpy.allclose(numpy.tensordot(values, weights, 2), c, rtol=0, atol=1e-14)


H1_CASES = {
    "box_sobolev": ([[0, 1], [0, 2]], [
        (lambda x, y: 1, lambda x, y: (0, 0)), (lambda x, y: x, lambda x, y: (1, 0)),
        (lambda x, y: y, lambda x, y: (0, 1)), (lambda x, y: x * y, lambda x, y: (y, x)),
        (lambda x, y: x * x * y, lambda x, y: (2 * x * y, x * x))]),
    "box_h1_expressions": ([[0, 2], [0, 1]], [
        (lambda x, y: 1, lambda x, y: (0, 0)), (lambda x, y: x * y, lambda x, y: (y, x)),
        (lambda x, y: mpmath.exp(-x) * mpmath.cos(mpmath.pi * y),
         lambda x, y: (-mpmath.exp(-x) * mpmath.cos(mpmath.pi * y),
                       -mpmath.pi * mpmath.exp(-x) * mpmath.sin(mpmath.pi * y))),
        (lambda x, y: y * mpmath.sin(3 * x),
         lambda x, y: (3 * y * mpmath.cos(3 * x), mpmath.sin(3 * x)))]),
}


@pytest.mark.parametrize("name", sorted(H1_CASES))
def test_sobolev_projection_matches_mpmath_and_refuses_cells(compiled, name):
    """H^1: <f, e_j> + <grad f, grad e_j> of the multilinear interpolant (a polynomial
    space: exact; expressions: Gauss rules for the values, exact differences for the
    derivatives); cells have no weak gradient, so kind="cells" is a one-line error."""
    module = compiled[name]
    box, cases = H1_CASES[name]
    (a, b), (c, d) = box
    grids = (numpy.array([a, 0.4, 0.7, b]), numpy.array([c + 0.1, 0.6, d]))
    rng = numpy.random.default_rng(22)
    values = rng.normal(size=(4, 3))
    points = rng.uniform([a, c], [b, d], size=(5, 2))
    reference = mp_projection([f for f, _ in cases], box, grids, values, "linear", points,
                              gradients=[g for _, g in cases])
    c = module.project_grid(grids, values)
    assert numpy.abs(module.evaluate(c, points) - reference).max() < 1e-12 * abs(reference).max()
    weights = module.projection_weights(grids)
    assert numpy.allclose(numpy.tensordot(values, weights, 2), c, rtol=0, atol=1e-14)
    with pytest.raises(ValueError, match="no weak gradient"):
        module.project_grid(grids, values[:-1, :-1], kind="cells")


def test_vector_values_project_componentwise_as_mpmath(compiled):
    """n = 2 values: each component is projected as a scalar field (d = m n)."""
    module = compiled["box_vector"]
    grids = (numpy.array([0.0, 0.35, 1.0]), numpy.array([0.0, 0.6, 0.8, 1.0]))
    values = numpy.random.default_rng(23).normal(size=(3, 4, 2))
    phi = [lambda x, y, i=i, j=j: x ** i * y ** j for i in range(3) for j in range(3 - i)]
    points = numpy.array([[0.2, 0.9], [0.7, 0.1], [1.0, 0.5]])
    c = module.project_grid(grids, values)
    for r in range(2):
        reference = mp_projection(phi, [[0, 1], [0, 1]], grids, values[..., r], "linear", points)
        assert numpy.abs(module.evaluate(c, points)[..., r] - reference).max() \
            < 1e-12 * abs(reference).max()


@pytest.mark.parametrize("kind", ["linear", "cells"])
def test_vector_basis_projection_matches_mpmath(compiled, kind):
    """Vector-valued basis functions under a weight: c_j = int w <f, e_j> (d = m), against
    the weighted projection solved in mpmath; projection_weights (S_1, S_2, m, n) contract
    to the same coordinates."""
    module = compiled["box_vector_basis"]
    assert module.COEF_SHAPE == (5,) and module.COEF_DIM == 5
    grids = (numpy.array([0.0, 0.35, 1.0]), numpy.array([0.0, 0.6, 1.3, 2.0]))
    shape = (3, 4, 2) if kind == "linear" else (2, 3, 2)
    values = numpy.random.default_rng(31).normal(size=shape)
    points = numpy.array([[0.2, 0.9], [0.7, 1.9], [1.0, 0.0]])
    c = module.project_grid(grids, values, kind=kind)
    reference = mp_vector_projection(VECTOR_PHI, [[0, 1], [0, 2]], grids, values, kind,
                                     points, lambda x, y: 1 + x * y)
    assert numpy.abs(module.evaluate(c, points) - reference).max() < 1e-12 * abs(reference).max()
    weights = module.projection_weights(grids, kind=kind)
    assert weights.shape == shape[:2] + (5, 2)
    assert numpy.allclose(numpy.einsum("xyr,xyjr->j", values, weights), c, rtol=0, atol=1e-13)
    batch = module.project_grid(grids, numpy.stack([values, -2 * values]), kind=kind)
    assert batch.shape == (2, 5) and numpy.allclose(batch[1], -2 * c, rtol=0, atol=1e-13)
    assert module.evaluate(batch, numpy.zeros((4, 3, 2))).shape == (2, 4, 3, 2)


def test_vector_basis_is_orthonormal_under_the_weight(compiled):
    """int w <e_j, e_k> = delta_jk to 1e-12 under an independent 40 x 40 Gauss rule."""
    module = compiled["box_vector_basis"]
    nodes, weights = numpy.polynomial.legendre.leggauss(40)
    x, y = (nodes + 1) / 2, nodes + 1
    points = numpy.stack(numpy.meshgrid(x, y, indexing="ij"), axis=-1)
    w = numpy.outer(weights / 2, weights) * (1 + points[..., 0] * points[..., 1])
    e = module.orthonormal_basis(points)
    assert e.shape == (40, 40, 5, 2)
    assert numpy.abs(numpy.einsum("xy,xyjr,xykr->jk", w, e, e) - numpy.eye(5)).max() < 1e-12


@pytest.mark.parametrize("name", ["box_weighted", "box_sobolev", "box_vector",
                                  "box_vector_basis", "box_h1_expressions",
                                  "box_h1_vector_basis"])
def test_same_field_on_a_refined_grid_gives_the_same_release(compiled, name):
    """Privacy boundary for the weighted, Sobolev and vector-valued modules: a multilinear
    field given on a refined grid (and cells split into sub-cells) is the same field, so
    the release is the same with the same seed."""
    module = compiled[name]
    (a, b), (c, d) = module.domain()
    rng = numpy.random.default_rng(24)
    grids = (numpy.linspace(a, b, 3), numpy.linspace(c, d, 4))
    shape = (3, 4) + ((2,) if module.VALUE_DIM > 1 else ())
    values = rng.normal(size=shape)
    fine = tuple(numpy.sort(numpy.concatenate([g, rng.uniform(g[0], g[-1], 4)])) for g in grids)
    refined = RegularGridInterpolator(grids, values)(
        numpy.stack(numpy.meshgrid(*fine, indexing="ij"), -1))
    released = module.project_and_privatize(grids, values, epsilon=0.5, rng=9)
    assert numpy.allclose(module.project_and_privatize(fine, refined, epsilon=0.5, rng=9),
                          released, rtol=0, atol=1e-12)
    if module.METRIC == "sobolev":
        return
    cells = values[:-1, :-1]
    split = tuple(numpy.concatenate([numpy.linspace(p, q, 3)[:-1] for p, q in zip(g[:-1], g[1:])]
                                    + [g[-1:]]) for g in grids)
    repeated = numpy.repeat(numpy.repeat(cells, 2, axis=0), 2, axis=1)
    assert numpy.allclose(
        module.project_and_privatize(split, repeated, kind="cells", rho=0.3, rng=2),
        module.project_and_privatize(grids, cells, kind="cells", rho=0.3, rng=2),
        rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["legendre_box", "surface_total", "box_expressions"])
def test_orthonormal_basis_integrates_to_identity(name, compiled):
    module = compiled[name] if name in compiled else generated(name)
    (a, b), (c, d) = module.domain()
    nodes, weights = numpy.polynomial.legendre.leggauss(30)
    x, y = (b - a) / 2 * nodes + (a + b) / 2, (d - c) / 2 * nodes + (c + d) / 2
    points = numpy.stack(numpy.meshgrid(x, y, indexing="ij"), axis=-1)
    e = module.orthonormal_basis(points)
    w = numpy.outer(weights * (b - a) / 2, weights * (d - c) / 2)
    gram = numpy.einsum("xy,xyj,xyk->jk", w, e, e)
    assert numpy.abs(gram - numpy.eye(module.BASIS_SIZE)).max() < 1e-12
    phi = module.basis(points)
    assert numpy.abs(numpy.einsum("xy,xyj,xyk->jk", w, phi, phi) - module.gram()).max() \
        < 1e-12 * numpy.abs(module.gram()).max()


def test_legendre_box_basis_is_the_tensor_legendre_family():
    module = generated("legendre_box")
    point = numpy.array([1.3, 0.2])
    with mpmath.workdps(30):
        expected = [float(_legendre(i, 0, 2)(mpmath.mpf(1.3)) * _legendre(j, 0, 1)(mpmath.mpf(0.2)))
                    for i in range(7) for j in range(5)]
    assert numpy.allclose(module.basis(point), expected, rtol=1e-13, atol=1e-14)
    assert module.basis(numpy.zeros((4, 3, 2))).shape == (4, 3, 35)


def test_weights_batches_vector_values_and_validation(compiled):
    module = generated("legendre_box")
    rng = numpy.random.default_rng(4)
    grids = (numpy.linspace(0, 2, 9), numpy.sort(rng.uniform(0, 1, 6)))
    values = rng.normal(size=(3, 9, 6))
    c = module.project_grid(grids, values)
    weights = module.projection_weights(grids)
    assert weights.shape == (9, 6, 35) and c.shape == (3, 35)
    assert numpy.allclose(numpy.tensordot(values, weights, 2), c, rtol=0, atol=1e-13)
    assert numpy.allclose(module.project_grid(grids, values[1]), c[1], rtol=0, atol=1e-15)
    vector = compiled["box_vector"]
    assert vector.COEF_DIM == 12 and vector.COEF_SHAPE == (6, 2)
    field = rng.normal(size=(2, 5, 4, 2))
    grid = (numpy.linspace(0, 1, 5), numpy.linspace(0, 1, 4))
    both = vector.project_grid(grid, field)
    assert both.shape == (2, 6, 2)
    assert numpy.array_equal(both[..., 1], vector.project_grid(grid, field[..., ::-1])[..., 0])
    assert vector.evaluate(both, numpy.zeros((7, 2))).shape == (2, 7, 2)
    for bad, message in [((grids[0][::-1], grids[1]), "strictly increasing"),
                         ((grids[0] + 1, grids[1]), "must lie in"), ((grids[0],), "tuple of 2")]:
        with pytest.raises(ValueError, match=message):
            module.project_grid(bad, values)
    with pytest.raises(ValueError, match="expected"):
        module.project_grid(grids, values[..., :-1])
    with pytest.raises(ValueError, match="kind"):
        module.project_grid(grids, values, kind="nearest")
    with pytest.raises(ValueError, match="shape"):
        module.evaluate(c, numpy.zeros((4, 3)))


def test_projection_is_non_expansive():
    """||P f - P g|| <= ||f - g||_L2 for interpolants (Bessel), the map before the noise."""
    module = generated("legendre_box")
    rng = numpy.random.default_rng(5)
    grids = (numpy.sort(rng.uniform(0, 2, 7)), numpy.sort(rng.uniform(0, 1, 5)))
    nodes, weights = numpy.polynomial.legendre.leggauss(2)   # exact for bilinear^2
    for _ in range(20):
        f, g = rng.normal(size=(2, 7, 5)) * rng.uniform(0.1, 10)
        difference = numpy.linalg.norm(module.project_grid(grids, f) - module.project_grid(grids, g))
        interpolant = RegularGridInterpolator(grids, f - g)
        squared = 0.0
        for i in range(6):
            for j in range(4):
                hx, hy = numpy.diff(grids[0])[i], numpy.diff(grids[1])[j]
                x = grids[0][i] + hx * (nodes + 1) / 2
                y = grids[1][j] + hy * (nodes + 1) / 2
                points = numpy.stack(numpy.meshgrid(x, y, indexing="ij"), -1)
                squared += hx * hy / 4 * numpy.einsum("a,b,ab->", weights, weights,
                                                      interpolant(points) ** 2)
        assert difference <= math.sqrt(squared) * (1 + 1e-12)


def test_same_field_on_different_grids_gives_the_same_release():
    """Privacy boundary: the release depends on the field only, not on its grid. A
    piecewise-bilinear field on a refined grid, and cells split into equal sub-cells (and
    padded with empty cells), give the same release with the same seed."""
    module = generated("legendre_box")
    rng = numpy.random.default_rng(6)
    grids = (numpy.array([0.0, 0.3, 1.1, 2.0]), numpy.array([0.1, 0.5, 0.9]))
    values = rng.normal(size=(4, 3))
    fine = tuple(numpy.sort(numpy.concatenate([g, rng.uniform(g[0], g[-1], 5)])) for g in grids)
    refined = RegularGridInterpolator(grids, values)(
        numpy.stack(numpy.meshgrid(*fine, indexing="ij"), -1))
    first = module.project_and_privatize(grids, values, epsilon=0.5, rng=9)
    assert numpy.allclose(module.project_and_privatize(fine, refined, epsilon=0.5, rng=9),
                          first, rtol=0, atol=1e-12)
    cells = rng.normal(size=(3, 2))
    split = tuple(numpy.concatenate([numpy.linspace(a, b, 4)[:-1] for a, b in zip(g[:-1], g[1:])]
                                    + [g[-1:]]) for g in grids)
    repeated = numpy.repeat(numpy.repeat(cells, 3, axis=0), 3, axis=1)
    padded = (split[0], numpy.concatenate([[0.0], split[1]]))
    repeated_padded = numpy.concatenate([numpy.zeros((9, 1)), repeated], axis=1)
    released = module.project_and_privatize(grids, cells, kind="cells", rho=0.3, rng=2)
    for grid, field in [(split, repeated), (padded, repeated_padded)]:
        assert numpy.allclose(module.project_and_privatize(grid, field, kind="cells", rho=0.3,
                                                           rng=2), released, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["legendre_box", "box_vector", "box_vector_basis"])
def test_gp_radius_is_gamma_d_and_direction_uniform(name, compiled):
    module = compiled[name] if name in compiled else generated(name)
    d, epsilon, n = module.COEF_DIM, 0.7, 20000
    z = module.privatize(numpy.zeros((n,) + module.COEF_SHAPE), epsilon=epsilon,
                         rng=numpy.random.default_rng(11)).reshape(n, d)
    radius = numpy.linalg.norm(z, axis=1) * epsilon
    assert stats.kstest(radius, "gamma", args=(d,)).pvalue > ALPHA
    assert stats.kstest(radius, "gamma", args=(d + 0.5,)).pvalue < ALPHA  # the test has power
    direction = z / numpy.linalg.norm(z, axis=1, keepdims=True)
    for axis in numpy.random.default_rng(13).normal(size=(3, d)):
        projection = (direction @ (axis / numpy.linalg.norm(axis)) + 1) / 2
        assert stats.kstest(projection, "beta", args=((d - 1) / 2, (d - 1) / 2)).pvalue > ALPHA / 3
    assert module.expected_error(epsilon=epsilon) == d / epsilon


def test_cgp_noise_is_gaussian():
    module = generated("surface_total")
    d, rho, n = module.COEF_DIM, 0.3, 20000
    z = module.privatize(numpy.zeros((n, d)), rho=rho, rng=numpy.random.default_rng(14))
    assert stats.kstest((z ** 2).sum(axis=1) * 2 * rho, "chi2", args=(d,)).pvalue > ALPHA
    assert stats.kstest((z ** 2).sum(axis=1) * 2 * rho, "chi2", args=(d + 1,)).pvalue < ALPHA


def test_to_user_inverts_from_user_on_a_tensor_product():
    module = generated("legendre_box")
    a = numpy.random.default_rng(8).normal(size=(2, 35))
    assert numpy.allclose(module.to_user(module.from_user(a)), a, rtol=0, atol=1e-13)
    r = module._cholesky(module.PARAMETERS)
    assert numpy.allclose(r @ r.T, module.gram(), rtol=0, atol=1e-15)


def _gpcompiler(capsys, *args):
    """``gpcompiler ARGS`` in-process: (status, out, err)."""
    from gpcompiler import cli
    try:
        status = cli.main([str(a) for a in args])
    except SystemExit as exit_:
        status = exit_.code
    return (status, *capsys.readouterr())


def test_cli_privatizes_gridded_data_in_every_format(tmp_path, capsys, monkeypatch):
    """.npy, .npz and long-form CSV of the same nodal field give the same release (same
    seed); cell values from .npy; errors are one line naming the file or flag."""
    from conftest import ROOT
    monkeypatch.chdir(ROOT)
    x, y = numpy.linspace(0, 2, 5), numpy.linspace(0, 1, 4)
    values = numpy.add.outer(numpy.sin(x), y ** 2)
    numpy.save(tmp_path / "f.npy", values)
    numpy.savez(tmp_path / "f.npz", values=values, x=x, y=y)
    rows = [f"{float(a)!r},{float(b)!r},{float(values[i, j])!r}" for i, a in enumerate(x) for j, b in enumerate(y)]
    (tmp_path / "f.csv").write_text("x,y,value\n" + "\n".join(rows[::-1]) + "\n")
    outputs = []
    for name in ("f.npy", "f.npz", "f.csv"):
        status, out, err = _gpcompiler(capsys, "privatize", "specs/legendre_box.toml",
                                       tmp_path / name, "--epsilon", 5, "--seed", 3,
                                       "--grid", 16, "-o", tmp_path / f"{name}.json")
        assert status == 0, err
        outputs.append(json.loads((tmp_path / f"{name}.json").read_text()))
    assert outputs[0]["fields"] == outputs[1]["fields"] == outputs[2]["fields"]
    release = outputs[0]["fields"][0]
    assert len(release["coefficients"]) == 35 and numpy.shape(release["values"]) == (4, 4)
    module = generated("legendre_box")
    expected = module.project_and_privatize((x, y), values, epsilon=5,
                                            rng=numpy.random.default_rng(3))
    assert numpy.allclose(release["coefficients"], expected, rtol=1e-9)
    numpy.save(tmp_path / "cells.npy", numpy.ones((2, 4, 3)))
    status, out, err = _gpcompiler(capsys, "privatize", "specs/legendre_box.toml",
                                   tmp_path / "cells.npy", "--kind", "cells", "--rho", 1,
                                   "--grid", 4, "--compare", "--plot", tmp_path / "cells.png")
    assert status == 0 and out.count("\n0,") == 4 and out.count("\n1,") == 4
    assert "not private: 0: RMS error" in err
    assert (tmp_path / "cells.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / "gap.csv").write_text("x,y,value\n" + "\n".join(rows[1:]) + "\n")
    (tmp_path / "twice.csv").write_text("x,y,value\n" + "\n".join(rows + rows[:1]) + "\n")
    numpy.savez(tmp_path / "x_only.npz", values=numpy.ones((3, 3)), x=numpy.linspace(0, 2, 3))
    for args, message in [(("gap.csv",), "is missing"),
                          (("twice.csv",), "is given twice"),
                          (("x_only.npz",), "give a grid for every variable"),
                          (("f.csv", "--kind", "cells"), "--kind linear"),
                          (("f.npy", "--method", "seg"), "--method seg is for curves")]:
        status, out, err = _gpcompiler(capsys, "privatize", "specs/legendre_box.toml",
                                       tmp_path / args[0], *args[1:], "--epsilon", 1)
        assert status == 2 and message in err and err.count("\n") == 1, err


def test_cli_privatizes_a_field_of_a_vector_valued_basis(tmp_path, capsys, compiled):
    """privatize with a vector-valued basis over a box: d = m coefficients, n = 2 values per
    grid point in the release, the module's own release with the same seed, and a figure
    (length of the values with arrows)."""
    (tmp_path / "box_vector_basis.toml").write_text(VECTOR_BASIS)   # the build of ``compiled``
    grids = (numpy.linspace(0, 1, 4), numpy.linspace(0, 2, 5))
    values = numpy.random.default_rng(32).normal(size=(4, 5, 2))
    numpy.savez(tmp_path / "f.npz", values=values, x=grids[0], y=grids[1])
    status, out, err = _gpcompiler(capsys, "privatize", tmp_path / "box_vector_basis.toml",
                                   tmp_path / "f.npz",
                                   "--epsilon", 2, "--seed", 5, "--grid", 9, "--compare",
                                   "--plot", tmp_path / "vb.png", "-o", tmp_path / "vb.json")
    assert status == 0, err
    release = json.loads((tmp_path / "vb.json").read_text())["fields"][0]
    module = compiled["box_vector_basis"]
    expected = module.privatize(module.project_grid(grids, values), epsilon=2,
                                rng=numpy.random.default_rng(5))
    assert numpy.allclose(release["coefficients"], expected, rtol=1e-9)
    assert numpy.shape(release["values"]) == (3, 3, 2)
    assert (tmp_path / "vb.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_gridded_input_edge_cases(tmp_path, capsys, monkeypatch):
    """How the input was read is said (a batch is B fields, each with the whole budget); a
    header-only long-form CSV, an empty .npy, no fields, or an output under /proc are
    one-line errors before any noise."""
    from conftest import ROOT
    monkeypatch.chdir(ROOT)
    numpy.save(tmp_path / "batch.npy", numpy.ones((3, 4, 2)))
    status, out, err = _gpcompiler(capsys, "privatize", "specs/legendre_box.toml",
                                   tmp_path / "batch.npy", "--epsilon", 1, "-o", tmp_path / "b.json")
    assert status == 0 and "3 fields of 4 x 2 values (linear), each privatized with the whole " \
        "budget (if it is one field of 2-vectors, its spec needs [values] dimension)" in out
    for header in ("x,y,value\n", "field,x,y,value\n"):   # issue 34, item 1
        (tmp_path / "header.csv").write_text(header)
        status, out, err = _gpcompiler(capsys, "privatize", "specs/legendre_box.toml",
                                       tmp_path / "header.csv", "--epsilon", 1, "--seed", 4,
                                       "-o", tmp_path / "zero.json")
        assert status == 2 and "no data rows" in err and err.count("\n") == 1, err
        assert not (tmp_path / "zero.json").exists()
    (tmp_path / "empty.npy").write_bytes(b"")
    numpy.save(tmp_path / "none.npy", numpy.ones((0, 4, 2)))
    numpy.save(tmp_path / "flat.npy", numpy.ones(31))
    for name, extra, message in [("empty.npy", (), "empty, or not a numeric NumPy"),
                                 ("none.npy", (), "no fields to privatize"),
                                 ("flat.npy", (), "expected (S_1, S_2) or a batch"),
                                 ("batch.npy", ("-o", "/proc/nope/o.json"), "cannot write")]:
        status, out, err = _gpcompiler(capsys, "privatize", "specs/legendre_box.toml",
                                       tmp_path / name, "--epsilon", 1, *extra)
        assert status == 2 and message in err and err.count("\n") == 1, err


def test_explain_shows_the_box_derivation(capsys, monkeypatch):
    from conftest import ROOT
    monkeypatch.chdir(ROOT)
    status, out, err = _gpcompiler(capsys, "explain", "specs/legendre_box.toml")
    assert status == 0
    assert "Box $I = [0, W] \\times [0, 1]$" in out and "G = G_{x} \\otimes G_{y}" in out
    assert "$$ G_{y} = \\left[\\begin{matrix}1 & 0" in out and "d = 35" in out


def test_three_variables_total_degree_recovers_a_trilinear_field(tmp_path):
    """3-D, monomials of total degree <= 3: a trilinear field's interpolant is the field
    and lies in the space, so project_grid then to_user recovers its monomial coefficients."""
    import itertools
    (tmp_path / "t3.toml").write_text('name = "t3"\n[domain]\nvariables = ["x", "y", "z"]\n'
                                      'intervals = [["0", "1"], ["-1", "1"], ["0", "2"]]\n'
                                      '[basis]\nfamily = { name = "monomial", total_degree = 3 }\n')
    (tmp_path / "t3.py").write_text(compile_spec(tmp_path / "t3.toml", tmp_path).source)
    module = import_module_file(tmp_path / "t3.py", "test_box_t3")
    grids = [numpy.linspace(0, 1, 4), numpy.array([-1.0, -0.2, 0.5, 1.0]), numpy.linspace(0, 2, 3)]
    x, y, z = numpy.meshgrid(*grids, indexing="ij")
    a = module.to_user(module.project_grid(grids, 1 + x * y * z - 2 * x + y * z))
    exponents = [e for e in itertools.product(range(4), repeat=3) if sum(e) <= 3]
    expected = numpy.zeros(20)
    for e, value in {(0, 0, 0): 1, (1, 1, 1): 1, (1, 0, 0): -2, (0, 1, 1): 1}.items():
        expected[exponents.index(e)] = value
    assert numpy.abs(a - expected).max() < 1e-12


def test_tensor_fourier_family_is_orthonormal_and_its_release_grid_free(compiled):
    """A tensor family other than Legendre (Fourier, order [2, 1]: 5 x 3 functions) is
    emitted with the Kronecker factors of its Gram matrix: orthonormal under an
    independent 80 x 80 Gauss-Legendre rule (numerical, to 1e-12), its projection of a
    smooth field converging to the exact one, and the same projection (the same release)
    for a field given on a refined grid."""
    module = compiled["box_fourier"]
    nodes, weights = numpy.polynomial.legendre.leggauss(80)
    points = numpy.stack(numpy.meshgrid((nodes + 1) / 2, nodes + 1, indexing="ij"), -1)
    w = numpy.outer(weights / 2, weights)
    e = module.orthonormal_basis(points)
    assert e.shape[-1] == 15
    assert numpy.abs(numpy.einsum("ijm,ijn,ij->mn", e, e, w) - numpy.eye(15)).max() < 1e-12
    f = lambda x, y: numpy.cos(2 * numpy.pi * x) * numpy.sin(numpy.pi * y) + x * y  # noqa
    exact = numpy.einsum("ijm,ij,ij->m", e, f(points[..., 0], points[..., 1]), w)
    x, y = numpy.linspace(0, 1, 301), numpy.linspace(0, 2, 401)
    c = module.project_grid((x, y), f(*numpy.meshgrid(x, y, indexing="ij")))
    assert numpy.abs(c - exact).max() < 1e-4          # the interpolant's error, h^2
    coarse = (numpy.linspace(0, 1, 3), numpy.linspace(0, 2, 3))
    fine = (numpy.linspace(0, 1, 9), numpy.linspace(0, 2, 9))
    v = numpy.random.default_rng(0).normal(size=(3, 3))
    refined = RegularGridInterpolator(coarse, v)(numpy.stack(numpy.meshgrid(*fine,
                                                                           indexing="ij"), -1))
    assert numpy.allclose(module.project_and_privatize(coarse, v, epsilon=1.0, rng=7),
                          module.project_and_privatize(fine, refined, epsilon=1.0, rng=7),
                          rtol=0, atol=1e-12)


def test_box_rules_are_verified_against_mpmath_near_a_pole(tmp_path):
    """A pole at distance 1/50 from the box is invisible to the symbolic frequency bound
    (1 per unit length); the rules verified against mpmath axis by axis raise the frequency,
    and the constant field, which lies in the space, is projected onto itself to 1e-12
    (the symbolic bound alone leaves an error of about 2e-3)."""
    (tmp_path / "pole.toml").write_text(
        'name = "box_pole"\n[domain]\nvariables = ["x", "y"]\n'
        'intervals = [["0", "1"], ["0", "1"]]\n[basis]\n'
        'functions = ["1", "y", "1/(x + y/10 + 1/50)"]\n')
    (tmp_path / "pole.py").write_text(compile_spec(tmp_path / "pole.toml", tmp_path).source)
    module = import_module_file(tmp_path / "pole.py", "test_box_pole")
    assert module._FREQUENCY[0] > 100
    grids = (numpy.linspace(0, 1, 3), numpy.linspace(0, 1, 4))
    c = module.project_grid(grids, numpy.ones((3, 4)))
    points = numpy.random.default_rng(33).uniform(0, 1, (50, 2))
    assert numpy.abs(module.evaluate(c, points) - 1).max() < 1e-12
