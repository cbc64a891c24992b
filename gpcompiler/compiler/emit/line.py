"""The code of a module over an interval: atoms, quadrature rules (graded at
singular ends), Sobolev norms and the placeholders of module.py.tmpl."""
import textwrap

from ..analysis.quadrature import gauss_order
from .common import (GRADED_PIECES, GRADED_POSITIONS, LEGENDRE_SLOPE_RECURRENCE, LEGENDRE_SLOPES,
                     common_placeholders, expression_body, grades_of, inlined_source,
                     matrix_body, values_kind)
from .literals import python_literal
from .runtime import clips_curves


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


_PIECEWISE = '''_BREAKS = numpy.array([{breaks}])  # exact: {exact}
PIECE_BREAKS = _BREAKS  # public: the pieces on which every basis function is a polynomial
PIECE_ORDER = {order}  # public: Legendre atoms P_0..P_(order-1) per piece


def _pieces(x):
    """(piece j, u, width) per point: [b_j, b_(j+1)] of _BREAKS holding x (the first or last
    piece beyond the ends), u = (2x - b_j - b_(j+1))/(b_(j+1) - b_j) in [-1, 1]."""
    j = numpy.clip(numpy.searchsorted(_BREAKS, x, side="right") - 1, 0, _BREAKS.size - 2)
    lo, hi = _BREAKS[j], _BREAKS[j + 1]
    return j, (2.0 * x - lo - hi) / (hi - lo), hi - lo


def _scatter(j, local):
    """Atoms (..., _ATOMS_SIZE) from the (PIECE_ORDER, ...) values on each point's piece j:
    atom j PIECE_ORDER + d, zero on the other pieces."""
    out = numpy.zeros(j.shape + (_ATOMS_SIZE,))
    index = j[..., None] * PIECE_ORDER + numpy.arange(PIECE_ORDER)
    numpy.put_along_axis(out, index, numpy.moveaxis(local, 0, -1), axis=-1)
    return out


def _atoms(x, p):
    """Normalized Legendre polynomials of each piece, L_(j,d) = sqrt((2d+1)/(b_(j+1)-b_j))
    P_d(u) on [b_j, b_(j+1)], zero elsewhere (orthonormal), by the three-term recurrence:
    shape (..., _ATOMS_SIZE)."""
    j, u, width = _pieces(x)
    local = numpy.empty((PIECE_ORDER,) + u.shape)
    local[0] = 1.0{second}
    degree = numpy.arange(PIECE_ORDER).reshape((-1,) + u.ndim * (1,))
    return _scatter(j, local * numpy.sqrt((2.0 * degree + 1.0) / width))'''


_SECOND = {
    "piecewise": """
    local[1] = u{loop}""",
    "legendre": """
    out[1] = u{loop}""",
    "hermite": """
    out[..., 1] = math.sqrt(2.0) * x * out[..., 0]{loop}""",
}


_LOOP = {
    "piecewise": """
    for k in range(1, PIECE_ORDER - 1):
        local[k + 1] = ((2 * k + 1) * u * local[k] - k * local[k - 1]) / (k + 1)""",
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
        "curve_interval_exact": (python_literal(tuple(e for _, e in ir.curve_interval))
                                 if ir.curve_interval else "None"),
        "domain_lo": lo[0], "domain_hi": hi[0],
        "curve_interval_code": f"({curve[0][0]}, {curve[1][0]})",
        "domain_exact": f"{python_literal(lo[1])}, {python_literal(hi[1])}",
        "quadrature_constants": _quadrature_constants(ir),
        "gauss_rule_function": (_GAUSS_RULE[True] if ir.exact_nodes is not None
                                else inlined_source(gauss_order) + "\n\n\n" + _GAUSS_RULE[False]),
        "sub_pieces_function": _sub_pieces_function(ir),
        "gram_body": matrix_body(ir.gram),
        "cholesky_body": matrix_body(ir.cholesky),
        "atoms_function": _atoms_function(ir),
        "basis_function": _basis_function(ir) + _weight_function(ir) + _slopes_function(ir),
        "nodes_lines": _nodes_lines(ir),
        **_SOBOLEV[ir.sobolev],
        "clip_curves": _clip_curves(ir),
        **_VALUES_1D[values_kind(ir)],
        **_OUTSIDE[ir.outside],
        "public_weights": _public_weights(ir),
    }


_HELD = '''def _held(t, y, p):
    """(times, values) of the held curve, a curve zero outside its samples (runtime/hold.py,
    held_samples), from times t (S,) or (B, S) in the curve interval and the values y of
    their shape: the clip and the weights then act on that one curve (docs/clipping.md,
    "Held curves")."""
    lo, hi = _curve_interval(p)
    if t.ndim not in (1, 2):
        raise ValueError(f"sample times must be 1-D per curve, got shape {t.shape}")
    if t.size and numpy.isfinite(t).all() and (t.min() < lo or t.max() > hi):
        raise ValueError(f"sample times must lie in [{lo}, {hi}]")
    return held_samples(t, y, (lo, hi), VALUE_DIM > 1)


def _fold_ends(weights):
    """The weights of a held grid (S + 2) with the first and last (the added ends) folded
    onto the samples they repeat: (S, ...) weights A with y @ A the held curve's projection."""
    if weights.shape[0] == 0:
        return weights
    out = weights[1:-1].copy()
    out[0] += weights[0]
    out[-1] += weights[-1]
    return out


'''


def _public_weights(ir):
    """projection_weights' (S, ...) weights: H^1's difference rows folded onto the samples,
    and a held grid's two added rows onto its first and last samples."""
    weights = ("_fold_differences(_grid_weights(t, p, cache), numpy.size(t))" if ir.sobolev
               else "_grid_weights(t, p, cache)")
    return f"_fold_ends({weights})" if ir.outside == "hold" else weights


_OUTSIDE = {  # [curve] outside: what the curve is before its first and after its last sample
    "zero": {"outside_repr": python_literal("zero"), "held_functions": "", "curve_samples": "t, y",
             "held_grid": "",
             "outside_doc": "zero outside its samples"},
    "hold": {"outside_repr": python_literal("hold"), "held_functions": _HELD,
             "curve_samples": "_held(t, y, p)",
             "held_grid": "\n    t = held_times(_check_times(t, p), _curve_interval(p))",
             "outside_doc": "holding its first and last values out to the curve interval's ends"},
}


_CLIP_CURVES = {
    True: '''def _clip_curves(t, y, bound, p=None):
    """(values, factors): each curve clipped to the {metric} ball of radius B (runtime/
    curveclip.py), its factor applied to its coefficients, so the float error of its
    projection is at most ETA B (docs/clipping.md)."""
    return clip_curves(t, y, bound, VALUE_DIM{extra})''',
    False: '''def _clip_curves(t, y, bound, p=None):
    """(the curves as they are, None): the norm of this metric is not computed on samples,
    so only the coefficients are clipped (docs/clipping.md: the slack is stated with its
    condition, SLACK_CONDITION)."""
    return y, None''',
}


_MASSES = '''


def _masses(t, p):
    """(3, S - 1) per piece of the grid t: int w hat_a^2, int w hat_a hat_b, int w hat_b^2
    (hat_a, hat_b its two hat functions) by the projection's own Gauss rules; 0 across a
    jump. ||q||_w^2 = sum over pieces of a^2 m_00 + 2ab m_01 + b^2 m_11 (curveclip)."""
    out = numpy.zeros((3, max(t.size - 1, 0)))
    for run in numpy.split(numpy.arange(t.size), numpy.flatnonzero(numpy.diff(t) == 0) + 1):
        if run.size >= 2:
            out[:, run[:-1]] = _run_masses(t[run], p)
    return out


def _run_masses(t, p):
    """The masses of one run of strictly increasing sample times."""
    h = numpy.diff(t)
    return _piece_sums(_mass_sums(t, h, p), (h.size, 3, 1))[..., 0].T


def _mass_sums(t, h, p):
    """(piece, sums) per block of sub-pieces (as _gauss_sums): each sub-piece's Gauss sums
    of w (1 - s)^2, w s (1 - s) and w s^2."""
{nodes}        masses = numpy.stack([wt * (1.0 - s) ** 2, wt * s * (1.0 - s), wt * s * s], axis=1)
        yield piece, masses.sum(axis=-1)[..., None]


def _grid_masses(t, p):
    """The masses of a shared grid (S,) or of each row of t (B, S): (3, [B,] S - 1)."""
    if t.ndim == 1:
        return _masses(_check_times(t, p), p)
    return numpy.stack([_masses(_check_times(row, p), p) for row in t], axis=1)'''


def _clip_curves(ir):
    if not clips_curves(ir):
        return _CLIP_CURVES[False]
    if ir.metric == "weighted":
        return (_CLIP_CURVES[True].replace("def _clip_curves(t, y, bound, p=None):",
                                           "def _clip_curves(t, y, bound, p):").format(
            metric="L2(w)", extra=", masses=_grid_masses(t, p)")
            + _MASSES.replace("{nodes}", _nodes_lines(ir)))
    return _CLIP_CURVES[True].format(metric="H^1" if ir.sobolev else "L2",
                                     extra=", sobolev=True" if ir.sobolev else "")


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


_SOBOLEV = {  # H^1: the slope part in difference form, sum_k (y_(k+1) - y_k) S_k (finding 4)
    False: {"weights_doc": "(S, m) [(S, m, n) for a vector-valued basis] projection weights "
                           "A: c = sum_s y_s A_s.",
            "weight_rows": "t.size", "store_run": "            out[run] = _run_weights(t[run], p)",
            "sum_rows": "2", "slopes_block": "", "run_weights_end": "    return out\n",
            "weights_note": "",
            "samples_function": "", "samples_call": "values"},
    True: {"weights_doc": "(2S - 1, m) [(2S - 1, m, n) for a vector-valued basis] weights W "
                          "of the samples and\n    their differences: c = sum_s y_s L_s + "
                          "sum_k (y_(k+1) - y_k) S_k (_samples), L_s = <hat_s, e>\n    "
                          "(rows :S), S_k the mean of e' over piece k (rows S:; 0 across a jump).",
           "weight_rows": "t.size + max(t.size - 1, 0)",
           "store_run": "            weights = _run_weights(t[run], p)\n"
                        "            out[run] = weights[:run.size]\n"
                        "            out[t.size + run[:-1]] = weights[run.size:]",
           "sum_rows": "3",
           "slopes_block": '''\
        de = _orthonormal_slopes(x, p).reshape(x.shape + (-1,))
        sums = numpy.concatenate([sums, numpy.matmul(wt[:, None], de)], axis=1)  # int e'
''',
           "run_weights_end": '''\
    means = sums[:, 2] / h[:, None]  # S_k: the mean of e' over piece k
    return numpy.concatenate([out, means.reshape((h.size,) + shape)])
''',
           "weights_note": '''
    H^1: A_s = L_s + S_(s-1) - S_s, equal in exact arithmetic; project contracts the
    samples and their differences with L and S instead (_samples: an error bound
    independent of the sample count).''',
           "samples_function": '''def _samples(y):
    """The samples y (..., S[, n]) followed by their differences y_(k+1) - y_k: what the H^1
    weights (_weights) contract, so each slope weight S_k multiplies a difference and the
    error is gamma ||q'|| ||e'|| whatever the count (docs/clipping.md)."""
    axis = y.ndim - (2 if VALUE_DIM > 1 else 1)
    return numpy.concatenate([y, numpy.diff(y, axis=axis)], axis=axis)


def _fold_differences(weights, samples):
    """A (S, m...) from the H^1 weights (2S - 1, m...): A_s = L_s + S_(s-1) - S_s."""
    out = weights[:samples].copy()
    slopes = weights[samples:]
    out[:-1] -= slopes
    out[1:] += slopes
    return out


''',
           "samples_call": "_samples(values)"},
}


_SLOPES = {
    "legendre": '''def _atom_slopes(x, p):
    """Derivatives of the atoms, L_k' = sqrt((2k+1)/(b-a)) P_k'(u) 2/(b-a), by the recurrence
    P_(k+1)' = u P_k' + (k+1) P_k beside the atoms' own: shape (..., _ATOMS_SIZE)."""
    lo, hi = _domain(p)
    size = _ATOMS_SIZE
''' + LEGENDRE_SLOPES,
    "piecewise": '''def _atom_slopes(x, p):
    """Derivatives of the atoms, L_(j,d)' = sqrt((2d+1)/w) P_d'(u) 2/w on piece j of width w,
    by P_(k+1)' = u P_k' + (k+1) P_k beside the atoms' own: shape (..., _ATOMS_SIZE)."""
    j, u, width = _pieces(x)
    size = PIECE_ORDER
''' + LEGENDRE_SLOPE_RECURRENCE + '''\
    degree = numpy.arange(size).reshape((-1,) + u.ndim * (1,))
    return _scatter(j, out * numpy.sqrt((2.0 * degree + 1.0) / width) * 2.0 / width)''',
    "fourier": '''def _atom_slopes(x, p):
    """Derivatives of the atoms: 0, -k w sin(k w t), k w cos(k w t): shape (..., _ATOMS_SIZE)."""
    lo, hi = _domain(p)
    rate = (2.0 * numpy.pi / (hi - lo)) * numpy.arange(1, _ATOMS_SIZE // 2 + 1)
    angle = x[..., None] * rate
    out = numpy.empty(x.shape + (_ATOMS_SIZE,))
    out[..., 0] = 0.0
    out[..., 1::2] = -rate * numpy.sin(angle)
    out[..., 2::2] = rate * numpy.cos(angle)
    return out''',
}


def _slopes_function(ir):
    """_atom_slopes and _orthonormal_slopes (e' = K . atoms') of an H^1 module."""
    if not ir.sobolev:
        return ""
    if ir.atoms_kind == "expression":
        shape = (ir.atoms_size, ir.value_dim) if ir.vector_basis else (ir.atoms_size,)
        atoms = expression_body("_atom_slopes", "Derivatives of the user's basis functions "
                                "(SymPy's exact derivatives).", ir.atom_slope_codes[0], shape)
    else:
        atoms = _SLOPES[ir.atoms_kind]
    if ir.transform.identity:
        product = "_atom_slopes(x, p)"
    else:
        product = ("numpy.einsum(\"...kr,jk->...jr\", _atom_slopes(x, p), _transform(p))"
                   if ir.vector_basis else "_atom_slopes(x, p) @ _transform(p).T")
    return (f"\n\n\n{atoms}\n\n\ndef _orthonormal_slopes(x, p):\n"
            f'    """Derivatives of the orthonormal basis: e\' = K . atoms\'."""\n'
            f"    return {product}")


_CUT_SUB_PIECES = '''_CUTS = numpy.array([{cuts}])  # exact: {exact}


def _sub_pieces(t, h, p):
    """Blocks of consecutive sub-pieces (piece, start, width) in s in [0, 1] of the linear
    pieces (_numbered): each piece cut at the breakpoints _CUTS inside it, where the basis
    switches, and each part into the sub-pieces of _gauss_rule; and the Gauss order."""
    parts, order = _gauss_rule(h)
    first = numpy.searchsorted(_CUTS, t[:-1], side="right")
    inside = numpy.searchsorted(_CUTS, t[1:], side="left") - first
    for piece, sub in _numbered((inside + 1) * parts, order):
        part, within = numpy.divmod(sub, parts[piece])
        cut = first[piece] + part
        left = numpy.where(part == 0, t[piece], _CUTS[numpy.clip(cut - 1, 0, _CUTS.size - 1)])
        right = numpy.where(part == inside[piece], t[piece + 1],
                            _CUTS[numpy.clip(cut, 0, _CUTS.size - 1)])
        width = (right - left) / h[piece] / parts[piece]
        yield piece, (left - t[piece]) / h[piece] + within * width, width, order'''


def _sub_pieces_function(ir):
    if ir.cuts:
        return _CUT_SUB_PIECES.format(cuts=", ".join(code for code, _ in ir.cuts),
                                      exact=", ".join(exact for _, exact in ir.cuts))
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
    if ir.atoms_kind == "piecewise":
        loop = _LOOP["piecewise"] if ir.piece_order > 2 else ""
        second = _SECOND["piecewise"].format(loop=loop) if ir.piece_order > 1 else ""
        return _PIECEWISE.format(breaks=", ".join(code for code, _ in ir.breaks),
                                 exact=", ".join(exact for _, exact in ir.breaks),
                                 order=ir.piece_order, second=second)
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
    if ir.atoms_kind not in ("legendre", "piecewise"):
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
