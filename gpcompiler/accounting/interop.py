"""Ledger records for other accountants (docs/reference/ledger.md, "Adapters"; the
``interop`` extra): OpenDP measurements over a user distance named for the record's
metric, and dp_accounting events at a radius r in DpEvent.to_named_tuple form. Every
float handed over is rounded toward more privacy loss (parameters up, noise down)."""
import math
from fractions import Fraction

import mpmath

from ..runtime.rounding import ceil_float, floor_float
from .records import cost


def _slack(item):
    return Fraction(item["slack"] or 0)


def _zcdp_rho(item):
    """rho of a DP record's Gaussian release as zCDP: Delta^2 / (2 sigma^2) per replaced
    record (exact)."""
    return Fraction(item["sensitivity"]) ** 2 / (2 * Fraction(item["noise"]["scale"]) ** 2)


def loss(item, distance, view=None):
    """The exact privacy loss of a record at input distance ``distance``: GP
    epsilon (d + slack), CGP rho (d + slack)^2, DP (epsilon, delta) at d <= 1, zCDP
    rho d^2; ``view="zCDP"``: a DP record's Gaussian release as zCDP."""
    d = Fraction(distance)
    model = "zCDP" if view == "zCDP" else item["model"]
    if model == "GP":
        return cost(item) * (d + _slack(item))
    if model == "CGP":
        return cost(item) * (d + _slack(item)) ** 2
    if model == "zCDP":
        return (_zcdp_rho(item) if item["model"] == "DP" else cost(item)) * d ** 2
    if d > 1:
        raise ValueError(f"{item['label']}: (epsilon, delta)-DP is stated for one replaced "
                         f"record, not {distance}")
    return (cost(item), Fraction(item["delta"] or 0)) if d else (Fraction(0), Fraction(0))


def _measure(item, view):
    import opendp.prelude as dp
    if view == "zCDP" or item["model"] in ("CGP", "zCDP"):
        return dp.zero_concentrated_divergence()
    if item["model"] == "DP" and Fraction(item["delta"] or 0) > 0:
        return dp.approximate(dp.max_divergence())
    return dp.max_divergence()


def user_space(item):
    """(user_domain, user_distance) of a record's metric: named for it, so that only
    releases over the same distance compose in one OpenDP odometer."""
    import opendp.prelude as dp
    dp.enable_features("contrib", "honest-but-curious")
    name = f"gpcompiler: {item['metric']['name']} sha256:{item['metric']['sha256']}"
    return dp.user_domain(f"{name} (data)", lambda _: True), dp.user_distance(name)


def opendp_measurement(item, release=None, view=None):
    """The record as an OpenDP make_user_measurement returning ``release`` (the released
    values), its privacy map :func:`loss` rounded up to floats. GP: max_divergence,
    d -> epsilon (d + slack); CGP: zero_concentrated_divergence, d -> rho (d + slack)^2;
    DP: approximate(max_divergence), d -> (epsilon, delta) (max_divergence when delta is 0),
    or with ``view="zCDP"`` its Gaussian's rho d^2."""
    import opendp.prelude as dp
    domain, metric = user_space(item)
    measure = _measure(item, view)

    def privacy_map(distance):
        value = loss(item, distance, view)
        if isinstance(value, tuple):
            return tuple(ceil_float(part) for part in value)
        return ceil_float(value)
    return dp.m.make_user_measurement(domain, metric, measure, function=lambda _: release,
                                      privacy_map=privacy_map)


def opendp_odometer(item, view=None):
    """An OpenDP fully adaptive composition odometer over a record's domain, distance and
    measure: the releases of that metric compose in it."""
    import opendp.prelude as dp
    return dp.c.make_fully_adaptive_composition(*user_space(item), _measure(item, view))


def _randomized_response(epsilon):
    """Binary randomized response of parameter epsilon, which dominates every epsilon-DP
    mechanism (Kairouz, Oh and Viswanath 2015, Thm. 2.1): noise parameter 2/(1 + e^eps),
    rounded down (less noise, more loss)."""
    with mpmath.workdps(50):
        exact = 2 / (1 + mpmath.exp(mpmath.mpf(epsilon.numerator) / epsilon.denominator))
        value = float(exact)
        if mpmath.mpf(value) > exact:
            value = math.nextafter(value, 0.0)
    return {"module_name": "dp_accounting.dp_event", "class_name": "RandomizedResponseDpEvent",
            "noise_parameter": value, "num_buckets": 2}


def _gaussian(multiplier):
    return {"module_name": "dp_accounting.dp_event", "class_name": "GaussianDpEvent",
            "noise_multiplier": floor_float(multiplier)}


RELATIONS = ("ADD_OR_REMOVE_ONE", "REPLACE_ONE")


def dp_event(item, radius, relation="ADD_OR_REMOVE_ONE"):
    """The record as a dp_accounting event at input distance ``radius`` (a curve replaced
    by one at distance r; a DP record's event is that of one replaced record, whatever
    ``radius``), as the dict of DpEvent.to_named_tuple (JSON; read back with
    DpEvent.from_named_tuple), for an accountant of neighbouring ``relation``. CGP (and
    Gaussian CDF) releases: GaussianDpEvent, noise multiplier sigma/(r + slack)
    (sigma/Delta), doubled under REPLACE_ONE, where dp_accounting's Gaussian moves by twice
    the sensitivity; GP and a degree choice: randomized response at epsilon (r + slack),
    the dominating pair of pure DP (dp_accounting 0.6 has no EpsilonDeltaDpEvent), which
    it composes under REPLACE_ONE only; a CGP record with no single noise scale (an
    adaptive method): ZCDpEvent(rho (r + slack)^2)."""
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {', '.join(RELATIONS)}, got {relation!r}")
    r = Fraction(radius)
    scale = item["noise"]["scale"]
    pure = item["model"] == "GP" or (item["model"] == "DP" and not Fraction(item["delta"] or 0))
    if pure and relation != "REPLACE_ONE":
        raise ValueError(f"{item['label']}: a pure epsilon step is randomized response, which "
                         "dp_accounting composes under REPLACE_ONE only: pass "
                         "relation=\"REPLACE_ONE\"")
    twice = 2 if relation == "REPLACE_ONE" else 1
    if item["model"] == "DP":
        if pure:
            return _randomized_response(cost(item))
        return _gaussian(twice * Fraction(scale) / Fraction(item["sensitivity"]))
    if item["model"] == "GP":
        return _randomized_response(loss(item, r))
    if item["model"] == "CGP" and scale is not None:
        return _gaussian(twice * Fraction(scale) / (r + _slack(item)))
    return {"module_name": "dp_accounting.dp_event", "class_name": "ZCDpEvent",
            "rho": ceil_float(loss(item, r)), "xi": 0.0}
