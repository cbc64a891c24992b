"""Per-record terms of the CDF estimators, as the package (gpcompiler/cdf) and generated CDF
modules compute them (docs/clipping.md, "CDF sums"): each record's direct factors from its
Chebyshev values and the non-negative Legendre weights, and its powers by running products,
so one rigorous error bound per record holds for both (gpcompiler/cdf/streaming.py,
factor_errors and mean_errors)."""
import math

import numpy


def halves(size):
    """g_m = C(2m, m)/4^m, m < size, each rounded once (a quotient of integers)."""
    return numpy.array([math.comb(2 * m, m) / 4 ** m for m in range(size)])


def legendre_weights(top):
    """W (top + 1, top + 1): P_j = sum_l T_l W[l, j], W[|j - 2m|, j] = g_m g_(j-m) summed
    over m (each product rounded once, and the two equal products of l > 0 added exactly)."""
    g = halves(top + 1)
    j, m = numpy.tril_indices(top + 1)  # m <= j
    weights = numpy.zeros((top + 1, top + 1))
    numpy.add.at(weights, (numpy.abs(j - 2 * m), j), g[m] * g[j - m])
    return weights


def direct_factors(x, degree, weights=None):
    """int_x^1 e_k per record of x (in [-1, 1]), k = 0..degree, as (N, degree + 1): the
    Chebyshev values T_l(x) by T_(l+1) = 2x T_l - T_(l-1) (a product and a difference, each
    rounded once), the Legendre values P_j as one product with the weights
    (legendre_weights(degree + 1), or ``weights``), then -(P_(k+1) - P_(k-1)) /
    sqrt(2(2k+1)) with P_(-1) := 1."""
    chebyshev = numpy.empty((x.size, degree + 2))
    chebyshev[:, 0], chebyshev[:, 1] = 1.0, x
    double = x + x
    for l in range(2, degree + 2):
        numpy.multiply(double, chebyshev[:, l - 1], out=chebyshev[:, l])
        chebyshev[:, l] -= chebyshev[:, l - 2]
    values = chebyshev @ (legendre_weights(degree + 1) if weights is None else weights)
    below = numpy.concatenate([numpy.ones((x.size, 1)), values[:, :-2]], axis=1)
    k = numpy.arange(degree + 1)
    return -(values[:, 1:] - below) / numpy.sqrt(2 * (2 * k + 1))


def powers(x, degree):
    """x^i per record, i = 1..degree + 1, as (N, degree + 1), by running products (power
    i is i - 1 products, each rounded once)."""
    out = numpy.empty((x.size, degree + 1))
    out[:, 0] = x
    for i in range(1, degree + 1):
        numpy.multiply(out[:, i - 1], x, out=out[:, i])
    return out
