"""Error taxonomy: user errors (bad specs, bad data) versus internal bugs.

The CLI prints a one-line message for every :class:`UserError` and exits 2; anything else
is a bug in gpcompiler: one line naming it and exit 3 (GPCOMPILER_DEBUG=1 re-raises it).
"""


class UserError(Exception):
    """Base class of every error caused by the user's input, not by gpcompiler."""


class SpecError(UserError, ValueError):
    """A spec file is malformed; ``problems`` lists every (key path, message) found."""

    def __init__(self, problems, path=None):
        self.problems = tuple(problems)
        self.path = path
        where = f"{path}: " if path else ""
        lines = [f"{key}: {message}" if key else message for key, message in self.problems]
        super().__init__(_one_line(where + "; ".join(lines)))


def _one_line(text):
    """``text`` with every character that is not printable (a line end in a file name, say)
    written as its Python escape: a spec error is one line."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


class NotPositiveDefiniteError(UserError, ValueError):
    """The Gram matrix is singular: the spec's basis functions are linearly dependent."""


class DataError(UserError, ValueError):
    """Input data (curves, samples, CSV files) cannot be used as given."""


class SymbolicLimitError(UserError, RuntimeError):
    """Symbolic work exceeded a time limit; ``limit`` names which one."""

    def __init__(self, message, limit=None):
        super().__init__(message)
        self.limit = limit


# How one curve's (or field's) own computation can fail on its values or times: it is not
# a valid function (ValueError, TypeError), or its projection does not fit in memory or
# overflows (MemoryError, ArithmeticError). Each stops that curve only: the command line
# releases the zero function in its place and names it, "not private" (docs/threat-model.md,
# "Public limits"). Any other exception is a bug in gpcompiler and surfaces.
CURVE_ERRORS = (ValueError, TypeError, ArithmeticError, MemoryError)
