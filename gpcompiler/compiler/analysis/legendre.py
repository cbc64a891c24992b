"""Polynomial spaces through Legendre atoms: the rows of C in
phi_j = sum_k C_jk P_k(u), in 1-D and as tensor products over a box, and their exact Gram."""
import itertools
import math
import operator
from collections.abc import Mapping, Sequence
from fractions import Fraction

import gmpy2
import mpmath
import numpy
import sympy

from ..spec import Family, axis_families, family_size, multi_indices
from ..symbolic import DIGITS, ExactMatrix, matrix_field, rational_float, simplify_entry
from . import doubledouble
from .core import Analysis, Atoms, axis_spec, identity_matrix, with_changes
from .factor import factorize, gram_condition, ldl_certificate
from .gram import expression_gram, keep_float, weighted_atom_gram
from .quadrature import choose_quadrature

FLOAT_BITS = 128   # working precision of the certified float64 entries of R (_change_floats)
STEP_ERROR = 32    # u^2 of relative error per step of _MonomialRows.floats, at most


def _legendre_rows(spec, field, a, b):
    """Rows of C: phi_j = sum_k C_jk P_k(u), u = (2t - a - b)/(b - a), over ``field``.

    Built by the recurrence t^(i+1) = (alpha u + beta) t^i with
    u P_k = ((k + 1) P_(k+1) + k P_(k-1))/(2k + 1): O(degree^2) exact operations.
    """
    name = spec.family.name if spec.family else None
    m = spec.basis_size
    if name == "legendre":
        return [{j: field.one} for j in range(m)], m
    if name == "monomial" and field.is_QQ:
        return _MonomialRows(field, (b - a) / 2, (a + b) / 2, m), m
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


class _MonomialRows(Sequence):
    """Rows of C for t^j = (alpha u + beta)^j, j < m, over QQ, built on demand.

    Row j has the keys k <= j (those with k = j mod 2 when beta = 0), all nonzero; an exact
    entry comes from its closed form (:func:`_monomial_entry`) when asked for, and the
    float64 entries of R = C D^(1/2) from one certified recurrence (:meth:`floats`): no
    table of m^2/2 exact rationals is built.
    """

    def __init__(self, field, alpha, beta, size):
        self.field, self.size = field, size
        self.alpha, self.beta = (Fraction(int(v.numerator), int(v.denominator))
                                 for v in (alpha, beta))
        self._exact = {}

    def __len__(self):
        return self.size

    def __getitem__(self, j):
        if not 0 <= j < self.size:
            raise IndexError(j)
        return _MonomialRow(self, j)

    def positions(self, j):
        """The positions k of the nonzero entries of row j."""
        return range(j % 2, j + 1, 2) if self.beta == 0 else range(j + 1)

    def exact(self, j, k):
        """C_jk as a field element (cached); along the diagonal, read in order by the
        pivots, C_jj = C_(j-1)(j-1) alpha j/(2j - 1). Indices are read as Python ints
        (sympy.Matrix passes sympy Integers, which would make the closed form's sympy's)."""
        j, k = operator.index(j), operator.index(k)
        if (j, k) not in self._exact:
            if j == k and (j - 1, j - 1) in self._exact:
                self._exact[j, j] = self._exact[j - 1, j - 1] * self.field(
                    j * self.alpha.numerator, (2 * j - 1) * self.alpha.denominator)
            else:
                self._exact[j, k] = self.field(*_monomial_entry(self.alpha, self.beta, j, k))
        return self._exact[j, k]

    def floats(self, norms):
        """The float64 of C_jk sqrt(D_k), each correctly rounded, at every position (j, k),
        k <= j, row by row, as one NumPy array (0.0 where C_jk = 0).

        C_jk(-beta) = (-1)^(j+k) C_jk(beta) (u -> -u), so the recurrence runs with |beta|,
        on whole rows in double-double arithmetic with separate exponents
        (:mod:`.doubledouble`): every term is nonnegative and each step adds at most
        STEP_ERROR u^2 of relative error, so an entry errs by at most ``delta``; an entry
        whose interval [y(1 - delta), y(1 + delta)] may not round to one float64 (a tie,
        say) is rounded exactly from its closed form instead.
        """
        m = self.size
        alpha, beta = self.alpha, abs(self.beta)
        with gmpy2.context(precision=FLOAT_BITS):
            roots = doubledouble.from_ratios(*zip(*(gmpy2.sqrt(gmpy2.mpq(
                int(n.numerator), int(n.denominator))).as_integer_ratio() for n in norms)))
        rows, cols = numpy.tril_indices(m)
        table = _power_table(_step_coefficients(alpha, beta, m), m)
        values, certain = doubledouble.round_certified(doubledouble.normalize(
            *doubledouble.multiply(table, [v[cols] for v in roots])),
            (STEP_ERROR * m + 64) * doubledouble.UNIT2)
        for i in numpy.flatnonzero(~certain).tolist():
            j, k = int(rows[i]), int(cols[i])
            values[i] = _rounded_root_product(*_monomial_entry(alpha, beta, j, k), norms[k])
        if self.beta < 0:
            values[(rows + cols) % 2 == 1] *= -1
        return values


class _Positions(Mapping):
    """{(j, k): (j, k)} over the positions of the nonzero entries of :class:`_MonomialRows`,
    row by row, without a table of them."""

    def __init__(self, rows):
        self._rows = rows
        self._size = sum(len(rows.positions(j)) for j in range(len(rows)))

    def __getitem__(self, key):
        j, k = key
        if not (0 <= j < len(self._rows) and k in self._rows.positions(j)):
            raise KeyError(key)
        return key

    def __iter__(self):
        return ((j, k) for j in range(len(self._rows)) for k in self._rows.positions(j))

    def __len__(self):
        return self._size


class _HankelLower(Mapping):
    """{(j, k): moments[j + k]}, k <= j < size, where the moment is nonzero (the lower
    triangle of the Gram matrix of monomials), row by row, without a table of it."""

    def __init__(self, moments, size):
        self.moments, self.size = moments, size
        self._size = sum(min(n, 2 * size - 2 - n) // 2 + 1
                         for n, v in enumerate(moments) if v)

    def __getitem__(self, key):
        j, k = key
        if not (0 <= k <= j < self.size and self.moments[j + k]):
            raise KeyError(key)
        return self.moments[j + k]

    def __iter__(self):
        return ((j, k) for j in range(self.size) for k in range(j + 1)
                if self.moments[j + k])

    def __len__(self):
        return self._size

    def floats(self, rounded):
        """The float64 ``rounded(moment)`` at every position (j, k), k <= j, row by row."""
        values = numpy.array([rounded(v) for v in self.moments], dtype=float)
        rows, cols = numpy.tril_indices(self.size)
        return values[rows + cols]


class _MonomialRow(Mapping):
    """Row j of :class:`_MonomialRows`: {k: C_jk}, entries computed when read."""

    def __init__(self, rows, j):
        self._rows, self._j, self._keys = rows, j, rows.positions(j)

    def __getitem__(self, k):
        if k not in self._keys:
            raise KeyError(k)
        return self._rows.exact(self._j, k)

    def __contains__(self, k):
        return k in self._keys

    def __iter__(self):
        return iter(self._keys)

    def __len__(self):
        return len(self._keys)


def _step_coefficients(alpha, beta, m):
    """up_k = alpha k/(2k - 1), down_k = alpha (k + 1)/(2k + 3) and beta (when nonzero),
    k <= m, as the rows of double-double arrays (:mod:`.doubledouble`)."""
    (pa, qa), (pb, qb) = alpha.as_integer_ratio(), beta.as_integer_ratio()
    numerators = [[pa * k for k in range(m + 1)], [pa * (k + 1) for k in range(m + 1)]]
    denominators = [[qa * abs(2 * k - 1) for k in range(m + 1)],
                    [qa * (2 * k + 3) for k in range(m + 1)]]
    if beta:
        numerators.append([pb] * (m + 1))
        denominators.append([qb] * (m + 1))
    return doubledouble.from_ratios(numerators, denominators)


def _power_table(coefficients, m):
    """The coefficients c_jk of t^j in P_k, k <= j < m, row by row, as double-double arrays
    (:mod:`.doubledouble`, normalized every 32 rows), from c'_k = up_k c_(k-1) +
    down_k c_(k+1) + beta c_k, the rows (up, down[, beta]) of ``coefficients`` indexed by k."""
    table = [numpy.zeros(m * (m + 1) // 2), numpy.zeros(m * (m + 1) // 2),
             numpy.full(m * (m + 1) // 2, doubledouble.ZERO_EXPONENT)]
    row = [numpy.zeros(m + 3), numpy.zeros(m + 3),       # c_(k-1) at k: c_0 = 1 at 1
           numpy.full(m + 3, doubledouble.ZERO_EXPONENT)]
    row[0][1] = table[0][0] = 1.0
    row[2][1] = table[2][0] = 0
    shifts = numpy.array([[0], [2], [1]])[:len(coefficients[0])]   # c_(k-1), c_(k+1), c_k
    for j in range(1, m):
        index = shifts + numpy.arange(j + 1)
        terms = doubledouble.multiply([c[:, :j + 1] for c in coefficients],
                                      [v[index] for v in row])
        new = doubledouble.add(terms, normal=j % 32 == 0)    # highs grow < 6^32 = 2^83
        start = j * (j + 1) // 2
        for stored, current, value in zip(table, row, new):
            stored[start:start + j + 1] = value
            current[1:j + 2] = value
    return table


def _monomial_entry(alpha, beta, j, k):
    """C_jk for t = alpha u + beta as (numerator, denominator), unreduced:
    C_jk = sum_n binom(j, n) alpha^n beta^(j-n) A_nk over n = k, k + 2, ..., j, where
    u^n = sum_k A_nk P_k(u), A_nk = (2k + 1) n! / (2^h h! (n + k + 1)!!), h = (n - k)/2."""
    pa, qa, pb, qb = alpha.numerator, alpha.denominator, beta.numerator, beta.denominator
    top = (j - k) // 2
    odd = _odd_factorial(j + k + 1)
    numerator = 0
    for h in range(top + 1) if pb else (top,):
        n = k + 2 * h
        numerator += (math.comb(j, n) * pa ** n * qa ** (j - n) * pb ** (j - n) * qb ** n
                      * math.factorial(n) * 2 ** (top - h)
                      * (math.factorial(top) // math.factorial(h))
                      * (odd // _odd_factorial(n + k + 1)))
    return ((2 * k + 1) * numerator,
            qa ** j * qb ** j * 2 ** top * math.factorial(top) * odd)


def _odd_factorial(n):
    """n!! for odd n >= 1."""
    half = (n - 1) // 2
    return math.factorial(n) // (2 ** half * math.factorial(half))


def _rounded_root_product(numerator, denominator, norm):
    """The correctly rounded float64 of (numerator/denominator) sqrt(norm), norm > 0
    rational, +-inf beyond the range: exact integers only (the square is scaled to about
    112 bits, its integer square root keeps a sticky bit, and Python's int division
    rounds once, ties to even, subnormals included)."""
    square_num = numerator * numerator * int(norm.numerator)
    square_den = denominator * denominator * int(norm.denominator)
    shift = 56 - (square_num.bit_length() - square_den.bit_length()) // 2
    if shift >= 0:
        quotient, remainder = divmod(square_num << (2 * shift), square_den)
    else:
        quotient, remainder = divmod(square_num, square_den << (-2 * shift))
    root = math.isqrt(quotient)
    scaled = 2 * root + (1 if remainder or root * root != quotient else 0)
    try:
        value = (scaled / (1 << (shift + 1)) if shift >= -1
                 else float(scaled << -(shift + 1)))
    except OverflowError:
        value = math.inf
    return value if (numerator > 0) == (denominator > 0) else -value


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
    packed = (("lower", gram.floats(rational_float))
              if constant and isinstance(gram, _HankelLower) and m > 2 else None)
    gram = ExactMatrix((m, m), gram, field.to_sympy, _once_per_object(rational_float)
                       if constant else None, constant, symmetric=True, packed=packed)
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
    lower = ExactMatrix((m, m), change.raw,    # L = C diag(C)^-1 at C's positions, on demand
                        lambda entry: field.to_sympy(rows[entry[0]][entry[1]]
                                                     / rows[entry[1]][entry[1]]))
    stage("orthonormal basis")
    formulas.append(("cholesky", "R[j, k] = C[j, k] sqrt((b - a)/(2k + 1)) where "
                                 "phi_j = sum_k C[j, k] P_k(u)"))
    return Analysis(spec=spec, gram=gram, gram_method="exact: Legendre expansion of the basis "
                    "(triangular change of basis C, G = C D C^T)", lower=lower, pivots=pivots,
                    certificate=certificate, cholesky=change, transform=identity_matrix(m),
                    atoms=atoms, quadrature=choose_quadrature(spec, atoms),
                    condition_number=gram_condition(gram, spec), numerical=False,
                    formulas=tuple(formulas))


def _once_per_object(function):
    """``function`` computed once per argument object (the Gram matrix of monomials holds
    each moment object along a whole anti-diagonal; hashing big rationals would cost more
    than rounding them): the objects stay alive in the matrix that holds the memo."""
    memo = {}

    def once(value):
        key = id(value)
        if key not in memo:
            memo[key] = (value, function(value))
        return memo[key][1]
    return once


def _change_of_basis(field, rows, norms, constant, shape):
    """R = C D^(1/2) as an ExactMatrix over the positions (j, k) of C: phi = R . normalized
    atoms; its float64 entries all computed at once, correctly rounded (constant C)."""
    roots = {}

    def convert(position):
        j, k = position
        if k not in roots:
            roots[k] = sympy.sqrt(simplify_entry(field.to_sympy(norms[k])))
        value = field.to_sympy(rows[j][k])
        return roots[k] if value == 1 else value * roots[k]
    if isinstance(rows, _MonomialRows):
        values = rows.floats(norms)
        return ExactMatrix(shape, _Positions(rows), convert,
                           lambda position: values[position[0] * (position[0] + 1) // 2
                                                   + position[1]].item(),
                           constant, packed=("lower", values) if len(rows) > 2 else None)
    floats = _change_floats(rows, norms) if constant else None
    return ExactMatrix(shape, {(j, k): (j, k) for j, row in enumerate(rows) for k in row},
                       convert, floats, constant)


def _change_floats(rows, norms):
    """{(j, k): float64 of C_jk sqrt(D_k)}, correctly rounded, in one precision context:
    a FLOAT_BITS product whose error interval rounds to one float64, else exact rounding."""
    delta = 16 * 2.0 ** -FLOAT_BITS
    out = {}
    with gmpy2.context(precision=FLOAT_BITS):
        roots = [gmpy2.sqrt(gmpy2.mpfr(gmpy2.mpq(int(n.numerator), int(n.denominator))))
                 for n in norms]
        low, high = 1 - gmpy2.mpfr(delta), 1 + gmpy2.mpfr(delta)
        for j, row in enumerate(rows):
            for k, v in row.items():
                value = abs(gmpy2.mpfr(gmpy2.mpq(int(v.numerator), int(v.denominator))))
                value = value * roots[k]
                lo, hi = float(value * low), float(value * high)
                if lo != hi:
                    lo = abs(_rounded_root_product(int(v.numerator), int(v.denominator),
                                                   norms[k]))
                out[j, k] = lo if v > 0 else -lo
    return out


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
        return (_HankelLower(moments, m), "G[j, k] = (b^(j+k+1) - a^(j+k+1))/(j + k + 1)")
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
