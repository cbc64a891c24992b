"""`gpcompiler experiment NAME`: the paper's evaluation
(docs/evidence/experiments.md)."""
import time

from ..errors import DataError
from .common import say


def cmd_experiment(args):
    """`gpcompiler experiment NAME`: the paper's evaluation under its protocol (Sec. 5)."""
    from ..experiments import run
    out = args.out or f"experiment-{args.name}"
    options = {"column": args.column, "lo": args.lo, "hi": args.hi}
    start = time.perf_counter()
    try:
        results = run(args.name, data=args.data, quick=args.quick, simulations=args.seeds,
                      jobs=args.jobs, out=out, curves=args.curves, options=options)
    except ValueError as error:
        raise DataError(f"experiment {args.name}: {error}") from None
    for model, block in results["models"].items():
        for method, ratios in block["headline"]["ratio_best_baseline_over_paper_method"].items():
            say(args, f"{model}: best baseline / {method} (mean {results['metric_label']}) "
                       f"at {block['symbol']} = {block['budgets'][-1]:g}: {ratios[-1]:.2f}x")
    say(args, f"wrote {out}/results.json, {out}/table.md, "
         + ", ".join(f"{out}/{name}" for name in results["figures"])
         + f" ({time.perf_counter() - start:.0f} s)")
    return 0
