"""Generated-module API: shapes, batches, validation, reproducible builds, caching."""
import ast
import math
import shutil

import mpmath
import numpy
import pytest

from conftest import ROOT, SPECS, generated
from gpcompiler.compiler.build import check, compile_spec, load


@pytest.mark.parametrize("name", SPECS)
def test_generated_module_inlines_the_audited_runtime_verbatim(name):
    """Each runtime part of a module is the package's gpcompiler/runtime source after its
    imports, byte for byte, under a marker giving its version and sha256: entropy, exact
    releases and the coefficient clip always (a CDF module: the per-record CDF terms
    instead), the curve or field clip where the metric clips samples, never the package's
    noisy comparisons (runtime/compare.py, the Gumbel sampler); the runtime comes last,
    after the spec-specific part, as one block."""
    import hashlib
    import importlib
    import re
    import gpcompiler
    from gpcompiler.compiler.emit import runtime as emit
    text = (ROOT / "generated" / f"{name}.py").read_text()
    parts = re.findall(r"^# ---- runtime/(\w+)\.py from gpcompiler ", text, re.M)
    for part in parts:
        body = emit.runtime_body(importlib.import_module(f"gpcompiler.runtime.{part}"))
        digest = hashlib.sha256(body.encode()).hexdigest()
        path = f"runtime/{part}.py"
        marker = f"# ---- {path} from gpcompiler {gpcompiler.__version__}\n# ---- sha256 {digest}"
        assert f"{marker}\n\n{body}\n\n# ---- end of {path}" in text
    module = generated(name)
    expected = {"entropy", "exact"} | ({"clip"} if hasattr(module, "COEF_DIM") else {"cdfterms"})
    if hasattr(module, "COEF_DIM") and module.SLACK_CONDITION is None:  # samples clipped
        expected |= {"fieldclip"} if hasattr(module, "DIMENSION") else {"curveclip"}
    if getattr(module, "OUTSIDE", "zero") == "hold":
        expected |= {"hold"}
    if hasattr(module, "COEF_DIM"):  # addressed words; the protocol program in one dimension
        expected |= {"keyed"} if hasattr(module, "DIMENSION") else {"keyed", "protocol"}
    assert set(parts) == expected and len(parts) == len(expected)
    assert "gumbel" not in text.lower() and "class Noise" not in text
    header = emit.HEADER.format(version=gpcompiler.__version__)
    assert text.count(header) == 1
    assert "\ndef privatize(" in text[:text.index(header)]   # the module's own API first
    main = ("\n\nif __name__ == \"__main__\":\n"
            "    sys.exit(run_protocol(sys.modules[__name__], sys.argv[1:]))\n")
    assert text.endswith("# ---- end of runtime/" + parts[-1] + ".py\n"
                         + (main if "protocol" in parts else ""))


@pytest.mark.parametrize("name", SPECS)
def test_generated_module_imports_only_numpy_and_the_standard_library(name):
    """At import, NumPy and the standard library (hashlib for keyed words; argparse and csv
    for a 1-D module's protocol program); inside functions, ssl (the standard
    library's OpenSSL CSPRNG, imported at the first draw of entropy) and mpmath (pure
    Python) for the exact sampler's rare refinement."""
    tree = ast.parse((ROOT / "generated" / f"{name}.py").read_text())

    def imports(nodes):
        names = {alias.name.split(".")[0] for node in nodes
                 if isinstance(node, ast.Import) for alias in node.names}
        return names | {node.module.split(".")[0] for node in nodes
                        if isinstance(node, ast.ImportFrom)}
    assert imports(tree.body) <= {"math", "numbers", "os", "sys", "fractions", "numpy",
                                  "hashlib", "argparse", "csv"}
    assert imports(list(ast.walk(tree))) - imports(tree.body) <= {"mpmath", "ssl"}


@pytest.mark.parametrize("name", SPECS)
def test_generated_module_has_no_branch_on_its_constants_and_short_lines(name):
    """A generated module carries only its spec's code paths: no if (or conditional
    expression) decides on module constants alone, such as VALUE_DIM > 1; lines < 100."""
    text = (ROOT / "generated" / f"{name}.py").read_text()
    tree = ast.parse(text)
    constants = {target.id for node in tree.body if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name)
                 and target.id.isupper()}
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            assert not names or not names <= constants, ast.unparse(node.test)
    assert max(map(len, text.splitlines())) < 100


def test_check_passes_and_compiling_twice_gives_identical_bytes():
    assert check(ROOT / "specs", ROOT / "generated") == []
    path = ROOT / "specs" / "linear.toml"
    assert compile_spec(path, ROOT).source == compile_spec(path, ROOT).source


def test_check_reports_a_stale_module(tmp_path):
    """The stale module among fresh ones is the one reported (three specs: that every
    shipped spec checks clean is the test above, which compiles all 14)."""
    (tmp_path / "generated" / "c").mkdir(parents=True)
    for folder, suffixes in (("specs", [".toml"]), ("generated", [".py"]),
                             ("generated/c", [".h", ".c", "_main.c", "_device.c"]),
                             ("generated/js", [".mjs"])):
        (tmp_path / folder).mkdir(exist_ok=True)
        for name in ("linear", "legendre10", "fourier8"):
            for suffix in suffixes:   # the Python, C and JS targets
                shutil.copy2(ROOT / folder / f"{name}{suffix}", tmp_path / folder)
    stale = tmp_path / "generated" / "linear.py"
    stale.write_text(stale.read_text().replace("(1/3)*p['T']**3", "(1/3)*p['T']**2"))
    problems = check(tmp_path / "specs", tmp_path / "generated")
    assert len(problems) == 1 and "-        (0, 0, (1/3)*p['T']**2)" in problems[0]


def test_header_names_version_spec_path_and_hash():
    module = generated("monomial32")
    text = (ROOT / "generated" / "monomial32.py").read_text()
    assert f"from specs/monomial32.toml\nspec sha256 {module.SPEC_SHA256}" in text
    import hashlib
    assert module.SPEC_SHA256 == hashlib.sha256((ROOT / "specs/monomial32.toml").read_bytes()).hexdigest()
    assert "(0, 0, 0.8660254037844386),  # sqrt(3)/2" in (ROOT / "generated" / "linear.py").read_text()


def test_load_compiles_once_and_reuses_the_cache(tmp_path):
    spec = tmp_path / "line.toml"
    spec.write_text((ROOT / "specs" / "linear.toml").read_text().replace('"linear"', '"line"'))
    module = load(spec, cache=tmp_path / "cache")
    built = list((tmp_path / "cache").glob("*.py"))
    stamp = built[0].stat().st_mtime_ns
    again = load(spec, cache=tmp_path / "cache")
    assert again is module and len(built) == 1 and built[0].stat().st_mtime_ns == stamp
    spec.write_text(spec.read_text() + "\n# changed\n")
    load(spec, cache=tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("*.py"))) == 2


def test_batch_projection_equals_single_projections():
    module = generated("ellipse")
    rng = numpy.random.default_rng(0)
    t = numpy.linspace(0, 2 * numpy.pi, 50)
    y = rng.normal(size=(3, 50, 2))
    batch = module.project(t, y)
    assert batch.shape == (3, 3, 2)
    for b in range(3):
        assert numpy.allclose(batch[b], module.project(t, y[b]), atol=1e-14)
    per_curve_t = numpy.stack([t, t * 0.9, t * 0.5])
    separate = module.project(per_curve_t, y)
    assert numpy.allclose(separate[2], module.project(t * 0.5, y[2]), atol=1e-14)


def test_projection_weights_give_one_matrix_product():
    module = generated("monomial32")
    t = numpy.linspace(0, 100, 200)
    y = numpy.random.default_rng(1).normal(size=(5, 200))
    assert numpy.allclose(y @ module.projection_weights(t), module.project(t, y), atol=1e-14)


def test_a_curve_in_the_space_is_projected_exactly():
    module = generated("linear")
    t = numpy.array([0.0, 0.25, 1.0])
    y = 3 * t - 1
    a = module.to_user(module.project(t, y))
    assert numpy.allclose(a, [3.0, -1.0], atol=1e-14)


def test_short_curves_and_jumps_project_as_the_function_they_are():
    """Fewer than two samples is the zero function; a repeated time is a jump (the runs on
    either side add), so the sample count never decides whether there is a release."""
    module = generated("legendre10")
    assert numpy.array_equal(module.project([], []), numpy.zeros(11))
    assert numpy.array_equal(module.project([0.2], [5.0]), numpy.zeros(11))
    t = numpy.array([-1.0, 0.0, 0.0, 1.0])
    y = numpy.array([1.0, 1.0, -1.0, -1.0])
    left = module.project(t[:2], y[:2])
    right = module.project(t[2:], y[2:])
    assert numpy.allclose(module.project(t, y), left + right, atol=1e-15)
    sign = module.project(t, y)
    assert abs(sign[1] + math.sqrt(3 / 2)) < 1e-14 and abs(sign[0]) < 1e-15   # q = -sign(t)


@pytest.mark.parametrize("t, y, message", [
    ([0.0, 0.5, 1.0], [0.0, numpy.nan, 1.0], "values y contain NaN"),
    ([0.0, numpy.inf, 1.0], [0.0, 1.0, 1.0], "sample times contain NaN or infinite"),
    ([0.0, 0.7, 0.5], [0.0, 1.0, 1.0], "increasing order"),
    ([0.0, 0.5, 1.0], [0.0, 1.0], "values y have shape (2,); expected (3,)"),
    ([0.0, 0.5, 2.0], [0.0, 1.0, 1.0], "must lie in [0.0, 1.0]"),
    ([[0.0, 0.5], [0.0, 1.0]], [0.0, 1.0], "values y have shape"),
])
def test_bad_data_raises_value_error_naming_the_problem(t, y, message):
    with pytest.raises(ValueError) as info:
        generated("linear").project(numpy.array(t), numpy.array(y))
    assert message in str(info.value)


@pytest.mark.parametrize("kwargs, message", [
    ({}, "exactly one of epsilon"), ({"epsilon": 1.0, "rho": 1.0}, "exactly one of epsilon"),
    ({"epsilon": 0.0}, "positive finite"), ({"rho": math.inf}, "positive finite"),
])
def test_privatize_budget_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        generated("linear").privatize(numpy.zeros(2), **kwargs)


def test_privatize_rejects_wrong_coefficient_shape_and_unknown_parameters():
    with pytest.raises(ValueError, match="shape"):
        generated("ellipse").privatize(numpy.zeros(3), epsilon=1.0)
    with pytest.raises(TypeError, match="unknown parameter"):
        generated("linear").gram(L=2.0)
    with pytest.raises(ValueError, match="positive"):
        generated("linear").gram(T=-1.0)


@pytest.mark.parametrize("name, points, shape", [
    ("linear", [0.5], "(..., 2)"), ("ellipse", [0.5], "(..., 3, 2)"),
    ("circle_shift", [0.5], "(..., 3)"), ("legendre_box", [[0.5, 0.5]], "(..., 35)")])
def test_evaluate_rejects_coefficients_of_a_bad_shape_naming_the_expected_one(name, points,
                                                                             shape):
    """A wrong coefficient shape is one ValueError naming the expected shape (not NumPy's
    matmul or einsum message), and is never evaluated silently (ellipse's (2, 3, 4) was)."""
    module = generated(name)
    for bad in (numpy.ones(4), numpy.ones((2, 3, 4)), numpy.float64(1.0)):
        with pytest.raises(ValueError) as info:
            module.evaluate(bad, points)
        assert str(info.value) == f"coefficients must have shape {shape}, got {bad.shape}"
    good = numpy.ones((2,) + module.COEF_SHAPE)
    assert module.evaluate(good, points).shape[0] == 2
    with pytest.raises(ValueError, match=r"coefficients must have shape \(11,\), got \(3,\)"):
        generated("cdf_wages").evaluate(numpy.ones(3), [100.0])


@pytest.mark.parametrize("rows", [False, True])
def test_a_nonfinite_value_of_a_batch_names_its_row(rows):
    """A NaN (or inf) in an API batch: the error names the first offending row and sample,
    for project and project_and_privatize, with a shared grid or one grid per row."""
    module = generated("linear")
    t = numpy.linspace(0, 1, 5)
    y = numpy.ones((4, 5))
    y[3, 0], y[2, 3] = numpy.inf, numpy.nan
    grid = numpy.stack([t] * 4) if rows else t
    expected = r"values y contain NaN or infinite values: the first at y\[2, 3\] \(row 2 of"
    with pytest.raises(ValueError, match=expected):
        module.project(grid, y)
    with pytest.raises(ValueError, match=expected), numpy.errstate(invalid="ignore"):
        module.project_and_privatize(grid, y, epsilon=1.0, rng=1)
    with pytest.raises(ValueError, match=r"the first at y\[3\]$"):
        module.project(t, y[2])
    vector = numpy.ones((3, 5, 2))
    vector[1, 2, 1] = numpy.nan
    with pytest.raises(ValueError, match=r"y\[1, 2, 1\] \(row 1 of the batch\)"):
        generated("ellipse").project(t * generated("ellipse").curve_interval()[1], vector)


def test_a_nonfinite_value_of_a_batch_of_fields_names_its_row():
    module = generated("legendre_box")
    grids, values = (numpy.linspace(0, 2, 4), numpy.linspace(0, 1, 3)), numpy.ones((3, 4, 3))
    values[2, 1, 1] = numpy.nan
    for call in (module.project_grid, lambda g, v: module.project_and_privatize(
            g, v, epsilon=1.0, rng=1)):
        with pytest.raises(ValueError, match=r"the first at values\[2, 1, 1\] \(row 2 of"):
            call(grids, values)


def test_expected_error_formulas():
    module = generated("fourier8")
    d = module.COEF_DIM
    assert module.expected_error(epsilon=2.0) == d / 2.0
    reference = math.sqrt(2) * math.gamma((d + 1) / 2) / math.gamma(d / 2) / math.sqrt(2 * 0.5)
    assert math.isclose(module.expected_error(rho=0.5), reference, rel_tol=1e-13)
    assert math.isclose(module.error_bound(0.1, epsilon=1.0),
                        math.e / (math.e - 1) * (d + math.log(10)), rel_tol=1e-15)


def test_noise_scale_is_never_rounded_down():
    """The smallest float >= 1/epsilon, by exact arithmetic (no extra ulp either)."""
    from fractions import Fraction
    module = generated("linear")
    for epsilon in (0.1, 0.3, 3.0, 7.0, 1e-300):
        scale = module._noise_scale(epsilon, None)
        assert Fraction(scale) >= 1 / Fraction(epsilon)
        assert Fraction(math.nextafter(scale, 0.0)) < 1 / Fraction(epsilon)


def test_sinc_module_projects_the_bundled_ecg():
    from gpcompiler.io.curves import bundled_ecg
    module = generated("sinc_ecg")
    curve = bundled_ecg(0)
    t, y = curve.times[0], curve.values[0]
    fitted = module.evaluate(module.project(t, y), t)
    interior = (t > 5) & (t < 795)
    assert numpy.sqrt(numpy.mean((fitted - y)[interior] ** 2)) < 0.08 * numpy.std(y)


@pytest.mark.parametrize("name", ["sinc_ecg", "monomial32"])
def test_weights_equal_the_original_build(name):
    """The weight build of issue 14 (k-major atoms, one batched matmul, sinc by exact
    argument reduction, no reduceat for single sub-pieces) gives the original build's weights
    to 1e-13 relative: grids of one and of many sub-pieces per piece, and one with a jump."""
    from benchmarks.original import original_atoms, original_weights
    module = generated(name)
    p = module._params({})
    lo, hi = module._curve_interval(p)
    rng = numpy.random.default_rng(3)
    middle = (lo + hi) / 2
    grids = [numpy.linspace(lo, hi, 401), numpy.sort(rng.uniform(lo, hi, 60)),
             numpy.sort(numpy.r_[rng.uniform(lo, hi, 150), middle, middle])]
    for t in grids:
        old = original_weights(module, t, p)
        assert numpy.max(abs(module._weights(t, p) - old)) <= 1e-13 * numpy.max(abs(old))
    x = numpy.r_[numpy.linspace(lo, hi, 1001), rng.uniform(lo, hi, 1001)].reshape(2, -1)
    if name == "monomial32":  # the layout alone changed
        assert numpy.array_equal(module._atoms(x, p), original_atoms(module, x, p))
    else:
        assert numpy.max(abs(module._atoms(x, p) - original_atoms(module, x, p))) < 1e-15
        whole = module._atoms(numpy.array([3.0, -2.0]), p)
        assert whole[0, 2] == 1.0 and whole[1, 0] == 0.0
        assert numpy.count_nonzero(whole) == 1


def test_grid_cache_never_serves_the_weights_of_old_values():
    """A grid is cached by all its bytes: an array changed in place, a 2-D array with the same
    bytes, or other parameter values get their own (validated) weights, never stale ones."""
    module = generated("legendre10")
    t = numpy.linspace(-1, 1, 50)
    y = numpy.random.default_rng(4).normal(size=50)
    first = module.project(t, y)
    t[10] += 0.003                       # the same array object, one value moved
    moved = module.project(t, y)
    assert numpy.array_equal(moved, y @ module._weights(t, module._params({})))
    assert not numpy.allclose(moved, first, atol=1e-6, rtol=0)
    t[10] -= 0.003
    assert numpy.array_equal(module.project(t, y), first)
    t[-1] = 1.5                          # out of the domain: validated again, not served
    with pytest.raises(ValueError, match="must lie in"):
        module.project(t, y)
    with pytest.raises(ValueError, match="1-D"):
        module.projection_weights(numpy.linspace(-1, 1, 50).reshape(2, 25))


@pytest.mark.parametrize("name", ["fourier8", "ellipse"])
def test_each_row_of_a_batch_is_its_own_single_curve_call_bit_for_bit(name):
    """t (B, S): every row's coordinates are the single-curve call's, bit for bit, whether
    other rows share its grid or not (their grids are private: a product over a group of
    rows let the group's size move the low bits, adversarial review), with and without the
    cache; the release is privatize of those coordinates; a bad row is named as before."""
    module = generated(name)
    lo, hi = module.curve_interval()
    rng = numpy.random.default_rng(8)
    t = numpy.sort(rng.uniform(lo, hi, 3000))
    t[0], t[-1] = lo, hi
    y = rng.normal(size=(6, t.size) + ((2,) if module.VALUE_DIM == 2 else ()))
    other = lo + (t - lo) * 0.5
    alone = [module.project(t, y[i]) for i in range(6)]
    for grids in (numpy.tile(t, (6, 1)), numpy.stack([t, other, t, other, other, t])):
        for cache in (True, False):
            c = module.project(grids, y, cache=cache)
            for i in range(6):
                assert numpy.array_equal(c[i], module.project(grids[i], y[i]))
        assert all(numpy.array_equal(c[i], alone[i]) for i in (0, 2, 5))
    rows = numpy.tile(t, (6, 1))
    release = module.project_and_privatize(rows, y, epsilon=1.0, bound=2.0, rng=3)
    assert numpy.array_equal(release, module.privatize(
        module.project(rows, y, bound=2.0), epsilon=1.0, bound=2.0, rng=3))
    rows[3, -1] = hi + 1
    with pytest.raises(ValueError, match="must lie in"):
        module.project(rows, y)
    assert module.project(numpy.zeros((0, 3000)), y[:0]).shape == (0,) + module.COEF_SHAPE


@pytest.mark.parametrize("name, sizes", [("fourier8", range(1, 71)),
                                         ("sinc_ecg", (1, 2, 3, 5, 8, 13, 21))])
def test_a_row_is_its_single_curve_call_for_every_group_size_and_position(name, sizes):
    """Rows sharing a grid, in groups of any size up to 70 at any position of the batch or
    interleaved with rows of another grid, and a curve at an address 8 bytes off: each row's
    coordinates are its single-curve call's, bit for bit (numpy's stacked product makes one
    BLAS call per row; one product over the group, gemm, fails this for every size > 1)."""
    module = generated(name)
    lo, hi = module.curve_interval()
    rng = numpy.random.default_rng(22)
    t = numpy.sort(rng.uniform(lo, hi, 1101))  # odd: consecutive rows start 8 bytes apart
    scales = 10.0 ** rng.integers(-3, 4, size=(max(sizes), 1))
    y = rng.normal(size=(max(sizes), t.size)) * scales
    alone = numpy.stack([module.project(t, curve) for curve in y])
    for size in sizes:
        start = 7 * size % (len(y) + 1 - size)
        rows = module.project(numpy.tile(t, (size, 1)), y[start:start + size])
        assert numpy.array_equal(rows, alone[start:start + size]), size
    moved = numpy.arange(len(y)) % 3 == 1
    rows = module.project(numpy.where(moved[:, None], lo + (t - lo) * 0.5, t), y)
    assert numpy.array_equal(rows[~moved], alone[~moved])
    shifted = numpy.empty(t.size + 1)[1:]
    shifted[:] = y[5]
    assert numpy.array_equal(module.project(t, shifted), alone[5])


def test_cache_keeps_many_recent_grids_and_bounds_its_memory():
    """More than 8 grids in turn are all served from the cache (recently used first); the
    weights kept stay within _CACHE_BYTES, and a grid larger than that is not kept (one
    user's grid never holds memory while another's curve is projected)."""
    module = generated("legendre10")
    grids = [numpy.linspace(-1, 1, 30 + k) for k in range(20)]
    for grid in grids:
        module.projection_weights(grid)
    weights = [module.projection_weights(grid) for grid in grids]
    assert all(module.projection_weights(g) is w for g, w in zip(grids, weights))
    old = module._CACHE_BYTES
    module._CACHE_BYTES = sum(w.nbytes for w in weights[:3])
    try:
        big = module.projection_weights(numpy.linspace(-1, 1, 1000))
        assert big.nbytes > module._CACHE_BYTES
        assert all(entry[2] is not big for entry in module._GRIDS)
        assert sum(entry[2].nbytes for entry in module._GRIDS) <= module._CACHE_BYTES
        fresh = [module.projection_weights(grid) for grid in grids[:3]]
        assert len(module._GRIDS) == 3 and fresh[0] is not weights[0]
        assert module.projection_weights(grids[0]) is fresh[0]
    finally:
        module._CACHE_BYTES = old


def test_project_with_a_bound_clips_the_curve_as_the_release_does():
    """privatize(project(t, y, bound=B), bound=B) is project_and_privatize's release, bit
    for bit: the curve is clipped, not its coefficients."""
    module = generated("monomial32")
    t = numpy.linspace(*module.curve_interval(), 60)
    y = 3 * numpy.cos(numpy.arange(1, 4)[:, None] * t)
    c = module.project(t, y, bound=0.5)
    norms = numpy.sqrt((numpy.diff(t) * (y[:, :-1] ** 2 + y[:, :-1] * y[:, 1:]
                                         + y[:, 1:] ** 2)).sum(axis=1) / 3)
    assert numpy.allclose(c, module.project(t, y) * (0.5 / norms)[:, None], rtol=1e-12, atol=0)
    assert numpy.array_equal(module.privatize(c, epsilon=1.0, bound=0.5, rng=4),
                             module.project_and_privatize(t, y, epsilon=1.0, bound=0.5, rng=4))
    with pytest.raises(ValueError, match="positive finite"):
        module.project(t, y, bound=-1.0)


@pytest.mark.filterwarnings("ignore:invalid value encountered in matmul")  # inf * 0
@pytest.mark.parametrize("bad, message", [(numpy.nan, "values y contain NaN"),
                                          (-numpy.inf, "values y contain NaN"),
                                          (1e200, None)])
def test_value_check_is_exact_when_the_sum_of_squares_overflows(bad, message):
    """Finite values whose squares overflow are projected and released (clipped to the
    public bound); a NaN or an infinity never is, not even at a lone sample between two
    jumps, whose weights are all zero (NaN * 0 is NaN)."""
    module = generated("linear")
    t, y = numpy.array([0.0, 0.25, 0.5, 0.5, 0.5, 1.0]), numpy.ones((3, 6))
    assert not module.projection_weights(t)[3].any()
    for sample in (1, 3):
        y[1, sample] = bad
        for call in (lambda: module.project(t, y),
                     lambda: module.project(numpy.stack([t] * 3), y),
                     lambda: module.project_and_privatize(t, y[1], epsilon=1.0, rng=1)):
            if message is None:
                assert numpy.isfinite(call()).all()
            else:
                with pytest.raises(ValueError, match=message):
                    call()
        y[1, sample] = 1.0




ALL_FUNCTIONS = {  # every function a spec expression may use (compiler/expressions.py), as mpmath
    "sin(t)": mpmath.sin, "cos(3*t)": lambda t: mpmath.cos(3 * t), "tan(t)": mpmath.tan,
    "exp(t)": mpmath.exp, "log(t)": mpmath.log, "sqrt(t)": mpmath.sqrt, "sinh(t)": mpmath.sinh,
    "cosh(2*t)": lambda t: mpmath.cosh(2 * t), "tanh(t)": mpmath.tanh, "atan(t)": mpmath.atan,
    "abs(t - 1/2)": lambda t: abs(t - mpmath.mpf(1) / 2),
    "sinc(t)": lambda t: mpmath.sin(mpmath.pi * t) / (mpmath.pi * t), "erf(t)": mpmath.erf,
    "Max(t**2, 1/4)": lambda t: max(t ** 2, mpmath.mpf(1) / 4),    # all switch at 1/2, as abs
    "Min(2*t, 1)": lambda t: min(2 * t, 1),
    "Piecewise((t**3, t < 1/2), (1 - t, True))": lambda t: t ** 3 if t < 0.5 else 1 - t,
}


KINKS = ("abs", "Max", "Min", "Piecewise")   # piecewise: their own basis, cut at 1/2


@pytest.mark.parametrize("kinks", [False, True], ids=["smooth", "piecewise"])
def test_every_expression_function_evaluates_elementwise(tmp_path, kinks):
    """A basis of every whitelisted function compiles to a module whose atoms, on an array of
    points, are the functions' values within 2^-50 of the largest (a numerical tolerance:
    sinc(1) is sin(pi)/pi in float, 3.9e-17; mpmath at 30 digits): erf was printed as the
    scalar math.erf and failed on arrays. The piecewise functions form their own basis
    (exact per piece); beside the smooth ones it would take the slower numerical route."""
    from gpcompiler import load
    functions = {text: f for text, f in ALL_FUNCTIONS.items() if text.startswith(KINKS) == kinks}
    path = tmp_path / "all_functions.toml"
    path.write_text('name = "all_functions"\n[domain]\nintervals = [["1/4", "5/4"]]\n'
                    f"[basis]\nfunctions = {list(functions)!r}\n".replace("'", '"'))
    module = load(path)
    x = numpy.linspace(0.25, 1.25, 9)
    # the smooth functions are the module's atoms; the piecewise ones its user basis (R times
    # Legendre atoms per piece)
    atoms = module.basis(x) if kinks else module._atoms(x, module._params({}))
    with mpmath.workdps(30):
        for j, function in enumerate(functions.values()):
            exact = [float(function(mpmath.mpf(v))) for v in x]
            scale = numpy.abs(exact).max()
            assert numpy.abs(atoms[:, j] - exact).max() <= 2.0 ** -50 * scale, j
