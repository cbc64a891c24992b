"""The ledger's adapters (issue 35 item 2) against the real packages: OpenDP user
measurements composed in an OpenDP odometer give our exact totals (rounded up, never
down); dp_accounting events, read back from JSON without gpcompiler, give the RDP and
PLD accountants the exact privacy profile of the composed releases."""
import collections
import json
import math
from fractions import Fraction

import mpmath
import pytest

from gpcompiler.accounting import interop, records

dp = pytest.importorskip("opendp.prelude", reason="the interop extra: pip install opendp")
dpa = pytest.importorskip("dp_accounting", reason="the interop extra: pip install dp-accounting")

L2 = {"name": "L2", "sha256": "ab" * 32}


def release(model, cost, scale=None, slack=0.0, **extra):
    return records.record(label="t", model=model, metric=extra.pop("metric", L2), cost=cost,
                          parameter=float(cost), noise=("Gaussian", scale), slack=slack,
                          **extra)


GP = [release("GP", e, slack=s) for e, s in ((0.5, 1e-7), (0.25, 0.0), (1.3, 2e-6))]
CGP = [release("CGP", rho, 1 / math.sqrt(2 * rho) * (1 + 1e-15), slack=s)
       for rho, s in ((0.2, 1e-7), (0.05, 0.0), (0.4, 3e-6))]


def odometer_total(items, distance, view=None):
    queryable = interop.opendp_odometer(items[0], view)(None)
    for item in items:
        queryable(interop.opendp_measurement(item, release=[0.0], view=view))
    return queryable.privacy_loss(distance)


@pytest.mark.parametrize("items", [GP, CGP], ids=["GP", "CGP"])
def test_opendp_odometer_matches_the_exact_total(items):
    """An OpenDP fully adaptive odometer (opendp 0.16's make_fully_adaptive_composition)
    over user measurements at d = 0.7: at least our exact total epsilon (d + slack) or
    rho (d + slack)^2 summed, and within 1e-14 of it (OpenDP's float sums round up)."""
    exact = sum(interop.loss(item, 0.7) for item in items)
    total = odometer_total(items, 0.7)
    assert Fraction(total) >= exact and float(exact) == pytest.approx(total, rel=1e-14)
    assert exact != sum(records.cost(item) * Fraction(0.7) ** (1 + (item["model"] == "CGP"))
                        for item in items)   # the slack counts


def test_opendp_refuses_another_metric_and_views_a_cdf_as_zcdp():
    """A release over another metric (its user_distance) does not compose in the odometer;
    a CDF's Gaussian release as zCDP: rho = Delta^2/(2 sigma^2) per replaced record."""
    other = release("GP", 0.5, metric={"name": "H1", "sha256": "cd" * 32})
    queryable = interop.opendp_odometer(GP[0])(None)
    with pytest.raises(Exception, match="(?i)metric|domain|match"):
        queryable(interop.opendp_measurement(other))
    cdf = release("DP", 1.0, 7.25, delta=1e-6, sensitivity=1.5,
                  metric=records.replace_one_identity())
    rho = Fraction(1.5) ** 2 / (2 * Fraction(7.25) ** 2)
    assert Fraction(odometer_total([cdf, cdf], 1, view="zCDP")) >= 2 * rho
    assert odometer_total([cdf, cdf], 1, view="zCDP") == pytest.approx(float(2 * rho), rel=1e-15)
    assert interop.opendp_measurement(cdf).map(1) == (1.0, 1e-6)


def read_back(text):
    """Events from JSON as a consumer without gpcompiler reads them."""
    events = []
    for fields in json.loads(text):
        wrapper = collections.namedtuple(f"_{fields['class_name']}NamedTupleWrapper", fields)
        events.append(dpa.DpEvent.from_named_tuple(wrapper(**fields)))
    return dpa.ComposedDpEvent(events)


def gaussian_delta(mu, epsilon):
    """delta(epsilon) of a Gaussian of sensitivity/sigma = mu (Balle & Wang 2018)."""
    with mpmath.workdps(40):
        mu, epsilon = mpmath.mpf(mu), mpmath.mpf(epsilon)
        return mpmath.ncdf(mu / 2 - epsilon / mu) - mpmath.exp(epsilon) * mpmath.ncdf(
            -mu / 2 - epsilon / mu)


def randomized_response_delta(epsilons, epsilon):
    """delta(epsilon) of binary randomized responses composed, by enumeration."""
    with mpmath.workdps(40):
        total = mpmath.mpf(0)
        for signs in range(2 ** len(epsilons)):
            loss, probability = mpmath.mpf(0), mpmath.mpf(1)
            for i, e in enumerate(epsilons):
                up = bool(signs >> i & 1)
                loss += e if up else -e
                probability *= (mpmath.exp(e) if up else 1) / (1 + mpmath.exp(e))
            total += probability * max(0, 1 - mpmath.exp(epsilon - loss))
        return total


def test_dp_accounting_reads_the_events_back(tmp_path):
    """Events at radius r = 0.8 (CGP: Gaussian with multiplier sigma/(r + slack); GP:
    randomized response at epsilon (r + slack); a CDF: Gaussian sigma/Delta) written as
    JSON in to_named_tuple form and read back with dp_accounting alone: the PLD
    accountant's delta matches the exact profile of the composition (mpmath) and RDP
    bounds it from above by no more than the zCDP conversion of our exact rho."""
    r = Fraction(0.8)
    cdf = release("DP", 1.0, 7.25, delta=1e-6, sensitivity=1.5,
                  metric=records.replace_one_identity())
    path = tmp_path / "events.json"
    path.write_text(json.dumps([interop.dp_event(item, r) for item in CGP + [cdf]]))
    gaussian = read_back(path.read_text())
    mu = math.sqrt(sum((float(r) + item["slack"]) ** 2 / item["noise"]["scale"] ** 2
                       for item in CGP) + (1.5 / 7.25) ** 2)
    rho = sum(interop.loss(item, r) for item in CGP) + Fraction(1.5) ** 2 / (2 * Fraction(7.25) ** 2)
    assert mu ** 2 / 2 <= rho * (1 + 1e-12)                  # the noise spends <= the budget
    pld = dpa.pld.PLDAccountant().compose(gaussian)
    for epsilon in (0.5, 1.0, 2.0):
        exact = float(gaussian_delta(mu, epsilon))
        assert exact <= pld.get_delta(epsilon) <= exact * 1.01 + 1e-12
    rdp = dpa.rdp.RdpAccountant().compose(gaussian).get_epsilon(1e-6)
    exact_epsilon = mpmath.findroot(lambda e: gaussian_delta(mu, e) - 1e-6, 1.0)
    assert exact_epsilon < rdp <= float(rho) + 2 * math.sqrt(float(rho) * math.log(1e6))

    with pytest.raises(ValueError, match="REPLACE_ONE only"):
        interop.dp_event(GP[0], r)
    replace = dpa.NeighboringRelation.REPLACE_ONE
    path.write_text(json.dumps([interop.dp_event(item, r, "REPLACE_ONE") for item in GP]))
    pure = read_back(path.read_text())
    epsilons = [float(interop.loss(item, r)) for item in GP]
    pld = dpa.pld.PLDAccountant(replace).compose(pure)
    for epsilon in (0.5, 1.0, 1.5):
        exact = float(randomized_response_delta(epsilons, epsilon))
        assert exact - 1e-9 <= pld.get_delta(epsilon) <= exact * 1.01 + 1e-9
    # pure: delta 0 at the sum, to the PLD's pessimistic discretization (1e-4 per event)
    assert pld.get_delta(sum(epsilons) + len(epsilons) * 1e-4) < 1e-12 < pld.get_delta(
        sum(epsilons) - 0.01)
    mixed = read_back(json.dumps([interop.dp_event(item, r, "REPLACE_ONE")
                                  for item in GP + CGP]))      # one accountant for both
    both = dpa.pld.PLDAccountant(replace).compose(mixed).get_delta(2.0)
    alone = [dpa.pld.PLDAccountant(replace).compose(e).get_delta(2.0) for e in (pure, read_back(
        json.dumps([interop.dp_event(item, r, "REPLACE_ONE") for item in CGP])))]
    assert max(alone) < both <= 1
    gaussian_only = dpa.pld.PLDAccountant(replace).compose(read_back(json.dumps(
        [interop.dp_event(item, r, "REPLACE_ONE") for item in CGP])))
    mu_cgp = math.sqrt(sum((float(r) + item["slack"]) ** 2 / item["noise"]["scale"] ** 2
                           for item in CGP))
    exact = float(gaussian_delta(mu_cgp, 1.0))      # REPLACE_ONE: the same Gaussian profile
    assert exact <= gaussian_only.get_delta(1.0) <= exact * 1.01 + 1e-12
