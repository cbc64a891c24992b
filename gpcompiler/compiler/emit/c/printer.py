"""Numbers and expressions in generated C: every constant a C99 hexadecimal float literal of
the float64 nearest its exact value (never p.0/q.0: a quotient of two rounded integers is
not the nearest float of the rational), the exact value in a comment beside it."""
import math

import sympy
from sympy.printing.c import C99CodePrinter

from ...symbolic import to_float


def hex_float(value):
    """The C literal of a finite float64: float.hex() without trailing zeros (0x1.8p+1),
    exact by construction; infinities as the <math.h> macro."""
    if math.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    if math.isnan(value):
        raise AssertionError("no NaN constant in generated C")
    text = value.hex()
    mantissa, exponent = text.split("p")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}p{exponent}"


def exact_float(value):
    """The float64 nearest an exact SymPy value (symbolic.to_float: correctly rounded)."""
    return to_float(sympy.sympify(value))


class ExactNumbers:
    """A SymPy code printer's numbers and variable for generated code (the C and JS
    targets): the variable printed ``x``, every number the literal (``self.literal``) of the
    float64 nearest its exact value, parenthesized when negative."""

    def __init__(self, variable):
        super().__init__({"strict": False})
        self._variable = variable

    def _print_Symbol(self, symbol):
        if symbol == self._variable:
            return "x"
        raise AssertionError(f"unexpected symbol {symbol} (parameters take their defaults)")

    def _number(self, value):
        literal = self.literal(exact_float(value))
        return f"({literal})" if literal.startswith("-") else literal

    def _print_Integer(self, expr):
        return self._number(expr)

    _print_Rational = _print_Float = _print_NumberSymbol = _print_Integer
    _print_Pi = _print_Exp1 = _print_Half = _print_One = _print_Zero = _print_Integer
    _print_NegativeOne = _print_Integer

    def _print_sinc(self, expr):
        raise AssertionError("sinc in an expression basis: not in the C or JS target")


class CPrinter(ExactNumbers, C99CodePrinter):
    """C99 code of a basis function of the variable (printed ``x``) at the parameters'
    defaults: every number a hexadecimal float of its nearest float64."""
    literal = staticmethod(hex_float)


def c_expression(expression, variable):
    """C code of ``expression`` (parameters already substituted) in the variable ``x``."""
    return CPrinter(variable).doprint(expression)
