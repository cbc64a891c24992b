"""The float error before noise, stated (docs/clipping.md): every module clips its input to a
public bound B, and its float64 projection of a clipped curve differs from the exact one by
at most ETA * B in the spec's metric, so the mechanism is epsilon-GP with an additive distance
slack: loss <= epsilon (d(q, q') + 2 ETA B) (likewise rho-CGP with d + 2 ETA B).

ETA is a function of public values only (the basis size, the value dimension, the number of
variables) and of the error model below; it is rounded up by exact arithmetic.
"""
import math
from fractions import Fraction

from ..runtime.rounding import ceil_float, ceil_sqrt
from ..runtime.exact import lattice

UNIT = Fraction(1, 2 ** 53)       # u: the unit roundoff of float64 (round to nearest)
WEIGHT_ACCURACY = Fraction(1, 10 ** 13)  # delta_w: each weight's error, relative (see below)
BLOCK = 1024                      # samples per block of the 1-D contraction (BLAS)
MAX_SAMPLES = 2 ** 40             # samples of one curve: 8 TiB of float64 times
MAX_AXIS_NODES = 2 ** 16          # grid nodes per variable of a field (box modules)
SLACK_FRACTION = 1e-6             # the default bound keeps 2 ETA B <= this x max(scale, 1)
BOUND_FLOOR = 2.0 ** -960         # the least bound: below it the projection's products underflow
NORM_TERMS = 64                   # rounding steps of a pairwise-summed norm (log2 2^40 + 24)


def gamma(n):
    """gamma_n = n u / (1 - n u): the relative error of n floating-point operations
    (Higham, Accuracy and Stability, Lemma 3.1), as an exact Fraction."""
    return n * UNIT / (1 - n * UNIT)


def contraction_error(terms_per_block, blocks):
    """Error of sum_s y_s A_s per unit of sum_s |y_s A_s|, in any summation order: each block
    of ``terms_per_block`` products is summed by BLAS (gamma_K, any order and FMA), the
    block sums pairwise (a binary counter of depth at most 2 log2(blocks) + 1: gamma_D, any
    tree of depth D; Higham, Accuracy and Stability, eq. 4.6), the weights carry their
    relative error delta_w."""
    blocked = gamma(terms_per_block)
    depth = 2 * (blocks - 1).bit_length() + 1
    return (1 + WEIGHT_ACCURACY) * (blocked + (1 + blocked) * gamma(depth)) + WEIGHT_ACCURACY


def curve_eta(basis_size, value_dim, vector_basis, coefficients, sobolev=False, ratio=3):
    """ETA of a 1-D module (plain L2, or H^1 if ``sobolev``): ||c~ - P clip_B(q)|| <= ETA B
    for every curve q.

    Model: with q~ the interpolant of |y|, sum_s |y_s| |A_sj| <= int q~ |e_j| <= ||q~||
    <= sqrt(3) ||q|| (a^2 + |ab| + b^2 <= 3 (a^2 - |ab| + b^2) on each piece), per
    coefficient j; over the m coefficients (m n for vector values) the Euclidean norm gains
    sqrt(m). H^1 contracts the samples and their differences (2 MAX_SAMPLES terms): the
    slopes' part is sum_k |y_(k+1) - y_k| |S_kj| <= int |q'| |e_j'| <= ||q'|| ||e_j'|| with
    S_kj the mean of e_j' over piece k (computed from a Gauss rule of e_j', relative error
    delta_w; the difference and the division by h: 2 roundings), so per coefficient
    sqrt(3) ||q|| ||e_j|| + ||q'|| ||e_j'|| <= sqrt(3) ||q||_H1 times the per-unit error,
    whatever the sample count. A weighted metric replaces 3 by the weight's piece ratio
    rho_w >= ||q~||_w^2/||q||_w^2 (``ratio``, analysis.weights.piece_ratio), in the
    projection and in its norm (a sum of a^2 m_00 + 2ab m_01 + b^2 m_11 per piece, masses
    with relative error delta_w: error rho_w (gamma_NORM_TERMS + delta_w) of ||q||_w^2).
    The clip of the curve (its norm pairwise summed: NORM_TERMS steps, one more for H^1)
    and of the ``coefficients`` (their norm a sum of that many squares in any order, then a
    scaling: 3 roundings) add their relative errors of B."""
    terms = BLOCK * (value_dim if vector_basis else 1)
    per_unit = contraction_error(terms, (2 if sobolev else 1) * MAX_SAMPLES // BLOCK)
    if sobolev:
        per_unit = per_unit * (1 + 2 * UNIT) + 2 * UNIT
    projection = Fraction(ceil_sqrt(Fraction(ratio) * basis_size)) * per_unit
    clip = gamma(max(NORM_TERMS + (1 if sobolev else 0), coefficients)) + 3 * UNIT
    if ratio != 3:
        clip += Fraction(ratio) * (gamma(NORM_TERMS) + WEIGHT_ACCURACY)
    return ceil_float((projection + clip) * (1 + clip))


def box_eta(atoms_size, dimension, transform_norm, coefficients, ratios=None,
            differences=False):
    """ETA of a module over a box of k = ``dimension`` variables (L2 fields, or weighted by
    a separable weight): each axis is contracted by a tensordot of at most MAX_AXIS_NODES
    nodes, the multilinear interpolant of |y| has ||q~|| <= 3^(k/2) ||q|| (a separable
    weight: (rho_1 ... rho_k)^(1/2) ||q||_w with ``ratios`` the factors' piece ratios: the
    cell's mass matrix is the Kronecker product of the axes', and the ratio of a Kronecker
    product of normalized 2 x 2 matrices is at most the product of their condition numbers),
    and the change from atoms to the orthonormal basis (a matrix of 2-norm
    ``transform_norm``, 1 when it is the identity) multiplies the atom coordinates' error
    and adds gamma_A of them. A weighted norm's masses add rho (gamma + delta_w) to the
    clip's relative error, as in 1-D. H^1 with tensor Legendre atoms (``differences``):
    each axis contracts the values and their differences (2 MAX_AXIS_NODES terms, one more
    rounding), the slope part against the mean of L_n' over each piece, so an atom
    coordinate errs by at most 3^(k/2) ||f||_H1 ||psi_a||_H1 per unit (as in 1-D, axis by
    axis), its k + 1 blocks add gamma_(k+1), and ``transform_norm`` is ||K D||_2 with D the
    atoms' H^1 norms."""
    ratio = math.prod(Fraction(r) for r in ratios) if ratios else Fraction(3) ** dimension
    nodes = (2 if differences else 1) * MAX_AXIS_NODES
    axis_error = dimension * (gamma(nodes) + (2 * UNIT if differences else 0)) + WEIGHT_ACCURACY
    atoms = Fraction(transform_norm) * (axis_error + gamma(atoms_size + (dimension + 1
                                                                         if differences else 0)))
    projection = Fraction(ceil_sqrt(ratio * atoms_size)) * atoms
    clip = gamma(max(NORM_TERMS + 4 * dimension, coefficients)) + 3 * UNIT
    if ratios:
        clip += ratio * (gamma(NORM_TERMS + 4 * dimension) + dimension * WEIGHT_ACCURACY)
    return ceil_float((projection + clip) * (1 + clip))


def default_bound(eta, scale, declared=None):
    """The default clip bound at a noise scale (the generated modules' _default_bound): the
    spec's declared bound, else the largest power of two B with 2 eta B <= SLACK_FRACTION x
    max(scale, 1) and 2 eta B <= scale (exact comparisons), at most 2^50 lattice steps (the
    most a release allows), at least BOUND_FLOOR. Above epsilon 1 (noise scale 1) B stops
    shrinking, so a larger budget never clips more, until the slack would pass the noise
    scale or the lattice caps B (docs/clipping.md, "The default bound"). The floor: a
    product of the projection errs by at most 2^-1075 absolutely, so its 2^41 products (the
    model's 2^40 samples, and their differences for H^1) err by at most 2^-1034 < 2^-74 B:
    within ETA B."""
    if declared is not None:
        return declared
    exact = Fraction(scale)
    target = min(Fraction(SLACK_FRACTION) * max(exact, 1), exact) / (2 * Fraction(eta))
    radius = math.ldexp(1.0, math.frexp(float(target))[1])
    # at most two halvings: float(target) is within half an ulp of target
    while Fraction(radius) > target:
        radius /= 2
    return max(min(radius, math.ldexp(lattice(scale), 50)), BOUND_FLOOR)


def facts(eta, scale, declared=None):
    """(B, slack 2 eta B rounded up, lattice step gamma) of a release at a noise scale."""
    radius = default_bound(eta, scale, declared)
    return radius, ceil_float(2 * Fraction(eta) * Fraction(radius)), lattice(scale)
