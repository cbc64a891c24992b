"""Stage 2: :class:`Spec` -> :class:`Analysis`, the exact mathematics (SymPy).

Gram matrix G (paper Sec. 3.2, called Sigma^{-1} there), its exact LDL^T certificate,
a factor R with G = R R^T (user coefficients a <-> orthonormal coordinates c = R^T a)
and the orthonormal basis e = K . atoms, where the atoms are functions the generated
module can evaluate stably (normalized shifted Legendre polynomials for polynomial
spaces, the Fourier, sinc and Hermite families, or the user's own expressions).

Closed forms come first (docs/design.md, "Exact analysis"): orthogonal families have a
diagonal Gram matrix; a polynomial space is mapped to Legendre polynomials by an exact
triangular change of basis C built by recurrence, so G = C D C^T with D diagonal;
symbolic integration, then mpmath quadrature, are the last resorts.

The modules (docs/design.md, "Module map"): this one dispatches a spec to line.py (one
variable) or box.py (a box); both stand on the shared core below them (core: the result
types; factor: LDL^T and its certificate; weights; quadrature; gram: integration;
legendre: polynomial spaces through Legendre atoms), none of which imports either.
"""
from .box import analyze_box
from .line import analyze_line
from .quadrature import check_sub_pieces


def analyze(spec, stage=None):
    """Compute the exact Gram matrix, certificate and orthonormal basis of a spec;
    ``stage(name)`` (a :class:`Stages`) hears each stage as it starts."""
    return _analyze(spec, stage or (lambda name: None))


def _analyze(spec, stage):
    stage("Gram matrix")
    analysis = analyze_box(spec, stage) if spec.dimension > 1 else analyze_line(spec, stage)
    check_sub_pieces(analysis)
    return analysis
