"""Stage 2: :class:`Spec` -> :class:`Analysis`, the exact mathematics (SymPy).

Gram matrix G (paper Sec. 3.2, called Sigma^{-1} there), its exact LDL^T certificate,
a factor R with G = R R^T (user coefficients a <-> orthonormal coordinates c = R^T a)
and the orthonormal basis e = K . atoms, where the atoms are functions the generated
module can evaluate stably (normalized shifted Legendre polynomials for polynomial
spaces, the Fourier, sinc and Hermite families, or the user's own expressions).

Closed forms come first (docs/design.md, "Exact analysis"): orthogonal families have a
diagonal Gram matrix; a polynomial space is mapped to Legendre polynomials by an exact
triangular change of basis C built by recurrence, so G = C D C^T with D diagonal;
symbolic integration, then mpmath quadrature, are the last resorts.
"""
import dataclasses
import itertools
import math
import threading
import time
from dataclasses import dataclass

import mpmath
import numpy
import sympy

from ..errors import NotPositiveDefiniteError, SpecError, SymbolicLimitError
from .symbolic import (DIGITS, ExactMatrix, combination_text, condition_number,
                       dependent_row, exact_ldl, matrix_field, rational_float, simplify_entry,
                       time_limit, unit_lower_inverse)

INTEGRATION_SECONDS = 30
AT_DEFAULTS = "exact at the default parameters only"
CHECK_DIGITS = 12   # symbolic Gram entries agree with mpmath to 1e-12 of their scale
INTEGRATION = "symbolic integration of the Gram matrix"
NUMERICAL_DIGITS = DIGITS - 10
PROOF_SECONDS = 10
PROOF = "a symbolic proof of a linear dependence"
EIGENSOLVER_LIMIT = 40
PROGRESS_AFTER = 2.0


@dataclass(frozen=True)
class Atoms:
    """Reference functions the generated module evaluates; e = K . atoms."""
    kind: str          # "legendre" | "expression" | "fourier" | "sinc" | "hermite"
    size: int
    shifts: tuple = ()
    index: tuple = ()  # on a box: one multi-index per atom, psi_a = prod_i psi_(a_i)(x_i)


@dataclass(frozen=True)
class Quadrature:
    """Gauss-Legendre rule per linear piece of a curve (docs/design.md, "Exact analysis").

    ``exact_nodes`` is set when the integrand is a polynomial (the rule is then exact);
    otherwise pieces are cut into sub-pieces of length <= 8/frequency and the order is
    chosen per curve so the truncation term (frequency*h/2)^(2n)/(2n)! <= 1e-17.
    ``singular`` lists (endpoint, exponent) where the weight behaves like |t - end|^alpha:
    pieces there are graded geometrically towards the endpoint.
    """
    exact_nodes: int = None
    frequency: float = None
    min_nodes: int = 2
    singular: tuple = ()


@dataclass(frozen=True)
class Analysis:
    """Everything exact the emitter needs, with how each part was obtained."""
    spec: object
    gram: ExactMatrix
    gram_method: str
    lower: ExactMatrix
    pivots: tuple
    certificate: str
    cholesky: ExactMatrix
    transform: ExactMatrix
    atoms: Atoms
    quadrature: Quadrature
    condition_number: object
    numerical: bool
    formulas: tuple = ()      # (matrix name, closed form of its entries)
    factors: tuple = ()       # on a box with a tensor-product basis: the 1-D analyses

    @property
    def identity(self):
        return self.atoms.kind in ("sinc", "hermite")

    @property
    def parameters_fixed(self):
        """Whether G holds at the default parameter values only (then modules refuse others)."""
        return self.numerical or self.gram_method.startswith(AT_DEFAULTS)


class Stages:
    """Report the current stage through ``progress`` once a compile has run > 2 s."""

    def __init__(self, progress, label):
        self.progress, self.label, self.start = progress, label, time.monotonic()
        self.current, self.shown, self.timer = None, set(), None
        if progress:
            self.timer = threading.Timer(PROGRESS_AFTER, self._show)
            self.timer.daemon = True
            self.timer.start()

    def __call__(self, stage):
        self.current = stage
        if self.progress and time.monotonic() - self.start > PROGRESS_AFTER:
            self._show()

    def _show(self):
        stage = self.current
        if stage is not None and stage not in self.shown:
            self.shown.add(stage)
            self.progress(f"{self.label}: {stage} ({time.monotonic() - self.start:.0f} s)")

    def close(self):
        if self.timer:
            self.timer.cancel()


def analyze(spec, stage=None):
    """Compute the exact Gram matrix, certificate and orthonormal basis of a spec;
    ``stage(name)`` (a :class:`Stages`) hears each stage as it starts."""
    return _analyze(spec, stage or (lambda name: None))


def _analyze(spec, stage):
    stage("Gram matrix")
    if spec.dimension > 1:
        from .box import analyze_box
        return analyze_box(spec, stage)
    family = spec.family.name if spec.family else None
    if family in ("sinc", "hermite"):
        return _orthonormal_family(spec, family)
    plain = spec.metric.kind == "L2"
    if family == "fourier" and plain:
        return _fourier(spec)
    if plain and _is_polynomial_space(spec):
        return _polynomial_space(spec, stage)
    _check_weight(spec)
    if _is_polynomial_space(spec):
        atoms, mapping, gram, method = _legendre_space(spec)
    else:
        atoms, mapping = Atoms("expression", spec.basis_size), None
        gram, method = _sinc_gram(spec) or _expression_gram(spec)
    return _factorize(spec, gram, method, atoms, mapping, stage)


def _names(spec):
    return [", ".join(str(c) for c in f) for f in spec.functions]


def _sparse(m, n, entries):
    entries = {k: v for k, v in entries.items() if v != 0}
    return ExactMatrix((m, n), entries, constant=not any(v.free_symbols for v in entries.values()))


def _identity(m):
    return ExactMatrix((m, m), {(k, k): sympy.Integer(1) for k in range(m)})


def _factorize(spec, gram, method, atoms, mapping, stage):
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
        lower, pivots = exact_ldl(rows, field, _names(spec),
                                  NUMERICAL_DIGITS if numerical else None)
    except NotPositiveDefiniteError as error:
        if not numerical:
            raise       # an exactly zero pivot: the dependence is proven
        raise _dependence(spec, error.coefficients) from None
    pivots = tuple(simplify_entry(field.to_sympy(p)) for p in pivots)
    if not numerical:
        _hidden_dependence(spec, lower, field, pivots, rows)
    certificate = _certificate(spec, pivots, numerical)
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
                    lower=_sparse(m, m, lower_sympy), pivots=pivots, certificate=certificate,
                    cholesky=_sparse(m, m, cholesky), transform=_sparse(m, size, transform),
                    atoms=atoms, quadrature=_quadrature(spec, atoms),
                    condition_number=_condition(gram, spec), numerical=numerical)


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
                f"{start}{combination_text(candidate, _names(spec))} = 0 on the domain "
                "(proven by SymPy)")
    shown = [sympy.Float(v / scale, 6) for v in at_defaults]
    return NotPositiveDefiniteError(
        f"{start}{combination_text(shown, _names(spec))} = 0 on the domain numerically (its "
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


def _condition(gram, spec):
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


def _certificate(spec, pivots, numerical=False):
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


def _check_weight(spec):
    """A weight must not be negative (or complex) inside the domain: test it at rational
    points, with guaranteed-accuracy evaluation (isolated zeros are allowed)."""
    weight = spec.metric.weight
    if weight is None:
        return
    axes = []
    for interval in spec.intervals:
        a, b = (e.subs(spec.defaults) for e in interval)
        a = a if a.is_finite else (b - 64 if b.is_finite else sympy.Integer(-32))
        b = b if b.is_finite else a + 64
        steps = round(64 ** (1 / spec.dimension))
        axes.append([a + (b - a) * sympy.Rational(k, steps) for k in range(1, steps)])
    values = []
    for point in itertools.chain(itertools.product(*axes), _weight_minima(spec, axes)):
        value = sympy.N(weight.subs(spec.defaults).subs(dict(zip(spec.variables, point))), DIGITS)
        point = tuple(c if isinstance(c, sympy.Rational) and c.q <= 1000 else sympy.N(c, 8)
                      for c in point)
        point = point[0] if spec.dimension == 1 else point
        if value.is_infinite:
            problem = f"the weight {weight} is unbounded inside the domain: w({point}) = oo"
        elif not (value.is_real and value >= 0):
            problem = (f"the weight {weight} is not positive on the domain: w({point}) = "
                       f"{sympy.N(value, 6)}")
        else:
            values.append(value)
            continue
        raise SpecError([("metric.weight", problem)], spec.path)
    if not any(values):
        raise SpecError([("metric.weight", f"the weight {weight} is 0 at every point tried: "
                                           "expected a positive weight")], spec.path)


def _weight_minima(spec, axes, points=2 ** 18):
    """Candidate points where the weight may be negative between the rational test points:
    for a polynomial weight in one variable, a point inside each interval between
    consecutive real roots in the domain (exact: a sign change needs a root of odd
    multiplicity); otherwise the smallest value on a float64 grid of about ``points``
    points (then checked with guaranteed accuracy like the others)."""
    weight = spec.metric.weight.subs(spec.defaults)
    lo, hi = [min(a) for a in axes], [max(a) for a in axes]
    if spec.dimension == 1 and weight.is_polynomial(spec.variable):
        roots = sorted(r for r in sympy.Poly(weight, spec.variable).real_roots()
                       if lo[0] < r < hi[0])
        ends = [lo[0]] + roots + [hi[0]]
        return [((p + q) / 2,) for p, q in zip(ends[:-1], ends[1:])]
    per_axis = round(points ** (1 / spec.dimension))
    grids = [numpy.linspace(float(a), float(b), per_axis) for a, b in zip(lo, hi)]
    with numpy.errstate(all="ignore"):
        mesh = numpy.meshgrid(*grids, indexing="ij")
        values = numpy.broadcast_to(sympy.lambdify(spec.variables, weight, "numpy")(*mesh),
                                    mesh[0].shape).astype(complex)
    score = numpy.where(numpy.isfinite(values), values.real - numpy.abs(values.imag), -numpy.inf)
    index = numpy.unravel_index(numpy.argmin(score), score.shape)
    return [tuple(sympy.Rational(float(g[i])) for g, i in zip(grids, index))]


def _orthonormal_family(spec, family):
    m = spec.basis_size
    identity = _identity(m)
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
    identity = _identity(m)
    transform = (_sparse(m, m, {(k, k): 1 / r for k, r in enumerate(roots)})
                 if transform_scaled else identity)
    values = [sympy.N(d.subs(spec.defaults), DIGITS) for d in diagonal]
    exact = all(d.is_positive for d in diagonal)
    certificate = (f"G is diagonal with {'exact ' if exact else ''}positive entries: "
                   "every LDL^T pivot is a diagonal entry")
    if not exact:
        certificate += " (positivity proven at the default parameters only)"
    return Analysis(spec=spec, gram=_sparse(m, m, {(k, k): d for k, d in enumerate(diagonal)}),
                    gram_method=method, lower=identity, pivots=tuple(diagonal),
                    certificate=certificate,
                    cholesky=_sparse(m, m, {(k, k): r for k, r in enumerate(roots)}),
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
    return _with(analysis, quadrature=_quadrature(spec, analysis.atoms),
                 formulas=(("gram", "G = diag(b - a, (b - a)/2, ..., (b - a)/2)"),))


def _with(analysis, **changes):
    return Analysis(**{**analysis.__dict__, **changes})


def _is_polynomial_space(spec):
    t = spec.variable
    if spec.vector_basis or not all(e.is_finite for e in spec.interval):
        return False
    if spec.family is not None:
        return spec.family.name in ("monomial", "legendre")
    return all(f[0].is_polynomial(t) for f in spec.functions)


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


def _polynomial_space(spec, stage):
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
        analysis = _factorize(spec, gram.to_sympy(), "exact: Legendre expansion of the basis",
                              atoms, change.to_sympy(), stage)
        return _with(analysis, formulas=tuple(formulas))
    stage("certificate")
    pivots = tuple(simplify_entry(field.to_sympy(rows[j][j] ** 2 * norms[j])) for j in range(m))
    certificate = ("G = C D C^T, C the exact triangular change of basis to Legendre "
                   "(nonzero diagonal), D_k = (b - a)/(2k + 1) > 0: every LDL^T pivot "
                   "C_kk^2 D_k is positive") if constant else _certificate(spec, pivots)
    lower = ExactMatrix((m, m), {(i, j): (v, j) for i, row in enumerate(rows)
                                 for j, v in row.items()},    # L = C diag(C)^-1, on demand
                        lambda entry: field.to_sympy(entry[0] / rows[entry[1]][entry[1]]))
    stage("orthonormal basis")
    formulas.append(("cholesky", "R[j, k] = C[j, k] sqrt((b - a)/(2k + 1)) where "
                                 "phi_j = sum_k C[j, k] P_k(u)"))
    return Analysis(spec=spec, gram=gram, gram_method="exact: Legendre expansion of the basis "
                    "(triangular change of basis C, G = C D C^T)", lower=lower, pivots=pivots,
                    certificate=certificate, cholesky=change, transform=_identity(m),
                    atoms=atoms, quadrature=_quadrature(spec, atoms),
                    condition_number=_condition(gram, spec), numerical=False,
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
        from .box import tensor_legendre_expansion
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


def _legendre_space(spec):
    """phi = M . L with L_k = sqrt((2k+1)/(b-a)) P_k(u), u = (2t-a-b)/(b-a), exact
    (weighted or Sobolev metrics on a polynomial space)."""
    field, rows, norms, atoms = legendre_expansion(spec)
    size = atoms.size
    norms = [sympy.sqrt(simplify_entry(field.to_sympy(n))) for n in norms]
    mapping = sympy.Matrix(len(rows), size, lambda j, k: (
        simplify_entry(field.to_sympy(rows[j][k]) * norms[k]) if k in rows[j] else 0))
    gram, method = mapping * mapping.T, "exact: Legendre expansion of the basis"
    weighted = _weighted_atom_gram(spec, atoms) if spec.metric.weight is not None else None
    if weighted is not None:
        return atoms, mapping, (mapping * weighted[0] * mapping.T).applyfunc(
            _keep_float), f"{weighted[1]}; Legendre expansion of the basis"
    if spec.metric.weight is not None or spec.dimension > 1:
        gram, method = _expression_gram(spec)
        return atoms, mapping, gram.applyfunc(simplify_entry), method
    lo, hi = spec.interval
    if spec.metric.sobolev:
        derivative = sympy.Matrix(size, size, lambda k, j: (
            2 * sympy.sqrt((2 * k + 1) * (2 * j + 1)) / (hi - lo) if j < k and (k - j) % 2 else 0))
        gram = gram + mapping * derivative * derivative.T * mapping.T
        method += " plus the exact Legendre derivative matrix (H^1)"
    return atoms, mapping, gram.applyfunc(simplify_entry), method


def _weighted_atom_gram(spec, atoms):
    """(W, method), W_ab = int psi_a psi_b w over the Legendre atoms: from the weight's
    moments in 1-D, as a product of such factors for a separable weight over a box; None
    for a weight over a box that does not separate."""
    if spec.dimension == 1:
        return weighted_legendre_gram(spec, atoms.size)
    from .box import separable_atom_gram
    return separable_atom_gram(spec, atoms)


def _integrate(expression, *limits, **options):
    """sympy.integrate; SymPy's own failures inside (a TypeError from a series expansion,
    say) mean no closed form, as a timeout does: the caller falls back to mpmath."""
    try:
        return sympy.integrate(expression, *limits, **options)
    except (TypeError, ValueError, NotImplementedError, ZeroDivisionError,
            AttributeError, RecursionError) as error:
        raise SymbolicLimitError(f"SymPy failed: {type(error).__name__}",
                                 limit=INTEGRATION) from None


def weighted_legendre_gram(spec, size):
    """(W, method): W_pq = int L_p L_q w dt for the normalized Legendre atoms L_0..L_(size-1)
    of a 1-D spec with a weight, from the weight's Legendre moments nu_n = int P_n(u) w dt,
    n <= 2 size - 2, and the exact linearization of P_p P_q (Adams):
    P_p P_q = sum_r A_(p-r) A_r A_(q-r) / A_(p+q-r) (2p+2q-4r+1)/(2p+2q-2r+1) P_(p+q-2r),
    A_r = binomial(2r, r)/4^r. The moments are exact (symbolic integrals of t^k w, within
    INTEGRATION_SECONDS in all) or tanh-sinh at 2 DIGITS (numerical, robust to the end
    singularities d^alpha, alpha > -1, that _weight_singularities admits)."""
    _weight_singularities(spec)
    moments, method = _legendre_moments(spec, 2 * size - 1)
    lo, hi = spec.interval
    A = [sympy.binomial(2 * r, r) / sympy.Integer(4) ** r for r in range(2 * size)]

    def entry(p, q):
        total = sum(A[p - r] * A[r] * A[q - r] / A[p + q - r]
                    * sympy.Rational(2 * p + 2 * q - 4 * r + 1, 2 * p + 2 * q - 2 * r + 1)
                    * moments[p + q - 2 * r] for r in range(min(p, q) + 1))
        return _keep_float(sympy.sqrt((2 * p + 1) * (2 * q + 1)) / (hi - lo) * total)
    return sympy.Matrix(size, size, entry), method


def _keep_float(value):
    """simplify_entry for exact values; numerical ones stay Floats (never guessed back)."""
    return value if value.has(sympy.Float) else simplify_entry(sympy.expand(value))


def _legendre_moments(spec, count):
    """nu_n = int_a^b P_n(u) w dt, n < count: exact, else numerical (see above)."""
    t, (lo, hi), weight = spec.variable, spec.interval, spec.metric.weight
    u = (2 * t - lo - hi) / (hi - lo)
    jacobi = _jacobi_form(weight, t, lo, hi)
    try:
        with time_limit(INTEGRATION_SECONDS, INTEGRATION):
            powers = [] if jacobi is None else _jacobi_moments(*jacobi, lo, hi, count)
            for k in range(len(powers), count):
                value = _integrate(t ** k * weight, (t, lo, hi), meijerg=False)
                if value.has(sympy.Integral):   # Meijer G last: often far slower
                    value = _integrate(t ** k * weight, (t, lo, hi))
                if value.has(sympy.Integral, sympy.Piecewise) or not value.is_finite:
                    raise SymbolicLimitError("no closed form", limit=INTEGRATION)
                powers.append(value)
        moments = []
        for n in range(count):
            poly = sympy.Poly(sympy.expand(sympy.legendre(n, u)), t)
            moments.append(simplify_entry(sum(c * powers[k] for (k,), c in poly.terms())))
        how = ("in closed form (w = c (t - a)^alpha (b - t)^beta: Beta functions)"
               if jacobi else "by symbolic integration")
        return moments, (f"exact: the weight's moments int t^k w dt {how}, combined exactly "
                         "by the linearization of P_p P_q")
    except SymbolicLimitError as error:
        if error.limit != INTEGRATION:
            raise
    a, b = _mp_interval(spec)
    function = sympy.lambdify(t, weight.subs(spec.defaults), "mpmath")
    with mpmath.workdps(2 * DIGITS):
        moments = [sympy.Float(mpmath.quad(
            lambda v, n=n: mpmath.legendre(n, (2 * v - a - b) / (b - a)) * function(v), [a, b]),
            2 * DIGITS) for n in range(count)]
    return moments, (f"numerical: the weight's moments int P_n(u) w dt by mpmath tanh-sinh at "
                     f"{2 * DIGITS} digits, at the default parameters, combined by the exact "
                     "linearization of P_p P_q")


def _jacobi_form(weight, t, lo, hi):
    """(c, alpha, beta) with w = c (t - lo)^alpha (b - t)^beta exactly on (lo, hi), c > 0,
    when every factor of w in t is a power of a polynomial whose roots are the ends."""
    constant, exponents = sympy.Integer(1), {lo: sympy.Integer(0), hi: sympy.Integer(0)}
    for factor in sympy.Mul.make_args(weight):
        base, power = factor.as_base_exp()
        if not factor.has(t):
            constant *= factor
            continue
        if power.has(t) or not base.is_polynomial(t):
            return None
        lead, parts = sympy.factor_list(base, t)
        for g, m in parts:
            poly = sympy.Poly(g, t)
            if poly.degree() != 1:
                return None
            slope, root = poly.LC(), -poly.nth(0) / poly.LC()
            end = next((e for e in (lo, hi) if sympy.simplify(root - e) == 0), None)
            if end is None:
                return None
            lead *= (slope if end == lo else -slope) ** m
            exponents[end] += m * power
        if lead.is_positive is not True:
            return None
        constant *= lead ** power
    return constant, exponents[lo], exponents[hi]


def _jacobi_moments(constant, alpha, beta, lo, hi, count):
    """int_lo^hi t^k c (t - lo)^alpha (hi - t)^beta dt, k < count, with t = lo + L s:
    c L^(1 + alpha + beta) sum_j binomial(k, j) lo^(k-j) L^j B(j + alpha + 1, beta + 1)."""
    length = hi - lo

    def beta_function(p, q):
        return sympy.gamma(p) * sympy.gamma(q) / sympy.gamma(p + q)
    return [simplify_entry(sympy.gammasimp(constant * length ** (1 + alpha + beta) * sum(
        sympy.binomial(k, j) * lo ** (k - j) * length ** j
        * beta_function(j + alpha + 1, beta + 1) for j in range(k + 1))))
        for k in range(count)]


def _sinc_gram(spec):
    """Closed form for sinc(alpha t - beta_j) on R: G_jk = sinc(beta_j - beta_k)/|alpha|."""
    if spec.interval != (-sympy.oo, sympy.oo) or spec.vector_basis or spec.metric.kind != "L2":
        return None
    t, pieces = spec.variable, []
    for (f,) in spec.functions:
        if not isinstance(f, sympy.sinc):
            return None
        argument = sympy.expand(f.args[0] / sympy.pi)
        alpha = sympy.simplify(sympy.diff(argument, t))
        beta = sympy.simplify(argument - alpha * t)
        if alpha.has(t) or beta.has(t) or alpha.is_positive is not True:
            return None
        pieces.append((alpha, beta))
    alpha = pieces[0][0]
    if any(sympy.simplify(p[0] - alpha) != 0 for p in pieces):
        return None
    m = len(pieces)
    entries = {}
    for j in range(m):
        for k in range(j + 1):
            value = simplify_entry(sympy.sinc(sympy.pi * (pieces[j][1] - pieces[k][1])) / alpha)
            entries[j, k] = entries[k, j] = value
    return (sympy.Matrix(m, m, lambda j, k: entries[j, k]),
            "closed form: int sinc(a t - b_j) sinc(a t - b_k) dt = sinc(b_j - b_k)/a on R")


def _integrand(spec, j, k):
    weight = spec.metric.weight
    total = 0
    for fj, fk in zip(spec.functions[j], spec.functions[k]):
        total += (weight if weight is not None else 1) * fj * fk
        if spec.metric.sobolev:
            total += sum(sympy.diff(fj, t) * sympy.diff(fk, t) for t in spec.variables)
    return total


def _expression_gram(spec):
    """Symbolic integrals (iterated over a box), else mpmath quadrature (docs/design.md,
    "Exact analysis")."""
    m, box = spec.basis_size, [(t, a, b) for t, (a, b) in zip(spec.variables, spec.intervals)]
    try:
        with time_limit(INTEGRATION_SECONDS, INTEGRATION):
            entries = {}
            for j in range(m):
                for k in range(j + 1):
                    value = _integrate(_integrand(spec, j, k), *box)
                    if value.has(sympy.Integral):
                        raise SymbolicLimitError("no closed form", limit=INTEGRATION)
                    if value.is_number and not value.is_finite and spec.dimension == 1:
                        _not_integrable(spec, j if j == k else None)
                        raise SymbolicLimitError("infinite entry", limit=INTEGRATION)
                    entries[j, k] = entries[k, j] = simplify_entry(value)
    except SymbolicLimitError as error:
        if error.limit != INTEGRATION:
            raise
        return _numerical_gram(spec), _numerical_method(spec)
    problem, wrong_at_defaults = _closed_form_problem(spec, entries)
    if wrong_at_defaults:
        return _numerical_gram(spec), f"{_numerical_method(spec)} ({problem})"
    if problem is not None:
        return (sympy.Matrix(m, m, lambda j, k: entries[j, k].subs(spec.defaults)),
                f"{AT_DEFAULTS}: symbolic integrals checked against mpmath there ({problem})")
    return sympy.Matrix(m, m, lambda j, k: entries[j, k]), (
        f"exact: symbolic integrals, each checked against mpmath quadrature to "
        f"1e-{CHECK_DIGITS} of sqrt(G_jj G_kk)")


def _numerical_method(spec):
    return (f"numerical: mpmath quadrature ({_cubature(spec)}) at {DIGITS} digits, at the "
            "default parameters")


def _closed_form_problem(spec, entries):
    """(why the closed forms cannot be used for every parameter value, or None; whether
    they are wrong at the defaults themselves): an entry disagrees with mpmath at the
    defaults (then cubature replaces them), or, with parameters, at the defaults times 3/2,
    or is piecewise in the parameters (Min, Max, Piecewise: SymPy's case split can be right
    at the defaults and wrong elsewhere); then G is used at the defaults only."""
    wrong = _disagreeing_entry(spec, entries)
    if wrong is not None:
        return f"SymPy's closed form of G[{wrong[0]}, {wrong[1]}] disagreed with mpmath", True
    if not spec.parameters:
        return None, False
    if any(v.has(sympy.Min, sympy.Max, sympy.Piecewise, sympy.Heaviside, sympy.sign)
           for v in entries.values()):
        return "the closed form is piecewise in the parameters", False
    moved = dataclasses.replace(spec, parameters=tuple(
        (symbol, value * sympy.Rational(3, 2)) for symbol, value in spec.parameters))
    wrong = _disagreeing_entry(moved, entries)
    if wrong is not None:
        return (f"SymPy's closed form of G[{wrong[0]}, {wrong[1]}] disagreed with mpmath at "
                "the parameters times 3/2"), False
    return None, False


def _disagreeing_entry(spec, entries):
    """The first (j, k) whose closed form, at the default parameters, differs from mpmath
    quadrature (_quad) by more than 10^-CHECK_DIGITS sqrt(G_jj G_kk), the entry's
    Cauchy-Schwarz scale; None when all agree. SymPy can return a wrong closed form (0 for
    some positive integrands over a box); where the quadrature's own error estimate is
    larger, the difference must exceed ten times that estimate."""
    with mpmath.workdps(CHECK_DIGITS + 10):
        quad = {(j, k): _quad(spec, _integrand(spec, j, k), CHECK_DIGITS)
                for j, k in sorted(key for key in entries if key[0] >= key[1])}
        for (j, k), (value, error) in sorted(quad.items(), key=lambda item: item[0][::-1]):
            tolerance = mpmath.mpf(10) ** -CHECK_DIGITS * mpmath.sqrt(
                abs(quad[j, j][0] * quad[k, k][0]))
            closed = mpmath.mpmathify(sympy.N(entries[j, k].subs(spec.defaults),
                                              CHECK_DIGITS + 10))
            if abs(closed - value) > tolerance + 10 * error:
                return j, k
    return None


def _pole_abscissae(expression, spec, a, b):
    """Real parts, strictly inside (a, b), of the roots of the denominator of a rational
    ``expression`` in the variable (numerical; none for other expressions)."""
    t = spec.variable
    denominator = sympy.denom(sympy.together(expression.subs(spec.defaults)))
    if not denominator.has(t) or not denominator.is_polynomial(t):
        return []
    try:
        roots = sympy.Poly(denominator, t).sqf_part().nroots(maxsteps=500)
    except mpmath.libmp.libhyper.NoConvergence:
        return []
    abscissae = [mpmath.mpf(str(sympy.re(r))) for r in roots]
    return [x for x in abscissae if a < x < b]


def _cubature(spec):
    """tanh-sinh in 1-D and for a weight singular on the box's boundary (robust to end
    singularities); Gauss-Legendre over a box otherwise (far faster in 2-D/3-D)."""
    if spec.dimension == 1:
        return "tanh-sinh"
    from .box import weight_singularities
    return "tanh-sinh" if weight_singularities(spec) else "gauss-legendre"


def _quad(spec, expression, digits):
    """(value, error estimate) of the integral of ``expression`` (at the default parameters)
    over the domain by _cubature: in 1-D split at the real parts of its poles inside the
    interval (tanh-sinh then converges at a narrow peak); over a box by Gauss-Legendre,
    again on 4^k sub-boxes (4 equal parts per variable) when the whole box's error
    estimate exceeds 10^-digits of the value."""
    method = _cubature(spec)
    function = sympy.lambdify(spec.variables, expression.subs(spec.defaults), "mpmath")
    box = [_split(*_mp_interval(spec, interval)) for interval in spec.intervals]
    if spec.dimension == 1:
        ends = box[0]
        box = [sorted(set(ends) | set(_pole_abscissae(expression, spec, ends[0], ends[-1])))]
    value, error = mpmath.quad(function, *box, method=method, error=True)
    if method == "gauss-legendre" and not error <= mpmath.mpf(10) ** -digits * abs(value):
        box = [mpmath.linspace(a, b, 5) for a, b in box]
        value, error = mpmath.quad(function, *box, method=method, error=True)
    return value, error


def _mp_interval(spec, interval=None):
    def value(e):
        if e in (sympy.oo, -sympy.oo):
            return mpmath.inf if e > 0 else -mpmath.inf
        return mpmath.mpf(sympy.Float(sympy.N(e.subs(spec.defaults), DIGITS + 10), DIGITS + 10)._mpf_)
    return [value(e) for e in (interval or spec.interval)]


def _numerical_gram(spec):
    """mpmath quadrature (_cubature): tanh-sinh maps +-oo to a finite interval and is
    robust to integrable endpoint singularities, at twice DIGITS because a node at distance
    d from an end carries only (precision - log10 1/d) digits of d (Gauss-Legendre over a
    box: DIGITS + 10). Each diagonal entry is first checked for integrability (1-D)."""
    m = spec.basis_size
    method = _cubature(spec)   # over a box Gauss-Legendre, its errors checked
    entries, errors = {}, {}
    with mpmath.workdps(2 * DIGITS if method == "tanh-sinh" else DIGITS + 10):
        for j in range(m if spec.dimension == 1 else 0):
            _not_integrable(spec, j)
        for j in range(m):
            for k in range(j + 1):
                value, errors[j, k] = _quad(spec, _integrand(spec, j, k), DIGITS)
                entries[j, k] = entries[k, j] = sympy.Float(value, DIGITS)
        if method == "gauss-legendre":
            _check_cubature(spec, entries, errors)
    return sympy.Matrix(m, m, lambda j, k: entries[j, k])


def _check_cubature(spec, entries, errors):
    """Refuse a Gram matrix over a box whose cubature error estimate exceeds 10^-CHECK_DIGITS
    of an entry's scale sqrt(G_jj G_kk) (a peak or a singularity the rule does not
    resolve): a wrong Gram matrix would make the projection expansive."""
    for (j, k), error in sorted(errors.items()):
        scale = mpmath.sqrt(abs(mpmath.mpf(entries[j, j]) * mpmath.mpf(entries[k, k])))
        if not error <= mpmath.mpf(10) ** -CHECK_DIGITS * scale:
            raise SpecError([("basis.functions", f"the Gram matrix has no closed form and "
                                                 f"cubature cannot integrate G[{j}, {k}] to "
                                                 f"1e-{CHECK_DIGITS} of its scale over the box "
                                                 f"(error estimate {mpmath.nstr(error, 3)}: "
                                                 "a sharp peak or a singularity?)")],
                            spec.path)


def _split(a, b):
    """Integration points: finite intervals as they are, infinite ones cut at 0 (+-1)."""
    if mpmath.isinf(a) and mpmath.isinf(b):
        return [a, 0, b]
    return [a, b]


def _not_integrable(spec, j):
    """Raise a one-line SpecError if basis function j is not square-integrable (naming the
    endpoint); do nothing when it is, or when j is None and no culprit is found."""
    candidates = range(spec.basis_size) if j is None else [j]
    a, b = _mp_interval(spec)
    for index in candidates:
        function = sympy.lambdify(spec.variable, _integrand(spec, index, index).subs(spec.defaults),
                                  "mpmath")
        for end, other, shown in ((a, b, spec.interval[0]), (b, a, spec.interval[1])):
            if _diverges(function, end, other):
                key = "basis.family" if spec.family else f"basis.functions[{index}]"
                raise SpecError([(key, f"{_names(spec)[index]} is not square-integrable "
                                       f"near t = {shown}")], spec.path)


def _diverges(function, end, other):
    """Integrals over dyadic windows shrinking to a finite ``end`` (growing to +-oo) shrink
    geometrically when the integral converges; equal or growing ones mean divergence."""
    with mpmath.workdps(30):
        if mpmath.isinf(end):
            sign = 1 if end > 0 else -1
            windows = [(sign * mpmath.mpf(2) ** n, sign * mpmath.mpf(2) ** (n + 1)) for n in (24, 40)]
        else:
            toward = 1 if other > end else -1
            width = min(abs(other - end) / 2, 1)
            windows = [(end + toward * width * mpmath.mpf(2) ** -(n + 1),
                        end + toward * width * mpmath.mpf(2) ** -n) for n in (24, 40)]
        try:
            tails = [abs(mpmath.quad(function, sorted(w))) for w in windows]
        except (ZeroDivisionError, ValueError, OverflowError):
            return True
    return not all(mpmath.isfinite(v) for v in tails) or 0 < 0.9 * tails[0] <= tails[1]


def _quadrature(spec, atoms):
    if spec.dimension > 1:
        from .box import box_quadrature
        return box_quadrature(spec, atoms)
    if atoms.kind == "legendre" and spec.metric.weight is None:
        return Quadrature(exact_nodes=(atoms.size + 2) // 2)
    length = sympy.N((spec.interval[1] - spec.interval[0]).subs(spec.defaults))
    frequency, degree = 0.0, 1
    if atoms.kind == "fourier":    # the highest harmonic, without scanning 2K+1 expressions
        frequency = 2 * math.pi * (spec.basis_size // 2) / float(length)
    else:
        expressions = [c for f in spec.functions for c in f]
        if spec.metric.weight is not None:
            expressions.append(spec.metric.weight)
        for expression in expressions:
            f, d = _frequency_and_degree(expression.subs(spec.defaults), spec.variable)
            frequency, degree = max(frequency, f), max(degree, d)
    floor = 1.0 / float(length) if length.is_finite else 1.0
    frequency, singular = max(frequency, floor), _weight_singularities(spec)
    if atoms.kind == "expression" and not singular:
        frequency = _verified_frequency(spec, frequency, degree // 2 + 2)
    return Quadrature(frequency=frequency, min_nodes=degree // 2 + 2, singular=singular)


def gauss_order(half_width, min_nodes):
    """Gauss-Legendre order whose truncation term (half-width x frequency)^(2n)/(2n)! is
    <= 1e-17, at least ``min_nodes``, at most 40 (copied into generated modules)."""
    order = min_nodes
    while order < 40 and (2 * order * math.log(half_width + 1e-300)
                          - math.lgamma(2 * order + 1)) > math.log(1e-17):
        order += 1
    return order


def _verified_frequency(spec, frequency, min_nodes):
    """verified_frequency for the basis components times the weight on the curve interval
    (a frequency bound is kept as is on an infinite one)."""
    interval = spec.curve_interval or spec.interval
    lo, hi = (float(sympy.N(e.subs(spec.defaults))) for e in interval)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return frequency
    return verified_frequency(weighted_components(spec), spec.variable, (lo, hi), frequency,
                              min_nodes, spec.path)


def weighted_components(spec):
    """Every component of every basis function times the weight, at the default parameters:
    the integrands whose Gauss rules are verified."""
    weight = spec.metric.weight if spec.metric.weight is not None else sympy.Integer(1)
    return [(c * weight).subs(spec.defaults) for f in spec.functions for c in f]


def verified_frequency(expressions, t, interval, frequency, min_nodes, path, doublings=12):
    """The smallest frequency 2^k * ``frequency`` whose Gauss rules (as the module picks
    them, for sub-pieces of every length 8/frequency / 2^j down to the shortest order)
    integrate every expression in t times 1 - s and s on tiles of the interval to 1e-13 of
    their scale, checked against mpmath (numerical). The symbolic frequency bound misses
    rates such as sin(t)**15 or a pole near the interval."""
    lo, hi = interval
    frequency = max([frequency] + [_feature_frequency(e, t, lo, hi) for e in expressions])
    functions = []
    for expression in expressions:
        function = sympy.lambdify(t, expression, "mpmath")
        size = max(abs(float(mpmath.re(function(mpmath.mpf(float(x))))))
                   for x in numpy.linspace(lo, hi, 257)) + 1e-300
        functions.append((function, size))
    for _ in range(doublings):
        if _rules_hold(functions, lo, hi, frequency, min_nodes):
            return frequency
        frequency *= 2
    raise SpecError([("basis.functions", f"no Gauss rule up to frequency {frequency:g} "
                                         "integrates the basis accurately on "
                                         f"[{lo:g}, {hi:g}]")], path)


def _feature_frequency(expression, t, lo, hi):
    """A frequency for local features the symbolic bound misses: 4/d for a pole (a root of
    a polynomial denominator) at distance d > 0 from [lo, hi], so sub-pieces stay within
    its region of analyticity, and the largest |d(argument)/dt| of every function on a
    grid of the interval (numerical)."""
    frequency, grid = 0.0, numpy.linspace(lo, hi, 4097)
    for node in sympy.preorder_traversal(expression):
        if isinstance(node, sympy.Pow) and node.exp.is_negative and node.base.is_polynomial(t) \
                and node.base.has(t):
            for root in sympy.Poly(node.base, t).nroots():
                z = complex(root)
                gap = abs(z.imag) if lo <= z.real <= hi else abs(z - min((lo, hi),
                                                                      key=lambda e: abs(z - e)))
                if gap > 0:
                    frequency = max(frequency, 4 / gap)
        elif isinstance(node, sympy.Function) and node.args and node.args[0].has(t):
            rate = sympy.lambdify(t, sympy.diff(node.args[0], t), "numpy")
            with numpy.errstate(all="ignore"):
                values = numpy.abs(numpy.broadcast_to(rate(grid), grid.shape).astype(complex))
            if numpy.isfinite(values).any():
                frequency = max(frequency, float(numpy.nanmax(values[numpy.isfinite(values)])))
    return frequency


def _rules_hold(functions, lo, hi, frequency, min_nodes):
    """Whether the module's rules are accurate for every sub-piece length it may use."""
    width = min(8.0 / frequency, hi - lo)
    while True:
        order = gauss_order(width * frequency / 2, min_nodes)
        nodes, weights = numpy.polynomial.legendre.leggauss(order)
        for start in numpy.unique(numpy.linspace(lo, hi - width, 4)):
            if not all(_tile_holds(f, size, start, width, nodes, weights)
                       for f, size in functions):
                return False
        if order == min_nodes or width < (hi - lo) * 1e-6:
            return True
        width /= 2


def _tile_holds(function, size, start, width, nodes, weights):
    """The Gauss rule's truncation error, against mpmath, for the integrals of f (1 - s) and
    f s on one tile, relative to width x ``size`` (the largest |f| on the interval); the
    nodes are placed exactly (float rounding of positions is not the rule's error)."""
    with mpmath.workdps(30):
        a, h = mpmath.mpf(float(start)), mpmath.mpf(float(width))
        s = [(mpmath.mpf(float(v)) + 1) / 2 for v in nodes]
        values = [mpmath.re(function(a + h * v)) for v in s]
        scale = h * size
        for share in (lambda v: v, lambda v: 1 - v):
            rule = h / 2 * mpmath.fsum(w * f * share(v) for w, f, v in zip(weights, values, s))
            exact = mpmath.quad(lambda x: mpmath.re(function(x)) * share((x - a) / h), [a, a + h])
            if abs(rule - exact) > 1e-13 * scale:
                return False
    return True


def _weight_singularities(spec):
    """(endpoint, alpha) for each finite endpoint where the weight ~ |t - end|^alpha, alpha < 0."""
    weight = spec.metric.weight
    if weight is None:
        return ()
    t, found = spec.variable, []
    for index, end in enumerate(spec.interval):
        if not end.is_finite:
            continue
        s = sympy.Symbol("s", positive=True)
        local = weight.subs(spec.defaults).subs(t, end.subs(spec.defaults)
                                                + (s if index == 0 else -s))
        try:
            alpha = sympy.limit(sympy.log(local) / sympy.log(s), s, 0, "+")
        except (NotImplementedError, ValueError, TypeError):
            continue
        if alpha.is_number and alpha.is_finite and alpha < 0:
            if alpha <= -1:
                raise SpecError([("metric.weight", f"the weight {weight} is not integrable "
                                                   f"near {t} = {end}")], spec.path)
            found.append((index, float(alpha)))
    return tuple(found)


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
