"""`gpcompiler explain`: the derivation of a compiled spec as Markdown with LaTeX."""
from fractions import Fraction

import mpmath
import sympy

from ..cdf.estimators import expected_l2_errors
from ..cdf.tables import moment_sensitivity_sup
from .ir import condition_text, eta as projection_eta, slack_condition
from ..runtime.rounding import ceil_float, ceil_sqrt
from .slack import facts
from .spec import box_factors
from .symbolic import is_identity, to_float

FULL_MATRIX_LIMIT = 12


def _latex_matrix(matrix, symbol):
    rows, cols = matrix.shape
    if rows <= FULL_MATRIX_LIMIT and cols <= FULL_MATRIX_LIMIT:
        return f"$$ {symbol} = {sympy.latex(sympy.Matrix(rows, cols, lambda i, j: matrix[i, j]))} $$"
    block = sympy.Matrix(min(rows, 6), min(cols, 6), lambda i, j: matrix[i, j])
    return (f"$$ {symbol}_{{[1..6,1..6]}} = {sympy.latex(block)} $$\n\n"
            f"({rows}x{cols}: the generated module holds every entry, beside its exact value "
            "or, for tables over 600 entries, under the formula of the exact entries.)")


def explain(compiled):
    """Markdown text auditing every step from spec to mechanism."""
    if compiled.spec.kind == "cdf":
        return explain_cdf(compiled.spec, compiled.analysis)
    spec, analysis = compiled.spec, compiled.analysis
    d = spec.coef_dim
    parts = [f"# {spec.title}", "",
             f"Spec `{spec.path}` (sha256 `{spec.sha256}`), module `{spec.name}`.", "",
             "## Function space", "", _space(spec), "",
             "## Gram matrix", "", f"Obtained by: {analysis.gram_method}.", ""]
    if is_identity(analysis.gram):
        parts.append(f"$$ G = I_{{{spec.basis_size}}} $$")
    else:
        parts.append(_latex_matrix(analysis.gram, "G"))
    parts += _factors(analysis) + _box_weight(analysis)
    if spec.value_dim > 1 and not spec.vector_basis:
        parts += ["", f"Vector coefficients in $\\mathbb{{R}}^{spec.value_dim}$ (paper Sec. 3.3): "
                      f"the mechanism uses $G \\otimes I_{spec.value_dim}$, $d = m n = {d}$."]
    parts += ["", "## Positive-definiteness certificate", "",
              f"Exact $G = L D L^T$; {analysis.certificate}.", "", _pivots(analysis), "",
              "## Orthonormal basis", "", _orthonormal(analysis), "",
              "## Conditioning of the user basis", "",
              f"$\\kappa_2(G) = {condition_text(analysis.condition_number)}$ at the default "
              "parameters. "
              "The generated module works in orthonormal coordinates $c = R^T a$ "
              "($G = R R^T$), where the mechanism is perfectly conditioned; `to_user` "
              "solves with $R^T$ and loses about "
              f"{_digits_lost(analysis.condition_number)} "
              "significant digits to the user-basis conditioning.", "",
              "## Mechanisms and error", "", _errors(d), "",
              "## Clipping and the float slack", "", _clipping(analysis)]
    return "\n".join(parts) + "\n"


def _digits_lost(kappa):
    if not mpmath.isfinite(kappa):
        return "an unknown number of"
    return f"{max(0.0, float(mpmath.log10(kappa)) / 2):.1f}"


def _factors(analysis):
    """A tensor-product basis (paper Sec. 3.2): the 1-D factors of G = G_1 (x) ... (x) G_k,
    whose LDL^T, R and K are the factors' Kronecker products (Fubini)."""
    if not analysis.factors:
        return []
    names = [sympy.latex(t) for t in analysis.spec.variables]
    lines = ["", "Tensor-product basis: by Fubini $G = " + " \\otimes ".join(
        f"G_{{{n}}}" for n in names) + "$, and $L$, $D$, $R = L D^{1/2}$ and $K$ are the "
        "Kronecker products of the factors' (the LDL^T of $G$ is unique), so nothing larger "
        "than a factor is factored:"]
    for name, factor in zip(names, analysis.factors):
        lines += ["", _latex_matrix(factor.gram, f"G_{{{name}}}"),
                  "", f"with pivots $D_{{{name}}}$: " + _pivots(factor)]
    return lines


def _box_weight(analysis):
    """A weight over a box: its exact factorization w = prod_i w_i(x_i) and, where a factor
    is singular at an end, the graded rule of the generated module (as in 1-D)."""
    spec = analysis.spec
    if spec.dimension == 1 or spec.metric.weight is None:
        return []
    from .analysis.weights import weight_factors
    from .emit.common import grade_levels
    factors = weight_factors(spec)
    if factors is None:
        return ["", "The weight does not separate into one-variable factors; it is bounded on "
                    "the closed box (proven by interval arithmetic), and the generated module "
                    "integrates it with tensor Gauss rules."]
    names = [sympy.latex(t) for t in spec.variables]
    lines = ["", "The weight separates exactly (SymPy; the product equals $w$): $w = "
             + " \\, ".join(f"w_{{{n}}}({n})" for n in names) + "$ with "
             + ", ".join(f"$w_{{{n}}} = {sympy.latex(f)}$" for n, f in zip(names, factors))
             + ". By Fubini every integral over the box is a product of 1-D integrals, each "
               "factor carrying its own $w_i$."]
    singular = [(n, alpha, (lo, hi)[end]) for n, ends, (lo, hi) in
                zip(names, analysis.quadrature.singular, spec.intervals) for end, alpha in ends]
    if singular:
        levels = sorted({grade_levels(alpha) for *_, alpha, _ in singular})
        lines += ["", "Singular ends ($d$ the distance to the end): " + "; ".join(
            f"$w_{{{n}}} \\sim d^{{{sympy.nsimplify(alpha)}}}$ at ${n} = {sympy.latex(e)}$"
            for n, alpha, e in singular) + ". The generated module folds each $w_i$ into the "
            "Gauss weights along $x_i$ and grades by distance, as in 1-D: every piece whose "
            "near end lies within its own width $h$ of a singular end, at $d \\le h$, is cut "
            "at the distances $(d + h) 2^{-k} > d$, at most "
            "$G = \\lceil 17 \\log_2 10/(1 + \\alpha) \\rceil$ of them "
            f"({', '.join(map(str, levels))} here; the last sub-piece holds a share "
            "$\\le 2^{-G(1+\\alpha)} \\le 10^{-17}$), with Gauss-Legendre order at least 24, "
            "and evaluates $w_i$ from the exact distance $d$ to the end (no cancellation)."]
    return lines


def _interval(lo, hi):
    """An interval in LaTeX: closed at a finite end, open at an infinite one."""
    return (("(" if lo.is_infinite else "[") + f"{sympy.latex(lo)}, {sympy.latex(hi)}"
            + (")" if hi.is_infinite else "]"))


def _count(number, noun):
    """``number noun``, the noun plural unless the number is 1."""
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _space(spec):
    if spec.dimension > 1:
        box = " \\times ".join(_interval(lo, hi) for lo, hi in spec.intervals)
        domain = f"Box $I = {box}$ in $({', '.join(sympy.latex(t) for t in spec.variables)})$"
    else:
        domain = f"Domain $I = {_interval(*spec.interval)}$"
    lines = [f"{domain}, metric {spec.metric.kind}"
             + (f" with weight ${sympy.latex(spec.metric.weight)}$" if spec.metric.weight is not None else "")
             + "."]
    if spec.curve_interval:
        clo, chi = spec.curve_interval
        lines.append(f"Curves live on ${_interval(clo, chi)}$ and are "
                     "extended by zero (paper Sec. 3.5).")
    if spec.parameters:
        lines.append("Parameters (positive): " + ", ".join(
            f"${sympy.latex(s)} = {sympy.latex(v)}$ by default" for s, v in spec.parameters) + ".")
    shown = spec.functions[:FULL_MATRIX_LIMIT]
    point = ", ".join(sympy.latex(t) for t in spec.variables)
    values = ((lambda f: "\\left(" + ", ".join(map(sympy.latex, f)) + "\\right)")
              if spec.vector_basis else (lambda f: sympy.latex(f[0])))
    if spec.dimension > 1 and spec.family is not None:    # its factors in the variables' order
        shown = [(_product(factors),) for factors in
                 box_factors(spec.family, spec.variables, spec.intervals)[:FULL_MATRIX_LIMIT]]
        values = (lambda f: f[0])
    items = [f"- $\\varphi_{{{j + 1}}}({point}) = {values(f)}$" for j, f in enumerate(shown)]
    if spec.basis_size > len(shown):
        items.append(f"- ... ({_count(spec.basis_size, 'function')} in all)")
    return "\n".join(lines + [""] + items)


def _product(factors):
    """A box family's basis function in LaTeX, its factors in the variables' order (factors
    equal to 1 left out)."""
    shown = [sympy.latex(f) for f in factors if f != 1]
    return " ".join(shown) if shown else "1"


def _pivots(analysis):
    shown = analysis.pivots[:FULL_MATRIX_LIMIT]
    text = ", ".join(f"D_{{{j + 1}}} = {sympy.latex(p)}" for j, p in enumerate(shown))
    more = f" (and {len(analysis.pivots) - len(shown)} more)" if len(analysis.pivots) > len(shown) else ""
    return f"$$ {text} $$" + more


def _orthonormal(analysis):
    kind, index = analysis.atoms.kind, analysis.atoms.index
    atoms = {
        "tensor": "tensor Legendre $\\psi_a = \\prod_i L_{a_i}(x_i)$, "
                  "$L_n(x_i) = \\sqrt{(2n+1)/(b_i-a_i)}\\,P_n(u_i)$, one multi-index $a$ per "
                  "atom (" + ("the tensor grid" if analysis.factors else
                              f"total degree $|a| \\le {max(sum(a) for a in index or [()])}$")
                  + "), by the three-term recurrence per variable",
        "legendre": "$L_k(t) = \\sqrt{(2k+1)/(b-a)}\\,P_k(u)$, $u = (2t-a-b)/(b-a)$, "
                    "evaluated by the three-term recurrence",
        "piecewise": "$L_{p,d}(t) = \\sqrt{(2d+1)/(b_{p+1}-b_p)}\\,P_d(u_p)$ on each piece "
                     "$[b_p, b_{p+1}]$ between the breakpoints "
                     f"${', '.join(sympy.latex(b) for b in analysis.atoms.breaks)}$, zero "
                     f"elsewhere, $d < {analysis.atoms.order}$ (atom $p\\cdot"
                     f"{analysis.atoms.order} + d$), by the three-term recurrence",
        "expression": "the user's functions $\\varphi_k$",
        "sinc": "$\\operatorname{sinc}(t-k)$, orthonormal on $\\mathbb{R}$ (paper Fact B.9)",
        "hermite": "the Hermite functions, orthonormal on $\\mathbb{R}$",
        "fourier": "$1, \\cos(k\\omega t), \\sin(k\\omega t)$ for $k = 1.."
                   f"{analysis.atoms.size // 2}$, $\\omega = 2\\pi/(b-a)$, evaluated as is",
    }["tensor" if index and kind == "legendre" else kind]
    text = (f"$e = R^{{-1}}\\varphi = K\\,\\psi$ with atoms $\\psi$ = {atoms}. "
            "Float64 constants are rounded once from the exact values.\n\n")
    if is_identity(analysis.transform):
        return text + "$$ K = I $$"
    return text + _latex_matrix(analysis.transform, "K") + _explicit_basis(analysis)


def _explicit_basis(analysis, limit=6):
    """e_j(t) written out, for small spaces of polynomial or expression atoms."""
    spec = analysis.spec
    if (spec.basis_size > limit or analysis.atoms.kind not in ("legendre", "expression")
            or spec.dimension > 1):
        return ""
    t = spec.variable
    if analysis.atoms.kind == "legendre":
        lo, hi = spec.interval
        u = (2 * t - lo - hi) / (hi - lo)
        atoms = [[sympy.sqrt(sympy.Rational(2 * k + 1) / (hi - lo)) * sympy.legendre(k, u)]
                 for k in range(analysis.atoms.size)]
    else:
        atoms = [list(f) for f in spec.functions]
    lines = ["", ""]
    for j in range(spec.basis_size):
        components = [sympy.expand(sum(analysis.transform[j, k] * atoms[k][r]
                                       for k in range(len(atoms))))
                      for r in range(len(atoms[0]))]
        shown = ", ".join(sympy.latex(c) for c in components)
        shown = f"\\left({shown}\\right)^T" if len(components) > 1 else shown
        lines.append(f"- $e_{{{j + 1}}}(t) = {shown}$")
    return "\n".join(lines)


def _errors(d):
    return "\n".join([
        f"With $d = {d}$ coordinates and $Z$ spherical Laplace ($\\|Z\\| \\sim \\Gamma(d,1)$):",
        "",
        f"- $\\varepsilon$-GP (Thm 3.2): $\\tilde c = c + Z/\\varepsilon$, "
        f"$E\\,\\mathrm{{dist}}_2 = d/\\varepsilon = {d}/\\varepsilon$, "
        f"$E\\,\\mathrm{{dist}}_2^2 = d(d+1)/\\varepsilon^2 = {d * (d + 1)}/\\varepsilon^2$, "
        "and with probability $\\ge 1-\\beta$: "
        "$\\mathrm{dist}_2 \\le \\frac{e}{e-1}(d + \\ln(1/\\beta))/\\varepsilon$.",
        f"- $\\rho$-CGP (Thm 3.3): $\\tilde c = c + N(0, I_d)/\\sqrt{{2\\rho}}$, "
        f"$E\\,\\mathrm{{dist}}_2 = \\sqrt2\\,\\Gamma(\\frac{{d+1}}2)/\\Gamma(\\frac d2)/\\sqrt{{2\\rho}}$"
        f" $\\approx {to_float(sympy.sqrt(2) * sympy.gamma(sympy.Rational(d + 1, 2)) / sympy.gamma(sympy.Rational(d, 2))):.6g}/\\sqrt{{2\\rho}}$, "
        f"$E\\,\\mathrm{{dist}}_2^2 = d/(2\\rho) = {d}/(2\\rho)$, and with probability "
        "$\\ge 1-\\beta$: $\\mathrm{dist}_2 \\le (d + 2\\sqrt{d\\ln(1/\\beta)} + "
        "2\\ln(1/\\beta))^{1/2}/\\sqrt{2\\rho}$.",
    ])


_HELD = {  # [curve] outside (docs/clipping.md, "Held curves")
    "zero": "",
    "hold": (" With `[curve] outside = \"hold\"` the curve is the one held at its first and "
             "last values to the ends $a, b$ of the curve interval: it is written once as the "
             "curve zero outside its samples with $(a, y_{\\rm first})$ and $(b, y_{\\rm last})$ "
             "added, and that curve is clipped and projected as above, $d$ being the distance "
             "of the held curves (docs/clipping.md, \"Held curves\")."),
}


def _clipping(analysis, budgets=(0.1, 1.0, 10.0, 100.0)):
    """The clip bound B, the slack 2 eta B and the lattice step gamma at a few budgets
    (docs/clipping.md), computed as the generated module computes them."""
    spec = analysis.spec
    eta = projection_eta(analysis)
    rule = (f"the spec's `[privacy] bound` B = {spec.bound!r}" if spec.bound is not None else
            "the largest power of two with $2\\eta B \\le 10^{-6}$ x the noise scale")
    lines = [f"Every release is clipped to a public norm bound B before its noise, "
             f"$c \\mapsto c \\min(1, B/\\|c\\|)$; by default B is {rule} (`bound=` or "
             "`--bound` overrides it). The float projection of a clipped curve is within "
             f"$\\eta B$ of the exact one, $\\eta$ = {eta!r}, so the loss is at most "
             "$\\varepsilon (d(q, q') + 2\\eta B)$ (likewise CGP)" + _condition(analysis)
             + _HELD[spec.outside], "",
             "| budget | noise scale | B | slack $2\\eta B$ | lattice $\\gamma$ |",
             "|---|---|---|---|---|"]
    for model, budget in [("epsilon", b) for b in budgets] + [("rho", b) for b in budgets]:
        scale = (ceil_float(1 / Fraction(budget)) if model == "epsilon"
                 else ceil_sqrt(1 / (2 * Fraction(budget))))
        bound, slack, step = facts(eta, scale, spec.bound)
        lines.append(f"| {model} = {budget:g} | {scale!r} | {bound!r} | {slack!r} | {step!r} |")
    return "\n".join(lines)


def _condition(analysis):
    """When the slack holds: for every input (the samples are clipped in the spec's
    metric), or under the module's SLACK_CONDITION (docs/clipping.md)."""
    condition = slack_condition(analysis.spec, analysis.parameters_fixed)
    if condition is None:
        return (", for every input: the samples are clipped in the spec's metric before "
                "the projection.")
    return f", when {condition}."


def explain_cdf(spec, tables, example=(1000, 1.0, 1e-5)):
    """Derivation of the CDF tables and of both sensitivities (second paper)."""
    K = tables.degree
    lo, hi = spec.interval
    matrix = tables.moment_matrix
    trace = sum(v ** 2 for v in matrix)
    sup, where = moment_sensitivity_sup(K)
    n, epsilon, delta = example
    errors = expected_l2_errors(K, n, epsilon, delta)
    odd, even = (K + 2) // 2, (K + 1) // 2
    return "\n".join([
        f"# {spec.title}", "",
        f"Spec `{spec.path}` (sha256 `{spec.sha256}`), Legendre degree $K = {K}$ on the public "
        f"interval $[{sympy.latex(lo)}, {sympy.latex(hi)}]$, mapped affinely to $[-1, 1]$ (clipped).", "",
        "## Coefficients of the empirical CDF", "",
        "With $e_k = \\sqrt{(2k+1)/2}\\,P_k$ and $F(x) = \\frac1N\\#\\{x_n \\le x\\}$: "
        "$(F|e_k) = \\frac1N\\sum_n \\int_{x_n}^1 e_k = \\alpha_k \\sum_{i=0}^k \\beta_{k,i}"
        "(1 - \\mu_{i+1})$, $\\alpha_k = 2^k\\sqrt{(2k+1)/2}$, "
        "$\\beta_{k,i} = \\frac{1}{i+1}\\binom{k}{i}\\binom{(k+i-1)/2}{k}$. "
        "Checked exactly against SymPy's Legendre polynomials in the tests.", "",
        _latex_matrix(matrix, "A"), "",
        "$c = b + A\\mu$ with $b_k = \\alpha_k\\sum_i \\beta_{k,i}$.", "",
        "## Sensitivities (replace one record, $N$ public)", "",
        f"- Moments $\\mu_i$, $i = 1..{K + 1}$: $|x'^i - x^i| \\le 2$ for odd $i$ ({odd} of them) and "
        f"$\\le 1$ for even $i$ ({even}), so $\\|\\Delta\\mu\\|_2^2 \\le ({4 * odd + even})/N^2 "
        f"\\le (5K+8)/(2N^2) = {sympy.latex(tables.moment_sensitivity_squared)}/N^2$ (the paper's bound, "
        "used by the `moments` method). It is not attained: one pair cannot maximize odd and even "
        f"powers at once; numerically the supremum is {sup:.6f}/N^2 at $(x, x') = "
        f"({where[0]:.4f}, {where[1]:.4f})$.",
        "- Orthonormal coefficients: the change is $\\frac1N(\\langle 1_{[x,x']}, e_k\\rangle)_k$ and by "
        "Bessel's inequality its squared norm is at most $\\|1_{[x,x']}\\|^2/N^2 = (x'-x)/N^2 \\le 2/N^2$ "
        "(on $[lo, hi]$: $\\sqrt{hi-lo}/N$). **Attained** for every $K$: $x = -1$, $x' = 1$ gives "
        "$1_{[-1,1]} = \\sqrt2\\,e_0$ in the span. The `direct` method uses $\\Delta = \\sqrt2/N$.", "",
        "## Expected L2 error of the noise (before post-processing)", "",
        "With $\\sigma(\\varepsilon, \\delta, \\Delta)$ from the analytic Gaussian mechanism:",
        "",
        "- direct: $\\sigma(\\varepsilon,\\delta,\\sqrt2/N)\\sqrt{K+1}$",
        f"- moments: $\\sigma(\\varepsilon,\\delta,\\sqrt{{(5K+8)/2}}/N)\\sqrt{{\\mathrm{{tr}}(AA^T)}}$, "
        f"$\\mathrm{{tr}}(AA^T) = {to_float(trace):.6g}$", "",
        f"For $N = {n}$, $\\varepsilon = {epsilon}$, $\\delta = {delta}$: direct {errors['direct']:.4g}, "
        f"moments {errors['moments']:.4g} (ratio {errors['moments'] / errors['direct']:.4g}).", "",
        JOINT_SENSITIVITY,
    ]) + "\n"


JOINT_SENSITIVITY = "\n".join([
    "## Several columns (data $(N, k)$, `gpcompiler.cdf.estimate`)", "",
    "Each column is mapped to $[-1, 1]$ and $F(y) = \\frac1N\\sum_n 1_{Q(x_n)}(y)$ with the "
    "quadrant $Q(x) = \\prod_i [x_i, 1]$; the tensor coefficients are "
    "$c_a = \\frac1N\\sum_n \\prod_i \\int_{x_{ni}}^1 e_{a_i}$. Replacing $x$ by $x'$ changes "
    "$NF$ by $1_{Q(x')} - 1_{Q(x)}$, whose squared $L^2$ norm is the volume of "
    "$Q(x) \\triangle Q(x') \\subseteq [-1, 1]^k$, at most $2^k$; projection is non-expansive, "
    "so the direct method's sensitivity is $\\sqrt{2^k}/N$. **Attained** for every degree: "
    "$x = (1, \\dots, 1)$, $x' = (-1, \\dots, -1)$ turns a null set into the box, "
    "$1_{[-1,1]^k} = \\sqrt{2^k}\\,e_0$. Post-processing: isotonic regression along each "
    "axis in turn (order-preserving, so earlier axes stay non-decreasing), then clipping "
    "to $[0, 1]$.",
])
