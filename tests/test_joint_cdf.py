"""Multivariate DP CDFs (docs/design.md, "CDF estimation"): the sensitivity sqrt(2^k)/N
of the direct method on [-1, 1]^k, its noise, and the post-processing."""
import json
import math
from fractions import Fraction

import mpmath
import numpy
import pytest
from scipy import stats

from gpcompiler.cdf import analytic_gaussian_sigma, estimate
from gpcompiler.cdf import streaming
from gpcompiler.runtime import exact
from gpcompiler.cdf.joint import (coefficient_sums, computed_sum_sensitivity, joint_distances,
                                  monotone, multi_indices, private_coefficients, sum_sensitivity,
                                  tensor_error_bound)


def test_coefficient_sums_match_mpmath_integrals_of_the_quadrant():
    """c_a of one record x = int over Q(x) = [x_1, 1] x [x_2, 1] of e_a (mpmath, 30 digits)."""
    x = numpy.array([[-0.3, 0.55]])
    sums = coefficient_sums(x, (3, 2))
    with mpmath.workdps(30):
        def e(k, t):
            return mpmath.sqrt(mpmath.mpf(2 * k + 1) / 2) * mpmath.legendre(k, t)
        for value, (a, b) in zip(sums, multi_indices((3, 2))):
            exact = mpmath.quad(lambda s, t: e(a, s) * e(b, t), [mpmath.mpf("-0.3"), 1],
                                [mpmath.mpf("0.55"), 1], method="gauss-legendre")
            assert abs(value - float(exact)) < 1e-14


@pytest.mark.parametrize("k, degree", [(2, 6), (3, 3)])
def test_replace_one_sensitivity_is_sqrt_2_to_the_k_and_attained(k, degree):
    """||sums(x') - sums(x)|| <= sqrt(2^k) for random and extreme pairs, with equality at the
    opposite corners (1_Q goes from a null set to the whole box, sqrt(2^k) e_0)."""
    degrees = (degree,) * k
    rng = numpy.random.default_rng(1)
    points = numpy.concatenate([rng.uniform(-1, 1, (400, k)),
                                rng.choice([-1.0, 1.0], (200, k)) * rng.uniform(0.9, 1, (200, k))])
    sums = numpy.stack([coefficient_sums(p[None], degrees) for p in points])
    changes = numpy.linalg.norm(sums[:300] - sums[300:], axis=1)
    bound = math.sqrt(2 ** k)
    assert changes.max() <= bound * (1 + 1e-12)
    corners = coefficient_sums(numpy.array([[1.0] * k, [-1.0] * k]), degrees)
    one, other = (coefficient_sums(numpy.full((1, k), v), degrees) for v in (1.0, -1.0))
    assert abs(numpy.linalg.norm(other - one) - bound) < 1e-12
    assert numpy.allclose(corners, other + one)
    assert sum_sensitivity(k) >= bound and sum_sensitivity(k) == pytest.approx(bound, rel=1e-15)


def _exact_factors(value, degree):
    """int_x^1 e_k, k = 0..degree, at 60 digits (Legendre recurrence)."""
    with mpmath.workdps(60):
        x, p = mpmath.mpf(value), [mpmath.mpf(1), mpmath.mpf(value)]
        for n in range(1, degree + 1):
            p.append(((2 * n + 1) * x * p[n] - n * p[n - 1]) / (n + 1))
        return [((p[k - 1] if k else 1) - p[k + 1]) / mpmath.sqrt(2 * (2 * k + 1))
                for k in range(degree + 1)]


def test_tensor_sums_lie_within_their_stated_bound():
    """coefficient_sums of 3 chunks of records (ends, their neighbours, a subnormal, random
    values, each repeated) against 60-digit exact tensor sums: within tensor_error_bound,
    so the noise, calibrated to sqrt(2^k) plus twice it, covers the sums as computed."""
    rng = numpy.random.default_rng(11)
    distinct = numpy.concatenate([[[-1.0, 1.0], [1.0, -1.0], [1 - 2.0 ** -52, 5e-324],
                                   [-1 + 2.0 ** -52, 0.0]], rng.uniform(-1, 1, (30, 2))])
    repeats = rng.integers(1, 6000, distinct.shape[0])
    x = numpy.repeat(distinct, repeats, axis=0)[rng.permutation(repeats.sum())]
    degrees = (7, 5)
    got = coefficient_sums(x, degrees)
    factors = [[_exact_factors(v, d) for v in distinct[:, i]] for i, d in enumerate(degrees)]
    with mpmath.workdps(60):
        want = [sum(int(r) * f[a[0]] * g[a[1]] for r, f, g in zip(repeats, *factors))
                for a in multi_indices(degrees)]
        error = mpmath.sqrt(sum((mpmath.mpf(float(v)) - w) ** 2 for v, w in zip(got, want)))
    assert streaming.CHUNK < x.shape[0] < 4 * streaming.CHUNK
    assert 0 < error <= tensor_error_bound(degrees, x.shape[0])


def test_noise_is_gaussian_with_the_analytic_sigma():
    rng = numpy.random.default_rng(2)
    x = rng.uniform(-1, 1, (50, 2))
    exact = coefficient_sums(x, (3, 3), 4) / 50
    draws = numpy.stack([private_coefficients(x, (3, 3), 4, 1.0, 1e-6, rng)[0]
                         for _ in range(400)])
    sigma = private_coefficients(x, (3, 3), 4, 1.0, 1e-6, rng)[1]
    assert sigma == analytic_gaussian_sigma(1.0, 1e-6, computed_sum_sensitivity((3, 3), 50)) / 50
    assert Fraction(computed_sum_sensitivity((3, 3), 50)) >= Fraction(sum_sensitivity(2)) + 2 * \
        Fraction(tensor_error_bound((3, 3), 50)) > Fraction(sum_sensitivity(2))
    assert draws.shape[1] == len(multi_indices((3, 3), 4)) == 13
    z = ((draws - exact) / sigma).ravel()
    assert stats.kstest(z, "norm").pvalue > 1e-6
    assert stats.kstest(z / 1.25, "norm").pvalue < 1e-6  # the test has power


def test_post_processing_is_monotone_in_each_coordinate_with_values_in_0_1():
    rng = numpy.random.default_rng(3)
    raw = rng.normal(size=(20, 30, 6)).cumsum(axis=0) * 0.2
    assert numpy.any(numpy.diff(raw, axis=1) < 0)
    out = monotone(raw)
    for axis in range(3):
        assert numpy.all(numpy.diff(out, axis=axis) >= 0)
    assert out.min() >= 0 and out.max() <= 1
    noisy = estimate(rng.normal(size=(30, 2)), lo=-3, hi=3, epsilon=0.2, delta=1e-6,
                     degree=12, rng=4)
    assert all(numpy.all(numpy.diff(noisy.values, axis=a) >= 0) for a in (0, 1))
    assert 0 <= noisy.values.min() and noisy.values.max() <= 1


def test_accurate_at_a_large_budget_and_the_histogram_baseline():
    """Independent columns (uniform, and a clipped normal): KS distance to the empirical
    joint CDF, marginals and a conditional quantile read from the release."""
    rng = numpy.random.default_rng(5)
    data = numpy.column_stack([rng.uniform(0, 10, 20000), rng.normal(0, 1, 20000)])
    direct = estimate(data, lo=[0, -4], hi=[10, 4], epsilon=50.0, delta=1e-6, degree=24,
                      rng=6)
    histogram = estimate(data, lo=[0, -4], hi=[10, 4], epsilon=50.0, delta=1e-6,
                         method="histogram", bins=32, rng=6)
    assert joint_distances(direct, data) < 0.02 and joint_distances(histogram, data) < 0.05
    assert abs(direct.marginal(0).quantile(0.5) - 5.0) < 0.2
    assert abs(direct.conditional_quantile(0.5, 1, 0, 5.0) - 0.0) < 0.1
    assert direct.sensitivity == pytest.approx(2 / 20000)
    total = estimate(data, lo=[0, -4], hi=[10, 4], epsilon=50.0, delta=1e-6, degree=24,
                     total_degree=24, rng=6)
    assert joint_distances(total, data) < 0.03


def test_joint_errors():
    data = numpy.zeros((10, 2))
    with pytest.raises(ValueError, match="lo < hi"):
        estimate(data, lo=[0, 1], hi=[1, 1], epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="method"):
        estimate(data, lo=0, hi=1, epsilon=1.0, delta=1e-6, method="moments")
    with pytest.raises(ValueError, match="total_degree"):
        estimate(numpy.zeros(10), lo=0, hi=1, epsilon=1.0, delta=1e-6, total_degree=3)


@pytest.mark.parametrize("options, message", [
    ({"lo": [0, 0, 0]}, "lo must be one value or one per column"),
    ({"degree": [3, 3, 3]}, "degree must be one value or one per column"),
    ({"degree": [0, 3]}, "degree must be an integer in 1..200"),
    ({"total_degree": 0}, "total_degree must be a positive integer"),
])
def test_joint_options_are_checked_by_name(options, message):
    data = numpy.random.default_rng(0).uniform(size=(50, 2))
    with pytest.raises(ValueError, match=message):
        estimate(data, **{"lo": 0.0, "hi": 1.0, **options}, epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="8120601 tensor coefficients; at most 100000"):
        estimate(numpy.zeros((5, 3)), lo=0.0, hi=1.0, degree=200, epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="2 <= k <= 5 columns"):
        estimate(numpy.zeros((1, 1000)), lo=0.0, hi=1.0, epsilon=1.0, delta=1e-5)


def test_cdf_command_releases_a_joint_cdf_of_several_columns(tmp_path, cli):
    """`gpcompiler cdf --column wage --column experience`: the release file holds the
    released joint CDF on the public grid (the same numbers as joint_estimate with the same
    seed) and nothing else from the data but its record count; --columns is the same."""
    from gpcompiler.cdf.joint import joint_estimate
    from gpcompiler.io.curves import read_column
    gpcompiler = cli
    common = ("--lo", "0", "--lo", "0", "--hi", "2500", "--hi", "60", "--epsilon", "1",
              "--delta", "1e-6", "--seed", "3", "--grid", "36", "--degree", "6")
    status, out, err = gpcompiler("cdf", "--column", "wage", "--column", "experience", *common,
                                  "-o", tmp_path / "joint.json")
    data = numpy.stack([read_column("bundled:cps1988", c) for c in ("wage", "experience")], 1)
    outside = numpy.count_nonzero(numpy.any((data < 0) | (data > (2500, 60)), axis=1))
    clipped = (f"{outside} records clipped (not private): outside the public bounds of some "
               "column\n")       # issue 20: the data owner is told, on standard error only
    assert status == 0 and err == clipped and "private marginal quantiles" in out
    release = json.loads((tmp_path / "joint.json").read_text())
    assert set(release) == {"gpcompiler", "columns", "lo", "hi", "degree", "records", "method",
                            "budget", "grids", "cdf", "noise", "randomness"}
    expected = joint_estimate(data, lo=(0, 0), hi=(2500, 60), epsilon=1.0, delta=1e-6,
                              degree=6, rng=numpy.random.default_rng(3))
    sensitivity = computed_sum_sensitivity((6, 6), data.shape[0])
    sigma = analytic_gaussian_sigma(1.0, 1e-6, sensitivity)
    assert release["noise"] == {"sum_sensitivity": sensitivity, "sigma": sigma,
                                "lattice": exact.lattice(sigma)}
    assert expected.sigma == sigma / data.shape[0]
    mesh = numpy.stack(numpy.meshgrid(*map(numpy.array, release["grids"]), indexing="ij"), -1)
    assert mesh.shape == (6, 6, 2) and release["records"] == data.shape[0]
    assert numpy.allclose(release["cdf"], expected.cdf(mesh), rtol=1e-9, atol=0)  # 10 digits
    status, _, err = gpcompiler("cdf", "--columns", "wage,experience", *common, "-o",
                                tmp_path / "joint.csv", "--compare")
    rows = [r for r in (tmp_path / "joint.csv").read_text().splitlines() if not r.startswith("#")]
    assert status == 0 and rows[0] == "wage,experience,cdf" and len(rows) == 37
    assert err.startswith(clipped + "not private: Kolmogorov distance")
    cdf_column = numpy.array([float(r.split(",")[2]) for r in rows[1:]])
    assert numpy.allclose(cdf_column, numpy.ravel(release["cdf"]), rtol=1e-9, atol=0)
    for bad, needle in [(("--lo", "0"), "--lo: give one public bound per column"),
                        (("--method", "moments"), "--method moments"),
                        (("--column", "wage"), "named twice")]:
        status, _, err = gpcompiler("cdf", "--column", "wage", "--column", "experience",
                                    *common[4:] if bad[0] == "--lo" else common, *bad)
        assert status == 2 and len(err.strip().splitlines()) == 1 and needle in err, err
