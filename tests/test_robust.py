"""Robustness (issue 30, item 7): monomial specs under the H^1 and weighted metrics compile
(a new user's spec shape); no loop runs unbounded on data or precision (the analytic
Gaussian search, ceil_sqrt, the ledger's epsilon, the ancestor walk); symbolic time limits
count CPU time and leave SIGALRM to pytest-timeout; benchmarks/cpu_hog.py cleans up."""
import math
import sys
from fractions import Fraction

import mpmath
import numpy
import pytest

from gpcompiler.compiler.build import import_module_file

NEW_USERS_SPEC = '''name = "{name}"
title = "Monomials of degree {degree} under H1"

[domain]
intervals = [["{lo}", "{hi}"]]

[basis]
family = {{ name = "monomial", degree = {degree} }}

[metric]
{metric}
'''


def _compiled(cli, tmp_path, name, degree, lo, hi, metric):
    """Compile the spec with ``gpcompiler compile`` and import the module."""
    spec = tmp_path / f"{name}.toml"
    spec.write_text(NEW_USERS_SPEC.format(name=name, degree=degree, lo=lo, hi=hi, metric=metric))
    status, _, err = cli("compile", spec, "-o", tmp_path)
    assert status == 0, err
    return import_module_file(tmp_path / f"{name}.py", f"robust_{name}")


def _moment(lo, hi, n):
    """The exact integral of t^n over [lo, hi]."""
    return (Fraction(hi) ** (n + 1) - Fraction(lo) ** (n + 1)) / (n + 1)


def _sobolev_gram(lo, hi, m):
    """<t^j, t^k>_H1 = int t^(j+k) + jk int t^(j+k-2), exact."""
    return [[_moment(lo, hi, j + k) + (j * k * _moment(lo, hi, j + k - 2) if j and k else 0)
             for k in range(m)] for j in range(m)]


def _weighted_gram(lo, hi, m):
    """int t^(j+k) (1 + t) dt, exact."""
    return [[_moment(lo, hi, j + k) + _moment(lo, hi, j + k + 1) for k in range(m)]
            for j in range(m)]


def _exact_cholesky_squares(gram):
    """R_jk^2 = L_jk^2 D_k from the exact LDL^T of the Gram matrix, with R_jk's sign."""
    m = len(gram)
    lower, pivots = [[Fraction(0)] * m for _ in range(m)], []
    for j in range(m):
        for k in range(j + 1):
            value = gram[j][k] - sum(lower[j][i] * lower[k][i] * pivots[i] for i in range(k))
            if j == k:
                pivots.append(value)
                lower[j][j] = Fraction(1)
            else:
                lower[j][k] = value / pivots[k]
    return [[(lower[j][k] ** 2 * pivots[k], (lower[j][k] > 0) - (lower[j][k] < 0))
             for k in range(m)] for j in range(m)]


def _is_rounded_root(r, square, sign):
    """Whether the float r is sqrt(square) * sign correctly rounded: sqrt(square) lies
    within half an ulp of |r| (checked on exact squares)."""
    if sign == 0:
        return r == 0.0
    half = Fraction(math.ulp(abs(r))) / 2
    below = Fraction(abs(r)) - Fraction(math.ulp(math.nextafter(abs(r), 0))) / 2
    return (math.copysign(1, r) == sign and below ** 2 <= square <= (Fraction(abs(r)) + half) ** 2)


CASES = [(0, 0, 1), (1, 0, 1), (3, 0, 1), (3, -1, 2), (12, -1, 2)]


@pytest.mark.parametrize("degree, lo, hi", CASES)
def test_a_new_users_h1_monomial_spec_compiles_with_the_exact_gram(cli, tmp_path, degree, lo, hi):
    """monomial degree d with metric.sobolev = 1 (new-user review: "internal error: TypeError:
    mpq() requires numeric or string argument", sympy Integers reached gmpy2): the module's
    Gram is the exact H^1 Gram correctly rounded, and R = L D^(1/2) of its exact LDL^T."""
    module = _compiled(cli, tmp_path, f"h1_monomial_{degree}_{lo + 1}", degree, lo, hi,
                       "sobolev = 1")
    exact = _sobolev_gram(lo, hi, degree + 1)
    assert module.METRIC == "sobolev" and module.BASIS_SIZE == degree + 1
    assert module.gram().tolist() == [[float(v) for v in row] for row in exact]
    r = module._cholesky(module._params({}))
    squares = _exact_cholesky_squares(exact)
    assert all(_is_rounded_root(float(r[j, k]), *squares[j][k])
               for j in range(degree + 1) for k in range(degree + 1))


@pytest.mark.parametrize("degree, lo, hi", [(0, 0, 1), (3, 0, 1), (5, -1, 2)])
def test_an_h1_legendre_spec_has_the_exact_gram(cli, tmp_path, degree, lo, hi):
    """The Legendre family takes the same H^1 path: its Gram against SymPy's exact
    integrals of P_j P_k + P_j' P_k' (u = (2t - a - b)/(b - a))."""
    import sympy
    spec = tmp_path / "h1_legendre.toml"
    spec.write_text(NEW_USERS_SPEC.format(name=f"h1_legendre_{degree}", degree=degree, lo=lo,
                                          hi=hi, metric="sobolev = 1").replace("monomial",
                                                                             "legendre"))
    status, _, err = cli("compile", spec, "-o", tmp_path)
    assert status == 0, err
    module = import_module_file(tmp_path / f"h1_legendre_{degree}.py",
                                f"robust_h1_legendre_{degree}_{lo + 1}")
    t = sympy.Symbol("t")
    p = [sympy.Poly(sympy.legendre(n, (2 * t - lo - hi) / sympy.Integer(hi - lo)), t)
         for n in range(degree + 1)]

    def integral(q):
        q = q.integrate()
        return q.eval(hi) - q.eval(lo)
    exact = [[integral(p[j] * p[k] + p[j].diff(t) * p[k].diff(t)) for k in range(degree + 1)]
             for j in range(degree + 1)]
    assert module.gram().tolist() == [[float(v) for v in row] for row in exact]


def test_a_weighted_monomial_spec_compiles_with_the_exact_gram(cli, tmp_path):
    """The weighted metric takes the same Legendre-expansion path (it failed alike)."""
    module = _compiled(cli, tmp_path, "weighted_monomial", 3, 0, 1, 'weight = "1 + t"')
    exact = _weighted_gram(0, 1, 4)
    assert module.gram().tolist() == [[float(v) for v in row] for row in exact]


def test_the_h1_monomial_module_is_orthonormal_in_h1(cli, tmp_path):
    """e = R^(-1) phi: its coefficients M in the monomials, read from the module at 4
    points, give M G M^T = I against the exact G (numerical: float coefficients)."""
    module = _compiled(cli, tmp_path, "h1_orthonormal", 3, 0, 1, "sobolev = 1")
    x = numpy.array([0.0, 0.25, 0.6, 1.0])
    coefficients = numpy.linalg.solve(module.basis(x), module.orthonormal_basis(x)).T
    gram = numpy.array(_sobolev_gram(0, 1, 4), dtype=float)
    assert numpy.abs(coefficients @ gram @ coefficients.T - numpy.eye(4)).max() < 1e-11


def _delta_mp(sigma, epsilon):
    """delta(sigma) of the analytic Gaussian mechanism at sensitivity 1 (Balle & Wang
    2018), at 60 digits: Phi(1/(2s) - e s) - exp(e) Phi(-1/(2s) - e s)."""
    with mpmath.workdps(60):
        s, e = mpmath.mpf(sigma), mpmath.mpf(epsilon)
        return mpmath.ncdf(1 / (2 * s) - e * s) - mpmath.exp(e) * mpmath.ncdf(-1 / (2 * s) - e * s)


@pytest.fixture
def fresh_sigma():
    """The analytic Gaussian search with an empty cache, before and after the test."""
    from gpcompiler.cdf import gaussian
    gaussian._sigma.cache_clear()
    yield gaussian
    gaussian._sigma.cache_clear()


def test_a_float_delta_off_by_one_percent_is_an_error_not_a_hang(fresh_sigma, monkeypatch):
    """The 50-digit refinement widened a wrong float bracket by 1e-12 of sigma a step: a
    bracket 1% off took 1e10 steps (a mutant was "killed" only by that hang). It widens by
    1e-12 2^k, k < WIDENINGS, and then refuses in one line."""
    correct = fresh_sigma.delta_of_sigma
    monkeypatch.setattr(fresh_sigma, "delta_of_sigma",
                        lambda sigma, epsilon: correct(sigma * 1.01, epsilon))
    with pytest.raises(ArithmeticError, match="disagree by more than 5e-4 of sigma"):
        fresh_sigma.analytic_gaussian_sigma(1.0, 1e-6)


def test_a_float_delta_slightly_off_still_gives_the_exact_sigma(fresh_sigma, monkeypatch):
    """A float bracket 1e-9 off (1,000 of the old 1e-12 steps) is widened in a few doubling
    steps, and the answer is still the smallest float sigma with delta(sigma) <= delta at
    60 digits, checked here independently, and the one the correct search gives."""
    expected = fresh_sigma.analytic_gaussian_sigma(0.5, 1e-5)
    fresh_sigma._sigma.cache_clear()
    correct = fresh_sigma.delta_of_sigma
    for factor in (1 + 1e-9, 1 - 1e-9):
        monkeypatch.setattr(fresh_sigma, "delta_of_sigma",
                            lambda sigma, epsilon, f=factor: correct(sigma * f, epsilon))
        sigma = fresh_sigma.analytic_gaussian_sigma(0.5, 1e-5)
        fresh_sigma._sigma.cache_clear()
        assert sigma == expected
        assert _delta_mp(sigma, 0.5) <= 1e-5 < _delta_mp(math.nextafter(sigma, 0), 0.5)


def test_a_float_delta_that_never_falls_is_an_error_not_a_hang(fresh_sigma, monkeypatch):
    """The upper bracket doubled sigma without a limit (to inf, forever, should delta(sigma)
    never fall below delta); it stops at 2^DOUBLINGS."""
    monkeypatch.setattr(fresh_sigma, "delta_of_sigma", lambda sigma, epsilon: 1.0)
    with pytest.raises(ArithmeticError, match=r"delta\(2\^10\) > delta"):
        fresh_sigma.analytic_gaussian_sigma(1.0, 1e-6)


def test_the_doubling_limit_holds_the_largest_sigma_of_the_ranges(fresh_sigma):
    """sigma is largest at epsilon = 0.01, delta = 1e-12; there delta(2^DOUBLINGS) <= delta
    at 60 digits and the answer lies below the classical bound sqrt(2 ln(1.25/delta))/eps."""
    (epsilon, _), (delta, _) = fresh_sigma.EPSILON_RANGE, fresh_sigma.DELTA_RANGE
    limit = 2.0 ** fresh_sigma.DOUBLINGS
    assert _delta_mp(limit, epsilon) <= delta
    sigma = fresh_sigma.analytic_gaussian_sigma(epsilon, delta)
    assert _delta_mp(sigma, epsilon) <= delta < _delta_mp(math.nextafter(sigma, 0), epsilon)
    assert sigma < math.sqrt(2 * math.log(1.25 / delta)) / epsilon < limit
    assert fresh_sigma.analytic_gaussian_sigma(0.011, delta) < sigma
    assert fresh_sigma.analytic_gaussian_sigma(epsilon, 1.1e-12) < sigma


def _is_ceil_sqrt(root, value):
    """Whether root is the smallest float whose square is >= value (exact)."""
    return (Fraction(root) ** 2 >= value
            and (root == 0 or Fraction(math.nextafter(root, 0)) ** 2 < value))


def test_ceil_sqrt_is_exact_and_quick_at_every_magnitude():
    """A tiny value's float is 0 or subnormal and its square root far below the answer:
    the loop stepped one ulp at a time (1e-320 hung). Every binade from 2^-2400 to the
    largest float squared, subnormal answers included, a few random values each."""
    from gpcompiler.runtime.rounding import ceil_sqrt
    rng = numpy.random.default_rng(4)
    values = [Fraction(0), Fraction(1, 10 ** 320), Fraction(1, 10 ** 700),
              Fraction(6, 10) * Fraction(2) ** -1074, Fraction(2) ** -2148,
              1 + Fraction(2) ** -2148,
              Fraction(math.ulp(0.0)) ** 2, Fraction(sys.float_info.max) ** 2]
    for exponent in range(-2400, 2047, 5):
        mantissa = Fraction(int(rng.integers(1, 2 ** 62)), 2 ** 62) + 1
        values.append(mantissa * Fraction(2) ** exponent)
    assert all(_is_ceil_sqrt(ceil_sqrt(v), v) for v in values)
    with pytest.raises(OverflowError):
        ceil_sqrt(Fraction(sys.float_info.max) ** 2 + 1)


def test_floor_float_rounds_a_negative_value_down():
    """floor_float stepped towards 0, which is up for a negative value: -1/3 gave a float
    above -1/3."""
    from gpcompiler.runtime.rounding import floor_float
    for value in (Fraction(-1, 3), Fraction(-2, 3), Fraction(-1, 10), Fraction(1, 3),
                  Fraction(-1, 10 ** 400), -Fraction(sys.float_info.max)):
        result = floor_float(value)
        assert Fraction(result) <= value < Fraction(math.nextafter(result, math.inf))


def test_the_ledger_converts_every_zcdp_cost_to_the_largest_epsilon():
    """gp_parameter_for under CGP: the largest float epsilon with epsilon^2/2 <= cost,
    exact. It stepped down one ulp at a time from sqrt(2 float(cost)), which for a cost
    below the normal floats is far above the answer (0.6 2^-1074: 1e15 steps)."""
    from gpcompiler.adaptive.ledger import PrivacyLedger
    ledger = PrivacyLedger(1.0, "CGP")
    costs = [Fraction(6, 10) * Fraction(2) ** -1074, Fraction(1, 10 ** 330), Fraction(1, 8),
             Fraction(Fraction(0.1) ** 2, 2), Fraction(1, 3), Fraction(10 ** 300)]
    for cost in costs:
        epsilon = ledger.gp_parameter_for(cost)
        above = math.nextafter(epsilon, math.inf)
        assert Fraction(epsilon) ** 2 / 2 <= cost < Fraction(above) ** 2 / 2


def test_missing_directories_end_at_a_root_that_does_not_exist(monkeypatch):
    """The walk up to an existing ancestor looped forever when even the root was missing
    (a drive that is not there): it ends at the root."""
    from gpcompiler.io import curves
    with monkeypatch.context() as patch:
        patch.setattr(curves.os.path, "exists", lambda path: False)
        missing, ancestor = curves._missing_directories("/a/b/c.csv")
    assert missing == ["/a/b", "/a"] and ancestor == "/"


def test_a_symbolic_time_limit_counts_cpu_time_not_waiting():
    """The symbolic limits (compile, integration, proofs) counted wall time, so a loaded
    machine compiled a spec differently (a numerical Gram where an idle one found the closed
    form). They count the process's CPU time: waiting uses none of it, work does."""
    import time
    from gpcompiler.compiler.symbolic import time_limit
    from gpcompiler.errors import SymbolicLimitError
    with time_limit(0.2, "waiting"):
        time.sleep(0.5)
    start = time.process_time()
    with pytest.raises(SymbolicLimitError, match="working exceeded its time limit"):
        with time_limit(0.2, "working"):
            while time.process_time() - start < 20:
                pass
    assert time.process_time() - start < 10


def test_a_symbolic_time_limit_leaves_sigalrm_and_its_timer_alone():
    """pytest-timeout (signal method) arms SIGALRM; a limit used to take that signal and
    clear its timer on leaving, so a test that compiled a spec could hang unnoticed."""
    import signal
    from gpcompiler.compiler.symbolic import time_limit
    handler = signal.getsignal(signal.SIGALRM)
    previous = signal.setitimer(signal.ITIMER_REAL, 1000)
    try:
        with time_limit(5, "outer"), time_limit(1, "inner"):
            assert signal.getsignal(signal.SIGALRM) is handler
        assert signal.getsignal(signal.SIGALRM) is handler
        assert 900 < signal.getitimer(signal.ITIMER_REAL)[0] <= 1000
    finally:
        signal.setitimer(signal.ITIMER_REAL, *previous)


def _running(pid):
    """Whether process ``pid`` runs (not gone, not a zombie waiting for its reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def _hog_ids(runner):
    line = runner.stdout.readline()
    assert line.startswith("cpu_hog: 2 hogs: "), line
    return [int(pid) for pid in line.split(": ")[2].split()]


def _gone(pids, seconds=20):
    """Whether every process in ``pids`` stops running within ``seconds`` (polled)."""
    import time
    deadline = time.monotonic() + seconds
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_running(pid) for pid in pids)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_cpu_hog_runner_stops_its_hogs_when_pytest_ends_and_when_it_is_killed():
    """benchmarks/cpu_hog.py: the hogs run while pytest does, and none outlives the runner,
    whether pytest ends (its status is the runner's) or the runner is killed (SIGKILL: the
    hogs notice they lost their parent)."""
    import signal
    import subprocess
    from conftest import ROOT
    command = [sys.executable, "-m", "benchmarks.cpu_hog", "--hogs", "2", "--", "--version"]
    runner = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    hogs = _hog_ids(runner)
    assert all(_running(pid) for pid in hogs)
    out, _ = runner.communicate(timeout=120)
    assert runner.returncode == 0 and "cpu_hog: pytest exit 0 after" in out
    assert _gone(hogs, 0)
    runner = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    hogs = _hog_ids(runner)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    assert _gone(hogs)
