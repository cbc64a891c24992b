"""The shared core of the analysis: its result types (Atoms, Quadrature,
Analysis, Stages), its limits, and the 1-D spec of one axis of a box."""
import dataclasses
import threading
import time
from dataclasses import dataclass

import sympy

from ..spec import Metric, family_functions
from ..symbolic import ExactMatrix, condition_number


AT_DEFAULTS = "exact at the default parameters only"


PROGRESS_AFTER = 2.0


@dataclass(frozen=True)
class Atoms:
    """Reference functions the generated module evaluates; e = K . atoms."""
    kind: str          # "legendre" | "piecewise" | "expression" | "fourier" | "sinc" | "hermite"
    size: int
    shifts: tuple = ()
    index: tuple = ()  # on a box: one multi-index per atom, psi_a = prod_i psi_(a_i)(x_i)
    breaks: tuple = ()  # piecewise: the exact breakpoints a_0 < ... < a_P, domain ends included
    order: int = 0      # piecewise: Legendre atoms P_0..P_(order-1) per piece (atom p order + d)


@dataclass(frozen=True)
class Quadrature:
    """Gauss-Legendre rule per linear piece of a curve (docs/design.md, "Exact analysis").

    ``exact_nodes`` is set when the integrand is a polynomial (the rule is then exact);
    otherwise pieces are cut into sub-pieces of length <= 8/frequency and the order is
    chosen per curve so the truncation term (frequency*h/2)^(2n)/(2n)! <= 1e-17.
    ``breaks`` are the points where the basis has a kink or a jump (piecewise atoms, abs, Max,
    Min, Piecewise): every piece is also cut there, so each rule meets a smooth integrand.
    ``singular`` lists (endpoint, exponent) where the weight behaves like |t - end|^alpha:
    pieces there are graded geometrically towards the endpoint.
    """
    exact_nodes: int = None
    frequency: float = None
    min_nodes: int = 2
    singular: tuple = ()
    breaks: tuple = ()    # exact breakpoints inside the domain: sub-pieces are cut there


@dataclass(frozen=True)
class Analysis:
    """Everything exact the emitter needs, with how each part was obtained."""
    spec: object
    gram: ExactMatrix
    gram_method: str
    lower: ExactMatrix
    pivots: tuple
    certificate: str
    cholesky: ExactMatrix
    transform: ExactMatrix
    atoms: Atoms
    quadrature: Quadrature
    condition_number: object
    numerical: bool
    formulas: tuple = ()      # (matrix name, closed form of its entries)
    factors: tuple = ()       # on a box with a tensor-product basis: the 1-D analyses

    @property
    def identity(self):
        return self.atoms.kind in ("sinc", "hermite")

    @property
    def parameters_fixed(self):
        """Whether G, or the quadrature's verified frequency, holds at the default parameter
        values only (then modules refuse others): a numerical Gram, or a rule that is not
        exact for integrands whose parameters may raise their frequency."""
        return (self.numerical or self.gram_method.startswith(AT_DEFAULTS)
                or (self.quadrature.exact_nodes is None and self._integrand_parameters()))

    def _integrand_parameters(self):
        """Whether a parameter appears in a basis function or the weight."""
        spec = self.spec
        expressions = [c for f in spec.functions for c in f] + [spec.metric.weight or 0]
        names = {symbol for symbol, _ in spec.parameters}
        return any(sympy.sympify(e).free_symbols & names for e in expressions)


class Stages:
    """Report the current stage through ``progress`` once a compile has run > 2 s."""

    def __init__(self, progress, label):
        self.progress, self.label, self.start = progress, label, time.monotonic()
        self.current, self.shown, self.timer = None, set(), None
        if progress:
            self.timer = threading.Timer(PROGRESS_AFTER, self._show)
            self.timer.daemon = True
            self.timer.start()

    def __call__(self, stage):
        self.current = stage
        if self.progress and time.monotonic() - self.start > PROGRESS_AFTER:
            self._show()

    def _show(self):
        stage = self.current
        if stage is not None and stage not in self.shown:
            self.shown.add(stage)
            self.progress(f"{self.label}: {stage} ({time.monotonic() - self.start:.0f} s)")

    def close(self):
        if self.timer:
            self.timer.cancel()


def basis_names(spec):
    return [", ".join(str(c) for c in f) for f in spec.functions]


def sparse(m, n, entries):
    entries = {k: v for k, v in entries.items() if v != 0}
    return ExactMatrix((m, n), entries, constant=not any(v.free_symbols for v in entries.values()))


def identity_matrix(m):
    return ExactMatrix((m, m), {(k, k): sympy.Integer(1) for k in range(m)})


def with_changes(analysis, **changes):
    return Analysis(**{**analysis.__dict__, **changes})


def is_polynomial_space(spec):
    t = spec.variable
    if spec.vector_basis or not all(e.is_finite for e in spec.interval):
        return False
    if spec.family is not None:
        return spec.family.name in ("monomial", "legendre")
    return all(f[0].is_polynomial(t) for f in spec.functions)


def is_polynomial_box(spec):
    if spec.vector_basis or not all(e.is_finite for i in spec.intervals for e in i):
        return False
    if spec.family is not None:
        return spec.family.name in ("monomial", "legendre")
    return all(f[0].is_polynomial(*spec.variables) for f in spec.functions)


def axis_spec(spec, axis, family, weight=None):
    """The 1-D spec of one variable with a 1-D family (a tensor factor), in L2 with the
    weight factor of that variable (plain L2 without one)."""
    t, interval = spec.variables[axis], spec.intervals[axis]
    return dataclasses.replace(
        spec, name=f"{spec.name}_{t}", variable=t, interval=interval, variables=(t,),
        intervals=(interval,), family=family, vector_basis=False, value_dim=1,
        functions=tuple((f,) for f in family_functions(family, t, interval)),
        metric=Metric(weight=None if weight in (None, 1) else weight), curve_interval=None)
