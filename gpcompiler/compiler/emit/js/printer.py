"""Numbers and expressions in generated JavaScript: every constant the shortest decimal that
parses back to the float64 nearest its exact value (Python's repr; JavaScript parses decimals
correctly rounded), the exact value in a comment beside it."""
import math

from sympy.printing.jscode import JavascriptCodePrinter

from ..c.printer import exact_float


def js_number(value):
    """The JavaScript literal of a float64: repr (shortest round trip), Infinity for inf."""
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if math.isnan(value):
        raise AssertionError("no NaN constant in generated JavaScript")
    return repr(float(value))


class JSPrinter(JavascriptCodePrinter):
    """JavaScript of a basis function of the variable (printed ``x``) at the parameters'
    defaults: every number the float64 nearest it (js_number)."""

    def __init__(self, variable):
        super().__init__({"strict": False})
        self._variable = variable

    def _print_Symbol(self, symbol):
        if symbol == self._variable:
            return "x"
        raise AssertionError(f"unexpected symbol {symbol} (parameters take their defaults)")

    def _number(self, value):
        literal = js_number(exact_float(value))
        return f"({literal})" if literal.startswith("-") else literal

    def _print_Integer(self, expr):
        return self._number(expr)

    _print_Rational = _print_Float = _print_NumberSymbol = _print_Integer
    _print_Pi = _print_Exp1 = _print_Half = _print_One = _print_Zero = _print_Integer
    _print_NegativeOne = _print_Integer

    def _print_sinc(self, expr):
        raise AssertionError("sinc in an expression basis: not in the JS target")


def js_expression(expression, variable):
    """JavaScript code of ``expression`` (parameters already substituted) in ``x``."""
    return JSPrinter(variable).doprint(expression)
