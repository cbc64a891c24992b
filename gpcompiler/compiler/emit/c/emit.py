"""CModuleIR -> the text of NAME.h and NAME.c (docs/reference/c.md). Byte-reproducible:
no timestamps or absolute paths; every constant a hexadecimal float (printer.hex_float) of
the float64 nearest its exact value, which is written beside it; spec strings only through
literals.c_string and literals.c_comment_text."""
import hashlib
import json
import re
import string
import textwrap
from importlib import resources

from .... import __version__
from ..common import values_kind
from ..literals import c_comment_text, c_identifier, c_string
from .printer import hex_float

RUNTIME_C = "runtime/c/gp_runtime.c"
RUNTIME_H = "runtime/c/gp_runtime.h"
RUNTIME_REPR = "runtime/c/gp_repr.c"      # Python's repr of a float
RUNTIME_DEVICE = "runtime/c/gp_device.c"  # the device ledger (POSIX file I/O)


def emit_c(cir):
    """{"NAME.h", "NAME.c", "NAME_device.c": text} of a CModuleIR (lowering.lower_c)."""
    name = c_identifier(cir.module.name)
    values = _placeholders(cir, name)
    return {f"{name}.h": _fill("module.h.tmpl", values),
            f"{name}.c": _fill("module.c.tmpl", values),
            f"{name}_device.c": _fill("device.c.tmpl", {**values, **_device(cir)})}


def runtime_text(path):
    """The text of a file of gpcompiler/runtime/c (``path`` relative to the package)."""
    return resources.files("gpcompiler").joinpath(path).read_text()


def inlined(path):
    """A runtime file inlined verbatim, marked with its path, gpcompiler's version and the
    sha256 of its text (as runtime.runtime_source marks the Python runtime)."""
    text = runtime_text(path).strip("\n")
    digest = hashlib.sha256(text.encode()).hexdigest()
    return (f"/* ---- {path} from gpcompiler {__version__}, inlined verbatim\n"
            f" * ---- sha256 {digest} */\n{text}\n/* ---- end of {path} */")


def _fill(template, values):
    text = resources.files("gpcompiler.compiler.emit.c").joinpath(
        f"templates/{template}").read_text()
    pattern = string.Template(text)
    expected = {m[1] or m[2] for m in pattern.pattern.findall(text) if m[1] or m[2]}
    return pattern.substitute({k: v for k, v in values.items() if k in expected})


def _comment_lines(text, width=92, prefix=" * "):
    return "\n".join(prefix + line for line in textwrap.wrap(c_comment_text(text), width)) \
        or prefix.rstrip()


def shared_placeholders(cir, number):
    """The placeholders the C and JS templates share: the spec's text in block comments
    (c_comment_text: both languages' comments end at "*/"), the shapes, and the numbers as
    ``number`` prints a float64 (printer.hex_float; js/printer.js_number)."""
    ir = cir.module
    lo, hi = cir.domain
    defaults = ", ".join(f"{n} = {v}" for n, v in cir.defaults)
    return {
        "title": "\n * ".join(textwrap.wrap(c_comment_text(ir.title), 92)),
        "tool_version": c_comment_text(ir.tool_version),
        "spec_path": c_comment_text(ir.spec_path), "spec_sha256": c_comment_text(ir.spec_sha256),
        "summary": "\n".join(_comment_lines(line) for line in ir.summary),
        "basis_size": str(ir.basis_size), "value_dim": str(ir.value_dim),
        "coef_dim": str(ir.coef_dim),
        "coef_doc": {"scalar": "m", "vector": "m x n, in C order (c[j n + r])",
                     "vector_basis": "m, one per vector-valued basis function"}[values_kind(ir)],
        "defaults_doc": f" ({c_comment_text(defaults)})" if defaults else "",
        "default_bound_doc": (f"the spec's [privacy] bound, {cir.bound!r}" if cir.bound is not None
                              else "the largest power of two B with\n * 2 ETA B <= 1e-6 scale"),
        "atoms_size": str(ir.atoms_size),
        "width": str(ir.basis_size * (ir.value_dim if ir.vector_basis else 1)),
        "width_doc": ": m n (e_j, r at j n + r)" if ir.vector_basis else ": m",
        "width_doc_short": "m n" if ir.vector_basis else "m",
        "domain_lo": number(lo.value), "domain_hi": number(hi.value),
        "domain_lo_exact": c_comment_text(lo.exact), "domain_hi_exact": c_comment_text(hi.exact),
        "curve_lo": number(cir.curve[0].value), "curve_hi": number(cir.curve[1].value),
        "curve_doc": ("; curves live on [{}, {}]".format(
            *(c_comment_text(c.exact) for c in cir.curve)) if ir.curve_interval else ""),
        "gram": _matrix_comment("The Gram matrix of the user basis, G_jl = <phi_j, phi_l>",
                                "G", cir.gram, number),
        "cholesky": _matrix_comment(c_comment_text(ir.cholesky_doc), "R", cir.cholesky, number),
        "eta": number(cir.eta), "eta_exact": repr(cir.eta),
    }


def unit_texts(ir):
    """The spec's domain and value units (None: not declared)."""
    return ir.units["domain"][0] if ir.units["domain"] else None, ir.units["values"]


def _placeholders(cir, name):
    ir = cir.module
    kind = values_kind(ir)
    domain_unit, value_unit = unit_texts(ir)
    return {
        **shared_placeholders(cir, hex_float),
        "name": name, "guard": f"GPCOMPILER_{name.upper()}_H",
        "name_literal": c_string(ir.name), "title_literal": c_string(ir.title, 92),
        "spec_path_literal": c_string(ir.spec_path, 92),
        "spec_sha256_literal": c_string(ir.spec_sha256, 92),
        "metric_literal": c_string(ir.metric_identity["name"]),
        "metric_sha256_literal": c_string(ir.metric_identity["sha256"], 92),
        "ledger_label_literal": c_string(f"{ir.name}: privatize (C target)"),
        "tool_version_literal": c_string(ir.tool_version),
        "domain_units_literal": "NULL" if domain_unit is None else c_string(domain_unit, 40),
        "value_units_literal": "NULL" if value_unit is None else c_string(value_unit, 40),
        "stack_kb": str(_stack_kb(cir)),
        "runtime_header": inlined(RUNTIME_H), "runtime": _runtime_c(),
        "atoms": _ATOMS[ir.atoms_kind](cir),
        "orthonormal": _orthonormal(cir),
        "piece_levels": (f"#define PIECE_LEVELS {cir.piece_levels}  /* binary-counter levels of "
                         "the parts of one piece */\n\n" if cir.piece_levels else "\n"),
        "rules": _rules(cir), "piece_sums": _piece_sums(cir),
        "sub_piece_sums": sub_piece_sums(cir, _SUB_PIECE_SUMS, _ALL_NODES, _NODE_BY_NODE),
        "max_order": (f"#define MAX_ORDER {cir.rules[-1].order}  /* the highest order of the "
                      "projection's Gauss rules */\n" if ir.atoms_kind == "legendre" else ""),
        **loops(kind, C_WORDS),
        "default_bound": _default_bound(cir),
    }


def _device(cir):
    """The device ledger's placeholders: the memo key's parameters as device.py hashes them
    (records.sha256_json of {name: repr(default)}), and the stored release's inner lists
    (its coefficients' shape (m, n): n; a flat (d,): 0)."""
    ir = cir.module
    parameters = {name: repr(float(value)) for name, value, _ in ir.parameters}
    text = json.dumps(parameters, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    matrix = ir.value_dim > 1 and ir.coef_dim == ir.basis_size * ir.value_dim
    return {"repr_runtime": inlined(RUNTIME_REPR), "device_runtime": inlined(RUNTIME_DEVICE),
            "parameters_literal": c_string(text, 80),
            "parameters_doc": c_comment_text(text) if parameters else "none",
            "columns": str(ir.value_dim) if matrix else "0"}


def _runtime_c():
    return ("/* ==== The runtime of gpcompiler " + __version__ + ": the spec-specific part ends "
            "above. What follows is\n * gpcompiler/" + RUNTIME_C + " inlined verbatim, marked "
            "with its version and the sha256 of its\n * text, the same in every module of this "
            "version. */\n" + inlined(RUNTIME_C))


def _stack_kb(cir):
    """The stack of a projection in KB, rounded up: the blocks of the call chain project,
    contract, piece_sums, sub_piece_sums, orthonormal(_at), atoms(_at), or 40 frames of the
    clip's pairwise sum (10 KB), whichever is larger, and 2 KB for the frames' other words
    (tests/test_c_target.py checks it against gcc's -fstack-usage)."""
    ir = cir.module
    width = ir.basis_size * (ir.value_dim if ir.vector_basis else 1)
    order, atoms = cir.rules[-1].order, ir.atoms_size * (ir.value_dim if ir.vector_basis else 1)
    nodes = order if ir.atoms_kind == "legendre" else 1
    doubles = (ir.coef_dim * (1 + 1 + 31) + 4 * width + (4 + 2 * cir.piece_levels) * width
               + nodes * (width + 3 + atoms))
    return max(-(-doubles * 8 // 1024), 10) + 2


def _matrix_comment(title, symbol, matrix, number=hex_float):
    """A block comment of an exact matrix: each entry as ``number`` prints it (the C
    target's hexadecimal floats, the JS target's shortest decimals) beside its exact value."""
    entries, identity, formula = matrix
    lines = textwrap.wrap(f"{title} (exact): each entry's nearest float64 and its exact "
                          "value:", 92, initial_indent="/* ", subsequent_indent=" * ")
    if identity:
        lines.append(f" *   {symbol} = I (the atoms are orthonormal).")
    if formula:
        lines.append(_comment_lines(f"Exact entries: {formula}.", 88, " *   "))
    for i, j, constant in entries:
        text = f" *   {symbol}[{i}][{j}] = {number(constant.value)}"
        exact = c_comment_text(constant.exact)
        if len(text) + len(exact) + 2 <= 96:
            lines.append(f"{text}  {exact}" if exact else text)
        else:
            lines.append(text)
            lines += [f" *       {part}" for part in textwrap.wrap(exact, 86)]
    return "\n".join(lines) + " */"


def _legendre_atoms(cir):
    scales = "\n".join(f"    {hex_float(c.value)},  /* sqrt({2 * k + 1}/(b - a)) = "
                       f"{c_comment_text(c.exact)} */" for k, c in enumerate(cir.atom_scales))
    second = ("\n        out[q * ATOMS_SIZE + 1] = u[q];" if cir.module.atoms_size > 1 else "")
    loop = ("""
    for (int k = 1; k < ATOMS_SIZE - 1; k++)
        for (int q = 0; q < count; q++) {
            double *p = out + q * ATOMS_SIZE;
            p[k + 1] = ((2 * k + 1) * u[q] * p[k] - k * p[k - 1]) / (k + 1);
        }""" if cir.module.atoms_size > 2 else "")
    return f"""/* The atoms: normalized shifted Legendre L_k = sqrt((2k+1)/(b-a)) P_k(u),
 * u = (2x - a - b)/(b - a), by the three-term recurrence (never expanded into monomials), at
 * count <= MAX_ORDER points at once, out[q ATOMS_SIZE + k] (their recurrences are
 * independent: the divisions overlap). */
static const double atom_scales[ATOMS_SIZE] = {{
{scales}
}};

static void atoms_at(const double *x, int count, double *out)
{{
    double u[MAX_ORDER];
    for (int q = 0; q < count; q++) {{
        u[q] = (2.0 * x[q] - domain_lo - domain_hi) / (domain_hi - domain_lo);
        out[q * ATOMS_SIZE] = 1.0;{second}
    }}{loop}
    for (int q = 0; q < count; q++)
        for (int k = 0; k < ATOMS_SIZE; k++)
            out[q * ATOMS_SIZE + k] *= atom_scales[k];
}}"""


def _fourier_atoms(cir):
    last = cir.module.atoms_size // 2
    return f"""/* The atoms: 1, cos(k w x), sin(k w x) for k = 1..{last}, w = 2 pi/(b - a). */
static const double rate = {hex_float(cir.rate.value)};  /* w = {c_comment_text(cir.rate.exact)} */

static void atoms(double x, double *out)
{{
    out[0] = 1.0;
    for (int k = 1; k <= ATOMS_SIZE / 2; k++) {{
        double angle = rate * x * k;
        out[2 * k - 1] = cos(angle);
        out[2 * k] = sin(angle);
    }}
}}"""


def _sinc_atoms(cir):
    first = cir.module.sinc_shifts[0]
    pi = hex_float(3.141592653589793)
    last = first + cir.module.atoms_size - 1
    return f"""/* The atoms: normalized sinc(x - k), k = {first}..{last}: orthonormal on R (paper
 * Sec. 3.5), as (-1)^(n + k) sin(pi r)/(pi (x - k)) with x = n + r, n = rint(x): an exact
 * reduction. */
#define SINC_FIRST {first}
#define PI {pi}  /* pi */

static void atoms(double x, double *out)
{{
    double n = rint(x);
    double top = sin(PI * (x - n)) / PI * (fmod(n, 2.0) == 0 ? 1.0 : -1.0);
    for (int k = 0; k < ATOMS_SIZE; k++) {{
        double d = (x - (SINC_FIRST + k)) * ((SINC_FIRST + k) % 2 == 0 ? 1.0 : -1.0);
        out[k] = d != 0 ? top / d : d;
    }}
    if (x == n && n >= SINC_FIRST && n < SINC_FIRST + ATOMS_SIZE)
        out[(int)n - SINC_FIRST] = 1.0;
}}"""


def _expression_atoms(cir):
    ir = cir.module
    lines = []
    for k, components in enumerate(cir.atom_codes):
        for r, code in enumerate(components):
            index = k * ir.value_dim + r if ir.vector_basis else k
            lines.append(f"    out[{index}] = {code};")
    body = "\n".join(lines)
    used = any(re.search(r"\bx\b", code) for f in cir.atom_codes for code in f)
    unused = "" if used else "    (void)x;\n"
    return f"""/* The atoms: the user's basis functions, evaluated as written (at the defaults). */
static void atoms(double x, double *out)
{{
{unused}{body}
}}"""


_ATOMS = {"legendre": _legendre_atoms, "fourier": _fourier_atoms, "sinc": _sinc_atoms,
          "expression": _expression_atoms}


def _orthonormal(cir):
    ir = cir.module
    if ir.atoms_kind == "legendre":
        return _orthonormal_at(cir)
    if not cir.transform:
        return ("/* The orthonormal basis e: the atoms themselves (K = I). */\n"
                "static void orthonormal(double x, double *e)\n{\n    atoms(x, e);\n}")
    n = ir.value_dim if ir.vector_basis else 1
    inner = ("        e[change[i].j] += change[i].value * a[change[i].k];" if n == 1 else
             "        for (int r = 0; r < VALUE_DIM; r++)\n"
             "            e[change[i].j * VALUE_DIM + r] +=\n"
             "                change[i].value * a[change[i].k * VALUE_DIM + r];")
    return _change_table(cir) + f"""
static void orthonormal(double x, double *e)
{{
    double a[ATOMS_SIZE * {n}];
    atoms(x, a);
    memset(e, 0, WIDTH * sizeof *e);
    for (size_t i = 0; i < sizeof change / sizeof *change; i++)
{inner}
}}"""


def _change_table(cir):
    """The nonzero entries of K as a C table, each beside its exact value."""
    entries = "\n".join(f"    {{{j}, {k}, {hex_float(c.value)}}},  /* {c_comment_text(c.exact)} */"
                        for j, k, c in cir.transform)
    return ("/* K, the change from the atoms to the orthonormal basis e = K . atoms\n"
            " * (e = R^(-1) phi): its nonzero entries (j, k, K_jk), row by row. */\n"
            "static const struct {\n    int j, k;\n    double value;\n} change[] = {\n"
            f"{entries}\n}};\n")


def _orthonormal_at(cir):
    """e = K . atoms at count points at once (Legendre atoms), and at one point."""
    one = ("/* The orthonormal basis e at one point. */\n"
           "static void orthonormal(double x, double *e)\n{\n    orthonormal_at(&x, 1, e);\n}")
    if not cir.transform:
        return ("/* The orthonormal basis e at count points: the atoms themselves (K = I). */\n"
                "static void orthonormal_at(const double *x, int count, double *e)\n{\n"
                "    atoms_at(x, count, e);\n}\n\n" + one)
    return _change_table(cir) + f"""
/* The orthonormal basis e at count <= MAX_ORDER points: e[q WIDTH + j]. */
static void orthonormal_at(const double *x, int count, double *e)
{{
    double a[MAX_ORDER * ATOMS_SIZE];
    atoms_at(x, count, a);
    memset(e, 0, (size_t)count * WIDTH * sizeof *e);
    for (int q = 0; q < count; q++)
        for (size_t i = 0; i < sizeof change / sizeof *change; i++)
            e[q * WIDTH + change[i].j] += change[i].value * a[q * ATOMS_SIZE + change[i].k];
}}

{one}"""


_SUB_PIECE_SUMS = """/* The Gauss sums of one sub-piece [start, start + width] (in s in [0, 1])
 * of the linear piece from t0 of width h: out[j] = sum wt (1 - s) e_j(x),
 * out[WIDTH + j] = sum wt s e_j(x), x = t0 + s h, wt the node's weight times h width/2 (the
 * Python module's _gauss_sums)$how. */
static void sub_piece_sums(double t0, double h, double start, double width,
                           const struct rule *rule, double *out)
{
$body
}"""

_NODE_BY_NODE = """    double e[WIDTH];
    memset(out, 0, 2 * WIDTH * sizeof *out);
    for (int q = 0; q < rule->order; q++) {
        double s = start + width * (rule->xi[q] + 1.0) / 2.0;
        double wt = h * width * rule->w[q] / 2.0, ws = wt * s;
        orthonormal(t0 + s * h, e);
        for (int j = 0; j < WIDTH; j++) {
            out[j] += (wt - ws) * e[j];
            out[WIDTH + j] += ws * e[j];
        }
    }"""

_ALL_NODES = """    double s[MAX_ORDER], x[MAX_ORDER], e[MAX_ORDER * WIDTH];
    for (int q = 0; q < rule->order; q++) {
        s[q] = start + width * (rule->xi[q] + 1.0) / 2.0;
        x[q] = t0 + s[q] * h;
    }
    orthonormal_at(x, rule->order, e);
    memset(out, 0, 2 * WIDTH * sizeof *out);
    for (int q = 0; q < rule->order; q++) {
        double wt = h * width * rule->w[q] / 2.0, ws = wt * s[q];
        for (int j = 0; j < WIDTH; j++) {
            out[j] += (wt - ws) * e[q * WIDTH + j];
            out[WIDTH + j] += ws * e[q * WIDTH + j];
        }
    }"""


def sub_piece_sums(cir, template, all_nodes, node_by_node):
    """The sub-piece sums' function of a target (C or JS): ``template`` with the body that
    evaluates the basis at all nodes at once (Legendre atoms) or node by node."""
    if cir.module.atoms_kind == "legendre":
        return template.replace("$how", ", the basis at all nodes at once").replace(
            "$body", all_nodes)
    return template.replace("$how", "").replace("$body", node_by_node)


def rules_head(cir):
    """The comment above the Gauss rules' tables (C and JS)."""
    if cir.frequency is None:
        return ("/* The Gauss-Legendre rule exact for these polynomial integrands (one per piece):\n"
                " * nodes and weights on [-1, 1] computed at 60 digits and rounded once. */")
    return ("/* Gauss-Legendre rules on [-1, 1]: nodes and weights computed at 60 digits\n"
            " * (Newton's method on P_n) and rounded once. Each rule's limit: the largest half\n"
            " * width (h/pieces) F/2 of a run for which the Python module's gauss_order\n"
            " * (truncation <= 1e-17) picks it (found by bisection over the floats at compile\n"
            " * time). */")


def _rules(cir):
    tables = []
    for rule in cir.rules:
        for label, values in (("nodes", rule.nodes), ("weights", rule.weights)):
            rows = "\n".join(f"    {hex_float(c.value)},  /* {c.exact} */" for c in values)
            tables.append(f"static const double {label}_{rule.order}[{rule.order}] = "
                          f"{{\n{rows}\n}};")
    entries = "\n".join(
        f"    {{{r.order}, {hex_float(r.limit)}, nodes_{r.order}, weights_{r.order}}},"
        for r in cir.rules)
    head = rules_head(cir)
    body = "\n\n".join(tables)
    select = _SELECT_EXACT if cir.frequency is None else _SELECT.replace(
        "$frequency", hex_float(cir.frequency)).replace("$exact", repr(cir.frequency))
    return f"""{head}
{body}

static const struct rule {{
    int order;
    double limit;
    const double *xi, *w;
}} rules[] = {{
{entries}
}};

{select}"""


_SELECT_EXACT = """/* The rule of a run: the exact one. */
static const struct rule *run_rule(const double *t, size_t first, size_t end)
{
    (void)t;
    (void)first;
    (void)end;
    return &rules[0];
}"""

_SELECT = """#define FREQUENCY $frequency  /* $exact: the basis's frequency bound F */

/* Sub-pieces of a piece of width h: ceil(h F/8), at least 1 (the Python module's _gauss_rule). */
static double piece_count(double h)
{
    double pieces = ceil(h * FREQUENCY / 8.0);
    return pieces > 1.0 ? pieces : 1.0;
}

/* The rule of a run (_gauss_rule): the least order whose limit holds its largest sub-piece
 * half width max(h/pieces) F/2. */
static const struct rule *run_rule(const double *t, size_t first, size_t end)
{
    double widest = 0.0;
    for (size_t k = first; k + 1 < end; k++) {
        double h = t[k + 1] - t[k], width = h / piece_count(h);
        widest = width > widest ? width : widest;
    }
    double half_width = widest * FREQUENCY / 2.0;
    size_t i = 0;
    while (half_width > rules[i].limit)
        i++;
    return &rules[i];
}"""


def _piece_sums(cir):
    if cir.frequency is None:
        return """/* The sums of one piece: one exact rule over it. */
static void piece_sums(double t0, double h, const struct rule *rule, double *out)
{
    sub_piece_sums(t0, h, 0.0, 1.0, rule, out);
}"""
    counter = bool(cir.piece_levels)
    declare = ("    double slots[PIECE_LEVELS * 2 * WIDTH];\n"
               "    unsigned char used[PIECE_LEVELS] = {0};\n" if counter else "")
    finish = ("        if (pieces <= rows) {\n"
              "            memcpy(out, part, sizeof part);\n            return;\n        }\n"
              "        counter_push(slots, used, part, 2 * WIDTH);\n    }\n"
              "    counter_total(slots, used, PIECE_LEVELS, out, 2 * WIDTH);"
              if counter else "    }\n    memcpy(out, part, sizeof part);")
    doc = ("its sub-pieces' sums added in order, in parts of rows\n"
           " * sub-pieces (rows x order nodes hold CHUNK atom values: _numbered), the parts added\n"
           " * by a binary counter (_piece_sums)" if counter else
           "its sub-pieces' sums added in order (a piece of this spec\n"
           " * has at most rows sub-pieces, one block of _numbered: CHUNK atom values)")
    return f"""/* The sums of one piece: {doc}. */
static void piece_sums(double t0, double h, const struct rule *rule, double *out)
{{
    double pieces = piece_count(h), part[2 * WIDTH], sub[2 * WIDTH];
    int per_block = CHUNK / (rule->order * ATOMS_SIZE * VALUE_DIM);
    double rows = per_block > 1 ? per_block : 1;
{declare}    for (double first = 0; first < pieces; first += rows) {{
        double last = first + rows < pieces ? first + rows : pieces;
        sub_piece_sums(t0, h, first / pieces, 1.0 / pieces, rule, part);
        for (double i = first + 1; i < last; i++) {{
            sub_piece_sums(t0, h, i / pieces, 1.0 / pieces, rule, sub);
            for (int j = 0; j < 2 * WIDTH; j++)
                part[j] += sub[j];
        }}
{finish}
}}"""


# The contraction's and evaluate's loops per kind of values, in the words both targets share;
# each target names its declarations, value reader, coefficients and outputs (C_WORDS, and
# the JS target's JS_WORDS).
_ACCUMULATE = {
    "scalar": """            $fixed v = $value_at(y, s, scaling);
            for ($index j = 0; j < WIDTH; j++)
                partial[j] += v * weight[j];""",
    "vector": """            for ($index r = 0; r < VALUE_DIM; r++) {
                $fixed v = $value_at(y, s * VALUE_DIM + r, scaling);
                for ($index j = 0; j < WIDTH; j++)
                    partial[j * VALUE_DIM + r] += v * weight[j];
            }""",
    "vector_basis": """            for ($index j = 0; j < COEF_DIM; j++)
                for ($index r = 0; r < VALUE_DIM; r++)
                    partial[j] += $value_at(y, s * VALUE_DIM + r, scaling)
                                  * weight[j * VALUE_DIM + r];""",
}

_EVALUATE = {
    "scalar": """        $mutable sum = 0.0;
        for ($index j = 0; j < COEF_DIM; j++)
            sum += $c[j] * e[j];
        $out0 = sum;""",
    "vector": """        for ($index r = 0; r < VALUE_DIM; r++) {
            $mutable sum = 0.0;
            for ($index j = 0; j < WIDTH; j++)
                sum += $c[j * VALUE_DIM + r] * e[j];
            $out_r = sum;
        }""",
    "vector_basis": """        for ($index r = 0; r < VALUE_DIM; r++) {
            $mutable sum = 0.0;
            for ($index j = 0; j < COEF_DIM; j++)
                sum += $c[j] * e[j * VALUE_DIM + r];
            $out_r = sum;
        }""",
}

C_WORDS = {"fixed": "double", "mutable": "double", "index": "int", "value_at": "value_at",
           "c": "c", "out0": "v[0]", "out_r": "v[r]"}


def loops(kind, words):
    """The "accumulate" and "evaluate" placeholders of a module of ``kind`` (values_kind) in
    a target's ``words``."""
    return {"accumulate": string.Template(_ACCUMULATE[kind]).substitute(words),
            "evaluate": string.Template(_EVALUATE[kind]).substitute(words)}


def _default_bound(cir):
    if cir.bound is not None:
        return (f"/* The default bound: the spec's [privacy] bound B = {cir.bound!r}. */\n"
                "static int default_bound(double scale, double *bound)\n{\n    (void)scale;\n"
                f"    *bound = {hex_float(cir.bound)};\n    return GP_OK;\n}}")
    return (_SLACK_FITS + """    double gamma, limit;
    int k = ilogb(scale) + ilogb(SLACK_FRACTION) - ilogb(NAME_ETA) - 1;
    while (!slack_fits(k, scale))
        k--;
    while (slack_fits(k + 1, scale))
        k++;
    if (k > 1023 || gp_lattice(scale, &gamma) != GP_OK)  /* Python: an OverflowError */
        return GP_ERANGE;
    limit = ldexp(gamma, 50);  /* _bound's limit: 2^50 lattice steps */
    if (isinf(limit))
        return GP_ERANGE;
    *bound = fmax(fmin(ldexp(1.0, k), limit), GP_BOUND_FLOOR);
    return GP_OK;
}""").replace("NAME", cir.module.name)


_SLACK_FITS = """/* Products compared exactly: each side a 106-bit product of two 53-bit integers
 * times a power of two, compared in 64-bit halves. */
#define SLACK_FRACTION 0x1.0c6f7a0b5ed8dp-20  /* the float64 1e-6 (the Python module's) */

static void product(double a, double b, uint64_t *high, uint64_t *low, int *exponent)
{
    int ea, eb;
    uint64_t x = (uint64_t)ldexp(frexp(a, &ea), 53), y = (uint64_t)ldexp(frexp(b, &eb), 53);
    uint64_t x1 = x >> 32, x0 = x & 0xffffffffu, y1 = y >> 32, y0 = y & 0xffffffffu;
    uint64_t middle = x1 * y0 + ((x0 * y0) >> 32) + (x0 * y1 & 0xffffffffu);
    *low = x * y;
    *high = x1 * y1 + (middle >> 32) + ((x0 * y1) >> 32);
    *exponent = ea + eb;
    if (!(*high >> 41)) {  /* the product below 2^105: shift it to [2^105, 2^106) */
        *high = *high << 1 | *low >> 63;
        *low <<= 1;
        *exponent -= 1;
    }
}

/* Whether 2^k 2 ETA <= min(SLACK_FRACTION max(scale, 1), scale), exactly (below the noise
 * scale 1 the bound stops shrinking while the slack stays below the noise). */
static int slack_fits(int k, double scale)
{
    uint64_t high[2], low[2];
    int exponent[2];
    product(NAME_ETA, 1.0, &high[0], &low[0], &exponent[0]);
    if (scale >= 1)
        product(SLACK_FRACTION, scale, &high[1], &low[1], &exponent[1]);
    else
        product(fmin(SLACK_FRACTION, scale), 1.0, &high[1], &low[1], &exponent[1]);
    exponent[0] += k + 1;
    if (exponent[0] != exponent[1])
        return exponent[0] < exponent[1];
    return high[0] != high[1] ? high[0] < high[1] : low[0] <= low[1];
}

/* The default bound at a noise scale (the Python module's _default_bound): the largest
 * power of two B with 2 ETA B <= min(SLACK_FRACTION max(scale, 1), scale), at most 2^50
 * lattice steps, at least GP_BOUND_FLOOR. */
static int default_bound(double scale, double *bound)
{
"""
