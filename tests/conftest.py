import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import configuration, settings

# Tests write only to temporary directories: hypothesis's storage (its database and its
# constants cache) and the build cache of gpcompiler.load go to one removed at exit.
SCRATCH = tempfile.mkdtemp(prefix="gpcompiler-tests-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)
configuration.set_hypothesis_home_dir(os.path.join(SCRATCH, "hypothesis"))
os.environ["GPCOMPILER_CACHE"] = os.path.join(SCRATCH, "build-cache")
settings.register_profile("local", database=None)
settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "local")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpcompiler.build import import_module_file  # noqa: E402
from gpcompiler.spec import load_spec  # noqa: E402

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
