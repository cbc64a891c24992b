"""The analysis of a spec in one variable: orthonormal families (sinc,
Hermite), Fourier, polynomial spaces and expression bases."""
import math

import mpmath
import sympy

from ..symbolic import DIGITS
from .core import (Analysis, Atoms, Quadrature, identity_matrix, is_polynomial_space, sparse,
                   with_changes)
from .factor import factorize
from .gram import expression_gram, sinc_gram
from .legendre import legendre_space, polynomial_space
from .quadrature import choose_quadrature
from .spline import piecewise_polynomials, piecewise_space
from .weights import check_weight


def analyze_line(spec, stage=lambda name: None):
    """The analysis of a spec in one variable (the 1-D sibling of :func:`analyze_box`)."""
    family = spec.family.name if spec.family else None
    if family in ("sinc", "hermite"):
        return _orthonormal_family(spec, family)
    piecewise = piecewise_polynomials(spec)
    if piecewise is not None:
        return piecewise_space(spec, *piecewise, stage)
    plain = spec.metric.kind == "L2"
    if family == "fourier" and plain:
        return _fourier(spec)
    if plain and is_polynomial_space(spec):
        return polynomial_space(spec, stage)
    check_weight(spec)
    if is_polynomial_space(spec):
        atoms, mapping, gram, method = legendre_space(spec)
    else:
        atoms, mapping = Atoms("expression", spec.basis_size), None
        gram, method = sinc_gram(spec) or expression_gram(spec)
    return factorize(spec, gram, method, atoms, mapping, stage)


def _orthonormal_family(spec, family):
    m = spec.basis_size
    identity = identity_matrix(m)
    if family == "sinc":
        first = spec.family.option("first", 1)
        atoms = Atoms("sinc", m, tuple(range(first, first + m)))
        method = "closed form: {sinc(t-k)} is orthonormal on R (paper Fact B.9)"
        quadrature = Quadrature(frequency=math.pi)
    else:
        atoms = Atoms("hermite", m)
        method = "closed form: Hermite functions are orthonormal on R"
        quadrature = Quadrature(frequency=math.sqrt(2 * m + 1) + 1, min_nodes=4)
    return Analysis(spec=spec, gram=identity, gram_method=method, lower=identity,
                    pivots=(sympy.Integer(1),) * m,
                    certificate="G = I: every pivot equals 1", cholesky=identity,
                    transform=identity, atoms=atoms, quadrature=quadrature,
                    condition_number=mpmath.mpf(1), numerical=False)


def _diagonal_analysis(spec, diagonal, method, atoms, quadrature, transform_scaled):
    """A diagonal Gram matrix: L = I, pivots = diagonal, R = diag(sqrt), K = R^(-1) or I."""
    m = len(diagonal)
    roots = [sympy.sqrt(d) for d in diagonal]
    identity = identity_matrix(m)
    transform = (sparse(m, m, {(k, k): 1 / r for k, r in enumerate(roots)})
                 if transform_scaled else identity)
    values = [sympy.N(d.subs(spec.defaults), DIGITS) for d in diagonal]
    exact = all(d.is_positive for d in diagonal)
    certificate = (f"G is diagonal with {'exact ' if exact else ''}positive entries: "
                   "every LDL^T pivot is a diagonal entry")
    if not exact:
        certificate += " (positivity proven at the default parameters only)"
    return Analysis(spec=spec, gram=sparse(m, m, {(k, k): d for k, d in enumerate(diagonal)}),
                    gram_method=method, lower=identity, pivots=tuple(diagonal),
                    certificate=certificate,
                    cholesky=sparse(m, m, {(k, k): r for k, r in enumerate(roots)}),
                    transform=transform, atoms=atoms, quadrature=quadrature,
                    condition_number=mpmath.mpf(str(max(values) / min(values))),
                    numerical=False)


def _fourier(spec):
    """Fourier family: G = diag(L, L/2, ..., L/2) by orthogonality, atoms evaluated as is."""
    length = spec.interval[1] - spec.interval[0]
    diagonal = [length] + [length / 2] * (spec.basis_size - 1)
    analysis = _diagonal_analysis(
        spec, diagonal, "closed form: orthogonality of the Fourier basis",
        Atoms("fourier", spec.basis_size), None, transform_scaled=True)
    return with_changes(analysis, quadrature=choose_quadrature(spec, analysis.atoms),
                 formulas=(("gram", "G = diag(b - a, (b - a)/2, ..., (b - a)/2)"),))
