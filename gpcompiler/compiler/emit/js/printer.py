"""Numbers and expressions in generated JavaScript: every constant the shortest decimal that
parses back to the float64 nearest its exact value (Python's repr; JavaScript parses decimals
correctly rounded), the exact value in a comment beside it."""
import math

from sympy.printing.jscode import JavascriptCodePrinter

from ..c.printer import ExactNumbers


def js_number(value):
    """The JavaScript literal of a float64: repr (shortest round trip), Infinity for inf."""
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if math.isnan(value):
        raise AssertionError("no NaN constant in generated JavaScript")
    return repr(float(value))


class JSPrinter(ExactNumbers, JavascriptCodePrinter):
    """JavaScript of a basis function of the variable (printed ``x``) at the parameters'
    defaults: every number the float64 nearest it (js_number)."""
    literal = staticmethod(js_number)


def js_expression(expression, variable):
    """JavaScript code of ``expression`` (parameters already substituted) in ``x``."""
    return JSPrinter(variable).doprint(expression)
