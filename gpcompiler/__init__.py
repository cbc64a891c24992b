"""gpcompiler: compile function spaces into geo-private mechanisms for functional data."""
__version__ = "0.1.0"

from .adaptive import (PrivacyLedger, baseline_points, priv_func_seg,  # noqa: E402
                       priv_func_select, priv_func_unbounded)
from .build import load  # noqa: E402
from .errors import DataError, NotPositiveDefiniteError, SpecError, UserError  # noqa: E402

__all__ = ["load", "priv_func_select", "priv_func_seg", "priv_func_unbounded", "baseline_points",
           "PrivacyLedger", "SpecError", "NotPositiveDefiniteError", "DataError", "UserError"]
