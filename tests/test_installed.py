"""The installed package, not the source tree: build the wheel, check that it ships every
module, template and data file, install it into a fresh virtual environment and run its
console script from a directory outside the repository (issue 9)."""
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "gpcompiler"
# one worker runs this file (--dist loadgroup): the wheel of ``wheel`` is built once
pytestmark = pytest.mark.xdist_group("installed")


def _offline_build():
    """True when the environment's setuptools can build a wheel without fetching anything
    (setuptools >= 70.1 has bdist_wheel built in; older ones need the wheel package)."""
    try:
        version = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        return False
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel built from a copy of the project (the build writes nothing in the repo)."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(PACKAGE, source / "gpcompiler",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    command = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q",
               "-w", str(base / "dist")]
    if _offline_build():
        command.append("--no-build-isolation")
    result = subprocess.run(command, capture_output=True, text=True, cwd=base)
    assert result.returncode == 0, result.stdout + result.stderr
    (path,) = (base / "dist").glob("gpcompiler-*.whl")
    return path


def shipped_files():
    """Every file of the package that must be installed: modules, templates, data."""
    files = [p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts
             and p.suffix != ".pyc"]
    files += [*(PACKAGE / "specs").glob("*.toml"), *(PACKAGE / "generated").glob("*.py")]
    return sorted(p.relative_to(ROOT).as_posix() for p in files)


def test_wheel_ships_every_module_template_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = shipped_files()
    assert any(name.startswith("gpcompiler/adaptive/") for name in expected)
    assert any(name.startswith("gpcompiler/compiler/emit/templates/") for name in expected)
    assert any(name.startswith("gpcompiler/data/") for name in expected)
    assert "gpcompiler/specs/sinc_ecg.toml" in expected
    assert "gpcompiler/generated/linear.py" in expected
    missing = [name for name in expected if name not in names]
    assert not missing, f"not in the wheel: {missing}"
    stray = [n for n in names if not n.startswith(("gpcompiler/", "gpcompiler-"))]
    assert not stray, f"files outside the package in the wheel: {stray}"


def test_console_script_of_the_installed_wheel(wheel, tmp_path):
    environment = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(environment)], check=True)
    python = environment / "bin" / "python"
    result = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                             "--no-deps", "--no-index", "--ignore-installed", "-q", str(wheel)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()
    shutil.copy2(ROOT / "specs" / "linear.toml", work / "linear.toml")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["GPCOMPILER_CACHE"] = str(tmp_path / "cache")
    script = str(environment / "bin" / "gpcompiler")

    def run(*args):
        done = subprocess.run([script, *args], cwd=work, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    located = subprocess.run([str(python), "-c", "import gpcompiler; print(gpcompiler.__file__)"],
                             cwd=work, env=env, capture_output=True, text=True)
    assert str(environment) in located.stdout, located.stdout + located.stderr
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert run("--version").stdout.strip() == f"gpcompiler {version}"
    run("compile", "linear.toml", "-o", "out")
    assert "NAME = 'linear'" in (work / "out" / "linear.py").read_text()
    run("privatize", "linear.toml", "bundled:ecg", "--param", "T=800", "--epsilon", "1",
        "--seed", "1", "--grid", "11", "-o", "release.csv")
    rows = [line for line in (work / "release.csv").read_text().splitlines()
            if not line.startswith("#")]
    assert rows[0] == "curve,t,mV" and len(rows) == 12
    _shipped_specs_by_name(run, python, work, env, script)
    run("experiment", "ecg", "--quick", "--curves", "1", "--seeds", "1", "--out", "ecg")
    assert (work / "ecg" / "results.json").is_file()
    shipped = subprocess.run(
        [str(python), "-c", "from gpcompiler.audit import suite as audit_suite\n"
         "for name in audit_suite.shipped_specs(): audit_suite.generated(name)\n"
         "print(len(audit_suite.shipped_specs()))"],
        cwd=work, env=env, capture_output=True, text=True)
    assert shipped.returncode == 0 and int(shipped.stdout) >= 9, shipped.stdout + shipped.stderr


def _shipped_specs_by_name(run, python, work, env, script):
    """Issue 33 item 5: `gpcompiler specs` lists the shipped specs with what they release
    and their title; a bare shipped name is the shipped spec, from the CLI and from
    gpcompiler.load, whatever the working directory holds; ./NAME is a local file; an
    unknown name is one line listing them."""
    listed = {line.split()[0]: line for line in run("specs").stdout.splitlines()}
    assert set(listed) == {p.stem for p in (PACKAGE / "specs").glob("*.toml")}
    assert "t -> R^1" in listed["sinc_ecg"] and "800 sinc functions" in listed["sinc_ecg"]
    loaded = subprocess.run([str(python), "-c", "import gpcompiler\n"
                             "m = gpcompiler.load('sinc_ecg'); print(m.NAME, m.COEF_DIM)"],
                            cwd=work, env=env, capture_output=True, text=True)
    assert loaded.stdout == "sinc_ecg 800\n", loaded.stdout + loaded.stderr
    run("privatize", "sinc_ecg", "bundled:ecg", "--epsilon", "100", "--seed", "1", "--grid",
        "11", "-o", "sinc.csv")
    assert '# spec: "sinc_ecg"' in (work / "sinc.csv").read_text()
    shutil.copy2(ROOT / "specs" / "linear.toml", work / "sinc_ecg")   # ./NAME is the file
    run("privatize", "./sinc_ecg", "bundled:ecg", "--param", "T=800", "--epsilon", "1",
        "--seed", "1", "--grid", "11", "-o", "path.csv")
    assert '# spec: "linear"' in (work / "path.csv").read_text()
    unknown = subprocess.run([script, "privatize", "sinc", "bundled:ecg", "--epsilon", "1"],
                             cwd=work, env=env, capture_output=True, text=True)
    assert unknown.returncode == 2 and unknown.stdout == "", unknown.stderr
    assert unknown.stderr.count("\n") == 1 and "shipped: cdf_wages, " in unknown.stderr


def test_the_installed_wheel_compiles_the_c_target(wheel, tmp_path):
    """`gpcompiler compile --target c` of the installed wheel, outside the source tree:
    four files (the module, its header, the protocol program and the device ledger) of which
    the first and third build without warnings into a protocol program whose privatize --key
    gives the source tree's Python target's bytes; a box spec is one line and exit 2."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc)")
    environment = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(environment)], check=True)
    result = subprocess.run([sys.executable, "-m", "pip", "--python",
                             str(environment / "bin" / "python"), "install", "--no-deps",
                             "--no-index", "--ignore-installed", "-q", str(wheel)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()
    for name in ("linear", "harbour"):
        shutil.copy2(ROOT / "specs" / f"{name}.toml", work / f"{name}.toml")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["GPCOMPILER_CACHE"] = str(tmp_path / "cache")
    script = str(environment / "bin" / "gpcompiler")
    done = subprocess.run([script, "compile", "linear.toml", "--target", "c", "-o", "out"],
                          cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (work / "out").iterdir()) == [
        "linear.c", "linear.h", "linear_device.c", "linear_main.c"]
    built = subprocess.run([cc, "-std=c11", "-O2", "-ffp-contract=off", "-Wall", "-Wextra",
                            "-pedantic", "-Werror", "out/linear.c", "out/linear_main.c", "-lm",
                            "-o", "linear"], cwd=work, capture_output=True, text=True)
    assert built.returncode == 0 and built.stderr == "", built.stderr
    key = "5a" * 16 + "c3" * 16
    rows = "curve,c0,c1\na,0.5,1\nb,0,-0.0\nc,1e300,3\n"
    args = ["privatize", "--rho", "0.5", "--key", key]
    c_out = subprocess.run([str(work / "linear"), *args], input=rows, capture_output=True,
                           text=True)
    python_out = subprocess.run([sys.executable, str(ROOT / "generated" / "linear.py"), *args],
                                input=rows, capture_output=True, text=True)
    assert c_out.returncode == python_out.returncode == 0, c_out.stderr + python_out.stderr
    assert c_out.stdout == python_out.stdout
    box = subprocess.run([script, "compile", "harbour.toml", "--target", "c", "-o", "box"],
                         cwd=work, env=env, capture_output=True, text=True)
    assert box.returncode == 2 and box.stdout == "" and box.stderr.count("\n") == 1, box.stderr
    assert "--target python" in box.stderr and not (work / "box").exists()
