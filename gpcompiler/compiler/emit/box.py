"""The code of a module over a box (paper Sec. 3.2): tensor atoms, separable or
cubature projections, Kronecker matrices, and the sections of module_box.py.tmpl."""
import textwrap

from ..analysis.quadrature import gauss_order
from .runtime import clips_fields
from .common import (GRADED_PIECES, GRADED_POSITIONS, LEGENDRE_SLOPES, expression_body, grades_of, inlined_source,
                     matrix_body, values_kind)
from .literals import python_identifier, python_literal, python_text


_CLIP_FIELDS = {
    "L2": '''def _clip_fields(grids, y, kind, bound, p):
    """Each field clipped to the L2 ball of radius B (runtime/fieldclip.py)."""
    return clip_fields(grids, y, kind, bound, VALUE_RANK)''',
    "weighted": '''def _clip_fields(grids, y, kind, bound, p):
    """Each field clipped to the L2(w) ball of radius B (runtime/fieldclip.py, with the
    axes' weighted masses: w = w_1 ... w_k separates)."""
    masses = [_axis_masses(t, axis, kind, p) for axis, t in enumerate(grids)]
    return clip_fields(grids, y, kind, bound, VALUE_RANK, masses)''',
    "sobolev": '''def _clip_fields(grids, y, kind, bound, p):
    """Each field clipped to the H^1 ball of radius B (runtime/fieldclip.py)."""
    return clip_fields(grids, y, kind, bound, VALUE_RANK, sobolev=True)''',
    None: '''def _clip_fields(grids, y, kind, bound, p):
    """The fields as they are: the norm of this metric is not computed on grids, so only
    the coefficients are clipped (docs/clipping.md: the slack is stated with its
    condition, SLACK_CONDITION)."""
    return y''',
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


_GRADED_AXIS_WEIGHTS = '''def _axis_nodes(t, axis, p):
    """(piece, s, x, wt): the Gauss nodes x along one axis, each with its piece, its
    position s in [0, 1] in the piece and its weight times w_i, the factor of the separable
    weight: pieces are cut into sub-pieces of width <= 8/frequency with the Gauss-Legendre order
    whose truncation term (frequency h/2)^(2n)/(2n)! is <= 1e-17, at least 24 where w_i is
    singular at an end of the axis; there pieces are graded by distance to that end as in
    1-D (_graded_pieces), w_i evaluated from the exact distance d to it."""
    h = numpy.diff(t)
    pieces = numpy.maximum(numpy.ceil(h * _FREQUENCY[axis] / 8.0), 1).astype(int)
    order = gauss_order(float(numpy.max(h / pieces)) * _FREQUENCY[axis] / 2.0, _MIN_NODES[axis])
    lo, hi = _domain(p)[axis]
    pieces = _graded_counts(t, h, pieces, (lo, hi), _GRADES[axis])
    piece = numpy.repeat(numpy.arange(h.size), pieces)
    sub = numpy.arange(piece.size) - (numpy.cumsum(pieces) - pieces)[piece]
    piece, start, width, toward = _graded_pieces(t, h, pieces, piece, sub, (lo, hi),
                                                 _GRADES[axis])
    xi, w = _leggauss(max(order, 24) if any(_GRADES[axis]) else order)
''' + GRADED_POSITIONS + '''\
    d = numpy.maximum(numpy.where(right, hi - t[piece + 1][:, None], t[piece][:, None] - lo)
                      + u * hs, 2.0 ** -1022)  # an underflowed distance is not 0
    wt = (h[piece] * width)[:, None] * w / 2.0 * _WEIGHTS[axis](x, d, toward, p)
    return piece, s, x, wt


def _axis_weights(t, axis, kind, p):
    """(S, n) weights int h_s w_i L_a dx_i along one axis, h_s the hat function of node s
    ("linear") or the indicator of cell s ("cells"), w_i the factor of the separable weight,
    by the Gauss rules of _axis_nodes."""
    piece, s, x, wt = _axis_nodes(t, axis, p)
    e = _axis_atoms(x, axis, p)
    out = numpy.zeros((t.size - (kind == "cells"), e.shape[-1]))
    if kind == "cells":
        numpy.add.at(out, piece, numpy.einsum("pq,pqa->pa", wt, e))
    else:
        numpy.add.at(out, piece, numpy.einsum("pq,pqa->pa", wt * (1.0 - s), e))
        numpy.add.at(out, piece + 1, numpy.einsum("pq,pqa->pa", wt * s, e))
    return out, None


def _axis_masses(t, axis, kind, p):
    """Per piece of one axis: int w_i hat_a^2, int w_i hat_a hat_b, int w_i hat_b^2
    ("linear", (3, S - 1)), or int w_i over the cell ("cells", (1, S - 1)), by the Gauss
    rules of _axis_nodes: the weighted mass matrix of the field clip (runtime/fieldclip.py)."""
    piece, s, _, wt = _axis_nodes(t, axis, p)
    parts = [wt] if kind == "cells" else [wt * (1.0 - s) ** 2, wt * s * (1.0 - s), wt * s * s]
    out = numpy.zeros((len(parts), t.size - 1))
    for row, part in zip(out, parts):
        numpy.add.at(row, piece, part.sum(axis=-1))
    return out'''


_QUADRATURE = {
    "axis_weights": '''def _axis_nodes(t, axis, p):
    """(piece, s, nodes, wt): the Gauss nodes along one axis, each with its piece, its
    position s in [0, 1] in the piece and its weight: pieces are cut into sub-pieces of
    width <= 8/frequency, with the Gauss-Legendre order whose truncation term
    (frequency h/2)^(2n)/(2n)! is <= 1e-17."""
    h = numpy.diff(t)
    pieces = numpy.maximum(numpy.ceil(h * _FREQUENCY[axis] / 8.0), 1).astype(int)
    order = gauss_order(float(numpy.max(h / pieces)) * _FREQUENCY[axis] / 2.0, _MIN_NODES[axis])
    xi, w = _leggauss(order)
    piece = numpy.repeat(numpy.arange(h.size), pieces)
    sub = numpy.arange(piece.size) - (numpy.cumsum(pieces) - pieces)[piece]
    s = (sub[:, None] + (xi + 1.0) / 2.0) / pieces[piece][:, None]
    nodes = t[piece][:, None] + s * h[piece][:, None]
    wt = (h[piece] / pieces[piece])[:, None] * w / 2.0
    return piece, s, nodes, wt


def _axis_weights(t, axis, kind, p):
    """(S, N) weights of the N Gauss nodes along one axis (_axis_nodes), and the nodes: a
    node's weight goes to the hat functions of the piece's two ends ("linear") or to its
    cell ("cells")."""
    piece, s, nodes, wt = _axis_nodes(t, axis, p)
    columns = numpy.arange(nodes.size).reshape(nodes.shape)
    out = numpy.zeros((t.size - (kind == "cells"), nodes.size))
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


_DIFFERENCES = '''


def _samples(y, axis):
    """The values y followed, along ``axis``, by their differences y_(s+1) - y_s: what the
    H^1 weights of that axis contract (_axis_weights)."""
    return numpy.concatenate([y, numpy.diff(y, axis=axis)], axis=axis)


def _folded(weights):
    """(S, 2n) weights of the nodal values from the H^1 weights (2S - 1, 2n): the
    difference rows folded onto the nodes (A_s += S_(s-1) - S_s), equal in exact
    arithmetic (projection_weights; project_grid contracts the differences instead)."""
    size = (weights.shape[0] + 1) // 2
    out = weights[:size].copy()
    out[:-1] -= weights[size:]
    out[1:] += weights[size:]
    return out'''


_SOBOLEV = {
    "axis_weights": _SEPARABLE["axis_weights"].replace("def _axis_weights(", "def _value_weights(")
    + '''


def _axis_weights(t, axis, kind, p):
    """(2S - 1, 2n) H^1 weights along one axis, for the nodal values followed by their
    differences y_(s+1) - y_s (_samples): _value_weights in the value rows and columns; in
    the difference rows and derivative columns the mean of L_a' over each piece (Gauss-
    Legendre of the exact derivative), so int h_s' L_a' contracts differences, with an
    error bound independent of the grid (docs/clipping.md). The piecewise-constant field of
    cells has no weak gradient: no H^1 projection."""
    if kind == "cells":
        raise ValueError("kind='cells' has no H^1 projection (a piecewise-constant field "
                         "jumps across cells, so it has no weak gradient); use kind='linear'")
    value, _ = _value_weights(t, axis, kind, p)
    xi, w = _leggauss(_EXACT_NODES[axis])
    h = numpy.diff(t)[:, None]
    means = numpy.einsum("q,pqa->pa", w / 2.0,
                         _axis_slopes(t[:-1, None] + h * (xi + 1.0) / 2.0, axis, p))
    size = value.shape[1]
    out = numpy.zeros((2 * t.size - 1, 2 * size))
    out[:t.size, :size] = value
    out[t.size:, size:] = means
    return out, None


def _axis_slopes(x, axis, p):
    """Derivatives L_n'(x_i) = sqrt((2n+1)/(b_i-a_i)) P_n'(u_i) 2/(b_i-a_i), by the recurrence
    P_(n+1)' = u P_n' + (n+1) P_n beside the atoms' own: shape x.shape + (n,)."""
    lo, hi = _domain(p)[axis]
    size = _AXIS_SIZES[axis]
''' + LEGENDRE_SLOPES + "\n",
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
    """(2S - 1, 2N) H^1 weights along one axis for the nodal values followed by their
    differences y_(s+1) - y_s (_samples), and the nodes (the N Gauss nodes, for the values
    and for the derivative): _value_weights in the value rows and columns; in the difference
    rows and derivative columns each node's Gauss weight over its piece's width h_q, so
    sum_n (w_n/h_q) d_i g(x_n) is the mean of d_i g over the piece and int h_s' d_i g
    contracts differences, with an error bound independent of the grid (docs/clipping.md).
    The piecewise-constant field of cells has no weak gradient: no H^1 projection."""
    if kind == "cells":
        raise ValueError("kind='cells' has no H^1 projection (a piecewise-constant field "
                         "jumps across cells, so it has no weak gradient); use kind='linear'")
    value, nodes = _value_weights(t, axis, kind, p)
    piece, _, _, wt = _axis_nodes(t, axis, p)
    means = numpy.zeros((t.size - 1, nodes.size))
    columns = numpy.arange(nodes.size).reshape(wt.shape)
    means[piece[:, None], columns] = wt / numpy.diff(t)[piece][:, None]
    out = numpy.zeros((2 * t.size - 1, 2 * nodes.size))
    out[:t.size, :nodes.size] = value
    out[t.size:, nodes.size:] = means
    return out, (nodes, nodes)''',
    "node_atoms": _QUADRATURE["node_atoms"].replace("def _node_atoms(", "def _grid_atoms(")
    .replace("def _to_atoms(", "def _block_to_atoms(").replace(
        "atoms = _node_atoms(", "atoms = _grid_atoms(") + '''


def _grid_partials(nodes, axis, p):
    """The atoms' partial derivatives along x_axis on the tensor grid of the nodes."""
    return _ATOM_PARTIALS[axis](numpy.stack(numpy.meshgrid(*nodes, indexing="ij"), axis=-1), p)


def _block_partials(y, nodes, axis, p):
    """_block_to_atoms with the atoms' partial derivatives along x_axis (the Gauss nodes
    (..., N_1, ..., N_k), in blocks of the first axis so the atoms on the node grid stay
    within _CHUNK values)."""
    step = max(1, _CHUNK // (math.prod(n.size for n in nodes[1:]) * _ATOMS_SIZE))
    out = 0.0
    for start in range(0, nodes[0].size, step):
        block = (Ellipsis, slice(start, start + step)) + (slice(None),) * (DIMENSION - 1)
        atoms = _grid_partials([nodes[0][start:start + step]] + list(nodes[1:]), axis, p)
        out = out + numpy.tensordot(y[block], atoms, axes=DIMENSION)
    return out


def _h1_blocks(nodes):
    """(block, nodes, axis) of <f, e>_H1: the values at the Gauss nodes of every axis (axis
    None), then for each axis i the mean slope along x_i (its derivative columns) with the
    values along the others (at the same Gauss nodes)."""
    gauss = [g for g, _ in nodes]
    yield tuple(slice(0, g.size) for g in gauss), gauss, None
    for axis, g in enumerate(gauss):
        yield (tuple(slice(g.size, None) if i == axis else slice(0, n.size)
                     for i, n in enumerate(gauss)), gauss, axis)


def _node_atoms(nodes, p):
    """The atoms, and their partial derivatives, on each H^1 block of the node grids
    (2 N_1, ..., 2 N_k, A); zero where no block is."""
    out = numpy.zeros(tuple(2 * g.size for g, _ in nodes) + (_ATOMS_SIZE,))
    for block, grid, axis in _h1_blocks(nodes):
        out[block] = _grid_atoms(grid, p) if axis is None else _grid_partials(grid, axis, p)
    return out


def _to_atoms(y, nodes, p):
    """<f, psi_a>_H1 = int f psi_a + sum_i int d_i f d_i psi_a: each block of the weighted
    values (..., 2 N_1, ..., 2 N_k) contracted with the atoms (their partial derivatives
    along x_i) at its nodes."""
    return sum(_block_to_atoms(y[(Ellipsis,) + block], grid, p) if axis is None
               else _block_partials(y[(Ellipsis,) + block], grid, axis, p)
               for block, grid, axis in _h1_blocks(nodes))''',
    "integrals_doc": "The H^1 inner products <f, e_j> + sum_i <d_i f, d_i e_j>\n    "
                     "use tensor Gauss rules per (sub-)cell, accurate to about 1e-16 "
                     "relative, for the\n    values and for the mean slopes of e_j "
                     "(exact derivatives); kind=\"linear\" only.",
}


def box_placeholders(ir):
    """Placeholders of a module over a box (module_box.py.tmpl, paper Sec. 3.2)."""
    box = ir.box
    separable = box.exact_nodes is not None
    differences = ir.sobolev
    projection = ({True: _SOBOLEV, False: _H1_QUADRATURE} if ir.sobolev else
                  {True: _SEPARABLE, False: _QUADRATURE})[separable]
    if box.weight_factors:
        projection = {**_SEPARABLE, "axis_weights": GRADED_PIECES + "\n\n\n"
                      + _GRADED_AXIS_WEIGHTS, "integrals_doc": _GRADED_DOC}
    elif ir.weight_code is not None:
        weighted = _WEIGHTED_NODE_ATOMS.replace("[..., None]", "[..., None, None]"
                                                if ir.vector_basis else "[..., None]")
        projection = {**projection, "node_atoms": projection["node_atoms"].replace(
            projection["node_atoms"].split("\n\n\n")[0], weighted)}
    if ir.vector_basis:
        projection = {**projection, "node_atoms": _vector_to_atoms(projection["node_atoms"])}
    return {
        **projection, **_VALUES_BOX[values_kind(ir)],
        "axis_weights": projection["axis_weights"] + (_DIFFERENCES if ir.sobolev else ""),
        "dimension": str(len(box.variables)), "variables_repr": python_literal(box.variables),
        "domain_exact": ", ".join(python_literal(tuple(e for _, e in pair))
                                  for pair in ir.domain),
        "box_domain": "(" + ", ".join(f"({lo[0]}, {hi[0]})" for lo, hi in ir.domain) + ",)",
        "quadrature_constants": _box_constants(box, ir),
        "gram_body": _box_matrix_body(ir.gram, box.factors, 1, "G", _KRON),
        "cholesky_body": _box_matrix_body(ir.cholesky, box.factors, 2, "R"),
        "atoms_function": _BOX_ATOMS if ir.atoms_kind == "legendre" else expression_body(
            "_atoms", "The user's basis functions, evaluated as written.", ir.atom_codes,
            (ir.atoms_size, ir.value_dim) if ir.vector_basis else (ir.atoms_size,),
            "x.shape[:-1]"),
        "basis_function": (_box_basis_function(ir) + _box_weight_function(ir)
                           + _partials_functions(ir)),
        "clip_fields": _CLIP_FIELDS[ir.metric if clips_fields(ir) else None].replace(
            "VALUE_RANK", "0" if ir.value_dim == 1 else "1"),
        "axis_values": "_samples(y, batch)" if differences else "y",
        "public_axis_weights": "_folded(w)" if differences else "w",
        "from_atoms": ("coefficients" if ir.transform.identity
                       else "coefficients @ _transform(p).T"),
    }


def _partials_functions(ir):
    """One function per variable for the partial derivatives of expression atoms (H^1:
    SymPy's exact derivatives), and the tuple _ATOM_PARTIALS of them."""
    if not (ir.sobolev and ir.atoms_kind == "expression"):
        return ""
    shape = (ir.atoms_size, ir.value_dim) if ir.vector_basis else (ir.atoms_size,)
    parts = [expression_body(f"_atom_partials_{name}", f"d/d{name} of the user's basis "
                             "functions (SymPy's exact derivatives).", codes, shape,
                             "x.shape[:-1]")
             for name, codes in zip(ir.box.variables, ir.atom_slope_codes)]
    return ("\n\n\n" + "\n\n\n".join(parts) + "\n\n\n_ATOM_PARTIALS = ("
            + ", ".join(f"_atom_partials_{name}" for name in ir.box.variables)
            + ")  # per variable")


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
    parts, names = [], [python_identifier(name) for name in box.variables]
    for name, (code, plain, exact, singular) in zip(names, box.weight_factors):
        doc = python_text(f"w_{name} = {exact}, the factor in {name} of the separable weight, "
                          f"at nodes x (values of {name})" + (
                              "; at nodes graded toward a singular end, from the exact "
                              "distance d to it." if singular else
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
        f"_weight_{name}" for name in names) + ")  # w_i per axis"


def _box_constants(box, ir):
    """The atom multi-indices and exact Gauss orders (Legendre atoms; for H^1 also the
    value and derivative indices), and the frequency bound and smallest order per axis
    when the integrands are not polynomials (the module's gauss_order picks the order)."""
    lines = []
    if ir.atoms_kind == "legendre":
        lines.append(f"_AXIS_SIZES = {box.axis_sizes}  # Legendre atoms per variable")
        grid = f"numpy.indices(_AXIS_SIZES).reshape({len(box.variables)}, -1).T"
        if box.total_degree is None:
            lines.append(f"_INDEX = {grid}  # atom multi-indices (last variable fastest)")
        else:
            lines += [f"_GRID_INDEX = {grid}  # tensor grid, last variable fastest",
                      f"_INDEX = _GRID_INDEX[_GRID_INDEX.sum(axis=1) <= {box.total_degree}]"
                      "  # atom multi-indices: total degree"]
    if ir.sobolev and ir.atoms_kind == "legendre":
        lines.append("_H1_INDEX = [tuple(_INDEX.T)] + [  # value, then the derivative along "
                     "each axis\n    tuple(_INDEX.T + numpy.diag(_AXIS_SIZES)[axis][:, None]) "
                     "for axis in range(DIMENSION)]")
    if box.exact_nodes is not None:
        lines.insert(0, f"_EXACT_NODES = {box.exact_nodes}  # Gauss-Legendre nodes per axis "
                        "and cell (exact)")
        return "\n".join(lines)
    grades = ([f"_GRADES = {tuple(grades_of(s) for *_, s in box.weight_factors)}  # per variable "
               "and end: geometric cuts (0: w_i regular there)"] if box.weight_factors else [])
    return "\n".join([f"_FREQUENCY = {box.frequency}  # per variable: sub-pieces <= 8/frequency",
                      f"_MIN_NODES = {box.min_nodes}"] + grades + [
                      "_CHUNK = 1 << 15  # atom values per block of Gauss nodes"] + lines
                     + ["\n\n" + inlined_source(gauss_order)])


def _box_matrix_body(matrix, factors, position, symbol, helper=""):
    """A matrix, or (tensor products) the Kronecker product of its 1-D factors."""
    if not factors:
        return matrix_body(matrix)
    name = factors[0][position].name.rsplit("_", 1)[0]
    parts = ["    return _kron(" + ", ".join(f"_{name}_{python_identifier(t)}(p)"
                                       for t, *_ in factors) + ")"]
    for factor in factors:
        variable = python_identifier(factor[0])
        parts.append(f'def _{name}_{variable}(p):\n    """{symbol}_{variable}: the 1-D factor '
                     f'of {variable}."""\n{matrix_body(factor[position])}')
    return "\n\n\n".join(parts + ([helper] if helper else []))


def _box_basis_function(ir):
    if ir.atoms_kind == "expression":
        return ('def _user_basis(x, p):\n    """The user basis: here the atoms themselves."""\n'
                "    return _atoms(x, p)")
    if ir.family in _BOX_FAMILY_BASIS:
        doc, body = _BOX_FAMILY_BASIS[ir.family]
        return f'def _user_basis(x, p):\n    """{doc}"""\n    {body}'
    return expression_body("_user_basis", "The user's basis functions, evaluated as written.",
                            ir.basis_codes, (ir.basis_size,), "x.shape[:-1]")
