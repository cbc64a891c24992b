"""Stage 1: spec file (TOML) -> :class:`Spec`.

Every problem in a file is collected and reported at once, as one :class:`SpecError`
whose entries name the key path (``basis.functions[2]``) and what was expected.
"""
import hashlib
import itertools
import json
import math
import keyword
import re
import sys
import tomllib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import sympy

from ..errors import SpecError
from . import splines
from .expressions import CONSTANTS, FUNCTIONS, ExpressionError, parse_expression

FAMILIES = {
    "monomial": {"degree"}, "legendre": {"degree"}, "fourier": {"order"},
    "hermite": {"degree"}, "sinc": {"count", "first"}, "bspline": {"order", "knots"},
}
WHOLE_LINE_FAMILIES = {"sinc", "hermite"}
POLYNOMIAL_FAMILIES = {"monomial", "legendre"}
TOTAL_DEGREE = {"total_degree"}
MAX_BASIS_SIZE = 2000
# The largest B-spline order: 17 compiles in about 8-9 s with 3 to 11 knots, 18 in 10-11 s,
# and 20 overflows a float in the exact analysis after ~10 s (docs/reference/spec.md).
MAX_BSPLINE_ORDER = 17
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")   # with fullmatch: no trailing newline
_TOP_KEYS = {"name", "title", "kind", "domain", "basis", "values", "metric", "privacy",
             "curve"}
OUTSIDE = ("zero", "hold")   # [curve] outside: the curve before its first, after its last sample
# A spec is data (docs/threat-model.md): a module name is an ASCII identifier that shadows no
# module of the standard library, NumPy or the package, no name a generated module imports
# and no file of a package (it does not start with __: __init__, __main__); a parameter name
# is a keyword argument of every function taking **params, so it is none of their other
# arguments (generated modules' API and engines/dask.privatize_batch).
RESERVED_NAMES = frozenset(sys.stdlib_module_names) | {  # and the packages gpcompiler uses
    "numpy", "scipy", "sympy", "mpmath", "gmpy2", "flint", "dask", "distributed", "tqdm",
    "matplotlib", "pandas", "skfda", "opendp", "gpcompiler", "Fraction"}
RESERVED_PARAMETERS = frozenset({"epsilon", "rho", "rng", "cache", "kind", "bound", "t", "y",
                                 "c", "a", "points", "grids", "values", "module", "seed"})
MAX_TITLE = 240   # characters of printable text on one line
_SECTION_KEYS = {
    "domain": {"variables", "intervals", "parameters", "curve_interval", "units"},
    "basis": {"functions", "family"},
    "values": {"dimension", "units"},
    "metric": {"inner_product", "weight", "sobolev"},
    "privacy": {"bound"},
    "curve": {"outside"},
}
# A declared bound B must leave room for the noise in float64 (docs/clipping.md).
MAX_BOUND = 2.0 ** 500


@dataclass(frozen=True)
class Family:
    """A named basis family (``basis.family``) with its integer options."""
    name: str
    options: tuple
    variables: int = 1     # k: a tensor-product or total-degree family when k > 1

    def option(self, key, default=None):
        return dict(self.options).get(key, default)


@dataclass(frozen=True)
class Metric:
    """The inner product: L2, weighted L2 (``weight``) or Sobolev H^1 (``sobolev = 1``)."""
    weight: object = None
    sobolev: int = 0

    @property
    def kind(self):
        if self.sobolev:
            return "sobolev"
        return "weighted" if self.weight is not None else "L2"


@dataclass(frozen=True)
class Spec:
    """A validated spec: symbols, exact domain, basis expressions, metric, provenance."""
    name: str
    title: str
    kind: str
    path: str
    sha256: str
    variable: sympy.Symbol
    parameters: tuple
    interval: tuple
    curve_interval: tuple
    functions: tuple
    vector_basis: bool
    value_dim: int
    family: Family
    metric: Metric
    variables: tuple = ()      # every variable (paper Sec. 3.2, "Multivariate functions")
    intervals: tuple = ()      # the box: one exact (lo, hi) per variable
    bound: float = None        # [privacy] bound: the public norm bound B, or None (default)
    outside: str = "zero"      # [curve] outside: "zero" or "hold" (docs/design.md)
    domain_units: tuple = ()   # one unit name (or None) per variable, for plots and releases
    value_units: str = None    # the unit of the values, for plots and releases
    metric_tables: str = None  # canonical JSON of [metric] and [domain] (the ledger's metric id)

    @property
    def dimension(self):
        """k, the number of variables (1 for a curve)."""
        return len(self.variables)

    @property
    def basis_size(self):
        return len(self.functions)

    @property
    def coef_dim(self):
        return self.basis_size if self.vector_basis else self.basis_size * self.value_dim

    @property
    def defaults(self):
        return {symbol: value for symbol, value in self.parameters}


class _Problems:
    def __init__(self):
        self.items = []

    def add(self, key, message):
        self.items.append((key, message))


def load_spec(path, root=None):
    """Read and validate a spec file; raise :class:`SpecError` listing every problem.

    The recorded path is relative to ``root`` (default: the working directory) so
    that generated headers do not depend on where the project is checked out.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise SpecError([("", f"cannot read spec file: {error.strerror}")], path) from None
    return parse_spec(raw, path, root)


def parse_spec(raw, path, root=None):
    """Validate the bytes of a spec file (``path`` is recorded relative to ``root``)."""
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise SpecError([("", f"not valid TOML: {error}")], path) from None
    problems = _Problems()
    if not isinstance(document, dict):
        raise SpecError([("", "expected a TOML table")], path)
    spec = _build(document, problems, _display_path(path, root), hashlib.sha256(raw).hexdigest())
    if problems.items:
        raise SpecError(problems.items, path)
    return spec


def _display_path(path, root=None):
    path = Path(path)
    try:
        return path.resolve().relative_to(Path(root or Path.cwd()).resolve()).as_posix()
    except ValueError:
        return path.name


def _build(document, problems, path, sha256):
    _check_keys(document, problems)
    name = _name(document, problems)
    title = _title(document.get("title", name), problems)
    kind = document.get("kind", "mechanism")
    if kind not in ("mechanism", "cdf"):
        problems.add("kind", f"expected 'mechanism' or 'cdf', got {kind!r}")
    domain = _section(document, "domain", problems)
    variables, parameters, refused = _symbols(domain, problems)
    symbols = {**{str(v): v for v in variables}, **{str(s): s for s, _ in parameters},
               **refused}   # a bad default is its own error only, not one per use
    intervals = _intervals(domain.get("intervals"), len(variables), symbols, problems)
    box = len(variables) > 1
    variable, interval = (None, None) if box else (variables[0], intervals[0])
    curve = domain.get("curve_interval")
    if box and curve is not None:
        problems.add("domain.curve_interval", "expected no curve_interval for several variables")
        curve = None
    curve_interval = (_pair(curve, "domain.curve_interval", symbols, problems)
                      if curve is not None else None)
    _check_inside(curve_interval, interval, problems)
    values = _section(document, "values", problems)
    value_dim = _positive_int(values.get("dimension", 1), "values.dimension", problems)
    domain_units = _domain_units(domain.get("units"), len(variables), problems)
    value_units = _unit(values.get("units"), "values.units", problems)
    basis = _section(document, "basis", problems)
    family = _family(basis, intervals, problems)
    functions, vector_basis = _functions(basis, family, variables, intervals, symbols,
                                         value_dim, problems)
    metric = _metric(_section(document, "metric", problems), symbols, family, problems)
    bound = _bound(_section(document, "privacy", problems), problems)
    outside = _outside(_section(document, "curve", problems), box or kind == "cdf", problems)
    if kind == "cdf" and (family is None or family.name != "legendre" or box):
        problems.add("basis.family", "a cdf spec needs family = { name = \"legendre\", degree = K }")
    return Spec(name=name, title=title, kind=kind, path=path, sha256=sha256,
                variable=variable, parameters=parameters, interval=interval,
                curve_interval=curve_interval, functions=functions,
                vector_basis=vector_basis, value_dim=value_dim, family=family, metric=metric,
                variables=variables, intervals=intervals, bound=bound, outside=outside,
                domain_units=domain_units, value_units=value_units,
                metric_tables=json.dumps({"metric": document.get("metric", {}),
                                          "domain": document.get("domain", {})},
                                         sort_keys=True, default=str))


def _outside(curve, not_a_curve, problems):
    """[curve] outside: "zero" (default) or "hold", for a curve spec only."""
    value = curve.get("outside", "zero")
    if value not in OUTSIDE:
        problems.add("curve.outside", f"expected \"zero\" or \"hold\", got {value!r}")
        return "zero"
    if not_a_curve and "outside" in curve:
        problems.add("curve.outside", "expected no outside: it applies to curves (one variable, "
                                      "kind = \"mechanism\")")
    return value


def _domain_units(raw, count, problems):
    """``domain.units``: one unit for a curve's variable; over several variables one per
    variable (a list), or one string for all."""
    if isinstance(raw, list):
        if len(raw) != count:
            problems.add("domain.units", f"expected one unit per variable ({count}), got "
                                         f"{len(raw)}")
            return (None,) * count
        return tuple(_unit(u, f"domain.units[{i}]", problems) for i, u in enumerate(raw))
    return (_unit(raw, "domain.units", problems),) * count


def _unit(raw, key, problems):
    """An optional unit name: a short non-empty string on one line."""
    if raw is None:
        return None
    if not (isinstance(raw, str) and raw.strip() and raw.isprintable() and len(raw) <= 40):
        problems.add(key, f"expected a unit name (1 to 40 printable characters on one line, "
                          f"e.g. \"s\" or \"mV\"), got {_shown(raw)}")
        return None
    return raw.strip()


def _check_keys(document, problems):
    for key in sorted(set(document) - _TOP_KEYS):
        problems.add(_key(key), f"unknown key (expected one of {', '.join(sorted(_TOP_KEYS))})")
    for section, allowed in _SECTION_KEYS.items():
        value = document.get(section, {})
        if isinstance(value, dict):
            for key in sorted(set(value) - allowed):
                problems.add(f"{section}.{_key(key)}",
                             f"unknown key (expected one of {', '.join(sorted(allowed))})")


def _section(document, key, problems):
    value = document.get(key, {})
    if not isinstance(value, dict):
        problems.add(key, "expected a table")
        return {}
    return value


def _name(document, problems):
    if "name" not in document:
        problems.add("name", "missing: expected a Python identifier (the module name), "
                             "e.g. name = \"linear\"")
        return "invalid"
    name = document["name"]
    if (not isinstance(name, str) or not _NAME.fullmatch(name) or keyword.iskeyword(name)
            or name in RESERVED_NAMES or name.startswith("__")):
        problems.add("name", "expected a Python identifier (the module name) that is not a "
                             "keyword, does not start with __ and names no module of the "
                             "standard library or a package gpcompiler uses (numpy, sympy, "
                             f"...), got {_shown(name)}")
        return "invalid"
    return name


def _title(title, problems):
    """The title: printable text on one line (no control, format or separator character
    but the space), 1 to MAX_TITLE characters."""
    if not (isinstance(title, str) and 0 < len(title) <= MAX_TITLE and title.isprintable()):
        problems.add("title", f"expected printable text on one line, 1 to {MAX_TITLE} "
                              "characters (no control, format or line-separator characters), "
                              f"got {_shown(title)}")
        return "invalid"
    return title


def _float64(number):
    """Whether a positive number rounds to a positive finite float64 (a module holds it as
    one: PARAMETERS)."""
    try:
        value = float(number)
    except OverflowError:
        return False
    return 0 < value < math.inf


def _shown(value, limit=60):
    """``value`` in an error message: its repr (one line), cut after ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _key(name):
    """A key of the spec in an error message: as written if it is an identifier, else its
    repr (a key may hold any text, a line end too)."""
    return name if _NAME.fullmatch(name) else repr(name)


def _symbols(domain, problems):
    variables = domain.get("variables", ["t"])
    if (not isinstance(variables, list) or not variables
            or not all(isinstance(v, str) and _NAME.fullmatch(v) and not keyword.iskeyword(v)
                       and v not in FUNCTIONS and v not in CONSTANTS for v in variables)
            or len(set(variables)) != len(variables)):
        problems.add("domain.variables", "expected a list of distinct variable names such as "
                                         f"[\"t\"] or [\"x\", \"y\"], got {variables!r}")
        variables = ["t"]
    raw = domain.get("parameters", {})
    if not isinstance(raw, dict):
        problems.add("domain.parameters", "expected a table of name = \"default\"")
        raw = {}
    parameters, refused = [], {}
    for key in sorted(raw):
        where = f"domain.parameters.{_key(key)}"
        reserved = set(variables) | set(FUNCTIONS) | set(CONSTANTS) | RESERVED_PARAMETERS
        if not _NAME.fullmatch(key) or keyword.iskeyword(key) or key in reserved:
            problems.add(where, "expected an identifier that is not the variable, a "
                                "function, a constant or an argument of the module's API "
                                f"({', '.join(sorted(RESERVED_PARAMETERS))})")
            continue
        default = _expression(raw[key], where, {}, problems)
        if default is not None and not (default.is_number and default.is_positive
                                        and default.is_finite and _float64(default)):
            problems.add(where, f"expected a positive finite default (a positive float64 once "
                                f"rounded), got {_shown(raw[key])}")
            default = None
        if default is None:     # still a name, so that its uses add no error of their own
            refused[key] = sympy.Symbol(key, positive=True)
        else:
            parameters.append((sympy.Symbol(key, positive=True), default))
    return tuple(sympy.Symbol(v, real=True) for v in variables), tuple(parameters), refused


def _expression(text, where, symbols, problems):
    try:
        return parse_expression(text, symbols)
    except ExpressionError as error:
        problems.add(where, str(error))
        return None


def _check_inside(curve, interval, problems):
    """A curve interval lies in the domain (curves are functions on the domain)."""
    if curve is None or interval is None:
        return
    outside = [sympy.simplify(curve[0] - interval[0]).is_extended_negative,
               sympy.simplify(interval[1] - curve[1]).is_extended_negative]
    if any(outside):
        problems.add("domain.curve_interval", f"expected an interval inside the domain "
                     f"[{interval[0]}, {interval[1]}], got [{curve[0]}, {curve[1]}]")


def _pair(value, where, symbols, problems):
    if not isinstance(value, list) or len(value) != 2:
        problems.add(where, f"expected [lo, hi], got {value!r}")
        return None
    lo, hi = (_expression(v, f"{where}[{i}]", symbols, problems) for i, v in enumerate(value))
    if lo is None or hi is None:
        return None
    difference = sympy.simplify(hi - lo)
    if difference.is_extended_positive is not True:
        problems.add(where, f"expected lo < hi for positive parameters, got [{lo}, {hi}]")
        return None
    return lo, hi


def _intervals(value, k, symbols, problems):
    """One exact interval per variable: the box I_1 x ... x I_k (paper Sec. 3.2)."""
    where = "domain.intervals"
    if value is None:
        problems.add(where, "missing: expected [[lo, hi]]" if k == 1 else
                            f"missing: expected {k} intervals [[lo, hi], ...], one per variable")
        return (None,) * k
    if not isinstance(value, list) or len(value) != k:
        problems.add(where, "expected exactly one interval [[lo, hi]]" if k == 1 else
                            f"expected {k} intervals [[lo, hi], ...], one per variable "
                            f"(domain.variables), got {value!r}")
        return (None,) * k
    return tuple(_pair(v, f"{where}[{i}]", symbols, problems) for i, v in enumerate(value))


def _bound(privacy, problems):
    """``[privacy] bound``: the public norm bound B of every release in the spec's metric
    (coefficients are clipped to it before noise; docs/clipping.md), or None."""
    if "bound" not in privacy:
        return None
    value = privacy["bound"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and 0 < value <= MAX_BOUND):
        problems.add("privacy.bound", f"expected a positive number <= 2^500 (the public norm "
                                      f"bound of a release), got {value!r}")
        return None
    return float(value)


def _positive_int(value, where, problems, low=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        problems.add(where, f"expected an integer >= {low}, got {value!r}")
        return low
    return value


def _family(basis, intervals, problems):
    raw = basis.get("family")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.add("basis.family", f"expected a table such as {_family_example(raw)}, "
                                     f"got {raw!r}")
        return None
    if raw.get("name") not in FAMILIES:
        problems.add("basis.family.name", ("missing: expected" if "name" not in raw else
                                           "expected") + f" one of {', '.join(sorted(FAMILIES))}"
                     + (f", got {raw['name']!r}" if "name" in raw else ""))
        return None
    name, k, before = raw["name"], len(intervals), len(problems.items)
    if name == "bspline" and k > 1:
        problems.add("basis.family", "the bspline family is for one variable")
        return None
    allowed = FAMILIES[name] | (TOTAL_DEGREE if k > 1 and name in POLYNOMIAL_FAMILIES else set())
    options = {}
    for key in sorted(set(raw) - {"name"}):
        where = f"basis.family.{key}"
        if key not in allowed:
            problems.add(where, f"unknown option for {name} (expected {', '.join(sorted(allowed))})")
            continue
        if key == "knots":
            options[key] = _knots(raw[key], where, problems)
        elif k > 1 and key != "total_degree":
            if not isinstance(raw[key], list) or len(raw[key]) != k:
                problems.add(where, f"expected a list of {k} integers, one per variable, "
                                    f"got {raw[key]!r}")
                continue
            options[key] = tuple(_family_option(v, key, f"{where}[{i}]", problems)
                                 for i, v in enumerate(raw[key]))
        else:
            options[key] = _family_option(raw[key], key, where, problems)
    required = FAMILIES[name] - {"first", "knots"}
    if "total_degree" in raw:
        required = set()
        if "degree" in raw:
            problems.add("basis.family", "expected either degree (tensor product) or "
                                         "total_degree, not both")
    missing = sorted(required - set(raw))
    for key in missing:
        problems.add(f"basis.family.{key}", f"missing: {name} needs an integer {key}"
                     + (f" per variable (a list of {k})" if k > 1 else ""))
    if missing or len(problems.items) > before:
        return None
    if name == "bspline":
        return _bspline(options, intervals, problems)
    for i, interval in enumerate(intervals):
        if interval is None:
            continue
        where = "domain.intervals" + (f"[{i}]" if k > 1 else "")
        whole_line = interval == (-sympy.oo, sympy.oo)
        if name in WHOLE_LINE_FAMILIES and not whole_line:
            problems.add(where, f"the {name} family is orthonormal on the whole "
                                "line: expected [[\"-oo\", \"oo\"]]")
        if name not in WHOLE_LINE_FAMILIES and not all(e.is_finite for e in interval):
            problems.add(where, f"the {name} family needs a finite interval")
    return Family(name, tuple(sorted(options.items())), k)


def _knots(raw, where, problems):
    """The interior knots of a bspline family: a list of exact rationals (numbers, or strings
    such as "1/3"), in nondecreasing order."""
    if not isinstance(raw, list):
        problems.add(where, f"expected a list of interior knots such as [1, \"5/2\", 4], "
                            f"got {_shown(raw)}")
        return ()
    knots = []
    for i, value in enumerate(raw):
        knot = _expression(value, f"{where}[{i}]", {}, problems)
        if knot is not None and not knot.is_Rational:
            problems.add(f"{where}[{i}]", f"expected a rational knot (a number or a string "
                                          f"such as \"1/3\"), got {_shown(value)}")
        elif knot is not None:
            knots.append(knot)
    if knots != sorted(knots):
        problems.add(where, "expected the knots in nondecreasing order")
    return tuple(knots)


def _bspline(options, intervals, problems):
    """The bspline family on one rational interval, its interior knots strictly inside it,
    each repeated at most ``order`` times (docs/reference/spec.md, "B-splines")."""
    if intervals[0] is None:
        return None
    lo, hi = intervals[0]
    if not (lo.is_Rational and hi.is_Rational):
        problems.add("domain.intervals", f"the bspline family needs rational ends, got "
                                         f"[{lo}, {hi}]")
        return None
    order, knots = options["order"], options.setdefault("knots", ())
    if order > MAX_BSPLINE_ORDER:
        problems.add("basis.family.order", f"expected order <= {MAX_BSPLINE_ORDER} (degree "
                                           f"{MAX_BSPLINE_ORDER - 1}; add knots instead), "
                                           f"got {order}")
        return None
    outside = [k for k in knots if not lo < k < hi]
    if outside:
        problems.add("basis.family.knots", f"expected interior knots strictly inside "
                                           f"[{lo}, {hi}], got {outside[0]}")
    repeated = [k for k in set(knots) if knots.count(k) > order]
    if repeated:
        problems.add("basis.family.knots", f"the knot {repeated[0]} is repeated "
                                           f"{knots.count(repeated[0])} times: at most order = "
                                           f"{order} times")
    return None if outside or repeated else Family("bspline", tuple(sorted(options.items())))


def _continuous_spline(family, problems):
    """H^1 needs continuous B-splines: order >= 2, every knot repeated at most order - 1
    times."""
    order, knots = family.option("order"), family.option("knots")
    if order == 1:
        problems.add("basis.family.order", "sobolev = 1 (H^1) needs a continuous basis: "
                                           "expected order >= 2, got 1 (piecewise constant)")
    elif any(knots.count(k) >= order for k in knots):
        problems.add("basis.family.knots", f"sobolev = 1 (H^1) needs a continuous basis: "
                                           f"expected each knot at most order - 1 = "
                                           f"{order - 1} times")


def _family_example(raw):
    """A family table to suggest: the named family's, if ``raw`` names one."""
    name = raw if isinstance(raw, str) and raw in FAMILIES else "legendre"
    if name == "bspline":
        return '{ name = "bspline", order = 4, knots = [1, "5/2", 4] }'
    options = ", ".join(f"{key} = N" for key in sorted(FAMILIES[name] - {"first"}))
    return f"{{ name = \"{name}\", {options} }}"


def _family_option(value, key, where, problems):
    if key == "first":
        if isinstance(value, bool) or not isinstance(value, int):
            problems.add(where, f"expected an integer, got {value!r}")
            return 0
        return value
    return _positive_int(value, where, problems, 0 if key in ("degree", "total_degree") else 1)


def _functions(basis, family, variables, intervals, symbols, value_dim, problems):
    raw = basis.get("functions")
    if (raw is None) == ("family" not in basis):
        problems.add("basis", "expected exactly one of 'functions' or 'family'")
        return (), False
    if "family" in basis:
        if family is None:
            return (), False
        size = family_size(family)
        if size > MAX_BASIS_SIZE:
            problems.add("basis.family", f"basis size {size} exceeds {MAX_BASIS_SIZE}")
            return (), False
        if len(variables) > 1:
            return tuple((f,) for f in _box_functions(family, variables, intervals)), False
        return tuple((f,) for f in family_functions(family, variables[0], intervals[0])), False
    if len(variables) > 1 and not all(i is None or all(e.is_finite for e in i) for i in intervals):
        problems.add("domain.intervals", "expected finite intervals for basis.functions over "
                                         "several variables")
    if not isinstance(raw, list) or not raw:
        problems.add("basis.functions", "expected a non-empty list of expressions")
        return (), False
    if len(raw) > MAX_BASIS_SIZE:
        problems.add("basis.functions", f"more than {MAX_BASIS_SIZE} functions")
        return (), False
    vector_basis = isinstance(raw[0], list)
    functions = []
    for j, item in enumerate(raw):
        where = f"basis.functions[{j}]"
        if isinstance(item, list) != vector_basis:
            problems.add(where, "mixes scalar and vector-valued functions")
            continue
        components = item if vector_basis else [item]
        if vector_basis and len(components) != value_dim:
            problems.add(where, f"expected {value_dim} components (values.dimension), "
                                f"got {len(components)}")
            continue
        parsed = [_expression(c, f"{where}[{r}]" if vector_basis else where, symbols, problems)
                  for r, c in enumerate(components)]
        if any(p is None for p in parsed):
            continue
        if any(not p.is_finite and p.is_number for p in parsed):
            problems.add(where, "expected a finite function")
            continue
        if all(p == 0 for p in parsed):
            problems.add(where, f"{item!r} is identically zero: a basis function must not be "
                                "(it has norm 0, so the basis is linearly dependent)")
            continue
        functions.append(tuple(parsed))
    return tuple(functions), vector_basis


def family_size(family):
    """Number of basis functions of a family, known before any expression is built."""
    if family.option("total_degree") is not None:
        return math.comb(family.option("total_degree") + family.variables, family.variables)
    if family.variables > 1:
        return math.prod(family_size(f) for f in axis_families(family))
    if family.name == "sinc":
        return family.option("count")
    if family.name == "fourier":
        return 2 * family.option("order") + 1
    if family.name == "bspline":
        return len(family.option("knots")) + family.option("order")
    return family.option("degree") + 1


def axis_families(family):
    """The 1-D factor families of a tensor-product family (one per variable)."""
    return tuple(Family(family.name, tuple((key, value[i]) for key, value in family.options))
                 for i in range(family.variables))


def multi_indices(family):
    """Multi-indices (one per basis function, last variable fastest): the tensor grid
    0..degree_i, or the total-degree set {|a| <= D} in the same lexicographic order."""
    total = family.option("total_degree")
    if total is None:
        return list(itertools.product(*(range(family_size(f)) for f in axis_families(family))))
    return [a for a in itertools.product(range(total + 1), repeat=family.variables)
            if sum(a) <= total]


def _box_functions(family, variables, intervals):
    """Products of 1-D family functions over the multi-indices (paper Sec. 3.2)."""
    return [sympy.Mul(*factors) for factors in box_factors(family, variables, intervals)]


def box_factors(family, variables, intervals):
    """The factors of each basis function of a box family, one 1-D family function per
    variable in the order of the variables (a SymPy product sorts its factors)."""
    total = family.option("total_degree")
    axes = ([Family(family.name, (("degree", total),))] * family.variables
            if total is not None else axis_families(family))
    tables = [family_functions(f, v, i) for f, v, i in zip(axes, variables, intervals)]
    return [tuple(tables[i][a_i] for i, a_i in enumerate(a)) for a in multi_indices(family)]


def family_functions(family, t, interval):
    """Basis functions of a named family, as exact SymPy expressions (Legendre and Hermite
    polynomials unevaluated: the analysis uses their closed forms, never their expansion)."""
    if family.name == "sinc":
        first = family.option("first", 1)
        return [sympy.sinc(sympy.pi * (t - k), evaluate=False)
                for k in range(first, first + family.option("count"))]
    if family.name == "hermite":
        return [hermite_function(n, t, evaluate=False) for n in range(family.option("degree") + 1)]
    lo, hi = interval if interval is not None else (-1, 1)
    if family.name == "bspline":
        return bspline_functions(family, t, interval)
    if family.name == "monomial":
        return [t ** k for k in range(family.option("degree") + 1)]
    if family.name == "legendre":
        u = (2 * t - lo - hi) / (hi - lo)
        return [sympy.legendre(k, u, evaluate=False) for k in range(family.option("degree") + 1)]
    angle = 2 * sympy.pi * t / (hi - lo)
    order = family.option("order")
    return [sympy.Integer(1)] + [f(k * angle) for k in range(1, order + 1)
                                 for f in (sympy.cos, sympy.sin)]


def bspline_knots(family, interval):
    """(the clamped knot vector, the distinct breakpoints) of a bspline family, as Fractions."""
    lo, hi = (Fraction(int(e.p), int(e.q)) for e in interval)
    interior = [Fraction(int(k.p), int(k.q)) for k in family.option("knots")]
    knots = splines.clamped_knots(family.option("order"), lo, hi, interior)
    return knots, sorted(set(knots))


def bspline_functions(family, t, interval):
    """The clamped B-splines as SymPy Piecewise expressions, each piece a polynomial in
    powers of t - a on its knot interval [a, b) (the last one closed)."""
    knots, breaks = bspline_knots(family, interval)
    out = []
    for pieces in splines.bspline_polynomials(family.option("order"), knots):
        branches = []
        for a, b in zip(breaks[:-1], breaks[1:]):
            poly = splines.substitute(pieces[a], a, 1) if a in pieces else [0]
            value = sympy.Add(*(sympy.Rational(c.numerator, c.denominator)
                                * (t - sympy.Rational(a.numerator, a.denominator)) ** n
                                for n, c in enumerate(poly)))
            branches.append((value, t < sympy.Rational(b.numerator, b.denominator)))
        branches[-1] = (branches[-1][0], True)
        out.append(sympy.Piecewise(*branches))
    return out


def hermite_function(n, t, evaluate=True):
    """The n-th Hermite function, orthonormal on the real line."""
    if evaluate:
        norm = 1 / sympy.sqrt(2 ** n * sympy.factorial(n) * sympy.sqrt(sympy.pi))
        return norm * sympy.hermite(n, t) * sympy.exp(-t ** 2 / 2)
    norm = sympy.Pow(sympy.Integer(2 ** n * math.factorial(n)), sympy.Rational(-1, 2),
                     evaluate=False)    # no square-factor search in a 2500-digit integer
    return sympy.Mul(norm, sympy.pi ** sympy.Rational(-1, 4), sympy.hermite(n, t, evaluate=False),
                     sympy.exp(-t ** 2 / 2), evaluate=False)


def _metric(metric, symbols, family, problems):
    inner = metric.get("inner_product", "L2")
    if inner != "L2":
        problems.add("metric.inner_product", f"expected \"L2\", got {inner!r}")
    weight = None
    if "weight" in metric:
        weight = _expression(metric["weight"], "metric.weight", symbols, problems)
    sobolev = metric.get("sobolev", 0)
    if isinstance(sobolev, bool) or sobolev not in (0, 1):
        problems.add("metric.sobolev", f"expected 0 or 1 (H^1), got {sobolev!r}")
        sobolev = 0
    if weight is not None and sobolev:
        problems.add("metric", "choose either a weight or sobolev = 1, not both")
    if sobolev and family is not None and family.name == "bspline":
        _continuous_spline(family, problems)
    if (weight is not None or sobolev) and family is not None and family.name in WHOLE_LINE_FAMILIES:
        problems.add("metric", f"the {family.name} family is compiled for the plain L2 metric")
    return Metric(weight=weight, sobolev=sobolev)
