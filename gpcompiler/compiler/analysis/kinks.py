"""Where a basis in one variable switches branch: the breakpoints of its abs, Max, Min,
Piecewise, sign and Heaviside, which must be rational for the module's Gauss rules to be cut
there (docs/reference/spec.md, "B-splines and piecewise bases")."""
from fractions import Fraction

import sympy

from ...errors import SpecError

KINKS = (sympy.Abs, sympy.Max, sympy.Min, sympy.Piecewise, sympy.sign, sympy.Heaviside)
SHOWN = "abs, Max, Min or Piecewise"


def rational_poly(expression, t):
    """Coefficients (Fractions, lowest first) of a polynomial in t over QQ, else None."""
    if not expression.is_polynomial(t):
        return None
    coefficients = sympy.Poly(expression, t).all_coeffs()[::-1]
    if not all(c.is_Rational for c in coefficients):
        return None
    return [fraction(c) for c in coefficients]


def fraction(value):
    return Fraction(int(value.p), int(value.q))


def on_piece(expression, t, point):
    """``expression`` on the piece holding ``point`` (strictly between breakpoints): each
    abs, Max, Min, Piecewise, sign and Heaviside replaced by the branch it takes there."""
    def branch(node):
        at = node.subs(t, point)
        if isinstance(node, sympy.Abs):
            return node.args[0] if node.args[0].subs(t, point) >= 0 else -node.args[0]
        if isinstance(node, (sympy.Max, sympy.Min)):
            return next((a for a in node.args if a.subs(t, point) == at), node)
        if isinstance(node, sympy.Piecewise):
            return next((e for e, c in node.args if c.subs(t, point) == sympy.true), node)
        return at
    return expression.replace(lambda node: isinstance(node, KINKS), branch)


def breakpoints(spec):
    """The sorted rational points strictly inside a rational interval where an abs, Max, Min,
    Piecewise, sign or Heaviside of a basis function switches; a one-line SpecError when one
    is irrational (at the default parameters) or no root of a polynomial (no Gauss rule can
    integrate across it: say what to change)."""
    lo, hi = spec.interval
    if spec.dimension != 1 or not (lo.is_Rational and hi.is_Rational):
        return ()
    found = set()
    for j, function in enumerate(spec.functions):
        for component in function:
            for node in sympy.preorder_traversal(component):
                if isinstance(node, KINKS):
                    for switch in _switches(node):
                        found |= _roots(spec, j, node, switch, lo, hi)
    return tuple(sorted(found))


def _switches(node):
    """The expressions whose sign change makes ``node`` switch branch."""
    if isinstance(node, (sympy.Max, sympy.Min)):
        return [a - b for i, a in enumerate(node.args) for b in node.args[i + 1:]]
    if isinstance(node, sympy.Piecewise):
        return [r.lhs - r.rhs for _, c in node.args
                for r in sympy.sympify(c).atoms(sympy.core.relational.Relational)]
    return [node.args[0]]


def _roots(spec, j, node, switch, lo, hi):
    """The roots of ``switch`` strictly inside (lo, hi) at the default parameters (a module
    whose integrands hold parameters and have no exact Gauss rule accepts the defaults only:
    Analysis.parameters_fixed), all rational, else a SpecError."""
    t = spec.variable
    key = f"basis.functions[{j}]"
    if not switch.has(t):
        return set()
    advice = (f"write {SHOWN} of polynomials in {t} with rational coefficients whose "
              f"breakpoints are rational numbers (or use the bspline family)")
    switch = switch.subs(spec.defaults)
    numerator = sympy.numer(sympy.together(switch))
    if rational_poly(numerator, t) is not None:
        roots = {r for r in sympy.Poly(numerator, t).real_roots() if lo < r < hi}
    else:
        roots = _algebraic_roots(numerator, t, lo, hi)
    if roots is None:
        raise SpecError([(key, f"{node} switches where {switch} = 0, not the roots of a "
                               f"polynomial with rational coefficients: {advice}")], spec.path)
    irrational = sorted((r for r in roots if not r.is_Rational), key=float)
    if irrational:
        raise SpecError([(key, f"{node} switches at {t} = {irrational[0]}"
                               + (" (at the default parameters)" if spec.parameters else "")
                               + f", an irrational breakpoint no Gauss rule can integrate "
                               f"across: {advice}")],
                        spec.path)
    return roots


def _algebraic_roots(expression, t, lo, hi):
    """The real roots inside (lo, hi) of a polynomial with other numeric coefficients, when
    SymPy finds all of them in closed form; None otherwise."""
    if not expression.is_polynomial(t):
        return None
    poly = sympy.Poly(expression, t)
    found = sympy.roots(poly)
    if sum(found.values()) != poly.degree():
        return None
    return {r for r in found if r.is_real and lo < r < hi}
