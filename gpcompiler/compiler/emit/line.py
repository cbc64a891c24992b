"""The code of a module over an interval: atoms, quadrature rules (graded at
singular ends), Sobolev norms and the placeholders of module.py.tmpl."""
import textwrap

from ..analysis.quadrature import gauss_order
from .common import (GRADED_PIECES, GRADED_POSITIONS, common_placeholders, expression_body,
                     grades_of, inlined_source, matrix_body, values_kind)


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


def line_placeholders(ir):
    lo, hi = ir.domain
    curve = ir.curve_interval or ir.domain
    return {
        **common_placeholders(ir),
        "curve_interval_exact": (repr(tuple(e for _, e in ir.curve_interval))
                                 if ir.curve_interval else "None"),
        "domain_lo": lo[0], "domain_hi": hi[0],
        "curve_interval_code": f"({curve[0][0]}, {curve[1][0]})",
        "domain_exact": f"{lo[1]!r}, {hi[1]!r}",
        "quadrature_constants": _quadrature_constants(ir),
        "gauss_rule_function": (_GAUSS_RULE[True] if ir.exact_nodes is not None
                                else inlined_source(gauss_order) + "\n\n\n" + _GAUSS_RULE[False]),
        "sub_pieces_function": _sub_pieces_function(ir),
        "gram_body": matrix_body(ir.gram),
        "cholesky_body": matrix_body(ir.cholesky),
        "atoms_function": _atoms_function(ir),
        "basis_function": _basis_function(ir) + _weight_function(ir),
        "nodes_lines": _nodes_lines(ir),
        "sobolev_lines": _SOBOLEV_LINES if ir.sobolev else "",
        "clip_curves": _CLIP_CURVES[ir.metric == "L2" and ir.outside == "zero"],
        **_VALUES_1D[values_kind(ir)],
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


_CLIP_CURVES = {
    True: '''def _clip_curves(t, y, bound):
    """(values, factors): each curve clipped to the L2 ball of radius B (runtime/
    curveclip.py), its factor applied to its coefficients, so the float error of its
    projection is at most ETA B (docs/clipping.md)."""
    return clip_curves(t, y, bound, VALUE_DIM)''',
    False: '''def _clip_curves(t, y, bound):
    """(the curves as they are, None): the norm of this metric is not computed on samples,
    so only the coefficients are clipped (docs/clipping.md: no stated slack for this metric).
    """
    return y, None''',
}


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
    """Blocks of consecutive sub-pieces of the linear pieces (_numbered): (piece, start,
    width) in s in [0, 1], and the Gauss order."""
    pieces, order = _gauss_rule(h)
    for piece, sub in _numbered(pieces, order):
        yield piece, sub / pieces[piece], 1.0 / pieces[piece], order'''


_NODES = """\
    for piece, start, width, order in _sub_pieces(t, h, p):
        xi, w = _leggauss(order)
        s = start[:, None] + width[:, None] * (xi + 1.0) / 2.0
        x = t[piece][:, None] + s * h[piece][:, None]
        wt = (h[piece] * width)[:, None] * w / 2.0
"""


_GRADED_NODES = """\
    for piece, start, width, toward, order in _sub_pieces(t, h, p):
        xi, w = _leggauss(order)
""" + textwrap.indent(GRADED_POSITIONS, "    ") + """\
        wt = (h[piece] * width)[:, None] * w / 2.0 * _graded_weight(x, u, hs, piece, toward, t, p)
"""


_GRADED_SUB_PIECES = '''_GRADES = {grades}  # per domain end: geometric cuts (0: w regular there)


''' + GRADED_PIECES.replace("{", "{{").replace("}", "}}") + '''


def _sub_pieces(t, h, p):
    """Blocks of consecutive sub-pieces (piece, start, width, toward) of the linear pieces
    (_numbered), graded by distance to a singular end of the weight, and a Gauss order (at
    least 24: the weight is singular at an end of the domain)."""
    pieces, order = _gauss_rule(h)
    pieces, order = _graded_counts(t, h, pieces, _domain(p), _GRADES), max(order, 24)
    for piece, sub in _numbered(pieces, order * (1 + max(_GRADES))):
        yield _graded_pieces(t, h, pieces, piece, sub, _domain(p), _GRADES) + (order,)


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


def _sub_pieces_function(ir):
    if not ir.singular:
        return _SUB_PIECES
    ends = ""
    for end, alpha, code in ir.singular:
        ends += _END_WEIGHT.format(sign=1 if end == 0 else -1, code=code,
                                   gap="t[piece] - lo" if end == 0 else "hi - t[piece + 1]")
    return _GRADED_SUB_PIECES.format(grades=grades_of(ir.singular), ends=ends)


def _nodes_lines(ir):
    if ir.singular:
        return _GRADED_NODES
    return _NODES + ("        wt = wt * _weight(x, p)\n" if ir.weight_code else "")


def _quadrature_constants(ir):
    if ir.exact_nodes is not None:
        return f"_EXACT_NODES = {ir.exact_nodes}"
    return f"_FREQUENCY = {ir.frequency}\n_MIN_NODES = {ir.min_nodes}"


def _atoms_function(ir):
    if ir.atoms_kind == "expression":
        shape = (ir.atoms_size, ir.value_dim) if ir.vector_basis else (ir.atoms_size,)
        return expression_body("_atoms", "The user's basis functions, evaluated as written.",
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
    return expression_body("_user_basis", "The user's basis functions, evaluated as written.",
                            ir.basis_codes, shape)


def _weight_function(ir):
    if ir.weight_code is None:
        return ""
    return ("\n\n\ndef _weight(x, p):\n    \"\"\"Weight w(t) of the inner product.\"\"\"\n"
            f"    return {ir.weight_code} + 0.0 * x")
