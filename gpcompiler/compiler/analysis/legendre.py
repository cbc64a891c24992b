"""Polynomial spaces through Legendre atoms: the rows of C in
phi_j = sum_k C_jk P_k(u), in 1-D and as tensor products over a box, and their exact Gram."""
import itertools
import math

import mpmath
import sympy

from ..spec import Family, axis_families, family_size, multi_indices
from ..symbolic import DIGITS, ExactMatrix, matrix_field, rational_float, simplify_entry
from .core import Analysis, Atoms, axis_spec, identity_matrix, with_changes
from .factor import factorize, gram_condition, ldl_certificate
from .gram import expression_gram, keep_float, weighted_atom_gram
from .quadrature import choose_quadrature


def _legendre_rows(spec, field, a, b):
    """Rows of C: phi_j = sum_k C_jk P_k(u), u = (2t - a - b)/(b - a), over ``field``.

    Built by the recurrence t^(i+1) = (alpha u + beta) t^i with
    u P_k = ((k + 1) P_(k+1) + k P_(k-1))/(2k + 1): O(degree^2) exact operations.
    """
    name = spec.family.name if spec.family else None
    m = spec.basis_size
    if name == "legendre":
        return [{j: field.one} for j in range(m)], m
    if name == "monomial":
        polys = None
        degree = m - 1
    else:
        polys = [sympy.Poly(f[0], spec.variable) for f in spec.functions]
        degree = max(p.degree() for p in polys)
    alpha, beta = (b - a) / 2, (a + b) / 2
    up = [alpha * field(k + 1) / field(2 * k + 1) for k in range(degree + 1)]
    down = [alpha * field(k) / field(2 * k + 1) for k in range(degree + 1)]
    powers = [{0: field.one}]
    for _ in range(degree):
        nxt = {}
        for k, value in powers[-1].items():
            nxt[k + 1] = nxt.get(k + 1, field.zero) + up[k] * value
            if k:
                nxt[k - 1] = nxt.get(k - 1, field.zero) + down[k] * value
            if beta:
                nxt[k] = nxt.get(k, field.zero) + beta * value
        powers.append({k: v for k, v in nxt.items() if v})
    if polys is None:
        return powers, degree + 1
    rows = []
    for poly in polys:
        row = {}
        for (power,), coefficient in poly.terms():
            c = field.from_sympy(coefficient)
            for k, value in powers[power].items():
                row[k] = row.get(k, field.zero) + c * value
        rows.append({k: v for k, v in row.items() if v})
    return rows, degree + 1


def polynomial_space(spec, stage):
    """G = C D C^T, D_k = (b - a)/(2k + 1), from the exact change of basis C to Legendre.

    When C is triangular with a nonzero diagonal (m functions of degrees 0..m-1), the
    pivots of LDL^T are C_kk^2 D_k, L = C diag(C)^(-1), and e = the normalized Legendre
    atoms (K = I) with R = C D^(1/2): no O(m^3) algebra. Otherwise the generic route.
    """
    m = spec.basis_size
    field, rows, norms, atoms = legendre_expansion(spec)
    gram, formula = _polynomial_gram(spec, field, rows, norms)
    constant = field.is_QQ
    gram = ExactMatrix((m, m), gram, field.to_sympy, rational_float if constant else None,
                       constant, symmetric=True)
    size = atoms.size
    change = _change_of_basis(field, rows, norms, constant, (m, size))
    formulas = [("gram", formula)] if formula else []
    if not (size == m and all(row and max(row) == j and row[j] for j, row in enumerate(rows))):
        analysis = factorize(spec, gram.to_sympy(), "exact: Legendre expansion of the basis",
                              atoms, change.to_sympy(), stage)
        return with_changes(analysis, formulas=tuple(formulas))
    stage("certificate")
    pivots = tuple(simplify_entry(field.to_sympy(rows[j][j] ** 2 * norms[j])) for j in range(m))
    certificate = ("G = C D C^T, C the exact triangular change of basis to Legendre "
                   "(nonzero diagonal), D_k = (b - a)/(2k + 1) > 0: every LDL^T pivot "
                   "C_kk^2 D_k is positive") if constant else ldl_certificate(spec, pivots)
    lower = ExactMatrix((m, m), {(i, j): (v, j) for i, row in enumerate(rows)
                                 for j, v in row.items()},    # L = C diag(C)^-1, on demand
                        lambda entry: field.to_sympy(entry[0] / rows[entry[1]][entry[1]]))
    stage("orthonormal basis")
    formulas.append(("cholesky", "R[j, k] = C[j, k] sqrt((b - a)/(2k + 1)) where "
                                 "phi_j = sum_k C[j, k] P_k(u)"))
    return Analysis(spec=spec, gram=gram, gram_method="exact: Legendre expansion of the basis "
                    "(triangular change of basis C, G = C D C^T)", lower=lower, pivots=pivots,
                    certificate=certificate, cholesky=change, transform=identity_matrix(m),
                    atoms=atoms, quadrature=choose_quadrature(spec, atoms),
                    condition_number=gram_condition(gram, spec), numerical=False,
                    formulas=tuple(formulas))


def _change_of_basis(field, rows, norms, constant, shape):
    """R = C D^(1/2) as an ExactMatrix of (C_jk, k) pairs: phi = R . normalized atoms."""
    roots = [sympy.sqrt(simplify_entry(field.to_sympy(n))) for n in norms]
    with mpmath.workdps(DIGITS):
        float_roots = [mpmath.sqrt(mpmath.mpf(int(n.numerator)) / int(n.denominator))
                       for n in norms] if constant else None

    def convert(entry):
        value = field.to_sympy(entry[0])
        return roots[entry[1]] if value == 1 else value * roots[entry[1]]

    def as_float(entry):
        with mpmath.workdps(DIGITS):
            value = (mpmath.mpf(int(entry[0].numerator)) / int(entry[0].denominator)
                     * float_roots[entry[1]])
            return float(value) if abs(value) < 2 ** 1024 else math.copysign(math.inf, value)
    return ExactMatrix(shape, {(j, k): (v, k) for j, row in enumerate(rows) for k, v in row.items()},
                       convert, as_float if constant else None, constant)


def legendre_expansion(spec):
    """(field, rows of C, norms D_k = ||P_k(u)||^2, atoms): phi_j = sum_k C_jk P_k(u)."""
    if spec.dimension > 1:
        return tensor_legendre_expansion(spec)
    field, (a, b) = matrix_field(list(spec.interval))
    rows, size = _legendre_rows(spec, field, a, b)
    return field, rows, [(b - a) / field(2 * k + 1) for k in range(size)], Atoms("legendre", size)


def _polynomial_gram(spec, field, rows, norms):
    """G entries {(j, k): value}, k <= j and nonzero: moments for monomials, else C D C^T."""
    m = spec.basis_size
    name = spec.family.name if spec.family else None
    if name == "legendre":
        return ({(j, j): norms[j] for j in range(m)},
                "G = diag((b - a)/(2k + 1))" if spec.dimension == 1 else
                "G = diag(prod_i (b_i - a_i)/(2 k_i + 1))")
    if name == "monomial" and spec.dimension == 1:
        a, b = (field.from_sympy(e) for e in spec.interval)
        moments = [(b ** (n + 1) - a ** (n + 1)) / field(n + 1) for n in range(2 * m - 1)]
        return ({(j, k): moments[j + k] for j in range(m) for k in range(j + 1)
                 if moments[j + k]}, "G[j, k] = (b^(j+k+1) - a^(j+k+1))/(j + k + 1)")
    gram = {}
    for j in range(m):
        for k in range(j + 1):
            value = sum((v * rows[k][i] * norms[i] for i, v in rows[j].items() if i in rows[k]),
                        field.zero)
            if value:
                gram[j, k] = value
    return gram, None


def legendre_space(spec):
    """phi = M . L with L_k = sqrt((2k+1)/(b-a)) P_k(u), u = (2t-a-b)/(b-a), exact
    (weighted or Sobolev metrics on a polynomial space)."""
    field, rows, norms, atoms = legendre_expansion(spec)
    size = atoms.size
    norms = [sympy.sqrt(simplify_entry(field.to_sympy(n))) for n in norms]
    mapping = sympy.Matrix(len(rows), size, lambda j, k: (
        simplify_entry(field.to_sympy(rows[j][k]) * norms[k]) if k in rows[j] else 0))
    gram, method = mapping * mapping.T, "exact: Legendre expansion of the basis"
    weighted = weighted_atom_gram(spec, atoms) if spec.metric.weight is not None else None
    if weighted is not None:
        return atoms, mapping, (mapping * weighted[0] * mapping.T).applyfunc(
            keep_float), f"{weighted[1]}; Legendre expansion of the basis"
    if spec.metric.weight is not None or spec.dimension > 1:
        gram, method = expression_gram(spec)
        return atoms, mapping, gram.applyfunc(simplify_entry), method
    lo, hi = spec.interval
    if spec.metric.sobolev:
        derivative = sympy.Matrix(size, size, lambda k, j: (
            2 * sympy.sqrt((2 * k + 1) * (2 * j + 1)) / (hi - lo) if j < k and (k - j) % 2 else 0))
        gram = gram + mapping * derivative * derivative.T * mapping.T
        method += " plus the exact Legendre derivative matrix (H^1)"
    return atoms, mapping, gram.applyfunc(simplify_entry), method


def tensor_legendre_expansion(spec):
    """(field, rows of C, norms, atoms): phi_j = sum_a C_ja prod_i P_(a_i)(u_i), exact.

    Atoms are the tensor grid of a tensor family, else the tensor Legendre polynomials of
    total degree <= D (x^a expands into P_b with b <= a componentwise, so |b| <= |a| <= D).
    """
    polys = (None if spec.family is not None else
             [sympy.Poly(f[0], *spec.variables) for f in spec.functions])
    coefficients = [c for p in polys or [] for c in p.coeffs()]
    field, elements = matrix_field([e for i in spec.intervals for e in i] + coefficients)
    ends = list(zip(elements[0:2 * spec.dimension:2], elements[1:2 * spec.dimension:2]))
    family = spec.family
    if family is not None and family.option("total_degree") is None:
        sizes = [family_size(f) for f in axis_families(family)]
        index = list(itertools.product(*(range(n) for n in sizes)))
    else:
        degree = (family.option("total_degree") if family is not None
                  else max(p.total_degree() for p in polys))
        sizes = [degree + 1] * spec.dimension
        index = [a for a in itertools.product(range(degree + 1), repeat=spec.dimension)
                 if sum(a) <= degree]
    position = {a: n for n, a in enumerate(index)}
    powers = [_legendre_rows(axis_spec(spec, i, Family("monomial", (("degree", n - 1),))),
                             field, a, b)[0] for i, (n, (a, b)) in enumerate(zip(sizes, ends))]

    def monomial(exponents, scale):
        row = {}
        for terms in itertools.product(*(p[e].items() for p, e in zip(powers, exponents))):
            key = position[tuple(b for b, _ in terms)]
            row[key] = row.get(key, field.zero) + scale * math.prod((v for _, v in terms),
                                                                    start=field.one)
        return row

    if polys is not None:
        rows = []
        for poly in polys:
            row = {}
            for exponents, c in poly.terms():
                for key, v in monomial(exponents, field.from_sympy(c)).items():
                    row[key] = row.get(key, field.zero) + v
            rows.append({k: v for k, v in row.items() if v})
    elif family.name == "legendre":
        rows = [{j: field.one} for j in range(len(index))]
    else:
        rows = [monomial(a, field.one) for a in multi_indices(family)]
    norms = [math.prod(((b - a) / field(2 * n + 1) for n, (a, b) in zip(multi, ends)),
                       start=field.one) for multi in index]
    return field, rows, norms, Atoms("legendre", len(index), index=tuple(index))
