"""The documentation site (issue 20): it builds with Sphinx with warnings as errors, every
code example on it is executed by the build (a failing one fails the build), and the
design notes that `--help` cites are installed with the package."""
import base64
import json
import os
import re
import shutil
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
# the site is built once, on one worker, for the three tests that read it (--dist loadgroup)
pytestmark = [pytest.mark.timeout(900), pytest.mark.xdist_group("docs_site")]


def sphinx_build(source, output):
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                           "html", "-d", str(output / "doctrees"), str(source),
                           str(output / "html")], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("sphinx", reason="the docs extra is not installed: "
                        "python -m pip install '.[docs]'")
    for module in ("myst_parser", "furo", "sphinx_copybutton"):
        pytest.importorskip(module, reason="the docs extra is not installed: "
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



def test_merged_pages_redirect_to_their_new_place(site):
    """Issue 34 merged the duplicate pages; their old addresses send the browser on to a
    page that exists, and the new pages keep what the old ones said."""
    for old, new in (("choosing", "howto/choose-basis-and-budget.html"),
                     ("experiments", "evidence/experiments.html")):
        assert not (DOCS / f"{old}.md").exists()
        assert f'content="0; url={new}"' in (site / f"{old}.html").read_text()
        assert (site / new).is_file()
    assert "auto / best fixed K" in html_text(site, "howto/choose-basis-and-budget.html")
    assert "Which method fits which spec" in html_text(site, "howto/choose-basis-and-budget.html")
    assert "ours / theirs" in html_text(site, "evidence/experiments.html")

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


class Chromium:
    """Headless Chromium driven over the DevTools pipe (--remote-debugging-pipe: JSON
    messages ending in NUL, read by Chromium on descriptor 3, written on 4)."""

    def __init__(self, profile):
        to_chromium, self._writer = os.pipe()
        self._reader, from_chromium = os.pipe()

        def descriptors():                          # in the child, before exec
            reads, writes = os.dup(to_chromium), os.dup(from_chromium)
            os.dup2(reads, 3)
            os.dup2(writes, 4)
        self.process = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4), preexec_fn=descriptors, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_chromium)
        os.close(from_chromium)
        self._calls, self._pending = 0, b""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]

    def call(self, method, session=None, **params):
        self._calls += 1
        message = {"id": self._calls, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._writer, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._pending:
                chunk = os.read(self._reader, 1 << 16)
                assert chunk, "chromium closed the DevTools pipe"
                self._pending += chunk
            raw, self._pending = self._pending.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._calls:
                assert "error" not in reply, reply["error"]
                return reply["result"]

    def show(self, url, width, height):
        """Load ``url`` in a ``width`` x ``height`` CSS-pixel viewport (mobile below 600)."""
        self.call("Emulation.setDeviceMetricsOverride", self.session, width=width,
                  height=height, deviceScaleFactor=1, mobile=width < 600)
        self.call("Page.navigate", self.session, url=url)

    def evaluate(self, expression):
        """The value of a JavaScript expression (a promise is awaited)."""
        return self.call("Runtime.evaluate", self.session, expression=expression,
                         awaitPromise=True, returnByValue=True)["result"]["value"]

    def screenshot(self, path):
        png = self.call("Page.captureScreenshot", self.session, format="png")["data"]
        path.write_bytes(base64.b64decode(png))

    def close(self):
        for descriptor in (self._writer, self._reader):
            os.close(descriptor)
        self.process.kill()
        self.process.wait()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Once the page has loaded: how wide the page, the text column and each code block are
# (a block wider than its box is clipped behind a scrollbar).
LAYOUT = """new Promise(function (done) {
  (function measure() {
    if (document.readyState !== "complete") { setTimeout(measure, 20); return; }
    var column = document.querySelector("article") || document.body;
    done({viewport: window.innerWidth, page: document.documentElement.scrollWidth,
          column: column.getBoundingClientRect().width,
          blocks: Array.from(document.querySelectorAll("div.highlight pre")).map(function (p) {
            return {text: p.textContent, scroll: p.scrollWidth, box: p.clientWidth,
                    right: p.getBoundingClientRect().right}; })});
  })();
})"""


def test_pages_are_readable_at_1280_and_390_pixels(site, tmp_path_factory):
    """Issue 34: the getting-started command was cut off behind a scrollbar in a 450 px
    column. Screenshots of three pages at 1280 x 900 and 390 x 844 (kept in the test's
    temporary directory), and at both widths: no page scrolls sideways, the text column
    takes most of the window, and getting-started's install-and-run command is whole."""
    if CHROMIUM is None:
        pytest.skip("no chromium on the PATH: apt-get install chromium")
    shots = tmp_path_factory.mktemp("screenshots")
    browser = Chromium(tmp_path_factory.mktemp("chromium-profile"))
    try:
        for width, height in ((1280, 900), (390, 844)):
            for page in ("getting-started", "concepts", "faq"):
                browser.show((site / f"{page}.html").as_uri(), width, height)
                layout = browser.evaluate(LAYOUT)
                browser.screenshot(shots / f"{page}-{width}.png")
                where = f"{page} at {width} px (screenshot in {shots})"
                assert layout["viewport"] == width, where
                assert layout["page"] <= width, where
                assert layout["column"] >= min(0.55 * width, width - 40), where
                if page == "getting-started":
                    (command,) = [block for block in layout["blocks"]
                                  if "gpcompiler privatize specs/sinc_ecg.toml" in block["text"]]
                    assert command["scroll"] <= command["box"], where
                    assert command["right"] <= width, where
    finally:
        browser.close()
    assert sorted(p.name for p in shots.iterdir()) == sorted(
        f"{page}-{width}.png" for page in ("getting-started", "concepts", "faq")
        for width in (1280, 390))
