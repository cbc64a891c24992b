"""Results of the adaptive algorithms: evaluable anywhere, with their choices and ledger."""
from dataclasses import dataclass

import numpy


@dataclass(frozen=True)
class PrivateFunction:
    """A privatized function. ``evaluate(t)`` returns (T,) for scalar curves, (T, n) else.

    ``basis_indices`` (PrivFuncSelect) or ``breakpoints`` (PrivFuncSeg) record what was
    chosen; ``ledger`` lists every noisy step and its spend.
    """
    method: str
    ledger: object
    value_dim: int
    evaluator: object
    basis_indices: tuple = None
    breakpoints: numpy.ndarray = None
    coefficients: numpy.ndarray = None
    details: tuple = ()

    def evaluate(self, t):
        values = numpy.asarray(self.evaluator(numpy.asarray(t, dtype=float)), dtype=float)
        return values[..., 0] if self.value_dim == 1 else values
