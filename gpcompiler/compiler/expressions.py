"""Parse spec expressions into SymPy without evaluating any Python code.

The string is parsed by :mod:`ast` and the tree is walked node by node: only numbers,
whitelisted names and functions, and arithmetic operators are accepted. Nothing is ever
passed to ``eval``, so ``__import__('os')`` is a parse error, not an import.
"""
import ast
import math
import warnings

import sympy

MAX_LENGTH = 2000
MAX_EXPONENT = 256


def _normalized_sinc(x):
    """sinc(x) = sin(pi x)/(pi x), the normalized sinc of the paper (Sec. 3.5)."""
    return sympy.sinc(sympy.pi * x)


FUNCTIONS = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "exp": sympy.exp,
    "log": sympy.log, "sqrt": sympy.sqrt, "sinh": sympy.sinh, "cosh": sympy.cosh,
    "tanh": sympy.tanh, "atan": sympy.atan, "abs": sympy.Abs, "sinc": _normalized_sinc,
    "erf": sympy.erf, "Max": sympy.Max, "Min": sympy.Min, "Piecewise": sympy.Piecewise,
}
_VARIADIC = {"Max", "Min"}   # two or more arguments
_COMPARISONS = {ast.Lt: sympy.Lt, ast.LtE: sympy.Le, ast.Gt: sympy.Gt, ast.GtE: sympy.Ge}
CONSTANTS = {"pi": sympy.pi, "E": sympy.E, "oo": sympy.oo}
_BINARY = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
}


class ExpressionError(ValueError):
    """The expression string is not an accepted formula; the message says why."""


def parse_expression(text, symbols):
    """Return the SymPy expression of ``text`` using only ``symbols`` (name -> Symbol)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = repr(text)
    if not isinstance(text, str):
        raise ExpressionError(f"expected a string expression, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise ExpressionError(f"cannot parse {text!r}") from None
    try:
        return _convert(tree.body, symbols)
    except RecursionError:
        raise ExpressionError(f"expression {text!r} is nested too deeply") from None


def _convert(node, symbols):
    if isinstance(node, ast.Constant):
        return _number(node.value)
    if isinstance(node, ast.Name):
        if node.id in symbols:
            return symbols[node.id]
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        allowed = ", ".join(sorted(set(symbols) | set(CONSTANTS)))
        raise ExpressionError(f"unknown name {node.id!r} (allowed: {allowed})")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _convert(node.operand, symbols)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        return _binary(node, symbols)
    if isinstance(node, ast.Call):
        return _call(node, symbols)
    raise ExpressionError(f"{type(node).__name__} is not allowed in an expression")


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ExpressionError(f"constant {value!r} is not a number")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ExpressionError(f"number {value!r} is not finite")
        return sympy.Rational(repr(value))
    return sympy.Integer(value)


def _binary(node, symbols):
    if isinstance(node.op, ast.BitXor):
        raise ExpressionError("'^' is not a power in Python syntax: write '**'")
    left, right = _convert(node.left, symbols), _convert(node.right, symbols)
    if isinstance(node.op, ast.Pow):
        if right.is_number and (not right.is_finite or abs(right) > MAX_EXPONENT):
            raise ExpressionError(f"exponent {right} exceeds the limit {MAX_EXPONENT}")
        return left ** right
    operation = _BINARY.get(type(node.op))
    if operation is None:
        raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")
    return operation(left, right)


def _call(node, symbols):
    if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
        name = getattr(node.func, "id", ast.unparse(node.func))
        raise ExpressionError(
            f"unknown function {name!r} (allowed: {', '.join(sorted(FUNCTIONS))})")
    name = node.func.id
    if node.keywords:
        raise ExpressionError(f"{name}() takes positional arguments only")
    if name == "Piecewise":
        return _piecewise(node.args, symbols)
    if name in _VARIADIC:
        if len(node.args) < 2:
            raise ExpressionError(f"{name}() takes two or more arguments")
        return FUNCTIONS[name](*(_convert(a, symbols) for a in node.args))
    if len(node.args) != 1:
        raise ExpressionError(f"{name}() takes exactly one positional argument")
    return FUNCTIONS[name](_convert(node.args[0], symbols))


def _piecewise(arguments, symbols):
    """Piecewise((value, condition), ..., (value, True)): the first branch whose condition
    holds; a condition is a comparison (chains such as 1 <= t < 2 allowed), the last True."""
    usage = ("Piecewise takes (value, condition) pairs, the last condition True, e.g. "
             "Piecewise((t, t < 1), (2 - t, True))")
    if not arguments or not all(isinstance(a, ast.Tuple) and len(a.elts) == 2
                                for a in arguments):
        raise ExpressionError(usage)
    last = arguments[-1].elts[1]
    if not (isinstance(last, ast.Constant) and last.value is True):
        raise ExpressionError(usage)
    branches = [(_convert(a.elts[0], symbols), _condition(a.elts[1], symbols))
                for a in arguments[:-1]]
    return sympy.Piecewise(*branches, (_convert(arguments[-1].elts[0], symbols), True))


def _condition(node, symbols):
    """A comparison (a chain is the conjunction of its links) between expressions."""
    if not isinstance(node, ast.Compare) or not all(type(op) in _COMPARISONS for op in node.ops):
        raise ExpressionError(f"a Piecewise condition is a comparison with <, <=, > or >=, "
                              f"got {ast.unparse(node)!r}")
    values = [_convert(v, symbols) for v in [node.left] + node.comparators]
    return sympy.And(*(_COMPARISONS[type(op)](a, b)
                       for op, a, b in zip(node.ops, values[:-1], values[1:])))
