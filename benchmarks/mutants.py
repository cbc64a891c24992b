"""Mutation testing of the privacy core (issue 24): does some test fail when a privacy
constant, a rounding direction or a check is wrong?

Each mutation in CATALOG is one small, named edit: in one file, inside one function (found
by its ``def``, so line numbers do not matter), one expression's exact text replaced by
another. A mutation of a template is applied to the template and to the same function of
every committed generated module holding that text (what `gpcompiler compile` would emit).
Each is applied in its own copy of a scratch copy of the repository taken at the start (so
the work tree may change during a run), and the tests named for it run there
(`-n 0 -x`, a time limit per mutant): "killed" names the first failing test, "survived"
means they all passed, "stale" that the function or the text is no longer there (the
catalog needs updating: never skipped silently), "timeout" that the tests ran out of time.

    python -m benchmarks.mutants                  # every mutant but the equivalent ones
    python -m benchmarks.mutants --list           # the catalog and whether each matches
    python -m benchmarks.mutants -k svt seg       # mutants whose name has a substring
    python -m benchmarks.mutants --equivalent     # run the equivalent ones too
    python -m benchmarks.mutants --group survivors   # issue 24's table only

Kinds: "privacy" (a privacy bug if shipped: must be killed), "utility" (changes only
utility or the paper's split: reported, not required), "equivalent" (cannot change any
release's law: listed with the reason, run only with --equivalent). Not part of the test
suite, nor of `python -m benchmarks`.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = "tests/test_privacy_mutants.py::"
TEMPLATE = "gpcompiler/templates/module.py.tmpl"
LEDGER_TEST = ("tests/test_adaptive.py::"
               "test_ledger_total_never_exceeds_budget_and_sums_its_steps")


@dataclass(frozen=True)
class Mutation:
    """Replace ``old`` (exact text, once) by ``new`` inside ``function`` of ``path``."""
    name: str
    path: str
    function: str
    old: str
    new: str
    tests: tuple
    kind: str = "privacy"
    reason: str = ""


def _t(*names):
    """Node ids of tests in tests/test_privacy_mutants.py."""
    return tuple(TESTS + n for n in names)


SURVIVORS = [   # the 15 privacy survivors of issue 24's table
    Mutation("seg level SVT Lipschitz 0.5", "gpcompiler/adaptive/seg.py", "choose_level",
             "svt(queries(), 0.0, 1.0,", "svt(queries(), 0.0, 0.5,",
             _t("test_seg_level_svt_noise_is_the_proofs_for_its_charge"),
             reason="half the SVT noise of the level choice"),
    Mutation("unbounded clipping SVT Lipschitz 1", "gpcompiler/adaptive/seg.py",
             "priv_func_unbounded", "-1 / epsilon_prime, 2.0,", "-1 / epsilon_prime, 1.0,",
             _t("test_unbounded_clipping_svt_noise_is_the_proofs_for_its_charge"),
             reason="half the clipping SVT's noise"),
    Mutation("ReduceSeg sensitivity 0.5", "gpcompiler/adaptive/seg.py", "reduce_seg",
             'level {level}", 1.0,', 'level {level}", 0.5,',
             _t("test_reduce_seg_noise_is_the_proofs_for_its_charge"),
             reason="half ReduceSeg's noise"),
    Mutation("scalar noise GP Laplace(S/(2 eps))", "gpcompiler/adaptive/noise.py",
             "scalar_noise", "ceil_float(Fraction(sensitivity) / Fraction(share))",
             "ceil_float(Fraction(sensitivity) / (2 * Fraction(share)))",
             _t("test_scalar_noise_has_the_scale_its_charge_pays_for",
                "test_reduce_seg_noise_is_the_proofs_for_its_charge")),
    Mutation("scalar noise CGP sigma^2 = S^2/(4 rho)", "gpcompiler/adaptive/noise.py",
             "scalar_noise", "Fraction(sensitivity) ** 2 / (2 * Fraction(share))",
             "Fraction(sensitivity) ** 2 / (4 * Fraction(share))",
             _t("test_scalar_noise_has_the_scale_its_charge_pays_for",
                "test_reduce_seg_noise_is_the_proofs_for_its_charge")),
    Mutation("single-curve GP radius Gamma(d - 1)", TEMPLATE, "_add_noise",
             "noise *= rng.gamma(COEF_DIM) * scale", "noise *= rng.gamma(COEF_DIM - 1) * scale",
             _t("test_single_curve_release_is_the_batch_release_of_that_curve",
                "test_single_curve_noise_has_the_exact_law")),
    Mutation("single-curve direction over sqrt(d)", TEMPLATE, "_add_noise",
             "* scale / math.sqrt(noise.dot(noise))", "* scale / math.sqrt(COEF_DIM)",
             _t("test_single_curve_release_is_the_batch_release_of_that_curve",
                "test_single_curve_noise_has_the_exact_law")),
    Mutation("project_and_privatize GP and CGP laws swapped", TEMPLATE,
             "project_and_privatize", "_add_noise(c, scale, rho is None,",
             "_add_noise(c, scale, rho is not None,",
             _t("test_project_and_privatize_is_privatize_of_the_projection",
                "test_project_and_privatize_noise_has_the_exact_law")),
    Mutation("adaptive-quantile sensitivity sqrt(T/2)", "gpcompiler/cdf/estimators.py",
             "sum_sensitivity", "return ceil_sqrt(self.queries)",
             "return ceil_sqrt(self.queries / 2)",
             _t("test_adaptive_quantile_sensitivity_sqrt_t_is_attained_and_is_the_noise")),
    Mutation("moments sensitivity at degree K - 1", "gpcompiler/cdf/estimators.py",
             "sum_sensitivity", "moment_sensitivity_squared(self.degree)",
             "moment_sensitivity_squared(self.degree - 1)",
             _t("test_moment_sensitivity_is_never_exceeded_and_is_the_noise")),
    Mutation("joint data not clipped to the bounds", "gpcompiler/cdf/joint.py", "_reference",
             "return numpy.clip(2 * (data - lo) / (hi - lo) - 1, -1.0, 1.0),",
             "return 2 * (data - lo) / (hi - lo) - 1,",
             _t("test_joint_release_clips_a_record_far_outside_the_bounds")),
    Mutation("joint histogram sensitivity 1", "gpcompiler/cdf/joint.py", "_histogram",
             "sensitivity = ceil_sqrt(2)", "sensitivity = ceil_sqrt(1)",
             _t("test_joint_histogram_sensitivity_sqrt_2_is_attained_and_is_the_noise")),
    Mutation("adaptive release headroom 2^70", "gpcompiler/adaptive/noise.py",
             "privatize_vector", "scale * 2.0 ** 40", "scale * 2.0 ** 70",
             _t("test_a_release_whose_noise_would_vanish_is_refused_or_keeps_its_noise")),
    Mutation("secure uniform on a 53-bit grid", "gpcompiler/secure.py", "random",
             "values = self._uniforms(self._words(count))",
             "values = (self._words(count) >> numpy.uint64(11)) * 2.0 ** -53",
             _t("test_secure_laplace_reaches_beyond_37_scales")),
    Mutation("analytic Gaussian sigma x Delta not rounded up", "gpcompiler/cdf/gaussian.py",
             "_scaled_up", "value = math.nextafter(value, math.inf)", "value = value",
             _t("test_gaussian_sigma_of_a_sensitivity_is_never_rounded_down")),
]

KILLED_BEFORE = [   # representatives of the categories issue 24 found killed
    Mutation("GP and CGP noise scales rounded to nearest", TEMPLATE, "_noise_scale",
             "return ceil_float(exact) if rho is None else ceil_sqrt(exact)",
             "return float(exact) if rho is None else math.sqrt(exact)",
             ("tests/test_privacy_boundary.py::"
              "test_cgp_noise_scale_is_never_below_one_over_sqrt_two_rho",
              "tests/test_module.py::test_noise_scale_is_never_rounded_down")),
    Mutation("CGP scale 1/(2 sqrt rho)", TEMPLATE, "_noise_scale",
             "1 / (2 * Fraction(budget))", "1 / (4 * Fraction(budget))",
             ("tests/test_noise.py::test_cgp_noise_is_gaussian_with_covariance_identity_over_2rho",
              ) + _t("test_single_curve_noise_has_the_exact_law")),
    Mutation("batch GP radius Gamma(d - 1)", TEMPLATE, "_add_noise",
             "rng.gamma(COEF_DIM, size=batch)", "rng.gamma(COEF_DIM - 1, size=batch)",
             ("tests/test_noise.py::test_gp_whitened_radius_is_gamma_d",)),
    Mutation("ledger share rounded to nearest", "gpcompiler/adaptive/ledger.py", "share",
             "return floor_float(Fraction(self.budget) * Fraction(fraction))",
             "return float(Fraction(self.budget) * Fraction(fraction)) * (1 + 2 ** -52)",
             (LEDGER_TEST,)),
    Mutation("ledger: a GP step costs eps^2/4 under CGP", "gpcompiler/adaptive/ledger.py",
             "spend_gp", "exact ** 2 / 2", "exact ** 2 / 4",
             ("tests/test_adaptive.py::test_cgp_ledger_converts_gp_steps",)),
    Mutation("ledger: overspending checked before adding the cost",
             "gpcompiler/adaptive/ledger.py", "_record",
             "if self._spent + cost > Fraction(self.budget):",
             "if self._spent > Fraction(self.budget):",
             ("tests/test_adaptive.py::test_overspending_raises_before_any_noise_is_drawn",)),
    Mutation("SVT charges epsilon1 only", "gpcompiler/adaptive/svt.py", "svt",
             "Fraction(epsilon1) + Fraction(epsilon2))", "Fraction(epsilon1))",
             (LEDGER_TEST,) + _t("test_seg_level_svt_noise_is_the_proofs_for_its_charge")),
    Mutation("SVT threshold noise halved", "gpcompiler/adaptive/svt.py", "svt",
             "ceil_float(Fraction(lipschitz) / Fraction(epsilon1))",
             "ceil_float(Fraction(lipschitz) / (2 * Fraction(epsilon1)))",
             _t("test_seg_level_svt_noise_is_the_proofs_for_its_charge")),
    Mutation("SVT query noise halved", "gpcompiler/adaptive/svt.py", "svt",
             "ceil_float(2 * Fraction(lipschitz) / Fraction(epsilon2))",
             "ceil_float(Fraction(lipschitz) / Fraction(epsilon2))",
             _t("test_unbounded_clipping_svt_noise_is_the_proofs_for_its_charge")),
    Mutation("PrivFuncSelect releases a third each", "gpcompiler/adaptive/select.py",
             "priv_func_select", "release = ledger.share(Fraction(1, 4))",
             "release = ledger.share(Fraction(1, 3))",
             (LEDGER_TEST,)),
    Mutation("PrivFuncSelect domain from the samples", "gpcompiler/adaptive/select.py",
             "priv_func_select", "domain = module.curve_interval(**params)",
             "domain = (float(numpy.min(t)), float(numpy.max(t)))",
             ("tests/test_privacy_boundary.py::"
              "test_adaptive_release_does_not_depend_on_the_sample_grid",)),
    Mutation("no rng: an unseeded NumPy generator", "gpcompiler/secure.py",
             "default_generator", "return SecureGenerator()",
             "return numpy.random.default_rng()",
             ("tests/test_privacy_boundary.py::"
              "test_nothing_draws_from_an_unseeded_numpy_generator",
              "tests/test_hostile.py::test_secure_generator_is_the_default_when_no_rng_is_given")),
    Mutation("analytic Gaussian sigma for 2 delta", "gpcompiler/cdf/gaussian.py",
             "analytic_gaussian_sigma", "_sigma(float(epsilon), float(delta),",
             "_sigma(float(epsilon), 2 * float(delta),",
             ("tests/test_cdf.py::test_analytic_gaussian_sigma_matches_mpmath_and_is_never_below",
              "tests/test_cdf.py::test_known_sigma_values")),
    Mutation("merged CDF releases report the smallest delta", "gpcompiler/cdf/estimators.py",
             "estimate", "(max(spend[i] for spend in self.spent)",
             "(min(spend[i] for spend in self.spent)",
             ("tests/test_privacy_boundary.py::"
              "test_merged_cdf_statistics_report_the_largest_delta",)),
    Mutation("a batch released twice merges as disjoint", "gpcompiler/cdf/estimators.py",
             "_check_compatible", "if a.batches & b.batches:", "if False:",
             ("tests/test_privacy_boundary.py::"
              "test_a_batch_released_twice_cannot_be_merged_as_if_disjoint",)),
    Mutation("1-D CDF data not clipped to the bounds", "gpcompiler/cdf/streaming.py",
             "to_reference", "return numpy.clip(2 * (values - lo) / (hi - lo) - 1, -1.0, 1.0)",
             "return 2 * (values - lo) / (hi - lo) - 1",
             _t("test_cdf_release_clips_a_record_far_outside_the_bounds")),
    Mutation("curve holds its end values outside the samples",
             "gpcompiler/adaptive/curve.py", "__call__",
             "return numpy.where(inside, self._interval_values(x, index), 0.0)",
             "return self._interval_values(x, index)",
             ("tests/test_privacy_boundary.py::test_clipping_matches_the_indicator_exactly",
              "tests/test_privacy_boundary.py::test_clipping_is_non_expansive")),
    Mutation("PrivFuncSelect size SVT Lipschitz 0.5", "gpcompiler/adaptive/select.py",
             "priv_func_select", "threshold, 1.0, *svt_pair", "threshold, 0.5, *svt_pair",
             _t("test_select_size_svt_noise_is_the_proofs_for_its_charge")),
]

SEG_UTILITY = tuple("tests/test_adaptive.py::" + name for name in (
    "test_priv_func_seg_within_twice_the_best_dyadic_segmentation",
    "test_reduce_seg_removes_segments_only_where_the_curve_is_flat"))
UTILITY = [   # change only utility or the paper's split (issue 24)
    Mutation("SVT split halves", "gpcompiler/adaptive/svt.py", "svt_split",
             "first = epsilon0 / 3", "first = epsilon0 / 2",
             _t("test_select_size_svt_noise_is_the_proofs_for_its_charge"), "utility",
             "any split epsilon1 + epsilon2 of the charge is private; the proof's thirds "
             "are for utility"),
    Mutation("ReduceSeg stops one level early", "gpcompiler/adaptive/seg.py", "reduce_seg",
             "if level > k1 or intervals < 2:", "if level >= k1 or intervals < 2:", SEG_UTILITY,
             "utility", "fewer merges, each charged what it spends"),
    Mutation("ReduceSeg depth k1 one less", "gpcompiler/adaptive/seg.py", "_segment",
             "k1 = min(level - 2, 4)", "k1 = min(level - 3, 4)", SEG_UTILITY, "utility",
             "a public function of the private level, its steps charged"),
    Mutation("ReduceSeg margin at beta/2", "gpcompiler/adaptive/seg.py", "reduce_seg",
             "k1 * math.log(2) + math.log(1 / beta))", "k1 * math.log(2) + math.log(2 / beta))",
             SEG_UTILITY, "utility", "the margin is a public utility constant of the decision"),
]

EQUIVALENT = [
    Mutation("ceil_sqrt steps up at most once", "gpcompiler/rounding.py", "ceil_sqrt",
             "while Fraction(result) ** 2 < value:", "if Fraction(result) ** 2 < value:",
             ("tests/test_privacy_boundary.py::"
              "test_cgp_noise_scale_is_never_below_one_over_sqrt_two_rho",),
             "equivalent", "math.sqrt is correctly rounded: one step up always suffices"),
    Mutation("SVT crossing > instead of >=", "gpcompiler/adaptive/svt.py", "svt",
             ">= noisy_threshold", "> noisy_threshold",
             _t("test_seg_level_svt_noise_is_the_proofs_for_its_charge",
                "test_unbounded_clipping_svt_noise_is_the_proofs_for_its_charge",
                "test_select_size_svt_noise_is_the_proofs_for_its_charge"), "equivalent",
             "a tie has probability 0 under continuous noise (not so under lattice noise: "
             "re-judge it once releases are exact)"),
    Mutation("Gamma sampler: log(v) unguarded", "gpcompiler/secure.py", "gamma",
             "numpy.log(numpy.where(positive, v, 1.0))", "numpy.log(v)",
             ("tests/test_noise.py::test_secure_generator_variates_pass_ks_at_one_in_a_million",),
             "equivalent",
             "v <= 0 gives a NaN bound, and the 'positive &' mask rejects the candidate"),
    Mutation("analytic Gaussian float bisection stops early", "gpcompiler/cdf/gaussian.py",
             "_sigma", "if middle in (low, high):",
             "if middle in (low, high) or high - low < 1e-9 * high:",
             ("tests/test_cdf.py::test_analytic_gaussian_sigma_matches_mpmath_and_is_never_below",
              "tests/test_cdf.py::test_known_sigma_values"), "equivalent",
             "_smallest_float_mp refines any bracket to the smallest float with "
             "delta(sigma) <= delta at 50 digits"),
]

CATALOG = SURVIVORS + KILLED_BEFORE + UTILITY + EQUIVALENT
GROUPS = {"survivors": SURVIVORS, "killed": KILLED_BEFORE, "utility": UTILITY,
          "equivalent": EQUIVALENT}


def function_span(lines, function):
    """(start, end) line indices of ``def function`` (a method: 'Class.method' or just its
    name; the first match), ending before the next line indented no deeper; None if absent."""
    name = function.split(".")[-1]
    pattern = re.compile(rf"^(\s*)def {re.escape(name)}\(")
    for start, line in enumerate(lines):
        match = pattern.match(line)
        if not match:
            continue
        indent = len(match.group(1))
        end = start + 1
        while end < len(lines):
            text = lines[end]
            if text.strip() and len(text) - len(text.lstrip()) <= indent \
                    and not text.lstrip().startswith(")"):
                break
            end += 1
        return start, end
    return None


def mutate_text(text, mutation):
    """(mutated text, None) or (None, why it is stale)."""
    lines = text.splitlines(keepends=True)
    span = function_span(lines, mutation.function)
    if span is None:
        return None, f"no function {mutation.function}"
    body = "".join(lines[span[0]:span[1]])
    count = body.count(mutation.old)
    if count != 1:
        return None, (f"{count} matches of the text in {mutation.function}" if count
                      else f"text not found in {mutation.function}")
    return "".join(lines[:span[0]]) + body.replace(mutation.old, mutation.new) \
        + "".join(lines[span[1]:]), None


def apply(mutation, root):
    """Apply the mutation under ``root``: (files changed, None) or (0, why stale)."""
    target = root / mutation.path
    if not target.is_file():
        return 0, f"no file {mutation.path}"
    text, stale = mutate_text(target.read_text(), mutation)
    if stale:
        return 0, stale
    target.write_text(text)
    changed = 1
    if mutation.path.endswith(".tmpl"):
        for module in sorted((root / "generated").glob("*.py")):
            text, stale = mutate_text(module.read_text(), mutation)
            if not stale:
                module.write_text(text)
                changed += 1
    return changed, None


def scratch_copy(source, destination):
    """A copy of the repository (symbolic links kept, no .git nor caches)."""
    shutil.copytree(source, destination, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", "__pycache__", "*.pyc", "_build"))
    return destination


def run_tests(root, tests, timeout):
    """(verdict, detail, seconds) of ``pytest -n 0 -x tests`` in ``root``."""
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-x", "-p", "no:cacheprovider",
               *tests]
    environment = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    start = time.monotonic()
    try:
        done = subprocess.run(command, cwd=root, capture_output=True, text=True,
                              timeout=timeout, env=environment)
    except subprocess.TimeoutExpired:
        return "timeout", f"over {timeout:g} s", time.monotonic() - start
    seconds = time.monotonic() - start
    if done.returncode == 0:
        return "survived", "", seconds
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", done.stdout, re.MULTILINE)
    if done.returncode == 1 and failed:
        return "killed", failed[0], seconds
    tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["?"]
    return "killed", f"pytest exit {done.returncode}: {tail[0][:80]}", seconds


def run(mutations, timeout, baseline, progress=print):
    """Run each mutation in its own scratch copy; returns [(mutation, verdict, detail, s)]."""
    results = []
    with tempfile.TemporaryDirectory(prefix="gpcompiler-mutants-") as scratch:
        base = scratch_copy(ROOT, Path(scratch) / "base")   # the tree as it was at the start
        if baseline:
            tests = sorted({t for m in mutations for t in m.tests})
            progress(f"baseline: {len(tests)} tests on the unmutated copy ...")
            verdict, detail, seconds = run_tests(scratch_copy(base, Path(scratch) / "b"),
                                                 tests, timeout * 4)
            if verdict != "survived":
                raise SystemExit(f"the unmutated copy fails its tests ({detail}): fix that first")
            progress(f"baseline: passed in {seconds:.0f} s")
        for index, mutation in enumerate(mutations, 1):
            root = scratch_copy(base, Path(scratch) / f"m{index}")
            changed, stale = apply(mutation, root)
            if stale:
                results.append((mutation, "stale", stale, 0.0))
            elif not mutation.tests:
                results.append((mutation, "survived", "no test named", 0.0))
            else:
                results.append((mutation, *run_tests(root, mutation.tests, timeout)))
            shutil.rmtree(root, ignore_errors=True)
            _, verdict, detail, seconds = results[-1]
            progress(f"[{index}/{len(mutations)}] {mutation.name}: {verdict} {detail} "
                     f"({seconds:.0f} s)")
    return results


def table(results):
    """Markdown table of the results, then counts per kind and verdict."""
    lines = ["| mutant | kind | where | verdict | killing test / reason |",
             "|---|---|---|---|---|"]
    for mutation, verdict, detail, _ in results:
        why = detail if verdict != "survived" or not mutation.reason else mutation.reason
        if mutation.kind == "equivalent":
            why = mutation.reason
        where = f"{Path(mutation.path).name} {mutation.function}"
        lines.append(f"| {mutation.name} | {mutation.kind} | {where} | {verdict} | "
                     f"{why.replace(TESTS, '')} |")
    for kind in ("privacy", "utility", "equivalent"):
        verdicts = [v for m, v, _, _ in results if m.kind == kind]
        if verdicts:
            counts = ", ".join(f"{verdicts.count(v)} {v}" for v in
                               ("killed", "survived", "stale", "timeout", "not run")
                               if v in verdicts)
            lines.append(f"\n{kind}: {len(verdicts)} mutants, {counts}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Mutation testing of the privacy core (issue 24).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("-k", nargs="+", default=(), metavar="TEXT",
                        help="only mutants whose name contains one of these (case-insensitive)")
    parser.add_argument("--group", nargs="+", choices=sorted(GROUPS), default=sorted(GROUPS),
                        help="catalog groups to run")
    parser.add_argument("--list", action="store_true",
                        help="print the catalog and whether each mutation still matches")
    parser.add_argument("--equivalent", action="store_true",
                        help="also run the mutants judged equivalent")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip running the named tests on the unmutated copy first")
    options = parser.parse_args(argv)
    chosen = [m for group in options.group for m in GROUPS[group]
              if not options.k or any(k.lower() in m.name.lower() for k in options.k)]
    if options.list:
        for mutation in chosen:
            _, stale = mutate_text((ROOT / mutation.path).read_text(), mutation) \
                if (ROOT / mutation.path).is_file() else (None, "no file")
            print(f"{mutation.kind:10} {'STALE ' + stale if stale else 'matches':40} "
                  f"{mutation.name}  [{mutation.path} {mutation.function}]")
        return 0
    if not options.equivalent:
        chosen = [m for m in chosen if m.kind != "equivalent"]
    results = run(chosen, options.timeout, not options.no_baseline)
    skipped = [(m, "not run", "", 0.0) for m in EQUIVALENT if m not in chosen
               and (not options.k or any(k.lower() in m.name.lower() for k in options.k))]
    print(table(results + (skipped if "equivalent" in options.group else [])))
    bad = [m for m, v, _, _ in results if m.kind == "privacy" and v != "killed"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
