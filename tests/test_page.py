"""The privatize page (docs/reference/browser.md) in real headless Chromium, driven over the
DevTools protocol (tests/chromium.py): loaded from disk, fed the bundled ECG and a CSV file,
its releases must be the Node releases of the same JS modules for the same key, bit for
bit; its CSV must be the command line's; no request may leave it, and its CSP must refuse
one. Screenshots at 1280 and 390 px wide (GPCOMPILER_SCREENSHOTS=1 writes them to
docs/images/, where docs/reference/browser.md shows them)."""
import base64
import json
import os
import shutil
import struct
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy
import pytest

from chromium import Browser, executable
from gpcompiler.accounting import records

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_page"))
import build  # noqa: E402  (docs/_page/build.py)

PAGE = build.PAGE
pytestmark = pytest.mark.xdist_group("chromium")   # one worker, one browser
KEY = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5ac3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"
# Two curves of the linear spec (a comment, an id column, a repeated time: a jump); after
# the comment, the protocol program's input too.
CURVES = ("# two curves\ncurve,t,y\nalice,0,1\nalice,0.25,1.5\nalice,0.5,2\nalice,0.5,-1\n"
          "alice,1,3\nbob,0.1,-2\nbob,0.9,4.5\n")


def test_the_committed_page_is_current():
    """docs/_extra/privatize/index.html is what docs/_page/build.py makes of the page
    sources and generated/js/ (rebuild: python docs/_page/build.py)."""
    assert PAGE.read_text(encoding="utf-8") == build.build(), "python docs/_page/build.py"


def test_a_script_that_could_end_its_element_is_refused():
    for text in ("x = '</script>'", "/* </STYLE */", "<!-- a"):
        with pytest.raises(ValueError, match="cannot be inlined"):
            build._inline(text, "m.mjs")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """A Chromium tab on the page (file://, with the testing key), its network recorded."""
    path = executable()
    if path is None:
        pytest.skip("no chromium: .ci/run installs Debian's chromium")
    if shutil.which("node") is None:
        pytest.skip("no node")
    scratch = tmp_path_factory.mktemp("chromium")
    browser = Browser(path, scratch / "profile")
    try:
        target = browser.call("Target.createTarget", url="about:blank")["targetId"]
        session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        tab = Tab(browser, session, scratch)
        for domain in ("Page", "Runtime", "Network"):
            tab.call(f"{domain}.enable")
        browser.call("Browser.setDownloadBehavior", behavior="allowAndName",
                     downloadPath=str(scratch), eventsEnabled=True)
        tab.resize(1280)
        tab.call("Page.navigate", url=f"{PAGE.as_uri()}?key={KEY}")
        tab.wait("document.body && document.body.dataset.ready === 'true'")
        yield tab
    finally:
        browser.close()


class Tab:
    def __init__(self, browser, session, scratch):
        self.browser, self.session, self.scratch = browser, session, scratch

    def call(self, method, **params):
        return self.browser.call(method, session=self.session, **params)

    def js(self, expression):
        reply = self.call("Runtime.evaluate", expression=expression, awaitPromise=True,
                          returnByValue=True)
        assert "exceptionDetails" not in reply, reply["exceptionDetails"]
        return reply["result"].get("value")

    def wait(self, condition, timeout=20):
        deadline = time.monotonic() + timeout
        while not self.js(f"Boolean({condition})"):
            assert time.monotonic() < deadline, f"the page never had {condition}"
            time.sleep(0.05)

    def resize(self, width):
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=900,
                  deviceScaleFactor=1, mobile=width < 600)
        self.js("new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")

    def privatize(self, spec, budget, value, source="ecg", file=None):
        """Fill in the form, press Privatize; the release CSV shown on the page."""
        if file is not None:
            node = self.call("Runtime.evaluate", expression="document.getElementById('file')")
            self.call("DOM.setFileInputFiles", files=[str(file)],
                      objectId=node["result"]["objectId"])
        done = self.js("Number(document.body.dataset.released || 0)")
        self.js(f"""document.querySelector('input[name=source][value={source}]').checked = true;
                    document.getElementById('spec').value = {json.dumps(spec)};
                    document.getElementById('budget').value = {json.dumps(budget)};
                    document.getElementById('value').value = {json.dumps(str(value))};
                    document.getElementById('run').click()""")
        self.wait(f"Number(document.body.dataset.released || 0) > {done} || "
                  "document.body.dataset.failed")
        assert self.js("document.body.dataset.failed || ''") == ""
        return self.js("document.getElementById('release').textContent")

    def download(self, link):
        """Click a download link; the bytes the browser saved."""
        events = len(self.browser.events)
        self.js(f"document.getElementById({json.dumps(link)}).click()")
        begin = self.browser.wait_for(lambda e: e["method"] == "Browser.downloadWillBegin"
                                      and e in self.browser.events[events:])
        guid = begin["params"]["guid"]
        self.browser.wait_for(lambda e: e["method"] == "Browser.downloadProgress"
                              and e["params"]["guid"] == guid
                              and e["params"]["state"] == "completed")
        return (self.scratch / guid).read_text(encoding="utf-8")

    def screenshot(self, width):
        """A PNG of the whole page at ``width`` CSS pixels."""
        self.resize(width)
        height = self.js("document.documentElement.scrollHeight")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=width < 600)
        self.js("new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
        png = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        self.resize(1280)
        return png


def node_release(spec, budget, value, curves_csv):
    """The coefficients (repr text) of `node generated/js/SPEC.mjs release --key KEY`."""
    out = subprocess.run(["node", str(ROOT / "generated" / "js" / f"{spec}.mjs"), "release",
                          f"--{budget}", str(value), "--key", KEY], input=curves_csv,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    lines = out.splitlines()
    return {line.split(",")[0]: line.split(",")[1:] for line in lines[1:]}


def node_evaluate(spec, coefficients, grid):
    """The module's evaluate(c, grid) under Node, as float64 bit patterns."""
    script = (f"import * as m from {json.dumps((ROOT / 'generated' / 'js' / f'{spec}.mjs').as_uri())};"
              "const [c, g] = JSON.parse(process.argv[1]);"
              "const v = m.evaluate(Float64Array.from(c), Float64Array.from(g));"
              "process.stdout.write(Buffer.from(v.buffer).toString('hex'));")
    out = subprocess.run(["node", "--input-type=module", "-e", script,
                          json.dumps([coefficients, grid])], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    return numpy.frombuffer(bytes.fromhex(out), dtype="<f8")


def split_csv(text):
    """A release CSV: its metadata lines and its rows."""
    lines = text.splitlines()
    return ([line for line in lines if line.startswith("#")],
            [line.split(",") for line in lines if not line.startswith("#")])


def _download_links_shown(page):
    return page.js("['download', 'download-json'].map(id => "
                   "getComputedStyle(document.getElementById(id)).display !== 'none')")


def test_the_bundled_ecg_release_is_the_node_release_bit_for_bit(page):
    """(The first release of the tab: its download links are not shown before it.)"""
    assert _download_links_shown(page) == [False, False]   # `hidden` beats a.download's CSS
    csv_text = page.privatize("sinc_ecg", "epsilon", 100, source="ecg")
    assert _download_links_shown(page) == [True, True]
    release = json.loads(page.download("download-json"))
    assert page.download("download") == csv_text
    ecg, _, _ = build.ecg_window()
    protocol = ecg.replace("curve,t,mV", "curve,t,y", 1)   # the protocol's header
    expected = node_release("sinc_ecg", "epsilon", 100, protocol + "\n")
    (curve,) = release["curves"]
    assert curve["curve"] == "ecg208_w0" and len(curve["coefficients"]) == 800
    # the JSON holds Python's repr of each float: equal text is equal bits
    shown = [repr(x) for x in curve["coefficients"]]
    assert shown == expected["ecg208_w0"]
    metadata, rows = split_csv(csv_text)
    assert rows[0] == ["curve", "t", "mV"] and len(rows) == 1001
    grid = numpy.linspace(0, 800, 1000)
    assert [r[1] for r in rows[1:]] == [repr(float(t)) for t in grid]
    values = numpy.array([float(r[2]) for r in rows[1:]])
    # evaluate calls Math.sin, whose bits differ between Chromium's V8 and Node 20's (24 of
    # these 1,000 values differ in the last bit): a numerical tolerance, 1e-13 of sum |c_j|
    node_values = node_evaluate("sinc_ecg", curve["coefficients"], grid.tolist())
    assert numpy.abs(values - node_values).max() <= 1e-13 * numpy.abs(
        curve["coefficients"]).sum()
    assert '# randomness: "keyed (not private: whoever holds the key can subtract the noise)"' \
        in metadata


def test_a_csv_file_release_is_nodes_and_reads_as_the_command_lines(page, tmp_path):
    from gpcompiler.cli import main
    path = tmp_path / "two.csv"
    path.write_text(CURVES)
    csv_text = page.privatize("linear", "rho", 0.5, source="file", file=path)
    release = json.loads(page.download("download-json"))
    expected = node_release("linear", "rho", 0.5, CURVES.split("\n", 1)[1])  # no comment
    assert {c["curve"]: [repr(x) for x in c["coefficients"]] for c in release["curves"]} \
        == expected
    grid = numpy.linspace(0, 1, 1000)   # linear's evaluate uses no Math function: same bits
    for (curve, rows) in zip(release["curves"], ([r for r in split_csv(csv_text)[1][1:]
                                                  if r[0] == c] for c in ("alice", "bob"))):
        assert [float(r[2]) for r in rows] == node_evaluate(
            "linear", curve["coefficients"], grid.tolist()).tolist()
    cli = tmp_path / "cli.csv"
    assert main(["privatize", "specs/linear.toml", str(path), "--rho", "0.5", "--key", KEY,
                 "-o", str(cli), "--quiet"]) == 0
    page_meta, page_rows = split_csv(csv_text)
    cli_meta, cli_rows = split_csv(cli.read_text())
    assert page_meta == cli_meta
    assert [r[:2] for r in page_rows] == [r[:2] for r in cli_rows]   # header, ids and grid
    # the values: Python's float projection and evaluation differ from JS's in the last
    # bits (each projection is within eta B of the exact one; docs/clipping.md)
    ours = numpy.array([float(r[2]) for r in page_rows[1:]])
    theirs = numpy.array([float(r[2]) for r in cli_rows[1:]])
    assert numpy.allclose(ours, theirs, rtol=1e-9, atol=1e-12)


def test_a_bad_file_is_one_line_naming_the_curve_and_releases_nothing(page, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("curve,t,y\nalice,0.5,1\nalice,0.25,2\n")
    shown = page.js("document.getElementById('release').textContent")
    page.js("delete document.body.dataset.failed")
    node = page.call("Runtime.evaluate", expression="document.getElementById('file')")
    page.call("DOM.setFileInputFiles", files=[str(path)], objectId=node["result"]["objectId"])
    page.js("document.getElementById('run').click()")
    page.wait("document.body.dataset.failed")
    assert page.js("document.getElementById('status').textContent") == (
        "bad.csv: curve 'alice': sample times must be non-decreasing (a repeated time is a jump)")
    assert page.js("document.getElementById('release').textContent") == shown
    page.js("delete document.body.dataset.failed")


def ledger_rows(page):
    """The page's ledger table: (day, model, metric sha256, exact total) per row."""
    return [tuple(row) for row in page.js(
        "[...document.querySelectorAll('#ledger-days tbody tr')].map(r => "
        "[r.dataset.epoch, r.dataset.model, r.dataset.metric, r.dataset.total])")]


def test_the_ledger_totals_refuses_over_the_cap_and_memoizes(page, tmp_path):
    """This browser's ledger (localStorage): two releases of epsilon show a total of exactly
    2 epsilon for today; a third over the cap is refused with the cap and the spend named
    (each of the two curves counted: 4 epsilon spent, 2 epsilon asked), before any noise
    (no crypto.getRandomValues call: the release id is drawn with the noise), no new
    release; within a cap, the same curves again are the stored release, charged nothing;
    no request leaves the page."""
    from gpcompiler.compiler.build import load
    path = tmp_path / "two.csv"
    path.write_text(CURVES)
    page.js("localStorage.clear(); globalThis.draws = 0;"
            "const real = crypto.getRandomValues.bind(crypto);"
            "crypto.getRandomValues = (a) => { globalThis.draws++; return real(a); }")
    today = page.js("new Date().toISOString().slice(0, 10)")
    python = load("specs/linear.toml")
    metric = page.js("globalThis.gpcompilerModules.linear.METRIC_SHA256")
    identity = records.metric_identity(ROOT / "specs" / "linear.toml", python.PARAMETERS)
    assert metric == identity["sha256"]
    page.js("document.getElementById('cap').value = ''")
    first = page.privatize("linear", "epsilon", 0.3, source="file", file=path)
    assert ledger_rows(page) == [(today, "GP", metric, str(Fraction(0.3)))]
    assert page.privatize("linear", "epsilon", 0.3, source="file", file=path) == first
    assert ledger_rows(page) == [(today, "GP", metric, str(2 * Fraction(0.3)))]
    assert "ε per unit distance 5404319552844595/9007199254740992 ≈ 0.600000" in page.js(
        "document.querySelector('#ledger-days tbody tr').textContent")
    draws, done = page.js("globalThis.draws"), page.js("document.body.dataset.released")
    assert draws >= 2                            # each release drew its id
    page.js("delete document.body.dataset.failed;"
            "document.getElementById('cap').value = '0.7';"
            "document.getElementById('run').click()")
    page.wait("document.body.dataset.failed")
    refusal = page.js("document.getElementById('status').textContent")
    assert refusal.startswith("localStorage gpcompiler-ledger/1: refused before any noise: the "
                              f"GP cap 0.7 per UTC day ({today}) is spent to 1.2 (exactly "
                              f"{4 * Fraction(0.3)}); this release costs 0.6")
    assert (page.js("globalThis.draws"), page.js("document.body.dataset.released")) == (draws, done)
    assert page.js("document.getElementById('release').textContent") == first
    assert len(ledger_rows(page)) == 1 and ledger_rows(page)[0][3] == str(2 * Fraction(0.3))
    page.js("delete document.body.dataset.failed;"
            "document.getElementById('cap').value = '2.5'")
    assert page.privatize("linear", "epsilon", 0.3, source="file", file=path) == first
    assert page.privatize("linear", "epsilon", 0.3, source="file", file=path) == first
    assert page.js("document.getElementById('status').textContent").startswith(
        "the stored release of these curves (charged nothing)")
    assert ledger_rows(page)[0][3] == str(3 * Fraction(0.3))
    assert "stays in this browser and is sent\nnowhere" in page.js(
        "document.getElementById('ledger').innerHTML")
    sent = [e["params"]["request"]["url"] for e in page.browser.events
            if e["method"] == "Network.requestWillBeSent"]
    assert all(url.split("?")[0] == PAGE.as_uri() or url.startswith(("data:", "blob:"))
               for url in sent), sent
    page.js("localStorage.clear(); document.getElementById('cap').value = ''")


def test_no_request_left_the_page_and_its_csp_refuses_one(page):
    page.privatize("sinc_ecg", "epsilon", 100, source="ecg")
    sent = [e["params"]["request"]["url"] for e in page.browser.events
            if e["method"] == "Network.requestWillBeSent"]
    assert sent and all(url.split("?")[0] == PAGE.as_uri() or url.startswith(("data:", "blob:"))
                        for url in sent), sent
    assert not [e for e in page.browser.events if e["method"] == "Network.webSocketCreated"]
    refusal = page.js("""new Promise(done => {
        document.addEventListener('securitypolicyviolation',
            e => done(e.blockedURI + ' ' + e.effectiveDirective), {once: true});
        fetch('http://127.0.0.1:9/leak').then(() => done('sent'), () => {});
    })""")
    assert refusal == "http://127.0.0.1:9/leak connect-src"   # the CSP refused it


def png_size(png):
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


@pytest.mark.parametrize("width", [1280, 390])
def test_the_page_fits_and_is_photographed_at(page, width):
    page.privatize("sinc_ecg", "epsilon", 100, source="ecg")
    page.resize(width)
    assert page.js("document.documentElement.scrollWidth") <= width   # no sideways scrolling
    plot = page.js("JSON.stringify(document.getElementById('plot').getBoundingClientRect())")
    form = page.js("JSON.stringify(document.getElementById('controls').getBoundingClientRect())")
    plot, form = json.loads(plot), json.loads(form)
    if width == 1280:
        assert plot["left"] >= form["right"] and plot["width"] > 700   # side by side
    else:
        assert plot["top"] >= form["bottom"] and plot["width"] >= width - 40   # stacked
    png = page.screenshot(width)
    assert png_size(png)[0] == width
    if os.environ.get("GPCOMPILER_SCREENSHOTS"):
        (ROOT / "docs" / "images" / f"privatize_{width}.png").write_bytes(png)


def node_page(function, arguments):
    """``function`` of docs/_page/page.mjs applied under Node to each of ``arguments``."""
    script = (f"import * as page from {json.dumps((ROOT / 'docs' / '_page' / 'page.mjs').as_uri())};"
              f"const f = {function};"
              "process.stdout.write(JSON.stringify(JSON.parse(process.argv[1]).map(f)));")
    out = subprocess.run(["node", "--input-type=module", "-e", script, json.dumps(arguments)],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return json.loads(out)


def test_the_page_prints_floats_as_pythons_repr_and_json():
    """The release file's numbers (page.mjs pythonRepr, pythonJson) against Python's
    repr and json.dumps, on the exponent boundaries of repr's notation and random bits."""
    if shutil.which("node") is None:
        pytest.skip("no node")
    rng = numpy.random.default_rng(7)
    values = [0.0, -0.0, 1.0, -2.5, 1e16, 9999999999999998.0, 1e15, 1e-4, 9.999999999999999e-05,
              1e-5, 5e-324, 1.7976931348623157e308, 0.1, 123456789.125, 1e22, 2.0 ** -1074,
              *rng.standard_normal(200) * 10.0 ** rng.integers(-30, 30, 200),
              *numpy.frombuffer(rng.bytes(8 * 200), dtype="<f8")]
    values = [v for v in map(float, values) if numpy.isfinite(v)]
    shown = node_page("(x) => page.pythonRepr(x)", values)   # JSON carries them exactly
    assert shown == [repr(v) for v in values]
    obj = {"a": 1.5, "µ": ["x\u00e9\n\"", 1e-7], "b": {"c": -0.0}}
    assert node_page("(x) => page.pythonJson(x)", [obj]) == [json.dumps(obj)]


def test_the_page_reads_a_csv_as_the_command_line_does():
    """page.mjs parseCurves against gpcompiler.io.curves.parse_csv: the same curves and
    floats, or an error where it gives one."""
    if shutil.which("node") is None:
        pytest.skip("no node")
    from gpcompiler.errors import DataError
    from gpcompiler.io.curves import parse_csv
    texts = [CURVES, "t,y\n0,1\n1,2\n", "Time,a,b\r\n0, 1_0 ,+.5\r\n2,3e2,-4.\n",
             'id,t,y\n"x,1",0,1\n"x,1",1,"2"\n', "t,y\n0,1\n1,nan\n", "t,y\n0,0x1\n",
             "t,y\n0,\n", "t,y\n0,1,2\n", "x,y\n0,1\n", "# only\n", "t,y\n", "t,y\n1,0\n0,1\n"]
    ours = node_page("(text) => { try { const c = page.parseCurves(text, 'f.csv');"
                     "return [c.ids, c.names, c.times.map((a) => [...a]), c.values.map((a) => [...a])];"
                     "} catch (e) { return e.message; } }", texts)
    for text, got in zip(texts, ours):
        try:
            curves = parse_csv(text, "f.csv")
        except DataError:
            assert isinstance(got, str) and got.startswith("f.csv: "), (text, got)
            continue
        assert got == [list(curves.ids), list(curves.value_names),
                       [t.tolist() for t in curves.times],
                       [numpy.ravel(v).tolist() for v in curves.values]], text
