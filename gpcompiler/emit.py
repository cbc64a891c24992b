"""Stage 4: :class:`ModuleIR` -> Python source of a standalone NumPy module.

The output is byte-reproducible: no timestamps, no absolute paths, entries in sorted
order, floats printed with ``repr`` from values rounded once from the exact value.
"""
import inspect
import string
from importlib import resources

from . import rounding, secure

_ATOMS = {
    "legendre": '''def _atoms(x, p):
    """Normalized shifted Legendre L_k = sqrt((2k+1)/(b-a)) P_k(u) by the three-term
    recurrence (never expanded into monomials): shape (..., {size})."""
    lo, hi = _domain(p)
    u = (2.0 * x - lo - hi) / (hi - lo)
    out = numpy.empty(x.shape + ({size},))
    out[..., 0] = 1.0{second}
    return out * numpy.sqrt((2.0 * numpy.arange({size}) + 1.0) / (hi - lo))''',
    "sinc": '''_SINC_SHIFTS = numpy.arange({first}, {end}, dtype=float)


def _atoms(x, p):
    """Normalized sinc(t - k), k = {first}..{last}: orthonormal on R (paper Sec. 3.5)."""
    return numpy.sinc(x[..., None] - _SINC_SHIFTS)''',
    "hermite": '''def _atoms(x, p):
    """Hermite functions h_0..h_{last} by their stable three-term recurrence."""
    out = numpy.empty(x.shape + ({size},))
    out[..., 0] = math.pi ** -0.25 * numpy.exp(-x * x / 2.0){second}
    return out''',
}
_SECOND = {
    "legendre": """
    out[..., 1] = u
    for k in range(1, {size} - 1):
        out[..., k + 1] = ((2 * k + 1) * u * out[..., k] - k * out[..., k - 1]) / (k + 1)""",
    "hermite": """
    out[..., 1] = math.sqrt(2.0) * x * out[..., 0]
    for k in range(1, {size} - 1):
        out[..., k + 1] = (math.sqrt(2.0 / (k + 1)) * x * out[..., k]
                           - math.sqrt(k / (k + 1)) * out[..., k - 1])""",
}


def emit_module(ir):
    """Return the source text of the generated module for ``ir``."""
    return _fill("module.py.tmpl", _placeholders(ir))


def emit_cdf_module(ir):
    """Return the source text of a generated CDF-table module."""
    def table(entries):
        return "\n".join(f"    ({_index(e)}, {e.code}),  # {e.exact}" for e in entries)
    return _fill("cdf_module.py.tmpl", {
        "title": ir.title, "tool_version": ir.tool_version, "spec_path": ir.spec_path,
        "spec_sha256": ir.spec_sha256, "name_repr": repr(ir.name),
        "tool_version_repr": repr(ir.tool_version), "spec_path_repr": repr(ir.spec_path),
        "spec_sha256_repr": repr(ir.spec_sha256), "degree": str(ir.degree),
        "size": str(ir.degree + 1), "lo": ir.lo[0], "hi": ir.hi[0], "lo_exact": ir.lo[1],
        "hi_exact": ir.hi[1], "moment_sensitivity_squared": ir.moment_sensitivity_squared,
        "alpha": table(ir.alpha), "beta": table(ir.beta),
        "moment_matrix": table(ir.moment_matrix), "offset": table(ir.offset),
        "secure_generator": _source(secure.SecureGenerator, secure.default_generator),
    })


def _index(entry):
    return f"({entry.row}, {entry.col})" if entry.col is not None else f"{entry.row}"


def _fill(template_name, values):
    template = string.Template(
        resources.files("gpcompiler").joinpath(f"templates/{template_name}").read_text())
    expected = {name for _, _, name, _ in template.pattern.findall(template.template) if name}
    expected |= {name for _, name, _, _ in template.pattern.findall(template.template) if name}
    if expected != set(values):
        raise AssertionError(f"template placeholders {sorted(expected ^ set(values))} "
                             "do not match the IR")
    return template.substitute(values)


def _placeholders(ir):
    lo, hi = ir.domain
    curve = ir.curve_interval or ir.domain
    return {
        "title": ir.title, "tool_version": ir.tool_version, "spec_path": ir.spec_path,
        "spec_sha256": ir.spec_sha256, "summary": "\n".join(ir.summary),
        "name_repr": repr(ir.name), "title_repr": repr(ir.title),
        "tool_version_repr": repr(ir.tool_version), "spec_path_repr": repr(ir.spec_path),
        "spec_sha256_repr": repr(ir.spec_sha256), "basis_size": str(ir.basis_size),
        "value_dim": str(ir.value_dim), "coef_dim": str(ir.coef_dim),
        "coef_shape": repr(ir.coef_shape), "vector_basis": str(ir.vector_basis),
        "parameters": ", ".join(f"{n!r}: {v}" for n, v, _ in ir.parameters),
        "parameters_fixed": str(ir.parameters_fixed),
        "domain_exact": f"{lo[1]!r}, {hi[1]!r}",
        "curve_interval_exact": (repr(tuple(e for _, e in ir.curve_interval))
                                 if ir.curve_interval else "None"),
        "domain_lo": lo[0], "domain_hi": hi[0],
        "curve_interval_code": f"({curve[0][0]}, {curve[1][0]})",
        "metric_repr": repr(ir.metric), "polynomial_degree": repr(ir.polynomial_degree),
        "gram_method_repr": repr(ir.gram_method), "certificate_repr": repr(ir.certificate),
        "condition_number": repr(ir.condition_number),
        "atoms_size": str(ir.atoms_size), "exact_nodes": str(ir.exact_nodes),
        "frequency": ir.frequency, "min_nodes": str(ir.min_nodes),
        "gram_body": _matrix_body(ir.gram),
        "cholesky_body": _matrix_body(ir.cholesky),
        "transform_body": _matrix_body(ir.transform, identity_is_none=True),
        "atoms_function": _atoms_function(ir),
        "basis_function": _basis_function(ir),
        "weight_function": _weight_function(ir),
        "secure_generator": _source(secure.SecureGenerator, secure.default_generator),
        "rounding": _source(rounding.ceil_float, rounding.ceil_sqrt),
    }


def _source(*objects):
    """Runtime helpers copied verbatim from the package, so a module needs only NumPy."""
    return "\n\n\n".join(inspect.getsource(obj).rstrip() for obj in objects)


def _matrix_body(matrix, identity_is_none=False):
    if matrix.identity:
        return "    return None" if identity_is_none else f"    return numpy.eye({matrix.shape[0]})"
    lines = [f"    return _matrix({matrix.shape}, ("]
    for entry in matrix.entries:
        lines.append(f"        ({entry.row}, {entry.col}, {entry.code}),  # {entry.exact}")
    lines.append(f"    ){', symmetric=True' if matrix.symmetric else ''})")
    return "\n".join(lines)


def _expression_body(name, doc, codes, shape):
    lines = [f"def {name}(x, p):", f'    """{doc}"""',
             f"    out = numpy.empty(numpy.shape(x) + {shape})"]
    for j, components in enumerate(codes):
        for r, code in enumerate(components):
            index = f"{j}, {r}" if len(shape) == 2 else f"{j}"
            lines.append(f"    out[..., {index}] = {code}")
    lines.append("    return out")
    return "\n".join(lines)


def _atoms_function(ir):
    if ir.atoms_kind == "expression":
        shape = (ir.atoms_size, ir.value_dim) if ir.vector_basis else (ir.atoms_size,)
        return _expression_body("_atoms", "The user's basis functions, evaluated as written.",
                                ir.atom_codes, shape)
    first = ir.sinc_shifts[0] if ir.sinc_shifts else 0
    second = _SECOND.get(ir.atoms_kind, "") if ir.atoms_size > 1 else ""
    return _ATOMS[ir.atoms_kind].format(size=ir.atoms_size, first=first,
                                        end=first + ir.atoms_size, last=first + ir.atoms_size - 1,
                                        second=second.format(size=ir.atoms_size))


def _basis_function(ir):
    if ir.atoms_kind != "legendre":
        return ('def _user_basis(x, p):\n    """The user basis: here the atoms themselves."""\n'
                "    return _atoms(x, p)")
    shape = (ir.basis_size, ir.value_dim) if ir.vector_basis else (ir.basis_size,)
    return _expression_body("_user_basis", "The user's basis functions, evaluated as written.",
                            ir.basis_codes, shape)


def _weight_function(ir):
    flags = f"_HAS_WEIGHT = {ir.weight_code is not None}\n_SOBOLEV = {ir.sobolev}"
    if ir.weight_code is None:
        return flags
    return (f"{flags}\n\n\ndef _weight(x, p):\n    \"\"\"Weight w(t) of the inner product.\"\"\"\n"
            f"    return {ir.weight_code} + 0.0 * x")
