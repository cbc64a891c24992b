"""`gpcompiler explain`: the derivation of a compiled spec as Markdown with LaTeX."""
import sympy

from .symbolic import to_float

FULL_MATRIX_LIMIT = 12


def _latex_matrix(matrix, symbol):
    rows, cols = matrix.shape
    if rows <= FULL_MATRIX_LIMIT and cols <= FULL_MATRIX_LIMIT:
        return f"$$ {symbol} = {sympy.latex(sympy.Matrix(matrix))} $$"
    block = sympy.Matrix(matrix)[:6, :6]
    return (f"$$ {symbol}_{{[1..6,1..6]}} = {sympy.latex(block)} $$\n\n"
            f"({rows}x{cols}: the full exact matrix is printed entry by entry in the "
            "generated module.)")


def _is_identity(matrix):
    dok = matrix.todok()
    rows, cols = matrix.shape
    return rows == cols and len(dok) == rows and all(i == j and v == 1 for (i, j), v in dok.items())


def explain(compiled):
    """Markdown text auditing every step from spec to mechanism."""
    spec, analysis = compiled.spec, compiled.analysis
    d = spec.coef_dim
    parts = [f"# {spec.title}", "",
             f"Spec `{spec.path}` (sha256 `{spec.sha256}`), module `{spec.name}`.", "",
             "## Function space", "", _space(spec), "",
             "## Gram matrix", "", f"Obtained by: {analysis.gram_method}.", ""]
    if _is_identity(analysis.gram):
        parts.append(f"$$ G = I_{{{spec.basis_size}}} $$")
    else:
        parts.append(_latex_matrix(analysis.gram, "G"))
    if spec.value_dim > 1 and not spec.vector_basis:
        parts += ["", f"Vector coefficients in $\\mathbb{{R}}^{spec.value_dim}$ (paper Sec. 3.3): "
                      f"the mechanism uses $G \\otimes I_{spec.value_dim}$, $d = m n = {d}$."]
    parts += ["", "## Positive-definiteness certificate", "",
              f"Exact $G = L D L^T$; {analysis.certificate}.", "", _pivots(analysis), "",
              "## Orthonormal basis", "", _orthonormal(analysis), "",
              "## Conditioning of the user basis", "",
              f"$\\kappa_2(G) = {analysis.condition_number:.6g}$ at the default parameters. "
              "The generated module works in orthonormal coordinates $c = R^T a$ "
              "($G = R R^T$), where the mechanism is perfectly conditioned; `to_user` "
              "solves with $R^T$ and loses about "
              f"{max(0.0, sympy.log(analysis.condition_number, 10) / 2):.1f} "
              "significant digits to the user-basis conditioning.", "",
              "## Mechanisms and error", "", _errors(d)]
    return "\n".join(parts) + "\n"


def _space(spec):
    lo, hi = spec.interval
    lines = [f"Domain $I = [{sympy.latex(lo)}, {sympy.latex(hi)}]$, metric {spec.metric.kind}"
             + (f" with weight ${sympy.latex(spec.metric.weight)}$" if spec.metric.weight is not None else "")
             + "."]
    if spec.curve_interval:
        clo, chi = spec.curve_interval
        lines.append(f"Curves live on $[{sympy.latex(clo)}, {sympy.latex(chi)}]$ and are "
                     "extended by zero (paper Sec. 3.5).")
    if spec.parameters:
        lines.append("Parameters (positive): " + ", ".join(
            f"${sympy.latex(s)} = {sympy.latex(v)}$ by default" for s, v in spec.parameters) + ".")
    shown = spec.functions[:FULL_MATRIX_LIMIT]
    items = [f"- $\\varphi_{{{j + 1}}}(t) = " + ", ".join(sympy.latex(c) for c in f) + "$"
             for j, f in enumerate(shown)]
    if len(spec.functions) > len(shown):
        items.append(f"- ... ({spec.basis_size} functions in all)")
    return "\n".join(lines + [""] + items)


def _pivots(analysis):
    shown = analysis.pivots[:FULL_MATRIX_LIMIT]
    text = ", ".join(f"D_{{{j + 1}}} = {sympy.latex(p)}" for j, p in enumerate(shown))
    more = f" (and {len(analysis.pivots) - len(shown)} more)" if len(analysis.pivots) > len(shown) else ""
    return f"$$ {text} $$" + more


def _orthonormal(analysis):
    kind = analysis.atoms.kind
    atoms = {
        "legendre": "$L_k(t) = \\sqrt{(2k+1)/(b-a)}\\,P_k(u)$, $u = (2t-a-b)/(b-a)$, "
                    "evaluated by the three-term recurrence",
        "expression": "the user's functions $\\varphi_k$",
        "sinc": "$\\operatorname{sinc}(t-k)$, orthonormal on $\\mathbb{R}$ (paper Fact B.9)",
        "hermite": "the Hermite functions, orthonormal on $\\mathbb{R}$",
    }[kind]
    text = (f"$e = R^{{-1}}\\varphi = K\\,\\psi$ with atoms $\\psi$ = {atoms}. "
            "Float64 constants are rounded once from the exact values.\n\n")
    if _is_identity(analysis.transform):
        return text + "$$ K = I $$"
    return text + _latex_matrix(analysis.transform, "K")


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
