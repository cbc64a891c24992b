"""PrivFuncSeg with local monomial bases of degree 1, 4, 8 and 16 on the Gaussian mixtures
(paper Sec. 5.3, Figs. 12, 16) against the LY23 baseline (k in {10, 20, 50, 100},
s = k/10). The monomial specs on [0, 100] are compiled on first use (and cached)."""
from ..adaptive.curve import make_curve
from ..compiler.build import cache_dir, load as load_spec
from ..io.curves import write_text_atomically
from . import mixtures
from .protocol import baseline_errors
from .seg_common import seg_errors

TITLE = "Gaussian mixtures: PrivFuncSeg with local degree 1, 4, 8, 16 against the LY23 baseline"
PAPER = "Sec. 5.3, Figs. 12, 16 (CGP)"
DEGREES = (1, 4, 8, 16)
models = mixtures.models
published = mixtures.published
PUBLISHED_SOURCE = mixtures.PUBLISHED_SOURCE
SPEC_TEXT = """name = "monomial{d}_0_100"
title = "Monomials 1, t, ..., t^{d} on [0, 100] (paper Fig. 12)"

[domain]
intervals = [["0", "100"]]

[basis]
family = {{ name = "monomial", degree = {d} }}
"""


def degrees(quick):
    return DEGREES[:2] if quick else DEGREES


PAPER_METHODS = tuple(f"PrivFuncSeg (degree {d})" for d in DEGREES)


def settings(quick):
    return {"degrees": list(degrees(quick)), "beta": 0.1, "spec": SPEC_TEXT.format(d="D"),
            "baseline": [[k, [s for _, s in w]] for _, k, w in mixtures.baseline_plan(quick)]}


def spec_module(degree):
    """The compiled monomial spec of ``degree`` on [0, 100]."""
    path = cache_dir() / "experiments" / f"monomial{degree}_0_100.toml"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(path, SPEC_TEXT.format(d=degree))
    return load_spec(path)


def load(data, quick, curves, options):
    return mixtures.load(data, quick, curves)


def simulate(index, t, y, domain, model, budgets, simulations, quick):
    """Normalized L2 errors (budget, simulation) of every method on one curve."""
    curve = make_curve(t, y, domain)
    key = "epsilon" if model == "GP" else "rho"
    errors = {}
    for degree in degrees(quick):
        found = seg_errors(index, t, y, curve, spec_module(degree), key, budgets, simulations,
                           {}, tag=f"degree {degree}")
        del found[f"LS Approximation (degree {degree})"]      # not in Fig. 12
        errors.update(found)
    errors.update(baseline_errors(index, t, y, curve, key, budgets, simulations,
                                  mixtures.baseline_plan(quick)))
    return {"errors": errors}
