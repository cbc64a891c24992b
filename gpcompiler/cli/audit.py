"""`gpcompiler audit`: the audit table, the power table, or one mechanism's
audit (docs/evidence/privacy-audit.md)."""
import sys
from pathlib import Path

from ..errors import UserError
from .common import named_error, progress_bar
from .privatize import load_mechanism


def cmd_audit(args):
    """`gpcompiler audit SPEC | --suite | --power`: black-box audit and noise conformance."""
    from ..audit import suite as audit_suite
    _check_options(args)
    mode = "quick" if args.quick else "full"
    if args.power:
        bar = _audit_bar(args, len(audit_suite.power_tasks(mode)))
        results = audit_suite.run_power(mode, jobs=args.jobs, progress=bar.update_with,
                                        alpha=args.alpha)
        bar.close()
        print(audit_suite.format_power(results))
        audits = [audit for _, audit, _ in results]
        failures = [a.name for _, a, mutant in results if a.violated != mutant]
    else:
        rows = _audit_rows(args, mode)
        print(audit_suite.format_table(rows))
        audits = [row.audit for row in rows]
        failures = [row.name for row in rows if not row.ok]
    for audit in audits:
        if audit.conformance is not None:
            print(audit.conformance.describe())
    bound, tests = audit_suite.false_alarm_bound(audits)
    print(f"false-alarm probability of the whole table <= {bound:.3g} "
          f"(Bonferroni over the {tests} tests of {len(audits)} audits actually run)")
    if failures:
        print(f"unexpected audit outcome for: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


def _check_options(args):
    """Refuse options that the chosen audit would ignore (one line, before any work)."""
    table = "--suite" if args.suite else "--power" if args.power else None
    if args.suite and args.power:
        raise UserError("--suite and --power are two tables: choose one")
    if table is None:
        if args.jobs != 1:
            raise UserError("--jobs is for --suite and --power (a SPEC audit runs in one process)")
        return
    spec_only = [name for name, used in (
        (f"the spec {args.spec}", args.spec), ("--epsilon", args.epsilon), ("--rho", args.rho),
        ("--delta", args.delta is not None),
        ("--samples", args.samples), ("--draws", args.draws),
        ("--no-conformance", not args.conformance), ("--seed", args.seed != 0)) if used]
    if spec_only:
        raise UserError(f"{table} audits its own mechanisms at their own budgets: "
                        f"{', '.join(spec_only)} {'is' if len(spec_only) == 1 else 'are'} for "
                        "auditing one SPEC")


def _audit_rows(args, mode):
    """Rows of `audit --suite` or of `audit SPEC` (one per claim, sharing --alpha)."""
    from ..audit import suite as audit_suite
    from ..audit.blackbox import Claim
    if args.suite:
        bar = _audit_bar(args, len(audit_suite.suite_tasks(mode)))
        rows = audit_suite.run_suite(mode, jobs=args.jobs, progress=bar.update_with,
                                     alpha=args.alpha)
        bar.close()
        return rows
    if not args.spec:
        raise UserError("give a spec or generated module to audit, or --suite / --power")
    module = _audited_module(args.spec)
    if hasattr(module, "DEGREE"):
        return [_cdf_spec_row(args, module, mode)]
    if args.delta is not None:
        raise UserError(f"--delta is for a kind = \"cdf\" spec ((epsilon, delta)-DP); "
                        f"{args.spec} is a curve mechanism (GP or CGP)")
    claims = ([Claim("GP", args.epsilon)] if args.epsilon else []) + \
             ([Claim("CGP", args.rho)] if args.rho else [])
    claims = claims or [Claim("GP", 1.0), Claim("CGP", 0.5)]
    bar, rows = _audit_bar(args, len(claims)), []
    for claim in claims:
        audit = audit_suite.audit_mechanism(
            module, claim.model, claim.budget, mode=mode, alpha=args.alpha / len(claims),
            seed=args.seed, samples=args.samples, draws=args.draws, conformant=args.conformance)
        bar.update_with(audit)
        rows.append(audit_suite.Row(audit.name, False, audit))
    bar.close()
    return rows


def _cdf_spec_row(args, module, mode):
    """The row of `audit CDF_SPEC`: its direct release at (--epsilon, --delta)-DP, default
    (1, 1e-5) (audit.suite.cdf_spec_audit)."""
    from ..audit import suite as audit_suite
    if args.rho is not None:
        raise UserError(f"--rho: {args.spec} is a kind = \"cdf\" spec, released under "
                        "(epsilon, delta)-DP: give --epsilon and --delta")
    bar = _audit_bar(args, 1)
    audit = audit_suite.cdf_spec_audit(
        module, args.epsilon or 1.0, 1e-5 if args.delta is None else args.delta, mode=mode,
        alpha=args.alpha, seed=args.seed, samples=args.samples, draws=args.draws,
        conformant=args.conformance)
    bar.update_with(audit)
    bar.close()
    return audit_suite.Row(audit.name, False, audit)


def _audited_module(spec):
    """A spec's module (a curve mechanism or a kind = "cdf" spec), or a generated module
    file, checked to be a curve mechanism."""
    from ..compiler.build import import_module_file, load
    if not spec.endswith(".py"):
        try:
            module = load(spec)
        except UserError as error:
            raise named_error(spec, error) from None
        return module if hasattr(module, "DEGREE") else load_mechanism(spec)
    if not Path(spec).is_file():
        raise UserError(f"no generated module at {spec}")
    module = import_module_file(Path(spec))
    if not hasattr(module, "privatize") or not hasattr(module, "gram"):
        raise UserError(f"{spec} is not a generated curve mechanism")
    return module


def _audit_bar(args, total):
    """The progress bar of an audit: audits done, pairs and draws so far, time left."""
    bar = progress_bar(args, total, " audits")
    counts = {"pairs": 0, "draws": 0}

    def update_with(audit):
        if audit.black_box:
            counts["pairs"] += len(audit.black_box.pairs)
        if audit.conformance:
            counts["draws"] += audit.conformance.draws
        bar.set_postfix(counts, refresh=False)
        bar.update(1)
    bar.update_with = update_with
    return bar
