"""Adaptive privatization (paper Sec. 3.4, 4, 4.3): SVT, PrivFuncSelect, PrivFuncSeg with
ReduceSeg, continuity post-processing, unbounded domains, the LY23 baseline, and the
privacy ledger every algorithm returns."""
from .baseline import baseline_points
from .ledger import BudgetExceededError, PrivacyLedger
from .seg import (piecewise_project_and_privatize, priv_func_seg, priv_func_unbounded,
                  reduce_seg)
from .select import priv_func_select
from .svt import svt

__all__ = ["priv_func_select", "priv_func_seg", "priv_func_unbounded", "baseline_points",
           "piecewise_project_and_privatize",
           "reduce_seg", "svt", "PrivacyLedger", "BudgetExceededError"]
