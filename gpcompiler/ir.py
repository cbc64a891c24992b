"""Stage 3: :class:`Analysis` -> :class:`ModuleIR`, everything the emitter prints.

Exact values are lowered once into (code, exact) pairs: a constant becomes the
``repr`` of its correctly rounded float64 value; a value depending on the spec's
parameters becomes NumPy code reading them from the dict ``p``.
"""
from dataclasses import dataclass

import sympy
from sympy.printing.numpy import NumPyPrinter

from . import __version__
from .symbolic import is_identity, to_float


@dataclass(frozen=True)
class Entry:
    """One matrix entry: position, Python code for its value, exact rendering."""
    row: int
    col: int
    code: str
    exact: str


@dataclass(frozen=True)
class MatrixIR:
    """A matrix as its nonzero entries (lower triangle only when symmetric)."""
    name: str
    shape: tuple
    entries: tuple
    symmetric: bool
    identity: bool


@dataclass(frozen=True)
class ModuleIR:
    """Plain data for :func:`gpcompiler.emit.emit_module`."""
    name: str
    title: str
    tool_version: str
    spec_path: str
    spec_sha256: str
    parameters: tuple          # (name, default float repr, exact)
    parameters_fixed: bool
    domain: tuple              # ((code, exact), (code, exact))
    curve_interval: tuple      # same shape, or None
    basis_size: int
    value_dim: int
    coef_dim: int
    coef_shape: tuple
    vector_basis: bool
    atoms_kind: str
    atoms_size: int
    sinc_shifts: tuple
    atom_codes: tuple          # per atom: tuple of component codes (expression atoms)
    basis_codes: tuple         # per user function: tuple of component codes
    weight_code: str
    sobolev: bool
    gram: MatrixIR
    cholesky: MatrixIR
    transform: MatrixIR
    exact_nodes: int
    frequency: str
    min_nodes: int
    summary: tuple             # lines for the module docstring
    metric: str
    polynomial_degree: int
    gram_method: str
    certificate: str
    condition_number: float


class _Printer(NumPyPrinter):
    """NumPy printer reading parameters from ``p`` and the variable as ``x``."""

    def __init__(self, variable, parameters):
        super().__init__({"fully_qualified_modules": True, "allow_unknown_functions": False})
        self._variable = variable
        self._parameters = set(parameters)

    def _print_Symbol(self, symbol):
        if symbol == self._variable:
            return "x"
        if symbol in self._parameters:
            return f"p[{str(symbol)!r}]"
        raise ValueError(f"unexpected symbol {symbol}")

    def _print_sinc(self, expression):
        return f"numpy.sinc(({self._print(expression.args[0])})/numpy.pi)"


def lower(analysis):
    """Lower an analysis to the module IR (no SymPy objects remain)."""
    spec = analysis.spec
    printer = _Printer(spec.variable, [s for s, _ in spec.parameters])
    lower_value = _value_lowering(printer, spec.defaults)
    m = spec.basis_size
    coef_shape = (m,) if spec.vector_basis or spec.value_dim == 1 else (m, spec.value_dim)
    atom_codes = ()
    if analysis.atoms.kind == "expression":
        atom_codes = tuple(tuple(_code(printer, c) for c in f) for f in spec.functions)
    weight = spec.metric.weight
    return ModuleIR(
        name=spec.name, title=spec.title, tool_version=__version__, spec_path=spec.path,
        spec_sha256=spec.sha256,
        parameters=tuple((str(s), repr(to_float(v)), str(v)) for s, v in spec.parameters),
        parameters_fixed=analysis.numerical and bool(spec.parameters),
        domain=tuple(lower_value(e) for e in spec.interval),
        curve_interval=(tuple(lower_value(e) for e in spec.curve_interval)
                        if spec.curve_interval else None),
        basis_size=m, value_dim=spec.value_dim, coef_dim=spec.coef_dim,
        coef_shape=coef_shape, vector_basis=spec.vector_basis,
        atoms_kind=analysis.atoms.kind, atoms_size=analysis.atoms.size,
        sinc_shifts=analysis.atoms.shifts, atom_codes=atom_codes,
        basis_codes=tuple(tuple(_code(printer, c) for c in f) for f in spec.functions),
        weight_code=_code(printer, weight) if weight is not None else None,
        sobolev=bool(spec.metric.sobolev),
        gram=_matrix("gram", analysis.gram, lower_value, symmetric=True),
        cholesky=_matrix("cholesky", analysis.cholesky, lower_value),
        transform=_matrix("transform", analysis.transform, lower_value),
        exact_nodes=analysis.quadrature.exact_nodes,
        frequency=repr(analysis.quadrature.frequency),
        min_nodes=analysis.quadrature.min_nodes,
        summary=_summary(analysis), gram_method=analysis.gram_method,
        metric=spec.metric.kind, polynomial_degree=(
            analysis.atoms.size - 1 if analysis.atoms.kind == "legendre"
            and analysis.atoms.size == m else None),
        certificate=analysis.certificate,
        condition_number=float(f"{analysis.condition_number:.6e}"))


def _code(printer, expression):
    return printer.doprint(expression)


def _value_lowering(printer, defaults):
    def lower_value(value):
        value = sympy.sympify(value)
        exact = sympy.sstr(value, full_prec=False) if not value.is_Float else f"≈ {value}"
        if value.free_symbols:
            return printer.doprint(value), exact
        if value in (sympy.oo, -sympy.oo):
            return ("numpy.inf" if value > 0 else "-numpy.inf"), exact
        return repr(to_float(value)), exact
    return lower_value


def _matrix(name, matrix, lower_value, symmetric=False):
    rows, cols = matrix.shape
    identity = is_identity(matrix)
    entries = () if identity else tuple(
        Entry(i, j, *lower_value(v)) for (i, j), v in sorted(matrix.todok().items())
        if v != 0 and (not symmetric or j <= i))
    return MatrixIR(name, (rows, cols), entries, symmetric, identity)


def _summary(analysis):
    spec = analysis.spec
    functions = ["[" + ", ".join(str(c) for c in f) + "]" if spec.vector_basis else str(f[0])
                 for f in spec.functions]
    shown = ", ".join(functions[:6]) + (f", ... ({len(functions)} in all)" if len(functions) > 6 else "")
    lines = [f"Basis: {shown}",
             f"Domain: [{spec.interval[0]}, {spec.interval[1]}]"
             + (f"; curves live on [{spec.curve_interval[0]}, {spec.curve_interval[1]}]"
                if spec.curve_interval else ""),
             f"Metric: {spec.metric.kind}" + (f" with weight {spec.metric.weight}"
                                              if spec.metric.weight is not None else ""),
             f"Gram matrix: {analysis.gram_method}",
             f"Certificate: {analysis.certificate}",
             f"Condition number of the user-basis Gram matrix (at the defaults): "
             f"{analysis.condition_number:.6g}",
             f"Orthonormal basis: e = K . atoms, atoms = {analysis.atoms.kind}"]
    return tuple(lines)


@dataclass(frozen=True)
class CDFModuleIR:
    """Plain data for :func:`gpcompiler.emit.emit_cdf_module` (exact tables as Entries)."""
    name: str
    title: str
    tool_version: str
    spec_path: str
    spec_sha256: str
    degree: int
    lo: tuple
    hi: tuple
    alpha: tuple
    beta: tuple
    moment_matrix: tuple
    offset: tuple
    moment_sensitivity_squared: str


def lower_cdf(spec, tables):
    """Lower a cdf spec and its exact tables (gpcompiler.cdf.tables) to the IR."""
    lower_value = _value_lowering(None, {})
    size = tables.degree + 1

    def entries(values):
        return tuple(Entry(*index, *lower_value(v)) for index, v in values if v != 0)
    return CDFModuleIR(
        name=spec.name, title=spec.title, tool_version=__version__, spec_path=spec.path,
        spec_sha256=spec.sha256, degree=tables.degree,
        lo=lower_value(spec.interval[0]), hi=lower_value(spec.interval[1]),
        alpha=entries(((k, None), a) for k, a in enumerate(tables.alpha)),
        beta=entries(((k, i), b) for k in range(size) for i, b in enumerate(tables.beta[k])),
        moment_matrix=entries(((k, i), tables.moment_matrix[k, i])
                              for k in range(size) for i in range(size)),
        offset=entries(((k, None), v) for k, v in enumerate(tables.offset)),
        moment_sensitivity_squared=repr(to_float(tables.moment_sensitivity_squared)))
