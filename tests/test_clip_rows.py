"""Every clip acts per row, in every shape and kind (issue 30, item 8; docs/clipping.md).

A batch's rows are clipped each as if alone (bit for bit: a clip that uses one row's factor
for another, or a block's, is caught), and each row's result is the exact projection onto
the ball of radius B within the clip's stated float error. The references are independent:
norms of coefficient vectors at 80 digits (mpmath), squared L2 norms of sampled curves and
gridded fields as exact Fractions (the piecewise-linear curve's sum h (a^2 + ab + b^2)/3,
the fields' hat or cell mass matrices), gamma_n written out here (Higham, Lemma 3.1).
Through generated modules: a batch's release is the release of each curve alone with the
same random words.
"""
import itertools
import math
from fractions import Fraction

import mpmath
import numpy
import pytest

from conftest import generated
from gpcompiler.runtime.clip import clip_rows
from gpcompiler.runtime.curveclip import clip_curves
from gpcompiler.runtime.fieldclip import clip_fields

U = Fraction(1, 2 ** 53)
NORM_TERMS = 64   # docs/clipping.md: a pairwise-summed norm of up to 2^40 samples


def gamma(n):
    """n u / (1 - n u) (Higham, Lemma 3.1)."""
    return n * U / (1 - n * U)


def _equal(a, b):
    numpy.testing.assert_array_equal(a, b, strict=True)


def _within(ratio, tolerance, label):
    """|ratio - 1| <= tolerance, ratio an mpmath number (the computed over the exact)."""
    assert abs(ratio - 1) <= mpmath.mpf(tolerance.numerator) / tolerance.denominator, \
        (label, float(ratio - 1), float(tolerance))


# --- clip_rows: coefficient vectors ---------------------------------------------------

def _direction(rng, d):
    v = rng.standard_normal(d)
    return v / numpy.linalg.norm(v)


def _vector_pool(d, bound, rng):
    """Rows of every kind: inside, outside, far outside, zero, NaN, inf, rows whose sum of
    squares overflows or underflows, subnormal entries, mixed magnitudes."""
    pool = {"inside": 0.7 * bound * _direction(rng, d), "outside": 5 * bound * _direction(rng, d),
            "far": 1e30 * bound * _direction(rng, d), "zero": numpy.zeros(d),
            "huge": 1e300 * _direction(rng, d), "tiny": 1e-200 * _direction(rng, d),
            "subnormal": 5e-324 * numpy.arange(1, d + 1), "boundary": numpy.eye(d)[0] * bound}
    mixed = 1e-200 * _direction(rng, d)
    mixed[-1] = 3 * bound
    pool["mixed"] = mixed
    for kind, value in (("nan", math.nan), ("inf", math.inf)):
        row = _direction(rng, d)
        row[d // 2] = value
        pool[kind] = row
    return pool


def _projection_error(row, out, bound):
    """(||out - P(row)|| / ||P(row)||, ||row|| > B) at 80 digits, P the projection onto the
    ball of radius B."""
    with mpmath.workdps(80):
        exact = [mpmath.mpf(float(x)) for x in row]
        norm = mpmath.sqrt(mpmath.fsum(x * x for x in exact))
        factor = min(mpmath.mpf(1), mpmath.mpf(bound) / norm)
        target = [x * factor for x in exact]
        error = mpmath.sqrt(mpmath.fsum((mpmath.mpf(float(o)) - t) ** 2
                                        for o, t in zip(out, target)))
        return error / (norm * factor), norm / mpmath.mpf(bound)


def _check_row(row, out, bound, label):
    """out is clip_rows of this row alone, bit for bit; the exact projection within
    gamma_d + 3u of B (the norm's d-term sum, then a scaling: runtime/clip.py) for finite
    rows; a row inside the ball, a zero row and a non-finite row are kept as they are."""
    _equal(out, clip_rows(row, bound))
    _equal(out[None], clip_rows(row[None], bound))
    if not numpy.isfinite(row).all() or not row.any():
        _equal(out, row)
        return
    relative, size = _projection_error(row, out, bound)
    assert relative <= float(gamma(row.size) + 3 * U), (label, float(relative))
    if size < 1 - 1e-12:
        _equal(out, row)


@pytest.mark.parametrize("d", [1, 3, 8])
@pytest.mark.parametrize("bound", [1.5, 1e-250])
def test_clip_rows_clips_each_row_alone_in_every_batch_shape(d, bound):
    """Batches of shapes (d,), (1, d), (k, d), (a, b, d) mixing every kind of row, in
    several orders (an inside row first, a far one first): each row's result is its own
    clip, bit for bit, and its exact projection within the stated error. At B = 1e-250 the
    rows inside the ball have sums of squares that underflow and the far rows factors below
    2^-960: both take the scaled path, which must decide each row by itself too."""
    rng = numpy.random.default_rng(d)
    pool = _vector_pool(d, bound, rng)
    names = sorted(pool)
    orders = [names, names[::-1], ["inside"] + names, ["far"] + names, ["tiny", "huge"] + names]
    orders += [list(rng.permutation(names)) for _ in range(3)]
    for order in orders:
        rows = numpy.array([pool[name] for name in order])
        for shape in ((len(order), d), (1, len(order), d)):
            out = clip_rows(rows.reshape(shape), bound).reshape(rows.shape)
            for name, row, result in zip(order, rows, out):
                _check_row(row, result, bound, (name, order[:2], shape))
        half = len(order) // 2 * 2
        out = clip_rows(rows[:half].reshape(2, half // 2, d), bound).reshape(half, d)
        for name, row, result in zip(order, rows[:half], out):
            _check_row(row, result, bound, (name, "2-D batch"))
    for name in names:
        _check_row(pool[name], clip_rows(pool[name], bound), bound, (name, "one row"))


# --- clip_curves: sampled curves ------------------------------------------------------

def _curve_norm_squared(t, y):
    """||q||^2 of the piecewise-linear curve through (t, y) (y (S,) or (S, n)), exact:
    sum over pieces and components of h (a^2 + ab + b^2) / 3."""
    t = [Fraction(float(x)) for x in t]
    y = numpy.asarray(y).reshape(len(t), -1)
    total = Fraction(0)
    for k in range(len(t) - 1):
        h = t[k + 1] - t[k]
        for a, b in zip(y[k], y[k + 1]):
            a, b = Fraction(float(a)), Fraction(float(b))
            total += h * (a * a + a * b + b * b) / 3
    return total


def _check_scaling(y, released, norm_squared, bound, tolerance, label):
    """released (the clipped values times their factor) = y min(1, B/||q||) entrywise
    within ``tolerance`` (relative), from the exact squared norm."""
    with mpmath.workdps(60):
        exact = min(mpmath.mpf(1), mpmath.mpf(bound) / mpmath.sqrt(
            mpmath.mpf(norm_squared.numerator) / norm_squared.denominator))
        for a, b in zip(numpy.ravel(y), numpy.ravel(released)):
            if a != 0:
                _within(mpmath.mpf(float(b)) / (mpmath.mpf(float(a)) * exact), tolerance, label)
            else:
                assert b == 0, label


def _curve_pool(samples, n, bound, rng):
    """Curves (S,) or (S, n) of every kind: inside, outside, far, zero, NaN, inf, values
    whose squares overflow (two such curves, each with its own factor) or underflow, a
    spike."""
    shape = (samples,) if n == 1 else (samples, n)

    def wave(size):
        v = rng.standard_normal(shape)
        return size * v / numpy.abs(v).max()
    spike = numpy.zeros(shape)
    spike[samples // 2] = 40 * bound
    pool = {"inside": wave(0.1 * bound), "outside": wave(6 * bound), "far": wave(1e25 * bound),
            "zero": numpy.zeros(shape), "huge": wave(1e300), "vast": wave(1e250),
            "tiny": wave(1e-200), "spike": spike}
    for kind, value in (("nan", math.nan), ("inf", math.inf)):
        curve = wave(bound)
        curve[1] = value
        pool[kind] = curve
    return pool


def _times(samples, rng, span):
    gaps = rng.uniform(0.2, 1.0, samples - 1)
    return numpy.concatenate([[0.0], numpy.cumsum(gaps)]) * span / gaps.sum() - span / 2


def _check_curve(t, y, values, factor, bound, n, label):
    """Each curve's (values, factor) are its own clip's, bit for bit; values * factor is
    the exact projection within the stated error; an inside or zero curve is kept with
    factor 1, a non-finite one kept as it is (refused after the projection)."""
    alone_values, alone_factor = clip_curves(t, y, bound, n)
    _equal(values, alone_values)
    _equal(numpy.asarray(factor), numpy.asarray(alone_factor))
    if not numpy.isfinite(y).all() or not y.any():
        _equal(values, y)
        assert factor == 1.0 or not numpy.isfinite(y).all(), label
        return
    norm_squared = _curve_norm_squared(t, y)
    released = values * factor
    _check_scaling(y, released, norm_squared, bound, gamma(NORM_TERMS) + 3 * U, label)
    if norm_squared < Fraction(bound) ** 2 * Fraction(999, 1000):
        _equal(values, y)
        assert factor == 1.0, label


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("shared", [True, False], ids=["shared grid", "per-curve grids"])
def test_clip_curves_clips_each_curve_alone_in_every_batch_shape(n, shared):
    """Batches (k,), (a, b) of curves with scalar (n = 1) and vector (n = 3) values, on one
    shared time grid or on a grid per curve (spans from 0.01 to 100: a curve clipped with
    another's grid is off by a factor 10 at least), mixing every kind of curve in several
    orders: each curve's values and factor are its own clip's, bit for bit, and its clipped
    values times its factor are the exact projection within gamma_64 + 3u (the slack's
    curve clip term: docs/clipping.md). A norm that drops the value axis is off by about
    sqrt(n)."""
    rng = numpy.random.default_rng(10 * n + shared)
    samples, bound = 9, 2.5
    pool = _curve_pool(samples, n, bound, rng)
    names = sorted(pool)
    orders = [names, names[::-1], ["inside"] + names, ["far"] + names, ["tiny", "huge"] + names]
    orders += [list(rng.permutation(names)) for _ in range(2)]
    for order in orders:
        y = numpy.array([pool[name] for name in order])
        spans = 10.0 ** rng.uniform(-2, 2, len(order))
        grids = numpy.array([_times(samples, rng, s) for s in spans])
        t = grids[0] if shared else grids
        half = len(order) // 2 * 2
        batches = [(y, t, (len(order),)),
                   (y[:half].reshape((2, half // 2) + y.shape[1:]),
                    t if shared else t[:half].reshape(2, half // 2, samples), (half,))]
        for values, times, count in batches:
            out, factors = clip_curves(times, values, bound, n)
            assert factors.shape == values.shape[:values.ndim - (1 if n == 1 else 2)]
            out = out.reshape(y[:count[0]].shape)
            factors = factors.reshape(count)
            for i in range(count[0]):
                _check_curve(t if shared else grids[i], y[i], out[i], factors[i], bound, n,
                             (order[i], order[:2], values.shape, shared))


# --- clip_fields: gridded fields --------------------------------------------------------

def _hat_mass(t):
    """The exact mass matrix of hat functions on the nodes t (Fractions)."""
    t = [Fraction(float(x)) for x in t]
    size = len(t)
    mass = [[Fraction(0)] * size for _ in range(size)]
    for k in range(size - 1):
        h = t[k + 1] - t[k]
        mass[k][k] += h / 3
        mass[k + 1][k + 1] += h / 3
        mass[k][k + 1] += h / 6
        mass[k + 1][k] += h / 6
    return mass


def _cell_mass(t):
    """The exact (diagonal) mass matrix of the cells with edges t (Fractions)."""
    t = [Fraction(float(x)) for x in t]
    size = len(t) - 1
    return [[t[k + 1] - t[k] if j == k else Fraction(0) for j in range(size)]
            for k in range(size)]


def _field_norm_squared(grids, y, kind):
    """||f||^2 = y . (M_1 (x) ... (x) M_k) y summed over value components, exact."""
    masses = [(_hat_mass if kind == "linear" else _cell_mass)(t) for t in grids]
    shape = tuple(len(m) for m in masses)
    values = numpy.asarray(y).reshape(shape + (-1,))
    total = Fraction(0)
    for left in itertools.product(*(range(s) for s in shape)):
        for right in itertools.product(*(range(s) for s in shape)):
            weight = math.prod((m[i][j] for m, i, j in zip(masses, left, right)),
                               start=Fraction(1))
            if weight:
                total += weight * sum(Fraction(float(a)) * Fraction(float(b))
                                      for a, b in zip(values[left], values[right]))
    return total


def _field_pool(shape, bound, rng):
    def wave(size):
        v = rng.standard_normal(shape)
        return size * v / numpy.abs(v).max()
    return {"inside": wave(0.05 * bound), "outside": wave(8 * bound),
            "far": wave(1e25 * bound), "zero": numpy.zeros(shape), "huge": wave(1e300),
            "tiny": wave(1e-300)}


@pytest.mark.parametrize("kind", ["linear", "cells"])
@pytest.mark.parametrize("dimension", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 2])
def test_clip_fields_clips_each_field_alone_in_every_kind_and_shape(kind, dimension, n):
    """Grid fields ("linear": nodal values) and cell fields ("cells": cell values on
    uneven cells), over 1 to 3 variables, scalar (value rank 0) and vector (rank 1, n = 2)
    values, batches (k,) and (a, b) mixing every kind of field: each field is its own clip,
    bit for bit, and its exact projection within gamma_(64 + 4k) + 3u (the slack's field
    clip term: docs/clipping.md). A cell field clipped with uniform cells, or a norm that
    drops the value axis, is off by a factor well above that."""
    rng = numpy.random.default_rng(dimension * 10 + n + (kind == "cells"))
    bound, rank = 1.75, int(n > 1)
    nodes = (4, 3, 3)[:dimension]
    grids = [numpy.sort(rng.uniform(-1, 1, s + (kind == "cells"))) for s in nodes]
    grids = [numpy.concatenate([[g[0]], g[0] + numpy.cumsum(rng.uniform(0.05, 1, g.size - 1))])
             for g in grids]
    shape = tuple(nodes) + ((n,) if rank else ())
    pool = _field_pool(shape, bound, rng)
    names = sorted(pool)
    tolerance = gamma(NORM_TERMS + 4 * dimension) + 3 * U
    for order in (names, names[::-1], ["inside"] + names, ["far"] + names):
        y = numpy.array([pool[name] for name in order])
        half = len(order) // 2 * 2
        for batch in (y, y[:half].reshape((2, half // 2) + shape)):
            out = clip_fields(grids, batch, kind, bound, rank).reshape((-1,) + shape)
            for name, field, result in zip(order, y, out):
                _equal(result, clip_fields(grids, field, kind, bound, rank))
                if not field.any():
                    _equal(result, field)
                    continue
                norm_squared = _field_norm_squared(grids, field, kind)
                _check_scaling(field, result, norm_squared, bound, tolerance,
                               (name, kind, dimension, n))
                if norm_squared < Fraction(bound) ** 2 * Fraction(999, 1000):
                    _equal(result, field)


# --- generated modules: a batch is released as each curve alone ---------------------------

@pytest.mark.parametrize("name", ["ellipse", "two_circles", "trajectory_linear"])
@pytest.mark.parametrize("budget", [{"epsilon": 2.0}, {"rho": 2.0}], ids=["GP", "CGP"])
def test_a_vector_modules_coefficients_are_clipped_as_one_vector(name, budget):
    """privatize of vector coefficients c (m, n) far outside the ball (norm 40 B, one
    component much larger than the others) releases the projection of all m n coordinates
    onto the ball (80-digit reference, moved inside by 2^-30 so that it is kept as it is)
    with the same seed: equal to one lattice step (the two inputs differ by about 2^-30 B;
    a clip per value component, or of the first component's norm, moves some coordinate by
    about B)."""
    module = generated(name)
    rng = numpy.random.default_rng(len(name))
    bound = 2.0
    for _ in range(4):
        c = rng.standard_normal(module.COEF_SHAPE) * numpy.array([30.0] + [1.0] *
                                                                   (module.VALUE_DIM - 1))
        c *= 40 * bound / numpy.linalg.norm(c)
        with mpmath.workdps(80):
            values = [mpmath.mpf(float(x)) for x in c.ravel()]
            norm = mpmath.sqrt(mpmath.fsum(x * x for x in values))
            inside = numpy.array([float(x * bound / norm * (1 - mpmath.mpf(2) ** -30))
                                  for x in values]).reshape(c.shape)
        for seed in range(3):
            clipped = module.privatize(c, rng=seed, bound=bound, **budget)
            kept = module.privatize(inside, rng=seed, bound=bound, **budget)
            step = module.release_facts(bound=bound, **budget)["lattice"]
            assert numpy.abs(clipped - kept).max() <= step, (seed, clipped - kept)


class Words:
    """A noise source that hands out scripted 64-bit words (exact.random_words reads
    ``_words``), then a seeded stream's once they run out, and counts what it gave."""

    def __init__(self, words, seed=0):
        self.words, self.given = numpy.asarray(words, dtype=numpy.uint64), 0
        self.rest = numpy.random.default_rng(seed)

    def _words(self, count):
        start, self.given = self.given, self.given + count
        head = self.words[start:start + count]
        more = self.rest.integers(0, 1 << 64, size=count - head.size, dtype=numpy.uint64)
        return numpy.concatenate([head, more])


def _words(count, seed):
    return numpy.random.default_rng(seed).integers(0, 1 << 64, size=count, dtype=numpy.uint64)


def _row_words(release, count, seed):
    """(words, per row): the batch release draws its words up front, the same number per
    row (GP: a spherical Laplace per row, its radius's tail a sum of exponentials)."""
    counter = Words([])
    release(counter)
    assert counter.given % count == 0
    return _words(counter.given, seed), counter.given // count


def _batch_curves(module, count, rng):
    """count curves of every kind (inside, outside, far, zero, extreme magnitudes) on
    per-curve grids, for a module's curve interval and value dimension."""
    low, high = module.curve_interval()
    samples = 12
    t = numpy.sort(rng.uniform(low, high, (count, samples)), axis=-1)
    shape = (count, samples) + ((module.VALUE_DIM,) if module.VALUE_DIM > 1 else ())
    y = rng.standard_normal(shape)
    sizes = [1e-3, 1e3, 0.0, 1e300, 1e-200, 1e30, 1.0, 50.0][:count]
    return t, y * numpy.array(sizes).reshape((count,) + (1,) * (y.ndim - 1))


@pytest.mark.parametrize("name", ["legendre10", "ellipse", "linear", "trajectory_linear"])
@pytest.mark.parametrize("shared", [True, False], ids=["shared grid", "per-curve grids"])
def test_a_batch_of_curves_is_released_as_each_curve_alone_with_the_same_words(name, shared):
    """GP: project_and_privatize of a batch (curves inside, outside, far outside the bound,
    zero, with extreme magnitudes) equals, row by row and bit for bit, the release of each
    curve alone given that row's words; for GP and CGP, it equals privatize of each curve's
    own project(..., bound=B) stacked (the same words: the same batch shape). A clip that
    uses one curve's factor, grid or norm for another changes some row by far more than a
    lattice step."""
    module = generated(name)
    rng = numpy.random.default_rng(len(name) + shared)
    t, y = _batch_curves(module, 8, rng)
    if shared:
        t = t[0]
    bound = 2.0
    one = [(t if shared else t[i], y[i]) for i in range(len(y))]

    def batch(source, **budget):
        return module.project_and_privatize(t, y, rng=source, bound=bound, **budget)
    words, width = _row_words(lambda s: batch(s, epsilon=2.0), len(y), 7)
    released = batch(Words(words), epsilon=2.0)
    for i, (times, values) in enumerate(one):
        alone = module.project_and_privatize(times, values, rng=Words(words[i * width:]),
                                             bound=bound, epsilon=2.0)
        _equal(released[i], alone)
    for budget in ({"epsilon": 2.0}, {"rho": 2.0}):
        projections = numpy.array([module.project(times, values, bound=bound)
                                   for times, values in one])
        composed = module.privatize(projections, rng=11, bound=bound, **budget)
        _equal(batch(11, **budget), composed)


@pytest.mark.parametrize("name", ["legendre_box", "surface_total"])
@pytest.mark.parametrize("kind", ["linear", "cells"])
def test_a_batch_of_fields_is_released_as_each_field_alone_with_the_same_words(name, kind):
    """GP: a box module's project_and_privatize of a batch of grid or cell fields (inside,
    outside, far outside the bound, zero, extreme magnitudes) equals, field by field and
    bit for bit, the release of each field alone given that field's words."""
    module = generated(name)
    rng = numpy.random.default_rng(len(name) + len(kind))
    extra = kind == "cells"
    grids = [numpy.sort(rng.uniform(low, high, size + extra))
             for (low, high), size in zip(module.domain(), (6, 5))]
    shape = tuple(g.size - extra for g in grids)
    sizes = numpy.array([1e-3, 1e3, 0.0, 1e300, 1e-200, 1e30])
    y = rng.standard_normal((sizes.size,) + shape) * sizes[:, None, None]
    bound = 2.0

    def release(values, source):
        return module.project_and_privatize(grids, values, kind=kind, rng=source, bound=bound,
                                            epsilon=2.0)
    words, width = _row_words(lambda s: release(y, s), len(y), 5)
    released = release(y, Words(words))
    for i in range(len(y)):
        _equal(released[i], release(y[i], Words(words[i * width:])))


def test_a_subnormal_curve_clips_without_a_warning():
    """A constant 1e-320 curve (its clip factor overflows: far inside the ball) is released
    with no RuntimeWarning, so a caller running with warnings as errors gets its release
    (new-user review of issue 30)."""
    import warnings
    module = generated("legendre10")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        released = module.project_and_privatize(numpy.linspace(-1, 1, 5), numpy.full(5, 1e-320),
                                                epsilon=1.0, rng=1)
    assert numpy.isfinite(released).all()


def _pairwise(terms):
    """NumPy's pairwise sum, written out (pairwise_sum_DOUBLE): eight partial sums below 129
    terms, else the halves (cut at a multiple of 8), each in Python's IEEE float64."""
    n = len(terms)
    if n < 8:
        return sum(terms, -0.0)
    if n <= 128:
        partial = list(terms[:8])
        end = n - n % 8
        for i in range(8, end, 8):
            partial = [p + t for p, t in zip(partial, terms[i:i + 8])]
        r = partial
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for t in terms[end:]:
            total += t
        return total
    half = n // 2 - (n // 2) % 8
    return _pairwise(terms[:half]) + _pairwise(terms[half:])


@pytest.mark.parametrize("d", [1, 7, 8, 9, 33, 128, 129, 800, 1001])
def test_clip_norm_is_the_documented_pairwise_sum(d):
    """The clip's sum of squares is 0 + the pairwise sum of the squares, in that order, for
    every row of a batch and alone: an order that no platform's SIMD or fused multiply-add
    changes, which the C runtime copies (a lane-wise einsum, as before, fails here)."""
    from gpcompiler.runtime.clip import _sum_squares
    rng = numpy.random.default_rng(d)
    rows = rng.normal(size=(5, d)) * 10.0 ** rng.uniform(-8, 8, size=(5, d))
    batch = _sum_squares(rows)
    for row, got in zip(rows, batch):
        expected = 0.0 + _pairwise([float(v) * float(v) for v in row])
        assert got == expected == _sum_squares(row[None, :])[0]
    assert numpy.array_equal(_sum_squares(numpy.asfortranarray(rows)), batch)  # any layout


# --- extreme curves: a spike on a subnormal width beside the rest of the curve ----------

SPIKE_T = numpy.array([0.0, 2.0 ** -1074, 2.0 ** -1073, 1.0])
SPIKE_SPARSE = numpy.array([0.0, 2.0 ** 1000, 1.2345 * 2.0 ** 466, 1.2345 * 2.0 ** 466])


def _dense(t, y, extra):
    """The same curve with ``extra`` samples on its last (constant) piece."""
    inside = numpy.linspace(t[-2], t[-1], extra + 2)[1:-1]
    return numpy.concatenate([t[:-1], inside, t[-1:]]), numpy.concatenate(
        [y[:-1], numpy.full(extra, y[-1]), y[-1:]])


def _exact_norm_squared(t, y, kind, masses=None):
    """||q||^2 exactly: L2; H^1 (+ (b - a)^2/h per piece of width h > 0); or with the
    given float masses (3, S - 1): a^2 m_00 + 2ab m_01 + b^2 m_11."""
    if kind == "l2":
        return _curve_norm_squared(t, y)
    total = Fraction(0)
    for k in range(len(t) - 1):
        a, b = Fraction(float(y[k])), Fraction(float(y[k + 1]))
        if kind == "masses":
            m = [Fraction(float(masses[i][k])) for i in range(3)]
            total += a * a * m[0] + 2 * a * b * m[1] + b * b * m[2]
            continue
        h = Fraction(float(t[k + 1])) - Fraction(float(t[k]))
        total += h * (a * a + a * b + b * b) / 3 + ((b - a) ** 2 / h if h else 0)
    return total


def _masses(t):
    """The L2 masses of the hats on each piece, h/3, h/6, h/3 (rounded), shape (3, S - 1)."""
    h = numpy.diff(t)
    return numpy.stack([h / 3, h / 6, h / 3])


@pytest.mark.parametrize("kind", ["l2", "sobolev", "masses"])
@pytest.mark.parametrize("samples", [4, 1027], ids=["sparse", "dense"])
def test_a_spike_on_a_subnormal_width_keeps_the_clip_exact(kind, samples):
    """A spike of 2^1000 (2^500 for H^1) on pieces of width 2^-1074 beside a constant of
    2^466: its sum of squares overflows, so the clip takes its extreme path; the clip is
    y min(1, B/||q||) within the stated error on the sparse and on the dense grid of the
    same curve (the extreme path once scaled by the largest |y|, which sent the constant's
    terms to the subnormals: the dense grid's curve was clipped to 0, the sparse one's to
    0.01 B)."""
    y = SPIKE_SPARSE.copy()
    if kind == "sobolev":
        y[1] = 2.0 ** 500   # its slope term 2^2074 overflows
    t, y = _dense(SPIKE_T, y, samples - 4) if samples > 4 else (SPIKE_T, y)
    bound = 524288.0
    masses = _masses(t) if kind == "masses" else None
    values, factor = clip_curves(t, y, bound, 1, sobolev=kind == "sobolev", masses=masses)
    norm_squared = _exact_norm_squared(t, y, kind, masses)
    _check_scaling(y, values * factor, norm_squared, bound, gamma(NORM_TERMS + 1) + 3 * U, kind)


def test_a_value_on_pieces_of_width_zero_alone_does_not_scale_the_curve():
    """A curve of 1e-300 (its squares underflow: the extreme path) with a value of 2^1000
    at the middle of a jump (pieces of width 0 on both sides: no part of the curve): its
    norm is 1e-300, so in a ball of radius 1 it is kept as it is, factor 1 (the extreme
    path once scaled by that value and took the curve as outside); in a ball of 1e-305 it
    is scaled, and that value, which would overflow, is taken as 0 (it has no weight)."""
    t = numpy.array([0.0, 0.25, 0.5, 0.5, 0.5, 0.75, 1.0])
    y = numpy.array([1e-300, -1e-300, 2e-300, 2.0 ** 1000, 1e-300, 3e-300, 1e-300])
    for sobolev in (False, True):
        values, factor = clip_curves(t, y, 1.0, 1, sobolev=sobolev)
        _equal(values, y)
        assert factor == 1.0
        bound = 1e-305   # now outside the ball: the curve is scaled, that value taken as 0
        values, factor = clip_curves(t, y, bound, 1, sobolev=sobolev)
        assert factor == 1.0 and values[3] == 0.0 and numpy.isfinite(values).all()
        kept = numpy.arange(len(t)) != 3
        _check_scaling(y[kept], values[kept], _exact_norm_squared(
            t, y, "sobolev" if sobolev else "l2"), bound, gamma(NORM_TERMS + 1) + 3 * U,
            "outside")


def test_the_same_spiked_function_on_two_grids_projects_within_the_slack():
    """The adversary's case through a generated module (linear, L2): the same function on
    4 and on 1027 samples, clipped to B = 2^19, gives coefficients within 2 ETA B (they
    were 5.2e5 apart)."""
    module = generated("linear")
    bound = 2.0 ** 19
    sparse = module.project(SPIKE_T, SPIKE_SPARSE, bound=bound)
    dense = module.project(*_dense(SPIKE_T, SPIKE_SPARSE, 1023), bound=bound)
    assert numpy.linalg.norm(sparse - dense) <= 2 * module.ETA * bound
