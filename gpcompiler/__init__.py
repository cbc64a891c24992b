"""gpcompiler: compile function spaces into geo-private mechanisms for functional data."""
__version__ = "0.1.0"

from .build import load  # noqa: E402
from .errors import DataError, NotPositiveDefiniteError, SpecError, UserError  # noqa: E402

__all__ = ["load", "SpecError", "NotPositiveDefiniteError", "DataError", "UserError"]
