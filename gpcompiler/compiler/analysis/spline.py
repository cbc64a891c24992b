"""Piecewise polynomial spaces: the bspline family, and expression bases whose abs, Max, Min
and Piecewise switch at rational breakpoints (docs/reference/spec.md, "B-splines and
piecewise bases").

On each piece between consecutive breakpoints every basis function is a polynomial, so the
Gram matrix is an exact rational computed piece by piece (L2, L2(w) for a polynomial weight,
H^1), and the atoms are the normalized Legendre polynomials of each piece,
L_(p,d) = sqrt((2d + 1)/(b_p - a_p)) P_d(u_p) on [a_p, b_p], zero elsewhere: orthonormal in
L2, so phi = M . atoms with M exact and the module's Gauss rules, cut at the breakpoints,
integrate every piece exactly.
"""

import sympy

from ...errors import SpecError
from .. import splines
from ..spec import bspline_knots
from .core import Atoms
from .factor import factorize
from .kinks import SHOWN, breakpoints, fraction, on_piece, rational_poly
from .weights import check_weight


def piecewise_polynomials(spec):
    """(breakpoints, rows) when every basis function is a polynomial with rational
    coefficients on each piece between the breakpoints (rows: per function {piece: local
    coefficients}); None otherwise. The bspline family always is one."""
    if spec.family is not None:
        if spec.family.name != "bspline":
            return None
        knots, breaks = bspline_knots(spec.family, spec.interval)
        return breaks, splines.spline_rows(spec.family.option("order"), knots, breaks)
    breaks = breakpoints(spec)
    if spec.vector_basis or not breaks or spec.parameters:
        return None
    ends = [fraction(e) for e in spec.interval]
    points = ends[:1] + [fraction(b) for b in breaks] + ends[1:]
    rows = [{} for _ in spec.functions]
    t = spec.variable
    for piece, (a, b) in enumerate(zip(points[:-1], points[1:])):
        middle = sympy.Rational((a + b).numerator, 2 * (a + b).denominator)
        for j, (function,) in enumerate(spec.functions):
            poly = rational_poly(on_piece(function, t, middle), t)
            if poly is None:
                return None
            if any(poly):
                rows[j][piece] = splines.local(poly, a, b)
    return points, rows


def piecewise_space(spec, breaks, rows, stage):
    """Exact Gram piece by piece, its LDL^T certificate, and e = K . piecewise Legendre atoms."""
    order = max((len(p) for row in rows for p in row.values()), default=1)
    if spec.metric.sobolev:
        _check_continuous(spec, breaks, rows)
    weight = _polynomial_weight(spec)
    gram = splines.gram(rows, breaks, weight, bool(spec.metric.sobolev))
    m, pieces = len(rows), len(breaks) - 1
    exact = [sympy.Rational(b.numerator, b.denominator) for b in breaks]
    mapping = sympy.zeros(m, pieces * order)
    for j, row in enumerate(rows):
        for piece, poly in row.items():
            length = exact[piece + 1] - exact[piece]
            for d, c in enumerate(splines.legendre_coefficients(poly, len(poly))):
                if c:
                    mapping[j, piece * order + d] = (sympy.Rational(c.numerator, c.denominator)
                                                     * sympy.sqrt(length / (2 * d + 1)))
    metric = {"L2": "L2", "weighted": "L2(w), w a polynomial",
              "sobolev": "H^1"}[spec.metric.kind]
    method = (f"exact: piece by piece over {pieces} pieces between breakpoints, each basis "
              f"function a polynomial there, its {metric} integrals exact rationals")
    atoms = Atoms("piecewise", pieces * order, breaks=tuple(exact), order=order)
    return factorize(spec, sympy.Matrix(m, m, lambda j, k: sympy.Rational(
        gram[j][k].numerator, gram[j][k].denominator)), method, atoms, mapping, stage)


def _check_continuous(spec, breaks, rows):
    """H^1 needs continuous functions: each function's pieces agree at every breakpoint (a
    piece's local polynomial at u = 1 and the next one's at u = -1)."""
    for j, row in enumerate(rows):
        for piece in range(len(breaks) - 2):
            left = sum(row.get(piece, ()))
            right = sum(c * (-1) ** n for n, c in enumerate(row.get(piece + 1, ())))
            if left != right:
                raise SpecError([(f"basis.functions[{j}]", f"{spec.functions[j][0]} jumps at "
                                  f"{spec.variable} = {breaks[piece + 1]}: sobolev = 1 (H^1) "
                                  "needs continuous functions")], spec.path)


def _polynomial_weight(spec):
    """The weight's coefficients in t (Fractions), or None without a weight; a SpecError for
    a weight that is not a polynomial with rational coefficients."""
    weight = spec.metric.weight
    if weight is None:
        return None
    poly = rational_poly(weight, spec.variable)
    if poly is None:
        raise SpecError([("metric.weight", f"a piecewise polynomial basis (bspline, or {SHOWN} "
                                           f"of polynomials) takes a polynomial weight with "
                                           f"rational coefficients, got {weight}")], spec.path)
    check_weight(spec)
    return poly
