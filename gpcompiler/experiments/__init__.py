"""The paper's evaluation under the paper's protocol (Sec. 5, App. C.3, F):
``gpcompiler experiment NAME``. One module per experiment; each defines TITLE, PAPER,
PAPER_METHODS, models(quick), settings(quick), load(data, quick, curves, options) and
simulate(index, t, y, domain, model, budgets, simulations, quick), and may override the
DEFAULTS (the LY23 baselines, the normalized L2 error)."""
import time
from importlib import import_module
from pathlib import Path

from .. import __version__
from ..io.curves import write_text_atomically
from . import report
from .protocol import BASE_SEED, run_tasks

NAMES = ("ecg", "select", "trajectories", "segments", "cdf")
DEFAULTS = {"BASELINES": ("Baseline", "Baseline (smoothed)"), "METRIC": "l2",
            "METRIC_LABEL": "L2 error / ||q||", "METRIC_UNIT": "relative to ||q||"}
QUICK_SIMULATIONS = 2
FULL_SIMULATIONS = 30


def run(name, *, data=None, quick=False, simulations=None, jobs=1, out=None, curves=None,
        options=None):
    """Run experiment ``name``; write results.json, figures and table.md to ``out`` (if
    given) and return the results dictionary."""
    experiment = import_module(f"{__name__}.{name}")
    spec = {key: getattr(experiment, key, value) for key, value in DEFAULTS.items()}
    simulations = simulations or (QUICK_SIMULATIONS if quick else FULL_SIMULATIONS)
    start = time.perf_counter()
    dataset = experiment.load(data, quick, curves, options or {})
    models = experiment.models(quick)
    per_curve = run_tasks(name, dataset, {m: grid["budgets"] for m, grid in models.items()},
                          simulations, quick, jobs)
    results = {
        "experiment": name, "title": experiment.TITLE, "paper": experiment.PAPER,
        "tool_version": __version__, "metric": spec["METRIC"],
        "metric_label": spec["METRIC_LABEL"], "metric_unit": spec["METRIC_UNIT"],
        "settings": {"quick": quick, "simulations": simulations, "jobs": jobs,
                     "base_seed": BASE_SEED,
                     "seeding": "simulation j of curve i uses numpy.random.default_rng("
                                "[base_seed, i, j]) for every method and budget",
                     "domain": list(dataset.domain), **experiment.settings(quick)},
        "data": {"source": dataset.source, "sha256": dataset.sha256, "ids": list(dataset.ids),
                 **dataset.notes},
        "models": {},
    }
    for model, grid in models.items():
        methods = report.aggregate(per_curve[model], grid["budgets"], spec["METRIC"])
        results["models"][model] = {
            "symbol": grid["symbol"], "budget_unit": grid["unit"], "budgets": grid["budgets"],
            "methods": methods,
            "headline": report.headline(methods, experiment.PAPER_METHODS, spec["BASELINES"],
                                        spec["METRIC"])}
        extras = [result.get("extras") for result in per_curve[model] if result.get("extras")]
        if extras:
            results["models"][model]["extras"] = extras
    published = getattr(experiment, "published", None)
    published = published and published(dataset, models)
    if published:
        results["published"] = {"source": experiment.PUBLISHED_SOURCE, "means": published}
    results["wall_time_seconds"] = time.perf_counter() - start
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        results["figures"] = report.figures(out, results)
        write_text_atomically(out / "table.md", report.table(results) + "\n")
        report.write_json(out / "results.json", results)
    return results
