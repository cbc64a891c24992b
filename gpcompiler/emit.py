"""Stage 4: :class:`ModuleIR` -> Python source of a standalone NumPy module.

The output is byte-reproducible: no timestamps, no absolute paths, entries in sorted
order, floats printed with ``repr`` from values rounded once from the exact value.
"""
import hashlib
import inspect
import math
import re
import string
import textwrap
from importlib import resources

from . import analysis, rounding
from .runtime import clip, curveclip, entropy, exact, fieldclip

_ATOMS = {
    "legendre": '''def _atoms(x, p):
    """Normalized shifted Legendre L_k = sqrt((2k+1)/(b-a)) P_k(u) by the three-term
    recurrence (never expanded into monomials): shape (..., {size})."""
    lo, hi = _domain(p)
    u = (2.0 * x - lo - hi) / (hi - lo)
    out = numpy.empty(({size},) + x.shape)  # k-major: each step writes contiguous memory
    out[0] = 1.0{second}
    scale = numpy.sqrt((2.0 * numpy.arange({size}) + 1.0) / (hi - lo))
    out *= scale.reshape((-1,) + u.ndim * (1,))
    return numpy.moveaxis(out, 0, -1)''',
    "sinc": '''_SINC_SHIFTS = numpy.arange({first}, {end}, dtype=float)
_SINC_SIGNS = numpy.where(numpy.arange({first}, {end}) % 2 == 0, 1.0, -1.0)


def _atoms(x, p):
    """Normalized sinc(t - k), k = {first}..{last}: orthonormal on R (paper Sec. 3.5), as
    (-1)^(n + k) sin(pi r)/(pi (t - k)) with t = n + r, n an integer: exact reduction."""
    t = x.reshape(-1)
    n = numpy.rint(t)
    top = numpy.sin(numpy.pi * (t - n)) / numpy.pi * numpy.where(n % 2 == 0, 1.0, -1.0)
    out = (t[:, None] - _SINC_SHIFTS) * _SINC_SIGNS
    numpy.divide(top[:, None], out, out=out, where=out != 0)
    whole = numpy.flatnonzero((t == n) & (n >= {first}) & (n <= {last}))
    out[whole, (n[whole] - {first}).astype(int)] = 1.0
    return out.reshape(x.shape + ({size},))''',
    "fourier": '''def _atoms(x, p):
    """1, cos(k w t), sin(k w t) for k = 1..{last}, w = 2 pi/(b - a): shape (..., {size})."""
    lo, hi = _domain(p)
    angle = (2.0 * numpy.pi / (hi - lo)) * x[..., None] * numpy.arange(1, {order})
    out = numpy.empty(x.shape + ({size},))
    out[..., 0] = 1.0
    out[..., 1::2] = numpy.cos(angle)
    out[..., 2::2] = numpy.sin(angle)
    return out''',
    "hermite": '''def _atoms(x, p):
    """Hermite functions h_0..h_{last} by their stable three-term recurrence."""
    out = numpy.empty(x.shape + ({size},))
    out[..., 0] = math.pi ** -0.25 * numpy.exp(-x * x / 2.0){second}
    return out''',
}
_SECOND = {
    "legendre": """
    out[1] = u{loop}""",
    "hermite": """
    out[..., 1] = math.sqrt(2.0) * x * out[..., 0]{loop}""",
}
_LOOP = {
    "legendre": """
    for k in range(1, {size} - 1):
        out[k + 1] = ((2 * k + 1) * u * out[k] - k * out[k - 1]) / (k + 1)""",
    "hermite": """
    for k in range(1, {size} - 1):
        out[..., k + 1] = (math.sqrt(2.0 / (k + 1)) * x * out[..., k]
                           - math.sqrt(k / (k + 1)) * out[..., k - 1])""",
}


def emit_module(ir):
    """Return the source text of the generated module for ``ir``; over a box, the marked
    sections of module.py.tmpl are replaced by those of module_box.py.tmpl."""
    if ir.box is None:
        return _fill("module.py.tmpl", _placeholders(ir))
    return _fill("module.py.tmpl", {**_common_placeholders(ir), **_box_placeholders(ir)},
                 dict(_SECTION.findall(_template("module_box.py.tmpl"))))


def emit_cdf_module(ir):
    """Return the source text of a generated CDF-table module."""
    def table(entries):
        return "\n".join(f"    ({_index(e)}, {e.code}),  # {e.exact}" for e in entries)
    return _fill("cdf_module.py.tmpl", {
        "title": "\n".join(textwrap.wrap(ir.title, 96)), "tool_version": ir.tool_version,
        "spec_path": ir.spec_path,
        "spec_sha256": ir.spec_sha256, "name_repr": repr(ir.name),
        "units_repr": repr(ir.units),
        "tool_version_repr": repr(ir.tool_version), "spec_path_repr": repr(ir.spec_path),
        "spec_sha256_repr": repr(ir.spec_sha256), "degree": str(ir.degree),
        "size": str(ir.degree + 1), "lo": ir.lo[0], "hi": ir.hi[0], "lo_exact": ir.lo[1],
        "hi_exact": ir.hi[1], "moment_sensitivity_squared": ir.moment_sensitivity_squared,
        "alpha": table(ir.alpha), "beta": table(ir.beta),
        "moment_matrix": table(ir.moment_matrix), "offset": table(ir.offset),
        "runtime": runtime_source(entropy, exact),
    })


def _index(entry):
    return f"({entry.row}, {entry.col})" if entry.col is not None else f"{entry.row}"


_SECTION = re.compile(r"^#@box (\w+)\n(.*?)^#@end\n", re.M | re.S)


def _template(name):
    return resources.files("gpcompiler").joinpath(f"templates/{name}").read_text()


def _fill(template_name, values, sections=None):
    """Substitute ``values`` into a template; its marked sections are kept, or replaced by
    ``sections`` (name -> text) when given."""
    text = _SECTION.sub(lambda match: (sections or {}).get(match[1], match[2]),
                        _template(template_name))
    template = string.Template(text)
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
        **_common_placeholders(ir),
        "curve_interval_exact": (repr(tuple(e for _, e in ir.curve_interval))
                                 if ir.curve_interval else "None"),
        "domain_lo": lo[0], "domain_hi": hi[0],
        "curve_interval_code": f"({curve[0][0]}, {curve[1][0]})",
        "domain_exact": f"{lo[1]!r}, {hi[1]!r}",
        "quadrature_constants": _quadrature_constants(ir),
        "gauss_rule_function": (_GAUSS_RULE[True] if ir.exact_nodes is not None
                                else _source(analysis.gauss_order) + "\n\n\n" + _GAUSS_RULE[False]),
        "sub_pieces_function": _sub_pieces_function(ir),
        "gram_body": _matrix_body(ir.gram),
        "cholesky_body": _matrix_body(ir.cholesky),
        "atoms_function": _atoms_function(ir),
        "basis_function": _basis_function(ir) + _weight_function(ir),
        "nodes_lines": _nodes_lines(ir),
        "sobolev_lines": _SOBOLEV_LINES if ir.sobolev else "",
        "clip_curves": _CLIP_CURVES[ir.metric == "L2" and ir.outside == "zero"],
        **_VALUES_1D[_values_kind(ir)],
        **_OUTSIDE[ir.outside],
    }


_HELD_WEIGHTS = '''def _held_weights(t, p):
    """Weights of the curve that holds its first and last values out to the ends of the
    curve interval ([curve] outside = "hold"): those of the samples with both ends added
    (first and last values repeated there), folded onto the first and last samples. One
    sample is the constant function; none, the zero function."""
    if t.size == 0:
        return _weights(t, p)
    lo, hi = _curve_interval(p)
    out = _weights(numpy.concatenate([[lo], t, [hi]]), p)
    out[1] += out[0]
    out[-2] += out[-1]
    return out[1:-1]


'''
_OUTSIDE = {  # [curve] outside: what the curve is before its first and after its last sample
    "zero": {"outside_repr": repr("zero"), "held_weights": "", "curve_weights": "_weights",
             "outside_doc": "zero outside its samples"},
    "hold": {"outside_repr": repr("hold"), "held_weights": _HELD_WEIGHTS,
             "curve_weights": "_held_weights",
             "outside_doc": "holding its first and last values out to the curve interval's ends"},
}


def _common_placeholders(ir):
    """Placeholders of the sections shared by curves and boxes."""
    return {
        "title": "\n".join(textwrap.wrap(ir.title, 96)), "tool_version": ir.tool_version,
        "spec_path": ir.spec_path,
        "spec_sha256": ir.spec_sha256,
        "summary": "\n".join(textwrap.fill(line, 99, subsequent_indent="    ")
                              for line in ir.summary),
        "name_repr": repr(ir.name), "title_repr": _string(ir.title),
        "units_repr": repr(ir.units),
        "tool_version_repr": repr(ir.tool_version), "spec_path_repr": repr(ir.spec_path),
        "spec_sha256_repr": repr(ir.spec_sha256), "basis_size": str(ir.basis_size),
        "value_dim": str(ir.value_dim), "coef_dim": str(ir.coef_dim),
        "coef_shape": repr(ir.coef_shape), "vector_basis": str(ir.vector_basis),
        "parameters": ", ".join(f"{n!r}: {v}" for n, v, _ in ir.parameters),
        "parameters_fixed": str(ir.parameters_fixed),
        "metric_repr": repr(ir.metric), "polynomial_degree": repr(ir.polynomial_degree),
        "gram_method_repr": _string(ir.gram_method), "certificate_repr": _string(ir.certificate),
        "condition_number": ir.condition_number,
        "atoms_size": str(ir.atoms_size), "cholesky_doc": ir.cholesky_doc,
        "orthonormal_function": _orthonormal_function(ir),
        "runtime": runtime_source(*_runtime_parts(ir)),
        "rounding": _source(rounding.ceil_float, rounding.ceil_sqrt),
        "fixed_parameter_check": _FIXED_PARAMETER_CHECK if ir.parameters_fixed else "",
        "value_axes": " + (VALUE_DIM,)" if ir.value_dim > 1 else "",
        "eta": ir.eta, "bound": ir.bound,
        "default_bound_body": _DEFAULT_BOUND[ir.bound == "None"],
    }


_DEFAULT_BOUND = {
    False: '''    """The spec's [privacy] bound."""
    return BOUND''',
    True: '''    """The largest power of two B with 2 ETA B <= SLACK_FRACTION x scale (exact),
    remembered for 1024 scales."""
    if scale in _BOUNDS:
        return _BOUNDS[scale]
    target = Fraction(SLACK_FRACTION) * Fraction(scale) / (2 * Fraction(ETA))
    radius = math.ldexp(1.0, math.frexp(float(target))[1])
    while Fraction(radius) > target:
        radius /= 2
    if len(_BOUNDS) < 1024:
        _BOUNDS[scale] = radius
    return radius''',
}


_FIXED_PARAMETER_CHECK = """\
        if value != PARAMETERS[key]:
            raise ValueError(f"the Gram matrix holds at {key}={PARAMETERS[key]} only (see "
                             "GRAM_METHOD): recompile the spec with another default")
"""


_CLIP_CURVES = {
    True: '''def _clip_curves(t, y, bound):
    """Each curve clipped to the L2 ball of radius B (runtime/curveclip.py), so the float
    error of its projection is at most ETA B (docs/clipping.md)."""
    return clip_curves(t, y, bound, VALUE_DIM)''',
    False: '''def _clip_curves(t, y, bound):
    """The curves as they are: the norm of this metric is not computed on samples, so only
    the coefficients are clipped (docs/clipping.md: no stated slack for this metric)."""
    return y''',
}
_CLIP_FIELDS = {
    True: '''def _clip_fields(grids, y, kind, bound):
    """Each field clipped to the L2 ball of radius B (runtime/fieldclip.py)."""
    return clip_fields(grids, y, kind, bound, VALUE_RANK)''',
    False: '''def _clip_fields(grids, y, kind, bound):
    """The fields as they are: the norm of this metric is not computed on grids, so only
    the coefficients are clipped (docs/clipping.md: no stated slack for this metric)."""
    return y''',
}


def _runtime_parts(ir):
    """The runtime modules a generated module inlines: entropy, exact releases and the
    coefficient clip always; the curve or field clip when its metric clips samples (the
    comparisons of runtime/compare.py, with the Gumbel sampler, are the package's only)."""
    if ir.box is None:
        samples = [curveclip] if ir.metric == "L2" and ir.outside == "zero" else []
    else:
        samples = [fieldclip] if ir.metric == "L2" else []
    return (entropy, exact, clip, *samples)


def _values_kind(ir):
    """How values and coefficients are shaped: "scalar" (c: (m,)), "vector" (n-vector values
    of scalar basis functions, c: (m, n)) or "vector_basis" (vector-valued basis functions,
    c: (m,)). Each generated module carries only its kind's code."""
    if ir.vector_basis:
        return "vector_basis"
    return "vector" if ir.value_dim > 1 else "scalar"


_VALUES_1D = {
    "scalar": {"weights_shape": "(BASIS_SIZE,)", "contract": "y[..., block] @ weights[block]",
               "evaluate_1d": "c @ e.T"},
    "vector": {"weights_shape": "(BASIS_SIZE,)",
               "contract": 'numpy.einsum("...sr,sm->...mr", y[..., block, :], weights[block])',
               "evaluate_1d": 'numpy.einsum("...mr,tm->...tr", c, e)'},
    "vector_basis": {"weights_shape": "(BASIS_SIZE, VALUE_DIM)",
                     "contract": 'numpy.einsum("...sr,smr->...m", y[..., block, :], '
                                 'weights[block])',
                     "evaluate_1d": 'numpy.einsum("...m,tmr->...tr", c, e)'},
}
_TO_BATCH = """\
    y = numpy.moveaxis(y, -1, batch)  # the value axis joins the batch
    batch += 1
"""
_VALUES_BOX = {
    "scalar": {
        "values_to_batch": "", "project_grid_result": "c", "weights_axes": "m",
        "projection_weights_result": "_from_atoms(out, p)",
        "evaluate_box": "    e = _orthonormal(x, p).reshape(-1, BASIS_SIZE)\n"
                        "    return (c @ e.T).reshape(c.shape[:-1] + x.shape[:-1])"},
    "vector": {
        "values_to_batch": _TO_BATCH, "project_grid_result": "numpy.moveaxis(c, -2, -1)",
        "weights_axes": "m", "projection_weights_result": "_from_atoms(out, p)",
        "evaluate_box": "    e = _orthonormal(x, p).reshape(-1, BASIS_SIZE)\n"
                        '    out = numpy.einsum("...mr,tm->...tr", c, e)\n'
                        "    return out.reshape(c.shape[:-2] + x.shape[:-1] + (VALUE_DIM,))"},
    "vector_basis": {
        "values_to_batch": _TO_BATCH, "project_grid_result": "c", "weights_axes": "m, n",
        "projection_weights_result": "numpy.moveaxis(_from_atoms(numpy.moveaxis(out, -1, -2), "
                                     "p), -1, -2)",
        "evaluate_box": "    e = _orthonormal(x, p).reshape(-1, BASIS_SIZE, VALUE_DIM)\n"
                        '    out = numpy.einsum("...m,tmr->...tr", c, e)\n'
                        "    return out.reshape(c.shape[:-1] + x.shape[:-1] + (VALUE_DIM,))"},
}


_GAUSS_RULE = {
    True: '''def _gauss_rule(h):
    """One Gauss-Legendre rule per piece, exact for these polynomial integrands."""
    return numpy.ones(h.shape, dtype=int), _EXACT_NODES''',
    False: '''def _gauss_rule(h):
    """Sub-pieces per piece and Gauss-Legendre order (truncation <= 1e-17)."""
    pieces = numpy.maximum(numpy.ceil(h * _FREQUENCY / 8.0), 1).astype(int)
    half_width = float(numpy.max(h / pieces)) * _FREQUENCY / 2.0
    return pieces, gauss_order(half_width, _MIN_NODES)''',
}
_SUB_PIECES = '''def _sub_pieces(t, h, p):
    """Sub-pieces of the linear pieces: (piece, start, width) in s in [0, 1], Gauss order."""
    pieces, order = _gauss_rule(h)
    piece = numpy.repeat(numpy.arange(h.size), pieces)
    sub = numpy.arange(piece.size) - (numpy.cumsum(pieces) - pieces)[piece]
    return piece, sub / pieces[piece], 1.0 / pieces[piece], order'''
_NODES = """\
    piece, start, width, order = _sub_pieces(t, h, p)
    xi, w = _leggauss(order)
    first = numpy.searchsorted(piece, numpy.arange(h.size))
    s = start[:, None] + width[:, None] * (xi + 1.0) / 2.0
    x = t[piece][:, None] + s * h[piece][:, None]
    wt = (h[piece] * width)[:, None] * w / 2.0
"""
_GRADED_POSITIONS = """\
    u = start[:, None] + width[:, None] * (xi + 1.0) / 2.0
    hs = h[piece][:, None]
    right = (toward < 0)[:, None]
    s = numpy.where(right, 1.0 - u, u)
    x = numpy.where(right, t[piece + 1][:, None] - u * hs, t[piece][:, None] + u * hs)
"""
_GRADED_NODES = """\
    piece, start, width, toward, order = _sub_pieces(t, h, p)
    xi, w = _leggauss(order)
    first = numpy.searchsorted(piece, numpy.arange(h.size))
""" + _GRADED_POSITIONS + """\
    wt = (h[piece] * width)[:, None] * w / 2.0 * _graded_weight(x, u, hs, piece, toward, t, p)
"""
_GRADED_PIECES = '''def _graded_pieces(t, h, pieces, ends, grades):
    """Sub-pieces (piece, start, width, toward) of the linear pieces, graded by distance to
    the singular ends (lo, hi) = ``ends`` of the weight (w ~ d^alpha at distance d; ``grades``:
    geometric cuts G per end, 0 where the weight is regular). Each piece is cut into
    ``pieces`` equal parts (two at least if it is within its width of both singular ends).
    A part nearer a singular end than the other end is measured from that end (toward = +1
    lo, -1 hi: start and width in [0, 1] from the piece's end on that side); if its own
    width h is at least the distance d of its near end, it is cut at the distances
    (d + h) 2^-k from the singular end, k = 1, 2, ..., that exceed d, at most G of them:
    every sub-piece but the last then lies at least its width from the singularity, and
    the last (from d, when G cuts are made) holds a share <= 2^-G(1 + alpha) <= 1e-17. The
    cuts depend on distances only, never on a node's index: the accuracy is the same on
    every grid (docs/design.md, "Singular weights")."""
    lo, hi = ends
    gap = (t[:-1] - lo, hi - t[1:])
    both = (grades[0] > 0) & (grades[1] > 0) & (gap[0] < h) & (gap[1] < h)
    pieces = numpy.where(both, numpy.maximum(pieces, 2), pieces)
    piece = numpy.repeat(numpy.arange(h.size), pieces)
    count = pieces[piece]
    sub = numpy.arange(piece.size) - (numpy.cumsum(pieces) - pieces)[piece]
    near = (gap[0][piece] + sub / count * h[piece],
            gap[1][piece] + (count - 1 - sub) / count * h[piece])
    toward = numpy.where((grades[0] > 0) & (near[0] <= near[1]), 1,
                         numpy.where((grades[1] > 0) & (near[1] < near[0]), -1, 0))
    d = numpy.where(toward < 0, near[1], near[0])
    offset = numpy.where(toward < 0, count - 1 - sub, sub) / count
    graded = (toward != 0) & (d <= h[piece] / count)
    with numpy.errstate(divide="ignore", over="ignore", invalid="ignore"):
        delta = d / h[piece]
        outer = delta + 1.0 / count
        most = numpy.where(toward < 0, grades[1], grades[0]) + 1
        levels = numpy.where(graded, numpy.minimum(numpy.ceil(numpy.log2(outer / delta)), most), 1)
    levels = levels.astype(int)
    segment = numpy.repeat(numpy.arange(piece.size), levels)
    k = numpy.arange(segment.size) - (numpy.cumsum(levels) - levels)[segment]
    upper = outer[segment] * 2.0 ** -k
    last = k == levels[segment] - 1
    lower = numpy.where(last, delta[segment], upper / 2)
    cut = graded[segment]
    with numpy.errstate(invalid="ignore"):
        start = numpy.where(cut, offset[segment] + (lower - delta[segment]), offset[segment])
        width = numpy.where(cut, upper - lower, 1.0 / count[segment])
    return piece[segment], start, width, toward[segment]'''
_GRADED_SUB_PIECES = '''_GRADES = {grades}  # per domain end: geometric cuts (0: w regular there)


''' + _GRADED_PIECES.replace("{", "{{").replace("}", "}}") + '''


def _sub_pieces(t, h, p):
    """Sub-pieces (piece, start, width, toward) of the linear pieces, graded by distance to
    a singular end of the weight, and a Gauss order (at least 24: the weight is singular at
    an end of the domain)."""
    pieces, order = _gauss_rule(h)
    return _graded_pieces(t, h, pieces, _domain(p), _GRADES) + (max(order, 24),)


def _graded_weight(x, u, hs, piece, toward, t, p):
    """w at the nodes; at graded nodes from the exact distance to the singular end."""
    lo, hi = _domain(p)
    out = numpy.ones(x.shape)
    plain = toward == 0
    out[plain] = _weight(x[plain], p)
{ends}    return out'''
_END_WEIGHT = """\
    near = toward == {sign}
    d = numpy.maximum(({gap})[near][:, None] + u[near] * hs[near], 2.0 ** -1022)  # no 0
    out[near] = {code}
"""
_SOBOLEV_LINES = """\
    slope_weights = numpy.diff(_orthonormal(t, p), axis=0) / h.reshape((-1,) + (1,) * len(shape))
    out[:-1] -= slope_weights
    out[1:] += slope_weights
"""


def grade_levels(alpha):
    """Geometric cuts G toward an end where w ~ d^alpha: the share 2^-G(1 + alpha) of a
    sub-piece's integral left to its last cut, next to the end, is <= 1e-17."""
    return math.ceil(17 * math.log2(10) / (1 + alpha))


def _grades(singular):
    grades = [0, 0]
    for end, alpha, _ in singular:
        grades[end] = grade_levels(alpha)
    return tuple(grades)


def _sub_pieces_function(ir):
    if not ir.singular:
        return _SUB_PIECES
    ends = ""
    for end, alpha, code in ir.singular:
        ends += _END_WEIGHT.format(sign=1 if end == 0 else -1, code=code,
                                   gap="t[piece] - lo" if end == 0 else "hi - t[piece + 1]")
    return _GRADED_SUB_PIECES.format(grades=_grades(ir.singular), ends=ends)


def _nodes_lines(ir):
    if ir.singular:
        return _GRADED_NODES
    return _NODES + ("    wt = wt * _weight(x, p)\n" if ir.weight_code else "")


def _quadrature_constants(ir):
    if ir.exact_nodes is not None:
        return f"_EXACT_NODES = {ir.exact_nodes}"
    return f"_FREQUENCY = {ir.frequency}\n_MIN_NODES = {ir.min_nodes}"


def _orthonormal_function(ir):
    """_orthonormal (and _transform when K is not the identity)."""
    if ir.transform.identity:
        return ('def _orthonormal(x, p):\n    """The atoms are the orthonormal basis e (K = I)."""\n'
                "    return _atoms(x, p)")
    product = ("numpy.einsum(\"...kr,jk->...jr\", _atoms(x, p), _transform(p))"
               if ir.vector_basis else "_atoms(x, p) @ _transform(p).T")
    return ("def _transform(p):\n"
            '    """K with e = K . atoms: the orthonormal basis e = R^(-1) phi."""\n'
            f"{_matrix_body(ir.transform)}\n\n\n"
            f'def _orthonormal(x, p):\n    """Orthonormal basis e = K . atoms."""\n'
            f"    return {product}")


def _string(text, width=92):
    """A string literal, split over parenthesized lines when it would exceed 99 columns."""
    if len(repr(text)) <= width - 14:
        return repr(text)
    parts = textwrap.wrap(text, width - 8, drop_whitespace=False)
    return "(\n" + "\n".join(f"    {part!r}" for part in parts) + "\n)"


def runtime_body(module):
    """A runtime module's source after its docstring and imports: what a generated module
    inlines verbatim (the module already imports math, hashlib, os, numbers and numpy)."""
    lines = inspect.getsource(module).splitlines()
    last_import = max(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")))
    return "\n".join(lines[last_import + 1:]).strip("\n")


def runtime_source(*modules):
    """The inlined runtime (``modules``: entropy, exact noise, clips), each part marked with
    its sha256 so a reviewer can check that it is the audited gpcompiler/runtime source."""
    parts = []
    for module in modules:
        body = runtime_body(module)
        digest = hashlib.sha256(body.encode()).hexdigest()
        name = module.__name__.split(".", 1)[1].replace(".", "/") + ".py"
        parts.append(f"# ---- {name} sha256 {digest}\n\n"
                     f"{body}\n\n# ---- end of {name}")
    return "\n\n\n".join(parts)


def _source(*objects):
    """Runtime helpers copied verbatim from the package, so a module needs only NumPy."""
    return "\n\n\n".join(inspect.getsource(obj).rstrip() for obj in objects)


def _matrix_body(matrix):
    if matrix.identity:
        return f"    return numpy.eye({matrix.shape[0]})"
    if matrix.pattern:
        return _packed_body(matrix)
    lines = [f"    return _matrix({matrix.shape}, ("]
    for entry in matrix.entries:
        line = f"        ({entry.row}, {entry.col}, {entry.code}),  # {entry.exact}"
        if len(line) > 99:
            lines += [f"        # {part}" for part in textwrap.wrap(entry.exact, 89)]
            line = f"        ({entry.row}, {entry.col}, {entry.code}),"
        lines.append(line)
    lines.append(f"    ){', symmetric=True' if matrix.symmetric else ''})")
    return "\n".join(lines)


def _packed_body(matrix):
    """A large constant matrix: float64 values in one literal, exact entries by formula."""
    rows, cols = matrix.shape
    lines = [f"    # {line}" for line in textwrap.wrap(
        f"Exact entries: {matrix.formula or 'see gpcompiler explain'}. Below: float64 "
        f"values rounded once from them, {matrix.pattern}"
        + (" (row by row)." if matrix.pattern != "diagonal" else "."), 90)]
    values = textwrap.wrap(", ".join(e.code for e in matrix.entries) + ",", 91)
    lines += ["    values = numpy.array(("] + [f"        {v}" for v in values] + ["    ))"]
    if matrix.pattern == "diagonal":
        lines.append("    return numpy.diag(values)" if rows == cols else
                     f"    out = numpy.zeros({matrix.shape})\n"
                     "    numpy.fill_diagonal(out, values)\n    return out")
    elif matrix.pattern == "dense":
        lines.append(f"    return values.reshape({matrix.shape})")
    else:
        lines += [f"    out = numpy.zeros({matrix.shape})",
                  f"    out[numpy.tril_indices({rows})] = values",
                  "    return out + numpy.tril(out, -1).T" if matrix.symmetric else "    return out"]
    return "\n".join(lines)


def _expression_body(name, doc, codes, shape, points="numpy.shape(x)"):
    lines = [f"def {name}(x, p):", f'    """{doc}"""',
             f"    out = numpy.empty({points} + {shape})"]
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
    size = ir.atoms_size
    loop = _LOOP.get(ir.atoms_kind, "").format(size=size) if size > 2 else ""
    second = _SECOND.get(ir.atoms_kind, "") if size > 1 else ""
    if ir.atoms_kind == "fourier":
        return _ATOMS["fourier"].format(size=size, order=size // 2 + 1, last=size // 2)
    return _ATOMS[ir.atoms_kind].format(size=size, first=first, end=first + size,
                                        last=first + size - 1, second=second.format(loop=loop))


_FAMILY_BASIS = {
    "legendre": ("P_k(u) = L_k sqrt((b - a)/(2k + 1)): the Legendre family from the atoms.",
                 "lo, hi = _domain(p)\n    return _atoms(x, p) * numpy.sqrt((hi - lo) / "
                 "(2.0 * numpy.arange(_ATOMS_SIZE) + 1.0))"),
    "monomial": ("The monomials t^k, k = 0..m-1.", "return x[..., None] ** numpy.arange(BASIS_SIZE)"),
}


def _basis_function(ir):
    if ir.family in _FAMILY_BASIS:
        doc, body = _FAMILY_BASIS[ir.family]
        return f'def _user_basis(x, p):\n    """{doc}"""\n    {body}'
    if ir.atoms_kind != "legendre":
        return ('def _user_basis(x, p):\n    """The user basis: here the atoms themselves."""\n'
                "    return _atoms(x, p)")
    shape = (ir.basis_size, ir.value_dim) if ir.vector_basis else (ir.basis_size,)
    return _expression_body("_user_basis", "The user's basis functions, evaluated as written.",
                            ir.basis_codes, shape)


def _weight_function(ir):
    if ir.weight_code is None:
        return ""
    return ("\n\n\ndef _weight(x, p):\n    \"\"\"Weight w(t) of the inner product.\"\"\"\n"
            f"    return {ir.weight_code} + 0.0 * x")


_BOX_ATOMS = '''def _axis_atoms(x, axis, p):
    """Normalized Legendre L_n(x_i) = sqrt((2n+1)/(b_i-a_i)) P_n(u_i), n < _AXIS_SIZES[axis],
    by the three-term recurrence (never expanded into monomials): shape x.shape + (n,)."""
    lo, hi = _domain(p)[axis]
    size = _AXIS_SIZES[axis]
    u = (2.0 * x - lo - hi) / (hi - lo)
    out = numpy.empty((size,) + u.shape)
    out[0] = 1.0
    if size > 1:
        out[1] = u
    for n in range(1, size - 1):
        out[n + 1] = ((2 * n + 1) * u * out[n] - n * out[n - 1]) / (n + 1)
    out *= numpy.sqrt((2.0 * numpy.arange(size) + 1.0) / (hi - lo)).reshape((-1,) + u.ndim * (1,))
    return numpy.moveaxis(out, 0, -1)


def _atoms(x, p):
    """Tensor Legendre atoms psi_a(x) = prod_i L_(a_i)(x_i), a in _INDEX: (..., _ATOMS_SIZE)."""
    out = numpy.ones(x.shape[:-1] + (_ATOMS_SIZE,))
    for axis in range(DIMENSION):
        out *= _axis_atoms(x[..., axis], axis, p)[..., _INDEX[:, axis]]
    return out'''
_SEPARABLE = {
    "axis_weights": '''def _axis_weights(t, axis, kind, p):
    """(S, n) weights int h_s L_a dx_i along one axis, h_s the hat function of node s
    ("linear", S nodes) or the indicator of cell s ("cells", S + 1 edges): Gauss-Legendre
    with _EXACT_NODES[axis] nodes per piece, exact for these polynomial integrands."""
    xi, w = _leggauss(_EXACT_NODES[axis])
    h = numpy.diff(t)[:, None]
    s = (xi + 1.0) / 2.0
    e = _axis_atoms(t[:-1, None] + h * s, axis, p)
    if kind == "cells":
        return numpy.einsum("pq,pqa->pa", h * w / 2.0, e), None
    out = numpy.zeros((t.size, e.shape[-1]))
    out[:-1] += numpy.einsum("pq,pqa->pa", h * (w * (1.0 - s)) / 2.0, e)
    out[1:] += numpy.einsum("pq,pqa->pa", h * (w * s) / 2.0, e)
    return out, None''',
    "node_atoms": '''def _node_atoms(nodes, p):
    """The atoms as a table over per-axis Legendre indices (one-hot): (n_1, ..., n_k, A)."""
    out = numpy.zeros(_AXIS_SIZES + (_ATOMS_SIZE,))
    out[tuple(_INDEX.T) + (numpy.arange(_ATOMS_SIZE),)] = 1.0
    return out


def _to_atoms(y, nodes, p):
    """Atom coordinates from per-axis Legendre coordinates (..., n_1, ..., n_k): (..., A)."""
    return y[(Ellipsis,) + tuple(_INDEX.T)]''',
    "integrals_doc": "The integrals are exact (tensor Gauss rules\n    per cell) and computed "
                     "one axis at a time: O(S_1...S_k m) work.",
}
_GRADED_AXIS_WEIGHTS = '''def _axis_weights(t, axis, kind, p):
    """(S, n) weights int h_s w_i L_a dx_i along one axis, h_s the hat function of node s
    ("linear") or the indicator of cell s ("cells"), w_i the factor of the separable weight:
    pieces are cut into sub-pieces of width <= 8/frequency with the Gauss-Legendre order
    whose truncation term (frequency h/2)^(2n)/(2n)! is <= 1e-17, at least 24 where w_i is
    singular at an end of the axis; there pieces are graded by distance to that end as in
    1-D (_graded_pieces), w_i evaluated from the exact distance d to it."""
    h = numpy.diff(t)
    pieces = numpy.maximum(numpy.ceil(h * _FREQUENCY[axis] / 8.0), 1).astype(int)
    order = gauss_order(float(numpy.max(h / pieces)) * _FREQUENCY[axis] / 2.0, _MIN_NODES[axis])
    lo, hi = _domain(p)[axis]
    piece, start, width, toward = _graded_pieces(t, h, pieces, (lo, hi), _GRADES[axis])
    xi, w = _leggauss(max(order, 24) if any(_GRADES[axis]) else order)
''' + _GRADED_POSITIONS + '''\
    d = numpy.maximum(numpy.where(right, hi - t[piece + 1][:, None], t[piece][:, None] - lo)
                      + u * hs, 2.0 ** -1022)  # an underflowed distance is not 0
    wt = (h[piece] * width)[:, None] * w / 2.0 * _WEIGHTS[axis](x, d, toward, p)
    e = _axis_atoms(x, axis, p)
    out = numpy.zeros((h.size if kind == "cells" else t.size, e.shape[-1]))
    if kind == "cells":
        numpy.add.at(out, piece, numpy.einsum("pq,pqa->pa", wt, e))
    else:
        numpy.add.at(out, piece, numpy.einsum("pq,pqa->pa", wt * (1.0 - s), e))
        numpy.add.at(out, piece + 1, numpy.einsum("pq,pqa->pa", wt * s, e))
    return out, None'''
_QUADRATURE = {
    "axis_weights": '''def _axis_weights(t, axis, kind, p):
    """(S, N) weights of the N Gauss nodes along one axis, and the nodes: pieces are cut into
    sub-pieces of width <= 8/frequency, with the Gauss-Legendre order whose truncation term
    (frequency h/2)^(2n)/(2n)! is <= 1e-17; a node's weight goes to the hat functions of
    the piece's two ends ("linear") or to its cell ("cells")."""
    h = numpy.diff(t)
    pieces = numpy.maximum(numpy.ceil(h * _FREQUENCY[axis] / 8.0), 1).astype(int)
    order = gauss_order(float(numpy.max(h / pieces)) * _FREQUENCY[axis] / 2.0, _MIN_NODES[axis])
    xi, w = _leggauss(order)
    piece = numpy.repeat(numpy.arange(h.size), pieces)
    sub = numpy.arange(piece.size) - (numpy.cumsum(pieces) - pieces)[piece]
    s = (sub[:, None] + (xi + 1.0) / 2.0) / pieces[piece][:, None]
    nodes = t[piece][:, None] + s * h[piece][:, None]
    wt = (h[piece] / pieces[piece])[:, None] * w / 2.0
    columns = numpy.arange(nodes.size).reshape(nodes.shape)
    out = numpy.zeros((h.size if kind == "cells" else t.size, nodes.size))
    if kind == "cells":
        out[piece[:, None], columns] = wt
    else:
        out[piece[:, None], columns] = wt * (1.0 - s)
        out[piece[:, None] + 1, columns] = wt * s
    return out, nodes.ravel()''',
    "node_atoms": '''def _node_atoms(nodes, p):
    """The atoms on the tensor grid of Gauss nodes: (N_1, ..., N_k, A)."""
    return _atoms(numpy.stack(numpy.meshgrid(*nodes, indexing="ij"), axis=-1), p)


def _to_atoms(y, nodes, p):
    """Atom coordinates from weighted values at the Gauss nodes (..., N_1, ..., N_k), in
    blocks of the first axis so the atoms on the node grid stay within _CHUNK values."""
    step = max(1, _CHUNK // (math.prod(n.size for n in nodes[1:]) * _ATOMS_SIZE))
    out = 0.0
    for start in range(0, nodes[0].size, step):
        block = (Ellipsis, slice(start, start + step)) + (slice(None),) * (DIMENSION - 1)
        atoms = _node_atoms([nodes[0][start:start + step]] + list(nodes[1:]), p)
        out = out + numpy.tensordot(y[block], atoms, axes=DIMENSION)
    return out''',
    "integrals_doc": "The integrals use tensor Gauss rules per\n    (sub-)cell (N_i nodes "
                     "along axis i), accurate to about 1e-16 relative, contracted\n    one axis "
                     "at a time with dense (S_i, N_i) weights, then with the atoms at the\n"
                     "    N_1...N_k nodes.",
}


def _vector_to_atoms(code):
    """_to_atoms for a vector-valued basis: the value axis n (in the batch, before the node
    axes) is contracted with the atoms' component axis."""
    for old, new in (("(..., N_1, ..., N_k), in", "(..., n, N_1, ..., N_k),"),
                     ("the Gauss nodes (..., n", "the Gauss nodes\n    (..., n"),
                     ("first axis so", "first node axis so"),
                     ("* _ATOMS_SIZE))", "* _ATOMS_SIZE * VALUE_DIM))"),
                     ("tensordot(y[block], atoms, axes=DIMENSION)",
                      "tensordot(y[block], numpy.moveaxis(atoms, -1, 0), axes=DIMENSION + 1)")):
        assert old in code, old
        code = code.replace(old, new)
    return code.replace("+ (_ATOMS_SIZE,))", "+ (_ATOMS_SIZE, VALUE_DIM))")  # H^1 blocks


_BOX_FAMILY_BASIS = {
    "legendre": ("prod_i P_(a_i)(u_i) = psi_a prod_i sqrt((b_i - a_i)/(2 a_i + 1)), a in _INDEX.",
                 "scale = numpy.ones(_ATOMS_SIZE)\n    for axis, (lo, hi) in enumerate(_domain(p)):\n"
                 "        scale = scale * numpy.sqrt((hi - lo) / (2.0 * _INDEX[:, axis] + 1.0))\n"
                 "    return _atoms(x, p) * scale"),
    "monomial": ("The monomials prod_i x_i^(a_i), a in _INDEX.",
                 "return numpy.prod(x[..., None, :] ** _INDEX, axis=-1)"),
}
_KRON = '''def _kron(*factors):
    """Kronecker product of the 1-D factors: the last variable's index runs fastest."""
    out = factors[0]
    for factor in factors[1:]:
        out = numpy.kron(out, factor)
    return out'''


_WEIGHTED_NODE_ATOMS = '''def _node_atoms(nodes, p):
    """The atoms times the weight w on the tensor grid of Gauss nodes: (N_1, ..., N_k, A)."""
    x = numpy.stack(numpy.meshgrid(*nodes, indexing="ij"), axis=-1)
    return _atoms(x, p) * _weight(x, p)[..., None]'''
_SOBOLEV = {
    "axis_weights": _SEPARABLE["axis_weights"].replace("def _axis_weights(", "def _value_weights(")
    + '''


def _axis_weights(t, axis, kind, p):
    """(S, 2n) H^1 weights along one axis: _value_weights, then int h_s' L_a' dx_i, which
    is exactly the difference of L_a over each piece next to node s divided by its width.
    The piecewise-constant field of cells has no weak gradient: no H^1 projection."""
    if kind == "cells":
        raise ValueError("kind='cells' has no H^1 projection (a piecewise-constant field "
                         "jumps across cells, so it has no weak gradient); use kind='linear'")
    value, _ = _value_weights(t, axis, kind, p)
    slopes = numpy.diff(_axis_atoms(t, axis, p), axis=0) / numpy.diff(t)[:, None]
    derivative = numpy.zeros(value.shape)
    derivative[:-1] -= slopes
    derivative[1:] += slopes
    return numpy.concatenate([value, derivative], axis=1), None''',
    "node_atoms": '''def _node_atoms(nodes, p):
    """<., psi_a>_H1 as a table over per-axis (value | derivative) Legendre indices: one-hot
    at the value index and at each axis's derivative index, (2 n_1, ..., 2 n_k, A)."""
    out = numpy.zeros(tuple(2 * n for n in _AXIS_SIZES) + (_ATOMS_SIZE,))
    for index in _H1_INDEX:
        out[index + (numpy.arange(_ATOMS_SIZE),)] = 1.0
    return out


def _to_atoms(y, nodes, p):
    """H^1 atom coordinates from per-axis (value | derivative) Legendre coordinates:
    int f psi_a + sum_i int d_i f d_i psi_a, (..., A)."""
    return sum(y[(Ellipsis,) + index] for index in _H1_INDEX)''',
    "integrals_doc": "The H^1 inner products <f, e_j> + sum_i <d_i f, d_i e_j>\n    "
                     "are exact (tensor Gauss rules per cell, exact differences for the "
                     "derivatives)\n    and computed one axis at a time: O(S_1...S_k m) work; "
                     "kind=\"linear\" only.",
}

_H1_QUADRATURE = {
    "axis_weights": _QUADRATURE["axis_weights"].replace("def _axis_weights(",
                                                        "def _value_weights(") + '''


def _axis_weights(t, axis, kind, p):
    """(S, N + S) H^1 weights along one axis and their nodes (N Gauss nodes, S grid nodes):
    _value_weights, then int h_s' g dx_i = sum over the pieces q next to node s of
    h_s'|_q (g(t_(q+1)) - g(t_q)), exact for any g (h_s' is constant on each piece). The
    piecewise-constant field of cells has no weak gradient: no H^1 projection."""
    if kind == "cells":
        raise ValueError("kind='cells' has no H^1 projection (a piecewise-constant field "
                         "jumps across cells, so it has no weak gradient); use kind='linear'")
    value, nodes = _value_weights(t, axis, kind, p)
    slope, q = 1.0 / numpy.diff(t), numpy.arange(t.size - 1)
    derivative = numpy.zeros((t.size, t.size))
    numpy.add.at(derivative, (q, q), slope)
    numpy.add.at(derivative, (q, q + 1), -slope)
    numpy.add.at(derivative, (q + 1, q), -slope)
    numpy.add.at(derivative, (q + 1, q + 1), slope)
    return numpy.concatenate([value, derivative], axis=1), (nodes, t)''',
    "node_atoms": _QUADRATURE["node_atoms"].replace("def _node_atoms(", "def _grid_atoms(")
    .replace("def _to_atoms(", "def _block_to_atoms(").replace(
        "atoms = _node_atoms(", "atoms = _grid_atoms(") + '''


def _h1_blocks(nodes):
    """(block, nodes) of <f, e>_H1: the Gauss nodes of every axis (the values), then for
    each axis i its grid nodes and the Gauss nodes of the others (the derivative along x_i)."""
    gauss = [g for g, _ in nodes]
    yield tuple(slice(0, g.size) for g in gauss), gauss
    for axis, (g, t) in enumerate(nodes):
        block = tuple(slice(g.size, None) if i == axis else slice(0, n.size)
                      for i, n in enumerate(gauss))
        yield block, gauss[:axis] + [t] + gauss[axis + 1:]


def _node_atoms(nodes, p):
    """The atoms on each H^1 block of the node grids (N_1 + S_1, ..., N_k + S_k, A); zero
    where no block is."""
    out = numpy.zeros(tuple(g.size + t.size for g, t in nodes) + (_ATOMS_SIZE,))
    for block, grid in _h1_blocks(nodes):
        out[block] = _grid_atoms(grid, p)
    return out


def _to_atoms(y, nodes, p):
    """<f, psi_a>_H1 = int f psi_a + sum_i int d_i f d_i psi_a: each block of the weighted
    values (..., N_1 + S_1, ..., N_k + S_k) contracted with the atoms at its nodes."""
    return sum(_block_to_atoms(y[(Ellipsis,) + block], grid, p)
               for block, grid in _h1_blocks(nodes))''',
    "integrals_doc": "The H^1 inner products <f, e_j> + sum_i <d_i f, d_i e_j>\n    "
                     "use tensor Gauss rules per (sub-)cell for the values, accurate to about "
                     "1e-16\n    relative, and exact differences of e_j across each cell for "
                     "the derivatives;\n    kind=\"linear\" only.",
}


def _box_placeholders(ir):
    """Placeholders of a module over a box (module_box.py.tmpl, paper Sec. 3.2)."""
    box = ir.box
    separable = box.exact_nodes is not None
    projection = ({True: _SOBOLEV, False: _H1_QUADRATURE} if ir.sobolev else
                  {True: _SEPARABLE, False: _QUADRATURE})[separable]
    if box.weight_factors:
        projection = {**_SEPARABLE, "axis_weights": _GRADED_PIECES + "\n\n\n"
                      + _GRADED_AXIS_WEIGHTS, "integrals_doc": _GRADED_DOC}
    elif ir.weight_code is not None:
        weighted = _WEIGHTED_NODE_ATOMS.replace("[..., None]", "[..., None, None]"
                                                if ir.vector_basis else "[..., None]")
        projection = {**projection, "node_atoms": projection["node_atoms"].replace(
            projection["node_atoms"].split("\n\n\n")[0], weighted)}
    if ir.vector_basis:
        projection = {**projection, "node_atoms": _vector_to_atoms(projection["node_atoms"])}
    return {
        **projection, **_VALUES_BOX[_values_kind(ir)],
        "dimension": str(len(box.variables)), "variables_repr": repr(box.variables),
        "domain_exact": ", ".join(f"({lo[1]!r}, {hi[1]!r})" for lo, hi in ir.domain),
        "box_domain": "(" + ", ".join(f"({lo[0]}, {hi[0]})" for lo, hi in ir.domain) + ",)",
        "quadrature_constants": _box_constants(box, ir),
        "gram_body": _box_matrix_body(ir.gram, box.factors, 1, "G", _KRON),
        "cholesky_body": _box_matrix_body(ir.cholesky, box.factors, 2, "R"),
        "atoms_function": _BOX_ATOMS if ir.atoms_kind == "legendre" else _expression_body(
            "_atoms", "The user's basis functions, evaluated as written.", ir.atom_codes,
            (ir.atoms_size, ir.value_dim) if ir.vector_basis else (ir.atoms_size,),
            "x.shape[:-1]"),
        "basis_function": _box_basis_function(ir) + _box_weight_function(ir),
        "clip_fields": _CLIP_FIELDS[ir.metric == "L2"].replace(
            "VALUE_RANK", "0" if ir.value_dim == 1 else "1"),
        "from_atoms": ("coefficients" if ir.transform.identity
                       else "coefficients @ _transform(p).T"),
    }


def _box_weight_function(ir):
    if ir.box.weight_factors:
        return "\n\n\n" + _axis_weight_functions(ir.box)
    if ir.weight_code is None:
        return ""
    return ('\n\n\ndef _weight(x, p):\n    """Weight w(x) of the inner product at points '
            f'(..., k)."""\n    return {ir.weight_code} + 0.0 * x[..., 0]')


_GRADED_DOC = ("The weight is separable, w = prod_i w_i(x_i):\n    the integrals are "
               "1-D Gauss rules per (sub-)piece with w_i folded in, graded next to a\n"
               "    singular end, accurate to about 1e-15 relative, and computed one axis at a "
               "time:\n    O(S_1...S_k m) work.")
_AXIS_WEIGHT = '''def _weight_{name}(x, d, toward, p):
    """{doc}"""
'''
_GRADED_AXIS_WEIGHT = """\
    out = numpy.ones(x.shape)
    plain = toward == 0
    out[plain] = {plain}
{ends}    return out"""
_GRADED_END = """\
    near = toward == {sign}
    out[near] = {code}
"""


def _axis_weight_functions(box):
    """One function per variable for the factor w_i of a separable weight (graded nodes get
    w_i from their exact distance d to the singular end), and the tuple _WEIGHTS of them."""
    parts = []
    for name, (code, plain, exact, singular) in zip(box.variables, box.weight_factors):
        doc = (f"w_{name} = {exact}, the factor in {name} of the separable weight, at nodes x "
               f"(values of {name})" + ("; at nodes graded toward a singular end, from the "
                                       "exact distance d to it." if singular else
                                       f": w_{name} is regular (d and toward unused)."))
        text = _AXIS_WEIGHT.format(name=name, doc=textwrap.fill(doc, 88, subsequent_indent="    ")
                                   .lstrip())
        if singular:
            text += _GRADED_AXIS_WEIGHT.format(plain=plain, ends="".join(
                _GRADED_END.format(sign=1 if end == 0 else -1, code=c) for end, _, c in singular))
        else:
            text += f"    return {code} + 0.0 * x"
        parts.append(text)
    return "\n\n\n".join(parts) + "\n\n\n_WEIGHTS = (" + ", ".join(
        f"_weight_{name}" for name in box.variables) + ")  # w_i per axis"


def _box_constants(box, ir):
    """The atom multi-indices and exact Gauss orders (Legendre atoms; for H^1 also the
    value and derivative indices), and the frequency bound and smallest order per axis
    when the integrands are not polynomials (the module's gauss_order picks the order)."""
    lines = []
    if ir.atoms_kind == "legendre":
        lines.append(f"_AXIS_SIZES = {box.axis_sizes}  # Legendre atoms per variable")
        lines.append(f"_INDEX = numpy.indices(_AXIS_SIZES).reshape({len(box.variables)}, -1).T"
                     "  # atom multi-indices (last variable fastest)")
        if box.total_degree is not None:
            lines.append(f"_INDEX = _INDEX[_INDEX.sum(axis=1) <= {box.total_degree}]"
                         "  # restricted to total degree")
    if ir.sobolev and ir.atoms_kind == "legendre":
        lines.append("_H1_INDEX = [tuple(_INDEX.T)] + [  # value, then the derivative along "
                     "each axis\n    tuple(_INDEX.T + numpy.diag(_AXIS_SIZES)[axis][:, None]) "
                     "for axis in range(DIMENSION)]")
    if box.exact_nodes is not None:
        lines.insert(0, f"_EXACT_NODES = {box.exact_nodes}  # Gauss-Legendre nodes per axis "
                        "and cell (exact)")
        return "\n".join(lines)
    grades = ([f"_GRADES = {tuple(_grades(s) for *_, s in box.weight_factors)}  # per variable "
               "and end: geometric cuts (0: w_i regular there)"] if box.weight_factors else [])
    return "\n".join([f"_FREQUENCY = {box.frequency}  # per variable: sub-pieces <= 8/frequency",
                      f"_MIN_NODES = {box.min_nodes}"] + grades + [
                      "_CHUNK = 1 << 20  # atom values per block of Gauss nodes"] + lines
                     + ["\n\n" + _source(analysis.gauss_order)])


def _box_matrix_body(matrix, factors, position, symbol, helper=""):
    """A matrix, or (tensor products) the Kronecker product of its 1-D factors."""
    if not factors:
        return _matrix_body(matrix)
    name = factors[0][position].name.rsplit("_", 1)[0]
    parts = ["    return _kron(" + ", ".join(f"_{name}_{t}(p)" for t, *_ in factors) + ")"]
    for factor in factors:
        parts.append(f'def _{name}_{factor[0]}(p):\n    """{symbol}_{factor[0]}: the 1-D factor '
                     f'of {factor[0]}."""\n{_matrix_body(factor[position])}')
    return "\n\n\n".join(parts + ([helper] if helper else []))


def _box_basis_function(ir):
    if ir.atoms_kind == "expression":
        return ('def _user_basis(x, p):\n    """The user basis: here the atoms themselves."""\n'
                "    return _atoms(x, p)")
    if ir.family in _BOX_FAMILY_BASIS:
        doc, body = _BOX_FAMILY_BASIS[ir.family]
        return f'def _user_basis(x, p):\n    """{doc}"""\n    {body}'
    return _expression_body("_user_basis", "The user's basis functions, evaluated as written.",
                            ir.basis_codes, (ir.basis_size,), "x.shape[:-1]")
