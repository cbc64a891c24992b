"""Exact linear algebra and bounded symbolic work shared by the analysis stages."""
import signal
import threading
import time
from contextlib import contextmanager

import mpmath
import sympy

from .errors import NotPositiveDefiniteError, SymbolicLimitError

DIGITS = 60


_DEADLINES = []


def _arm_timer():
    if _DEADLINES:
        remaining = min(deadline for deadline, _ in _DEADLINES) - time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, max(remaining, 1e-3))
    else:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _expire(signum, frame):
    now = time.monotonic()
    expired = [(deadline, what) for deadline, what in _DEADLINES if deadline <= now + 1e-3]
    if not expired:
        _arm_timer()
        return
    deadline, what = min(expired)
    raise SymbolicLimitError(f"{what} exceeded its time limit", limit=what)


@contextmanager
def time_limit(seconds, what):
    """Raise :class:`SymbolicLimitError` (with ``limit == what``) if the block runs longer
    than ``seconds``. Limits nest: the earliest deadline fires first and names itself.
    Without SIGALRM (other platforms, other threads) the block runs unlimited."""
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _expire) if not _DEADLINES else None
    _DEADLINES.append((time.monotonic() + seconds, what))
    _arm_timer()
    try:
        yield
    finally:
        _DEADLINES.pop()
        _arm_timer()
        if previous is not None:
            signal.signal(signal.SIGALRM, previous)


def simplify_entry(value):
    """Cheap canonical form of an exact entry: cancel rational functions, keep radicals."""
    if value.is_Rational or not value.free_symbols:
        return sympy.nsimplify(value) if value.is_Float else sympy.radsimp(value)
    return sympy.factor(sympy.cancel(value))


def is_identity(matrix):
    """True for a square matrix equal to I (checked on its nonzero entries only)."""
    rows, cols = matrix.shape
    dok = matrix.todok()
    return rows == cols and len(dok) == rows and all(i == j and v == 1 for (i, j), v in dok.items())


def to_float(value, substitutions=None):
    """Correctly rounded float64 of an exact value (evaluated once at DIGITS digits)."""
    if substitutions:
        value = value.subs(substitutions)
    return float(sympy.N(value, DIGITS))


def ldl(gram, function_names):
    """Exact LDL^T of a symmetric matrix: unit lower L and pivots D.

    A zero pivot means the basis is linearly dependent: raise
    :class:`NotPositiveDefiniteError` naming the vanishing combination.
    """
    m = gram.shape[0]
    lower = sympy.eye(m)
    pivots = []
    for j in range(m):
        pivot = simplify_entry(gram[j, j] - sum(lower[j, k] ** 2 * pivots[k] for k in range(j)))
        if pivot == 0 or (pivot.is_number and abs(to_float(pivot)) <= 1e-40 * abs(to_float(gram[j, j]))):
            raise NotPositiveDefiniteError(
                "the Gram matrix is singular: the basis is linearly dependent, "
                f"{dependent_combination(lower, j, function_names)} = 0 on the domain")
        pivots.append(pivot)
        for i in range(j + 1, m):
            lower[i, j] = simplify_entry(
                (gram[i, j] - sum(lower[i, k] * lower[j, k] * pivots[k] for k in range(j))) / pivot)
    return sympy.ImmutableMatrix(lower), tuple(pivots)


def dependent_combination(lower, j, function_names):
    """Row j of L^{-1}: the combination of functions 0..j that has zero norm."""
    block = lower[: j + 1, : j + 1]
    row = block.T.solve(sympy.Matrix.eye(j + 1)[:, j]).T
    terms = []
    for k in range(j + 1):
        coefficient = sympy.nsimplify(simplify_entry(row[k]))
        if coefficient != 0:
            terms.append(f"({coefficient})*[{function_names[k]}]")
    return " + ".join(terms)


def unit_lower_inverse(lower):
    """Exact inverse of a unit lower-triangular matrix by forward substitution."""
    m = lower.shape[0]
    inverse = sympy.eye(m)
    for i in range(m):
        for j in range(i):
            inverse[i, j] = simplify_entry(-sum(lower[i, k] * inverse[k, j] for k in range(j, i)))
    return sympy.ImmutableMatrix(inverse)


def condition_number(gram, substitutions):
    """2-norm condition number of a symmetric positive-definite matrix, via mpmath.

    The precision doubles until two successive results agree to 1e-12, so condition
    numbers far beyond float64 (2e98 for degree-32 monomials on [0, 100]) are exact.
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
            return float(current)
        previous = current
    return float(previous)
