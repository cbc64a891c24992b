"""Stage 2: :class:`Spec` -> :class:`Analysis`, the exact mathematics (SymPy).

Gram matrix G (paper Sec. 3.2, called Sigma^{-1} there), its exact LDL^T certificate,
the Cholesky factor R = L D^{1/2} (G = R R^T) and the orthonormal basis e = R^{-1} phi,
stored as e = K . atoms where the atoms are functions the generated module can evaluate
stably (normalized shifted Legendre polynomials for polynomial spaces, the paper's
sinc and Hermite families, or the user's own expressions).
"""
import math
from dataclasses import dataclass

import mpmath
import sympy

from .errors import NotPositiveDefiniteError, SymbolicLimitError
from .symbolic import (DIGITS, condition_number, ldl, simplify_entry, time_limit,
                       unit_lower_inverse)

INTEGRATION_SECONDS = 30
INTEGRATION = "symbolic integration of the Gram matrix"


@dataclass(frozen=True)
class Atoms:
    """Reference functions the generated module evaluates; e = K . atoms."""
    kind: str          # "legendre" | "expression" | "sinc" | "hermite"
    size: int
    shifts: tuple = ()


@dataclass(frozen=True)
class Quadrature:
    """Gauss-Legendre rule per linear piece of a curve (docs/design.md, "Exact analysis").

    ``exact_nodes`` is set when the integrand is a polynomial (the rule is then exact);
    otherwise pieces are cut into sub-pieces of length <= 8/frequency and the order is
    chosen per curve so the truncation term (frequency*h/2)^(2n)/(2n)! <= 1e-17.
    """
    exact_nodes: int = None
    frequency: float = None
    min_nodes: int = 2


@dataclass(frozen=True)
class Analysis:
    """Everything exact the emitter needs, with how each part was obtained."""
    spec: object
    gram: sympy.ImmutableMatrix
    gram_method: str
    lower: sympy.ImmutableMatrix
    pivots: tuple
    certificate: str
    cholesky: sympy.ImmutableMatrix
    transform: sympy.ImmutableMatrix
    atoms: Atoms
    quadrature: Quadrature
    condition_number: float
    numerical: bool

    @property
    def identity(self):
        return self.atoms.kind in ("sinc", "hermite")


def analyze(spec):
    """Compute the exact Gram matrix, certificate and orthonormal basis of a spec."""
    family = spec.family.name if spec.family else None
    if family in ("sinc", "hermite"):
        return _orthonormal_family(spec, family)
    if _is_polynomial_space(spec):
        atoms, mapping, gram, method = _legendre_space(spec)
    else:
        atoms, mapping = Atoms("expression", spec.basis_size), sympy.eye(spec.basis_size)
        gram, method = _expression_gram(spec)
    return _factorize(spec, gram, method, atoms, mapping)


def _names(spec):
    return [", ".join(str(c) for c in f) for f in spec.functions]


def _factorize(spec, gram, method, atoms, mapping):
    numerical = method.startswith("numerical")
    lower, pivots = ldl(gram, _names(spec))
    certificate = _certificate(spec, pivots)
    roots = [sympy.sqrt(p) for p in pivots]
    cholesky = _scaled(lower, columns=roots)
    transform = _scaled(unit_lower_inverse(lower) * mapping, rows=[1 / r for r in roots])
    defaults = spec.defaults
    return Analysis(spec=spec, gram=sympy.ImmutableMatrix(gram), gram_method=method,
                    lower=lower, pivots=pivots, certificate=certificate,
                    cholesky=sympy.ImmutableMatrix(cholesky),
                    transform=sympy.ImmutableMatrix(transform), atoms=atoms,
                    quadrature=_quadrature(spec, atoms),
                    condition_number=condition_number(gram, defaults), numerical=numerical)


def _scaled(matrix, rows=None, columns=None):
    """diag(rows) . matrix . diag(columns), entrywise (no products with zeros)."""
    def entry(i, j):
        value = matrix[i, j]
        if value == 0:
            return value
        return simplify_entry(value * (rows[i] if rows else 1) * (columns[j] if columns else 1))
    return sympy.Matrix(*matrix.shape, entry)


def _certificate(spec, pivots):
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


def _orthonormal_family(spec, family):
    m = spec.basis_size
    identity = sympy.ImmutableSparseMatrix.eye(m)
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
                    condition_number=1.0, numerical=False)


def _is_polynomial_space(spec):
    t = spec.variable
    return (not spec.vector_basis and all(e.is_finite for e in spec.interval)
            and all(f[0].is_polynomial(t) for f in spec.functions))


def _legendre_space(spec):
    """phi = M . L with L_k = sqrt((2k+1)/(b-a)) P_k(u), u = (2t-a-b)/(b-a), exact."""
    t, (a, b) = spec.variable, spec.interval
    u = sympy.Symbol("u", real=True)
    polys = [sympy.Poly(sympy.expand(f[0].subs(t, ((b - a) * u + a + b) / 2)), u)
             for f in spec.functions]
    size = max(p.degree() for p in polys) + 1
    monomial = sympy.Matrix(len(polys), size, lambda j, i: polys[j].coeff_monomial(u ** i))
    legendre = sympy.Matrix(size, size,
                            lambda k, i: sympy.Poly(sympy.legendre(k, u), u).coeff_monomial(u ** i))
    norms = [sympy.sqrt((b - a) / (2 * k + 1)) for k in range(size)]
    mapping = _scaled(monomial * legendre.inv(), columns=norms)
    gram, method = mapping * mapping.T, "exact: Legendre expansion of the basis"
    if spec.metric.sobolev:
        derivative = sympy.Matrix(size, size, lambda k, j: (
            2 * sympy.sqrt((2 * k + 1) * (2 * j + 1)) / (b - a) if j < k and (k - j) % 2 else 0))
        gram = gram + mapping * derivative * derivative.T * mapping.T
        method += " plus the exact Legendre derivative matrix (H^1)"
    if spec.metric.weight is not None:
        gram, method = _expression_gram(spec)
    return Atoms("legendre", size), mapping, gram.applyfunc(simplify_entry), method


def _integrand(spec, j, k):
    t, weight = spec.variable, spec.metric.weight
    total = 0
    for fj, fk in zip(spec.functions[j], spec.functions[k]):
        total += (weight if weight is not None else 1) * fj * fk
        if spec.metric.sobolev:
            total += sympy.diff(fj, t) * sympy.diff(fk, t)
    return total


def _expression_gram(spec):
    """Closed form for the Fourier family, else symbolic integrals, else mpmath quadrature."""
    if spec.family is not None and spec.family.name == "fourier" and spec.metric.kind == "L2":
        length = spec.interval[1] - spec.interval[0]
        diagonal = [length] + [length / 2] * (spec.basis_size - 1)
        return sympy.diag(*diagonal), "closed form: orthogonality of the Fourier basis"
    m, (a, b) = spec.basis_size, spec.interval
    try:
        with time_limit(INTEGRATION_SECONDS, INTEGRATION):
            entries = {}
            for j in range(m):
                for k in range(j + 1):
                    value = sympy.integrate(_integrand(spec, j, k), (spec.variable, a, b))
                    if value.has(sympy.Integral) or not value.is_finite and value.is_number:
                        raise SymbolicLimitError("no closed form", limit=INTEGRATION)
                    entries[j, k] = entries[k, j] = simplify_entry(value)
        return sympy.Matrix(m, m, lambda j, k: entries[j, k]), "exact: symbolic integrals"
    except SymbolicLimitError as error:
        if error.limit != INTEGRATION:
            raise
        return _numerical_gram(spec), (f"numerical: mpmath quadrature at {DIGITS} digits, "
                                       "at the default parameters")


def _numerical_gram(spec):
    m, defaults = spec.basis_size, spec.defaults
    a, b = (sympy.N(e.subs(defaults), DIGITS) if e.is_finite else e for e in spec.interval)
    entries = {}
    with mpmath.workdps(DIGITS):
        for j in range(m):
            for k in range(j + 1):
                function = sympy.lambdify(spec.variable, _integrand(spec, j, k).subs(defaults),
                                          "mpmath")
                value = mpmath.quad(function, [mpmath.mpf(a), mpmath.mpf(b)])
                entries[j, k] = entries[k, j] = sympy.Float(value, DIGITS)
    return sympy.Matrix(m, m, lambda j, k: entries[j, k])


def _quadrature(spec, atoms):
    if atoms.kind == "legendre" and spec.metric.weight is None:
        return Quadrature(exact_nodes=(atoms.size + 2) // 2)
    expressions = [c for f in spec.functions for c in f]
    if spec.metric.weight is not None:
        expressions.append(spec.metric.weight)
    frequency, degree = 0.0, 1
    for expression in expressions:
        f, d = _frequency_and_degree(expression.subs(spec.defaults), spec.variable)
        frequency, degree = max(frequency, f), max(degree, d)
    length = sympy.N((spec.interval[1] - spec.interval[0]).subs(spec.defaults))
    floor = 1.0 / float(length) if length.is_finite else 1.0
    return Quadrature(frequency=max(frequency, floor), min_nodes=degree // 2 + 2)


def _frequency_and_degree(expression, t):
    """Bound the oscillation rate of the transcendental parts and the polynomial degree."""
    frequency, degree = 0.0, 0
    for node in sympy.preorder_traversal(expression):
        if isinstance(node, sympy.Function) and node.args:
            rate = sympy.diff(node.args[0], t)
            frequency = max(frequency, float(abs(rate)) if rate.is_number else 10.0)
        elif isinstance(node, sympy.Pow) and node.base == t and node.exp.is_Integer:
            degree = max(degree, int(node.exp))
        elif node == t:
            degree = max(degree, 1)
    return frequency, degree
