"""The C target's emitter (issue 31, items 1, 2 and 7; docs/reference/c.md): for every shipped
1-D spec, NAME.h and NAME.c built once per session with the strict flags and a test driver
(tests/c/c_target_driver.c), checked against a 60-digit mpmath projection of the exact
orthonormal basis (within ETA B), the Python module (project, evaluate, release_facts bit for
bit, keyed privatize bit for bit), the privacy boundary (the same function on two grids) and
bad arguments (the right status, outputs untouched); its constants against their exact values;
its spec strings against hostile titles; other specs refused with one line."""
import json
import math
import re
import subprocess
from functools import lru_cache
from pathlib import Path

import mpmath
import numpy
import pytest
import sympy
from hypothesis import given, settings, strategies as st

from c_build import FLAGS, build_driver, compiler
from conftest import node_missing
from gpcompiler.compiler.build import compile_spec, import_module_file
from gpcompiler.compiler.emit.c import emit_c, lower_c
from gpcompiler.compiler.emit.c.printer import hex_float
from gpcompiler.compiler.emit.literals import c_comment_text, c_string
from gpcompiler.errors import SpecError
from gpcompiler.runtime.keyed import KeyedGenerator

ROOT = Path(__file__).resolve().parent.parent
LINE_SPECS = ["circle_shift", "ellipse", "fourier8", "legendre10", "linear", "monomial32",
              "sinc_ecg", "trajectory_linear", "two_circles"]
KEY = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
EPSILON, RHO = 1, 2   # enum gp_budget
OK, EINVAL, EENTROPY, ERANGE = 0, 1, 2, 3
MAX_DIFFERENCES = {}  # spec -> the largest |C project - Python project| seen (reported at the end)


@pytest.fixture(autouse=True)
def digits_60():
    """mpmath at 60 digits in every test of this file, restored after."""
    with mpmath.workdps(60):
        yield


def build(directory, name, files, optimize="-O2"):
    """Write the module's files in ``directory`` and build the driver against them."""
    for file_name, text in files.items():
        (directory / file_name).write_text(text)
    return build_driver(directory, name, directory / f"driver_{name}", optimize)


class Built:
    """One spec compiled three ways: its analysis, the C target (driver) and the Python module."""

    def __init__(self, name, directory):
        self.name = name
        self.analysis = compile_spec(ROOT / "specs" / f"{name}.toml", ROOT, emit=False).analysis
        self.cir = lower_c(self.analysis)
        self.files = emit_c(self.cir)
        self.program = build(directory, name, self.files)
        self.python = import_module_file(ROOT / "generated" / f"{name}.py")
        ir = self.cir.module
        self.m, self.n, self.d = ir.basis_size, ir.value_dim, ir.coef_dim
        self.vector_basis = ir.vector_basis
        self.curve = (self.cir.curve[0].value, self.cir.curve[1].value)
        self.eta = self.cir.eta

    def run(self, commands):
        """The driver's output lines for ``commands`` (a list of strings)."""
        done = subprocess.run([str(self.program)], input="\n".join(commands) + "\n",
                              capture_output=True, text=True, check=True, timeout=600)
        return done.stdout.splitlines()


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """Every shipped 1-D spec's C target, built once per session (on first use)."""
    directory = tmp_path_factory.mktemp("c_target")
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = Built(name, directory)
        return cache[name]
    return get


def numbers(values):
    return " ".join(float(v).hex() for v in numpy.ravel(values))


def parsed(line, count):
    """(status, untouched, outputs) of a driver line."""
    words = line.split()
    values = [float.fromhex(w) for w in words[2:]]
    assert len(values) in (0, count), line
    return int(words[0]), int(words[1]), numpy.array(values)


def project_command(t, y, bound):
    return f"project {len(t)} {float(bound).hex()} {numbers(t)} {numbers(y)}"


# ---- the exact projection, 60 digits ---------------------------------------------------------

class Exact:
    """The orthonormal basis e = K . atoms of a spec at 60 digits, and projections onto it."""

    def __init__(self, b):
        self.b = b
        analysis, spec = b.analysis, b.analysis.spec
        self.kind = analysis.atoms.kind
        self.size = analysis.atoms.size
        lo, hi = (sympy.sympify(e).subs(spec.defaults) for e in spec.interval)
        self.lo, self.hi = mpmath.mpf(sympy.N(lo, 70)) if lo.is_finite else None, \
            mpmath.mpf(sympy.N(hi, 70)) if hi.is_finite else None
        transform = analysis.transform
        self.K = mpmath.eye(self.size) if transform.shape == (self.size, self.size) and \
            _is_identity(transform) else mpmath.matrix(
                [[mpmath.mpf(sympy.N(sympy.sympify(transform[j, k]).subs(spec.defaults), 70))
                  for k in range(transform.shape[1])] for j in range(transform.shape[0])])
        self.first = analysis.atoms.shifts[0] if analysis.atoms.shifts else 0
        if self.kind == "expression":
            self.functions = [[sympy.lambdify(spec.variable, sympy.sympify(c).subs(spec.defaults),
                                              "mpmath") for c in f] for f in spec.functions]
        self.nodes = mpmath.calculus.quadrature.GaussLegendre(mpmath.mp).calc_nodes(
            4, mpmath.mp.prec + 20)  # 24 nodes on [-1, 1]: exact to degree 47

    def atoms(self, x):
        """(atoms, components) at x: a list of lists (components per atom)."""
        if self.kind == "legendre":
            u = (2 * x - self.lo - self.hi) / (self.hi - self.lo)
            return [[mpmath.sqrt((2 * k + 1) / (self.hi - self.lo)) * mpmath.legendre(k, u)]
                    for k in range(self.size)]
        if self.kind == "fourier":
            w = 2 * mpmath.pi / (self.hi - self.lo)
            out = [[mpmath.mpf(1)]]
            for k in range(1, self.size // 2 + 1):
                out += [[mpmath.cos(k * w * x)], [mpmath.sin(k * w * x)]]
            return out
        return [[mpmath.mpf(f(x)) for f in components] for components in self.functions]

    def basis(self, x):
        """e_j(x) per j, a list of components."""
        a = self.atoms(x)
        return [[mpmath.fsum(self.K[j, k] * a[k][r] for k in range(self.size) if self.K[j, k])
                 for r in range(len(a[0]))] for j in range(self.K.rows)]

    def project(self, t, y):
        """The exact coefficients (C order) of the curve (t, y), zero outside its samples."""
        y = numpy.reshape(y, (len(t), self.b.n))
        total = numpy.zeros(self.b.d, dtype=object)
        total[:] = mpmath.mpf(0)
        for k in range(len(t) - 1):
            if t[k + 1] > t[k]:
                total += self._piece(mpmath.mpf(t[k]), mpmath.mpf(t[k + 1]),
                                     [mpmath.mpf(v) for v in y[k]],
                                     [mpmath.mpf(v) for v in y[k + 1]])
        return total

    def _piece(self, x0, x1, a, b):
        if self.kind == "sinc":
            return self._sinc_piece(x0, x1, a[0], b[0])
        out = numpy.zeros(self.b.d, dtype=object)
        out[:] = mpmath.mpf(0)
        width = 0.5 if self.kind != "legendre" else x1 - x0
        parts = max(1, int(mpmath.ceil((x1 - x0) / width)))
        for p in range(parts):
            s0, s1 = x0 + (x1 - x0) * p / parts, x0 + (x1 - x0) * (p + 1) / parts
            for xi, w in self.nodes:
                x = (s0 + s1) / 2 + (s1 - s0) / 2 * xi
                weight = w * (s1 - s0) / 2
                s = (x - x0) / (x1 - x0)
                q = [(1 - s) * a[r] + s * b[r] for r in range(self.b.n)]
                e = self.basis(x)
                out += weight * numpy.array(self._products(q, e), dtype=object)
        return out

    def _products(self, q, e):
        if self.b.vector_basis:
            return [mpmath.fsum(q[r] * e[j][r] for r in range(self.b.n)) for j in range(self.b.m)]
        return [q[r] * e[j][0] for j in range(self.b.m) for r in range(self.b.n)]

    def _sinc_piece(self, x0, x1, a, b):
        """int (alpha + beta x) sinc(x - k) over [x0, x1] in closed form: with u = x - k,
        (alpha + beta k) Si(pi u)/pi - beta cos(pi u)/pi^2."""
        beta = (b - a) / (x1 - x0)
        alpha = a - beta * x0
        out = numpy.zeros(self.b.d, dtype=object)
        for j in range(self.size):
            k = self.first + j

            def antiderivative(x):
                u = mpmath.pi * (x - k)
                return ((alpha + beta * k) * mpmath.si(u) / mpmath.pi
                        - beta * mpmath.cos(u) / mpmath.pi ** 2)
            out[j] = antiderivative(x1) - antiderivative(x0)
        return out

    def norm(self, t, y):
        """||q||_2 of the curve (t, y)."""
        y = numpy.reshape(y, (len(t), self.b.n))
        total = mpmath.mpf(0)
        for k in range(len(t) - 1):
            h = mpmath.mpf(t[k + 1]) - mpmath.mpf(t[k])
            for r in range(self.b.n):
                a, b = mpmath.mpf(y[k][r]), mpmath.mpf(y[k + 1][r])
                total += h * (a * a + a * b + b * b) / 3
        return mpmath.sqrt(total)


def _is_identity(matrix):
    from gpcompiler.compiler.symbolic import is_identity
    return is_identity(matrix)


@lru_cache(maxsize=None)
def exact_of(name, b):
    return Exact(b)


def grids(b, seed):
    """Random and adversarial sampling grids (t, y) in the curve interval: random times,
    jumps (repeated times), tiny pieces next to wide ones, steep values, one sample, none,
    and (sinc_ecg: its whole 800 s interval in few pieces) long pieces cut in sub-pieces."""
    rng = numpy.random.default_rng(seed)
    lo, hi = b.curve
    span = min(hi - lo, 10.0)
    out = []
    t = numpy.sort(lo + span * rng.random(12))
    out.append(("random", t))
    jumps = numpy.sort(lo + span * rng.random(9))
    jumps = numpy.insert(jumps, [3, 6, 6], jumps[[3, 6, 6]])   # a jump, and a triple
    out.append(("jumps", jumps))
    tiny = lo + span * numpy.array([0.1, 0.1 + 1e-13, 0.3, 0.3 + 2 ** -40, 0.9, 0.9 + 1e-300])
    out.append(("tiny pieces", tiny))
    out.append(("one sample", numpy.array([lo + span / 3])))
    out.append(("none", numpy.array([])))
    out.append(("ends", numpy.array([lo, lo + (hi - lo) / 3, hi])))
    cases = []
    for label, times in out:
        y = rng.normal(size=(len(times), b.n))
        if label == "tiny pieces":
            y[1::2] *= 1e3   # steep across the tiny pieces
        cases.append((label, times, y))
    return cases


def js_projections(name, cases):
    """generated/js/NAME.mjs's project(t, y, bound) of each case in one node process (its
    JSON numbers are the shortest round-trip texts: read back exactly), or None without
    node >= 18."""
    if node_missing() is not None:
        return None
    script = ("import * as m from " + json.dumps((ROOT / "generated" / "js" / f"{name}.mjs")
                                                  .as_uri()) + ";\n"
              "import { readFileSync } from 'node:fs';\n"
              "const cases = JSON.parse(readFileSync(0, 'utf8'));\n"
              "console.log(JSON.stringify(cases.map(([t, y, b]) => Array.from(m.project(t, y, b)))));")
    text = json.dumps([[list(map(float, t)), list(map(float, numpy.ravel(y))), float(bound)]
                       for t, y, bound in cases])
    done = subprocess.run(["node", "--input-type=module", "-e", script], input=text,
                          capture_output=True, text=True, check=True, timeout=300)
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", LINE_SPECS)
def test_c_project_is_within_eta_b_of_the_exact_projection(built, name):
    """||c_C - P clip_B(q)|| <= ETA B (docs/clipping.md), and the same for the JS target's
    project, on random and adversarial grids, with
    the clip inactive (B = 2 ||q||: factor 1) and active (B = ||q||/2: the exact reference
    scaled by B/||q||); one sample and none give exactly 0; C vs Python's project recorded."""
    b = built(name)
    exact = exact_of(name, b)
    cases = grids(b, 7)
    commands, expected = [], []
    for label, t, y in cases:
        norm = exact.norm(t, y)
        reference = exact.project(t, y)
        for ratio in (2, 0.5):
            bound = float(norm * ratio) if norm > 0 else 1.0
            scaled = reference * (min(mpmath.mpf(1), bound / norm) if norm > 0 else 1)
            commands.append(project_command(t, y, bound))
            expected.append((label, t, y, bound, scaled))
    worst = farthest = 0.0
    js = js_projections(name, [(t, y, bound) for _, t, y, bound, _ in expected])
    for index, (line, (label, t, y, bound, reference)) in enumerate(zip(b.run(commands),
                                                                         expected)):
        status, _, c = parsed(line, b.d)
        assert status == OK, (label, line)
        error = mpmath.sqrt(mpmath.fsum((mpmath.mpf(v) - r) ** 2 for v, r in zip(c, reference)))
        assert error <= b.eta * bound, (label, float(error), b.eta * bound)
        if js is not None:   # the JS target's project, the same bound
            error = mpmath.sqrt(mpmath.fsum((mpmath.mpf(v) - r) ** 2
                                            for v, r in zip(js[index], reference)))
            assert error <= b.eta * bound, ("js", label, float(error), b.eta * bound)
        if len(t) < 2:
            assert numpy.all(c == 0), label
        python = b.python.project(t, y.reshape((len(t),) + ((b.n,) if b.n > 1 else ())),
                                  bound=bound).ravel()
        difference = float(numpy.max(numpy.abs(python - c))) if c.size else 0.0
        assert difference <= 2 * b.eta * bound, (label, difference)
        worst = max(worst, difference / bound)
        farthest = max(farthest, float(error) / bound)
    MAX_DIFFERENCES[name] = worst
    print(f"\n{name}: max ||C - exact|| / B = {farthest:.3g}, max |C - Python| / B = "
          f"{worst:.3g} (ETA {b.eta:.3g})")


def test_sinc_long_pieces_use_the_piece_counter(built):
    """sinc_ecg over its whole 800 s in three pieces (up to 315 sub-pieces each, summed in
    parts by the binary counter): within ETA B of the closed-form projection, and of Python's."""
    b = built("sinc_ecg")
    exact = exact_of("sinc_ecg", b)
    t = numpy.array([0.0, 0.25, 400.0, 800.0])
    y = numpy.array([[1.0], [-2.0], [0.5], [3.0]])
    bound = float(2 * exact.norm(t, y))
    status, _, c = parsed(b.run([project_command(t, y, bound)])[0], b.d)
    reference = exact.project(t, y)
    error = mpmath.sqrt(mpmath.fsum((mpmath.mpf(v) - r) ** 2 for v, r in zip(c, reference)))
    assert status == OK and error <= b.eta * bound, float(error)
    assert numpy.max(numpy.abs(b.python.project(t, y[:, 0], bound=bound) - c)) <= 2 * b.eta * bound


@pytest.mark.parametrize("name", LINE_SPECS)
def test_weights_given_project_the_same_bits(built, name):
    """NAME_projection_weights are the projection's: NAME_project_weighted with them gives
    NAME_project's bits (the same blocks and binary counter; docs/reference/c.md), and with
    them doubled twice the coordinates (so it uses the weights given), on random and
    adversarial grids, clipped and not; bad times leave the weights and coordinates untouched."""
    b = built(name)
    commands = []
    for _, t, y in grids(b, 11):
        for scale, bound in ((1.0, 0.0), (1.0, 0.5), (2.0, 0.0)):
            commands += [project_command(t, y, bound),
                         f"weighted {scale.hex()} " + project_command(t, y, bound)[8:]]
    lines = iter(b.run(commands))
    for index, (project, weights, weighted) in enumerate(zip(lines, lines, lines)):
        scale = (1, 1, 2)[index % 3]
        assert parsed(weights, len(weights.split()) - 2)[:2] == (OK, 0) or weights == "0 1"
        status, _, c = parsed(weighted, b.d)
        assert status == OK and numpy.array_equal(c, scale * parsed(project, b.d)[2])
    lo, hi = b.curve
    bad = b.run(["weighted 0x1p+0 " + project_command([hi, lo], numpy.ones((2, b.n)), 0)[8:]])
    assert [line.split()[:2] for line in bad] == [[str(EINVAL), "1"]] * 2


@pytest.mark.parametrize("name", LINE_SPECS)
def test_c_clip_factor_is_the_python_modules(built, name):
    """The curve clip sums the pieces' terms in NumPy's pairwise order, so its factor is
    runtime/curveclip.py's bit for bit: for curves outside the ball (300, 1,000 and 5 samples,
    one with a jump), the clipped coefficients are the unclipped ones times curveclip's
    factor, each rounded once; an extreme curve (values 1e200 and 1e-200: squares beyond 2^900
    or below 2^-800) is clipped into the ball within ETA B of Python's."""
    from gpcompiler.runtime.curveclip import clip_curves
    b = built(name)
    rng = numpy.random.default_rng(3)
    lo, hi = b.curve
    span = min(hi - lo, 10.0)
    commands, cases = [], []
    for samples, scale, bound in ((300, 1e3, 0.5), (1000, 1.0, 0.25), (5, 10.0, 1.0),
                                  (300, 1e200, 0.5), (300, 1e-200, 1e-210)):
        t = numpy.sort(lo + span * rng.random(samples))
        t[samples // 2] = t[samples // 2 - 1]
        y = rng.normal(size=(samples, b.n)) * scale
        commands += [project_command(t, y, bound), project_command(t, y, 0)]
        cases.append((t, y, bound, scale))
    lines = b.run(commands)
    for index, (t, y, bound, scale) in enumerate(cases):
        status, _, c = parsed(lines[2 * index], b.d)
        _, _, unclipped = parsed(lines[2 * index + 1], b.d)
        values = y.reshape((len(t),) + ((b.n,) if b.n > 1 else ()))
        python = b.python.project(t, values, bound=bound).ravel()
        assert status == OK
        assert numpy.max(numpy.abs(python - c)) <= 2 * b.eta * bound
        assert math.sqrt(numpy.sum(c * c)) <= bound * (1 + 1e-9)
        if 1e-100 < scale < 1e100:
            factor = clip_curves(t, values, bound, b.n)[1]
            assert factor < 1 and [v.hex() for v in c] == [v.hex() for v in unclipped * factor]


@pytest.mark.parametrize("name", ["linear", "legendre10", "two_circles", "sinc_ecg"])
def test_a_spike_on_a_subnormal_width_projects_as_in_python_on_any_grid(built, name):
    """A spike of 2^1000 on pieces of width 2^-1074 at t = 0 beside a constant of 2^466 (its
    sum of squares overflows: the extreme clip): the same function on 4 and on 1,027 samples
    projects within 2 ETA B in C, and each within 2 ETA B of Python's (the extreme clip once
    scaled by the largest |y| and sent the rest of the curve to the subnormals)."""
    b = built(name)
    top = min(b.curve[1], 1.0)
    t = numpy.array([0.0, 2.0 ** -1074, 2.0 ** -1073, top])
    y = numpy.array([0.0, 2.0 ** 1000, 1.2345 * 2.0 ** 466, 1.2345 * 2.0 ** 466])
    dense_t = numpy.concatenate([t[:3], numpy.linspace(2.0 ** -10, top, 1024)])
    dense_y = numpy.concatenate([y[:3], numpy.full(1024, y[-1])])
    bound = 2.0 ** 19
    coordinates = []
    for times, values in ((t, y), (dense_t, dense_y)):
        values = numpy.repeat(values[:, None], b.n, axis=1)
        status, _, c = parsed(b.run([project_command(times, values, bound)])[0], b.d)
        python = b.python.project(times, values if b.n > 1 else values[:, 0], bound=bound)
        assert status == OK and numpy.linalg.norm(python.ravel() - c) <= 2 * b.eta * bound
        coordinates.append(c)
    assert numpy.linalg.norm(coordinates[0] - coordinates[1]) <= 2 * b.eta * bound


@pytest.mark.parametrize("name", LINE_SPECS)
def test_c_evaluate_matches_python(built, name):
    """evaluate at random points of the domain (and its ends): within 64 ulps of the sum of
    |c_j e_j(x)| of Python's values (libm and NumPy's sin, cos; the summation order)."""
    b = built(name)
    rng = numpy.random.default_rng(5)
    lo, hi = b.cir.domain[0].value, b.cir.domain[1].value
    if not math.isfinite(lo):
        lo, hi = b.curve[0] - 5, b.curve[1] + 5
    points = numpy.concatenate([[lo, hi], lo + (hi - lo) * rng.random(200)])
    c = rng.normal(size=b.d)
    status, _, values = parsed(b.run([f"evaluate {len(points)} {numbers(c)} {numbers(points)}"])[0],
                               len(points) * b.n)
    shape = tuple(b.python.COEF_SHAPE)
    python = b.python.evaluate(c.reshape(shape), points).ravel()
    e = numpy.abs(b.python.orthonormal_basis(points))
    if len(shape) == 2:
        magnitude = numpy.einsum("tm,mr->tr", e, numpy.abs(c.reshape(shape)))
    else:
        magnitude = numpy.einsum("tmr,m->tr", e, numpy.abs(c)) if b.vector_basis else e @ abs(c)
    assert status == OK
    assert numpy.all(numpy.abs(values - python) <= 64 * 2.0 ** -52 * magnitude.ravel() + 1e-300)


BUDGETS = [1e-6, 0.1, 0.5, 1.0, 1.5, 3.0, 7.25, 100.0, 1e6, 2.0 ** -30, 1e-300, 1e300, 5e-324]


@pytest.mark.parametrize("name", LINE_SPECS)
def test_release_facts_equal_pythons_bit_for_bit(built, name):
    """scale, lattice, bound and slack of NAME_release_facts equal the Python module's
    (_scale, release_facts) bit for bit, GP and CGP, default and given bounds (within and
    beyond 2^50 lattice steps, negative, NaN, subnormal); where Python refuses, C refuses."""
    b = built(name)
    rng = numpy.random.default_rng(11)
    budgets = BUDGETS + list(numpy.exp(rng.uniform(-25, 25, 60)))
    bounds = [0.0, 1.0, 0.3, 256.0, 1e-3, 3e40, 2.0 ** -1023, -1.0, math.nan, math.inf]
    cases = [(kind, v, bound) for kind in (EPSILON, RHO) for v in budgets for bound in bounds]
    lines = b.run([f"facts {kind} {float(v).hex()} {float(bound).hex()}"
                   for kind, v, bound in cases])
    agreed = refused = 0
    for line, (kind, value, bound) in zip(lines, cases):
        status, untouched, facts = parsed(line, 4)
        keyword = {"epsilon" if kind == EPSILON else "rho": value}
        try:
            python = b.python.release_facts(**keyword, bound=None if bound == 0 else bound)
            scale = b.python._scale(**{"epsilon": None, "rho": None, **keyword})
        except (ValueError, OverflowError):
            assert status != OK and untouched, (kind, value, bound, line)
            refused += 1
            continue
        assert status == OK, (kind, value, bound, line)
        expected = [scale, python["lattice"], python["bound"], python["slack"]]
        assert [v.hex() for v in facts] == [float(v).hex() for v in expected], (kind, value, bound)
        agreed += 1
    assert agreed > 500 and refused > 100


@pytest.mark.parametrize("name", LINE_SPECS)
def test_keyed_privatize_equals_python_bit_for_bit(built, name):
    """NAME_privatize with a keyed source (rows 0..R-1, then row R: the source advanced)
    gives the Python module's privatize(rng=KeyedGenerator(key)) bits, GP and CGP, a batch
    and single rows at their addresses, rows inside, at and beyond the bound."""
    b = built(name)
    rng = numpy.random.default_rng(13)
    c = rng.normal(size=(40, b.d)) * numpy.exp(rng.uniform(-5, 5, (40, 1)))
    c[0] = 0.0
    c[1] = -0.0
    bound = 2.0
    c[2] *= bound / numpy.linalg.norm(c[2])
    shape = (40,) + tuple(b.python.COEF_SHAPE)
    for kind, keyword in ((EPSILON, "epsilon"), (RHO, "rho")):
        lines = b.run([f"privatize 40 {kind} 0x1.8p+0 {bound.hex()} {KEY} 0 {numbers(c)}",
                       f"privatize 1 {kind} 0x1.8p+0 {bound.hex()} {KEY} 7 {numbers(c[7])}"])
        status, _, out = parsed(lines[0], 40 * b.d)
        assert status == OK and lines[1] == "row 40"
        python = b.python.privatize(c.reshape(shape), **{keyword: 1.5}, bound=bound,
                                    rng=KeyedGenerator(KEY)).ravel()
        assert [v.hex() for v in out] == [v.hex() for v in python]
        status, _, row = parsed(lines[2], b.d)
        assert status == OK and [v.hex() for v in row] == [v.hex() for v in python[7 * b.d:8 * b.d]]
        assert lines[3] == "row 8"


@pytest.mark.parametrize("name", LINE_SPECS)
def test_same_function_on_two_grids_releases_within_one_lattice_step(built, name):
    """The privacy boundary (docs/threat-model.md): one piecewise-linear function sampled on a
    grid and on its refinement (dyadic times and values: the midpoints are exact) has the same
    exact projection, so with the same key the releases differ by at most one lattice step."""
    b = built(name)
    lo, hi = b.curve
    lo, hi = (lo, hi) if hi - lo <= 16 else (0.0, 16.0)
    coarse = lo + (hi - lo) * numpy.array([0.0, 0.25, 0.5, 1.0])
    fine = numpy.sort(numpy.concatenate([coarse, (coarse[1:] + coarse[:-1]) / 2]))
    rng = numpy.random.default_rng(17)
    values = rng.integers(-8, 8, size=(4, b.n)) / 8.0
    refined = numpy.empty((7, b.n))
    refined[0::2] = values
    refined[1::2] = (values[1:] + values[:-1]) / 2
    assert numpy.array_equal(numpy.interp(fine, coarse, values[:, 0]), refined[:, 0])
    for kind in (EPSILON, RHO):
        lines = b.run([f"release 1 {kind} 0x1p+0 0 {KEY} 5 {len(t)} {numbers(t)} {numbers(y)}"
                       for t, y in ((coarse, values), (fine, refined))]
                      + [f"facts {kind} 0x1p+0 0"])
        first, second = parsed(lines[0], b.d)[2], parsed(lines[2], b.d)[2]
        gamma = parsed(lines[4], 4)[2][1]
        assert numpy.all(numpy.abs(first - second) <= gamma), numpy.max(numpy.abs(first - second))


@pytest.mark.parametrize("name", ["linear", "two_circles", "sinc_ecg"])
def test_bad_arguments_return_the_right_status_and_leave_outputs_untouched(built, name):
    """Each bad argument: its status, outputs untouched (and a keyed source not advanced)."""
    b = built(name)
    lo, hi = b.curve
    n = b.n
    good_t = [lo, (lo + hi) / 2, hi]
    y = numpy.ones((3, n))
    bad_y = y.copy()
    bad_y[1, 0] = math.nan
    c = numpy.ones(b.d)
    projections = [
        (project_command([hi, lo, hi], y, 0), EINVAL),               # decreasing times
        (project_command([lo - 1, lo, hi], y, 0), EINVAL),           # outside the interval
        (project_command([lo, math.nan, hi], y, 0), EINVAL),
        (project_command(good_t, bad_y, 0), EINVAL),
        (project_command(good_t, y * math.inf, 0), EINVAL),
        (project_command(good_t, y, -1.0), EINVAL),
        (project_command(good_t, y, math.nan), EINVAL),
        (project_command(good_t, y, math.inf), EINVAL),
    ]
    lines = b.run([command for command, _ in projections])
    for line, (command, expected) in zip(lines, projections):
        assert parsed(line, b.d)[:2] == (expected, 1), command
    domain = b.cir.domain
    outside = [domain[1].value + 1] if math.isfinite(domain[1].value) else []
    evaluations = [f"evaluate 2 {numbers(c)} {numbers([lo, v])}"
                   for v in [math.nan, math.inf] + outside]
    for line in b.run(evaluations):
        assert parsed(line, 2 * n)[:2] == (EINVAL, 1)
    facts = [(f"facts 3 0x1p+0 0", EINVAL), ("facts 1 0x0p+0 0", EINVAL),
             ("facts 1 -0x1p+0 0", EINVAL), (f"facts 2 {math.nan.hex()} 0", EINVAL),
             (f"facts 1 {math.inf.hex()} 0", EINVAL), ("facts 1 0x1p+0 0x1p+200", ERANGE)]
    for line, (command, expected) in zip(b.run([f for f, _ in facts]), facts):
        assert parsed(line, 4)[:2] == (expected, 1), command
    bad_c = c.copy()
    bad_c[-1] = math.inf
    releases = [
        (f"privatize 2 1 0x1p+0 0 {KEY} 3 {numbers(c)} {numbers(bad_c)}", EINVAL, "row 3"),
        (f"privatize 1 1 0x1p+0 0 fail 0 {numbers(c)}", EENTROPY, "row 0"),
        (f"privatize 1 1 0x1p+0 0x1p+200 {KEY} 3 {numbers(c)}", ERANGE, "row 3"),
        (f"privatize 1 9 0x1p+0 0 {KEY} 3 {numbers(c)}", EINVAL, "row 3"),
        (f"release 1 1 0x1p+0 0 {KEY} 3 3 {numbers([hi, lo, hi])} {numbers(y)}", EINVAL, "row 3"),
        (f"release 1 1 0x1p+0 0 fail 0 3 {numbers(good_t)} {numbers(y)}", EENTROPY, "row 0"),
    ]
    lines = b.run([command for command, _, _ in releases])
    for index, (command, expected, row) in enumerate(releases):
        rows = int(command.split()[1])
        assert parsed(lines[2 * index], rows * b.d)[:2] == (expected, 1), command
        assert lines[2 * index + 1] == row, command
    keys = b.run(["key 0011", f"key {KEY[:-1]}g", f"key {KEY}0"])
    assert all(line.startswith("1 1 ") for line in keys), keys


PROJECTION_CHAIN = ("project", "project_weighted", "contract", "next_weight", "piece_sums", "sub_piece_sums", "orthonormal_at",
                    "orthonormal", "atoms_at", "atoms")
CLIP_CHAIN = ("project", "project_weighted", "curve_factor", "curve_squares", "piece_term")


@pytest.mark.parametrize("name", ["monomial32", "sinc_ecg", "two_circles"])
def test_stated_stack_covers_the_projection(built, name, tmp_path):
    """NAME.h's stated stack of a projection (KB) covers the frames gcc reports
    (-fstack-usage, static) along each of its call chains: the contraction's, and the
    clip's with 40 frames of the pairwise sum (its depth for 2^40 samples of 4 values)."""
    b = built(name)
    stated = int(re.search(r"about (\d+) KB in a\s+\*?\s*projection", b.files[f"{name}.h"])[1])
    for file_name, text in b.files.items():
        (tmp_path / file_name).write_text(text)
    subprocess.run([compiler(), *FLAGS, "-fstack-usage", "-c", f"{name}.c"], cwd=tmp_path,
                   check=True)
    frames = {}
    for line in (tmp_path / f"{name}.su").read_text().splitlines():
        where, size, kind = line.split("\t")
        function = where.rsplit(":", 1)[1].removeprefix(f"{name}_")
        if function in PROJECTION_CHAIN + CLIP_CHAIN + ("pairwise",):
            assert kind == "static", line
            frames[function] = int(size)
    used = max(sum(frames.get(f, 0) for f in PROJECTION_CHAIN),
               sum(frames.get(f, 0) for f in CLIP_CHAIN) + 40 * frames.get("pairwise", 0))
    assert frames["contract"] > 0 and used <= stated * 1024, (used, stated)


# ---- constants ------------------------------------------------------------------------------

HEX = re.compile(r"-?0x[0-9a-f](?:\.[0-9a-f]*)?p[+-]\d+")


@pytest.mark.parametrize("name", LINE_SPECS)
def test_every_constant_is_the_correctly_rounded_exact_value(built, name, tmp_path):
    """Every hexadecimal float of NAME.c's spec part parses back (a C program prints each with
    %a) to the float it was printed from, and each constant of the IR (domain, Gram, R, K,
    Legendre scales, Fourier rate, Gauss nodes and weights) is the float64 nearest its exact
    value: mpmath at 60 digits from the exact SymPy value (Gauss: the roots of P_n by mpmath's
    findroot, the weights 2/((1 - x^2) P_n'(x)^2))."""
    b = built(name)
    text = b.files[f"{name}.c"]
    spec_part = text[:text.index("==== The runtime of gpcompiler")]
    literals = sorted(set(HEX.findall(spec_part)))
    program = tmp_path / "constants.c"
    program.write_text("#include <stdio.h>\nint main(void)\n{\n" + "".join(
        f'    printf("%a\\n", {literal});\n' for literal in literals) + "    return 0;\n}\n")
    subprocess.run([compiler(), *FLAGS, str(program), "-o", str(tmp_path / "constants")],
                   check=True)
    printed = subprocess.run([str(tmp_path / "constants")], capture_output=True, text=True,
                             check=True).stdout.split()
    assert [float.fromhex(v) for v in printed] == [float.fromhex(v) for v in literals]
    spec = b.analysis.spec
    cir = b.cir

    def nearest(value):
        return float(mpmath.mpf(sympy.N(sympy.sympify(value).subs(spec.defaults), 70)))
    checked = 0
    for constant, value in zip(cir.domain, spec.interval):
        if math.isfinite(constant.value):
            assert constant.value == nearest(value)
            checked += 1
    for matrix, exact in ((cir.gram, b.analysis.gram), (cir.cholesky, b.analysis.cholesky)):
        for i, j, constant in matrix[0]:
            assert constant.value == nearest(exact[i, j]), (i, j)
            assert hex_float(constant.value) in spec_part
            checked += 1
    for j, k, constant in cir.transform:
        assert constant.value == nearest(b.analysis.transform[j, k])
        checked += 1
    lo, hi = (sympy.sympify(e).subs(spec.defaults) for e in spec.interval)
    for k, constant in enumerate(cir.atom_scales):
        assert constant.value == nearest(sympy.sqrt((2 * k + 1) / (hi - lo)))
    if cir.rate is not None:
        assert cir.rate.value == nearest(2 * sympy.pi / (hi - lo))
    for rule in cir.rules:
        for node, weight in zip(rule.nodes, rule.weights):
            x = mpmath.findroot(lambda v: mpmath.legendre(rule.order, v), mpmath.mpf(node.value))
            slope = mpmath.diff(lambda v: mpmath.legendre(rule.order, v), x)
            assert node.value == float(x)
            assert weight.value == float(2 / ((1 - x * x) * slope * slope))
            assert hex_float(node.value) in spec_part
            checked += 1
    assert checked >= len(cir.rules)


@pytest.mark.parametrize("name", ["legendre10", "two_circles"])
def test_gauss_orders_are_the_python_modules(built, name):
    """The order limits reproduce gauss_order: for half widths on both sides of each limit
    and at random, the first rule whose limit holds is gauss_order's choice."""
    from gpcompiler.compiler.analysis.quadrature import gauss_order
    cir = built(name).cir
    if cir.frequency is None:
        assert len(cir.rules) == 1 and cir.rules[0].order == cir.module.exact_nodes
        return
    minimum = cir.module.min_nodes
    rng = numpy.random.default_rng(2)
    widths = [w for r in cir.rules[:-1] for w in (r.limit, numpy.nextafter(r.limit, 9))]
    for width in widths + list(rng.uniform(0, 4, 500)) + [4.0]:
        chosen = next(r.order for r in cir.rules if width <= r.limit)
        assert chosen == gauss_order(width, minimum), width


# ---- spec strings ---------------------------------------------------------------------------

HOSTILE = ['x */ _Static_assert(0, "comment closed"); /*', 'x"; _Static_assert(0, "quote");',
           "trigraph ??/ and ??= and ??' ???", "back\\slash at the end \\",
           "escapes \\x41 \\101 \\u0041 %d",
           "x\\\" ; int y = 1; \"", "é ü ✓ 𝄞 non-ASCII", "/* nested /* open", "*/",
           "?", "a\\nb %s %n {0} ${title}", "*/*/*/ **// //*"]


def c_literal_bytes(literal):
    """The bytes of a C string literal as c_string writes them (octal, \\\", \\\\, \\? only;
    adjacent literals on indented lines)."""
    assert literal[0] == literal[-1] == '"'
    out, body, i = bytearray(), literal[1:-1].replace('"\n    "', ""), 0
    while i < len(body):
        if body[i] == "\\":
            if body[i + 1] in '"\\?':
                out.append(ord(body[i + 1]))
                i += 2
            else:
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
        else:
            assert 0x20 <= ord(body[i]) < 0x7F and body[i] not in '"\\?'
            out.append(ord(body[i]))
            i += 1
    return bytes(out)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40) | st.lists(st.sampled_from(["*/", "/*", "??", "?", "\\", '"', "\n",
                                                        "\x00", "\u2028", "\ud800", "é"]),
                                       max_size=12).map("".join))
def test_c_escapers_hold_any_text(text):
    """c_string holds the text's UTF-8 bytes in printable ASCII with no "??" (no trigraph) and
    nothing unescaped; c_comment_text is printable ASCII on one line that cannot end or open a
    comment, form a trigraph or end in a line splice."""
    for width in (None, 12):
        literal = c_string(text, width)
        assert c_literal_bytes(literal) == text.encode("utf-8", "surrogatepass")
        assert "??" not in literal
        assert width is None or all(len(line) <= width + 4 for line in literal.split("\n"))
    shown = c_comment_text(text)
    assert shown.isascii() and shown.isprintable()
    assert "*/" not in shown and "/*" not in shown and "??" not in shown
    assert not shown.endswith("\\")


def test_hostile_titles_reach_c_as_escaped_literals_and_comments(tmp_path):
    """Specs whose title would close a comment or a string, form trigraphs or splice lines:
    each module builds with the strict flags (a closed comment or string would run the
    _Static_assert and fail the build) and its TITLE holds the title's bytes exactly."""
    titles = [" | ".join(HOSTILE[i::3]) for i in range(3)]
    for index, title in enumerate(titles):
        directory = tmp_path / f"spec{index}"
        directory.mkdir()
        spec = directory / "hostile.toml"
        escaped = title.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
        spec.write_text(f'name = "hostile{index}"\ntitle = "{escaped}"\n[domain]\n'
                        'intervals = [["0", "1"]]\nunits = "s */ x"\n[values]\nunits = "?\\"??/"\n'
                        '[basis]\nfamily = { name = "monomial", degree = 1 }\n', encoding="utf-8")
        compiled = compile_spec(spec, directory, emit=False)
        assert compiled.spec.title == title
        files = emit_c(lower_c(compiled.analysis))
        program = build(directory, f"hostile{index}", files, "-O0")
        line = subprocess.run([str(program)], input="strings\n", capture_output=True, text=True,
                              check=True).stdout.split()
        assert bytes.fromhex(line[1][1:]) == title.encode()
        assert bytes.fromhex(line[5][1:]) == b"s */ x" and bytes.fromhex(line[6][1:]) == b'?"??/'


# ---- what the C target does not support yet -------------------------------------------------

UNSUPPORTED = {
    "weighted": ('[domain]\nintervals = [["0", "1"]]\n[basis]\nfunctions = ["1", "t"]\n'
                 '[metric]\nweight = "1 + t"\n', "weighted"),
    "sobolev": ('[domain]\nintervals = [["0", "1"]]\n[basis]\nfunctions = ["1", "t"]\n'
                '[metric]\nsobolev = 1\n', "metric"),
    "hold": ('[domain]\nintervals = [["0", "1"]]\n[basis]\nfunctions = ["1", "t"]\n'
             '[curve]\noutside = "hold"\n', "outside"),
    "box": ('[domain]\nvariables = ["x", "y"]\nintervals = [["0", "1"], ["0", "1"]]\n[basis]\n'
            'family = { name = "legendre", degree = [1, 1] }\n', "several variables"),
    "sinc_expression": ('[domain]\nintervals = [["0", "1"]]\n[basis]\nfunctions = ["1", '
                        '"sinc(t)"]\n', "sinc in a basis expression"),
    "hermite": ('[domain]\nintervals = [["-oo", "oo"]]\ncurve_interval = ["0", "1"]\n[basis]\n'
                'family = { name = "hermite", degree = 2 }\n', "hermite atoms"),
}


@pytest.mark.parametrize("kind", sorted(UNSUPPORTED))
def test_other_specs_are_refused_with_one_line(kind, tmp_path):
    """Weighted, H^1, held, box, Hermite and sinc-expression specs (and the shipped CDF
    spec, below): a one-line SpecError saying what the C target does not support yet, never
    a module."""
    body, what = UNSUPPORTED[kind]
    spec = tmp_path / f"{kind}.toml"
    spec.write_text(f'name = "{kind}_spec"\n' + body)
    with pytest.raises(SpecError, match="C target does not support") as error:
        lower_c(compile_spec(spec, tmp_path, emit=False).analysis)
    assert what in str(error.value) and "\n" not in str(error.value)


def test_the_cdf_spec_is_refused(tmp_path):
    from gpcompiler.compiler.emit.c.lowering import unsupported
    from gpcompiler.compiler.spec import load_spec
    assert unsupported(load_spec(ROOT / "specs" / "cdf_wages.toml", ROOT)) == "kind = 'cdf' specs"


# ---- the inlined runtime --------------------------------------------------------------------

def test_runtime_is_inlined_verbatim_with_its_hash_and_modules_link_together(built, tmp_path):
    """NAME.h holds gp_runtime.h verbatim and NAME.c ends with gp_runtime.c verbatim (and
    NAME_device.c holds gp_repr.c and gp_device.c), each marked with its path, gpcompiler's
    version and the sha256 of its text; two modules and their device ledgers link into one
    program (the types' include guard, the runtime static in each)."""
    import hashlib
    from gpcompiler import __version__
    for name in ("linear", "two_circles"):
        files = built(name).files
        for suffix, path in ((".h", "gp_runtime.h"), (".c", "gp_runtime.c"),
                             ("_device.c", "gp_repr.c"), ("_device.c", "gp_device.c")):
            text = (ROOT / "gpcompiler" / "runtime" / "c" / path).read_text().strip("\n")
            digest = hashlib.sha256(text.encode()).hexdigest()
            marked = (f"/* ---- runtime/c/{path} from gpcompiler {__version__}, inlined verbatim\n"
                      f" * ---- sha256 {digest} */\n{text}\n/* ---- end of runtime/c/{path} */")
            assert marked in files[f"{name}{suffix}"]
        assert files[f"{name}.c"].rstrip().endswith("/* ---- end of runtime/c/gp_runtime.c */")
        for file_name, text in files.items():
            (tmp_path / file_name).write_text(text)
    (tmp_path / "both.c").write_text(
        '#include "linear.h"\n#include "two_circles.h"\n#include "linear.h"\n'
        "int main(void)\n{\n    double c[linear_COEF_DIM], t[2] = {0, 1}, y[2] = {1, 1};\n"
        "    return linear_project(t, y, 2, 0, c) != GP_OK || two_circles_COEF_DIM != 2;\n}\n")
    subprocess.run([compiler(), *FLAGS, "both.c", "linear.c", "two_circles.c", "linear_device.c",
                    "two_circles_device.c", "-o", "both", "-lm"], cwd=tmp_path, check=True)
    assert subprocess.run([str(tmp_path / "both")]).returncode == 0
