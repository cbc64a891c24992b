"""Exact linear algebra and bounded symbolic work shared by the analysis stages."""
import itertools
import math
import signal
import threading
import time
from contextlib import contextmanager

import mpmath
import sympy
from sympy.polys.constructor import construct_domain

from ..errors import NotPositiveDefiniteError, SymbolicLimitError

DIGITS = 60


_DEADLINES = []  # (the process CPU time at which a limit expires, what it limits)


def _arm_timer():
    if _DEADLINES:
        remaining = min(deadline for deadline, _ in _DEADLINES) - time.process_time()
        signal.setitimer(signal.ITIMER_PROF, max(remaining, 1e-3))
    else:
        signal.setitimer(signal.ITIMER_PROF, 0)


def _expire(signum, frame):
    now = time.process_time()
    expired = [(deadline, what) for deadline, what in _DEADLINES if deadline <= now + 1e-3]
    if not expired:
        _arm_timer()
        return
    deadline, what = min(expired)
    # again shortly, should this exception be swallowed (raised inside a gc callback, which
    # Python reports and ignores); leaving the limited block re-arms or clears the timer
    signal.setitimer(signal.ITIMER_PROF, 0.05)
    raise SymbolicLimitError(f"{what} exceeded its time limit", limit=what)


@contextmanager
def time_limit(seconds, what):
    """Raise :class:`SymbolicLimitError` (with ``limit == what``) if the block takes more
    than ``seconds`` of the process's CPU time (ITIMER_PROF): a loaded machine does not
    change which work finishes in time, so neither what a spec compiles to, and SIGALRM
    stays free (pytest-timeout). Limits nest: the earliest deadline fires first and names
    itself. Without SIGPROF (other platforms, other threads) the block runs unlimited."""
    if not hasattr(signal, "SIGPROF") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGPROF, _expire) if not _DEADLINES else None
    deadline = time.process_time() + seconds
    _DEADLINES.append((deadline, what))
    _arm_timer()
    try:
        yield
    except SystemError as error:  # the limit raised inside the parser (ast.parse) is reported
        if time.process_time() < deadline:  # by CPython as a SystemError: it is the limit
            raise
        raise SymbolicLimitError(f"{what} exceeded its time limit", limit=what) from error
    finally:
        _DEADLINES.pop()
        _arm_timer()
        if previous is not None:
            signal.signal(signal.SIGPROF, previous)


def simplify_entry(value):
    """Cheap canonical form of an exact entry: cancel rational functions, keep radicals."""
    if value.is_Rational:
        return value
    if not value.free_symbols:
        return sympy.nsimplify(value) if value.is_Float else sympy.radsimp(value)
    return sympy.factor(sympy.cancel(value))


def is_identity(matrix):
    """True for a square matrix equal to I (checked on its nonzero entries only)."""
    rows, cols = matrix.shape
    keys = list(matrix.keys()) if isinstance(matrix, ExactMatrix) else list(matrix.todok())
    return (rows == cols and len(keys) == rows and all(i == j for i, j in keys)
            and all(matrix[k] == 1 for k in keys))


def to_float(value, substitutions=None):
    """Correctly rounded float64 of an exact value, evaluated to DIGITS digits (by
    _agreeing_float, else by sympy.N).

    Values beyond the float64 range give +-inf (never an exception)."""
    if substitutions:
        value = value.subs(substitutions)
    if value.is_Rational:
        try:
            return value.p / value.q
        except OverflowError:
            return math.inf if value.p > 0 else -math.inf
    fast = _agreeing_float(value)
    return fast if fast is not None else float(sympy.N(value, DIGITS))


# mpmath functions of the same name as SymPy's (one argument, real for real arguments in
# their domain; a complex result is refused)
_MPMATH_FUNCTIONS = ("exp", "log", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos",
                     "atan", "erf", "gamma")


class _NotEvaluated(Exception):
    """A node _evaluate does not handle (sympy.N then evaluates the whole value)."""


def _agreeing_float(value):
    """The float64 of a real constant evaluated by mpmath once per distinct subexpression
    (where sympy.N re-evaluates shared ones at each precision it tries) at DIGITS + 20 and
    DIGITS + 40 digits, when the two agree to DIGITS digits; else None (sympy.N decides:
    cancellation to zero, complex values, nodes mpmath is not given)."""
    results = []
    for dps in (DIGITS + 20, DIGITS + 40):
        with mpmath.workdps(dps):
            try:
                result = _evaluate(value, {})
            except (_NotEvaluated, ValueError, ZeroDivisionError, OverflowError):
                return None
            if not isinstance(result, mpmath.mpf) or not mpmath.isfinite(result) or not result:
                return None
            results.append(result)
    low, high = results
    with mpmath.workdps(DIGITS + 40):
        if abs(high - low) > mpmath.mpf(10) ** -DIGITS * abs(high):
            return None
    return float(high)


def _evaluate(node, memo):
    """mpmath value of a SymPy constant at the working precision (memo: node -> value)."""
    if node in memo:
        return memo[node]
    if node.is_Rational:
        result = mpmath.mpf(node.p) / node.q
    elif node.is_Float:
        result = mpmath.mpf(node._mpf_)
    elif node is sympy.pi:
        result = +mpmath.pi
    elif node is sympy.E:
        result = +mpmath.e
    elif node.is_Add:
        result = mpmath.fsum(_evaluate(a, memo) for a in node.args)
    elif node.is_Mul:
        result = mpmath.fprod(_evaluate(a, memo) for a in node.args)
    elif node.is_Pow:
        base, exponent = node.args
        if exponent is sympy.S.Half:
            result = mpmath.sqrt(_evaluate(base, memo))
        elif exponent.is_Integer:
            result = _evaluate(base, memo) ** int(exponent)
        else:
            result = mpmath.power(_evaluate(base, memo), _evaluate(exponent, memo))
    elif isinstance(node, sympy.Function) and type(node).__name__ in _MPMATH_FUNCTIONS \
            and len(node.args) == 1:
        result = getattr(mpmath, type(node).__name__)(_evaluate(node.args[0], memo))
    else:
        raise _NotEvaluated(node)
    if not isinstance(result, mpmath.mpf):
        raise _NotEvaluated(node)
    memo[node] = result
    return result


def exact_ldl(gram, field, function_names, numerical_digits=None):
    """LDL^T of a symmetric matrix given as a list of rows over ``field`` (a SymPy domain).

    Exact fields: a pivot is zero only when it is exactly zero, so a dependent basis is
    proven dependent and an independent one is never rejected (docs/design.md, "Exact
    analysis"). ``numerical_digits`` (Gram matrices from quadrature) instead treats a pivot
    below 10^-digits G_jj as zero. Returns (unit lower rows, pivots), both over ``field``.
    """
    m = len(gram)
    lower = [[field.zero] * m for _ in range(m)]
    pivots = []
    for j in range(m):
        lower[j][j] = field.one
        pivot = gram[j][j] - sum((lower[j][k] ** 2 * pivots[k] for k in range(j)), field.zero)
        if _vanishes(pivot, gram[j][j], field, numerical_digits):
            coefficients = dependent_row(lower, j, field)
            error = NotPositiveDefiniteError(
                "the Gram matrix is singular: the basis is linearly dependent, "
                f"{combination_text(coefficients, function_names)} = 0 on the domain"
                + (f" (to {numerical_digits} digits)" if numerical_digits else ""))
            error.coefficients = coefficients
            raise error
        pivots.append(pivot)
        for i in range(j + 1, m):
            lower[i][j] = (gram[i][j] - sum((lower[i][k] * lower[j][k] * pivots[k]
                                             for k in range(j)), field.zero)) / pivot
    return lower, pivots


def _vanishes(pivot, diagonal, field, numerical_digits):
    if numerical_digits:
        value = field.to_sympy(pivot)
        return abs(value) <= sympy.Float(10, DIGITS) ** -numerical_digits * abs(field.to_sympy(diagonal))
    if field.is_EX:
        return simplify_entry(field.to_sympy(pivot)).is_zero is True
    return not pivot


def dependent_row(lower, j, field):
    """Row j of L^{-1} (forward substitution), as SymPy numbers: the coefficients of
    functions 0..j of the combination whose norm is pivot j."""
    row = [field.zero] * (j + 1)
    row[j] = field.one
    for k in range(j - 1, -1, -1):
        row[k] = -sum((row[i] * lower[i][k] for i in range(k + 1, j + 1)), field.zero)
    coefficients = (field.to_sympy(value) for value in row)
    return [sympy.nsimplify(c) if c.is_Float else simplify_entry(c) for c in coefficients]


def combination_text(coefficients, function_names):
    """``(c_0)*[phi_0] + ...`` over the nonzero coefficients."""
    return " + ".join(f"({c})*[{name}]" for c, name in zip(coefficients, function_names)
                      if c != 0)



def matrix_field(entries):
    """The smallest SymPy field holding every entry (QQ, QQ<sqrt(2)>, ZZ(T), ..., EX)."""
    try:
        field, elements = construct_domain(entries, field=True, extension=True)
    except (NotImplementedError, sympy.polys.polyerrors.PolynomialError):
        field, elements = construct_domain(entries, field=True)
    return field, elements


def unit_lower_inverse(lower, field):
    """Exact inverse of unit lower-triangular rows over ``field`` by forward substitution."""
    m = len(lower)
    inverse = [[field.one if i == j else field.zero for j in range(m)] for i in range(m)]
    for i in range(m):
        for j in range(i):
            inverse[i][j] = -sum((lower[i][k] * inverse[k][j] for k in range(j, i)
                                  if lower[i][k]), field.zero)
    return inverse


def condition_number(gram, substitutions):
    """2-norm condition number of a symmetric positive-definite matrix, via mpmath.

    The precision doubles until two successive results agree to 1e-12, so condition
    numbers far beyond float64 (2e98 for degree-32 monomials on [0, 100]) are exact.
    Returns an mpf (it may exceed the float64 range).
    """
    exact = gram.subs(substitutions)
    previous = None
    for digits in (DIGITS, 2 * DIGITS, 4 * DIGITS, 8 * DIGITS):
        with mpmath.workdps(digits):
            matrix = mpmath.matrix([[mpmath.mpf(sympy.Float(sympy.N(v, digits), digits)._mpf_) for v in row]
                                    for row in exact.tolist()])
            eigenvalues = mpmath.eigsy(matrix, eigvals_only=True)
            current = max(eigenvalues) / min(eigenvalues)
        if min(eigenvalues) > 0 and previous is not None and abs(current / previous - 1) < 1e-12:
            return current
        previous = current
    return previous


class ExactMatrix:
    """A sparse exact matrix kept as raw entries, converted to SymPy only on demand.

    ``convert`` maps a raw entry to its exact SymPy value and ``as_float`` to its float64
    (correctly rounded), or is a dict {position: float64} of them computed beforehand;
    large tables (degree-200 change of basis: 20301 entries) thus never build SymPy
    expressions. ``symmetric`` matrices store their lower triangle only. ``packed``, when
    given, is (pattern, values): a large constant matrix whose entries fill the "lower"
    triangle (their smallest pattern), with the float64 entries at every position of it,
    row by row, as one NumPy array (0.0 where no entry is stored).
    """

    def __init__(self, shape, entries, convert=None, as_float=None, constant=True,
                 symmetric=False, packed=None):
        self.shape, self.raw, self.symmetric, self.constant = shape, entries, symmetric, constant
        self._convert = convert or sympy.sympify
        self._float = as_float
        self.packed = packed

    @classmethod
    def from_sympy(cls, matrix):
        """Wrap a SymPy matrix (its nonzero entries)."""
        entries = {k: v for k, v in matrix.todok().items() if v != 0}
        return cls(matrix.shape, entries, constant=not any(v.free_symbols for v in entries.values()))

    def __getitem__(self, key):
        i, j = key
        if self.symmetric and j > i:
            i, j = j, i
        value = self.raw.get((i, j))
        return sympy.Integer(0) if value is None else self._convert(value)

    def keys(self):
        """Positions of the stored nonzero entries."""
        return self.raw.keys()

    def float(self, key):
        """Correctly rounded float64 of entry ``key`` (constant matrices)."""
        if isinstance(self._float, dict):
            return self._float.get(key, 0.0)
        value = self.raw.get(key)
        if value is None:
            return 0.0
        return self._float(value) if self._float else to_float(self._convert(value))

    def floats(self, keys):
        """Correctly rounded float64 of the entries at ``keys``, in one pass (constant
        matrices; 0.0 where no entry is stored)."""
        if isinstance(self._float, dict):
            return list(map(self._float.get, keys, itertools.repeat(0.0)))
        if self.raw is None or self._float is None:
            return [self.float(key) for key in keys]
        raw, rounded = self.raw, self._float
        return [0.0 if value is None else rounded(value)
                for value in map(raw.get, keys)]

    def todok(self):
        """{(i, j): exact value} of every nonzero entry (both triangles if symmetric)."""
        out = {k: self._convert(v) for k, v in self.raw.items()}
        if self.symmetric:
            out.update({(j, i): v for (i, j), v in list(out.items())})
        return out

    def to_sympy(self):
        """The whole matrix as a SymPy matrix (small matrices: explain, tests)."""
        return sympy.ImmutableSparseMatrix(*self.shape, self.todok())

    def subs(self, substitutions):
        return self.to_sympy().subs(substitutions)


def rational_float(value):
    """Correctly rounded float64 of a rational field element (+-inf beyond the range)."""
    numerator, denominator = int(value.numerator), int(value.denominator)
    try:
        return numerator / denominator
    except OverflowError:
        return math.inf if numerator > 0 else -math.inf


class KroneckerMatrix(ExactMatrix):
    """A Kronecker product F_1 (x) ... (x) F_k of ExactMatrix factors, entries on demand
    (row and column indices in C order: the last factor's index runs fastest)."""

    def __init__(self, factors):
        self.factors = tuple(factors)
        shape = (math.prod(f.shape[0] for f in factors), math.prod(f.shape[1] for f in factors))
        super().__init__(shape, None, constant=all(f.constant for f in factors))

    def _split(self, key):
        rows, cols = [], []
        i, j = key
        for factor in reversed(self.factors):
            i, r = divmod(i, factor.shape[0])
            j, c = divmod(j, factor.shape[1])
            rows.append(r)
            cols.append(c)
        return list(zip(reversed(rows), reversed(cols)))

    def __getitem__(self, key):
        return sympy.Mul(*(f[k] for f, k in zip(self.factors, self._split(key))))

    def keys(self):
        """Positions of the nonzero entries (products of the factors' nonzero positions)."""
        factor_keys = [sorted(f.todok()) for f in self.factors]
        for combination in itertools.product(*factor_keys):
            i = j = 0
            for factor, (r, c) in zip(self.factors, combination):
                i, j = i * factor.shape[0] + r, j * factor.shape[1] + c
            yield i, j

    def float(self, key):
        return math.prod(f.float(k[::-1] if f.symmetric and k[1] > k[0] else k)
                         for f, k in zip(self.factors, self._split(key)))

    def todok(self):
        return {key: self[key] for key in self.keys()}
