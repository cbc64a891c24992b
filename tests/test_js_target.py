"""The JS target (docs/reference/js.md): the node --test suites of tests/js/ (the runtime's PRF,
kernel and law, the module's API), and the conformance of generated/js/ with the Python and
C targets: privatize --key gives their bytes, GP and CGP, over 1,000 hostile rows of every
shipped 1-D spec (in tests/test_c_protocol.py, which runs the Python program once for every
target); release and project of 20 curves (sinc_ecg: 10) within 2 eta B of the Python
target's; bad input
gives the C program's line, exit 2 and nothing on stdout; numbers printed as Python's repr
and read as Python's float()."""
import json
import re
import shutil
import subprocess

import numpy
import pytest

from c_build import COMPILERS
from conftest import ROOT, node_missing
from gpcompiler.compiler.build import compile_spec
from gpcompiler.compiler.emit.js.printer import js_number
from gpcompiler.errors import SpecError
from gpcompiler.runtime.keyed import KeyedGenerator
from test_c_protocol import (C_ONLY, FLOAT_TEXTS, SAME, coefficients_text, curves_text,
                             hostile_rows, parsed, python_float, python_protocol,
                             repr_values)
from test_protocol import GENERATED, KEY, ONE_D, load
from test_c_target import UNSUPPORTED
from test_spec_is_data import EXPLOITS, spec_bytes


pytestmark = [pytest.mark.skipif(node_missing() is not None, reason=str(node_missing())),
              pytest.mark.xdist_group("c_protocol")]   # shares the C programs (conftest)
JS_DIR = GENERATED / "js"
CURVES = {"sinc_ecg": 10}                                      # else 20


def node(name, *args, stdin=b""):
    """(exit status, stdout, stderr) of `node generated/js/NAME.mjs args` with stdin bytes."""
    done = subprocess.run(["node", str(JS_DIR / f"{name}.mjs"), *args], input=stdin,
                          capture_output=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def test_the_node_suites_pass():
    """tests/js/*.test.mjs: SHAKE128 against FIPS 202 and hashlib, the kernel against mpmath,
    the self-test and its fallback, the law with OS entropy, the API's statuses."""
    done = subprocess.run(["node", "--test", "tests/js/"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert int(re.search(r"# pass (\d+)", done.stdout)[1]) >= 18
    assert "# fail 0" in done.stdout


def test_the_golden_files_are_mpmaths():
    """tests/js/golden/*.json and the runtime's self-test table are what make_golden.py
    computes with mpmath and hashlib now."""
    done = subprocess.run(["python", "tests/js/golden/make_golden.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize("name, rows", [("legendre10", 300), ("monomial32", 300),
                                        ("sinc_ecg", 40)])
def test_clipped_rows_at_a_bound_far_above_the_lattice_are_the_python_targets(programs,
                                                                              name, rows):
    """Rows of +-1e12 clipped to B = 1e10 at epsilon 1 (B 2^50 lattice steps: the clip's
    last bits show in the release): node's and the C program's bytes are the Python
    program's (the clip's norm summed in NumPy's pairwise order in every target; JS once
    kept the old lane order and differed in 26 of 300 legendre10 rows)."""
    module = load(name)
    rng = numpy.random.default_rng(8)
    text = coefficients_text(list(rng.uniform(-1e12, 1e12, (rows, module.COEF_DIM))))
    args = ["privatize", "--epsilon", "1", "--bound", "1e10", "--key", KEY]
    status, expected, _ = python_protocol(name, args, text)
    assert status == 0 and expected.count(b"\n") == rows + 1
    assert node(name, *args, stdin=text) == (0, expected, b"")
    done = subprocess.run([programs[COMPILERS[0], name], *args], input=text,
                          capture_output=True, timeout=300)
    assert done.stdout == expected


@pytest.mark.parametrize("name", ONE_D)
def test_release_and_project_are_within_eta_b_of_the_python_targets(name):
    """project: within 2 eta B of the Python target's (each within eta B of the exact
    projection); release --bound B with the same key: the same words, so within 2 eta B
    plus one lattice step."""
    module = load(name)
    lo, hi = module.curve_interval()
    bound = max(3.0, float(numpy.sqrt(hi - lo) * module.VALUE_DIM) * 1.01)
    count = CURVES.get(name, 20)
    text = curves_text(module, count, ONE_D.index(name))
    args = ["release", "--rho", "0.5", "--bound", repr(bound), "--key", KEY]
    gamma = module.release_facts(rho=0.5, bound=bound)["lattice"]
    for command, tolerance in ((["project"], 0.0), (args, gamma)):
        status, expected, _ = python_protocol(name, command, text)
        got = node(name, *command, stdin=text)
        assert status == got[0] == 0 and got[2] == b"", got[2]
        ids, want = parsed(expected, module.COEF_DIM)
        got_ids, values = parsed(got[1], module.COEF_DIM)
        assert got_ids == ids == [f"c{k}" for k in range(count)]
        assert numpy.all(numpy.abs(values - want) <= 2 * module.ETA * bound + tolerance)
        assert numpy.any(values != 0)


def test_every_bad_input_gives_the_c_programs_line_and_exit_2(programs):
    """test_c_protocol's bad inputs (the Python target's lines there) through legendre10:
    node's exit status, stdout and stderr are the C program's (exit 2, nothing on stdout,
    one line), help texts included."""
    cases = [(args, stdin) for args, stdin, _ in SAME + C_ONLY]
    cases += [(args, b"") for args in (["-h"], ["privatize", "-h"], ["release", "--he"],
                                       ["project", "-h"])]
    processes = [subprocess.Popen(["node", str(JS_DIR / "legendre10.mjs"), *args],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for args, _ in cases]
    for (args, stdin), process in zip(cases, processes):
        out, err = process.communicate(stdin, timeout=120)
        c = subprocess.run([programs[COMPILERS[0], "legendre10"], *args], input=stdin,
                           capture_output=True, timeout=60)
        assert (process.returncode, out, err) == (c.returncode, c.stdout, c.stderr), args
        assert c.returncode == (0 if "-h" in args or "--he" in args else 2)


def test_accepted_variants_give_the_c_programs_output(programs):
    """What argparse, csv and float() accept besides the plain form (test_c_protocol's
    variants): privatize byte for byte, project and release within 4 eta + a lattice step."""
    spaced = " ".join(KEY[i:i + 2] for i in range(0, 64, 2))
    stdin = ("curve,t,y\r\n\"a,1\",0,1\r\nb\"x,0.5,  2 \r\n\n\"a,1\",0.25,1_0.5\r\n"
             "\"q\"\"\",-1,3\n\"a,1\",0.25,-0.0\n\"é\rü\",1e-5,+1E+2\n\"a\"\"\",0,1\n"
             "\"a,1\",1.,.5").encode()
    header = b"curve," + ",".join(f"c{j}" for j in range(11)).encode() + b"\n"
    cases = [(["release", "--rh", "0.5", "--b=2", "--k", spaced], stdin), (["project"], stdin),
             (["privatize", "--epsilon", "1", "--key", KEY], header + b"\"r,1\",1" + b",-2.5" * 10),
             (["release", "--epsilon", "1"], b"curve,t,y\n")]
    module = load("legendre10")
    for args, data in cases:
        c = subprocess.run([programs[COMPILERS[0], "legendre10"], *args], input=data,
                           capture_output=True, timeout=60)
        got = node("legendre10", *args, stdin=data)
        assert c.returncode == got[0] == 0 and got[2] == b"", got[2]
        if args[0] != "release" or "--rh" not in args:
            assert got[1] == c.stdout or args == ["project"], args
        (ids, want), (got_ids, values) = parsed(c.stdout, 11), parsed(got[1], 11)
        gamma = module.release_facts(rho=0.5, bound=2)["lattice"] if "--rh" in args else 0
        assert got_ids == ids and numpy.all(numpy.abs(values - want) <= 4 * module.ETA + gamma)


REPR_SCRIPT = """
import { loadRuntime } from "./tests/js/runtime.mjs";
import { readFileSync } from "node:fs";
const P = await loadRuntime("", new URL("./gpcompiler/runtime/js/gp_protocol.mjs", `file://${process.cwd()}/`),
                            ["gpRepr", "gpParseFloat"]);
const view = new DataView(new ArrayBuffer(8)), out = [];
for (const line of readFileSync(0, "utf8").split("\\n").slice(0, -1)) {
    if (line[0] === "r") {
        view.setBigUint64(0, BigInt("0x" + line.slice(2)));
        out.push(P.gpRepr(view.getFloat64(0)));
    } else {
        const v = P.gpParseFloat(JSON.parse(line.slice(2)));
        out.push(v === null ? "error" : P.gpRepr(v));
    }
}
process.stdout.write(out.join("\\n") + "\\n");
"""


def test_repr_and_float_are_pythons():
    """The program's number printer against repr over 60,000 doubles (test_c_protocol's
    repr_values), and its reader against float() over FLOAT_TEXTS and JavaScript's own
    number forms (Infinity, 0b1), which float() rejects."""
    values = repr_values(50_000)
    texts = FLOAT_TEXTS[:-1] + ["Infinity", "0b1", "0o7", "1e+", "  -0 "]
    lines = [f"r {int(b):016x}" for b in values.view(numpy.uint64)]
    lines += [f"f {json.dumps(t)}" for t in texts]
    done = subprocess.run(["node", "--input-type=module", "-e", REPR_SCRIPT], cwd=ROOT,
                          input="\n".join(lines) + "\n", capture_output=True, text=True,
                          timeout=300)
    got = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert got[:len(values)] == [repr(float(v)) for v in values]
    assert got[len(values):] == [python_float(t) for t in texts]


JS_PAYLOAD = "globalThis.GP_SPEC_RAN = 1"
JS_EXPLOITS = EXPLOITS + [f'x"; {JS_PAYLOAD}; "', f"x`; {JS_PAYLOAD}; `", f"x */ {JS_PAYLOAD}; /*",
                          f"x\u2028{JS_PAYLOAD}\u2029", f"x\\\"; {JS_PAYLOAD}; //", "é\udcff ${x}"]
IMPORT_SCRIPT = """
const out = [];
for (const path of JSON.parse(process.argv[1])) {
    const m = await import(path);
    out.push([m.NAME, m.TITLE, m.DOMAIN_UNITS, m.VALUE_UNITS, m.SPEC_PATH]);
}
process.stdout.write(JSON.stringify([out, globalThis.GP_SPEC_RAN === undefined]));
"""


def test_spec_text_is_data_in_the_js_target(tmp_path):
    """Hostile titles and units (test_spec_is_data's exploits, and JavaScript's: quotes,
    template literals, comment ends, line separators, lone surrogates) compile to modules
    that hold them exactly as strings (JSON's escapes) and run none of them."""
    paths, expected = [], []
    for k, text in enumerate(JS_EXPLOITS):
        for field in ("title", "unit"):
            strings = {"name": "tiny", "title": "Tiny", "unit": "s", "parameter": "h",
                       field: text}
            spec = tmp_path / f"spec{k}{field}.toml"
            spec.write_bytes(spec_bytes(**strings))
            try:
                files = compile_spec(spec, root=tmp_path, target="js").source
            except SpecError as error:
                assert "\n" not in str(error)
                continue
            module = tmp_path / f"m{k}{field}.mjs"
            module.write_text(files["tiny.mjs"], encoding="ascii")
            paths.append(module.as_uri())
            unit = strings["unit"].strip()
            expected.append(["tiny", strings["title"], unit, unit, spec.name])
    assert len(paths) >= 10  # the printable ones compile (a line end is refused)
    done = subprocess.run(["node", "--input-type=module", "-e", IMPORT_SCRIPT, json.dumps(paths)],
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    got, clean = json.loads(done.stdout)
    assert clean and [[s.encode("utf-16", "surrogatepass") for s in row] for row in got] == [
        [s.encode("utf-16", "surrogatepass") for s in row] for row in expected]


def test_the_docs_example_runs_and_matches_the_python_target(tmp_path):
    """docs/reference/js.md's worked example, run as the page runs it: its facts are the
    Python module's, its projection within 2 eta B, its keyed release within 2 eta B plus
    a lattice step of the Python target's (the same words)."""
    page = (ROOT / "docs" / "reference" / "js.md").read_text()
    source = page.split("cat > example.mjs <<'EOF'\n")[1].split("\nEOF\n")[0]
    (tmp_path / "example.mjs").write_text(source + "\n")
    (tmp_path / "generated").symlink_to(GENERATED)
    done = subprocess.run(["node", "example.mjs"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    facts, projection, lattice, keyed = done.stdout.splitlines()
    module = load("linear")
    stated = module.release_facts(epsilon=1.0)
    bound, gamma = stated["bound"], stated["lattice"]
    assert float(facts.split()[1].rstrip(",")) == bound and float(facts.split()[-1]) == gamma
    t, y = numpy.array([0.0, 0.25, 0.5, 1.0]), numpy.array([1.0, 1.5, 2.0, 3.0])
    want = module.project(t, y, bound=bound)
    assert numpy.all(numpy.abs([float(v) for v in projection.split()[1:]] - want)
                     <= 2 * module.ETA * bound)
    assert lattice.endswith("true")
    release = module.project_and_privatize(t, y, epsilon=1.0, rng=KeyedGenerator(KEY))
    got = numpy.array([float(v) for v in keyed.split()[2:]])
    assert numpy.all(numpy.abs(got - release) <= 2 * module.ETA * bound + gamma)
    assert numpy.any(got != want)


@pytest.mark.parametrize("kind", ["sobolev", "box", "hermite"])
def test_other_specs_are_refused_with_one_line(kind, tmp_path):
    """What the C target refuses (test_c_target's UNSUPPORTED), the JS target refuses in one
    line naming it and the JS target, never a module."""
    body, what = UNSUPPORTED[kind]
    spec = tmp_path / f"{kind}.toml"
    spec.write_text(f'name = "{kind}_spec"\n' + body)
    with pytest.raises(SpecError) as error:
        compile_spec(spec, tmp_path, target="js")
    message = str(error.value)
    assert "JS target" in message and "\n" not in message
    assert what in message or "curves in one variable" in message


def test_the_runtime_is_inlined_verbatim_with_its_hash():
    """Every generated/js/NAME.mjs holds gp_runtime.mjs, gp_protocol.mjs and gp_ledger.mjs
    verbatim, each marked with its path, gpcompiler's version and the sha256 of its text;
    every constant of the spec part parses back to the double it was printed from
    (js_number)."""
    import hashlib
    from gpcompiler import __version__
    for path in sorted(JS_DIR.glob("*.mjs")):
        text = path.read_text()
        for name in ("gp_runtime.mjs", "gp_protocol.mjs", "gp_ledger.mjs"):
            source = (ROOT / "gpcompiler" / "runtime" / "js" / name).read_text().strip("\n")
            digest = hashlib.sha256(source.encode()).hexdigest()
            assert (f"/* ---- runtime/js/{name} from gpcompiler {__version__}, inlined verbatim\n"
                    f" * ---- sha256 {digest} */\n{source}\n/* ---- end of runtime/js/{name} */"
                    ) in text, (path, name)
    assert [js_number(v) for v in (0.1, -2.5e-300, 1e16, 5e-324, float("inf"))] == [
        "0.1", "-2.5e-300", "1e+16", "5e-324", "Infinity"]
