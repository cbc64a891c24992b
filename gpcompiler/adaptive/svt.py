"""Sparse vector technique (paper Alg. 1), charged to a privacy ledger."""
from fractions import Fraction

from ..runtime.rounding import ceil_float, floor_float
from .noise import draw


def svt(queries, threshold, lipschitz, epsilon1, epsilon2, *, rng, ledger, label):
    """Index of the first query with g_j + V_j >= T + W, or None if none crosses; each
    comparison decided as the real numbers decide it (runtime/exact.py).

    W ~ Lap(K/epsilon1) is drawn once; V_j ~ Lap(2K/epsilon2) per query. ``queries`` is a
    finite (or lazily generated, but finite) iterable of query values g_j(x). The step costs
    epsilon1 + epsilon2 (GP), charged before any noise is drawn; when no query crosses the
    caller decides (the algorithms here then take the last, largest candidate, which is
    post-processing of the same outcome).
    """
    threshold_scale = ceil_float(Fraction(lipschitz) / Fraction(epsilon1))
    noise = ("Laplace (SVT threshold; queries 2K/epsilon2)", threshold_scale, lipschitz)
    ledger.spend_gp(f"{label}: SVT", noise=noise, epsilon=Fraction(epsilon1) + Fraction(epsilon2))
    noisy_threshold = threshold + draw(rng, "laplace", threshold_scale)
    query_scale = ceil_float(2 * Fraction(lipschitz) / Fraction(epsilon2))
    for index, value in enumerate(queries):
        if value + draw(rng, "laplace", query_scale) >= noisy_threshold:
            return index
    return None


def svt_split(ledger, share):
    """(epsilon1, epsilon2, epsilon0): thirds eps0/3 and 2 eps0/3 of the GP parameter eps0
    whose cost in ``ledger`` is at most ``share`` (GP: eps0 = share; CGP: eps0^2/2 = share).
    The split is exact, so the SVT never costs more than ``share``."""
    epsilon0 = ledger.gp_parameter_for(share)
    first = epsilon0 / 3
    return first, floor_float(Fraction(epsilon0) - Fraction(first)), epsilon0
