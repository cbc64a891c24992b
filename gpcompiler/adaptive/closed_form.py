"""PrivFuncSelect's coordinates and residual in O(S m) for Legendre and Fourier modules.

The domain [a, b] is cut into C public cells of half-width w. On a cell with centre x_c every
orthonormal basis function is e_j(x_c + w v) = sum_n tau_nj v^n, its Taylor series at x_c
(closed form: the derivatives of the Legendre polynomials by their three-term recurrence,
those of cos and sin by quarter turns), truncated at degree K where the remainder is below
2^-60 of ||g||_inf for every g in the space: Markov's inequality ||g^(n)|| <= T_p^(n)(1)
(2/(b - a))^n ||g|| for polynomials of degree p, Bernstein's ||g^(n)|| <= Omega^n ||g|| for
trigonometric ones of top frequency Omega. C is chosen so that p^2 w (2/(b - a)) <= 1/2,
resp. Omega w <= 1/4: K is about 10 and 13.

The curve's pieces are cut at the cells. On a piece of midpoint v_s and half-width rho_s (in
cell units), q = ybar + delta lambda, lambda in [-1, 1], and (v_s + rho lambda)^n expands
by the binomial theorem into powers rho^i, truncated at i <= I where the remainder is below
2^-60 at the largest rho of the curve (I is 2-5 for dense samples). Every moment is then a
product of a piece's weights h rho^i (ybar/(i + 1), delta/(i + 2)) with powers v_s^k: no
difference of antiderivatives, so no cancellation however short the piece. The pieces'
moments are added per cell (blocks of 2^14 pieces, blocks joined by TwoSum) and contracted
with tau: c = sum over cells of tau^T mu.

The residual ||q - P q||^2 is a sum of non-negative terms: on each piece, with G the
truncated local Taylor polynomial of g = P q and g_k its Legendre coefficients in lambda
(exact for the degree-I polynomial), Parseval on the piece gives
    int (q - G)^2 = h ((ybar - g_0)^2 + (delta - g_1)^2/3 + sum_{k >= 2} g_k^2/(2k + 1)),
whose only differences are a coefficient of q minus the same coefficient of G (as the Gauss
rule's q(x) - P q(x)); the pieces' terms are summed pairwise, the blocks by math.fsum.

Error (per unit of the clip bound B, ||q|| <= B): with M = (sum_j ||e_j||_inf^2)^(1/2) and
theta the two truncation remainders (each <= 2^-60), ||c~ - c|| <= theta M sqrt(b - a) B
and each distance d_j = (r + sum_{i>j} c_i^2)^(1/2) moves by at most 3 theta M sqrt(b - a) B
in exact arithmetic; rounding adds ``query_eta``'s model term (docs/clipping.md,
"PrivFuncSelect's queries"). Paper Sec. 4.2 (Alg. 3): the queries dist2(P_j q, q).
"""
import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy

from ..runtime.rounding import ceil_float, ceil_sqrt
from ..compiler.slack import UNIT, gamma

TAIL = 2.0 ** -60    # truncation remainder allowed per unit of ||g||_inf
PIECES = 1 << 12     # pieces per block (BLAS sums within a block: gamma_4096)
_FEW = 1 / 32        # more runs of one cell per piece than this: vectorized, not per cell
_PROBES = 7          # public points where a module's atoms are compared with the closed forms


@dataclass(frozen=True)
class Cells:
    """Public cells and the local Taylor tables of a module's orthonormal basis."""
    edges: numpy.ndarray    # (C + 1,)
    width: float            # w, the half-width of a cell
    tau: numpy.ndarray      # (C, K + 1, m): e_j(x_c + w v) = sum_n tau[c, n, j] v^n
    beta: numpy.ndarray     # (K + 1,): |n-th Taylor coefficient of g| <= beta_n ||g||_inf
    sup_norm: float         # M = (sum_j ||e_j||_inf^2)^(1/2)
    tail: float             # the cell truncation's remainder per unit of ||g||_inf


def cells(module, params):
    """The Cells of a plain L2 Legendre (polynomial) or Fourier module, else None (built once
    per module and parameter values)."""
    return _cells(module, tuple(sorted(params.items())))


@functools.lru_cache(maxsize=16)
def _cells(module, items):
    params = dict(items)
    a, b = module.curve_interval(**params)
    if (not (math.isfinite(a) and math.isfinite(b)) or module.VECTOR_BASIS
            or not hasattr(module, "_params")):
        return None
    p = module._params(params)
    family, transform = _family(module, p, a, b)
    if family is None:
        return None
    builder = _legendre if family[0] == "legendre" else _fourier
    edges, width, atoms, beta, atom_sup = builder(a, b, *family[1:])
    atoms = atoms @ transform.T
    sup = numpy.abs(transform) @ atom_sup
    degree = atoms.shape[1] - 1
    return Cells(edges, width, atoms, beta[:degree + 1], float(numpy.sqrt(numpy.sum(sup ** 2))),
                 float(numpy.sum(beta[degree + 1:])))


def _family(module, p, a, b):
    """(("legendre", m) or ("fourier", m, omega), K) when the module's orthonormal basis is,
    at public probe points, K times the normalized Legendre polynomials or 1, cos(k omega t),
    sin(k omega t) (K the module's exact transform, or the identity)."""
    m = getattr(module, "_ATOMS_SIZE", None)
    if m is None or module.METRIC != "L2" or not hasattr(module, "_orthonormal"):
        return None, None
    x = a + (b - a) * (numpy.arange(_PROBES) + 0.5) / _PROBES
    basis = module._orthonormal(x, p)
    transform = module._transform(p) if hasattr(module, "_transform") else numpy.eye(m)
    candidates = [("legendre", m)] + ([("fourier", m, 2 * math.pi / (b - a))] if m % 2 else [])
    for family in candidates:
        atoms = (_legendre_values(x, a, b, m) if family[0] == "legendre"
                 else _fourier_values(x, m, family[2]))
        reference = atoms @ transform.T
        if basis.shape == reference.shape and numpy.allclose(basis, reference, rtol=1e-12,
                                                             atol=1e-12):
            return family, transform
    return None, None


def _legendre_values(x, a, b, m):
    u = (2 * x - a - b) / (b - a)
    out = numpy.polynomial.legendre.legvander(u, m - 1)
    return out * numpy.sqrt((2 * numpy.arange(m) + 1) / (b - a))


def _fourier_values(x, m, omega):
    k = numpy.arange(1, (m - 1) // 2 + 1)
    out = numpy.ones((x.size, m))
    out[:, 1::2] = numpy.cos(omega * x[:, None] * k)
    out[:, 2::2] = numpy.sin(omega * x[:, None] * k)
    return out


def _markov(p, count):
    """T_p^(n)(1) = prod_{k<n} (p^2 - k^2)/(2k + 1), n = 0..count-1 (0 beyond p)."""
    out, value = [], 1.0
    for n in range(count):
        out.append(value)
        value *= max(p * p - n * n, 0) / (2 * n + 1)
    return numpy.array(out)


def _legendre(a, b, m):
    """Cells with p^2 w_u <= 1/2 (w_u = 2w/(b - a)) and the Taylor tables of the normalized
    Legendre polynomials: P_l^(n) by (l + 1) P_(l+1)^(n) = (2l + 1)(u P_l^(n) + n P_l^(n-1))
    - l P_(l-1)^(n)."""
    p = m - 1
    count = max(1, 2 * p * p)
    edges = numpy.linspace(a, b, count + 1)
    width = (b - a) / (2 * count)
    scaled = 1.0 / count                              # w_u
    u = (edges[:-1] + edges[1:] - a - b) / (b - a)     # cell centres in [-1, 1]
    factor = numpy.array([scaled ** n / math.factorial(n) for n in range(m)])
    beta = _markov(p, m) * factor                      # exact beyond p: the terms are 0
    degrees = _truncation(beta) + 1
    derivative = numpy.zeros((degrees, m, count))      # [n, l, cell] = P_l^(n)(u_c)
    for n in range(degrees):
        derivative[n, 0] = 1.0 if n == 0 else 0.0
        if m > 1:
            derivative[n, 1] = u if n == 0 else (1.0 if n == 1 else 0.0)
        for l in range(1, m - 1):
            lower = derivative[n - 1, l] if n else 0.0
            derivative[n, l + 1] = ((2 * l + 1) * (u * derivative[n, l] + n * lower)
                                    - l * derivative[n, l - 1]) / (l + 1)
    norms = numpy.sqrt((2 * numpy.arange(m) + 1) / (b - a))
    atoms = numpy.einsum("nlc,n,l->cnl", derivative, factor[:degrees], norms)
    return edges, width, atoms, beta, norms


def _fourier(a, b, m, omega):
    """Cells with Omega w <= 1/4 and the Taylor tables of 1, cos(k omega t), sin(k omega t):
    the n-th derivative is (k omega)^n times the function a quarter turn n further on."""
    top = (m - 1) // 2 * omega
    count = max(1, math.ceil(2 * (b - a) * top))
    edges = numpy.linspace(a, b, count + 1)
    width = (b - a) / (2 * count)
    centre = (edges[:-1] + edges[1:]) / 2
    beta = numpy.array([(top * width) ** n / math.factorial(n) for n in range(40)])
    degrees = _truncation(beta) + 1                    # beyond 40: below 4^-40/40!
    k = numpy.arange(1, (m - 1) // 2 + 1)
    cos, sin = numpy.cos(omega * centre[:, None] * k), numpy.sin(omega * centre[:, None] * k)
    turns = [(cos, sin), (-sin, cos), (-cos, -sin), (sin, -cos)]
    atoms = numpy.zeros((count, degrees, m))
    atoms[:, 0, 0] = 1.0
    for n in range(degrees):
        scale = (k * omega * width) ** n / math.factorial(n)
        atoms[:, n, 1::2] = turns[n % 4][0] * scale
        atoms[:, n, 2::2] = turns[n % 4][1] * scale
    return edges, width, atoms, beta, numpy.ones(m)


def _truncation(beta):
    """The smallest degree K whose remainder sum_{n > K} beta_n is <= TAIL."""
    remainders = numpy.cumsum(beta[::-1])[::-1]
    above = numpy.flatnonzero(remainders[1:] <= TAIL)
    return int(above[0]) if above.size else beta.size - 1


def binomial_bounds(beta):
    """sigma_i = sum_{n >= i} C(n, i) beta_n: |G^(i)(v)/i!| <= sigma_i ||g||_inf on |v| <= 1."""
    size = beta.size
    return numpy.array([sum(math.comb(n, i) * beta[n] for n in range(i, size))
                        for i in range(size)])


def piece_order(sigma, rho):
    """The smallest I with sum_{i > I} sigma_i rho^i <= TAIL (rho the largest half-width)."""
    terms = sigma * rho ** numpy.arange(sigma.size)
    remainders = numpy.cumsum(terms[::-1])[::-1]
    above = numpy.flatnonzero(remainders[1:] <= TAIL)
    return int(above[0]) if above.size else sigma.size - 1


def _split(curve, table):
    """The curve's pieces cut at the cells: (cell, v, rho, h, ybar, delta), v and rho the
    midpoint and half-width in cell units. The curve is zero before its first and after its
    last sample (two zero pieces, joined to the samples by jumps of width 0); a cell edge
    inside a piece gets the convex combination of the piece's ends."""
    a, b = curve.domain
    t, y = curve.t, curve.y
    if t.size < 2:
        t, y = numpy.array([a, b]), numpy.zeros((2, curve.value_dim))
    zero = numpy.zeros((2, y.shape[1]))
    knots = numpy.concatenate([[a, t[0]], t, [t[-1], b]])
    values = numpy.concatenate([zero, y, zero])
    edges = table.edges[1:-1]
    where = numpy.clip(numpy.searchsorted(knots, edges, side="right") - 1, 0, knots.size - 2)
    width = knots[where + 1] - knots[where]
    share = numpy.clip((edges - knots[where]) / numpy.where(width > 0, width, 1.0), 0.0, 1.0)
    inserted = values[where] * (1 - share[:, None]) + values[where + 1] * share[:, None]
    knots = numpy.insert(knots, where + 1, edges)
    values = numpy.insert(values, where + 1, inserted, axis=0)
    h = numpy.diff(knots)
    middle = knots[:-1] + h / 2
    cell = numpy.clip(((middle - a) / (2 * table.width)).astype(numpy.intp), 0,
                      table.tau.shape[0] - 1)
    centre = a + (2 * cell + 1) * table.width
    return (cell, (middle - centre) / table.width, h / (2 * table.width), h,
            (values[:-1] + values[1:]) / 2, (values[1:] - values[:-1]) / 2)


def _powers(x, count):
    """(count, P): x^0 .. x^(count - 1) by repeated products (power-major: contiguous rows)."""
    out = numpy.empty((count, x.size))
    out[0] = 1.0
    for k in range(1, count):
        numpy.multiply(out[k - 1], x, out=out[k])
    return out


def _two_sum(total, error, part):
    """total + part by TwoSum, the rounding error carried in ``error`` (in place)."""
    new = total + part
    virtual = new - total
    error += (total - (new - virtual)) + (part - virtual)
    total[...] = new


def _segments(cell):
    """(cells, starts, stops) of the runs of equal cell indices in a block of pieces."""
    starts = numpy.flatnonzero(numpy.diff(cell, prepend=-1))
    return cell[starts], starts, numpy.append(starts[1:], cell.size)


def _blocks(pieces, sigma):
    """Blocks of PIECES pieces, each with the order I its longest piece needs (>= 1)."""
    for start in range(0, pieces[3].size, PIECES):
        block = tuple(x[start:start + PIECES] for x in pieces)
        yield block, max(1, piece_order(sigma, float(numpy.max(block[2]))))


def _moments(pieces, table, sigma):
    """mu[c, n, :] = int over cell c of q v^n dx (v^n expanded on each piece to rho^order):
    per cell the products of the pieces' weights h rho^i (ybar/(i + 1), delta/(i + 2))
    with their powers v^k, summed by BLAS within a block and over blocks by TwoSum."""
    size, degree, values = table.tau.shape[0], table.tau.shape[1], pieces[4].shape[1]
    total = numpy.zeros((size, values, max(degree, 2), degree))  # order I <= max(K, 1)
    error = numpy.zeros_like(total)
    top = 0
    for (cell, v, rho, h, ybar, delta), order in _blocks(pieces, sigma):
        top = max(top, order)
        mean = numpy.array([1.0 / (i + 1) if i % 2 == 0 else 0.0 for i in range(order + 1)])
        slope = numpy.array([1.0 / (i + 2) if i % 2 == 1 else 0.0 for i in range(order + 1)])
        scale = _powers(rho, order + 1) * h
        weights = (scale[None] * (mean[None, :, None] * ybar.T[:, None]
                                  + slope[None, :, None] * delta.T[:, None]))  # (n, i, s)
        powers = _powers(v, degree)
        cells, starts, stops = _segments(cell)
        if cells.size > _FEW * h.size:      # short runs: one reduceat, not a BLAS call each
            products = weights[:, :, None, :] * powers[None, None]
            part = numpy.moveaxis(numpy.add.reduceat(products, starts, axis=-1), -1, 0)
        else:
            part = numpy.empty((cells.size, values, order + 1, degree))
            for j, (start, stop) in enumerate(zip(starts, stops)):
                part[j] = weights[:, :, start:stop] @ powers[:, start:stop].T
        here, wrong = total[cells, :, :order + 1], error[cells, :, :order + 1]
        _two_sum(here, wrong, part)
        total[cells, :, :order + 1], error[cells, :, :order + 1] = here, wrong
    total += error
    mu = numpy.zeros((size, degree, values))
    for n in range(degree):
        for i in range(min(n, top) + 1):
            mu[:, n] += math.comb(n, i) * total[:, :, i, n - i]
    return mu


@functools.lru_cache(maxsize=None)
def _legendre_change(order):
    """A with lambda^i = sum_k A[k, i] P_k(lambda) on [-1, 1], i, k <= order."""
    change = numpy.zeros((order + 1, order + 1))
    for i in range(order + 1):
        column = numpy.polynomial.legendre.poly2leg(numpy.eye(order + 1)[i])
        change[:column.size, i] = column
    return change


def _residual(pieces, table, sigma, c):
    """||q - G||^2, G the truncated local Taylor polynomial of P q: per piece, Parseval in the
    piece's Legendre coefficients (a sum of non-negative terms, pairwise per block, the
    blocks by math.fsum)."""
    degree = table.tau.shape[1]
    local = numpy.einsum("cnj,jv->cvn", table.tau, c)             # gamma[c, :, n]
    shifted = numpy.zeros(local.shape[:2] + (max(degree, 2), degree))  # [c, v, i, k]
    for i in range(degree):
        for k in range(degree - i):
            shifted[:, :, i, k] = math.comb(k + i, i) * local[:, :, k + i]
    totals = []
    for (cell, v, rho, h, ybar, delta), order in _blocks(pieces, sigma):
        change = _legendre_change(order)
        norms = 1.0 / (2 * numpy.arange(order + 1) + 1.0)
        powers = _powers(v, degree)
        cells, starts, stops = _segments(cell)
        if cells.size > _FEW * h.size:
            taylor = numpy.einsum("snik,ks->nis", shifted[cell, :, :order + 1], powers)
        else:
            taylor = numpy.empty((shifted.shape[1], order + 1, h.size))  # (n, i, s)
            for c, start, stop in zip(cells, starts, stops):
                taylor[:, :, start:stop] = shifted[c, :, :order + 1] @ powers[:, start:stop]
        taylor *= _powers(rho, order + 1)
        g = numpy.einsum("ki,nis->nks", change, taylor)
        g[:, 0] -= ybar.T
        g[:, 1] -= delta.T
        totals.append(float(numpy.sum((norms[:, None] * h) * numpy.sum(g * g, axis=0))))
    return math.fsum(totals)


def project_and_residual(curve, table):
    """(c, ||q - P q||^2): the orthonormal coordinates (m, n) and the residual of the whole
    space in O(S m) from the local Taylor tables (module docstring); each block of pieces
    is expanded to the order I its longest piece needs."""
    pieces = _split(curve, table)
    sigma = binomial_bounds(table.beta)
    c = _contract(table.tau, _moments(pieces, table, sigma))
    return c, _residual(pieces, table, sigma, c)


def _contract(tau, mu):
    """c_j = sum over cells of sum_n tau[c, n, j] mu[c, n]: each cell's K + 1 products by
    einsum, the cells' sums by math.fsum (correctly rounded)."""
    per_cell = numpy.einsum("cnj,cnv->cjv", tau, mu)
    return numpy.array([[math.fsum(per_cell[:, j, v]) for v in range(per_cell.shape[2])]
                        for j in range(per_cell.shape[1])])


def query_eta(table, domain):
    """A bound, per unit of the clip bound B, on |d~_j - d_j| for every query distance
    d_j = dist2(P_(U^(j)) q, q) computed here, for every curve with ||q|| <= B.

    Truncation (exact arithmetic): theta = the cell remainder + TAIL, each e_j and g = P q
    moved by at most theta ||.||_inf, ||g||_inf <= M ||c||, so ||c~ - c|| <= theta M
    sqrt(b - a) B and d_j moves by at most 3 theta M sqrt(b - a) B (twice the coordinates',
    once the residual's G). Rounding (the model of gpcompiler/slack.py: a chain of N
    operations errs by gamma_N of the sum of its terms' magnitudes; BLAS within a block of
    PIECES pieces in any order, TwoSum across blocks, math.fsum across cells): every term's
    magnitude is at most kappa = sum_n 2^n beta_n times ||e_j||_inf per unit of
    h max(|y_0|, |y_1|) <= 2 int |q| over the piece, and int |q| <= sqrt(3 (b - a)) ||q||
    for the interpolant of |y| (docs/clipping.md); the residual is a sum of non-negative
    terms (pairwise, then math.fsum) and the tail energies are m more, so the square root
    errs by gamma_(64 + m) relatively."""
    a, b = domain
    cells, degree = table.tau.shape[:2]
    length = Fraction(b) - Fraction(a)
    kappa = sum(2 ** n * Fraction(float(v)) for n, v in enumerate(table.beta))
    sup = Fraction(table.sup_norm)
    root = Fraction(ceil_sqrt(length))
    steps = gamma(PIECES + 5 * degree + 16) + UNIT + gamma(PIECES) ** 2
    truncation = 3 * (Fraction(table.tail) + Fraction(TAIL)) * sup * root
    coordinates = steps * 2 * kappa * sup * Fraction(ceil_sqrt(3 * length))
    residual = steps * (2 * Fraction(ceil_sqrt(3)) + kappa * sup * root)
    summed = gamma(64 + table.tau.shape[2])     # the residual plus the tail's m squares
    return ceil_float((truncation + 2 * coordinates + residual + summed) * (1 + summed))
