"""The law of the C target's releases with OS entropy (issue 31, "What must be shown";
docs/reference/c.md): NAME_privatize through the test driver (tests/c/c_target_driver.c,
source NAME_source_os), built once per session against the committed generated/c/, on
linear (d = 2), legendre10 (d = 11) and the vector-valued trajectory_linear (d = 4), of
ROWS rows of a fixed coefficient vector: zeros, and VECTOR (norm 3, well inside the
default bound). The noise read back is z = (release - c)/scale, within gamma/(2 scale) =
2^-16 or less of the ideal sample per coordinate (the exact rounding to the lattice), far
below what a KS test of ROWS rows resolves.

GP (paper Alg. 2): z has density proportional to exp(-|z|), so |z| ~ Gamma(d) and z/|z| is
uniform on the sphere: each coordinate u_j has (u_j + 1)/2 ~ Beta((d-1)/2, (d-1)/2) and is
positive with probability 1/2. CGP (Alg. 6): z is standard normal, so |z|^2 ~ chi^2(d) and
each z_j ~ N(0, 1).

Each check passes when its p-value exceeds P_MIN = 1e-6. Under the right law a p-value is
uniform on [0, 1], so a check fails by chance with probability 1e-6; this file makes about
130 checks, so a false failure has probability below 1.3e-4 per run (union bound). The
mutations named in the docstrings move a CDF by 0.05 or more, which ROWS = 20,000 rows
resolve with p below 1e-20 (the KS threshold at 1e-6 is sqrt(ln(2e6)/(2 ROWS)) = 0.019)."""
import subprocess

import numpy
import pytest
from scipy import stats

from c_build import build_driver
from conftest import ROOT

SPECS = {"linear": 2, "legendre10": 11, "trajectory_linear": 4}   # name: d
ROWS = 20_000
P_MIN = 1e-6
EPSILON, RHO = 0.25, 2.0           # scales 4 and 1/2: a scale that is not 1 is checked
GP, CGP = 1, 2                     # enum gp_budget
pytestmark = pytest.mark.xdist_group("c_distribution")   # one worker builds the drivers


def vector(d):
    """A fixed non-zero coefficient vector of norm 3, of mixed signs and magnitudes."""
    v = numpy.array([(-1) ** j * (j + 1.0) for j in range(d)])
    return 3 * v / numpy.linalg.norm(v)


@pytest.fixture(scope="session")
def drivers(tmp_path_factory):
    """{name: the test driver built against generated/c/NAME.c}, built once per session."""
    base = tmp_path_factory.mktemp("c_distribution")
    return {name: build_driver(ROOT / "generated" / "c", name, base / f"driver_{name}")
            for name in SPECS}


def privatize(program, budget, value, c, rows):
    """(facts: scale, gamma, bound, slack; releases (rows, d)) of rows copies of c released
    by one NAME_privatize call with OS entropy (the default bound)."""
    words = " ".join(float(v).hex() for v in numpy.tile(c, rows))
    commands = (f"facts {budget} {float(value).hex()} 0x0p+0\n"
                f"privatize {rows} {budget} {float(value).hex()} 0x0p+0 os 0 {words}\n")
    lines = subprocess.run([str(program)], input=commands, capture_output=True, text=True,
                           check=True, timeout=300).stdout.splitlines()
    facts, release = ([float.fromhex(w) for w in line.split()[2:]] for line in lines[:2])
    assert lines[0].split()[0] == lines[1].split()[0] == "0", lines[:2]
    assert len(release) == rows * len(c)
    return facts, numpy.array(release).reshape(rows, len(c))


@pytest.fixture(scope="session")
def noise(drivers):
    """noise(name, budget, which) -> (facts, c, release, z): ROWS releases of c (which:
    "zeros" or "vector"), z = (release - c)/scale; each drawn once per session."""
    cache = {}

    def get(name, budget, which):
        key = (name, budget, which)
        if key not in cache:
            d = SPECS[name]
            c = numpy.zeros(d) if which == "zeros" else vector(d)
            facts, release = privatize(drivers[name], budget, EPSILON if budget == GP else RHO,
                                       c, ROWS)
            cache[key] = facts, c, release, (release - c) / facts[0]
        return cache[key]
    return get


CASES = [(name, which) for name in SPECS for which in ("zeros", "vector")]


def ks(sample, cdf):
    return stats.kstest(sample, cdf).pvalue


@pytest.mark.parametrize("name, which", CASES)
def test_gp_radius_is_gamma_d(noise, name, which):
    """|z| ~ Gamma(d, 1). Catches: a scale off by any factor (doubled: checked below, and by
    hand in the C of legendre10, where the CGP and lattice tests fail too), a radius of the
    wrong shape (Gamma(d - 1), checked below), c ignored or added twice (the vector rows)."""
    d = SPECS[name]
    facts, _, _, z = noise(name, GP, which)
    assert facts[0] == 1 / EPSILON
    radius = numpy.linalg.norm(z, axis=1)
    assert ks(radius, stats.gamma(d).cdf) > P_MIN
    assert ks(radius / 2, stats.gamma(d).cdf) < P_MIN   # a doubled scale is seen
    assert ks(radius, stats.gamma(d - 1).cdf) < P_MIN   # so is a radius of shape d - 1


@pytest.mark.parametrize("name, which", CASES)
def test_gp_direction_is_uniform_on_the_sphere(noise, name, which):
    """Each coordinate of u = z/|z|: (u_j + 1)/2 ~ Beta((d-1)/2, (d-1)/2) by KS, and u_j > 0
    with probability 1/2 (a two-sided binomial test). Catches: a direction that is not
    uniform on the sphere, such as the pairs' angles without their sqrt(E_i) weights (the
    C runtime mutated so, by hand: this test and the radius test fail on legendre10), the
    direction of i.i.d. Laplace coordinates (the L1 ball, checked below), one coordinate's
    sign fixed or biased. A direction not normalized by sqrt(H) is uniform but of the wrong
    length: test_gp_radius_is_gamma_d fails (checked by hand), this one passes."""
    d = SPECS[name]
    _, _, _, z = noise(name, GP, which)
    u = z / numpy.linalg.norm(z, axis=1, keepdims=True)
    beta = stats.beta((d - 1) / 2, (d - 1) / 2).cdf
    for j in range(d):
        assert ks((u[:, j] + 1) / 2, beta) > P_MIN, j
        assert stats.binomtest(int(numpy.sum(u[:, j] > 0)), ROWS).pvalue > P_MIN, j
    laplace = numpy.random.default_rng(0).laplace(size=(ROWS, d))   # the L1-ball mutant
    l1 = laplace / numpy.linalg.norm(laplace, axis=1, keepdims=True)
    assert min(ks((l1[:, j] + 1) / 2, beta) for j in range(d)) < P_MIN


@pytest.mark.parametrize("name, which", CASES)
def test_cgp_radius_is_chi_squared_d(noise, name, which):
    """|z|^2 ~ chi^2(d). Catches: a scale off by any factor (doubled: checked below), the
    variance 1/rho instead of 1/(2 rho) (a factor sqrt 2, also checked), c ignored or added
    twice (the vector rows)."""
    d = SPECS[name]
    facts, _, _, z = noise(name, CGP, which)
    assert facts[0] == numpy.sqrt(1 / (2 * RHO))
    squared = numpy.sum(z * z, axis=1)
    assert ks(squared, stats.chi2(d).cdf) > P_MIN
    assert ks(squared / 4, stats.chi2(d).cdf) < P_MIN
    assert ks(squared * 2, stats.chi2(d).cdf) < P_MIN


@pytest.mark.parametrize("name, which", CASES)
def test_cgp_marginals_are_normal(noise, name, which):
    """Each coordinate z_j ~ N(0, 1) by KS (each release coordinate ~ N(c_j, scale^2)).
    Catches: a scale off on some coordinates, a non-Gaussian marginal (a uniform or a
    Laplace of the same variance), a mean moved by c or by a bias in the rounding."""
    d = SPECS[name]
    _, _, _, z = noise(name, CGP, which)
    for j in range(d):
        assert ks(z[:, j], stats.norm.cdf) > P_MIN, j
    laplace = numpy.random.default_rng(1).laplace(scale=2 ** -0.5, size=ROWS)   # variance 1
    assert ks(laplace, stats.norm.cdf) < P_MIN


@pytest.mark.parametrize("budget", [GP, CGP])
@pytest.mark.parametrize("name, which", CASES)
def test_every_release_is_a_whole_multiple_of_the_lattice_step(noise, name, which, budget):
    """Every released coordinate is k gamma for an integer k, exactly (gamma a power of two,
    so release/gamma is exact). Catches: the noisy value released without the rounding to
    the lattice, or rounded to another step (gamma/2: half the coordinates are odd)."""
    facts, _, release, _ = noise(name, budget, which)
    gamma = facts[1]
    assert numpy.frexp(gamma)[0] == 0.5
    steps = release / gamma
    assert numpy.all(numpy.isfinite(steps)) and numpy.all(steps == numpy.round(steps))
    assert numpy.any(steps % 2 == 1)  # the step is gamma, not a multiple of it
    assert len(numpy.unique(release, axis=0)) == ROWS   # no two rows alike


@pytest.mark.parametrize("budget", [GP, CGP])
def test_two_runs_with_os_entropy_differ(drivers, budget):
    """Two processes releasing the same rows with OS entropy give different releases in
    every row. Catches: the OS source replaced by a fixed key or seed, or a key drawn once
    per build or per process start from something predictable (the clock at one-second
    resolution: two runs in the same second)."""
    c = vector(SPECS["legendre10"])
    value = EPSILON if budget == GP else RHO
    first, second = (privatize(drivers["legendre10"], budget, value, c, 100)[1]
                     for _ in range(2))
    assert numpy.all(numpy.any(first != second, axis=1))
