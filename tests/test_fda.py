"""Issue 33, item 2: scikit-fda interop against the real package (the ``fda`` extra):
FDataGrid curves in, FDataBasis releases out in scikit-fda's own basis, whose Gram matrix
(numerical, scikit-fda's) equals ours (exact)."""
from fractions import Fraction

import numpy
import pytest


skfda = pytest.importorskip("skfda", reason="scikit-fda interop needs the fda extra "
                                            "(pip install 'gpcompiler[fda]')")
bases = pytest.importorskip("skfda.representation.basis", reason="scikit-fda's bases")

SPEC = """name = "{name}"
title = "{name}"

[domain]
intervals = [["{lo}", "{hi}"]]

[basis]
family = {family}
{metric}"""


def _spec(tmp_path, name, family, lo, hi, metric=""):
    path = tmp_path / f"{name}.toml"
    path.write_text(SPEC.format(name=name, family=family, lo=lo, hi=hi, metric=metric))
    return path


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    """Small specs of the families scikit-fda shares: a cubic on [0, 2], Fourier of order
    3 on [1, 4] (period 3, not 2 pi, and not starting at 0) in L2, and of order 1 in H^1
    (its compile is the quick one)."""
    base = tmp_path_factory.mktemp("fda")
    return {"monomial": _spec(base, "cubic", '{ name = "monomial", degree = 3 }', 0, 2),
            "fourier": _spec(base, "fourier3", '{ name = "fourier", order = 3 }', 1, 4),
            "fourier_h1": _spec(base, "fourier1_h1", '{ name = "fourier", order = 1 }', 1, 4,
                                "\n[metric]\nsobolev = 1\n")}


def _release(module, fd, seed=1):
    from gpcompiler.interop import fda
    return fda.project_and_privatize(module, fd, rho=4.0, rng=numpy.random.default_rng(seed))


def test_fdatagrid_in_and_fdatabasis_out_round_trip(specs):
    """A grid of curves in the span comes back as the same functions (the projection of a
    linear interpolant of a line is the line: to 1e-12, numerical); the FDataGrid path is
    the module's project on the same arrays, bit for bit; a release converted to an
    FDataBasis, sampled on a fine grid and projected again, gives back its coordinates
    (to 1e-5: the piecewise-linear interpolation error, numerical)."""
    import gpcompiler
    from gpcompiler.interop import fda
    cubic = gpcompiler.load(specs["monomial"])
    t = numpy.linspace(0, 2, 9)
    lines = numpy.stack([2 * t + 1, -t, 0 * t + 3])
    grid = skfda.FDataGrid(lines, t)
    c = fda.project(cubic, grid)
    assert c.tolist() == cubic.project(t, lines).tolist()
    out = fda.to_fdatabasis(specs["monomial"], c)
    assert isinstance(out.basis, bases.MonomialBasis) and out.n_samples == 3
    assert numpy.allclose(out(t)[..., 0], lines, rtol=0, atol=1e-12)
    assert numpy.allclose(out.coefficients[:, :2], [[1, 2], [0, -1], [3, 0]], atol=1e-12)
    fourier = gpcompiler.load(specs["fourier"])
    s = numpy.linspace(1, 4, 301)
    waves = skfda.FDataGrid(numpy.stack([numpy.sin(2 * numpy.pi * s / 3), numpy.cos(s) ** 2]), s)
    released = _release(fourier, waves)
    back = fda.to_fdatabasis(specs["fourier"], released)
    fine = numpy.linspace(1, 4, 4001)
    again = fda.project(fourier, back.to_grid(fine))
    assert numpy.abs(again - released).max() < 1e-5 * numpy.abs(released).max()
    with pytest.raises(gpcompiler.DataError, match="over 2 variables"):
        fda.grid_curves(skfda.FDataGrid(numpy.zeros((1, 3, 3)), [[0, 1, 2], [0, 1, 2]]))


def test_fdatabasis_evaluates_as_the_module_and_l2_fourier_coefficients_are_ours(specs):
    """FDataBasis(t) equals the module's evaluate of the release to 1e-12 of its size
    (numerical: two float evaluations of one function); in the L2 metric scikit-fda's
    Fourier coefficients are our orthonormal coordinates reordered (cos/sin pairs swapped),
    bit for bit; in H^1 they are sqrt(P) a_0, sqrt(P/2) a_k."""
    import gpcompiler
    from gpcompiler.interop import fda
    t = numpy.linspace(1, 4, 50)
    data = skfda.FDataGrid(numpy.stack([numpy.exp(-t), t ** 2 / 10, numpy.sin(5 * t)]), t)
    points = numpy.random.default_rng(2).uniform(1, 4, 40)
    for name in ("fourier", "fourier_h1"):
        module = gpcompiler.load(specs[name])
        released = _release(module, data)
        out = fda.to_fdatabasis(specs[name], released)
        ours = module.evaluate(released, points)
        assert numpy.abs(out(points)[..., 0] - ours).max() < 1e-12 * numpy.abs(ours).max()
    module = gpcompiler.load(specs["fourier"])
    released = _release(module, data)
    coefficients = fda.to_fdatabasis(specs["fourier"], released).coefficients
    assert coefficients.tolist() == released[:, [0, 2, 1, 4, 3, 6, 5]].tolist()
    h1 = gpcompiler.load(specs["fourier_h1"])
    a = h1.to_user(_release(h1, data))
    out = fda.to_fdatabasis(specs["fourier_h1"], _release(h1, data)).coefficients
    assert out.tolist() == (a[:, [0, 2, 1]] * numpy.sqrt([3.0, 1.5, 1.5])).tolist()


def test_scikit_fda_gram_matrices_equal_ours(specs):
    """Theirs numerical (quadrature or closed forms in float), ours exact and rounded:
    equal to 1e-10 relative. Fourier: theirs is the identity of a normalised basis, ours
    diag(P, P/2, ...) in our order."""
    import gpcompiler
    cubic = gpcompiler.load(specs["monomial"])
    theirs = bases.MonomialBasis(domain_range=(0, 2), n_basis=4).gram_matrix()
    assert numpy.allclose(theirs, cubic.gram(), rtol=1e-10, atol=0)
    assert cubic.gram()[3, 3] == 2 ** 7 / 7
    fourier = gpcompiler.load(specs["fourier"])
    theirs = bases.FourierBasis(domain_range=(1, 4), n_basis=7, period=3).gram_matrix()
    order = [0, 2, 1, 4, 3, 6, 5]
    norms = numpy.sqrt(numpy.diag(fourier.gram()))[order]
    assert numpy.diag(fourier.gram()).tolist() == [3.0] + [1.5] * 6
    assert numpy.allclose(theirs, fourier.gram()[numpy.ix_(order, order)] / numpy.outer(norms, norms),
                          rtol=0, atol=1e-10)


@pytest.mark.parametrize("order, knots", [(4, '"1/2", "1", "5/2"'), (2, '"1", "1", "3"')])
def test_scikit_fda_bspline_basis_equals_ours(tmp_path, order, knots):
    """A cubic spline on irregular knots, and a linear one with a double knot (a jump at
    t = 1): the Gram matrix of scikit-fda's BSplineBasis functions (by quadrature; its own
    gram_matrix for the cubic) equals ours (exact) to 1e-10 relative, and the FDataBasis
    of a release evaluates as the module does (1e-12 of its size, numerical)."""
    import gpcompiler
    from gpcompiler.interop import fda
    path = _spec(tmp_path, f"spline{order}",
                 f'{{ name = "bspline", order = {order}, knots = [{knots}] }}', 0, 4)
    module = gpcompiler.load(path)
    t = numpy.linspace(0, 4, 41)
    released = _release(module, skfda.FDataGrid(numpy.stack([numpy.sin(t), t * (4 - t)]), t))
    out = fda.to_fdatabasis(path, released)
    assert isinstance(out.basis, bases.BSplineBasis) and out.basis.order == order
    breaks = [0, *map(Fraction, knots.replace('"', "").split(", ")), 4]
    theirs = _gram_by_quadrature(out.basis, breaks)
    assert numpy.allclose(theirs, module.gram(), rtol=1e-10, atol=1e-12)
    if order == 4:   # scikit-fda's own gram_matrix (wrong with a repeated knot: negative entries)
        assert numpy.allclose(out.basis.gram_matrix(), module.gram(), rtol=1e-10, atol=1e-12)
    points = numpy.linspace(0, 4, 97)
    ours = module.evaluate(released, points)
    assert numpy.abs(out(points)[..., 0] - ours).max() < 1e-12 * numpy.abs(ours).max()


def _gram_by_quadrature(basis, breaks):
    """The Gram matrix of scikit-fda's basis functions by Gauss-Legendre (12 nodes, exact for
    their polynomial products) on each piece between distinct knots (numerical)."""
    nodes, weights = numpy.polynomial.legendre.leggauss(12)
    gram = 0.0
    for lo, hi in zip(breaks, breaks[1:]):
        if hi > lo:
            x = float(lo) + (float(hi) - float(lo)) * (nodes + 1) / 2
            values = basis(x)[..., 0]              # (functions, nodes)
            gram = gram + (values * weights) @ values.T * (float(hi) - float(lo)) / 2
    return gram


def test_bases_scikit_fda_does_not_share_are_refused_in_one_line():
    import gpcompiler
    from gpcompiler.interop import fda
    for spec, needle in (("legendre10", "the legendre family, and scikit-fda's"),
                         ("ellipse", r"values are in R\^2"), ("linear", "given by functions")):
        module = gpcompiler.load(spec)
        with pytest.raises(gpcompiler.UserError, match=needle) as caught:
            fda.to_fdatabasis(spec, numpy.zeros(module.COEF_SHAPE))
        assert "\n" not in str(caught.value)
