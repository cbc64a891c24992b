"""Stage 3: :class:`Analysis` -> :class:`ModuleIR`, everything the emitter prints.

Exact values are lowered once into (code, exact) pairs: a constant becomes the
``repr`` of its correctly rounded float64 value; a value depending on the spec's
parameters becomes NumPy code reading them from the dict ``p``.
"""
import json
import math
from dataclasses import dataclass

import mpmath
import numpy
import sympy
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.str import StrPrinter

from .. import __version__
from . import slack
from .analysis.factor import EIGENSOLVER_LIMIT
from .analysis.weights import piece_ratio, weight_factors, weight_singularities
from .emit.literals import python_literal
from ..errors import SpecError
from .symbolic import is_identity, to_float
from ..runtime.rounding import ceil_sqrt


@dataclass(frozen=True)
class Entry:
    """One matrix entry: position, Python code for its value, exact rendering."""
    row: int
    col: int
    code: str
    exact: str


COMPACT_LIMIT = 600


@dataclass(frozen=True)
class MatrixIR:
    """A matrix as its nonzero entries (lower triangle only when symmetric).

    Constant matrices with more than COMPACT_LIMIT entries are ``packed``: ``entries`` is
    then the Python code of one float64 literal per position of ``pattern`` ("diagonal",
    "lower" row by row, or "dense"), with ``formula`` stating the exact entries instead of
    one comment per entry."""
    name: str
    shape: tuple
    entries: tuple
    symmetric: bool
    identity: bool
    pattern: str = None
    formula: str = None


@dataclass(frozen=True)
class ModuleIR:
    """Plain data for :func:`gpcompiler.compiler.emit.emit_module`."""
    name: str
    title: str
    tool_version: str
    spec_path: str
    spec_sha256: str
    units: dict                # {"domain": (unit or None per variable), "values": unit}
    parameters: tuple          # (name, default float repr, exact)
    parameters_fixed: bool
    domain: tuple              # ((code, exact), (code, exact))
    curve_interval: tuple      # same shape, or None
    basis_size: int
    value_dim: int
    coef_dim: int
    coef_shape: tuple
    vector_basis: bool
    family: str
    atoms_kind: str
    atoms_size: int
    sinc_shifts: tuple
    atom_codes: tuple          # per atom: tuple of component codes (expression atoms)
    basis_codes: tuple         # per user function: tuple of component codes
    atom_slope_codes: tuple    # per variable, per atom: codes of its partial derivative (H^1)
    weight_code: str
    sobolev: bool
    gram: MatrixIR
    cholesky: MatrixIR
    transform: MatrixIR
    exact_nodes: int
    frequency: str
    min_nodes: int
    singular: tuple            # (end index, alpha, code of w at distance d from that end)
    summary: tuple             # lines for the module docstring
    metric: str
    polynomial_degree: int
    gram_method: str
    certificate: str
    condition_number: str      # Python code of the float64 value (math.inf beyond range)
    cholesky_doc: str
    box: object = None         # BoxIR for k > 1 variables
    eta: str = "None"          # float error of the projection per unit of B (slack.py)
    bound: str = "None"        # the spec's [privacy] bound B, or None (the default bound)
    outside: str = "zero"      # [curve] outside: "zero" or "hold"
    clips: bool = False        # the samples are clipped in the spec's metric (clips_samples)
    breaks: tuple = ()         # piecewise atoms: (code, exact) per breakpoint, ends included
    piece_order: int = 0       # piecewise atoms: Legendre atoms per piece
    cuts: tuple = ()           # (code, exact) per breakpoint inside the domain: sub-pieces end there
    slack_condition: str = None  # when the stated slack needs one (slack_condition), else None
    metric_identity: dict = None   # the ledger's {"name", "sha256"} of the metric at the defaults


@dataclass(frozen=True)
class BoxIR:
    """What a module over a box needs beyond the 1-D IR (paper Sec. 3.2)."""
    variables: tuple           # names
    exact_nodes: tuple         # Legendre atoms: Gauss-Legendre nodes per axis and cell
    axis_sizes: tuple          # Legendre atoms per axis
    total_degree: int          # atoms restricted to total degree, or None (tensor grid)
    factors: tuple             # tensor product: (name, gram MatrixIR, cholesky MatrixIR)
    frequency: tuple = ()      # expression atoms: frequency bound per variable
    min_nodes: tuple = ()      # expression atoms: smallest Gauss order per variable
    weight_factors: tuple = ()  # a separable weight singular on the boundary, per variable:
    # w_i's code at x and at x[plain], w_i exactly, its singular ends (end, alpha, code at d)


class _Printer(NumPyPrinter):
    """NumPy printer reading parameters from ``p`` and the variable as ``x`` (on a box, the
    variables as the columns ``x[..., i]``)."""

    def __init__(self, variable, parameters, name="x", names=None):
        super().__init__({"fully_qualified_modules": True, "allow_unknown_functions": False})
        self._names = names or {variable: name}
        self._parameters = set(parameters)

    def _print_Symbol(self, symbol):
        if symbol in self._names:
            return self._names[symbol]
        if symbol in self._parameters:
            return f"p[{python_literal(str(symbol))}]"
        raise ValueError(f"unexpected symbol {symbol}")

    def _print_Min(self, expression):
        return self._nested("numpy.minimum", expression.args)

    def _print_Max(self, expression):
        return self._nested("numpy.maximum", expression.args)

    def _nested(self, function, args):
        """min/max of several arguments, elementwise, with nothing to import."""
        out = self._print(args[0])
        for argument in args[1:]:
            out = f"{function}({out}, {self._print(argument)})"
        return out

    def _print_erf(self, expression):
        """math.erf elementwise (NumPy has no erf; SymPy prints the scalar math.erf)."""
        return f"numpy.vectorize(math.erf, otypes=[float])({self._print(expression.args[0])})"

    def _print_sinc(self, expression):
        return f"numpy.sinc(({self._print(expression.args[0])})/numpy.pi)"


def lower(analysis):
    """Lower an analysis to the module IR (no SymPy objects remain)."""
    spec = analysis.spec
    box = spec.dimension > 1
    if box:
        _check_box_module(analysis)
    printer = _Printer(spec.variable, [s for s, _ in spec.parameters], names={
        v: f"x[..., {i}]" for i, v in enumerate(spec.variables)} if box else None)
    lower_value = _value_lowering(printer, spec.defaults)
    m = spec.basis_size
    coef_shape = (m,) if spec.vector_basis or spec.value_dim == 1 else (m, spec.value_dim)
    atom_codes = atom_slope_codes = ()
    if analysis.atoms.kind == "expression":
        atom_codes = tuple(tuple(_code(printer, c) for c in f) for f in spec.functions)
        if spec.metric.sobolev:
            atom_slope_codes = tuple(tuple(tuple(_code(printer, sympy.diff(c, v)) for c in f)
                                           for f in spec.functions) for v in spec.variables)
    family = spec.family.name if spec.family else None
    basis_codes = ()
    if analysis.atoms.kind == "legendre" and family is None or analysis.atoms.kind == "piecewise":
        basis_codes = tuple(tuple(_code(printer, c) for c in f) for f in spec.functions)
    weight = spec.metric.weight
    formulas = dict(analysis.formulas)
    kappa = analysis.condition_number
    return ModuleIR(
        name=spec.name, title=spec.title, tool_version=__version__, spec_path=spec.path,
        spec_sha256=spec.sha256, units=units(spec),
        parameters=tuple((str(s), repr(to_float(v)), str(v)) for s, v in spec.parameters),
        parameters_fixed=analysis.parameters_fixed and bool(spec.parameters),
        domain=(tuple(tuple(lower_value(e) for e in i) for i in spec.intervals) if box
                else tuple(lower_value(e) for e in spec.interval)),
        curve_interval=(tuple(lower_value(e) for e in spec.curve_interval)
                        if spec.curve_interval else None),
        basis_size=m, value_dim=spec.value_dim, coef_dim=spec.coef_dim,
        coef_shape=coef_shape, vector_basis=spec.vector_basis,
        family=family, atoms_kind=analysis.atoms.kind, atoms_size=analysis.atoms.size,
        sinc_shifts=analysis.atoms.shifts, atom_codes=atom_codes, basis_codes=basis_codes,
        atom_slope_codes=atom_slope_codes,
        weight_code=_code(printer, weight) if weight is not None else None,
        sobolev=bool(spec.metric.sobolev),
        gram=None if analysis.factors else _matrix("gram", analysis.gram, lower_value, True,
                                                   formulas.get("gram")),
        cholesky=None if analysis.factors else _matrix("cholesky", analysis.cholesky, lower_value,
                                                       formula=formulas.get("cholesky")),
        transform=_matrix("transform", analysis.transform, lower_value),
        exact_nodes=analysis.quadrature.exact_nodes,
        frequency=repr(analysis.quadrature.frequency),
        min_nodes=analysis.quadrature.min_nodes,
        singular=() if box else _singular(spec, analysis.quadrature.singular),
        summary=_summary(analysis), gram_method=analysis.gram_method,
        metric=spec.metric.kind, polynomial_degree=(
            analysis.atoms.size - 1 if analysis.atoms.kind == "legendre"
            and analysis.atoms.size == m and not box else None),
        certificate=analysis.certificate, outside=spec.outside,
        condition_number=_float_code(float(f"{float(kappa):.6e}") if mpmath.isfinite(kappa)
                                     else math.nan),
        cholesky_doc=("R = " + " (x) ".join(f"R_{v}" for v in spec.variables) + ", the "
                      "Kronecker product of the 1-D factors' R (G = R R^T)" if analysis.factors else
                      "R = C D^(1/2), G = R R^T, phi = R . atoms: C exact change of basis "
                      "to Legendre"
                      if "cholesky" in formulas else
                      "Lower-triangular R with G = R R^T (R = L D^(1/2) from the exact LDL^T)"),
        box=_box(analysis, lower_value) if box else None,
        eta=repr(eta(analysis)), bound=repr(spec.bound), clips=clips_samples(spec),
        breaks=tuple(lower_value(b) for b in analysis.atoms.breaks),
        piece_order=analysis.atoms.order,
        cuts=() if box else tuple(lower_value(b) for b in analysis.quadrature.breaks),
        slack_condition=slack_condition(spec, analysis.parameters_fixed),
        metric_identity=metric_identity(spec))


def metric_identity(spec):
    """The ledger's identity of the spec's metric at the parameters' defaults
    (docs/reference/ledger.md): what a release's record names as its metric."""
    from ..accounting.records import metric_identity_of
    return metric_identity_of(json.loads(spec.metric_tables),
                              {str(s): to_float(v) for s, v in spec.parameters})


def eta(analysis):
    """The float error of the module's projection per unit of the clip bound B
    (slack.py, docs/clipping.md), from public values only."""
    spec = analysis.spec
    ratios = weight_ratios(spec)
    if spec.dimension == 1:
        return slack.curve_eta(spec.basis_size, spec.value_dim, spec.vector_basis,
                               spec.coef_dim, bool(spec.metric.sobolev),
                               ratios[0] if ratios else 3)
    differences = bool(spec.metric.sobolev)
    return slack.box_eta(analysis.atoms.size, spec.dimension, _transform_norm(analysis),
                         spec.coef_dim, ratios, differences)


def clips_samples(spec):
    """Whether the module clips its sampled curves (fields) in the spec's metric before the
    projection (runtime/curveclip.py, fieldclip.py; docs/clipping.md): L2 and H^1, and a
    weight with piece ratios (weight_ratios); a held curve is clipped as the curve zero
    outside its samples with the ends added (runtime/hold.py)."""
    return spec.metric.kind in ("L2", "sobolev") or bool(weight_ratios(spec))


def slack_condition(spec, parameters_fixed):
    """The condition under which the stated slack 2 ETA B holds, or None: it holds for
    every input (docs/clipping.md, "Weighted and Sobolev metrics"). A module whose
    parameters are fixed at their defaults (``parameters_fixed``) refuses other values."""
    weight = spec.metric.weight
    if clips_samples(spec):
        if not parameters_fixed and weight is not None \
                and weight.free_symbols & {s for s, _ in spec.parameters}:
            return ("the parameters are at their defaults (where the weight's piece ratio in "
                    "ETA is computed)")
        return None
    return (f"the {'multi' if spec.dimension > 1 else ''}linear interpolant of |y| has "
            f"L2(w) norm at most {'3^(k/2)' if spec.dimension > 1 else 'sqrt(3)'} B (the "
            "samples are not clipped, only the coefficients)")


def weight_ratios(spec):
    """The piece ratio rho_i of the weight (1-D, on the curve interval) or of each factor
    of a separable box weight singular on the boundary (analysis.weights.piece_ratio, at
    the defaults; such modules contract one axis at a time, with the factors' Gauss rules);
    None without a weight, or for another box weight (the cubature's: no field clip)."""
    if spec.metric.weight is None:
        return None
    if spec.dimension == 1:
        factors, intervals = (spec.metric.weight,), (spec.curve_interval or spec.interval,)
    else:
        factors, intervals = weight_factors(spec), spec.intervals
        if not any(weight_singularities(spec)):
            return None
    intervals = [tuple(e.subs(spec.defaults) for e in i) for i in intervals]
    if factors is None or not all(e.is_finite for i in intervals for e in i):
        return None
    return tuple(piece_ratio(f.subs(spec.defaults), t, i)
                 for f, t, i in zip(factors, spec.variables, intervals))


def _transform_norm(analysis):
    """||K D||_2 of the change K from atoms to the orthonormal basis at the defaults, D the
    diagonal of the atoms' norms in the spec's metric (1 but for H^1 tensor Legendre atoms:
    _h1_atom_norms), rounded up (1 for the identity)."""
    matrix = analysis.transform
    spec = analysis.spec
    norms = _h1_atom_norms(analysis) if spec.metric.sobolev else numpy.ones(matrix.shape[1])
    if is_identity(matrix) and not spec.metric.sobolev:
        return 1.0
    dense = numpy.eye(matrix.shape[0]) if is_identity(matrix) else numpy.zeros(matrix.shape)
    for i, j in ({} if is_identity(matrix) else matrix).keys():
        dense[i, j] = float(sympy.N(sympy.sympify(matrix[i, j]).subs(spec.defaults)))
    return float(numpy.linalg.norm(dense * norms, 2)) * (1 + 1e-9)


def _h1_atom_norms(analysis):
    """||psi_a||_H1 of the atoms at the defaults: the square roots of the H^1 Gram matrix's
    diagonal for expression atoms (the user's functions); for tensor Legendre atoms
    psi_a = prod_i L_(a_i)(x_i) (each of L2 norm 1), ||psi_a||^2 = 1 + sum_i ||L_(a_i)'||^2,
    ||L_n'||^2 = 2 n (n + 1) (2n + 1)/(b_i - a_i)^2 (int P_n'^2 = n (n + 1) on [-1, 1])."""
    if analysis.atoms.kind == "expression":
        return numpy.array([math.sqrt(float(sympy.N(sympy.sympify(analysis.gram[a, a])
                                                    .subs(analysis.spec.defaults))))
                            for a in range(analysis.atoms.size)])
    widths = [float((hi - lo).subs(analysis.spec.defaults)) for lo, hi in analysis.spec.intervals]
    return numpy.array([math.sqrt(1 + sum(2 * n * (n + 1) * (2 * n + 1) / w ** 2
                                          for n, w in zip(index, widths)))
                        for index in analysis.atoms.index])


def _check_box_module(analysis):
    """Modules over a box project with tensor Gauss rules per cell: they need Legendre atoms
    (exact rules, one axis at a time) or the user's expressions, scalar or vector-valued (a
    frequency bound per variable), in L2, weighted L2 or H^1."""
    if analysis.atoms.kind not in ("legendre", "expression"):
        raise SpecError([("basis", f"a module over several variables needs a monomial or "
                                   f"legendre family, or expressions; got atoms "
                                   f"{analysis.atoms.kind}")], analysis.spec.path)


def _box(analysis, lower_value):
    names = tuple(str(v) for v in analysis.spec.variables)
    quadrature = analysis.quadrature
    weights = _weight_factors(analysis.spec, quadrature.singular)
    factors = tuple(
        (str(t), _matrix(f"gram_{t}", f.gram, lower_value, True, dict(f.formulas).get("gram")),
         _matrix(f"cholesky_{t}", f.cholesky, lower_value,
                 formula=dict(f.formulas).get("cholesky")))
        for t, f in zip(analysis.spec.variables, analysis.factors or ()))
    if analysis.atoms.kind == "expression":
        return BoxIR(variables=names, exact_nodes=None, axis_sizes=(), total_degree=None,
                     factors=factors, frequency=quadrature.frequency,
                     min_nodes=quadrature.min_nodes, weight_factors=weights)
    index = analysis.atoms.index
    sizes = tuple(max(a[i] for a in index) + 1 for i in range(analysis.spec.dimension))
    total = None if len(index) == math.prod(sizes) else max(sum(a) for a in index)
    return BoxIR(variables=names, exact_nodes=quadrature.exact_nodes, axis_sizes=sizes,
                 total_degree=total, factors=factors, frequency=quadrature.frequency,
                 min_nodes=quadrature.min_nodes, weight_factors=weights)


def _weight_factors(spec, singular):
    """Per variable of a separable weight singular on the box's boundary: the code of its
    factor w_i (variable x), w_i exactly, and its singular ends as in 1-D."""
    if not singular:
        return ()
    from .analysis.weights import weight_axis_spec, weight_factors
    out = []
    for axis, (factor, ends) in enumerate(zip(weight_factors(spec), singular)):
        one = weight_axis_spec(spec, axis, factor)
        names = [s for s, _ in spec.parameters]
        out.append(tuple(_Printer(one.variable, names, x).doprint(factor) for x in
                         ("x", "x[plain]")) + (str(factor), _singular(one, ends, "d[near]")))
    return tuple(out)


def _singular(spec, ends, name="d"):
    """Each singular end (index, alpha) of the weight with the weight's code at distance d
    (named ``name``) from it (factored so that d(2 - d) replaces 1 - t^2: no cancellation
    next to the end)."""
    t, d = spec.variable, sympy.Symbol("d", positive=True)
    out = []
    for end, alpha in ends:
        near = spec.metric.weight.subs(t, spec.interval[0] + d if end == 0 else spec.interval[1] - d)
        near = near.replace(lambda e: e.is_Pow and not e.base.is_number,
                            lambda e: sympy.Pow(sympy.factor(sympy.expand(e.base)), e.exp))
        out.append((end, alpha, _Printer(d, [s for s, _ in spec.parameters], name).doprint(near)))
    return tuple(out)


def _float_code(value):
    """Python source for a float64 (math.inf, -math.inf and math.nan included)."""
    if math.isfinite(value):
        return repr(value)
    return "math.nan" if math.isnan(value) else ("math.inf" if value > 0 else "-math.inf")


def _code(printer, expression):
    return printer.doprint(expression)


def _value_lowering(printer, defaults):
    def lower_value(value):
        value = sympy.sympify(value)
        exact = _ExactPrinter().doprint(value) if not value.is_Float else f"≈ {value}"
        if value.free_symbols:
            return printer.doprint(value), exact
        if value in (sympy.oo, -sympy.oo):
            return ("numpy.inf" if value > 0 else "-numpy.inf"), exact
        return _float_code(to_float(value)), exact
    return lower_value


class _ExactPrinter(StrPrinter):
    """sstr, with long integers ending in zeros written as d*10**k (checkable at a glance)."""

    def _print_Integer(self, expr):
        return _integer_text(expr.p)

    def _print_Rational(self, expr):
        return f"{_integer_text(expr.p)}/{_integer_text(expr.q)}"


def _integer_text(n):
    text = str(n)
    zeros = len(text) - len(text.rstrip("0"))
    if len(text) <= 15 or zeros < 6:
        return text
    head = text[:-zeros]
    return f"{head[:-1]}10**{zeros}" if head.lstrip("-") == "1" else f"{head}*10**{zeros}"


def _matrix(name, matrix, lower_value, symmetric=False, formula=None):
    rows, cols = matrix.shape
    packed = getattr(matrix, "packed", None)
    if packed is not None and len(matrix.raw) > COMPACT_LIMIT:
        return MatrixIR(name, (rows, cols), _float_codes(packed[1]), symmetric, False,
                        packed[0], formula)
    identity = is_identity(matrix)
    keys = [] if identity else sorted(k for k in matrix.keys() if not symmetric or k[1] <= k[0])
    if len(keys) > COMPACT_LIMIT and matrix.constant:
        return _packed(name, matrix, keys, symmetric, formula)
    entries = tuple(Entry(i, j, *lower_value(matrix[i, j])) for i, j in keys)
    return MatrixIR(name, (rows, cols), entries, symmetric, identity, formula=formula)


def _packed(name, matrix, keys, symmetric, formula):
    """Float64 values at every position of the smallest pattern holding the entries."""
    rows, cols = matrix.shape
    if all(i == j for i, j in keys):
        pattern, positions = "diagonal", [(k, k) for k in range(min(rows, cols))]
    elif all(j <= i for i, j in keys) and rows == cols:
        pattern, positions = "lower", [(i, j) for i in range(rows) for j in range(i + 1)]
    else:
        pattern, positions = "dense", [(i, j) for i in range(rows) for j in range(cols)]
    return MatrixIR(name, (rows, cols), _float_codes(matrix.floats(positions)), symmetric,
                    False, pattern, formula)


def _float_codes(values):
    """The Python code of each float64 of ``values`` (a list or a NumPy array), as
    _float_code writes it: the shortest round-trip repr, math.inf for infinities."""
    bits, inverse = numpy.unique(numpy.asarray(values, dtype=float).view(numpy.int64),
                                 return_inverse=True)    # each value printed once (0.0, -0.0)
    codes = numpy.array(list(map(_float_code, bits.view(float).tolist())), dtype=object)
    return tuple(codes[inverse].tolist())


def _summary(analysis):
    spec = analysis.spec
    functions = ["[" + ", ".join(str(c.doit()) for c in f) + "]" if spec.vector_basis
                 else str(f[0].doit()) for f in spec.functions[:6]]
    m = spec.basis_size
    shown = ", ".join(functions) + (f", ... ({m} in all)" if m > 6 else "")
    domain = (" x ".join(f"[{lo}, {hi}]" for lo, hi in spec.intervals)
              + f" in ({', '.join(str(v) for v in spec.variables)})" if spec.dimension > 1 else
              f"[{spec.interval[0]}, {spec.interval[1]}]")
    lines = [f"Basis: {shown}",
             f"Domain: {domain}"
             + (f"; curves live on [{spec.curve_interval[0]}, {spec.curve_interval[1]}]"
                if spec.curve_interval else ""),
             *([f"Outside the samples: {spec.outside} (the first and last values continue "
                 "to the ends of the curve interval)"] if spec.outside == "hold" else []),
             f"Metric: {spec.metric.kind}" + (f" with weight {spec.metric.weight}"
                                              if spec.metric.weight is not None else ""),
             f"Gram matrix: {analysis.gram_method}",
             f"Certificate: {analysis.certificate}",
             f"Condition number of the user-basis Gram matrix (at the defaults): "
             f"{condition_text(analysis.condition_number)}",
             f"Orthonormal basis: e = K . atoms, atoms = {analysis.atoms.kind}"]
    return tuple(lines)


def condition_text(kappa):
    """kappa_2(G) for people: 6 digits, any magnitude, or why it was not computed."""
    if not mpmath.isfinite(kappa):
        return f"not computed (m > {EIGENSOLVER_LIMIT} and no triangular factor)"
    if abs(kappa) < 1e300:
        return f"{float(kappa):.6g}"
    return mpmath.nstr(kappa, 6)


@dataclass(frozen=True)
class CDFModuleIR:
    """Plain data for :func:`gpcompiler.compiler.emit.emit_cdf_module` (exact tables as Entries)."""
    name: str
    title: str
    tool_version: str
    spec_path: str
    spec_sha256: str
    units: dict
    degree: int
    lo: tuple
    hi: tuple
    alpha: tuple
    beta: tuple
    moment_matrix: tuple
    offset: tuple
    moment_sensitivity_squared: str
    sensitivities: tuple  # (moments, coefficients) times N, rounded up: repr strings
    mean_errors: tuple    # (coefficients, moments): l2 float error bounds, repr strings


def units(spec):
    """The declared units of a spec (``domain.units``, ``values.units``; None where not
    declared), as the generated module's UNITS."""
    return {"domain": tuple(spec.domain_units), "values": spec.value_units}


def lower_cdf(spec, tables, mean_errors):
    """Lower a cdf spec, its exact tables (gpcompiler.cdf.tables) and the float error
    bounds of its means (gpcompiler.cdf.streaming.mean_errors) to the IR."""
    lower_value = _value_lowering(None, {})
    size = tables.degree + 1

    def entries(values):
        return tuple(Entry(*index, *lower_value(v)) for index, v in values if v != 0)
    return CDFModuleIR(
        name=spec.name, title=spec.title, tool_version=__version__, spec_path=spec.path,
        spec_sha256=spec.sha256, units=units(spec), degree=tables.degree,
        lo=lower_value(spec.interval[0]), hi=lower_value(spec.interval[1]),
        alpha=entries(((k, None), a) for k, a in enumerate(tables.alpha)),
        beta=entries(((k, i), b) for k in range(size) for i, b in enumerate(tables.beta[k])),
        moment_matrix=entries(((k, i), tables.moment_matrix[k, i])
                              for k in range(size) for i in range(size)),
        offset=entries(((k, None), v) for k, v in enumerate(tables.offset)),
        moment_sensitivity_squared=repr(to_float(tables.moment_sensitivity_squared)),
        sensitivities=(repr(ceil_sqrt(tables.moment_sensitivity_squared)), repr(ceil_sqrt(2))),
        mean_errors=tuple(map(repr, mean_errors)))
