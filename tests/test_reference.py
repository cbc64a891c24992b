"""Generated numbers against independent mpmath references: at >= 50 digits where exact
values are compared (to 1e-40), at 20 where float results are (FLOAT_DPS)."""
import mpmath
import numpy
import pytest
import sympy

from conftest import MECHANISM_SPECS, generated, spec
from gpcompiler.compiler.analysis import analyze

DPS = 50
# float results are compared at >= 1e-13 (relative): a 20-digit reference is 1e7 times finer
# (at 50 digits the quadratures of these references took about twice as long)
FLOAT_DPS = 20
# the sinc integrals (quadosc on the real line) at 35 digits: still exact to 1e-30 (they
# vanish or equal 1 to every digit there), in 60% of the time taken at 50
SINC_DPS = 20


def _mp_functions(s, dps=DPS):
    """The spec's basis functions as mpmath callables (vector-valued: lists)."""
    subs = s.defaults
    return [[sympy.lambdify(s.variable, c.subs(subs), "mpmath") for c in f] for f in s.functions]


def _mp_interval(s):
    return [mpmath.mpf(str(sympy.N(e.subs(s.defaults), 300))) if e.is_finite else
            (mpmath.inf if e > 0 else -mpmath.inf) for e in s.interval]


def _mp_gram(s, pairs):
    """mpmath quadratures of G_jk = int <phi_j, phi_k>: one per distinct integrand (SymPy
    writes t^j t^k as t^(j + k): the monomials' entries with one j + k share it)."""
    functions = [[c.subs(s.defaults) for c in f] for f in s.functions]
    integrals = {}
    with mpmath.workdps(DPS):
        a, b = _mp_interval(s)
        for j, k in pairs:
            integrand = sympy.Add(*(fj * fk for fj, fk in zip(functions[j], functions[k])))
            if integrand not in integrals:
                integrals[integrand] = mpmath.quad(
                    sympy.lambdify(s.variable, integrand, "mpmath"), [a, b])
        return {(j, k): integrals[sympy.Add(*(fj * fk for fj, fk in zip(functions[j],
                                                                          functions[k])))]
                for j, k in pairs}


FINITE = [n for n in MECHANISM_SPECS if n != "sinc_ecg"]


@pytest.mark.parametrize("name", FINITE)
def test_gram_matches_mpmath_quadrature(name):
    s = spec(name)
    m = s.basis_size
    pairs = [(j, k) for j in range(m) for k in range(j + 1) if (j + k) % max(1, m // 8) == 0]
    reference = _mp_gram(s, pairs)
    exact = analyze(s).gram
    floats = generated(name).gram()
    for (j, k), value in reference.items():
        with mpmath.workdps(DPS):
            exact_value = mpmath.mpf(str(sympy.N(exact[j, k].subs(s.defaults), DPS + 10)))
            assert abs(exact_value - value) <= mpmath.mpf(10) ** (-40) * (1 + abs(value))
        assert floats[j, k] == floats[k, j]
        scale = float(sympy.sqrt(abs(exact[j, j] * exact[k, k]).subs(s.defaults)))
        assert abs(floats[j, k] - float(value)) <= 4e-16 * abs(float(value)) + 1e-40 * scale


@pytest.mark.parametrize("a, b", [(1, 1), (3, 7)])
def test_sinc_basis_is_orthonormal_on_the_real_line(a, b):
    """Paper Fact B.9, the closed form the sinc spec compiles to G = I."""
    with mpmath.workdps(SINC_DPS):
        f = lambda x: mpmath.sinc(mpmath.pi * (x - a)) * mpmath.sinc(mpmath.pi * (x - b))  # noqa: E731
        value = mpmath.quadosc(f, [-mpmath.inf, a], period=2) + mpmath.quadosc(f, [a, mpmath.inf], period=2)
    assert abs(value - (1 if a == b else 0)) < 1e-18
    assert numpy.array_equal(generated("sinc_ecg").gram()[[0, a - 1], [0, b - 1]][1],
                             1.0 if a == b else 0.0)


@pytest.mark.parametrize("name", FINITE)
def test_orthonormal_basis_integrates_to_identity(name):
    module = generated(name)
    lo, hi = (float(sympy.N(e.subs(spec(name).defaults))) for e in spec(name).interval)
    nodes, weights = numpy.polynomial.legendre.leggauss(120)
    t = (hi - lo) / 2 * nodes + (hi + lo) / 2
    e = module.orthonormal_basis(t)
    w = weights * (hi - lo) / 2
    if module.VECTOR_BASIS:
        gram = numpy.einsum("t,tjr,tkr->jk", w, e, e)
    else:
        gram = numpy.einsum("t,tj,tk->jk", w, e, e)
    assert numpy.abs(gram - numpy.eye(module.BASIS_SIZE)).max() < 1e-12


def test_degree_32_monomials_are_this_ill_conditioned():
    """The user basis is hopeless in float64, which is why the module never uses it."""
    kappa = analyze(spec("monomial32")).condition_number
    with mpmath.workdps(400):
        g = mpmath.matrix(33, 33)
        for j in range(33):
            for k in range(33):
                g[j, k] = mpmath.mpf(100) ** (j + k + 1) / (j + k + 1)
        eig = mpmath.eigsy(g, eigvals_only=True)
        reference = max(eig) / min(eig)
    assert abs(kappa / float(reference) - 1) < 1e-10
    assert generated("monomial32").CONDITION_NUMBER == float(f"{float(kappa):.6e}") > 7e131


def _curve(lo, hi, n, rng):
    t = numpy.sort(numpy.concatenate([[lo, hi], rng.uniform(lo, hi, n - 2)]))
    return t, rng.normal(size=n)


def _reference_projection(s, t, y, dps, gram_entry=None, moment=None):
    """f = sum a_j phi_j with G a = b solved in mpmath, b_j = int q phi_j per linear piece."""
    functions = _mp_functions(s, dps)
    m = len(functions)
    with mpmath.workdps(dps):
        tm = [mpmath.mpf(float(v)) for v in t]
        ym = [[mpmath.mpf(float(v)) for v in numpy.atleast_1d(row)] for row in y]
        n = len(ym[0])

        def q(i, x, r):
            lam = (x - tm[i]) / (tm[i + 1] - tm[i])
            return ym[i][r] * (1 - lam) + ym[i + 1][r] * lam

        a, b = _mp_interval(s)
        g = mpmath.matrix(m, m)
        for j in range(m):
            for k in range(m):
                g[j, k] = gram_entry(j, k) if gram_entry else mpmath.quad(
                    lambda x: mpmath.fsum(fj(x) * fk(x) for fj, fk in zip(functions[j], functions[k])), [a, b])
        vector_basis = len(functions[0]) > 1
        columns = 1 if vector_basis else n
        coefficients = []
        for r in range(columns):
            rhs = mpmath.matrix(m, 1)
            for j in range(m):
                total = 0
                for i in range(len(tm) - 1):
                    if moment:
                        total += moment(j, tm[i], tm[i + 1], ym[i][r], ym[i + 1][r])
                    elif vector_basis:
                        total += mpmath.quad(lambda x: mpmath.fsum(
                            q(i, x, rr) * functions[j][rr](x) for rr in range(n)), [tm[i], tm[i + 1]])
                    else:
                        total += mpmath.quad(lambda x: q(i, x, r) * functions[j][0](x), [tm[i], tm[i + 1]])
                rhs[j] = total
            coefficients.append(mpmath.lu_solve(g, rhs))

        @mpmath.workdps(dps)
        def f(x):
            x = mpmath.mpf(float(x))
            if vector_basis:
                return [float(mpmath.fsum(coefficients[0][j] * functions[j][rr](x) for j in range(m)))
                        for rr in range(n)]
            return [float(mpmath.fsum(c[j] * functions[j][0](x) for j in range(m))) for c in coefficients]
    return f


@pytest.mark.parametrize("name", ["linear", "legendre10", "fourier8", "ellipse", "circle_shift",
                                  "two_circles", "trajectory_linear"])
def test_projection_matches_mpmath_least_squares(name):
    s, module = spec(name), generated(name)
    lo, hi = (float(sympy.N(e.subs(s.defaults))) for e in s.interval)
    rng = numpy.random.default_rng(7)
    t, _ = _curve(lo, hi, 9, rng)
    y = rng.normal(size=(9, s.value_dim)) if s.value_dim > 1 else rng.normal(size=9)
    f = _reference_projection(s, t, y, FLOAT_DPS)
    points = numpy.linspace(lo, hi, 13)
    got = module.evaluate(module.project(t, y), points).reshape(13, -1)
    want = numpy.array([f(x) for x in points])
    assert numpy.abs(got - want).max() < 1e-12 * max(1.0, numpy.abs(want).max())


def test_projection_with_a_parameter_override_matches_mpmath():
    s, module = spec("linear"), generated("linear")
    s3 = s.__class__(**{**s.__dict__, "parameters": ((s.parameters[0][0], sympy.Integer(3)),)})
    t = numpy.array([0.0, 0.7, 2.0, 3.0])
    y = numpy.array([1.0, -2.0, 0.5, 4.0])
    f = _reference_projection(s3, t, y, FLOAT_DPS)
    points = numpy.linspace(0, 3, 7)
    got = module.evaluate(module.project(t, y, T=3.0), points, T=3.0)
    assert numpy.allclose(got, [f(x)[0] for x in points], rtol=0, atol=1e-13)


def test_degree_32_projection_matches_250_digit_least_squares():
    s, module = spec("monomial32"), generated("monomial32")
    rng = numpy.random.default_rng(3)
    t, y = _curve(0.0, 100.0, 40, rng)

    def gram_entry(j, k):
        return mpmath.mpf(100) ** (j + k + 1) / (j + k + 1)

    def moment(j, t0, t1, y0, y1):
        slope = (y1 - y0) / (t1 - t0)
        intercept = y0 - slope * t0
        return (intercept * (t1 ** (j + 1) - t0 ** (j + 1)) / (j + 1)
                + slope * (t1 ** (j + 2) - t0 ** (j + 2)) / (j + 2))

    f = _reference_projection(s, t, y, 250, gram_entry, moment)
    points = numpy.linspace(0, 100, 17)
    got = module.evaluate(module.project(t, y), points)
    want = numpy.array([f(x)[0] for x in points])
    assert numpy.abs(got - want).max() < 1e-12 * numpy.abs(want).max()


def test_sinc_projection_matches_mpmath():
    module = generated("sinc_ecg")
    t = numpy.array([0.0, 3.3, 10.0, 19.5, 20.2, 33.0, 40.0])
    y = numpy.array([0.5, -1.0, 2.0, 1.5, -0.5, 0.25, 1.0])
    c = module.project(t, y)
    with mpmath.workdps(FLOAT_DPS):
        for k in (1, 2, 20, 40, 41, 800):
            total = 0
            for i in range(len(t) - 1):
                t0, t1 = mpmath.mpf(t[i]), mpmath.mpf(t[i + 1])

                def q(x, i=i, t0=t0, t1=t1):
                    return y[i] + (y[i + 1] - y[i]) * (x - t0) / (t1 - t0)
                points = [t0] + [mpmath.mpf(v) for v in range(int(t[i]) + 1, int(t[i + 1]) + 1)
                                 if t[i] < v < t[i + 1]] + [t1]
                total += mpmath.quad(lambda x: q(x) * mpmath.sinc(mpmath.pi * (x - k)), points)
            assert abs(c[k - 1] - float(total)) < 1e-13 * max(1.0, abs(float(total)))


def test_hermite_family_is_orthonormal_and_projects(tmp_path):
    from gpcompiler import load
    path = tmp_path / "hermite6.toml"
    path.write_text('name = "hermite6"\n[domain]\nintervals = [["-oo", "oo"]]\n'
                    'curve_interval = ["-8", "8"]\n'
                    '[basis]\nfamily = { name = "hermite", degree = 6 }\n')
    module = load(path, cache=tmp_path / "cache")
    nodes, weights = numpy.polynomial.legendre.leggauss(400)
    t, w = nodes * 30, weights * 30
    e = module.orthonormal_basis(t)
    assert numpy.abs(numpy.einsum("t,tj,tk->jk", w, e, e) - numpy.eye(7)).max() < 1e-12
    samples = numpy.linspace(-8, 8, 801)
    curve = numpy.exp(-samples ** 2 / 2)
    c = module.project(samples, curve)
    assert abs(c[0] - numpy.pi ** 0.25) < 1e-4 and numpy.abs(c[1:]).max() < 1e-4


@pytest.mark.parametrize("name", ["linear", "legendre10", "fourier8", "ellipse", "circle_shift",
                                  "trajectory_linear", "two_circles"])
def test_user_coefficients_round_trip(name):
    module = generated(name)
    rng = numpy.random.default_rng(5)
    c = rng.normal(size=(4,) + module.COEF_SHAPE)
    a = module.to_user(c)
    assert numpy.allclose(module.from_user(a), c, atol=1e-12)
    lo, hi = module._domain(module.PARAMETERS)
    t = numpy.linspace(lo, hi, 11)
    phi = module.basis(t)
    if module.VECTOR_BASIS:
        via_user = numpy.einsum("bm,tmr->btr", a, phi)
    elif module.VALUE_DIM > 1:
        via_user = numpy.einsum("bmr,tm->btr", a, phi)
    else:
        via_user = a @ phi.T
    assert numpy.allclose(module.evaluate(c, t), via_user, atol=1e-11)


def test_to_user_matches_exact_inverse_for_linear():
    module = generated("linear")
    c = numpy.array([0.3, -1.7])
    with mpmath.workdps(DPS):
        T = mpmath.mpf(2)
        r = mpmath.matrix([[mpmath.sqrt(3) * T ** 1.5 / 3, 0], [mpmath.sqrt(3) * mpmath.sqrt(T) / 2,
                                                                mpmath.sqrt(T) / 2]])
        a = mpmath.lu_solve(r.T, mpmath.matrix([0.3, -1.7]))
    assert numpy.allclose(module.to_user(c, T=2.0), [float(a[0]), float(a[1])], rtol=1e-14)


def test_fig_2a_curve_recovers_its_coefficients():
    module = generated("circle_shift")
    t = numpy.linspace(0, 2 * numpy.pi, 20001)
    y = numpy.stack([4.8 * numpy.cos(t) - 2, 4.8 * numpy.sin(t) - 1], axis=1)
    assert numpy.allclose(module.to_user(module.project(t, y)), [4.8, -2.0, -1.0], atol=1e-6)
