"""Weights singular on the boundary of a box (issue 13: weights work as in 1-D): a separable
weight w = prod_i w_i(x_i) factors exactly; Gram matrices against mpmath 2-D quadrature,
project_grid against mpmath projections, orthonormality under the weight by independent
rules, and one-line refusals of weights that are neither separable nor bounded."""
import mpmath
import numpy
import pytest

from conftest import ROOT, generated
from gpcompiler.compiler.analysis.weights import check_box_weight
from gpcompiler.compiler.build import compile_spec, import_module_file
from gpcompiler.errors import SpecError
from gpcompiler.compiler.explain import explain
from gpcompiler.compiler.spec import load_spec

DPS = 40
# projections are compared at 1e-12 (relative); their references are solved at 30 digits:
# these agree with 40-digit ones to 6e-17 in a third of the time (at 20 the tanh-sinh
# integrals at the singular edges fall short of 1e-12 and the test fails)
PROJECTION_DPS = 30
MIXED = '''name = "box_mixed_weight"
[domain]
variables = ["x", "y"]
intervals = [["-1", "1"], ["0", "1"]]
[basis]
family = { name = "monomial", total_degree = 3 }
[metric]
weight = "2/sqrt(1 - x**2) * (1 - y)**(-1/2)"
'''
MIXED_PHI = [(i, j) for i in range(4) for j in range(4 - i)]   # x^i y^j, the family's order
# one worker runs this file (--dist loadgroup): the spec of ``mixed`` is compiled once
pytestmark = pytest.mark.xdist_group("box_weights")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """Monomials of total degree 3 on [-1, 1] x [0, 1] under 2 (1 - x^2)^(-1/2) (1 - y)^(-1/2):
    not a tensor family, so the Gram is M W M^T with W the product of 1-D weighted Legendre
    Grams; w_y is singular at y = 1 only."""
    directory = tmp_path_factory.mktemp("mixed")
    (directory / "box_mixed_weight.toml").write_text(MIXED)
    compiled = compile_spec(directory / "box_mixed_weight.toml", directory)
    (directory / "box_mixed_weight.py").write_text(compiled.source)
    return compiled, import_module_file(directory / "box_mixed_weight.py", "test_box_mixed")


@pytest.fixture(scope="module")
def chebyshev_box():
    """The analysis of the shipped chebyshev_box spec (its Gram and its explanation)."""
    return compile_spec(ROOT / "specs" / "chebyshev_box.toml", ROOT, emit=False)


def _chebyshev_integral(f):
    """int f(x) dx / sqrt(1 - x^2) over [-1, 1], by x = cos u (a smooth integrand): mpmath
    Gauss-Legendre. Over the box a product integrand g(x) h(y) integrates, by Fubini, to
    the product of two of these (exactly; 2-D quadrature of it took 20x longer)."""
    return mpmath.quad(lambda u: f(mpmath.cos(u)), [0, mpmath.pi], method="gauss-legendre")


def _mixed_integral(f):
    """int int f(x, y) 2 (1 - x^2)^(-1/2) (1 - y)^(-1/2) over [-1, 1] x [0, 1], by x = cos u,
    y = 1 - s^2 (dy (1 - y)^(-1/2) = 2 ds): mpmath Gauss-Legendre in 2-D."""
    return mpmath.quad(lambda u, s: 4 * f(mpmath.cos(u), 1 - s * s), [0, mpmath.pi], [0, 1],
                       method="gauss-legendre")


GRAM_ENTRIES = [((0, 0), (0, 0)), ((5, 3), (3, 5)), ((2, 4), (2, 4)), ((1, 1), (3, 1)),
                ((4, 0), (2, 0))]


def _check_chebyshev_gram(analysis):
    """Entries of G = G_x (x) G_y against mpmath quadrature at 40 digits (in x and in y:
    the integrand is a product), to 1e-30."""
    with mpmath.workdps(DPS):
        for (a, b), (c, d) in GRAM_ENTRIES:
            reference = (_chebyshev_integral(lambda x: _legendre(a, x) * _legendre(c, x))
                         * _chebyshev_integral(lambda y: _legendre(b, y) * _legendre(d, y)))
            value = analysis.gram[6 * a + b, 6 * c + d].evalf(DPS)
            assert abs(mpmath.mpf(str(value)) - reference) < mpmath.mpf(10) ** -30


def test_chebyshev_box_gram_matches_mpmath_to_30_digits(chebyshev_box):
    """G = G_x (x) G_y with each factor under its own w_i, in closed form (Beta-function
    moments), against mpmath."""
    assert chebyshev_box.analysis.gram_method.startswith("exact: Kronecker")
    assert not chebyshev_box.analysis.numerical
    _check_chebyshev_gram(chebyshev_box.analysis)


@pytest.mark.slow   # 26 s: the 1-D tanh-sinh moments are tested by default in test_exact_analysis
def test_chebyshev_box_numerical_gram_matches_mpmath_to_30_digits(monkeypatch):
    """With the closed form and symbolic integration cut short, the box's Gram from tanh-sinh
    moments (flagged numerical) against mpmath."""
    from gpcompiler.compiler.analysis import gram as analysis_module
    monkeypatch.setattr(analysis_module, "INTEGRATION_SECONDS", 0.5)
    monkeypatch.setattr(analysis_module, "_jacobi_form", lambda *args: None)
    numerical = compile_spec(ROOT / "specs" / "chebyshev_box.toml", ROOT, emit=False).analysis
    assert numerical.gram_method.startswith("numerical: Kronecker") and numerical.numerical
    _check_chebyshev_gram(numerical)


def test_total_degree_gram_under_a_mixed_separable_weight_matches_mpmath(mixed):
    analysis = mixed[0].analysis
    assert analysis.gram_method.startswith("exact: separable weight")
    with mpmath.workdps(DPS):
        for j, k in [(0, 0), (1, 2), (3, 9), (5, 7), (9, 9), (4, 6)]:
            (p, q), (r, s) = MIXED_PHI[j], MIXED_PHI[k]
            reference = _mixed_integral(lambda x, y: x ** (p + r) * y ** (q + s))
            assert abs(mpmath.mpf(str(analysis.gram[j, k].evalf(DPS))) - reference) \
                < mpmath.mpf(10) ** -30


def test_orthonormal_under_the_weight_by_independent_rules(mixed):
    """Gauss-Chebyshev in each variable (exact for polynomials under the Chebyshev weight),
    and x = cos u, y = 1 - s^2 with Gauss-Legendre for the mixed weight."""
    module = generated("chebyshev_box")
    n = 40
    x = numpy.cos((2 * numpy.arange(1, n + 1) - 1) * numpy.pi / (2 * n))
    e = module.orthonormal_basis(numpy.stack(numpy.meshgrid(x, x, indexing="ij"), -1))
    gram = numpy.einsum("abj,abk->jk", e, e) * (numpy.pi / n) ** 2
    assert numpy.abs(gram - numpy.eye(module.BASIS_SIZE)).max() < 1e-12
    module = mixed[1]
    nodes, weights = numpy.polynomial.legendre.leggauss(30)
    u, s = numpy.pi / 2 * (nodes + 1), (nodes + 1) / 2
    points = numpy.stack(numpy.meshgrid(numpy.cos(u), 1 - s * s, indexing="ij"), -1)
    e = module.orthonormal_basis(points)
    w = numpy.outer(weights * numpy.pi / 2, weights / 2) * 4
    gram = numpy.einsum("ab,abj,abk->jk", w, e, e)
    assert numpy.abs(gram - numpy.eye(module.BASIS_SIZE)).max() < 1e-12


def _axis_table(grid, kind, functions, weight):
    """X[s, a] = int h_s(x) w(x) f_a(x) dx: h_s the hat function of node s ("linear") or the
    indicator of cell s ("cells"), by mpmath tanh-sinh per piece (singular ends included)."""
    t = [mpmath.mpf(float(v)) for v in grid]
    table = mpmath.matrix(len(t) if kind == "linear" else len(t) - 1, len(functions))
    for i in range(len(t) - 1):
        shares = ([(i, lambda x: 1)] if kind == "cells" else
                  [(i, lambda x: (t[i + 1] - x) / (t[i + 1] - t[i])),
                   (i + 1, lambda x: (x - t[i]) / (t[i + 1] - t[i]))])
        for row, share in shares:
            for a, f in enumerate(functions):
                table[row, a] += mpmath.quad(lambda x: share(x) * weight(x) * f(x),
                                             [t[i], t[i + 1]])
    return table


def _reference_projection(grids, values, kind, axes, pairs, points):
    """The weighted projection onto span{f_a(x) g_b(y) : (a, b) in pairs} of the field given
    by ``values`` on ``grids``, by Fubini from 1-D mpmath integrals (``axes``: per variable
    its 1-D functions, weight factor and interval), solved at PROJECTION_DPS digits,
    evaluated at points."""
    with mpmath.workdps(PROJECTION_DPS):
        tables = [_axis_table(g, kind, f, w) for g, (f, w, _) in zip(grids, axes)]
        grams = [[[mpmath.quad(lambda x: f(x) * g(x) * w(x), [lo, hi]) for g in fs] for f in fs]
                 for fs, w, (lo, hi) in axes]
        m = len(pairs)
        gram, b = mpmath.matrix(m, m), mpmath.matrix(m, 1)
        for j, (a, c) in enumerate(pairs):
            for k, (a2, c2) in enumerate(pairs):
                gram[j, k] = grams[0][a][a2] * grams[1][c][c2]
            b[j] = mpmath.fsum(mpmath.mpf(float(values[s, l])) * tables[0][s, a] * tables[1][l, c]
                               for s in range(values.shape[0]) for l in range(values.shape[1]))
        coefficients = mpmath.lu_solve(gram, b)
        return numpy.array([float(mpmath.fsum(
            coefficients[j] * axes[0][0][a](mpmath.mpf(x)) * axes[1][0][c](mpmath.mpf(y))
            for j, (a, c) in enumerate(pairs))) for x, y in points])


def _legendre(n, x):
    """P_n(x) by the three-term recurrence (mpmath.legendre is hypergeometric, far slower)."""
    previous, current = mpmath.mpf(1), x
    for k in range(1, n):
        previous, current = current, ((2 * k + 1) * x * current - k * previous) / (k + 1)
    return current if n else previous


def _chebyshev_factor(x):
    return 1 / mpmath.sqrt((1 - x) * (1 + x))


CHEBYSHEV_GRIDS = [(numpy.linspace(-1, 1, 5), numpy.array([-1.0, -0.2, 0.3, 1.0])),
                   (numpy.array([-0.9999999, -0.3, 0.5, 0.99]), numpy.array([-0.8, 0.1, 1.0]))]


@pytest.mark.parametrize("kind", ["linear", "cells"])
@pytest.mark.parametrize("grids", CHEBYSHEV_GRIDS)
def test_chebyshev_box_project_grid_matches_mpmath(grids, kind):
    """Grids reaching the singular edges (graded by distance) and grids stopping just short
    of them: the module's projection against the 30-digit mpmath projection, to 1e-12."""
    module = generated("chebyshev_box")
    rng = numpy.random.default_rng(31)
    shape = tuple(g.size - (kind == "cells") for g in grids)
    x, y = numpy.meshgrid(*(g[:n] for g, n in zip(grids, shape)), indexing="ij")
    values = numpy.cos(3 * x) * (1 + y) ** 2 + rng.normal(scale=0.1, size=shape)
    legendre = [lambda v, n=n: _legendre(n, v) for n in range(6)]
    axes = [(legendre, _chebyshev_factor, (-1, 1))] * 2
    points = rng.uniform(-1, 1, size=(6, 2))
    reference = _reference_projection(grids, values, kind, axes,
                                      [(a, b) for a in range(6) for b in range(6)], points)
    c = module.project_grid(grids, values, kind=kind)
    assert numpy.abs(module.evaluate(c, points) - reference).max() \
        < 1e-12 * numpy.abs(reference).max()
    weights = module.projection_weights(grids, kind=kind)
    assert numpy.allclose(numpy.tensordot(values, weights, 2), c, rtol=0, atol=1e-13)


@pytest.mark.parametrize("kind", ["linear", "cells"])
def test_mixed_weight_project_grid_matches_mpmath(mixed, kind):
    """Total degree 3, w_x singular at both ends, w_y at y = 1 only."""
    module = mixed[1]
    grids = (numpy.array([-1.0, -0.5, 0.2, 1.0]), numpy.array([0.0, 0.3, 0.8, 1.0]))
    rng = numpy.random.default_rng(32)
    shape = tuple(g.size - (kind == "cells") for g in grids)
    values = rng.normal(size=shape)
    monomials = [lambda v, n=n: v ** n for n in range(4)]
    axes = [(monomials, lambda x: 2 * _chebyshev_factor(x), (-1, 1)),
            (monomials, lambda y: 1 / mpmath.sqrt(1 - y), (0, 1))]
    points = rng.uniform([-1, 0], [1, 1], size=(6, 2))
    reference = _reference_projection(grids, values, kind, axes, MIXED_PHI, points)
    c = module.project_grid(grids, values, kind=kind)
    assert numpy.abs(module.evaluate(c, points) - reference).max() \
        < 1e-12 * numpy.abs(reference).max()


def test_explain_shows_the_factorization_and_the_graded_rule(chebyshev_box):
    text = explain(chebyshev_box)
    assert ("$w = w_{x}(x) \\, w_{y}(y)$ with $w_{x} = \\frac{1}{\\sqrt{1 - x^{2}}}$, "
            "$w_{y} = \\frac{1}{\\sqrt{1 - y^{2}}}$") in text
    assert "$w_{y} \\sim d^{-1/2}$ at $y = 1$" in text and "grades by distance" in text \
        and "of them (113 here;" in text


def _box_spec(tmp_path, weight, intervals='[["0", "1"], ["0", "1"]]', functions='"x", "y"'):
    path = tmp_path / "w.toml"
    path.write_text(f'name = "w"\n[domain]\nvariables = ["x", "y"]\nintervals = {intervals}\n'
                    f'[basis]\nfunctions = ["1", {functions}]\n[metric]\nweight = "{weight}"\n')
    return load_spec(path)


@pytest.mark.parametrize("weight, message", [
    ("1/(x + y)", r"the weight 1/\(x \+ y\) does not separate .* no finite bound on the "
                  r"box near \(0\.000"),
    ("1/sqrt(1 - x*y)", r"the weight .* does not separate .* no finite bound on the box near "
                        r"\(0\.99"),
    ("tanh(x*y)", r"the weight tanh\(x\*y\) does not separate and contains tanh, which"),
    ("(1 + y)/sqrt(abs(x - 1/3))", r"the factor .* in x is not continuous inside \[0, 1\]"),
    ("(1 + y)/x", r"the weight 1/x is not integrable near x = 0"),
    ("(1 + y)*(1 - log(x))", r"the factor .* in x has no finite limit at x = 0 and does not "
                             r"behave like d\^alpha there"),
])
def test_weights_neither_separable_nor_bounded_are_one_line_spec_errors(tmp_path, weight,
                                                                        message):
    """1/(x + y) is singular at one corner only, 1/sqrt(1 - xy) at another: both were
    accepted by a check at the corners... of which only one is singular; refused now, as is
    a factor singular inside its interval or not integrable at an end."""
    with pytest.raises(SpecError, match=r"^\S*w\.toml: metric\.weight: " + message) as error:
        check_box_weight(_box_spec(tmp_path, weight))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("weight", ["1/sqrt(3 - x*y)", "1/(x**2 - 2*x + 2 + y)",
                                    "exp(-x*y)*(1 + x**2*y)"])
def test_bounded_weights_that_do_not_separate_are_accepted(tmp_path, weight):
    """Interval arithmetic finds a finite bound (after halving where it overestimates)."""
    assert check_box_weight(_box_spec(tmp_path, weight, '[["0", "2"], ["0", "1"]]')) is None


def test_a_singular_weight_needs_a_polynomial_basis(tmp_path):
    """The module contracts one axis at a time only for Legendre atoms: with expressions the
    graded nodes' tensor grid (thousands per axis) would be squared; a one-line refusal."""
    with pytest.raises(SpecError, match=r"metric\.weight: the factor 1/sqrt\(x\) of the weight "
                                        r"is singular at an end of \[0, 1\]; .* needs a "
                                        r"polynomial basis"):
        check_box_weight(_box_spec(tmp_path, "1/sqrt(x)", functions='"exp(x)*y"'))
    assert check_box_weight(_box_spec(tmp_path, "exp(x)*(2 + y)", functions='"exp(x)*y"'))


def test_separable_weights_factor_exactly(tmp_path):
    factors = check_box_weight(_box_spec(tmp_path, "3*exp(-x)*(1 + y**2)/sqrt(y)"))
    assert [str(f) for f in factors] == ["3*exp(-x)", "(y**2 + 1)/sqrt(y)"]


def test_sqrt_of_a_product_separates_where_the_variables_have_one_sign():
    """sqrt(x y) = sqrt(x) sqrt(y) on [0, 1]^2 (the variables are positive there), so the
    weight separates; on [-1, 1]^2 it does not (sqrt(x y) != sqrt(x) sqrt(y) for x, y < 0)."""
    from gpcompiler.compiler.analysis.weights import weight_factors
    from gpcompiler.compiler.spec import parse_spec

    def factors(intervals):
        text = (f'name = "w"\n[domain]\nvariables = ["x", "y"]\nintervals = {intervals}\n'
                '[basis]\nfunctions = ["1", "x"]\n[metric]\nweight = "sqrt(x*y)"\n')
        return weight_factors(parse_spec(text.encode(), "w.toml"))
    found = factors('[["0", "1"], ["0", "1"]]')
    assert found is not None and [str(f) for f in found] == ["sqrt(x)", "sqrt(y)"]
    assert factors('[["-1", "1"], ["-1", "1"]]') is None
