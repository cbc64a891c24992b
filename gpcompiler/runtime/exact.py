"""Exact releases (docs/threat-model.md, "Exact releases"): every released number is
round_gamma(x + scale * Z), the ideal mechanism's real-valued output rounded to the public
lattice gamma Z, computed from lazily drawn random bits with rigorous error bounds."""
import math

LATTICE_BITS = 20  # gamma = 2^(floor(log2 scale) - LATTICE_BITS)


def lattice(scale):
    """The public lattice step gamma of a noise scale: the largest power of two <= scale,
    times 2^-LATTICE_BITS (a function of public values only)."""
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"a noise scale must be positive and finite, got {scale!r}")
    return math.ldexp(1.0, math.frexp(scale)[1] - 1 - LATTICE_BITS)
