"""The exact LDL^T of a Gram matrix and its certificate: positive pivots prove
the basis independent; a zero pivot is a linear dependence, proved symbolically."""
import mpmath
import sympy

from ...errors import NotPositiveDefiniteError, SymbolicLimitError
from ..symbolic import (DIGITS, ExactMatrix, combination_text, condition_number, dependent_row,
                        exact_ldl, matrix_field, simplify_entry, time_limit, unit_lower_inverse)
from .core import Analysis, basis_names, sparse
from .quadrature import choose_quadrature


NUMERICAL_DIGITS = DIGITS - 10


PROOF_SECONDS = 10


PROOF = "a symbolic proof of a linear dependence"


EIGENSOLVER_LIMIT = 40


def factorize(spec, gram, method, atoms, mapping, stage):
    """Generic route: exact LDL^T of G, R = L D^(1/2), K = R^(-1) . mapping."""
    stage("certificate")
    numerical = method.startswith("numerical")
    m = spec.basis_size
    if numerical:
        field = sympy.polys.domains.RealField(dps=DIGITS)
        rows = [[field.from_sympy(gram[j, k]) for k in range(m)] for j in range(m)]
    else:
        field, elements = matrix_field([gram[j, k] for j in range(m) for k in range(m)])
        rows = [elements[j * m:(j + 1) * m] for j in range(m)]
    try:
        lower, pivots = exact_ldl(rows, field, basis_names(spec),
                                  NUMERICAL_DIGITS if numerical else None)
    except NotPositiveDefiniteError as error:
        if not numerical:
            raise       # an exactly zero pivot: the dependence is proven
        raise _dependence(spec, error.coefficients) from None
    pivots = tuple(simplify_entry(field.to_sympy(p)) for p in pivots)
    if not numerical:
        _hidden_dependence(spec, lower, field, pivots, rows)
    certificate = ldl_certificate(spec, pivots, numerical)
    stage("orthonormal basis")
    roots = [sympy.sqrt(p) for p in pivots]
    lower_sympy = {(i, j): simplify_entry(field.to_sympy(lower[i][j]))
                   for i in range(m) for j in range(i + 1) if lower[i][j]}
    inverse = unit_lower_inverse(lower, field)
    cholesky = {(i, j): simplify_entry(v * roots[j]) for (i, j), v in lower_sympy.items()}
    transform = {}
    for i in range(m):
        row = {k: field.to_sympy(inverse[i][k]) for k in range(i + 1) if inverse[i][k]}
        for k, v in (row if mapping is None else _row_times(row, mapping)).items():
            transform[i, k] = simplify_entry(v / roots[i])
    size = atoms.size
    return Analysis(spec=spec, gram=ExactMatrix.from_sympy(gram), gram_method=method,
                    lower=sparse(m, m, lower_sympy), pivots=pivots, certificate=certificate,
                    cholesky=sparse(m, m, cholesky), transform=sparse(m, size, transform),
                    atoms=atoms, quadrature=choose_quadrature(spec, atoms),
                    condition_number=gram_condition(gram, spec), numerical=numerical)


def _hidden_dependence(spec, lower, field, pivots, rows):
    """Refuse a pivot that is nonzero in ``field`` but vanishes at the defaults to
    NUMERICAL_DIGITS digits of G_jj: the functions obey an identity the field does not know
    (sin(2) = 2 sin(1) cos(1) is lost in ZZ(sin(1), sin(2), ...), so sin^2 + cos^2 - 1
    has a nonzero pivot there)."""
    tiny = sympy.Float(10, DIGITS) ** -NUMERICAL_DIGITS
    for j, pivot in enumerate(pivots):
        value = sympy.N(pivot.subs(spec.defaults), DIGITS)
        if abs(value) <= tiny * abs(sympy.N(field.to_sympy(rows[j][j]).subs(spec.defaults),
                                            DIGITS)):
            raise _dependence(spec, dependent_row(lower, j, field))


def _dependence(spec, coefficients):
    """The dependence sum_k c_k phi_k = 0 found by LDL^T (row j of L^-1), as an error:
    with coefficients for which SymPy simplifies the combination to 0 ("proven by SymPy"),
    else with the coefficients at the defaults ("numerically")."""
    at_defaults = [sympy.N(sympy.sympify(c).subs(spec.defaults), DIGITS) for c in coefficients]
    scale = max(abs(v) for v in at_defaults)
    rounded = [sympy.nsimplify(v / scale, rational=True, tolerance=1e-30) for v in at_defaults]
    start = "the Gram matrix is singular: the basis is linearly dependent, "
    for candidate in (rounded, coefficients):
        if _simplifies_to_zero(spec, candidate):
            return NotPositiveDefiniteError(
                f"{start}{combination_text(candidate, basis_names(spec))} = 0 on the domain "
                "(proven by SymPy)")
    shown = [sympy.Float(v / scale, 6) for v in at_defaults]
    return NotPositiveDefiniteError(
        f"{start}{combination_text(shown, basis_names(spec))} = 0 on the domain numerically (its "
        f"norm vanishes to {NUMERICAL_DIGITS} digits at the default parameters; SymPy could "
        "not prove it exactly)")


def _simplifies_to_zero(spec, coefficients):
    """True when SymPy simplifies sum_k c_k phi_k to 0 in every component (within
    PROOF_SECONDS); False when it cannot."""
    try:
        with time_limit(PROOF_SECONDS, PROOF):
            return all(sympy.simplify(sum(c * f[r] for c, f in zip(coefficients,
                                                                   spec.functions))) == 0
                       for r in range(len(spec.functions[0])))
    except SymbolicLimitError as error:
        if error.limit != PROOF:
            raise
        return False


def _row_times(row, mapping):
    """(row vector as {k: value}) . mapping, over the mapping's nonzero entries."""
    out = {}
    for (k, i), value in mapping.todok().items():
        if k in row:
            out[i] = out.get(i, 0) + row[k] * value
    return out


def gram_condition(gram, spec):
    """kappa_2(G) at the defaults: max/min for a diagonal G, an mpmath eigensolver up to
    EIGENSOLVER_LIMIT functions, otherwise not computed (nan)."""
    if not isinstance(gram, ExactMatrix):
        gram = ExactMatrix.from_sympy(gram)
    if all(i == j for i, j in gram.keys()):
        values = [sympy.N(v.subs(spec.defaults), DIGITS) for v in gram.todok().values()]
        return mpmath.mpf(str(max(values) / min(values)))
    if gram.shape[0] > EIGENSOLVER_LIMIT:
        return mpmath.nan
    return condition_number(sympy.Matrix(gram.to_sympy()), spec.defaults)


def ldl_certificate(spec, pivots, numerical=False):
    if numerical:
        values = [sympy.N(p, DIGITS) for p in pivots]
        if all(v > 0 for v in values):
            return (f"numerical, to {NUMERICAL_DIGITS} digits: every LDL^T pivot of the "
                    "quadrature Gram matrix is positive")
        bad = next(j for j, v in enumerate(values) if not v > 0)
        raise NotPositiveDefiniteError(f"LDL^T pivot {bad} is {values[bad]}: the quadrature "
                                       "Gram matrix is not positive definite")
    if all(p.is_positive for p in pivots):
        if any(p.free_symbols for p in pivots):
            return "every LDL^T pivot is positive for all positive parameter values"
        return "every LDL^T pivot is a positive exact number"
    values = [sympy.N(p.subs(spec.defaults), DIGITS) for p in pivots]
    if all(v > 0 for v in values):
        return ("every LDL^T pivot is positive at the default parameters "
                "(positivity for other values is not proven)")
    bad = next(j for j, v in enumerate(values) if not v > 0)
    raise NotPositiveDefiniteError(f"LDL^T pivot {bad} is {values[bad]} at the defaults: "
                                   "the Gram matrix is not positive definite")
