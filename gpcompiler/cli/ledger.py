"""The ledger of the releasing commands (--ledger FILE, --cap, --epoch) and `gpcompiler
ledger FILE`: the composed totals, exactly (docs/reference/ledger.md)."""
from ..errors import UserError
from .common import say


def ledger_options(parser, positive):
    """--ledger, --cap (of argparse type ``positive``), --epoch of a releasing command."""
    parser.add_argument("--ledger", metavar="FILE",
                        help="append this release's privacy records to FILE (JSON Lines, "
                             "docs/reference/ledger.md) (default: none)")
    parser.add_argument("--cap", type=positive, metavar="X",
                        help="with --ledger: refuse, before any noise, a release that would "
                             "take this UTC epoch's spend in its model (epsilon, rho or DP "
                             "epsilon; every record of FILE, whatever its metric, each curve "
                             "of a batch counted) over X; else the same data, spec, budget "
                             "and options return the stored release (FILE.releases/) and "
                             "charge nothing (default: no cap, no store)")
    parser.add_argument("--epoch", choices=("day", "week"), default="day",
                        help="with --cap: the UTC epoch the cap renews over (ISO weeks from "
                             "Monday)")


def check_ledger_options(args):
    """Before any data is read: --cap and --epoch need --ledger; the ledger is writable;
    --cap (memoized re-release) with no --plot or --scheduler."""
    from ..io.curves import check_writable
    if args.ledger is None:
        if args.cap is not None or args.epoch != "day":
            raise UserError("--cap and --epoch apply to a --ledger FILE: give one")
        return
    check_writable(args.ledger)
    if args.cap is not None and (args.plot is not None or args.scheduler is not None):
        raise UserError("--cap returns a stored release for repeated data, written as it "
                        "was: it takes no --plot or --scheduler")


def _device(args):
    from ..accounting import DeviceLedger
    return DeviceLedger(args.ledger, cap=args.cap, epoch=args.epoch)


def before_noise(args, model, cost, identity):
    """With --ledger: lock the ledger for the command (released when it ends), then with
    --cap the cap check on ``cost`` (the release's total: a refusal is one line, nothing
    written, whether or not the data was released before), then the stored release of
    ``identity()`` (the same data and options), else None."""
    if args.ledger is None:
        return None
    device = _device(args)
    args.scheduler_stack.enter_context(device.locked())
    _check_cap(args, device, model, cost)
    from ..accounting.records import sha256_json
    args.ledger_key = None if args.cap is None else sha256_json(identity())
    stored = None if args.cap is None else device.stored(args.ledger_key)
    if stored is not None:
        say(args, f"{args.ledger}: the same data, spec, budget and options were released on "
                  f"{stored['time']} (release {stored['release_id']}): that release again, "
                  "charged nothing")
        return stored["release"]
    return None


def _check_cap(args, device, model, cost):
    """device.check, a refusal by the budgets' binary values alone saying so."""
    from fractions import Fraction
    from ..accounting.device import CapExceededError
    try:
        device.check(model, cost)
    except CapExceededError as error:
        over = device.spent(model) + Fraction(cost) - Fraction(args.cap)
        if over <= Fraction(args.cap) * Fraction(1, 2 ** 40):  # budgets' binary values
            raise CapExceededError(
                f"{error} (over by {float(over):.3g}: budgets are spent at their float64 "
                f"values, and {float(cost)!r} is {Fraction(cost)} exactly; a cap a little higher, "
                f"such as {args.cap * (1 + 1e-9)!r}, admits them: docs/reference/ledger.md)"
            ) from None
        raise


def charge(args, lines, text):
    """With --ledger: append ``lines`` (one write), then with --cap store the release."""
    if args.ledger is not None:
        _device(args).commit(lines, args.ledger_key, text)


def options_identity(args, skip=("output", "plot", "quiet", "ledger", "cap", "epoch", "run",
                                 "scheduler", "scheduler_stack", "compare", "at")):
    """The options that shape a release (the memoization key, with the data's digest):
    repr of every value but where the output goes."""
    values = {key: repr(value) for key, value in vars(args).items() if key not in skip}
    if getattr(args, "at", None) is not None:
        from ..accounting.device import digest
        values["at"] = digest(args.at)
    return values


def cmd_ledger(args):
    """`gpcompiler ledger FILE`: the composed total per model and metric, and per UTC
    epoch, exactly (rational strings) and as floats; --plot the cumulative cost."""
    from ..accounting import records
    from .figures import check_plot, png
    from .writers import write_files
    check_plot(args.plot)
    items = records.read(args.file)
    if args.plot and not items:
        raise UserError(f"{args.file}: no records to plot (--plot)")
    names = {item["metric"]["sha256"]: item["metric"]["name"] for item in items}
    print(f"{args.file}: {len(items)} records ({records.FORMAT})")
    for title, length in (("total", None), (f"per UTC {args.epoch}", args.epoch)):
        totals, mixed = records.compose(items, length), records.compose(_as_cgp(items), length)
        print(title + ":")
        for key in sorted(totals):
            model, metric, *epoch = key
            rows = [(model, totals[key])]
            if model == "CGP" and ("GP", metric, *epoch) in totals:
                rows.append(("CGP and GP as epsilon^2/2", mixed[key]))
            for name, (spent, delta) in rows:
                print("  " + "  ".join([*epoch, name, f"{names[metric]} {metric[:12]}",
                                        _amount(model, spent, delta)]))
    if args.plot:
        write_files(args, [(args.plot, png(_cumulative_figure(items, names)))])
    return 0


def _as_cgp(items):
    """The GP and CGP records, a GP step of epsilon as a CGP step of epsilon^2/2."""
    from ..accounting.records import cost
    return [{**item, "model": "CGP", "cost": str(cost(item) ** 2 / 2)}
            if item["model"] == "GP" else item for item in items if item["model"] in ("GP", "CGP")]


_UNITS = {"GP": "epsilon per unit distance", "CGP": "rho per unit squared distance",
          "DP": "epsilon", "zCDP": "rho"}


def _amount(model, spent, delta):
    text = f"{_UNITS[model]} {spent} = {float(spent)!r}"
    return text + (f", delta {delta} = {float(delta)!r}" if model == "DP" else "")


def _cumulative_figure(items, names):
    """Cumulative cost against UTC time, one step line per (model, metric)."""
    import datetime
    from ..accounting import records
    from .figures import load_pyplot
    figure, axis = load_pyplot().subplots(figsize=(8, 4))
    series, moments = {}, sorted(((records.when(item), item) for item in items),
                                 key=lambda pair: pair[0])
    for moment, item in moments:
        series.setdefault(records.group(item), []).append((moment, records.cost(item)))
    for (model, metric), steps in sorted(series.items()):
        totals, running = [0.0], 0   # from 0 at the first record: one record is a step too
        for _, amount in steps:
            running += amount
            totals.append(float(running))
        axis.step([steps[0][0]] + [moment for moment, _ in steps], totals, where="post",
                  marker="o", markersize=3, label=f"{model}, {names[metric]} ({_UNITS[model]})")
    axis.set_ylim(bottom=0)
    first, last = moments[0][0], moments[-1][0]
    if first == last:   # one moment: an hour either side, not matplotlib's years
        hour = datetime.timedelta(hours=1)
        axis.set_xlim(first - hour, last + hour)
    axis.set_xlabel("time (UTC)")
    axis.set_ylabel("cumulative cost (the model's unit, see legend)")
    axis.set_title("privacy spent: composed exactly (docs/reference/ledger.md)", fontsize=9)
    axis.legend(fontsize=8)
    figure.autofmt_xdate()
    figure.tight_layout()
    return figure


def curve_cost(args, module, params):
    """(model, metric identity, exact cost) of a privatize release: the budget, per unit of
    the metric's distance (the adaptive methods' guarantee as a whole, docs/reference/
    adaptive.md), per curve."""
    from fractions import Fraction
    from ..accounting.records import metric_identity, sha256_json
    from ..compiler.build import resolve_spec
    values = {} if args.method == "unbounded" else {**module.PARAMETERS, **params}
    metric = metric_identity(resolve_spec(args.spec), values)
    if args.method in ("unbounded", "baseline"):
        relation = ({"domain": "the real line"} if args.method == "unbounded"
                    else {"baseline": "largest Euclidean distance of the values at k points",
                          "k": args.k, "window": args.window})
        metric = {"name": f"{metric['name']} ({args.method})",
                  "sha256": sha256_json({"metric": metric["sha256"], **relation})}
    model, budget = ("GP", args.epsilon) if args.epsilon is not None else ("CGP", args.rho)
    return model, metric, Fraction(budget)


def curve_records(args, module, params, facts, count):
    """The record of a privatize release of ``count`` curves (fields), each with its own
    data: the noise scale of Project-and-Privatize (None for an adaptive method, whose
    steps have their own scales), and the public facts (bound, slack, lattice step)."""
    from ..accounting.records import record
    from ..adaptive.noise import release_scale
    model, metric, cost = curve_cost(args, module, params)
    scale = release_scale(model, float(cost)) if args.method == "project" else None
    return [record(label=f"privatize {module.NAME} --method {args.method}", model=model,
                   metric=metric, spec={"name": module.NAME, "sha256": module.SPEC_SHA256},
                   cost=cost, parameter=float(cost),
                   noise=("spherical Laplace" if model == "GP" else "Gaussian", scale),
                   lattice=facts["lattice"], bound=facts["bound"], slack=facts["slack"],
                   count=count)]


def cdf_records(args, result, spec, joint=False):
    """The records of a CDF release: one per step of result.spent (a private degree choice,
    delta 0, then the Gaussian release of the sums), each (epsilon, delta)-DP under
    replace-one (a joint CDF's degree choices: no Gumbel scale stated)."""
    from ..accounting.records import record, replace_one_identity
    from ..cdf.degree import selection_noise
    (sensitivity, sigma, lattice), = result.noise
    spec = {"name": spec["spec"], "sha256": spec["spec_sha256"]} if spec else None
    lines = []
    for epsilon, delta, count in result.spent:
        gaussian = delta > 0
        selection = {} if gaussian or joint else selection_noise(count, args.epsilon, args.delta)
        lines.append(record(
            label=f"cdf --method {args.method}" + ("" if gaussian else ": degree choice"),
            model="DP", metric=replace_one_identity(), spec=spec, cost=epsilon, delta=delta,
            parameter=epsilon,
            noise=("Gaussian", sigma) if gaussian else ("Gumbel (exponential mechanism)",
                                                        selection.get("gumbel_scale")),
            sensitivity=sensitivity if gaussian else selection.get("score_sensitivity"),
            lattice=lattice if gaussian else None))
    return lines
