"""The README (issue 20): at most 20 KB, its two set-up commands as .ci/run runs them, and its
own-data example run verbatim in a temporary directory (spec, CSV, command, release read
back with pandas) with this checkout's `gpcompiler` and `python` on the PATH."""
import csv
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
MARKER = "<!-- own-data example: tests/test_readme.py runs this block verbatim -->"


def fenced_blocks(text, language):
    """The contents of the fenced code blocks of ``language`` ('' for no language)."""
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.S | re.M)


def own_data_example():
    after = README.split(MARKER, 1)[1]
    assert after.startswith("\n```bash\n"), "the marker must be followed by the bash block"
    return fenced_blocks(after, "bash")[0]


def shims(directory):
    """``gpcompiler`` and ``python`` of this checkout, for commands run as a user types them."""
    directory.mkdir()
    for name, command in (("gpcompiler", f'"{sys.executable}" -m gpcompiler'),
                          ("python", f'"{sys.executable}"')):
        (directory / name).write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        (directory / name).chmod(0o755)
    env = dict(os.environ, PATH=f"{directory}{os.pathsep}{os.environ['PATH']}")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def test_readme_is_a_first_read():
    assert len(README.encode("utf-8")) <= 20_000
    first_screen = README[:README.index("## What it does")]
    for needed in ("## Set up", "## Your own data", "## Which method fits which spec",
                   "## Privacy in three points", "## Read next", "zero outside its samples",
                   'outside = "hold"', "`--compare` is not private"):
        assert needed in first_screen, needed


def test_readme_commands_are_the_ones_ci_runs():
    commands = fenced_blocks(README, "")
    assert commands[0].startswith("python -m pip install '.[plot]' && mkdir -p out && "
                                  "gpcompiler compile specs/*.toml -o out/generated && "
                                  "gpcompiler privatize specs/sinc_ecg.toml bundled:ecg")
    test_command = commands[1].strip()
    assert test_command == "python -m pip install '.[test]' && python -m pytest -q"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == test_command


def test_own_data_example_runs_verbatim(tmp_path):
    example = own_data_example()
    assert len(example.splitlines()) <= 15
    env = shims(tmp_path / "bin")
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(["bash", "-e", "-c", example], cwd=work, env=env, text=True,
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(work / "release.csv", newline="") as file:
        rows = list(csv.DictReader(line for line in file if not line.startswith("#")))
    assert sorted({row["curve"] for row in rows}) == ["mon", "tue"]
    assert len(rows) == 2 * 25
    summaries, table = done.stdout.split("wrote release.csv\n")
    assert summaries == "2 curves: project: 7 orthonormal coefficients, expected L2 noise 3.5 (each)\n"
    printed = table.split()
    assert printed[:3] == ["curve", "mon", "tue"]                  # the pivoted release
    released = {(row["curve"], float(row["t"])): float(row["y"]) for row in rows}
    assert float(printed[printed.index("12.0") + 1]) == pytest.approx(released["mon", 12.0])


def test_readme_python_example_runs(monkeypatch, capsys):
    (block,) = fenced_blocks(README, "python")
    monkeypatch.chdir(ROOT)                       # the example names specs/ellipse.toml
    exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
    numbers = [float(x) for x in re.findall(r"-?\d+\.?\d*", capsys.readouterr().out)]
    assert numbers == pytest.approx([3, 0, 0, 1, 0, 0], abs=1e-4)     # the README's comment


def test_readme_facts_match_the_tool():
    """The facts the README states that a change could make stale (issue 20, defect 6)."""
    from gpcompiler.compiler.spec import MAX_BASIS_SIZE
    specs = sorted(p.stem for p in (ROOT / "specs").glob("*.toml"))
    number = len(specs)
    assert f"the {number} shipped specs" in README and f"The {number}\nshipped specs" in README
    listed = README.split(f"The {number}\nshipped specs", 1)[1].split("Full\nreference")[0]
    assert sorted(re.findall(r"`(\w+)`", listed)) == specs
    assert f"at most {MAX_BASIS_SIZE:,} functions" in README
    assert "for `cdf`, one column or the joint CDF of two" in README        # cdf --plot


def test_readme_spec_example_is_a_valid_spec():
    from gpcompiler.compiler.spec import parse_spec
    (block,) = fenced_blocks(README, "toml")
    spec = parse_spec(block.encode(), "README.md")
    assert (spec.name, len(spec.functions), spec.value_dim) == ("linear", 2, 1)
