"""Stage 2 on a box I_1 x ... x I_k (paper Sec. 3.2, "Multivariate functions").

The Gram matrix is still m x m, its entries integrated over the box. A tensor-product
family has G = G_1 (x) ... (x) G_k (Fubini): each factor goes through the 1-D analysis and
L, D, R = L D^(1/2) and K are the Kronecker products of the factors' (unique LDL^T), so
nothing larger than a factor is factored. A total-degree polynomial space, or polynomial
functions, expand exactly in tensor Legendre atoms restricted to total degree; any other
basis gets iterated integrals (docs/design.md, "Exact analysis").
"""
import itertools
import math

import mpmath
import sympy

from ..spec import axis_families, multi_indices
from ..symbolic import KroneckerMatrix
from .core import Analysis, Atoms, axis_spec, is_polynomial_box
from .factor import factorize
from .gram import expression_gram
from .legendre import legendre_space, polynomial_space
from .line import analyze_line
from .quadrature import box_quadrature
from .weights import check_box_weight


def analyze_box(spec, stage):
    """The exact analysis of a spec over a box (k > 1 variables)."""
    family, plain = spec.family, spec.metric.kind == "L2"
    factors = check_box_weight(spec)
    separable = plain or (factors is not None and not spec.metric.sobolev)
    if family is not None and family.option("total_degree") is None and separable:
        return _tensor(spec, stage, factors)
    polynomial = is_polynomial_box(spec)
    if plain and polynomial:
        return polynomial_space(spec, stage)
    if polynomial:
        atoms, mapping, gram, method = legendre_space(spec)
    else:
        atoms, mapping = Atoms("expression", spec.basis_size), None
        gram, method = expression_gram(spec)
    return factorize(spec, gram, method, atoms, mapping, stage)


def _tensor(spec, stage, weights=None):
    """G = (x)_i G_i and its LDL^T, R and K as Kronecker products of the 1-D factors', each
    factor in L2 with its variable's factor w_i of a separable weight (Fubini)."""
    weights = weights or (None,) * spec.dimension
    factors = tuple(analyze_line(axis_spec(spec, i, f, w)) for i, (f, w) in
                    enumerate(zip(axis_families(spec.family), weights)))
    stage("certificate")
    index = tuple(itertools.product(*(range(f.atoms.size) for f in factors)))
    atoms = (Atoms("legendre", len(index), tuple(f.atoms.shifts for f in factors), index)
             if factors[0].atoms.kind == "legendre" else
             Atoms("expression", len(index)))   # the tensor products in spec.functions
    pivots = tuple(sympy.Mul(*(f.pivots[a_i] for f, a_i in zip(factors, a)))
                   for a in multi_indices(spec.family))
    names = [str(t) for t in spec.variables]
    kappas = [f.condition_number for f in factors]
    kron = lambda name: KroneckerMatrix([getattr(f, name) for f in factors])  # noqa: E731
    return Analysis(
        spec=spec, gram=kron("gram"),
        gram_method=("numerical" if any(f.numerical for f in factors) else "exact")
                    + ": Kronecker product G = " + " (x) ".join(f"G_{n}" for n in names)
                    + " of the 1-D Gram matrices (Fubini); " + "; ".join(
                        f"G_{n}: {f.gram_method}" for n, f in zip(names, factors)),
        lower=kron("lower"), pivots=pivots,
        certificate=("L D L^T = (x)_i L_i (x)_i D_i (x)_i L_i^T, the unique LDL^T of G: every "
                     "pivot is a product of the factors' pivots, and "
                     + "; ".join(f"for {n}: {f.certificate}" for n, f in zip(names, factors))),
        cholesky=kron("cholesky"), transform=kron("transform"), atoms=atoms,
        quadrature=box_quadrature(spec, atoms),
        condition_number=(math.prod(kappas) if all(mpmath.isfinite(k) for k in kappas)
                          else mpmath.nan),
        numerical=any(f.numerical for f in factors),
        formulas=(("gram", "G = " + " (x) ".join(f"G_{n}" for n in names)),), factors=factors)
