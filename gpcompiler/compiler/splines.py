"""Piecewise polynomials, exactly (Fractions): B-splines by the Cox-de Boor recurrence, each
function as one polynomial per piece between consecutive breakpoints, and their Gram
matrices in L2, L2(w) for a polynomial weight w, and H^1 (docs/reference/spec.md,
"B-splines and piecewise bases").

A polynomial is a list of coefficients, lowest power first. On a piece [a, b] a function is
held in the local variable u = (2t - a - b)/(b - a) in [-1, 1], so that the exact integrals
below never meet large powers of t.
"""
from fractions import Fraction


def clamped_knots(order, lo, hi, interior):
    """The knot vector of a clamped B-spline basis of ``order`` k on [lo, hi]: lo and hi
    repeated k times around the interior knots (every B-spline but the first and the last
    vanishes at the ends)."""
    return (lo,) * order + tuple(interior) + (hi,) * order


def bspline_polynomials(order, knots):
    """[{left end of a knot interval: coefficients in t}] for B_(j,k), j < len(knots) - k,
    by the Cox-de Boor recurrence B_(j,1) = 1 on [tau_j, tau_(j+1)),
    B_(j,k) = (t - tau_j)/(tau_(j+k-1) - tau_j) B_(j,k-1)
              + (tau_(j+k) - t)/(tau_(j+k) - tau_(j+1)) B_(j+1,k-1),
    a term with a zero denominator left out (de Boor, A Practical Guide to Splines, IX)."""
    current = [{knots[i]: [Fraction(1)]} if knots[i] < knots[i + 1] else {}
               for i in range(len(knots) - 1)]
    for k in range(2, order + 1):
        following = []
        for j in range(len(knots) - k):
            out = {}
            left, right = knots[j + k - 1] - knots[j], knots[j + k] - knots[j + 1]
            if left:
                _add_scaled(out, current[j], -knots[j] / left, 1 / left)
            if right:
                _add_scaled(out, current[j + 1], knots[j + k] / right, -1 / right)
            following.append(out)
        current = following
    return current


def _add_scaled(out, pieces, constant, slope):
    """out += (constant + slope t) * pieces, piece by piece."""
    for start, poly in pieces.items():
        product = [Fraction(0)] * (len(poly) + 1)
        for n, c in enumerate(poly):
            product[n] += constant * c
            product[n + 1] += slope * c
        total = out.get(start, [])
        out[start] = [x + y for x, y in _padded(total, product)]


def _padded(p, q):
    size = max(len(p), len(q))
    return zip(p + [Fraction(0)] * (size - len(p)), q + [Fraction(0)] * (size - len(q)))


def local(poly, a, b):
    """The coefficients in u of p(t), t = (a + b)/2 + (b - a)/2 u."""
    return substitute(poly, (a + b) / 2, (b - a) / 2)


def substitute(poly, middle, half):
    """The coefficients in u of p(middle + half u) (Horner's scheme)."""
    out = [Fraction(0)]
    for c in reversed(poly):
        shifted = [Fraction(0)] * (len(out) + 1)
        for n, v in enumerate(out):
            shifted[n] += middle * v
            shifted[n + 1] += half * v
        shifted[0] += c
        out = shifted
    return _trimmed(out)


def _trimmed(poly):
    while len(poly) > 1 and poly[-1] == 0:
        poly = poly[:-1]
    return poly


def multiply(p, q):
    out = [Fraction(0)] * (len(p) + len(q) - 1)
    for i, a in enumerate(p):
        if a:
            for j, b in enumerate(q):
                out[i + j] += a * b
    return out


def derivative(p):
    return [n * c for n, c in enumerate(p)][1:] or [Fraction(0)]


def integral(p):
    """int_-1^1 p(u) du = sum over even n of 2 c_n/(n + 1)."""
    return sum((2 * c / (n + 1) for n, c in enumerate(p) if n % 2 == 0), Fraction(0))


def gram(rows, breaks, weight=None, sobolev=False):
    """G_jl = sum over pieces [a, b] of int_a^b phi_j phi_l w dt (+ int phi_j' phi_l' dt for
    H^1), exact: ``rows`` per function {piece index: local coefficients}, ``weight`` the
    weight's coefficients in t (None: w = 1)."""
    m = len(rows)
    out = [[Fraction(0)] * m for _ in range(m)]
    for piece, (a, b) in enumerate(zip(breaks[:-1], breaks[1:])):
        half = (b - a) / 2
        w = local(weight, a, b) if weight is not None else [Fraction(1)]
        present = [j for j in range(m) if piece in rows[j]]
        for j in present:
            pj = rows[j][piece]
            weighted = multiply(pj, w)
            for k in present:
                if k > j:
                    continue
                pk = rows[k][piece]
                value = half * integral(multiply(weighted, pk))
                if sobolev:
                    value += integral(multiply(derivative(pj), derivative(pk))) / half
                out[j][k] += value
    for j in range(m):
        for k in range(j):
            out[k][j] = out[j][k]
    return out


_LEGENDRE = [[Fraction(1)], [Fraction(0), Fraction(1)]]


def legendre(d):
    """The coefficients of P_d(u) by Bonnet's recurrence."""
    while len(_LEGENDRE) <= d:
        n = len(_LEGENDRE) - 1
        up = [Fraction(0)] + [(2 * n + 1) * c for c in _LEGENDRE[n]]
        down = _LEGENDRE[n - 1] + [Fraction(0), Fraction(0)]
        _LEGENDRE.append([(x - n * y) / (n + 1) for x, y in zip(up, down)])
    return _LEGENDRE[d]


def legendre_coefficients(poly, size):
    """C_d, d < size, with p(u) = sum_d C_d P_d(u): C_d = (2d + 1)/2 int_-1^1 p P_d du."""
    return [Fraction(2 * d + 1, 2) * integral(multiply(poly, legendre(d))) for d in range(size)]


def spline_rows(order, knots, breaks):
    """Per B-spline, {piece index of ``breaks``: local coefficients}: the clamped basis's
    functions on the pieces between consecutive distinct knots."""
    index = {a: n for n, a in enumerate(breaks[:-1])}
    return [{index[a]: local(poly, a, breaks[index[a] + 1]) for a, poly in pieces.items()}
            for pieces in bspline_polynomials(order, knots)]
