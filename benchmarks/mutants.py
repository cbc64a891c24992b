"""Mutation testing of the privacy core (issue 24): does some test fail when a privacy
constant, a rounding direction or a check is wrong?

Each mutation in CATALOG is one small, named edit: in one file, inside one function (found
by its ``def``, so line numbers do not matter), one expression's exact text replaced by
another (a constant's name instead of a function: its assignment). A mutation of the module
template, of the emitter's code templates (``generated`` names the function they emit) or of the
runtime (gpcompiler/runtime, inlined verbatim) is applied there and to the same function of
every committed generated module holding that text (what `gpcompiler compile` would emit).
Each is applied in its own copy of a scratch copy of the repository taken at the start (so
the work tree may change during a run), and the tests named for it run there
(`-n 0 -x`, a time limit per mutant): "killed" names the first failing test, "survived"
means they all passed, "stale" that the function or the text is no longer there (the
catalog needs updating: never skipped silently), "timeout" that the tests ran out of time
(the mutant's limit, or a test's: pyproject's pytest-timeout; a hang is not a kill).

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
import dataclasses
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
TEMPLATE = "gpcompiler/compiler/emit/templates/module.py.tmpl"
EMIT = "gpcompiler/compiler/emit/"   # the emitter's code templates: common.py, line.py, box.py
EMIT_COMMON = EMIT + "common.py"
EMIT_LINE = EMIT + "line.py"
EXACT = "gpcompiler/runtime/exact.py"
COMPARE = "gpcompiler/runtime/compare.py"
EXACT_TESTS = "tests/test_exact.py::"
GAMMA_TEST = EXACT_TESTS + "test_gamma_attempt_at_its_boundary_is_decided_as_the_reals_decide_it"
CLIP_TESTS = "tests/test_clipping.py::"
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
    generated: str = ""   # the function in generated modules, if not ``function``


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
    # one curve and a batch now share exact.spherical_laplace: the single-curve mutants
    # are its refinement's radius (the fast path's is "batch GP radius") and its direction
    Mutation("refinement: sine parts as cosines", EXACT, "spherical_laplace",
             "(iv.sin if k >= p else iv.cos)", "(iv.cos if k >= p else iv.cos)",
             (EXACT_TESTS
              + "test_spherical_laplace_refined_near_ties_equals_200_digit_ideal_sample",)),
    Mutation("refinement: odd d's norm with the dropped sine part", EXACT,
             "spherical_laplace", "half += e[p - 1] * iv.cos(2 * iv.pi * u[2 * p - 1]) ** 2",
             "half += e[p - 1]",
             (EXACT_TESTS
              + "test_spherical_laplace_refined_near_ties_equals_200_digit_ideal_sample",)),
    Mutation("GP radius Gamma(d - 1) in the refinement", EXACT, "spherical_laplace",
             "radius = sum(e, iv.mpf(0))", "radius = sum(e[1:], iv.mpf(0))",
             (EXACT_TESTS
              + "test_spherical_laplace_refined_near_ties_equals_200_digit_ideal_sample",
              ) + _t("test_single_curve_noise_has_the_exact_law"),
             reason="was the single-curve branch of _add_noise (gone: one exact sampler)"),
    Mutation("GP direction over sqrt(d)", EXACT, "_spherical_balls",
             "factor = radius[0] / root[0] * unit",
             "factor = radius[0] / math.sqrt(d / 2) * unit",
             (EXACT_TESTS + "test_spherical_laplace_equals_200_digit_ideal_sample",)
             + _t("test_single_curve_noise_has_the_exact_law"),
             reason="was the single-curve branch of _add_noise (gone: one exact sampler)"),
    Mutation("project_and_privatize GP and CGP laws swapped", TEMPLATE,
             "project_and_privatize", "_add_noise(clipped, scale, rho is None,",
             "_add_noise(clipped, scale, rho is not None,",
             _t("test_project_and_privatize_is_privatize_of_the_projection",
                "test_project_and_privatize_noise_has_the_exact_law")),
    Mutation("adaptive-quantile sensitivity sqrt(T/2)", "gpcompiler/cdf/estimators.py",
             "sum_sensitivity", "exact_sums = ceil_sqrt(self.queries)",
             "exact_sums = ceil_sqrt(self.queries / 2)",
             _t("test_adaptive_quantile_sensitivity_sqrt_t_is_attained_and_is_the_noise")),
    Mutation("moments sensitivity at degree K - 1", "gpcompiler/cdf/estimators.py",
             "sum_sensitivity", "moment_sensitivity_squared(self.degree)",
             "moment_sensitivity_squared(self.degree - 1)",
             _t("test_moment_sensitivity_is_never_exceeded_and_is_the_noise")),
    Mutation("joint data not clipped to the bounds", "gpcompiler/cdf/joint.py", "_reference",
             "return numpy.fmin(numpy.fmax(2 * (data - lo) / (hi - lo) - 1, -1.0), 1.0),",
             "return 2 * (data - lo) / (hi - lo) - 1,",
             _t("test_joint_release_clips_a_record_far_outside_the_bounds")),
    Mutation("joint histogram sensitivity 1", "gpcompiler/cdf/joint.py", "_histogram",
             "noise_facts(ceil_sqrt(2), epsilon, delta)",
             "noise_facts(ceil_sqrt(1), epsilon, delta)",
             _t("test_joint_histogram_sensitivity_sqrt_2_is_attained_and_is_the_noise")),
    Mutation("adaptive release clipped to twice its bound", "gpcompiler/adaptive/noise.py",
             "privatize_vector", "clipped = clip(vector, bound)",
             "clipped = clip(vector, 2 * bound)",
             _t("test_a_release_far_outside_its_bound_is_the_clipped_vector_plus_its_noise"),
             reason="was the 2^40 headroom refusal (replaced by clipping): a vector released "
             "beyond the bound the ledger states"),
    Mutation("secure uniform on a 53-bit grid", "gpcompiler/runtime/secure.py", "random",
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
    Mutation("GP radius without its Gamma(d - p) tail in the fast path", EXACT,
             "_spherical_balls", "radius = _add(radius, tail)",
             "radius = _add(radius, (0 * tail[0], tail[1]))",
             ("tests/test_noise.py::test_gp_whitened_radius_is_gamma_d",
              EXACT_TESTS + "test_spherical_laplace_radius_and_direction")),
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
    Mutation("PrivFuncSelect final release takes the whole budget",
             "gpcompiler/adaptive/select.py", "priv_func_select",
             'floor_float(ledger.remaining), rng=rng,', "ledger.budget, rng=rng,",
             ("tests/test_select_split.py::"
              "test_any_split_composes_to_the_budget_and_the_final_release_takes_the_rest",),
             reason="was 'releases a third each' (the fixed quarters became a public split)"),
    Mutation("PrivFuncSelect domain from the samples", "gpcompiler/adaptive/select.py",
             "priv_func_select", "domain = module.curve_interval(**params)",
             "domain = (float(numpy.min(t)), float(numpy.max(t)))",
             ("tests/test_privacy_boundary.py::"
              "test_adaptive_release_does_not_depend_on_the_sample_grid",)
             + _t("test_select_svt_queries_are_a_function_of_the_curve_not_its_grid")),
    Mutation("PrivFuncSelect residual without the pieces' curvature terms",
             "gpcompiler/adaptive/closed_form.py", "_residual",
             "norms = 1.0 / (2 * numpy.arange(order + 1) + 1.0)",
             "norms = numpy.append([1.0, 1.0 / 3.0], numpy.zeros(order - 1))",
             ("tests/test_select_closed_form.py::"
              "test_closed_forms_match_a_40_digit_reference_on_random_curves",)),
    Mutation("no rng: an unseeded NumPy generator", "gpcompiler/runtime/entropy.py",
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
             "to_reference", "numpy.fmax(x, -1.0, out=x)", "x = x",
             _t("test_cdf_release_clips_a_record_far_outside_the_bounds")),
    Mutation("curve holds its end values outside the samples",
             "gpcompiler/adaptive/curve.py", "__call__",
             "return numpy.where(inside, self._interval_values(x, index), 0.0)",
             "return self._interval_values(x, index)",
             ("tests/test_privacy_boundary.py::test_clipping_matches_the_indicator_exactly",
              "tests/test_privacy_boundary.py::test_clipping_is_non_expansive")),
    Mutation("PrivFuncSelect size SVT Lipschitz 0.5", "gpcompiler/adaptive/select.py",
             "priv_func_select", "range(c.shape[0])), 0.0, 1.0,",
             "range(c.shape[0])), 0.0, 0.5,",
             _t("test_select_size_svt_noise_is_the_proofs_for_its_charge")),
]

OLD_BOUND_TEST = "test_generated_module_releases_coefficients_on_either_side_of_the_old_bound"
GRADING_TESTS = ("tests/test_grading.py::test_1d_weights_match_mpmath_next_to_the_singular_ends",
                 "tests/test_grading.py::"
                 "test_1d_release_does_not_depend_on_nodes_next_to_a_singular_end")
NEW_CODE = [   # the code of issues 18-21: exact releases, clipping, grading, split, degree
    Mutation("lattice release is the float sum x + noise", EXACT, "_decide",
             "    return out, undecided", "    return x + mid * gamma, undecided",
             (EXACT_TESTS + "test_outputs_lie_on_the_lattice_and_seeds_reproduce",
              EXACT_TESTS + "test_laplace_equals_200_digit_ideal_sample")),
    Mutation("lattice release rint((x + noise)/gamma) on floats", EXACT, "_decide",
             "    return out, undecided",
             "    return _rint((x + mid * gamma) / gamma) * gamma + 0.0, undecided",
             (EXACT_TESTS + "test_laplace_equals_200_digit_ideal_sample",
              EXACT_TESTS + "test_releases_far_from_zero_equal_200_digit_ideal_samples")),
    Mutation("lattice cell decided from the float midpoint", EXACT, "_decide",
             "undecided = numpy.logical_not(t < 0.5,",
             "undecided = numpy.logical_not(t < numpy.inf,",
             (EXACT_TESTS + "test_gaussian_refined_near_ties_equals_200_digit_ideal_sample",)),
    Mutation("fast path: slope bound 1/(2m) of -ln U dropped", EXACT, "_exp_radius",
             "rad = 2.0 ** -52 * v", "rad = 0.0 * v",
             (EXACT_TESTS + "test_fast_path_balls_hold_the_ideal_value_of_every_completion",
              EXACT_TESTS + "test_gaussian_refined_near_ties_equals_200_digit_ideal_sample")),
    Mutation("spherical fast path: slope term of E quartered", EXACT, "_spherical_balls",
             "a = (size * (1 + delta) * 2.0 ** -52)[..., None, None] + _TINY",
             "a = (size * (1 + delta) * 2.0 ** -54)[..., None, None] + _TINY",
             (EXACT_TESTS + "test_spherical_balls_hold_the_ideal_value_of_every_completion",)),
    Mutation("spherical fast path: relative radius of R / sqrt(H) dropped", EXACT,
             "_spherical_balls", "_U + delta + _TRIG + 2.01 * _U))",
             "_U + 0 * delta + _TRIG + 2.01 * _U))",
             (EXACT_TESTS + "test_spherical_balls_hold_the_ideal_value_of_every_completion",)),
    Mutation("Gamma attempt rejected on the interval's midpoint", EXACT, "_mt_refine",
             "if w < 0 or (w > 0 and f() < 0):", "if w < 0 or (w > 0 and f().mid < 0):",
             (GAMMA_TEST,)),
    Mutation("Gamma attempt accepted on the ball's midpoint", EXACT, "_mt_balls",
             "accepted = positive & (f[0] - f[1] > 0)", "accepted = positive & (f[0] > 0)",
             (GAMMA_TEST,)),
    Mutation("Gamma(d - p) tail by Marsaglia-Tsang: shape one less", EXACT,
             "spherical_laplace", "_gamma_tail(words[:, 2 * p:], a, rng, at, 2 * p)",
             "_gamma_tail(words[:, 2 * p:], a - 1 or 1, rng, at, 2 * p)",
             (EXACT_TESTS + "test_spherical_laplace_radius_and_direction",)),
    Mutation("Gamma(d - p) tail as a sum: one exponential fewer", EXACT, "spherical_laplace",
             "_exp_tail(words[:, 2 * p:])", "_exp_tail(words[:, 2 * p + 1:])",
             (EXACT_TESTS + "test_spherical_laplace_radius_and_direction",)),
    Mutation("fast path: trigonometric error _TRIG halved", EXACT, "_TRIG",
             "_TRIG = (10 + 2 * _LIB_ULPS + 7) * _U",
             "_TRIG = (10 + 2 * _LIB_ULPS + 7) * _U / 2",
             (EXACT_TESTS + "test_angles_hold_cos_and_sin_of_every_completion",
              EXACT_TESTS + "test_fast_path_balls_hold_the_ideal_value_of_every_completion"),
             "equivalent", "the bound's parts (10 _U for the angle, 2 _LIB_ULPS _U for the "
             "tangent, 7 _U for the rational map) are worst cases: the realized error is at "
             "most 9.6 _U (test_angles_hold_cos_and_sin_of_every_completion, 40 digits at the "
             "ends and middle of 1500 uniforms' intervals), below the halved 12.5 _U; a third "
             "of the bound (8.3 _U) is killed"),
    Mutation("fast path: trigonometric error _TRIG a third", EXACT, "_TRIG",
             "_TRIG = (10 + 2 * _LIB_ULPS + 7) * _U",
             "_TRIG = (10 + 2 * _LIB_ULPS + 7) * _U / 3",
             (EXACT_TESTS + "test_angles_hold_cos_and_sin_of_every_completion",)),
    Mutation("fast path: the cosine's sign from the top bit only", EXACT, "_angles",
             "sign ^= words << numpy.uint64(1) & _SIGN", "sign ^= words & _SIGN",
             (EXACT_TESTS + "test_angles_hold_cos_and_sin_of_every_completion",)),
    Mutation("fast path: library error _LIB_ULPS halved", EXACT, "_LIB_ULPS",
             "_LIB_ULPS = 4", "_LIB_ULPS = 2",
             (EXACT_TESTS + "test_library_functions_within_the_assumed_ulps",
              EXACT_TESTS + "test_fast_path_balls_hold_the_ideal_value_of_every_completion"),
             "equivalent", "NumPy's log and tan err by at most 1 ulp here (measured "
             "against mpmath, as test_library_functions_within_the_assumed_ulps does), so 2 "
             "ulps still bound them; 4 is the margin for other libraries"),
    Mutation("fast path: _GROW removed", EXACT, "_GROW",
             "_GROW = 1 + 2.0 ** -40", "_GROW = 1.0",
             (EXACT_TESTS + "test_fast_path_balls_hold_the_ideal_value_of_every_completion",),
             "equivalent", "_GROW covers the few roundings of the radius itself (relative "
             "< 2^-49 of it); every radius term is a worst case that the realized error stays "
             "far below (a factor 2 at least), so no release changes"),
    Mutation("refinement accepts an interval across two cells", EXACT, "_nearest",
             "return low if low is not None and low == high else None",
             "return low if low is not None and abs(low - high) <= 1 else None",
             (EXACT_TESTS + "test_refinement_goes_as_deep_as_the_bits_that_decide_the_cell",)),
    Mutation("refinement decides on the interval's midpoint", EXACT, "_refine",
             "cells = [_nearest(v, gamma) for v in compute(iv, prefixes.intervals(iv))]",
             "cells = [_nearest(v.mid, gamma) for v in compute(iv, prefixes.intervals(iv))]",
             (EXACT_TESTS + "test_refinement_goes_as_deep_as_the_bits_that_decide_the_cell",)),
    Mutation("exceeds decided from the float midpoint only", COMPARE, "exceeds",
             "if mid[0] - rad[0] > 0 or mid[0] + rad[0] < 0:", "if True:",
             (EXACT_TESTS + "test_comparisons_near_ties_equal_200_digit_decisions",)),
    Mutation("batched SVT crossings decided from the float midpoint", COMPARE,
             "svt_crossings", "crossed = total[0] - total[1] > 0", "crossed = total[0] > 0",
             (EXACT_TESTS + "test_batched_svt_crossings_equal_200_digit_decisions",)),
    Mutation("exceeds: refinement stops one level early", COMPARE, "_refine_sign",
             "if total > 0 or total < 0:", "if True:",
             (EXACT_TESTS + "test_a_comparison_decided_only_by_deeper_bits_refines_to_them",)),
    Mutation("Gumbel noise at half its scale", COMPARE, "Noise.ball",
             "mid, rad = -numpy.log(e), numpy.where(low > 0, e_rad / low, numpy.inf)",
             "mid, rad = -numpy.log(e) / 2, numpy.where(low > 0, e_rad / low, numpy.inf)",
             (EXACT_TESTS + "test_gumbel_law",)),
    Mutation("exponential mechanism Gumbel scale halved", "gpcompiler/cdf/degree.py",
             "gumbel_scale",
             "ceil_float(2 * Fraction(sensitivity) / Fraction(epsilon))",
             "ceil_float(Fraction(sensitivity) / Fraction(epsilon))",
             ("tests/test_cdf_degree.py::test_exponential_mechanism_draws_its_law",)),
    Mutation("module clips after the noise", TEMPLATE, "privatize",
             "clipped = _clip(c, _bound(bound, scale))\n"
             "    return _add_noise(clipped, scale, rho is None, default_generator(rng))",
             "return _clip(_add_noise(c, scale, rho is None, default_generator(rng)),\n"
             "                 _bound(bound, scale))",
             (CLIP_TESTS + OLD_BOUND_TEST,
              CLIP_TESTS + "test_a_release_far_outside_the_bound_carries_the_whole_noise")),
    Mutation("module clip bound ignored (2B)", TEMPLATE, "privatize",
             "clipped = _clip(c, _bound(bound, scale))",
             "clipped = _clip(c, 2 * _bound(bound, scale))",
             (CLIP_TESTS + OLD_BOUND_TEST,)),
    Mutation("project_and_privatize coefficients not clipped", TEMPLATE,
             "project_and_privatize", "clipped = _clip(c, radius)", "clipped = c",
             (CLIP_TESTS + "test_project_and_privatize_clips_the_curve_before_projecting",
              CLIP_TESTS + "test_a_release_far_outside_the_bound_carries_the_whole_noise",
              CLIP_TESTS + "test_the_coefficients_passed_to_the_noise_lie_in_the_ball")),
    Mutation("curves clipped to 2B before projecting", "gpcompiler/runtime/curveclip.py",
             "_curve_factors",
             "ratio = bound / numpy.sqrt(numpy.where(squares > 0, squares, 1.0))",
             "ratio = 2 * bound / numpy.sqrt(numpy.where(squares > 0, squares, 1.0))",
             (CLIP_TESTS + "test_curve_clipping_is_non_expansive_in_l2",
              CLIP_TESTS + "test_project_and_privatize_clips_the_curve_before_projecting")),
    Mutation("adaptive release clips after the noise", "gpcompiler/adaptive/noise.py",
             "privatize_vector", "return _add_noise(clipped, gp, scale, rng)",
             "return clip(_add_noise(vector, gp, scale, rng), bound)",
             _t("test_a_release_far_outside_its_bound_is_the_clipped_vector_plus_its_noise")),
    Mutation("default bound doubled past the stated slack", EMIT_COMMON, "_DEFAULT_BOUND",
             "while Fraction(radius) > target:\n        radius /= 2",
             "while Fraction(radius) > target:\n        radius /= 2\n    radius *= 2",
             (CLIP_TESTS + "test_slack_at_the_default_bound_is_below_1e_6_of_the_noise_scale",),
             generated="_default_bound"),
    Mutation("slack.default_bound doubled past the stated slack", "gpcompiler/compiler/slack.py",
             "default_bound", "while Fraction(radius) > target:\n        radius /= 2",
             "while Fraction(radius) > target:\n        radius /= 2\n    radius *= 2",
             (CLIP_TESTS + "test_slack_at_the_default_bound_is_below_1e_6_of_the_noise_scale",)),
    Mutation("grading by index: only the end pieces", EMIT_COMMON, "GRADED_PIECES",
             "graded = (toward != 0) & (d <= h[piece] / count)",
             "graded = (toward != 0) & ((piece == 0) | (piece == h.size - 1))",
             GRADING_TESTS, generated="_graded_pieces",
             reason="weights whose error depends on the private sample times: the slack ETA "
             "no longer holds"),
    Mutation("grading one level fewer", EMIT_COMMON, "GRADED_PIECES",
             "most = numpy.where(toward < 0, grades[1], grades[0]) + 1",
             "most = numpy.where(toward < 0, grades[1], grades[0])",
             GRADING_TESTS, "equivalent", "the last cut's share 2^-(G-1)(1 + alpha) is at "
             "most 2^(1 + alpha) 1e-17, still far below the 1e-13 relative weight accuracy "
             "that ETA assumes (slack.WEIGHT_ACCURACY): the stated slack holds",
             generated="_graded_pieces"),
    Mutation("auto-degree score sensitivity without the (K + 1) weight",
             "gpcompiler/cdf/degree.py", "WEIGHTED_TAIL_SUP_SQUARED",
             "WEIGHTED_TAIL_SUP_SQUARED = 3 * TAIL_SUP_SQUARED_2",
             "WEIGHTED_TAIL_SUP_SQUARED = TAIL_SUP_SQUARED_2",
             ("tests/test_cdf_degree.py::"
              "test_score_sensitivity_holds_by_brute_force_and_is_not_loose_by_much",)),
    Mutation("auto-degree sensitivity without the scores' float error",
             "gpcompiler/cdf/degree.py", "_choice",
             "computed_score_sensitivity(count, candidates, energy)",
             "score_sensitivity(count)",
             ("tests/test_cdf_degree.py::"
              "test_computed_scores_lie_within_score_error_of_the_exact_scores",)),
    Mutation("joint auto-degree sensitivity without the scores' float error",
             "gpcompiler/cdf/joint.py", "_auto_joint",
             "sensitivity = auto.computed_score_sensitivity(n, candidates, energy)",
             "sensitivity = auto.score_sensitivity(n)",
             ("tests/test_cdf_degree.py::"
              "test_joint_auto_chooses_a_degree_per_column_and_charges_the_whole_epsilon",)),
    Mutation("CDF sums' sensitivity without their float error", "gpcompiler/cdf/estimators.py",
             "sum_sensitivity",
             "return ceil_float(Fraction(exact_sums) + 2 * Fraction(self.float_error()))",
             "return exact_sums",
             ("tests/test_streaming.py::test_the_noise_is_calibrated_to_the_computed_sums",)),
    Mutation("CDF sums' float error without the merges' roundings",
             "gpcompiler/cdf/estimators.py", "float_error",
             "merges = (len(self.batches) - 1) * UNIT", "merges = 0 * UNIT",
             ("tests/test_streaming.py::test_the_noise_is_calibrated_to_the_computed_sums",)),
    Mutation("joint CDF sums' sensitivity without their float error",
             "gpcompiler/cdf/joint.py", "_noisy_sums",
             "noise_facts(computed_sum_sensitivity(degrees, x.shape[0]), epsilon, delta)",
             "noise_facts(sum_sensitivity(len(degrees)), epsilon, delta)",
             ("tests/test_joint_cdf.py::test_noise_is_gaussian_with_the_analytic_sigma",)),
    Mutation("degree choice not charged: the release takes the whole epsilon",
             "gpcompiler/cdf/estimators.py", "_auto_estimate",
             "chosen.privatize(epsilon=release,", "chosen.privatize(epsilon=epsilon,",
             ("tests/test_cdf_degree.py::"
              "test_auto_release_charges_both_steps_and_uses_the_prefix_of_the_sums",)),
    Mutation("degree selection share not taken from the release", "gpcompiler/cdf/degree.py",
             "split_budget", "floor_float(Fraction(epsilon) - Fraction(selection))",
             "floor_float(Fraction(epsilon))",
             ("tests/test_cdf_degree.py::"
              "test_auto_release_charges_both_steps_and_uses_the_prefix_of_the_sums",)),
    Mutation("joint degree choice not charged", "gpcompiler/cdf/joint.py", "_auto_joint",
             "found = _direct(x, lo, hi, release, delta,",
             "found = _direct(x, lo, hi, epsilon, delta,",
             ("tests/test_cdf_degree.py::"
              "test_joint_auto_chooses_a_degree_per_column_and_charges_the_whole_epsilon",)),
    Mutation("H^1 curve clip without the slope terms", "gpcompiler/runtime/curveclip.py",
             "_squares", "        pieces += numpy.where(h > 0, slopes, 0.0)\n", "",
             ("tests/test_slack_metrics.py::test_h1_curve_clip_is_non_expansive_in_h1",
              "tests/test_slack_metrics.py::"
              "test_h1_zigzag_of_any_size_is_clipped_to_within_eta_b")),
    Mutation("weight piece ratio without its margin", "gpcompiler/compiler/analysis/weights.py",
             "piece_ratio", "return float(largest) * RATIO_MARGIN * (1 + 1e-9)",
             "return float(largest) * (1 + 1e-9)",
             ("tests/test_slack_metrics.py::test_the_piece_ratio_of_simple_weights",)),
    Mutation("select split summing above 1 accepted", "gpcompiler/adaptive/select.py",
             "check_split", "if min(values) < 0 or sum(values) != 1:",
             "if min(values) < 0 or sum(values) < 1:",
             ("tests/test_select_split.py::test_bad_splits_are_refused_with_the_reason",),
             "utility", "the final release takes floor(remaining), and the ledger refuses to "
             "overspend, so any accepted split still composes to the budget; only the noise "
             "target tau of the planned final share is wrong"),
]

SEG_UTILITY = tuple("tests/test_adaptive.py::" + name for name in (
    "test_priv_func_seg_within_twice_the_best_dyadic_segmentation",
    "test_reduce_seg_removes_segments_only_where_the_curve_is_flat",
    "test_reduce_seg_merges_with_the_papers_margin_at_the_last_level",
    "test_reduce_seg_runs_on_four_quarters_with_depth_min_level_minus_2_and_4"))
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
    Mutation("ceil_sqrt steps up at most once", "gpcompiler/runtime/rounding.py", "ceil_sqrt",
             "while Fraction(result) ** 2 < value:", "if Fraction(result) ** 2 < value:",
             ("tests/test_privacy_boundary.py::"
              "test_cgp_noise_scale_is_never_below_one_over_sqrt_two_rho",),
             "equivalent", "math.sqrt is correctly rounded: one step up always suffices"),
    Mutation("SVT crossing > instead of >=", "gpcompiler/adaptive/svt.py", "svt",
             ">= noisy_threshold", "> noisy_threshold",
             _t("test_seg_level_svt_noise_is_the_proofs_for_its_charge",
                "test_unbounded_clipping_svt_noise_is_the_proofs_for_its_charge",
                "test_select_size_svt_noise_is_the_proofs_for_its_charge"), "equivalent",
             "comparisons are decided on the real-valued noisy values (compare.exceeds; only "
             "released numbers are rounded to the lattice), where a tie has probability 0"),
    Mutation("Gamma sampler: log(v) unguarded", "gpcompiler/runtime/secure.py", "gamma",
             "numpy.log(numpy.where(positive, v, 1.0))", "numpy.log(v)",
             ("tests/test_noise.py::test_secure_generator_variates_pass_ks_at_one_in_a_million",),
             "equivalent",
             "v <= 0 gives a NaN bound, and the 'positive &' mask rejects the candidate"),
    Mutation("analytic Gaussian float bisection skipped", "gpcompiler/cdf/gaussian.py",
             "_sigma", "low, high = _bisect(lambda sigma: delta_of_sigma(sigma, epsilon) > delta,"
             "\n                        *_doubled_bracket(epsilon, delta))",
             "low, high = _doubled_bracket(epsilon, delta)",
             ("tests/test_cdf.py::test_analytic_gaussian_sigma_matches_mpmath_and_is_never_below",
              "tests/test_cdf.py::test_known_sigma_values"), "equivalent",
             "_smallest_float_mp refines any bracket, here [2^(k-1), 2^k], to the smallest "
             "float with delta(sigma) <= delta at 50 digits"),
]

# issue 30, item 8 (first half): choices that read private values beside their noise, the
# exact rounding's thresholds, facts stated on one path but not the mechanism's
DECISIONS = "tests/test_decisions.py::"
THRESHOLDS = "tests/test_rounding_thresholds.py::"
FACTS = "tests/test_stated_facts.py::"
BINADES = THRESHOLDS + "test_a_noise_at_every_binade_is_decided_only_when_its_ball_is_in_one_cell"
HUGE = THRESHOLDS + "test_inputs_at_the_huge_and_lattice_point_thresholds_release_the_exact_cell"
LAPLACE_AT_THRESHOLDS = (THRESHOLDS
                         + "test_laplace_releases_at_every_threshold_equal_the_ideal_sample")
SHIFT = THRESHOLDS + "test_the_shift_rounds_to_the_nearest_integer_ties_to_even_below_2_51"
DECISIONS_ROUNDING_FACTS = [
    Mutation("PrivFuncSelect orders by the true coefficients", "gpcompiler/adaptive/select.py",
             "_pruned", "numpy.argsort(-numpy.linalg.norm(noisy, axis=1), kind=\"stable\")",
             "numpy.argsort(-numpy.linalg.norm(c[:k0], axis=1), kind=\"stable\")",
             (DECISIONS + "test_priv_func_select_chooses_from_released_values_only",)),
    Mutation("SVT compares the true query value", "gpcompiler/adaptive/svt.py", "svt",
             "if value + draw(rng, \"laplace\", query_scale) >= noisy_threshold:",
             "if (draw(rng, \"laplace\", query_scale), value)[1] >= noisy_threshold:",
             (DECISIONS + "test_svt_decides_on_the_noisy_values_only",
              DECISIONS + "test_priv_func_select_chooses_from_released_values_only")),
    Mutation("ReduceSeg merges on the noiseless residual", "gpcompiler/adaptive/seg.py",
             "reduce_seg", "error = math.sqrt(residual) + noise",
             "error = (noise, math.sqrt(residual))[1]",
             (DECISIONS + "test_reduce_seg_merges_on_the_noisy_residual_only",)),
    Mutation("unbounded clipping width at least the samples' span",
             "gpcompiler/adaptive/seg.py", "priv_func_unbounded",
             "half_width = 2.0 ** (levels if found is None else found)",
             "half_width = 2.0 ** (levels if found is None else max(found, math.ceil(\n"
             "        math.log2(max(abs(curve.t).max(), 1.0)))))",
             (DECISIONS + "test_priv_func_seg_chooses_from_released_values_only",)),
    Mutation("degree=auto takes the noiseless best score", "gpcompiler/cdf/degree.py",
             "exponential_mechanism",
             "noisy = float(value) + compare.Noise(\"gumbel\", scale, rng)",
             "noisy = (compare.Noise(\"gumbel\", scale, rng), float(value))[1]",
             (DECISIONS + "test_degree_auto_chooses_from_the_noisy_scores_only",)),
    Mutation("baseline smooths the true points", "gpcompiler/adaptive/baseline.py",
             "baseline_points", "noisy = sliding_mean(noisy, int(window))",
             "noisy = sliding_mean(points, int(window))",
             (DECISIONS + "test_baseline_releases_only_its_released_points",)),
    Mutation("lattice cell decided with the sum's float error one binade short", EXACT,
             "_decide", "error = (rad + (largest + 0.5) * _U) * _GROW",
             "error = (rad + (largest / 2 + 0.5) * _U) * _GROW",
             (BINADES,)),
    Mutation("lattice cell decided without the sum's float error", EXACT,
             "_decide", "error = (rad + (largest + 0.5) * _U) * _GROW",
             "error = (rad + 0.5 * _U) * _GROW",
             (BINADES,)),
    Mutation("lattice points from 2^51 lattice steps, one binade low", EXACT, "_decide",
             "lattice_point = numpy.abs(x) >= 2.0 ** 52 * gamma",
             "lattice_point = numpy.abs(x) >= 2.0 ** 51 * gamma",
             (HUGE, LAPLACE_AT_THRESHOLDS)),
    Mutation("huge inputs from 2^52 lattice steps, one binade high", EXACT, "_decide",
             "huge = not _within(x, 2.0 ** 51 * gamma)",
             "huge = not _within(x, 2.0 ** 52 * gamma)",
             (HUGE, LAPLACE_AT_THRESHOLDS)),
    Mutation("rint by the shift up to 2^52, one binade too far", EXACT, "_rint",
             "_shift_rint(v) if _within(v, 2.0 ** 51)", "_shift_rint(v) if _within(v, 2.0 ** 52)",
             (SHIFT,)),
    Mutation("rint shift 2^52 instead of 1.5 2^52", EXACT, "_SHIFT",
             "_SHIFT = 1.5 * 2.0 ** 52", "_SHIFT = 2.0 ** 52",
             (SHIFT,)),
    Mutation("refined cell's float one binade low", EXACT, "_release",
             "power = math.frexp(gamma)[1] - 1", "power = math.frexp(gamma)[1] - 2",
             (THRESHOLDS + "test_a_refined_cell_is_released_as_its_correctly_rounded_float",)),
    Mutation("lattice step one binade coarse", EXACT, "lattice",
             "math.frexp(scale)[1] - 1 - LATTICE_BITS", "math.frexp(scale)[1] - LATTICE_BITS",
             (THRESHOLDS + "test_the_lattice_step_at_every_binade_of_the_scale",)),
    Mutation("unbounded: the parent ledger drops the slack", "gpcompiler/adaptive/seg.py",
             "_SubLedger.note_release", "self.parent.note_release(label, bound, slack, lattice)",
             "self.parent.note_release(label, bound, None, lattice)",
             (FACTS + "test_every_ledger_states_the_releases_it_made",)),
    Mutation("PrivFuncSelect's first release states no slack", "gpcompiler/adaptive/select.py",
             "_pruned", "bound=bound, eta=eta)", "bound=bound)",
             (FACTS + "test_every_ledger_states_the_releases_it_made",)),
    Mutation("ledger states the lattice of the whole budget", "gpcompiler/adaptive/noise.py",
             "privatize_vector", "ledger.note_release(label, bound, slack, exact.lattice(scale))",
             "ledger.note_release(label, bound, slack,\n"
             "                        exact.lattice(release_scale(ledger.model, ledger.budget)))",
             (FACTS + "test_every_ledger_states_the_releases_it_made",)),
    Mutation("curves clipped at 2B while B is stated", TEMPLATE, "project_and_privatize",
             "c, y = _project(t, y, _params(params), cache, radius)",
             "c, y = _project(t, y, _params(params), cache, 2 * radius)",
             (FACTS + "test_release_facts_are_what_every_generated_release_uses",)),
    Mutation("fields clipped at 2B while B is stated", EMIT + "templates/module_box.py.tmpl",
             "project_and_privatize",
             "c = _project_grid(grids, values, kind, _params(params), radius)",
             "c = _project_grid(grids, values, kind, _params(params), 2 * radius)",
             (FACTS + "test_release_facts_are_what_every_generated_release_uses",)),
    Mutation("release_facts states the slack eta B", TEMPLATE, "release_facts",
             '"slack": ceil_float(2 * Fraction(ETA) * Fraction(radius))',
             '"slack": ceil_float(Fraction(ETA) * Fraction(radius))',
             (FACTS + "test_release_facts_are_what_every_generated_release_uses",)),
    Mutation("explain's CGP scale 1/sqrt(rho)", "gpcompiler/compiler/explain.py", "_clipping",
             "else ceil_sqrt(1 / (2 * Fraction(budget))))", "else ceil_sqrt(1 / Fraction(budget)))",
             (FACTS + "test_explain_states_the_facts_the_module_uses",)),
    Mutation("stated Gumbel scale at the whole epsilon", "gpcompiler/cdf/degree.py",
             "selection_noise", '"gumbel_scale": gumbel_scale(sensitivity, selection)',
             '"gumbel_scale": gumbel_scale(sensitivity, epsilon)',
             (FACTS + "test_cdf_noise_facts_are_the_noise_drawn",)),
    Mutation("release files state the first release's facts", "gpcompiler/cli/writers.py",
             "ledger_facts", "last = ledger.releases[-1]", "last = ledger.releases[0]",
             (FACTS + "test_cli_release_files_state_the_facts_of_the_release_made",)),
    Mutation("cdf files state the Gumbel scale of the selection share", "gpcompiler/cli/cdf.py",
             "cmd_cdf", "selection_noise(int(data.size), args.epsilon,",
             "selection_noise(int(data.size), result.spent[0][0],",
             (FACTS + "test_cdf_release_files_state_the_noise_drawn",)),
    Mutation("continuous post-processing of the true projection", "gpcompiler/adaptive/seg.py",
             "_release", "released = piecewise.make_continuous(released)",
             "released = piecewise.make_continuous(function)",
             (DECISIONS + "test_priv_func_seg_chooses_from_released_values_only",)),
    Mutation("joint auto degree from the noiseless best score", "gpcompiler/cdf/joint.py",
             "_auto_joint",
             "candidates[auto.exponential_mechanism(values, sensitivity, share, rng)]",
             "candidates[int(numpy.argmax(values))]",
             (DECISIONS + "test_joint_auto_degrees_are_chosen_from_the_noisy_scores_only",)),
    Mutation("field release files state the default bound", "gpcompiler/cli/privatize.py",
             "_privatize_fields", "**module.release_facts(bound=bound, **budget),",
             "**module.release_facts(**budget),",
             (FACTS + "test_cli_field_release_files_state_the_facts_of_the_release_made",)),
    Mutation("curve release files state the default bound", "gpcompiler/cli/privatize.py",
             "_cached_facts", "module.release_facts(bound=bound, **dict(budget))",
             "module.release_facts(**dict(budget))",
             (FACTS + "test_cli_release_files_state_the_facts_of_the_release_made",)),
]
NEW_CODE += DECISIONS_ROUNDING_FACTS

NEW_EQUIVALENT = [m for m in NEW_CODE if m.kind == "equivalent"]
NEW_CODE = [m for m in NEW_CODE if m.kind != "equivalent"]
EQUIVALENT += NEW_EQUIVALENT
CATALOG = SURVIVORS + KILLED_BEFORE + NEW_CODE + UTILITY + EQUIVALENT
GROUPS = {"survivors": SURVIVORS, "killed": KILLED_BEFORE, "new": NEW_CODE,
          "utility": UTILITY, "equivalent": EQUIVALENT}

# Issue 30, item 8 (second half): clips that act per row in every shape and kind, and the
# stated float-error bounds against golden values and realized worst cases
# (tests/test_clip_rows.py, tests/test_error_bounds.py).
ROWS = "tests/test_clip_rows.py::"
BOUNDS = "tests/test_error_bounds.py::"
CLIP = "gpcompiler/runtime/clip.py"
CURVECLIP = "gpcompiler/runtime/curveclip.py"
FIELDCLIP = "gpcompiler/runtime/fieldclip.py"
SLACK = "gpcompiler/compiler/slack.py"
STREAMING = "gpcompiler/cdf/streaming.py"
ROW_TESTS = (ROWS + "test_clip_rows_clips_each_row_alone_in_every_batch_shape",)
CURVE_TESTS = (ROWS + "test_clip_curves_clips_each_curve_alone_in_every_batch_shape",
               ROWS + "test_a_batch_of_curves_is_released_as_each_curve_alone_with_the_same_words")
FIELD_TESTS = (ROWS + "test_clip_fields_clips_each_field_alone_in_every_kind_and_shape",
               ROWS + "test_a_batch_of_fields_is_released_as_each_field_alone_with_the_same_words")
CURVE_ETA = (BOUNDS + "test_curve_eta_equals_its_golden_value",)
BOX_ETA = (BOUNDS + "test_box_eta_equals_its_golden_value",)
CONTRACTION = (BOUNDS + "test_contraction_error_equals_its_golden_value",) + CURVE_ETA
MOMENTS = (BOUNDS + "test_moment_error_bound_equals_its_golden_value",)
DIRECT = (BOUNDS + "test_direct_error_bound_equals_its_golden_value",)
FACTORS = (BOUNDS + "test_factor_errors_equal_their_golden_values",
           BOUNDS + "test_mean_errors_equal_their_golden_values")
MEANS = (BOUNDS + "test_mean_errors_equal_their_golden_values",)
TENSOR = (BOUNDS + "test_tensor_error_bound_equals_its_golden_value",)
SCORE = (BOUNDS + "test_score_error_equals_its_golden_value",)
BALLS = (BOUNDS + "test_exponential_and_gumbel_balls_hold_both_ends_and_are_attained_near_zero",)
PER_ROW_AND_BOUNDS = [
    Mutation("clip_rows: the first row's factor for every row", CLIP, "clip_rows",
             "out = rows * factor[:, None]", "out = rows * factor[:1, None]",
             ROW_TESTS + CURVE_TESTS[1:]),
    Mutation("clip_rows: the norm of the first coordinate only", CLIP, "clip_rows",
             "squares = _sum_squares(rows)", "squares = _sum_squares(rows[:, :1])", ROW_TESTS),
    Mutation("clip_rows: extreme rows decided by the first one", CLIP, "_clip_scaled",
             "outside = big * norm > bound", "outside = big[:1] * norm[:1] > bound",
             ROW_TESTS),
    Mutation("module clip per value component (vector axis ignored)", TEMPLATE, "_clip",
             "return clip_rows(c.reshape(batch + (COEF_DIM,)), bound).reshape(c.shape)",
             "return clip_rows(c, bound)",
             (ROWS + "test_a_vector_modules_coefficients_are_clipped_as_one_vector",)),
    Mutation("module: the first curve's clip factor for every curve", TEMPLATE,
             "_clip_factors", "c *= factors.reshape(factors.shape + (1,) * len(COEF_SHAPE))",
             "c *= factors.reshape(-1)[0]", CURVE_TESTS[1:]),
    Mutation("clip_curves: the first curve's factor for every curve", CURVECLIP,
             "_curve_factors",
             "factors = numpy.where(squares > 0, numpy.minimum(1.0, ratio), 1.0)",
             "factors = numpy.where(squares > 0, numpy.minimum(1.0, ratio[:1]), 1.0)",
             CURVE_TESTS),
    Mutation("clip_curves: the norm of the first value component only", CURVECLIP, "_squares",
             "return numpy.sum(pieces.reshape(z.shape[0], -1), axis=-1) / 3",
             "return numpy.sum(pieces[..., 0], axis=-1) / 3", CURVE_TESTS),
    Mutation("clip_curves: the first curve's time grid for every curve", CURVECLIP,
             "_rows", "return h if shared else (h[rows] if h.ndim == 3 else h[:, rows])",
             "return h[:1] if h.ndim == 3 else h[:, :1]", CURVE_TESTS),
    Mutation("clip_curves: extreme curves scaled to the first one's radius", CURVECLIP,
             "clip_curves", "* inner[outside, None, None]", "* inner[outside[0], None]",
             CURVE_TESTS[:1]),
    Mutation("clip_curves: an extreme curve's terms formed values first (they overflow)",
             CURVECLIP, "_scaled_squares", "pieces = (z0 * h) * (z0 + z1) + (z1 * h) * z1",
             "pieces = ((z0 + z1) * z0 + z1 * z1) * h", ("tests/test_clip_rows.py::"
                                       "test_a_spike_on_a_subnormal_width_keeps_the_clip_exact",)),
    Mutation("clip_curves: a value on pieces of width 0 alone scaled as it is", CURVECLIP,
             "clip_curves", "scaled[~numpy.isfinite(scaled)] = 0.0", "",
             ("tests/test_clip_rows.py::"
              "test_a_value_on_pieces_of_width_zero_alone_does_not_scale_the_curve",)),
    Mutation("clip_fields: the first field's factor for every field", FIELDCLIP,
             "clip_fields", "inner = bound / numpy.sqrt(numpy.where(squares > 0, squares, 1.0))",
             "inner = bound / numpy.sqrt(numpy.where(squares > 0, squares, 1.0).flat[0]) "
             "+ 0.0 * squares",
             FIELD_TESTS),
    Mutation("clip_fields: the norm of the last axis's first entry only (a vector field's "
             "first component)", FIELDCLIP, "_form",
             "return numpy.sum((z * mass).reshape(batch + (-1,)), axis=-1)",
             "return numpy.sum((z * mass)[..., :1].reshape(batch + (-1,)), axis=-1)",
             FIELD_TESTS),
    Mutation("clip_fields: cell fields on cells of uniform width", FIELDCLIP, "_mass",
             "w * (h if masses is None else masses[0])",
             "w * (h.mean() if masses is None else masses[0])", FIELD_TESTS),
    Mutation("ETA: the weights' delta_w dropped from the contraction", SLACK,
             "contraction_error",
             "(blocked + (1 + blocked) * gamma(depth)) + WEIGHT_ACCURACY",
             "(blocked + (1 + blocked) * gamma(depth))", CONTRACTION),
    Mutation("ETA: the block sums' tree depth halved", SLACK, "contraction_error",
             "depth = 2 * (blocks - 1).bit_length() + 1",
             "depth = (blocks - 1).bit_length() + 1", CONTRACTION),
    Mutation("ETA: sqrt(3) of the interpolant dropped", SLACK, "curve_eta",
             "ceil_sqrt(Fraction(ratio) * basis_size)", "ceil_sqrt(basis_size)", CURVE_ETA),
    Mutation("ETA: a vector basis's n values per block ignored", SLACK, "curve_eta",
             "terms = BLOCK * (value_dim if vector_basis else 1)", "terms = BLOCK", CURVE_ETA),
    Mutation("ETA: the coefficient clip's 3 roundings dropped", SLACK, "curve_eta",
             "coefficients)) + 3 * UNIT", "coefficients))", CURVE_ETA),
    Mutation("ETA: the curve norm's 64 steps halved", SLACK, "curve_eta",
             "gamma(max(NORM_TERMS + (1 if sobolev", "gamma(max(NORM_TERMS // 2 + (1 if sobolev",
             CURVE_ETA),
    Mutation("box ETA: one axis's contraction instead of k", SLACK, "box_eta",
             "axis_error = dimension * (", "axis_error = (", BOX_ETA),
    Mutation("box ETA: gamma_A of the change of basis dropped", SLACK, "box_eta",
             "(axis_error + gamma(atoms_size", "(axis_error + 0 * gamma(atoms_size", BOX_ETA),
    Mutation("box ETA: the change of basis's norm dropped", SLACK, "box_eta",
             "atoms = Fraction(transform_norm) * (", "atoms = (", BOX_ETA),
    Mutation("box ETA: 3^(k/2) of the interpolant as sqrt(3)", SLACK, "box_eta",
             "else Fraction(3) ** dimension", "else Fraction(3)", BOX_ETA),
    Mutation("box ETA: the field norm's 4k steps dropped", SLACK, "box_eta",
             "gamma(max(NORM_TERMS + 4 * dimension, coefficients))",
             "gamma(max(NORM_TERMS, coefficients))", BOX_ETA),
    Mutation("CDF sums: the second level's gamma_64 dropped", STREAMING, "_sum_error",
             "return gamma(ROW - 1) + gamma(CHUNK // ROW) * (1 + gamma(ROW - 1))",
             "return gamma(ROW - 1)", MOMENTS + DIRECT),
    Mutation("moment sums: the total's rounding u dropped", STREAMING, "moment_error_bound",
             "* (1 + UNIT) + UNIT) ** 2", "* (1 + UNIT)) ** 2", MOMENTS),
    Mutation("moment sums: the powers' gamma_(i-1) halved", STREAMING, "moment_error_bound",
             "(((gamma(i - 1) + Fraction(i, 2 ** 1074))",
             "(((gamma(i - 1) / 2 + Fraction(i, 2 ** 1074))", MOMENTS),
    Mutation("direct sums: the Legendre weights' gamma_4 + u dropped", STREAMING,
             "_unit_squares", "return rounded + combined * (1 + rounded)", "return rounded",
             DIRECT),
    Mutation("direct sums: the quotient's kappa halved", STREAMING, "_unit_squares",
             "(share * (1 + kappa) + kappa * 2) ** 2", "(share * (1 + kappa / 2) + kappa) ** 2",
             DIRECT),
    Mutation("Chebyshev recurrence's step error rho halved", STREAMING,
             "_recurrence_constants", "rho = Fraction(ceil_float(u * (5 + 2 * u) * (1 + worst)",
             "rho = Fraction(ceil_float(u * (5 + 2 * u) / 2 * (1 + worst)", DIRECT + FACTORS),
    Mutation("factor errors: the weight sums' gamma_(j+1) dropped", STREAMING, "factor_errors",
             "+ gamma(3) + gamma(j + 1) * (1 + gamma(3)) * (1 + error)", "+ gamma(3)",
             FACTORS + TENSOR),
    Mutation("factor errors: the difference's rounding dropped", STREAMING, "factor_errors",
             "bounds.append((spread + u * (2 + spread)) / _root(k)",
             "bounds.append(spread / _root(k)", FACTORS),
    Mutation("mean errors: the division's rounding of a coefficient dropped", STREAMING,
             "mean_errors", "direct = sum((b + u * (v + b) * (2 + u)) ** 2",
             "direct = sum((b + u * (v + b)) ** 2", MEANS),
    Mutation("mean errors: the division's rounding of a moment dropped", STREAMING,
             "mean_errors", "moments = sum((e + u * (1 + e) * (2 + u)) ** 2",
             "moments = sum((e + u * (1 + e)) ** 2", MEANS),
    Mutation("tensor sums: the pairwise tree's gamma_D dropped", "gpcompiler/cdf/joint.py",
             "tensor_error_bound",
             "per_unit = grown - 1 + (chunk + gamma(depth) * (1 + chunk)) * grown",
             "per_unit = grown - 1 + chunk * grown", TENSOR),
    Mutation("tensor sums: the factors' growth of one column only", "gpcompiler/cdf/joint.py",
             "tensor_error_bound", "grown = (1 + beta) ** k * (1 + gamma(k - 1))",
             "grown = (1 + beta) * (1 + gamma(k - 1))", TENSOR),
    Mutation("tensor sums: the chunk's gamma halved", "gpcompiler/cdf/joint.py",
             "tensor_error_bound", "chunk = gamma(min(CHUNK, count))",
             "chunk = gamma(min(CHUNK // 2, count))", TENSOR),
    Mutation("score error: the evaluation's gamma halved", "gpcompiler/cdf/degree.py",
             "score_error", "evaluation = gamma(top + 5)", "evaluation = gamma(top + 5) / 2",
             SCORE),
    Mutation("score error: the drift without sqrt(K + 1)", "gpcompiler/cdf/degree.py",
             "score_error", "ceil_sqrt((k + 1) * drift ** 2)", "ceil_sqrt(drift ** 2)", SCORE),
    Mutation("score error: the coefficients' 2u dropped", "gpcompiler/cdf/degree.py",
             "score_error", "* (1 + UNIT) + 2 * UNIT", "* (1 + UNIT)", SCORE),
    Mutation("product ball without the radii's product ra rb", EXACT, "_times",
             "numpy.abs(b[0]) * a[1] + a[1] * b[1]", "numpy.abs(b[0]) * a[1]",
             (BOUNDS + "test_product_ball_is_attained_term_by_term",)),
    Mutation("product ball: the term abs(a) rb halved", EXACT, "_times",
             "rad = numpy.abs(a[0]) * b[1] +", "rad = numpy.abs(a[0]) * b[1] / 2 +",
             (BOUNDS + "test_product_ball_is_attained_term_by_term",)),
    Mutation("product ball: the product's rounding halved", EXACT, "_times",
             "(rad + _U * numpy.abs(mid) + _TINY) * _GROW",
             "(rad + _U / 2 * numpy.abs(mid) + _TINY) * _GROW",
             (BOUNDS + "test_product_ball_is_attained_term_by_term",)),
    Mutation("-ln U ball: the slope bound halved", EXACT, "_exp_radius",
             "rad = 2.0 ** -52 * v", "rad = 2.0 ** -53 * v",
             BALLS),
    Mutation("Gumbel ball: the radius of ln E halved", COMPARE, "Noise.ball",
             "e_rad / low, numpy.inf)", "e_rad / low / 2, numpy.inf)",
             BALLS),
]
CATALOG = CATALOG + PER_ROW_AND_BOUNDS
GROUPS["rows-bounds"] = PER_ROW_AND_BOUNDS


def _constant(name):
    """Whether ``name`` names a module-level constant (_ANGLE, _GRADED_PIECES), not a def."""
    return re.fullmatch(r"_?[A-Z][A-Z0-9_]*", name) is not None


def function_span(lines, function):
    """(start, end) line indices of ``def function`` (a method: 'Class.method' or just its
    name; the first match), ending before the next line indented no deeper; None if absent.
    A constant's name (``_ANGLE``, or the emitter's code templates such as ``GRADED_PIECES``)
    spans its assignment up to the next top-level def, class or assignment."""
    name = function.split(".")[-1]
    if _constant(name):
        top = re.compile(r"^(def |class |[A-Za-z_]\w* = )")
        for start, line in enumerate(lines):
            if line.startswith(f"{name} = "):
                end = start + 1
                while end < len(lines) and not top.match(lines[end]):
                    end += 1
                return start, end
        return None
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


def inlined(path):
    """Whether generated modules carry a copy of the code of ``path`` (the template, the emitter's
    code templates, the runtime inlined verbatim)."""
    return path == TEMPLATE or path.startswith((EMIT, "gpcompiler/runtime/"))


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
    if inlined(mutation.path):
        inside = dataclasses.replace(mutation, function=mutation.generated or mutation.function)
        for module in sorted((root / "generated").glob("*.py")):
            text, stale = mutate_text(module.read_text(), inside)
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
    if failed and "Failed: Timeout (>" in done.stdout:     # pytest-timeout: a hang, not a kill
        return "timeout", f"{failed[0]} over the per-test limit", seconds
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
