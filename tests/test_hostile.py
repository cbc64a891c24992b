"""Hostile input: random TOML, expressions and arrays get documented errors only."""
import math
import os

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import generated
from gpcompiler import cdf, priv_func_select, priv_func_seg
from gpcompiler.compiler.analysis import analyze
from gpcompiler.errors import NotPositiveDefiniteError, SpecError, SymbolicLimitError
from gpcompiler.compiler.expressions import ExpressionError, parse_expression
from gpcompiler.compiler.spec import parse_spec
from gpcompiler.compiler.symbolic import time_limit

SETTINGS = settings(max_examples=int(os.environ.get("HOSTILE_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOKENS = ["t", "T", "x", "sin", "cos", "exp", "log", "sqrt", "sinc", "pi", "oo", "E", "__import__",
          "os", "eval", "lambda", "(", ")", "+", "-", "*", "/", "**", "^", ",", ".", "[", "]", "1",
          "2.5", "0", "1e308", "10**10", "'a'", " ", "_", "abs", "=", ":", "if", "for"]


@SETTINGS
@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=25))
def test_random_expressions_parse_or_raise_expression_error(tokens):
    import sympy
    text = "".join(tokens)
    try:
        value = parse_expression(text, {"t": sympy.Symbol("t"), "T": sympy.Symbol("T", positive=True)})
    except ExpressionError as error:
        assert str(error)
    else:
        assert isinstance(value, sympy.Basic)


@SETTINGS
@given(st.text(max_size=300))
def test_random_text_is_a_spec_error(text):
    try:
        parse_spec(text.encode("utf-8", "surrogatepass"), "random.toml")
    except SpecError as error:
        assert str(error)


VALUES = st.one_of(st.integers(-5, 40), st.floats(allow_nan=True), st.booleans(),
                   st.sampled_from(TOKENS + ["t**2", "sin(t)", "1", "-oo", "oo", "T", "2*t-1"]),
                   st.lists(st.sampled_from(["t", "1", "cos(t)", "0", "sin(t"]), max_size=4),
                   st.lists(st.lists(st.sampled_from(["0", "1", "pi", "-1", "T"]), max_size=3), max_size=2))


def _toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "[" + ", ".join(_toml_value(v) for v in value) + "]"


SPEC_TABLES = st.fixed_dictionaries({
    "name": st.sampled_from(['"ok"', '"import"', "3", '"a b"']),
    "intervals": VALUES, "parameters": st.sampled_from(["", 'parameters = { T = "2" }',
                                                        'parameters = { T = "-1" }', 'parameters = { t = "1" }']),
    "functions": VALUES, "family": st.sampled_from(["", 'family = { name = "monomial", degree = 3 }',
                                                    'family = { name = "sinc", count = 3 }',
                                                    'family = { name = "fourier", order = 0 }']),
    "dimension": VALUES, "metric": st.sampled_from(["", 'weight = "exp(-t)"', "sobolev = 1", 'weight = "t"']),
})


@SETTINGS
@given(SPEC_TABLES)
def test_random_specs_compile_or_raise_documented_errors(tables):
    text = (f"name = {tables['name']}\n[domain]\nintervals = {_toml_value(tables['intervals'])}\n"
            f"{tables['parameters']}\n[basis]\nfunctions = {_toml_value(tables['functions'])}\n"
            f"{tables['family']}\n[values]\ndimension = {_toml_value(tables['dimension'])}\n"
            f"[metric]\n{tables['metric']}\n")
    try:
        spec = parse_spec(text.encode(), "random.toml")
        with time_limit(20, "hostile spec"):
            analyze(spec)
    except (SpecError, NotPositiveDefiniteError, SymbolicLimitError) as error:
        assert str(error)


def test_symbolic_work_is_time_limited(tmp_path, monkeypatch):
    from gpcompiler.compiler.build import compile_spec
    monkeypatch.setenv("GPCOMPILER_TIME_LIMIT", "1")
    path = tmp_path / "slow.toml"
    path.write_text('name = "slow"\n[domain]\nintervals = [["0", "1"]]\n'
                    '[basis]\nfamily = { name = "monomial", degree = 1000 }\n')
    with pytest.raises(SymbolicLimitError, match="exceeded its time limit"):
        compile_spec(path)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_time_limit_swallowed_by_a_gc_callback_fires_again():
    """Python ignores an exception raised inside a gc callback (hypothesis installs one):
    the limit expiring there is raised again shortly after, in the limited work.

    Robust to load (issue 30): the callback spins until the limit interrupts it, and
    "shortly" is this thread's CPU time from the end of the collection to the raise, which
    the 0.05 s re-arm (of process CPU time) bounds however little of the machine the
    thread gets; the 20 s wall guards only end the loops should the limit never fire."""
    import gc
    import time
    swallowed, collected, raised = [], [], []

    def callback(phase, info):                     # the first collection outlasts the limit
        if swallowed:
            return
        try:
            while time.monotonic() - start < 20:
                pass
        except SymbolicLimitError as error:
            swallowed.append(str(error))
            raise                                  # gc reports it and carries on
    gc.callbacks.append(callback)
    start = time.monotonic()
    try:
        with time_limit(0.1, "work"):
            gc.collect()
            collected.append(time.thread_time())   # unless the limit is raised first
            while time.monotonic() - start < 20:
                sum(range(100))
    except SymbolicLimitError as error:
        raised.append((time.thread_time(), str(error)))
    finally:
        gc.callbacks.remove(callback)
    assert swallowed == ["work exceeded its time limit"] == [m for _, m in raised]
    assert raised[0][0] - (collected or [raised[0][0]])[0] < 0.5


ARRAYS = st.one_of(
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=12).map(numpy.array),
    st.lists(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=2), max_size=6).map(numpy.array),
    st.lists(st.integers(-10, 10), max_size=6).map(numpy.array),
    st.just(numpy.zeros((0,))), st.just(numpy.zeros((3, 0))), st.just(numpy.array("text")),
    st.just(numpy.ones((2, 2, 2))),
)
DOCUMENTED = (ValueError, TypeError)


@SETTINGS
@given(ARRAYS, ARRAYS, st.sampled_from(["linear", "ellipse", "circle_shift", "sinc_ecg"]))
def test_random_arrays_to_generated_functions(first, second, name):
    module = generated(name)
    calls = [lambda: module.project(first, second), lambda: module.projection_weights(first),
             lambda: module.privatize(first, epsilon=1.0, rng=numpy.random.default_rng(0)),
             lambda: module.evaluate(first, second), lambda: module.to_user(first),
             lambda: module.from_user(first), lambda: module.basis(first),
             lambda: module.orthonormal_basis(first),
             lambda: module.error_bound(float(first.ravel()[0]) if first.size and first.dtype.kind == "f" else 2.0,
                                        rho=1.0)]
    for call in calls:
        try:
            call()
        except DOCUMENTED as error:
            assert str(error)


@SETTINGS
@given(ARRAYS, ARRAYS, st.floats(allow_nan=True, allow_infinity=True), st.floats(-1, 2))
def test_random_input_to_adaptive_and_cdf(first, second, budget, beta):
    calls = [lambda: priv_func_seg(first, second, generated("linear"), epsilon=budget, beta=beta,
                                   rng=numpy.random.default_rng(0)),
             lambda: priv_func_select(first, second, generated("legendre10"), rho=budget, beta=beta,
                                      rng=numpy.random.default_rng(0)),
             lambda: cdf.estimate(first, lo=float(beta), hi=1.0, epsilon=budget, delta=1e-5,
                                  rng=numpy.random.default_rng(0))]
    for call in calls:
        try:
            with numpy.errstate(all="ignore"):
                call()
        except DOCUMENTED as error:
            assert str(error)


def test_secure_generator_is_the_default_when_no_rng_is_given(monkeypatch):
    import ssl
    calls = []
    original = ssl.RAND_bytes
    monkeypatch.setattr(ssl, "RAND_bytes", lambda n: calls.append(n) or original(n))
    generated("linear").privatize(numpy.zeros(2), epsilon=1.0)
    cdf.estimate(numpy.zeros(10), lo=0.0, hi=1.0, epsilon=1.0, delta=1e-5)
    priv_func_seg(numpy.linspace(0, 1, 5), numpy.zeros(5), generated("linear"), epsilon=1.0)
    assert len(calls) >= 3


def test_the_limit_raised_inside_the_parser_is_still_the_limit(monkeypatch):
    """The limit's signal can land inside ast.parse, which CPython then reports as a
    SystemError (seen once in the suite, compiling a 1000-degree spec): past the deadline,
    time_limit names it as the limit; before it, a SystemError stays what it is. (The
    timer is stopped here, so only that conversion can name the limit.)"""
    import time
    from gpcompiler.compiler import symbolic
    from gpcompiler.compiler.symbolic import time_limit
    monkeypatch.setattr(symbolic.signal, "setitimer", lambda *args: None)
    with pytest.raises(SymbolicLimitError, match="parsing exceeded its time limit"):
        with time_limit(0.01, "parsing"):
            end = time.process_time() + 0.02
            while time.process_time() < end:
                pass
            raise SystemError("AST constructor recursion depth mismatch")
    with pytest.raises(SystemError):
        with time_limit(60, "parsing"):
            raise SystemError("not the limit")
