"""The audit table: negative controls that must be flagged, real mechanisms that must pass.

Run with `gpcompiler audit --suite` (or `python -m pytest tests/test_audit.py -s`).
"""
import math
from dataclasses import dataclass
from pathlib import Path

import numpy

from . import cdf
from .adaptive import priv_func_select, priv_func_seg
from .audit import AuditReport, Claim, audit_module, audit_pair
from .build import import_module_file

ALPHA = 1e-6
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Row:
    """One audited mechanism and whether the auditor is expected to flag it."""
    name: str
    should_flag: bool
    report: AuditReport

    @property
    def ok(self):
        return self.report.violated == self.should_flag


def _generated(name):
    return import_module_file(ROOT / "generated" / f"{name}.py", f"audited_{name}")


def _spherical(rng, count, d):
    direction = rng.standard_normal((count, d))
    direction /= numpy.linalg.norm(direction, axis=1, keepdims=True)
    return rng.gamma(d, size=count)[:, None] * direction


def _hyperspherical_angles(rng, count, d):
    """The classic mistake: angles drawn uniformly, which is not uniform on the sphere."""
    angles = rng.uniform(0, math.pi, (count, d - 1))
    angles[:, -1] *= 2
    out = numpy.ones((count, d))
    for i in range(d - 1):
        out[:, i] *= numpy.cos(angles[:, i])
        out[:, i + 1:] *= numpy.sin(angles[:, i])[:, None]
    return rng.gamma(d, size=count)[:, None] * out


def _pair_report(name, claim, sampler_x, sampler_y, distance, samples, events, seed):
    result = audit_pair(sampler_x, sampler_y, claim, distance, label=name, samples=samples,
                        alpha=ALPHA, events=events, rng=numpy.random.default_rng(seed))
    return AuditReport(name, claim, (result,))


def negative_controls(samples, events):
    """Mechanisms that break their claim; the auditor must flag every one."""
    linear = _generated("linear")
    gram = linear.gram()
    a, b = numpy.array([2.0, 0.5]), numpy.array([0.5, 2.0])
    distance = math.sqrt((a - b) @ gram @ (a - b))

    def isotropic_laplace(center):
        return lambda n, g: center + _spherical(g, n, 2)

    def isotropic_gaussian(center):
        return lambda n, g: center + g.standard_normal((n, 2)) / math.sqrt(2 * 1.0)
    rows = [
        ("isotropic Laplace on user coefficients (Sec. 3.1)", Claim("GP", 1.0),
         isotropic_laplace(a), isotropic_laplace(b), distance),
        ("isotropic Gaussian on user coefficients", Claim("CGP", 1.0),
         isotropic_gaussian(a), isotropic_gaussian(b), distance),
    ]
    step = numpy.array([0.0, 3.0])
    half = (lambda c: lambda n, g: linear.privatize(numpy.broadcast_to(c, (n, 2)), epsilon=2.0, rng=g))
    rows.append(("linear: noise at half the required scale", Claim("GP", 1.0),
                 half(numpy.zeros(2)), half(step), 3.0))
    center = numpy.zeros(3)
    shifted = numpy.array([0.0, 0.0, 1.0])
    angles = (lambda c: lambda n, g: c + _hyperspherical_angles(g, n, 3))
    rows.append(("direction from uniform hyperspherical angles (d = 3)", Claim("GP", 1.0),
                 angles(center), angles(shifted), 1.0))
    rows.append(_cdf_moments_row(sensitivity_divisor=4))
    return [Row(name, True, _pair_report(name, claim, x, y, d, samples, events, seed))
            for seed, (name, claim, x, y, d) in enumerate(rows)]


def _cdf_moments_row(sensitivity_divisor=1, degree=10, n=1000):
    """Neighbouring datasets: all records at lo, or one moved to hi (the worst case)."""
    claim = Claim("DP", 1.0, 1e-5)
    base = cdf.Statistics.from_data(numpy.zeros(n), lo=0.0, hi=1.0, degree=degree, method="moments")
    moved = numpy.zeros(n)
    moved[0] = 1.0
    neighbour = cdf.Statistics.from_data(moved, lo=0.0, hi=1.0, degree=degree, method="moments")
    sigma = cdf.analytic_gaussian_sigma(1.0, 1e-5, base.sum_sensitivity() / sensitivity_divisor)
    name = ("CDF moments, sensitivity divided by 4" if sensitivity_divisor != 1
            else "CDF moments (paper's PP)")

    def sampler(statistics):
        return lambda count, g: statistics.sums + sigma * g.standard_normal((count, statistics.sums.size))
    return name, claim, sampler(base), sampler(neighbour), 1.0


def real_mechanisms(samples, events, end_to_end_samples):
    """Every shipped mechanism (GP and CGP), the adaptive algorithms, the CDF estimators."""
    rows = []
    specs = sorted(p.stem for p in (ROOT / "specs").glob("*.toml")
                   if 'kind = "cdf"' not in p.read_text())
    for index, name in enumerate(specs):
        module = _generated(name)
        for claim in (Claim("GP", 1.0), Claim("CGP", 0.5)):
            report = audit_module(module, claim, samples=samples, alpha=ALPHA, events=events,
                                  seed=index)
            rows.append(Row(f"{name} ({claim.model})", False, report))
    rows += _adaptive_rows(end_to_end_samples, events)
    rows += _cdf_rows(samples, end_to_end_samples, events)
    return rows


def _curve_pair(distance):
    """q = 0 and q' = a bump of L2 norm ``distance`` on [-1, 1] (33 samples)."""
    t = numpy.linspace(-1, 1, 33)
    bump = numpy.maximum(0.0, 1 - 4 * t ** 2)
    norm = math.sqrt(numpy.sum(numpy.diff(t) * (bump[:-1] ** 2 + bump[:-1] * bump[1:] + bump[1:] ** 2)) / 3)
    return t, numpy.zeros_like(t), bump * distance / norm


def _adaptive_rows(samples, events):
    rows = []
    legendre, linear = _generated("legendre10"), _generated("linear")
    grid = numpy.linspace(-1, 1, 24)
    # PrivFuncSeg runs on linear's domain [0, T] with T = 2, the pair shifted by 1
    for name, algorithm, module, shift, params in (
            ("PrivFuncSelect (legendre10)", priv_func_select, legendre, 0.0, {}),
            ("PrivFuncSeg (linear)", priv_func_seg, linear, 1.0, {"T": 2.0})):
        for claim in (Claim("GP", 1.0), Claim("CGP", 0.5)):
            keyword = {"epsilon": claim.budget} if claim.model == "GP" else {"rho": claim.budget}
            distance = 1.0
            t, q, q_prime = _curve_pair(distance)

            def sampler(y, algorithm=algorithm, module=module, keyword=keyword, shift=shift,
                        params=params):
                return lambda count, g: numpy.stack([
                    algorithm(t + shift, y, module, rng=g, **keyword, **params).evaluate(
                        grid + shift) for _ in range(count)])
            label = f"{name} ({claim.model})"
            rows.append(Row(label, False, _pair_report(label, claim, sampler(q), sampler(q_prime),
                                                       distance, samples, events, len(rows))))
    return rows


def _cdf_rows(samples, end_to_end_samples, events):
    rows = []
    name, claim, x, y, distance = _cdf_moments_row()
    rows.append(Row(name, False, _pair_report(name, claim, x, y, distance, samples, events, 50)))
    n, grid = 200, numpy.linspace(0, 1, 32)
    data, moved = numpy.zeros(n), numpy.zeros(n)
    moved[0] = 1.0
    for method in ("direct", "histogram", "adaptive-quantiles"):
        def sampler(values, method=method):
            return lambda count, g: numpy.stack([
                cdf.estimate(values, lo=0.0, hi=1.0, epsilon=1.0, delta=1e-5, degree=10,
                             method=method, rng=g).cdf(grid) for _ in range(count)])
        label = f"CDF {method} (end to end)"
        rows.append(Row(label, False, _pair_report(label, Claim("DP", 1.0, 1e-5), sampler(data),
                                                   sampler(moved), 1.0, end_to_end_samples,
                                                   events, 60 + len(rows))))
    return rows


def run_suite(samples=20000, end_to_end_samples=2000, progress=None):
    """All rows of the audit table (false-alarm budget ALPHA shared by all events)."""
    events = 120
    rows = negative_controls(samples, events)
    if progress:
        progress("negative controls done")
    rows += real_mechanisms(samples, events, end_to_end_samples)
    return rows


def format_table(rows):
    """Markdown table: certified loss versus the claim for each row's worst pair."""
    lines = ["| mechanism | claim | expected | flagged | certified loss | claimed loss | event |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        worst = row.report.worst
        lines.append(f"| {row.name} | {row.report.claim.describe(worst.distance)} | "
                     f"{'flag' if row.should_flag else 'pass'} | "
                     f"{'yes' if row.report.violated else 'no'} | {worst.certified_loss:.3f} | "
                     f"{worst.claimed_loss:.3f} | {worst.event} |")
    return "\n".join(lines)
