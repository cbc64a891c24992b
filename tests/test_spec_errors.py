"""Malformed specs: one SpecError naming every bad key and what was expected."""
import pytest

from gpcompiler.compiler.analysis import analyze
from gpcompiler.errors import NotPositiveDefiniteError, SpecError
from gpcompiler.compiler.expressions import ExpressionError, parse_expression
from gpcompiler.compiler.spec import parse_spec

GOOD = """
name = "ok"
[domain]
intervals = [["0", "1"]]
[basis]
functions = ["t", "1"]
"""

CASES = [
    ("name = 3\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[\"t\"]",
     "name: expected a Python identifier"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[\"sin(t\"]",
     "basis.functions[0]: cannot parse 'sin(t'"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[\"__import__('os')\"]",
     "basis.functions[0]: unknown function '__import__'"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[\"t.__class__\"]",
     "basis.functions[0]: Attribute is not allowed"),
    ("name='a'\n[domain]\nintervals=[[\"1\",\"0\"]]\n[basis]\nfunctions=[\"t\"]",
     "domain.intervals[0]: expected lo < hi"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[\"x\"]",
     "basis.functions[0]: unknown name 'x'"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"T\"]]\nparameters={T=\"-1\"}\n[basis]\nfunctions=[\"t\"]",
     "domain.parameters.T: expected a positive finite default"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[\"t\"]\nfamily={name='monomial',degree=2}",
     "basis: expected exactly one of 'functions' or 'family'"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfamily={name='wavelet'}",
     "basis.family.name: expected one of bspline, fourier, hermite, legendre, monomial, sinc"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfamily={name='bspline',order=2,knots=['sqrt(2)/2']}",
     "basis.family.knots[0]: expected a rational knot"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfamily={name='bspline',order=2,knots=[1]}",
     "basis.family.knots: expected interior knots strictly inside [0, 1], got 1"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfamily={name='bspline',order=2,knots=['1/2','1/2','1/2']}",
     "basis.family.knots: the knot 1/2 is repeated 3 times: at most order = 2 times"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"],[\"0\",\"1\"]]\nvariables=['x','y']\n[basis]\nfamily={name='bspline',order=2}",
     "basis.family: the bspline family is for one variable"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=['Piecewise((t, t == 1), (0, True))']",
     "a Piecewise condition is a comparison with <, <=, > or >="),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfamily={name='sinc',count=4}",
     "domain.intervals: the sinc family is orthonormal on the whole line"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[[\"t\"],[\"1\",\"t\"]]\n[values]\ndimension=2",
     "basis.functions[0]: expected 2 components"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[\"t^2\"]",
     "'^' is not a power in Python syntax"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[\"t**(10**10)\"]",
     "exceeds the limit"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[\"t\"]\n[metric]\nsobolev=2",
     "metric.sobolev: expected 0 or 1"),
    ("name='a'\n[domian]\nintervals=[[\"0\",\"1\"]]",
     "domian: unknown key"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfamily={name='monomial',degre=3}",
     "basis.family.degre: unknown option for monomial"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[\"t\"]\n[values]\ndimension=0",
     "values.dimension: expected an integer >= 1"),
    ("name = 'a'\n[domain\n", "not valid TOML"),
    (GOOD + "[curve]\noutside='clamp'",
     "bad.toml: curve.outside: expected \"zero\" or \"hold\", got 'clamp'"),
    (GOOD + "[curve]\noutside=1",
     "curve.outside: expected \"zero\" or \"hold\", got 1"),
    (GOOD + "[curve]\nhold=1",
     "curve.hold: unknown key (expected one of outside)"),
    ("name='a'\n[domain]\nvariables=['x','y']\nintervals=[[\"0\",\"1\"],[\"0\",\"1\"]]\n"
     "[basis]\nfunctions=[\"x\"]\n[curve]\noutside='hold'",
     "curve.outside: expected no outside: it applies to curves"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfamily='legendre'",
     "bad.toml: basis.family: expected a table such as { name = \"legendre\", degree = N }, "
     "got 'legendre'"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfamily={degree=3}",
     "basis.family.name: missing: expected one of bspline, fourier, hermite"),
    ("[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[\"t\"]",
     "bad.toml: name: missing: expected a Python identifier (the module name)"),
    ("name='a'\n[domain]\nintervals=[[\"0\",\"T\"]]\nparameters={cache=\"1\"}\n"
     "[basis]\nfunctions=[\"t\"]",
     "domain.parameters.cache: expected an identifier that is not the variable"),
]


@pytest.mark.parametrize("text, message", CASES)
def test_malformed_spec_is_reported_with_key_and_expectation(text, message):
    with pytest.raises(SpecError) as info:
        parse_spec(text.encode(), "bad.toml")
    assert message in str(info.value)


def test_every_problem_is_reported_at_once():
    text = b"name = 3\n[domain]\nintervals=[[\"1\",\"0\"]]\n[basis]\nfunctions=[\"sin(t\", \"q\"]"
    with pytest.raises(SpecError) as info:
        parse_spec(text, "bad.toml")
    keys = [key for key, _ in info.value.problems]
    assert keys == ["name", "domain.intervals[0]", "basis.functions[0]", "basis.functions[1]"]


@pytest.mark.parametrize("text, key", [
    ("name='a'\n[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfamily='sinc'", "basis.family"),
    ("[domain]\nintervals=[[\"0\",\"1\"]]\n[basis]\nfunctions=[\"t\"]", "name")])
def test_a_wrong_kind_or_a_missing_key_is_named_as_such(text, key):
    """A string where the family table belongs is reported at basis.family (not .name), a
    missing name as missing (not "got None")."""
    with pytest.raises(SpecError) as info:
        parse_spec(text.encode(), "bad.toml")
    assert [k for k, _ in info.value.problems] == [key]
    message = str(info.value)
    assert "None" not in message
    assert ('{ name = "sinc", count = N }' if key == "basis.family" else "missing") in message


def test_good_spec_parses():
    spec = parse_spec(GOOD.encode(), "ok.toml")
    assert spec.basis_size == 2 and spec.coef_dim == 2


def test_dependent_basis_names_the_vanishing_combination():
    text = GOOD.replace('["t", "1"]', '["t", "1", "3*t - 2"]').encode()
    with pytest.raises(NotPositiveDefiniteError) as info:
        analyze(parse_spec(text, "dep.toml"))
    assert "linearly dependent" in str(info.value)
    assert "(2)*[1]" in str(info.value) and "(-3)*[t]" in str(info.value)


@pytest.mark.parametrize("text", ["__import__('os').system('true')", "open('x')", "lambda: 1",
                                  "[t for t in t]", "t if t else t", "(1).real", "eval('1')"])
def test_expressions_never_run_code(text):
    with pytest.raises(ExpressionError):
        parse_expression(text, {})
