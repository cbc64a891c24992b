"""Exact analysis on boxes (paper Sec. 3.2, "Multivariate functions") against independent
mpmath quadrature at 40 digits (docs/design.md, "Exact analysis")."""
import mpmath
import pytest
import sympy

from gpcompiler.compiler.analysis import analyze
from gpcompiler.errors import SpecError
from gpcompiler.compiler.spec import parse_spec
from gpcompiler.compiler.symbolic import KroneckerMatrix

mp = mpmath.mpf


def box_spec(domain, basis, extra=""):
    text = f'name = "box"\n[domain]\n{domain}\n[basis]\n{basis}\n{extra}\n'
    return parse_spec(text.encode(), "box.toml")


def reference_gram(functions, box, weight=None):
    """G_jk = int over the box of w <f_j, f_k> (components summed), by mpmath Gauss-Legendre
    quadrature at 40 digits; ``functions`` return tuples of mpmath components."""
    m = len(functions)
    out = mpmath.matrix(m, m)
    with mpmath.workdps(40):
        for j in range(m):
            for k in range(j + 1):
                def integrand(*x, j=j, k=k):
                    w = weight(*x) if weight else 1
                    return w * mpmath.fsum(a * b for a, b in zip(functions[j](*x), functions[k](*x)))
                out[j, k] = out[k, j] = mpmath.quad(integrand, *box, method="gauss-legendre")
    return out


def exact_value(value, spec):
    return mp(str(sympy.N(sympy.sympify(value).subs(spec.defaults), 50)))


def check_against(analysis, reference, digits=30):
    """Gram matrix to ``digits`` digits; e = R^(-1) phi orthonormal to 1e-12 under the
    reference inner product."""
    spec, m = analysis.spec, analysis.spec.basis_size
    with mpmath.workdps(40):
        for j in range(m):
            for k in range(m):
                exact = exact_value(analysis.gram[j, k], spec)
                assert abs(exact - reference[j, k]) <= mp(10) ** -digits * (1 + abs(reference[j, k]))
        r = mpmath.matrix(m, m)
        for j in range(m):
            for k in range(m):
                r[j, k] = exact_value(analysis.cholesky[j, k], spec)
        inverse = r ** -1
        gram_e = inverse * reference * inverse.T
        assert max(abs(gram_e[j, k] - (j == k)) for j in range(m) for k in range(m)) < 1e-12


def legendre_atom(index, intervals):
    """Normalized tensor Legendre atom prod_i sqrt((2a_i+1)/(b_i-a_i)) P_(a_i)(u_i)."""
    def atom(*x):
        value = mp(1)
        for a, (lo, hi), xi in zip(index, intervals, x):
            value *= mpmath.sqrt(mp(2 * a + 1) / (hi - lo)) * mpmath.legendre(a, (2 * xi - lo - hi) / (hi - lo))
        return value
    return atom


def check_transform(analysis, phi, intervals, points):
    """The orthonormal basis e = K . atoms equals R^(-1) phi at points (atoms evaluated by
    mpmath's Legendre polynomials, or the user functions)."""
    spec, m = analysis.spec, analysis.spec.basis_size
    with mpmath.workdps(40):
        r = mpmath.matrix(m, m)
        for j in range(m):
            for k in range(m):
                r[j, k] = exact_value(analysis.cholesky[j, k], spec)
        atoms = ([legendre_atom(a, intervals) for a in analysis.atoms.index]
                 if analysis.atoms.kind == "legendre" else [lambda *x, f=f: f(*x)[0] for f in phi])
        for x in points:
            e = r ** -1 * mpmath.matrix([f(*x)[0] for f in phi])
            for j in range(m):
                via_atoms = mpmath.fsum(exact_value(analysis.transform[j, k], spec) * atoms[k](*x)
                                        for k in range(analysis.atoms.size))
                assert abs(via_atoms - e[j]) < 1e-25


def test_expression_basis_2d():
    """The issue's example: any expressions in x, y over [0, W] x [0, 1] with W = 2."""
    spec = box_spec('variables = ["x", "y"]\nintervals = [["0", "W"], ["0", "1"]]\n'
                    'parameters = { W = "2" }',
                    'functions = ["1", "x", "y", "x*y", "exp(-x)*cos(pi*y)"]')
    analysis = analyze(spec)
    assert analysis.gram_method.startswith("exact: symbolic integrals")
    phi = [lambda x, y: (1,), lambda x, y: (x,), lambda x, y: (y,), lambda x, y: (x * y,),
           lambda x, y: (mpmath.exp(-x) * mpmath.cos(mpmath.pi * y),)]
    check_against(analysis, reference_gram(phi, [[0, 2], [0, 1]]))
    check_transform(analysis, phi, [(0, 2), (0, 1)], [(mp("0.3"), mp("0.7")), (mp(2), mp(0))])


def test_weighted_polynomial_2d():
    """A weighted metric on a polynomial space: Legendre atoms, iterated exact integrals."""
    spec = box_spec('variables = ["x", "y"]\nintervals = [["0", "1"], ["-1", "1"]]',
                    'functions = ["1", "x", "y", "x*y", "x**2 - y"]',
                    '[metric]\nweight = "exp(-x)*(1 + y**2)"')
    analysis = analyze(spec)
    assert analysis.atoms.kind == "legendre"
    phi = [lambda x, y: (1,), lambda x, y: (x,), lambda x, y: (y,), lambda x, y: (x * y,),
           lambda x, y: (x * x - y,)]
    check_against(analysis, reference_gram(phi, [[0, 1], [-1, 1]],
                                           lambda x, y: mpmath.exp(-x) * (1 + y * y)))
    check_transform(analysis, phi, [(0, 1), (-1, 1)], [(mp("0.25"), mp("-0.5"))])


def test_vector_valued_2d():
    """Vector-valued basis functions: G_jk = int <phi_j, phi_k> over the box."""
    spec = box_spec('variables = ["x", "y"]\nintervals = [["0", "1"], ["0", "pi"]]',
                    'functions = [["x", "y"], ["1", "x*y"], ["cos(x)", "sin(y)"]]',
                    '[values]\ndimension = 2')
    analysis = analyze(spec)
    phi = [lambda x, y: (x, y), lambda x, y: (1, x * y),
           lambda x, y: (mpmath.cos(x), mpmath.sin(y))]
    check_against(analysis, reference_gram(phi, [[0, 1], [0, mpmath.pi]]))


def test_sobolev_2d():
    """H^1 on a box: <f, g> + sum_i <d_i f, d_i g> (the derivatives as extra components)."""
    spec = box_spec('variables = ["x", "y"]\nintervals = [["0", "1"], ["0", "2"]]',
                    'functions = ["1", "x", "y", "x*y", "x**2*y"]', "[metric]\nsobolev = 1")
    phi = [lambda x, y: (1, 0, 0), lambda x, y: (x, 1, 0), lambda x, y: (y, 0, 1),
           lambda x, y: (x * y, y, x), lambda x, y: (x * x * y, 2 * x * y, x * x)]
    check_against(analyze(spec), reference_gram(phi, [[0, 1], [0, 2]]))


def test_tensor_monomials_3d_are_kronecker_products():
    """Tensor family in 3-D: G = G_x (x) G_y (x) G_z with the unique LDL^T and R as
    Kronecker products of the 1-D factors' (12 functions, factors of sizes 3, 2, 2)."""
    spec = box_spec('variables = ["x", "y", "z"]\nintervals = [["0", "1"], ["-1", "2"], ["0", "3"]]',
                    'family = { name = "monomial", degree = [2, 1, 1] }')
    analysis = analyze(spec)
    assert isinstance(analysis.gram, KroneckerMatrix)
    assert [f.gram.shape for f in analysis.factors] == [(3, 3), (2, 2), (2, 2)]
    phi = [lambda x, y, z, a=a: (x ** a[0] * y ** a[1] * z ** a[2],)
           for a in [(i, j, k) for i in range(3) for j in range(2) for k in range(2)]]
    check_against(analysis, reference_gram(phi, [[0, 1], [-1, 2], [0, 3]]))
    gram = analysis.gram.to_sympy()
    lower = analysis.lower.to_sympy()
    assert lower * sympy.diag(*analysis.pivots) * lower.T == gram
    assert analysis.cholesky.to_sympy() * analysis.cholesky.to_sympy().T == gram
    check_transform(analysis, phi, [(0, 1), (-1, 2), (0, 3)], [(mp("0.5"), mp("1.5"), mp(2))])


def test_total_degree_3d():
    """Monomials of total degree <= 2 in x, y, z: tensor Legendre atoms restricted to total
    degree, the triangular exact change of basis (no generic factorization)."""
    spec = box_spec('variables = ["x", "y", "z"]\nintervals = [["0", "1"], ["0", "2"], ["-1", "1"]]',
                    'family = { name = "monomial", total_degree = 2 }')
    analysis = analyze(spec)
    assert analysis.spec.basis_size == analysis.atoms.size == 10
    assert all(sum(a) <= 2 for a in analysis.atoms.index)
    assert "triangular change of basis" in analysis.gram_method
    exponents = [a for a in analysis.atoms.index]
    phi = [lambda x, y, z, a=a: (x ** a[0] * y ** a[1] * z ** a[2],) for a in exponents]
    check_against(analysis, reference_gram(phi, [[0, 1], [0, 2], [-1, 1]]))
    check_transform(analysis, phi, [(0, 1), (0, 2), (-1, 1)], [(mp("0.1"), mp("1.9"), mp("-0.3"))])


def test_legendre_tensor_and_total_degree_are_diagonal():
    """Tensor Legendre families on a box: G diagonal, prod (b_i - a_i)/(2 k_i + 1)."""
    tensor = analyze(box_spec('variables = ["x", "y"]\nintervals = [["0", "W"], ["0", "1"]]\n'
                              'parameters = { W = "3" }', 'family = { name = "legendre", degree = [3, 2] }'))
    assert tensor.gram[5, 5] == sympy.Symbol("W", positive=True) / 15   # (1, 2): W/3 * 1/5
    assert all(i == j for i, j in tensor.gram.keys())
    total = analyze(box_spec('variables = ["x", "y"]\nintervals = [["0", "2"], ["0", "1"]]',
                             'family = { name = "legendre", total_degree = 3 }'))
    assert total.spec.basis_size == 10 and all(i == j for i, j in total.gram.keys())


@pytest.mark.parametrize("domain, basis, key, expected", [
    ('variables = "x"\nintervals = [["0", "1"]]', 'functions = ["1"]', "domain.variables",
     "list of distinct variable names"),
    ('variables = ["x", "x"]\nintervals = [["0", "1"], ["0", "1"]]', 'functions = ["1"]',
     "domain.variables", "distinct"),
    ('variables = ["x", "y"]\nintervals = [["0", "1"]]', 'functions = ["1"]',
     "domain.intervals", "expected 2 intervals"),
    ('variables = ["x", "y"]\nintervals = [["0", "1"], ["1", "0"]]', 'functions = ["x*y"]',
     "domain.intervals[1]", "lo < hi"),
    ('variables = ["x", "y"]\nintervals = [["0", "1"], ["0", "1"]]',
     'family = { name = "legendre", degree = 3 }', "basis.family.degree", "list of 2 integers"),
    ('variables = ["x", "y"]\nintervals = [["0", "1"], ["0", "1"]]',
     'family = { name = "legendre", degree = [3, 1], total_degree = 2 }', "basis.family",
     "not both"),
    ('variables = ["x", "y"]\nintervals = [["0", "1"], ["0", "oo"]]', 'functions = ["x*y"]',
     "domain.intervals", "finite intervals"),
    ('variables = ["x", "y"]\nintervals = [["0", "1"], ["0", "1"]]\ncurve_interval = ["0", "1"]',
     'functions = ["x*y"]', "domain.curve_interval", "no curve_interval"),
    ('variables = ["x", "y"]\nintervals = [["0", "1"], ["0", "1"]]', 'functions = ["x*z"]',
     "basis.functions[0]", "unknown name 'z'"),
])
def test_box_spec_errors_name_key_file_and_expectation(domain, basis, key, expected):
    with pytest.raises(SpecError) as error:
        box_spec(domain, basis)
    assert str(error.value).startswith("box.toml: ")
    assert any(k == key and expected in message for k, message in error.value.problems), \
        error.value.problems


def test_numerical_gram_on_a_box(monkeypatch):
    """Without a closed form in time, mpmath Gauss-Legendre cubature at 120 digits gives the
    Gram matrix, to 30 digits of an independent 40-digit reference."""
    from gpcompiler.compiler.analysis import gram as stage
    monkeypatch.setattr(stage, "INTEGRATION_SECONDS", 0.01)
    spec = box_spec('variables = ["x", "y"]\nintervals = [["0", "2"], ["0", "1"]]',
                    'functions = ["1", "x*y", "sin(3*x*y)"]')
    result = analyze(spec)
    assert result.numerical and result.gram_method.startswith("numerical")
    phi = [lambda x, y: (1,), lambda x, y: (x * y,), lambda x, y: (mpmath.sin(3 * x * y),)]
    check_against(result, reference_gram(phi, [[0, 2], [0, 1]]))


def test_oscillation_rates_over_a_box_are_bounded_not_guessed():
    """sin(40xy) on [0, 1] x [0, 10] oscillates at up to 400 in x and 40 in y; the rate
    used to be a guessed 10 whenever the derivative involved another variable (third
    adversary review). A derivative with no polynomial bound is a spec error."""
    from types import SimpleNamespace
    from gpcompiler.compiler.analysis.quadrature import _box_frequency_and_degree
    from gpcompiler.errors import SpecError
    x, y = sympy.symbols("x y")
    box = SimpleNamespace(variables=(x, y), intervals=((sympy.S(0), sympy.S(1)),
                                                       (sympy.S(-10), sympy.S(3))),
                          defaults={}, path="box.toml")
    assert _box_frequency_and_degree(sympy.sin(40 * x * y), x, box)[0] == 400.0
    assert _box_frequency_and_degree(sympy.cos(40 * x * y + 3 * x), y, box)[0] == 40.0
    assert _box_frequency_and_degree(sympy.sin(x * y ** 2 - 2 * x), x, box)[0] == 102.0
    with pytest.raises(SpecError, match="basis.functions: no bound on how fast"):
        _box_frequency_and_degree(sympy.sin(sympy.exp(x * y)), x, box)


def test_a_wrong_closed_form_is_caught_by_mpmath():
    """SymPy integrates 1/((x - 1/2)^2 + (y - 1/2)^2 + 1) over the unit square to 0 (the
    true value is 0.864): every closed-form entry is checked against mpmath, and this one
    falls back to checked cubature, which agrees with an independent 40-digit rule. An
    exact closed form that agrees keeps "exact" and says it was checked."""
    spec = box_spec('variables = ["x", "y"]\nintervals = [["0", "1"], ["0", "1"]]',
                    'functions = ["1", "1/((x - 1/2)**2 + (y - 1/2)**2 + 1)"]')
    analysis = analyze(spec)
    assert analysis.gram_method.startswith("numerical") and "G[1, 0] disagreed" in \
        analysis.gram_method
    bump = lambda x, y: (1 / ((x - mp(1) / 2) ** 2 + (y - mp(1) / 2) ** 2 + 1),)  # noqa: E731
    reference = reference_gram([lambda x, y: (1,), bump], [[0, 1], [0, 1]])
    check_against(analysis, reference, digits=25)
    assert abs(reference[0, 1] - mp("0.863988550685462")) < 1e-14
    fine = analyze(box_spec('variables = ["x", "y"]\nintervals = [["0", "1"], ["0", "2"]]',
                            'functions = ["1", "x*y", "exp(-x)"]'))
    assert fine.gram_method.startswith("exact: symbolic integrals, each checked against mpmath")


def test_box_rules_are_verified_where_a_component_peaks(monkeypatch):
    """A peak at (1/2, 3/10) of width 1/100 lies between the sections at the ends and the
    midpoints of y (0, 1/2, 1), where the x-profile is 20x wider: the rules verified there
    alone fail on the section y = 3/10; the sharpest sections, found numerically, are
    verified too, and the chosen rule holds there against mpmath."""
    from gpcompiler.compiler.analysis import quadrature as box
    from gpcompiler.compiler.analysis.core import Atoms
    from gpcompiler.compiler.analysis.quadrature import _rules_hold
    spec = box_spec('variables = ["x", "y"]\nintervals = [["0", "1"], ["0", "1"]]',
                    'functions = ["1", "1/((x - 1/2)**2 + (y - 3/10)**2 + 1/10000)"]')
    x, y = spec.variables
    section = spec.functions[1][0].subs(y, sympy.Rational(3, 10))
    profile = [(sympy.lambdify(x, section, "mpmath"), 1e4)]
    rule = box.box_quadrature(spec, Atoms("expression", 2))
    assert _rules_hold(profile, 0.0, 1.0, rule.frequency[0], rule.min_nodes[0])
    monkeypatch.setattr(box, "_peaked_sections", lambda *args, **kwargs: set())
    blind = box.box_quadrature(spec, Atoms("expression", 2))
    assert not _rules_hold(profile, 0.0, 1.0, blind.frequency[0], blind.min_nodes[0])
