"""scikit-fda interop (``pip install 'gpcompiler[fda]'``; docs/reference/api.md,
"scikit-fda"): curves of an ``FDataGrid`` into a generated module's project and
privatize, and a release out as an ``FDataBasis`` in scikit-fda's own basis where ours
spans the same functions:

- ``monomial``: scikit-fda's ``MonomialBasis`` is t^0..t^m on the same domain, as ours:
  its coefficients are our user-basis coefficients a = to_user(c).
- ``fourier``: scikit-fda's ``FourierBasis`` of period P = b - a (ours: the length of the
  domain [a, b]) is 1/sqrt(P), sin(k w t)/sqrt(P/2), cos(k w t)/sqrt(P/2), w = 2 pi / P,
  at t (not t - a); ours is 1, cos(k w t), sin(k w t). Its coefficients are
  b_0 = sqrt(P) a_0, b_sin_k = sqrt(P/2) a_sin_k, b_cos_k = sqrt(P/2) a_cos_k; in the L2
  metric these are exactly our orthonormal coordinates c (reordered, no arithmetic).
- ``bspline``: scikit-fda's ``BSplineBasis`` of the same order and knots (the domain's ends
  included, clamped ends) is our basis: its coefficients are a = to_user(c); knots that
  are not binary64 numbers are rounded to the nearest, as scikit-fda holds floats.

Anything else (other families, expression bases, values in R^n, boxes) is refused in one
line.
"""
import math

import numpy

from ..errors import DataError, UserError

FAMILIES = ("bspline", "fourier", "monomial")


def _skfda():
    try:
        import skfda
        import skfda.representation.basis
    except ImportError:
        raise UserError("scikit-fda interop needs scikit-fda: pip install 'gpcompiler[fda]'") \
            from None
    return skfda


def grid_curves(fd):
    """(t, y) of an ``FDataGrid`` of curves: its grid (S,) and values (N, S), or (N, S, n)
    for values in R^n, as the generated modules' ``project`` takes them."""
    if fd.dim_domain != 1:
        raise DataError(f"an FDataGrid over {fd.dim_domain} variables: the generated modules "
                        "of curves take one (a box spec reads gridded fields instead)")
    y = numpy.asarray(fd.data_matrix, dtype=float)
    return numpy.asarray(fd.grid_points[0], dtype=float), y[..., 0] if y.shape[-1] == 1 else y


def project(module, fd, bound=None, **params):
    """Orthonormal coordinates of the curves of ``fd`` (module.project of each curve's
    piecewise-linear interpolant on its grid)."""
    t, y = grid_curves(fd)
    return module.project(t, y, bound=bound, **params)


def project_and_privatize(module, fd, **options):
    """The release of every curve of ``fd`` (module.project_and_privatize: paper Alg. 2 /
    Alg. 6), with the module's options (epsilon= or rho=, rng=, bound=, parameters)."""
    t, y = grid_curves(fd)
    return module.project_and_privatize(t, y, **options)


def to_fdatabasis(spec, c, **params):
    """The released curves ``c`` (N, m orthonormal coordinates, or (m,)) of ``spec`` (a
    path or a shipped name) as a scikit-fda ``FDataBasis`` in the matching basis (module
    docstring), or a UserError in one line where scikit-fda has no such basis."""
    from ..compiler.build import load, resolve_spec
    from ..compiler.spec import load_spec
    skfda = _skfda()
    family = load_spec(resolve_spec(spec)).family
    module = load(spec)
    where = f"{spec}: no scikit-fda basis matches"
    if module.VALUE_DIM != 1 or hasattr(module, "DIMENSION"):
        raise UserError(f"{spec}: to_fdatabasis converts curves with values in R^1, and this "
                        "spec's " + (f"are over {module.DIMENSION} variables"
                                     if hasattr(module, "DIMENSION")
                                     else f"values are in R^{module.VALUE_DIM}"))
    if family is None or family.name not in FAMILIES:
        raise UserError(f"{spec}: its basis is " + ("given by functions" if family is None
                                                    else f"the {family.name} family")
                        + f", and scikit-fda's that match ours are the families "
                        f"{', '.join(FAMILIES)}")
    c = numpy.atleast_2d(numpy.asarray(c, dtype=float))
    domain = tuple(float(end) for end in module.curve_interval(**params))
    basis, coefficients = _MATCHES[family.name](skfda.representation.basis, module, family,
                                                domain, c, params, where)
    return skfda.FDataBasis(basis, coefficients)


def _monomial(bases, module, family, domain, c, params, where):
    return bases.MonomialBasis(domain_range=domain, n_basis=module.BASIS_SIZE), \
        module.to_user(c, **params)


def _fourier(bases, module, family, domain, c, params, where):
    """Ours 1, cos_1, sin_1, cos_2, ... against theirs 1, sin_1, cos_1, ... (normalised)."""
    order = [0, *(j for k in range(1, family.option("order") + 1) for j in (2 * k, 2 * k - 1))]
    period = domain[1] - domain[0]
    basis = bases.FourierBasis(domain_range=domain, n_basis=module.BASIS_SIZE, period=period)
    if module.METRIC == "L2":
        return basis, c[:, order]     # c_j = a_j ||phi_j||: exactly theirs
    norms = numpy.array([math.sqrt(period)] + [math.sqrt(period / 2)] * (len(order) - 1))
    return basis, module.to_user(c, **params)[:, order] * norms


def _bspline(bases, module, family, domain, c, params, where):
    from fractions import Fraction
    extra = sorted(set(dict(family.options)) - {"order", "knots"})
    if extra:
        raise UserError(f"{where} a bspline family with {', '.join(extra)} (scikit-fda's "
                        "B-splines have clamped ends and only an order and knots)")
    knots = [float(Fraction(str(k))) for k in family.option("knots")]
    if (knots[0], knots[-1]) != domain:
        knots = [domain[0], *knots, domain[1]]
    order = family.option("order")
    if len(knots) + order - 2 != module.BASIS_SIZE:
        raise UserError(f"{where} this spline: {module.BASIS_SIZE} functions, where clamped "
                        f"B-splines of order {order} on knots {knots} are "
                        f"{len(knots) + order - 2}")
    return bases.BSplineBasis(domain_range=domain, order=order, knots=knots), \
        module.to_user(c, **params)


_MATCHES = {"monomial": _monomial, "fourier": _fourier, "bspline": _bspline}
