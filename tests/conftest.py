import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import configuration, settings

# Tests write only to temporary directories: hypothesis's storage (its database and its
# constants cache) and the build cache of gpcompiler.load go to one removed at exit. The
# pytest-xdist workers inherit the controller's (its environment), so a spec one worker
# compiled is reused by the other (the cache writes atomically); hypothesis's is per worker.
SCRATCH = os.environ.get("GPCOMPILER_TEST_SCRATCH")
if SCRATCH is None or not os.path.isdir(SCRATCH):
    SCRATCH = tempfile.mkdtemp(prefix="gpcompiler-tests-")
    os.environ["GPCOMPILER_TEST_SCRATCH"] = SCRATCH
    atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)
configuration.set_hypothesis_home_dir(
    os.path.join(SCRATCH, "hypothesis", os.environ.get("PYTEST_XDIST_WORKER", "main")))
os.environ["GPCOMPILER_CACHE"] = os.path.join(SCRATCH, "build-cache")
settings.register_profile("local", database=None)
settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "local")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SPECS = sorted(p.stem for p in (ROOT / "specs").glob("*.toml"))


def __getattr__(name):
    """BOX_SPECS and MECHANISM_SPECS (curve mechanisms), read from the specs when a test
    module first imports them: the pytest-xdist controller, which runs no test, starts the
    workers without importing the compiler."""
    if name not in ("BOX_SPECS", "MECHANISM_SPECS"):
        raise AttributeError(name)
    from gpcompiler.compiler.spec import load_spec
    box = [n for n in SPECS if load_spec(ROOT / "specs" / f"{n}.toml").dimension > 1]
    globals().update(BOX_SPECS=box, MECHANISM_SPECS=[
        n for n in SPECS if 'kind = "cdf"' not in (ROOT / "specs" / f"{n}.toml").read_text()
        and n not in box])
    return globals()[name]


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="run long experiments")


# Tests of several seconds each on the reference machine (pytest --durations), longest
# first. They run first: pytest-xdist hands out tests in collection order (the xdist_group
# groups before everything else), so the short ones fill in at the end and both workers
# finish together instead of one waiting on a long test collected late.
LONG_TESTS = [f"tests/{name}" for name in (
    "test_docs.py::test_site_builds_with_every_page_and_the_executed_outputs",
    "test_module.py::test_check_passes_and_compiling_twice_gives_identical_bytes",
    "test_privacy_mutants.py::test_single_curve_noise_has_the_exact_law",
    "test_box.py::test_a_wrong_closed_form_is_caught_by_mpmath",
    "test_privacy_boundary.py::test_cgp_noise_scale_is_never_below_one_over_sqrt_two_rho",
    "test_exact_analysis.py::test_chebyshev_weight_gram_by_tanh_sinh_and_projection_at_the_"
    "singular_ends",
    "test_privacy_mutants.py::test_project_and_privatize_noise_has_the_exact_law",
    "test_box.py::test_box_rules_are_verified_where_a_component_peaks",
    "test_cli.py::test_progress_bar_on_a_terminal_only",
    "test_formats.py::test_a_20000_curve_batch_prints_one_summary_line_and_its_coefficients_"
    "fit_in_the_input",
    "test_exact.py::test_gumbel_law",
    "test_reference.py::test_sinc_basis_is_orthonormal_on_the_real_line",
    "test_experiments.py::test_own_csv_through_data",
    "test_exact_analysis.py::test_sinc_family_with_a_width_parameter",
    "test_experiments.py::test_bundled_quick_run_has_the_papers_shape_and_direction",
    "test_cdf_degree.py::test_exponential_mechanism_draws_its_law",
    "test_box.py::test_numerical_gram_on_a_box",
    "test_dask.py::test_worker_heap_keeps_a_blocks_temporaries",
    "test_select_split.py::test_noise_target_is_the_expected_noise_norm_of_the_release",
    "test_privacy_mutants.py::test_select_size_svt_noise_is_the_proofs_for_its_charge",
    "test_experiments.py::test_cdf_estimators_on_the_wages_and_on_own_csv",
    "test_adaptive.py::test_priv_func_select_on_a_cubic_picks_few_functions_and_nearly_the_"
    "best_prefix",
    "test_grading.py::test_a_node_a_subnormal_distance_from_a_singular_end_changes_nothing",
    "test_cli.py::test_broken_pipe_is_a_quiet_exit",
    "test_privacy_mutants.py::test_unbounded_clipping_svt_noise_is_the_proofs_for_its_charge",
    "test_privacy_boundary.py::test_nothing_draws_from_an_unseeded_numpy_generator",
    "test_audit.py::test_step_conformance_sees_noise_confined_to_two_coordinates_or_shared",
    "test_metrics.py::test_weighted_metric_gram_orthonormality_and_projection",
    "test_box.py::test_expression_basis_2d",
    "test_cli.py::test_audit_command_on_one_spec_or_module",
    "test_cli.py::test_param_option_and_unknown_parameters",
    "test_readme.py::test_own_data_example_runs_verbatim",
    "test_reference.py::test_sinc_projection_matches_mpmath",
)]


def _long_first(items):
    """LONG_TESTS first, in their order (every parameter of one), then the rest as
    collected (a stable sort: both workers collect the same order)."""
    rank = {name: index for index, name in enumerate(LONG_TESTS)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("[")[0].split("@")[0],
                                         len(LONG_TESTS)))


def pytest_collection_modifyitems(config, items):
    _long_first(items)
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="long experiment: pass --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def generated(name):
    """The committed generated module of a shipped spec."""
    from gpcompiler.compiler.build import import_module_file
    return import_module_file(ROOT / "generated" / f"{name}.py", f"generated_{name}")


def spec(name):
    from gpcompiler.compiler.spec import load_spec
    return load_spec(ROOT / "specs" / f"{name}.toml", ROOT)


@pytest.fixture(scope="session")
def programs(tmp_path_factory):
    """{(compiler, name): the C protocol program of generated/c/NAME}, each built on first use
    (c_build.Programs), shared by the C and JS conformance tests (one xdist group)."""
    from c_build import Programs
    return Programs(tmp_path_factory.mktemp("c_protocol"))


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run ``gpcompiler ARGS`` in-process from the repository root: (status, out, err)."""
    from gpcompiler import cli as cli_module
    monkeypatch.chdir(ROOT)

    def call(*args):
        try:
            status = cli_module.main([str(a) for a in args])
        except SystemExit as exit_:
            status = exit_.code
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return status, out, err
    return call


# Small specs of the weight kinds and curve options no shipped spec has (issue 19): compiled
# once per test process into the scratch build cache and shared by the test files.
KIND_SPECS = {
    "kind_bounded": '[domain]\nintervals = [["-1", "2"]]\n[basis]\n'
                    'functions = ["1", "t", "t**2", "t**3"]\n[metric]\nweight = "1 + t**2/4"\n',
    "kind_chebyshev": '[domain]\nintervals = [["-1", "1"]]\n[basis]\n'
                      'functions = ["1", "t", "t**2", "t**3"]\n[metric]\n'
                      'weight = "1/sqrt(1 - t**2)"\n',
    "kind_sobolev": '[domain]\nintervals = [["0", "1"]]\n[basis]\n'
                    'functions = ["1", "t", "t**2", "t**3"]\n[metric]\nsobolev = 1\n',
    "kind_sobolev_box": '[domain]\nvariables = ["x", "y"]\nintervals = [["0", "1"], ["0", "2"]]\n'
                        '[basis]\nfamily = { name = "legendre", degree = [1, 1] }\n'
                        '[metric]\nsobolev = 1\n',
    "kind_sobolev_expression_box": '[domain]\nvariables = ["x", "y"]\n'
                                   'intervals = [["0", "1"], ["0", "2"]]\n[basis]\n'
                                   'functions = ["1", "x", "sin(y)", "x*cos(y)"]\n'
                                   '[metric]\nsobolev = 1\n',
    "kind_hold": '[domain]\nintervals = [["0", "10"]]\n[basis]\n'
                 'family = { name = "legendre", degree = 4 }\n[curve]\noutside = "hold"\n',
    "kind_sobolev_hold": '[domain]\nintervals = [["0", "1"]]\n[basis]\n'
                         'functions = ["1", "t", "t**2", "t**3"]\n[metric]\nsobolev = 1\n'
                         '[curve]\noutside = "hold"\n',
}


def compiled(name):
    """The module of KIND_SPECS[name], compiled once (gpcompiler.load's build cache)."""
    from gpcompiler import load
    path = Path(SCRATCH) / "specs" / f"{name}.toml"
    if not path.exists():                  # written atomically: the workers share SCRATCH
        path.parent.mkdir(exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.part")
        partial.write_text(f'name = "{name}"\n' + KIND_SPECS[name])
        os.replace(partial, path)
    return load(path)


def node_missing():
    """Why the JS tests cannot run here (None: node >= 18 is on PATH)."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed (the JS target needs Node >= 18)"
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    major = re.match(r"v(\d+)", version)
    return None if major and int(major[1]) >= 18 else f"node {version.strip()} is older than 18"
