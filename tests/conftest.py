import atexit
import os
import shutil
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

from gpcompiler.compiler.build import import_module_file  # noqa: E402
from gpcompiler.compiler.spec import load_spec  # noqa: E402

SPECS = sorted(p.stem for p in (ROOT / "specs").glob("*.toml"))
BOX_SPECS = [n for n in SPECS if load_spec(ROOT / "specs" / f"{n}.toml").dimension > 1]
MECHANISM_SPECS = [n for n in SPECS if 'kind = "cdf"' not in (ROOT / "specs" / f"{n}.toml").read_text()
                   and n not in BOX_SPECS]   # curve mechanisms


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="run long experiments")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="long experiment: pass --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def generated(name):
    """The committed generated module of a shipped spec."""
    return import_module_file(ROOT / "generated" / f"{name}.py", f"generated_{name}")


def spec(name):
    return load_spec(ROOT / "specs" / f"{name}.toml", ROOT)


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
    "kind_hold": '[domain]\nintervals = [["0", "10"]]\n[basis]\n'
                 'family = { name = "legendre", degree = 4 }\n[curve]\noutside = "hold"\n',
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
