"""CModuleIR -> the text of NAME.mjs (docs/reference/js.md). Byte-reproducible: no
timestamps or absolute paths; every constant the shortest decimal that parses back to the
float64 nearest its exact value (printer.js_number), which is written beside it; spec strings
only through literals.js_string and literals.js_comment_text. The projection is the C
target's algorithm (emit/c/emit.py) written in JavaScript, piece by piece."""
import string
from importlib import resources

from ..c.emit import (inlined, loops, rules_head, shared_placeholders, sub_piece_sums,
                      unit_texts)
from ..c.program import help_texts
from ..common import values_kind
from ..literals import c_identifier, js_comment_text, js_string
from .printer import js_number

RUNTIME = "runtime/js/gp_runtime.mjs"
PROTOCOL = "runtime/js/gp_protocol.mjs"
LEDGER = "runtime/js/gp_ledger.mjs"


def emit_js(cir):
    """{"NAME.mjs": text} of a CModuleIR (emit/c/lowering.lower_c with the JS printer)."""
    name = c_identifier(cir.module.name)
    text = resources.files(__package__).joinpath("templates/module.mjs.tmpl").read_text()
    return {f"{name}.mjs": string.Template(text).substitute(_placeholders(cir, name))}


def _placeholders(cir, name):
    ir = cir.module
    domain_unit, value_unit = unit_texts(ir)
    return {
        **shared_placeholders(cir, js_number),
        "name": name,
        "name_literal": js_string(ir.name), "title_literal": js_string(ir.title),
        "spec_path_literal": js_string(ir.spec_path),
        "spec_sha256_literal": js_string(ir.spec_sha256),
        "metric_literal": js_string(ir.metric_identity["name"]),
        "metric_sha256_literal": js_string(ir.metric_identity["sha256"]),
        "ledger_label_literal": js_string(f"{ir.name}: privatize (JS target)"),
        "parameter_reprs": "{" + ", ".join(f"{js_string(name)}: {js_string(default)}"
                                           for name, default, _ in ir.parameters) + "}",
        "tool_version_literal": js_string(ir.tool_version),
        "domain_units_literal": "null" if domain_unit is None else js_string(domain_unit),
        "value_units_literal": "null" if value_unit is None else js_string(value_unit),
        "max_order": (f"const MAX_ORDER = {cir.rules[-1].order};  /* the highest order of the "
                      "projection's Gauss rules */\n" if ir.atoms_kind == "legendre" else ""),
        "atoms": _ATOMS[ir.atoms_kind](cir), "orthonormal": _orthonormal(cir),
        "piece_levels": "\n", "rules": _rules(cir), "piece_sums": _piece_sums(cir),
        "sub_piece_sums": sub_piece_sums(cir, _SUB_PIECE_SUMS, _ALL_NODES, _NODE_BY_NODE),
        **loops(values_kind(ir), JS_WORDS),
        "default_bound": _default_bound(cir),
        **{f"help_{key}": js_string(text) for key, text in help_texts(name).items()},
        "protocol": inlined(PROTOCOL), "runtime": _runtime(), "ledger": inlined(LEDGER),
    }


def _runtime():
    return ("/* ==== The runtime of gpcompiler: the spec-specific part ends above. What follows "
            "is\n * gpcompiler/" + RUNTIME + " inlined verbatim, marked with its version and the "
            "sha256\n * of its text, the same in every module of this version. */\n"
            + inlined(RUNTIME))


def _legendre_atoms(cir):
    scales = "\n".join(f"    {js_number(c.value)},  /* sqrt({2 * k + 1}/(b - a)) = "
                       f"{js_comment_text(c.exact)} */" for k, c in enumerate(cir.atom_scales))
    second = ("\n        out[q * ATOMS_SIZE + 1] = u[q];" if cir.module.atoms_size > 1 else "")
    loop = ("""
    for (let k = 1; k < ATOMS_SIZE - 1; k++)
        for (let q = 0; q < count; q++) {
            const p = q * ATOMS_SIZE;
            out[p + k + 1] = ((2 * k + 1) * u[q] * out[p + k] - k * out[p + k - 1]) / (k + 1);
        }""" if cir.module.atoms_size > 2 else "")
    return f"""/* The atoms: normalized shifted Legendre L_k = sqrt((2k+1)/(b-a)) P_k(u),
 * u = (2x - a - b)/(b - a), by the three-term recurrence (never expanded into monomials), at
 * count <= MAX_ORDER points at once, out[q ATOMS_SIZE + k]. */
const ATOM_SCALES = [
{scales}
];

function atomsAt(x, count, out) {{
    const u = [];
    for (let q = 0; q < count; q++) {{
        u[q] = (2.0 * x[q] - DOMAIN_LO - DOMAIN_HI) / (DOMAIN_HI - DOMAIN_LO);
        out[q * ATOMS_SIZE] = 1.0;{second}
    }}{loop}
    for (let q = 0; q < count; q++)
        for (let k = 0; k < ATOMS_SIZE; k++)
            out[q * ATOMS_SIZE + k] *= ATOM_SCALES[k];
}}"""


def _fourier_atoms(cir):
    last = cir.module.atoms_size // 2
    return f"""/* The atoms: 1, cos(k w x), sin(k w x) for k = 1..{last}, w = 2 pi/(b - a). */
const RATE = {js_number(cir.rate.value)};  /* w = {js_comment_text(cir.rate.exact)} */

function atoms(x, out) {{
    out[0] = 1.0;
    for (let k = 1; k <= ATOMS_SIZE / 2; k++) {{
        const angle = RATE * x * k;
        out[2 * k - 1] = Math.cos(angle);
        out[2 * k] = Math.sin(angle);
    }}
}}"""


def _sinc_atoms(cir):
    first = cir.module.sinc_shifts[0]
    last = first + cir.module.atoms_size - 1
    return f"""/* The atoms: normalized sinc(x - k), k = {first}..{last}: orthonormal on R (paper
 * Sec. 3.5), as (-1)^(n + k) sin(pi r)/(pi (x - k)) with x = n + r, n = rint(x): an exact
 * reduction. */
const SINC_FIRST = {first};
const PI = {js_number(3.141592653589793)};  /* pi */

function atoms(x, out) {{
    const n = gpRint(x);
    const top = Math.sin(PI * (x - n)) / PI * (n % 2 === 0 ? 1.0 : -1.0);
    for (let k = 0; k < ATOMS_SIZE; k++) {{
        const d = (x - (SINC_FIRST + k)) * ((SINC_FIRST + k) % 2 === 0 ? 1.0 : -1.0);
        out[k] = d !== 0 ? top / d : d;
    }}
    if (x === n && n >= SINC_FIRST && n < SINC_FIRST + ATOMS_SIZE)
        out[n - SINC_FIRST] = 1.0;
}}"""


def _expression_atoms(cir):
    ir = cir.module
    lines = []
    for k, components in enumerate(cir.atom_codes):
        for r, code in enumerate(components):
            index = k * ir.value_dim + r if ir.vector_basis else k
            lines.append(f"    out[{index}] = {code};")
    body = "\n".join(lines)
    return f"""/* The atoms: the user's basis functions, evaluated as written (at the defaults). */
function atoms(x, out) {{
{body}
}}"""


_ATOMS = {"legendre": _legendre_atoms, "fourier": _fourier_atoms, "sinc": _sinc_atoms,
          "expression": _expression_atoms}


def _change_table(cir):
    """The nonzero entries of K as a table, each beside its exact value."""
    entries = "\n".join(f"    [{j}, {k}, {js_number(c.value)}],  /* {js_comment_text(c.exact)} */"
                        for j, k, c in cir.transform)
    return ("/* K, the change from the atoms to the orthonormal basis e = K . atoms\n"
            " * (e = R^(-1) phi): its nonzero entries [j, k, K_jk], row by row. */\n"
            f"const CHANGE = [\n{entries}\n];\n")


def _orthonormal(cir):
    ir = cir.module
    if ir.atoms_kind == "legendre":
        return _orthonormal_at(cir)
    if not cir.transform:
        return ("/* The orthonormal basis e: the atoms themselves (K = I). */\n"
                "function orthonormal(x, e) {\n    atoms(x, e);\n}")
    n = ir.value_dim if ir.vector_basis else 1
    inner = ("        e[j] += value * a[k];" if n == 1 else
             "        for (let r = 0; r < VALUE_DIM; r++)\n"
             "            e[j * VALUE_DIM + r] += value * a[k * VALUE_DIM + r];")
    return _change_table(cir) + f"""
function orthonormal(x, e) {{
    const a = new Float64Array(ATOMS_SIZE * {n});
    atoms(x, a);
    e.fill(0);
    for (const [j, k, value] of CHANGE)
{inner}
}}"""


def _orthonormal_at(cir):
    """e = K . atoms at count points at once (Legendre atoms), and at one point."""
    one = ("/* The orthonormal basis e at one point. */\n"
           "function orthonormal(x, e) {\n    orthonormalAt([x], 1, e);\n}")
    if not cir.transform:
        return ("/* The orthonormal basis e at count points: the atoms themselves (K = I). */\n"
                "function orthonormalAt(x, count, e) {\n    atomsAt(x, count, e);\n}\n\n" + one)
    return _change_table(cir) + f"""
/* The orthonormal basis e at count <= MAX_ORDER points: e[q WIDTH + j]. */
function orthonormalAt(x, count, e) {{
    const a = new Float64Array(MAX_ORDER * ATOMS_SIZE);
    atomsAt(x, count, a);
    e.fill(0, 0, count * WIDTH);
    for (let q = 0; q < count; q++)
        for (const [j, k, value] of CHANGE)
            e[q * WIDTH + j] += value * a[q * ATOMS_SIZE + k];
}}

{one}"""


_SUB_PIECE_SUMS = """/* The Gauss sums of one sub-piece [start, start + width] (in s in [0, 1])
 * of the linear piece from t0 of width h: out[j] = sum wt (1 - s) e_j(x),
 * out[WIDTH + j] = sum wt s e_j(x), x = t0 + s h, wt the node's weight times h width/2 (the
 * Python module's _gauss_sums)$how. */
function subPieceSums(t0, h, start, width, rule) {
    const out = new Float64Array(2 * WIDTH);
$body
    return out;
}"""

_NODE_BY_NODE = """    const e = new Float64Array(WIDTH);
    for (let q = 0; q < rule.order; q++) {
        const s = start + width * (rule.xi[q] + 1.0) / 2.0;
        const wt = h * width * rule.w[q] / 2.0, ws = wt * s;
        orthonormal(t0 + s * h, e);
        for (let j = 0; j < WIDTH; j++) {
            out[j] += (wt - ws) * e[j];
            out[WIDTH + j] += ws * e[j];
        }
    }"""

_ALL_NODES = """    const s = [], x = [], e = new Float64Array(MAX_ORDER * WIDTH);
    for (let q = 0; q < rule.order; q++) {
        s[q] = start + width * (rule.xi[q] + 1.0) / 2.0;
        x[q] = t0 + s[q] * h;
    }
    orthonormalAt(x, rule.order, e);
    for (let q = 0; q < rule.order; q++) {
        const wt = h * width * rule.w[q] / 2.0, ws = wt * s[q];
        for (let j = 0; j < WIDTH; j++) {
            out[j] += (wt - ws) * e[q * WIDTH + j];
            out[WIDTH + j] += ws * e[q * WIDTH + j];
        }
    }"""


def _rules(cir):
    tables = []
    for rule in cir.rules:
        for label, values in (("NODES", rule.nodes), ("WEIGHTS", rule.weights)):
            rows = "\n".join(f"    {js_number(c.value)},  /* {c.exact} */" for c in values)
            tables.append(f"const {label}_{rule.order} = [\n{rows}\n];")
    entries = "\n".join(f"    {{ order: {r.order}, limit: {js_number(r.limit)}, "
                        f"xi: NODES_{r.order}, w: WEIGHTS_{r.order} }}," for r in cir.rules)
    head = rules_head(cir)
    body = "\n\n".join(tables)
    select = (_SELECT_EXACT if cir.frequency is None else _SELECT.replace(
        "$frequency", js_number(cir.frequency)).replace("$exact", repr(cir.frequency)))
    return f"""{head}
{body}

const RULES = [
{entries}
];

{select}"""


_SELECT_EXACT = """/* The rule of a run: the exact one. */
function runRule() {
    return RULES[0];
}"""

_SELECT = """const FREQUENCY = $frequency;  /* $exact: the basis's frequency bound F */

/* Sub-pieces of a piece of width h: ceil(h F/8), at least 1 (the Python module's _gauss_rule). */
function pieceCount(h) {
    const pieces = Math.ceil(h * FREQUENCY / 8.0);
    return pieces > 1.0 ? pieces : 1.0;
}

/* The rule of a run (_gauss_rule): the least order whose limit holds its largest sub-piece
 * half width max(h/pieces) F/2. */
function runRule(t, first, end) {
    let widest = 0.0;
    for (let k = first; k + 1 < end; k++) {
        const h = t[k + 1] - t[k], width = h / pieceCount(h);
        widest = width > widest ? width : widest;
    }
    const halfWidth = widest * FREQUENCY / 2.0;
    let i = 0;
    while (halfWidth > RULES[i].limit)
        i++;
    return RULES[i];
}"""


def _piece_sums(cir):
    if cir.frequency is None:
        return """/* The sums of one piece: one exact rule over it. */
function pieceSums(t0, h, rule) {
    return subPieceSums(t0, h, 0.0, 1.0, rule);
}"""
    return """/* The sums of one piece: its sub-pieces' sums added in order, in parts of rows
 * sub-pieces (rows x order nodes hold CHUNK atom values: _numbered), the parts added by a
 * binary counter (_piece_sums). */
function pieceSums(t0, h, rule) {
    const pieces = pieceCount(h), slots = [];
    const perBlock = Math.floor(CHUNK / (rule.order * ATOMS_SIZE * VALUE_DIM));
    const rows = perBlock > 1 ? perBlock : 1;
    for (let first = 0; first < pieces; first += rows) {
        const last = first + rows < pieces ? first + rows : pieces;
        const part = subPieceSums(t0, h, first / pieces, 1.0 / pieces, rule);
        for (let i = first + 1; i < last; i++) {
            const sub = subPieceSums(t0, h, i / pieces, 1.0 / pieces, rule);
            for (let j = 0; j < 2 * WIDTH; j++)
                part[j] += sub[j];
        }
        if (pieces <= rows)
            return part;
        counterPush(slots, part);
    }
    return counterTotal(slots, 2 * WIDTH);
}"""


JS_WORDS = {"fixed": "const", "mutable": "let", "index": "let", "value_at": "valueAt",
            "c": "coef", "out0": "values[i]", "out_r": "values[i * VALUE_DIM + r]"}


def _default_bound(cir):
    if cir.bound is not None:
        return (f"/* The default bound: the spec's [privacy] bound B = {cir.bound!r}. */\n"
                f"function defaultBound() {{\n    return {js_number(cir.bound)};\n}}")
    return """const SLACK_FRACTION = 1e-6;  /* the Python module's */

/* Whether 2^k 2 ETA <= min(SLACK_FRACTION max(scale, 1), scale), exactly (below the noise
 * scale 1 the bound stops shrinking while the slack stays below the noise). */
function slackFits(k, scale) {
    return scale >= 1 ? gpCompareProducts(ETA, 1, k + 1, SLACK_FRACTION, scale) <= 0
        : gpCompareProducts(ETA, 1, k + 1, Math.min(SLACK_FRACTION, scale), 1) <= 0;
}

/* The default bound at a noise scale (the Python module's _default_bound): the largest
 * power of two B with 2 ETA B <= min(SLACK_FRACTION max(scale, 1), scale), at most 2^50
 * lattice steps, at least GP_BOUND_FLOOR. */
function defaultBound(scale) {
    let k = gpIlogb(scale) + gpIlogb(SLACK_FRACTION) - gpIlogb(ETA) - 1;
    while (!slackFits(k, scale))
        k--;
    while (slackFits(k + 1, scale))
        k++;
    const limit = gpLdexp(gpLattice(scale), 50);  /* _bound's limit: 2^50 lattice steps */
    if (k > 1023 || !Number.isFinite(limit))  /* Python: an OverflowError */
        gpFail("GP_ERANGE");
    return Math.max(Math.min(gpLdexp(1.0, k), limit), GP_BOUND_FLOOR);
}"""

