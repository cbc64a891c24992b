"""The documentation site (issue 20): it builds with Sphinx with warnings as errors, every
code example on it is executed by the build (a failing one fails the build), and the
design notes that `--help` cites are installed with the package."""
import re
import subprocess
import sys
import tomllib

import pytest

from conftest import ROOT
from gpcompiler.compiler.spec import parse_spec

DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "results" not in p.relative_to(DOCS).parts
               and "_build" not in p.parts)
# fenced blocks that are not executed: TOML (parsed, whole specs validated), synopses and
# diagrams (text)
NOT_EXECUTED = {"toml", "text"}
# the Sphinx build (module-scoped, in the first test's setup) has its own 600 s limit
pytestmark = pytest.mark.timeout(900)


def sphinx_build(source, output):
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                           "html", "-d", str(output / "doctrees"), str(source),
                           str(output / "html")], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("sphinx", reason="the docs extra is not installed: "
                        "python -m pip install '.[docs]'")
    pytest.importorskip("myst_parser", reason="the docs extra is not installed: "
                        "python -m pip install '.[docs]'")
    output = tmp_path_factory.mktemp("site")
    done = sphinx_build(DOCS, output)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == "", done.stderr                 # -q: only warnings and errors
    return output / "html"


def html_text(site, page):
    return re.sub(r"<[^>]+>", "", (site / page).read_text(encoding="utf-8"))


def test_site_builds_with_every_page_and_the_executed_outputs(site):
    built = {p.relative_to(DOCS).with_suffix(".html").as_posix() for p in PAGES}
    missing = [page for page in built if not (site / page).is_file()]
    assert not missing, missing
    # outputs that exist only if the examples ran (they are not in the sources)
    assert "2 curves: project: 7 orthonormal coefficients, expected L2 noise 3.5 (each)" in html_text(
        site, "getting-started.html")
    assert "ecg208_w0: project: 800 orthonormal coefficients" in html_text(
        site, "tutorials/ecg.html")
    assert "PrivacyLedger(GP, budget 1, spent 1)" in html_text(site, "tutorials/trajectories.html")
    assert "14 specs" in html_text(site, "reference/spec.html")
    # the CLI reference comes from the parser, the API reference from the docstrings
    cli = html_text(site, "reference/cli.html")
    for command in ("compile", "check", "explain", "privatize", "audit", "cdf", "experiment"):
        assert f"usage: gpcompiler {command}" in cli
    assert "--method {project,select,seg,unbounded,baseline}" in cli
    api = html_text(site, "reference/api.html")
    assert "Orthonormal coordinates of the L2 projection of the piecewise-linear curve" in api
    assert "Compile" in api and "spec_path" in api                  # gpcompiler.load
    assert "privacy unit" in html_text(site, "threat-model.html")


def fenced_blocks(text):
    """(info string, body) of each fenced block of a Markdown page."""
    blocks, opened = [], None
    for line in text.splitlines(keepends=True):
        if opened is None and line.startswith("```"):
            opened = (line[3:].strip(), [])
        elif opened is not None and line.rstrip("\n") == "```":
            blocks.append((opened[0], "".join(opened[1])))
            opened = None
        elif opened is not None:
            opened[1].append(line)
    return blocks


def test_every_code_example_is_executed_or_checked():
    """Code blocks are gp-python / gp-shell directives (run by the build); the only others
    are TOML (parsed here, whole specs validated) and text (synopses, diagrams, the install
    commands)."""
    for page in PAGES:
        for language, body in fenced_blocks(page.read_text(encoding="utf-8")):
            where = f"{page.relative_to(ROOT)}: ```{language}"
            assert language.startswith("{") or language in NOT_EXECUTED, where
            if language == "toml":
                document = tomllib.loads(body)
                if "name" in document:                       # a whole spec: valid as one
                    parse_spec(body.encode(), page.name)
    getting_started = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [body for language, body in fenced_blocks(readme) if language == ""]
    assert len(commands) == 2
    for command in commands:
        assert f"```text\n{command}```" in getting_started     # the README's commands


def test_a_failing_example_fails_the_build(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra is not installed")
    pytest.importorskip("myst_parser", reason="the docs extra is not installed")
    source = tmp_path / "source"
    source.mkdir()
    (source / "conf.py").write_text(
        f"import sys\nsys.path[:0] = [{str(ROOT)!r}, {str(DOCS / '_ext')!r}]\n"
        "extensions = ['myst_parser', 'gpdocs']\n")
    (source / "index.md").write_text(
        "# Broken\n\n```{gp-python}\nprint(1 / 0)\n```\n\n"
        "```{gp-shell}\ngpcompiler cdf --epsilon 1 --delta 7\n```\n\n"
        "```{gp-shell}\n:status: 2\ntrue\n```\n")
    done = sphinx_build(source, tmp_path / "out")
    assert done.returncode != 0
    assert "ZeroDivisionError" in done.stderr
    assert "argument --delta: expected a number in [1e-12, 0.5)" in done.stderr
    assert "exited 2, expected 0" in done.stderr
    assert "'true' exited 0, expected 2" in done.stderr


def test_design_notes_cited_by_help_are_installed():
    help_text = subprocess.run([sys.executable, "-m", "gpcompiler", "--help"], cwd=ROOT,
                               capture_output=True, text=True).stdout
    assert "docs/design.md" in help_text
    installed = ROOT / "gpcompiler" / "docs" / "design.md"       # docs/design.md in the package
    assert installed.read_bytes() == (DOCS / "design.md").read_bytes()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["gpcompiler"]
    assert "docs/design.md" in package_data


def test_the_spec_reference_lists_every_key_with_its_default():
    """docs/reference/spec.md's key table has a row for every key the spec reader accepts
    (it lacked [curve] outside, [privacy] bound and the units), with the defaults read from
    gpcompiler/compiler/spec.py."""
    from gpcompiler.compiler import spec
    rows = {line.split("|")[1].strip().strip("`"): line
            for line in (DOCS / "reference" / "spec.md").read_text().splitlines()
            if line.startswith("| `")}
    keys = ({key for key in spec._TOP_KEYS if key not in spec._SECTION_KEYS}
            | {f"{section}.{key}" for section, keys in spec._SECTION_KEYS.items()
               for key in keys})
    assert sorted(keys - set(rows)) == []
    assert f'`"{spec.OUTSIDE[0]}"` (default) or `"{spec.OUTSIDE[1]}"`' in rows["curve.outside"]
    assert spec.MAX_BOUND == 2.0 ** 500 and "at most 2^500" in rows["privacy.bound"]
    assert "default: none" in rows["privacy.bound"] and "`default_bound`" in rows["privacy.bound"]
    for key in ("domain.units", "values.units"):
        assert "(default: none)" in rows[key]
