"""Results of an experiment: summaries, results.json, figures in the paper's layout and a
Markdown table. A method's line at each budget is its best setting (least mean error)
chosen with hindsight among its public settings, as the paper's figures show one line
per method; every setting's numbers are kept in results.json."""
import json
import re

import numpy

from .protocol import summary


def aggregate(per_curve, budgets, metric="l2"):
    """{method: {"settings": {setting: {"summaries": [...], "errors": [C][B][S]}},
    "best": [{"budget", "setting", summary...}]}} from simulate() results."""
    methods = {}
    for method, settings in per_curve[0]["errors"].items():
        entry = {"settings": {}, "best": []}
        for setting in settings:
            errors = numpy.array([result["errors"][method][setting] for result in per_curve])
            entry["settings"][setting] = {
                "summaries": [summary(errors[:, b]) for b in range(len(budgets))],
                "errors": _rounded(errors)}
        for b, budget in enumerate(budgets):
            best = min(entry["settings"], key=lambda s: entry["settings"][s]["summaries"][b][metric]["mean"])
            entry["best"].append({"budget": budget, "setting": best,
                                  **entry["settings"][best]["summaries"][b]})
        methods[method] = entry
    return methods


def _rounded(array):
    return numpy.vectorize(lambda v: float(f"{v:.6g}"))(array).tolist() if array.size else []


def headline(methods, paper_methods, baselines, metric="l2"):
    """Best baseline's mean error / each paper method's, per budget (> 1: the paper wins)."""
    ratios = {}
    for method in (m for m in paper_methods if m in methods):
        ratios[method] = [min(methods[name]["best"][b][metric]["mean"] for name in baselines)
                          / own[metric]["mean"] for b, own in enumerate(methods[method]["best"])]
    return {"paper_methods": list(paper_methods), "baselines": list(baselines), "metric": metric,
            "ratio_best_baseline_over_paper_method": ratios,
            "paper_method_wins_at_largest_budget": all(r[-1] > 1 for r in ratios.values())}


def write_json(path, results):
    """results as indented JSON with every innermost list of numbers on one line (a full
    run holds over a million errors); a string never holds a raw newline, so only arrays
    match."""
    from ..io.curves import write_text_atomically
    text = json.dumps(results, indent=1, allow_nan=False)
    text = re.sub(r"\[\n\s*(-?[0-9][-+0-9.eE,\s]*?)\s*\]",
                  lambda match: "[" + re.sub(r"\s+", "", match.group(1)) + "]", text)
    write_text_atomically(path, text + "\n")


def table(results):
    """The Markdown summary: mean normalized L2 (median [q25, q75]) per method and budget."""
    lines = [f"# {results['title']}", "",
             f"Paper: {results['paper']}. Data: {results['data']['source']} "
             f"({len(results['data']['ids'])} curve(s), sha256 {results['data']['sha256'][:12]}…); "
             f"{results['settings']['simulations']} simulations per curve; wall time "
             f"{results['wall_time_seconds']:.0f} s.", "",
             f"Cells: {results['metric_label']}, mean (median [25th, 75th percentile]); "
             "after a method with several settings, its best at that budget (chosen with hindsight).",
             "", NOT_PRIVATE, ""]
    for model, block in results["models"].items():
        budgets = block["budgets"]
        header = " | ".join(f"{block['symbol']} = {b:g}" for b in budgets)
        lines += [f"## {model}", "", f"| method | {header} |", "|---|" + "---|" * len(budgets)]
        for method, entry in block["methods"].items():
            cells = []
            for best in entry["best"]:
                stats = best[results["metric"]]
                cell = (f"{stats['mean']:.3g} ({stats['median']:.3g} "
                        f"[{stats['q25']:.3g}, {stats['q75']:.3g}])")
                if len(entry["settings"]) > 1:
                    cell += f" [{best['setting']}]"
                cells.append(cell)
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines.append("")
        for method, ratios in block["headline"]["ratio_best_baseline_over_paper_method"].items():
            lines.append(f"Best baseline / {method} (mean): " + ", ".join(f"{r:.2f}×" for r in ratios)
                         + "  ")
        lines.append("")
        lines += comparison(results, model)
    return "\n".join(lines)


def comparison(results, model):
    """Lines of the side-by-side table against the authors' published means (mean over
    curves of the mean over runs): ours, theirs, ours/theirs, and the spread over runs
    (the standard deviation, over simulations j, of the mean over curves of run j)."""
    published = results.get("published", {}).get("means", {}).get(model)
    if not published:
        return []
    block = results["models"][model]
    header = " | ".join(f"{block['symbol']} = {b:g}" for b in block["budgets"])
    lines = [f"Against the authors' published means ({results['published']['source']}); "
             "cells: ours / theirs = ratio (± spread of our mean over runs):", "",
             f"| method | {header} |", "|---|" + "---|" * len(block["budgets"])]
    for method, theirs in published.items():
        if method not in block["methods"]:
            continue
        errors = numpy.array(block["methods"][method]["settings"][""]["errors"])
        cells = [f"{errors[:, b].mean():.3g} / {t:.3g} = {errors[:, b].mean() / t:.2f}× "
                 f"(± {errors[:, b].mean(axis=0).std(ddof=1):.2g})"
                 for b, t in enumerate(theirs)]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines + [""]


NOT_PRIVATE = ("Not private: every error here compares a release with the true curve; "
               "\"LS Approximation\" is released without its final noise; a baseline whose "
               "k depends on a curve's sample count N (trajectories: k = N/10, N/5) and a "
               "setting chosen with hindsight use private data; the data notes (sample "
               "counts, durations) are the true data's. Only the methods' releases are private.")


def figures(out, results):
    """One PNG, a row per model: (a) mean error and (b) mean squared error against the
    budget (the layout of Figs. 6, 8, 10, 13-15), (c) median with quartiles (Figs. 17,
    18). Returns the file names."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    metric, label = results["metric"], results["metric_label"]
    rows = results["models"]
    figure, axes = plt.subplots(len(rows), 3, figsize=(16, 4.4 * len(rows)), squeeze=False)
    for row, (model, block) in zip(axes, rows.items()):
        budgets = block["budgets"]
        for number, (method, entry) in enumerate(block["methods"].items()):
            style = {"color": f"C{number}", "marker": "o", "label": method}
            row[0].plot(budgets, [best[metric]["mean"] for best in entry["best"]], **style)
            row[1].plot(budgets, [best["squared"]["mean"] for best in entry["best"]], **style)
            row[2].plot(budgets, [best[metric]["median"] for best in entry["best"]], **style)
            row[2].fill_between(budgets, [best[metric]["q25"] for best in entry["best"]],
                                [best[metric]["q75"] for best in entry["best"]],
                                color=style["color"], alpha=0.2)
        titles = (f"(a) {model}: mean {label}", f"(b) {model}: mean squared {label}",
                  f"(c) {model}: median {label}, 25th-75th percentile")
        ylabels = (f"mean error ({results['metric_unit']})",
                   f"mean squared error (squared {results['metric_unit']})",
                   f"median error ({results['metric_unit']})")
        for axis, title, ylabel in zip(row, titles, ylabels):
            _style(axis, block, ylabel)
            axis.set_title(title, fontsize=9)
    figure.tight_layout()
    name = "errors.png"
    figure.savefig(out / f"{name}.tmp.png", dpi=100)
    plt.close(figure)
    (out / f"{name}.tmp.png").replace(out / name)
    return [name]


FORMAT = "{x:g}"      # plain tick labels: mathtext's 10^k costs most of a figure's time


def _style(axis, block, ylabel):
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel(f"privacy budget {block['symbol']} ({block['budget_unit']})")
    axis.set_ylabel(ylabel)
    axis.minorticks_off()
    for ticks in (axis.xaxis, axis.yaxis):
        ticks.set_major_formatter(FORMAT)
    axis.grid(True, which="major", alpha=0.3)
    axis.legend(fontsize=7)

