"""What the emitters of curves and of boxes share: templates and their marked
sections, the placeholders of both, and printers of matrices, expressions and strings."""
import inspect
import math
import re
import string
import textwrap
from importlib import resources

import numpy

from ...runtime import rounding
from .literals import python_literal, python_text
from .runtime import runtime_parts, runtime_source


def entry_index(entry):
    return f"({entry.row}, {entry.col})" if entry.col is not None else f"{entry.row}"


SECTION = re.compile(r"^#@box (\w+)\n(.*?)^#@end\n", re.M | re.S)


def read_template(name):
    return resources.files("gpcompiler.compiler.emit").joinpath(f"templates/{name}").read_text()


def fill_template(template_name, values, sections=None):
    """Substitute ``values`` into a template; its marked sections are kept, or replaced by
    ``sections`` (name -> text) when given."""
    text = SECTION.sub(lambda match: (sections or {}).get(match[1], match[2]),
                        read_template(template_name))
    template = string.Template(text)
    expected = {name for _, _, name, _ in template.pattern.findall(template.template) if name}
    expected |= {name for _, name, _, _ in template.pattern.findall(template.template) if name}
    if expected != set(values):
        raise AssertionError(f"template placeholders {sorted(expected ^ set(values))} "
                             "do not match the IR")
    return template.substitute(values)


def provenance(ir):
    """The placeholders of a module's header, curve, box or CDF table alike: the spec's
    title (escaped text, wrapped) and path in the docstring; its name, units, path and
    sha256 and the tool's version as literals (docs/threat-model.md, "A spec is data")."""
    return {
        "title": "\n".join(textwrap.wrap(python_text(ir.title), 96)),
        "tool_version": python_text(ir.tool_version), "spec_path": python_text(ir.spec_path),
        "spec_sha256": python_text(ir.spec_sha256), "name_repr": python_literal(ir.name),
        "units_repr": python_literal(ir.units),
        "tool_version_repr": python_literal(ir.tool_version),
        "spec_path_repr": python_literal(ir.spec_path),
        "spec_sha256_repr": python_literal(ir.spec_sha256),
    }


def common_placeholders(ir):
    """Placeholders of the sections shared by curves and boxes."""
    return {
        **provenance(ir),
        "summary": "\n".join(textwrap.fill(python_text(line), 99, subsequent_indent="    ")
                              for line in ir.summary),
        "title_repr": python_literal(ir.title, 99 - len("TITLE = ")),
        "basis_size": str(ir.basis_size), "value_dim": str(ir.value_dim),
        "coef_dim": str(ir.coef_dim),
        "coef_shape": python_literal(ir.coef_shape), "vector_basis": str(ir.vector_basis),
        "parameters": ", ".join(f"{python_literal(n)}: {v}" for n, v, _ in ir.parameters),
        "parameters_fixed": str(ir.parameters_fixed),
        "metric_repr": python_literal(ir.metric),
        "polynomial_degree": python_literal(ir.polynomial_degree),
        "gram_method_repr": python_literal(ir.gram_method, 99 - len("GRAM_METHOD = ")),
        "certificate_repr": python_literal(ir.certificate, 99 - len("CERTIFICATE = ")),
        "condition_number": ir.condition_number,
        "atoms_size": str(ir.atoms_size), "cholesky_doc": python_text(ir.cholesky_doc),
        "orthonormal_function": _orthonormal_function(ir),
        "runtime": runtime_source(*runtime_parts(ir)),
        "rounding": inlined_source(rounding.ceil_float, rounding.ceil_sqrt),
        "fixed_parameter_check": _FIXED_PARAMETER_CHECK if ir.parameters_fixed else "",
        "value_axes": " + (VALUE_DIM,)" if ir.value_dim > 1 else "",
        "eta": ir.eta, "bound": ir.bound,
        "slack_condition": python_literal(ir.slack_condition, 99 - len("SLACK_CONDITION = ")),
        "condition_doc": (",\n    and when the slack holds (SLACK_CONDITION)" if ir.slack_condition
                          else ""),
        "condition_fact": ',\n            "slack_condition": SLACK_CONDITION' if ir.slack_condition
                          else "",
        "default_bound_body": _DEFAULT_BOUND[ir.bound == "None"],
    }


# The derivatives L_n' of the normalized Legendre atoms L_0..L_(size-1) on [lo, hi] at x,
# by P_(n+1)' = u P_n' + (n+1) P_n beside the atoms' own recurrence (emitted code: 1-D and
# box H^1 modules each bind lo, hi and size first).
LEGENDRE_SLOPE_RECURRENCE = """\
    value, out = numpy.ones((size,) + u.shape), numpy.zeros((size,) + u.shape)
    if size > 1:
        value[1], out[1] = u, 1.0
    for n in range(1, size - 1):
        value[n + 1] = ((2 * n + 1) * u * value[n] - n * value[n - 1]) / (n + 1)
        out[n + 1] = u * out[n] + (n + 1) * value[n]
"""


LEGENDRE_SLOPES = """\
    u = (2.0 * x - lo - hi) / (hi - lo)
""" + LEGENDRE_SLOPE_RECURRENCE + """\
    scale = numpy.sqrt((2.0 * numpy.arange(size) + 1.0) / (hi - lo)) * 2.0 / (hi - lo)
    out *= scale.reshape((-1,) + u.ndim * (1,))
    return numpy.moveaxis(out, 0, -1)"""


_DEFAULT_BOUND = {
    False: '''    """The spec's [privacy] bound."""
    return BOUND''',
    True: '''    """The largest power of two B with 2 ETA B <= SLACK_FRACTION x max(scale, 1) and
    2 ETA B <= scale (exact), at most 2^50 lattice steps: below the noise scale 1 (epsilon
    above 1) B stops shrinking while the slack stays below the noise, so a larger budget
    never clips more until the lattice caps B (docs/clipping.md, "The default bound");
    remembered for 1024 scales."""
    if scale in _BOUNDS:
        return _BOUNDS[scale]
    exact = Fraction(scale)
    target = min(Fraction(SLACK_FRACTION) * max(exact, 1), exact) / (2 * Fraction(ETA))
    radius = math.ldexp(1.0, math.frexp(float(target))[1])
    # at most two halvings: float(target) is within half an ulp of target
    while Fraction(radius) > target:
        radius /= 2
    radius = min(radius, math.ldexp(lattice(scale), 50))  # _bound's limit
    radius = max(radius, _BOUND_FLOOR)  # no underflow in the projection (docs/clipping.md)
    if len(_BOUNDS) < 1024:
        _BOUNDS[scale] = radius
    return radius''',
}


_FIXED_PARAMETER_CHECK = """\
        if value != PARAMETERS[key]:
            raise ValueError(f"the Gram matrix or the quadrature holds at {key}="
                             f"{PARAMETERS[key]} only (see GRAM_METHOD and docs/reference/"
                             "spec.md): recompile the spec with another default")
"""


def values_kind(ir):
    """How values and coefficients are shaped: "scalar" (c: (m,)), "vector" (n-vector values
    of scalar basis functions, c: (m, n)) or "vector_basis" (vector-valued basis functions,
    c: (m,)). Each generated module carries only its kind's code."""
    if ir.vector_basis:
        return "vector_basis"
    return "vector" if ir.value_dim > 1 else "scalar"


GRADED_POSITIONS = """\
    u = start[:, None] + width[:, None] * (xi + 1.0) / 2.0
    hs = h[piece][:, None]
    right = (toward < 0)[:, None]
    s = numpy.where(right, 1.0 - u, u)
    x = numpy.where(right, t[piece + 1][:, None] - u * hs, t[piece][:, None] + u * hs)
"""


GRADED_PIECES = '''def _graded_pieces(t, h, pieces, piece, sub, ends, grades):
    """Sub-pieces (piece, start, width, toward) of the parts numbered ``sub`` of the linear
    pieces ``piece`` (each piece cut into ``pieces`` equal parts: _graded_counts), graded
    by distance to the singular ends (lo, hi) = ``ends`` of the weight (w ~ d^alpha at
    distance d; ``grades``: geometric cuts G per end, 0 where the weight is regular), at
    most G + 1 per part. A part nearer a singular end than the other end is measured from
    that end (toward = +1 lo, -1 hi: start and width in [0, 1] from the piece's end on that
    side); if its own width h is at least the distance d of its near end, it is cut at the
    distances (d + h) 2^-k from the singular end, k = 1, 2, ..., that exceed d, at most G
    of them: every sub-piece but the last then lies at least its width from the
    singularity, and the last (from d, when G cuts are made) holds a share
    <= 2^-G(1 + alpha) <= 1e-17. The cuts depend on distances only, never on a node's
    index: the accuracy is the same on every grid (docs/design.md, "Singular weights")."""
    lo, hi = ends
    count = pieces[piece]
    near = (t[piece] - lo + sub / count * h[piece],
            hi - t[piece + 1] + (count - 1 - sub) / count * h[piece])
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
    return piece[segment], start, width, toward[segment]


def _graded_counts(t, h, pieces, ends, grades):
    """The number of equal parts of each piece for _graded_pieces: ``pieces``, two at least
    where a piece is within its width of both singular ends (lo, hi) = ``ends``."""
    lo, hi = ends
    both = (grades[0] > 0) & (grades[1] > 0) & (t[:-1] - lo < h) & (hi - t[1:] < h)
    return numpy.where(both, numpy.maximum(pieces, 2), pieces)'''


def grade_levels(alpha):
    """Geometric cuts G toward an end where w ~ d^alpha: the share 2^-G(1 + alpha) of a
    sub-piece's integral left to its last cut, next to the end, is <= 1e-17."""
    return math.ceil(17 * math.log2(10) / (1 + alpha))


def grades_of(singular):
    grades = [0, 0]
    for end, alpha, _ in singular:
        grades[end] = grade_levels(alpha)
    return tuple(grades)


def _orthonormal_function(ir):
    """_orthonormal (and _transform when K is not the identity)."""
    if ir.transform.identity:
        return ('def _orthonormal(x, p):\n    """The atoms are the orthonormal basis e (K = I)."""\n'
                "    return _atoms(x, p)")
    product = ("numpy.einsum(\"...kr,jk->...jr\", _atoms(x, p), _transform(p))"
               if ir.vector_basis else "_atoms(x, p) @ _transform(p).T")
    return ("def _transform(p):\n"
            '    """K with e = K . atoms: the orthonormal basis e = R^(-1) phi."""\n'
            f"{matrix_body(ir.transform)}\n\n\n"
            f'def _orthonormal(x, p):\n    """Orthonormal basis e = K . atoms."""\n'
            f"    return {product}")


def inlined_source(*objects):
    """Runtime helpers copied verbatim from the package, so a module needs only NumPy."""
    return "\n\n\n".join(inspect.getsource(obj).rstrip() for obj in objects)


def matrix_body(matrix):
    if matrix.identity:
        return f"    return numpy.eye({matrix.shape[0]})"
    if matrix.pattern:
        return _packed_body(matrix)
    lines = [f"    return _matrix({matrix.shape}, ("]
    for entry in matrix.entries:
        exact = python_text(entry.exact)
        line = f"        ({entry.row}, {entry.col}, {entry.code}),  # {exact}"
        if len(line) > 99:
            lines += [f"        # {part}" for part in textwrap.wrap(exact, 89)]
            line = f"        ({entry.row}, {entry.col}, {entry.code}),"
        lines.append(line)
    lines.append(f"    ){', symmetric=True' if matrix.symmetric else ''})")
    return "\n".join(lines)


def _packed_body(matrix):
    """A large constant matrix: float64 values in one literal, exact entries by formula."""
    rows, cols = matrix.shape
    lines = [f"    # {line}" for line in textwrap.wrap(python_text(
        f"Exact entries: {matrix.formula or 'see gpcompiler explain'}. Below: float64 "
        f"values rounded once from them, {matrix.pattern}"
        + (" (row by row)." if matrix.pattern != "diagonal" else ".")), 90)]
    values = "\n        ".join(_fill_words(matrix.entries, 91))
    lines += ["    values = numpy.array((", f"        {values}", "    ))"]
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


def _fill_words(codes, width):
    """The codes, each followed by a comma, joined by single spaces into lines of at most
    ``width`` characters, greedily: textwrap.wrap's lines for ASCII codes without commas,
    whitespace or hyphens between letters (float literals), each line's end by bisection."""
    if not codes:
        return []
    text = numpy.frombuffer(bytearray(", ".join(codes).encode("ascii") + b","), numpy.uint8)
    ends = numpy.zeros(len(codes) + 1, dtype=numpy.int64)      # code i starts at ends[i]
    ends[1:] = numpy.flatnonzero(text == ord(",")) + 2
    # codes[start:end] take ends[end] - ends[start] - 1 columns: the longest line from start
    after = numpy.searchsorted(ends, ends + width + 1, side="right") - 1
    after = numpy.maximum(after, numpy.arange(1, len(ends) + 1)).tolist()
    breaks, start, size = [], after[0], len(codes)
    while start < size:
        breaks.append(start)
        start = after[start]
    text[ends[breaks] - 1] = ord("\n")                         # the space after the comma
    return text.tobytes().decode("ascii").split("\n")


def expression_body(name, doc, codes, shape, points="numpy.shape(x)"):
    lines = [f"def {name}(x, p):", f'    """{doc}"""',
             f"    out = numpy.empty({points} + {shape})"]
    for j, components in enumerate(codes):
        for r, code in enumerate(components):
            index = f"{j}, {r}" if len(shape) == 2 else f"{j}"
            lines.append(f"    out[..., {index}] = {code}")
    lines.append("    return out")
    return "\n".join(lines)
