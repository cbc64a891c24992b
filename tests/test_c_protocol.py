"""The C target's protocol program (docs/reference/c.md): built from generated/c/ once per
session, it gives the Python target's bytes for privatize --key, releases within the
stated eta B of the Python target's, and the Python target's one-line errors; the same on
aarch64 under qemu-user."""
import io
import os
import shutil
import subprocess
import sys

import numpy
import pytest

from c_build import COMPILERS, build
from conftest import ROOT, node_missing
from gpcompiler.runtime.keyed import KeyedGenerator
from gpcompiler.runtime.protocol import _protocol_parser
from test_protocol import GENERATED, KEY, ONE_D, load

C_DIR = GENERATED / "c"
# the second compiler (clang, where installed) runs these: a scalar and a vector-valued module
SECOND_COMPILER_SPECS = ("legendre10", "two_circles")
# one worker builds the programs (--dist loadgroup): the session fixture runs once
pytestmark = pytest.mark.xdist_group("c_protocol")


def compilers(name):
    """The compilers whose program of NAME the tests run."""
    return [cc for cc in COMPILERS if cc == COMPILERS[0] or name in SECOND_COMPILER_SPECS]


def run(command, *args, stdin=b""):
    """(exit status, stdout, stderr) as bytes of a program (a list) with stdin bytes."""
    done = subprocess.run([*command, *args], input=stdin, capture_output=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def python_target(name):
    return [sys.executable, str(GENERATED / f"{name}.py")]


def hostile_rows(module, count, seed):
    """count rows (count >= 20): zeros, -0.0, huge and tiny magnitudes, lattice midpoints of
    the GP scale 1/2 and the CGP scale 1, at, inside and beyond the default and given
    bounds, then normals of magnitudes 10^-300..10^300 and near the bound."""
    d = module.COEF_DIM
    rng = numpy.random.default_rng(seed)
    rows = [numpy.zeros(d), numpy.full(d, -0.0), numpy.full(d, 1e300), numpy.full(d, -1e-300),
            numpy.full(d, 5e-324), numpy.full(d, 2.2250738585072014e-308)]
    for scale in (0.5, 1.0):
        gamma = module.lattice(scale)
        rows += [(numpy.arange(d) + 0.5) * gamma, -(numpy.arange(d) + 0.5) * gamma,
                 (rng.integers(-9, 9, d) + 0.5) * gamma]
    for bound in (module.default_bound(epsilon=2.0), module.default_bound(rho=0.5), 3.0):
        unit = rng.normal(size=d)
        unit /= numpy.linalg.norm(unit)
        rows += [unit * bound, numpy.nextafter(unit * bound, 0), unit * bound * 1.0000001,
                 unit * bound * 1e10, numpy.eye(d)[0] * bound]
    while len(rows) < count:
        magnitude = 10.0 ** rng.uniform(-300, 300) if len(rows) % 3 else rng.uniform(0.1, 4)
        rows.append(rng.normal(size=d) * magnitude)
    return rows[:count]


def coefficients_text(rows):
    d = len(rows[0])
    return ("curve," + ",".join(f"c{j}" for j in range(d)) + "\n" + "".join(
        f"r{i}," + ",".join(map(repr, map(float, row))) + "\n"
        for i, row in enumerate(rows))).encode()


@pytest.mark.parametrize("name", ONE_D)
def test_privatize_gives_the_python_targets_bytes(programs, name):
    """1,000 hostile rows, GP (default bound) and CGP (--bound 3), the same key: the C
    program's stdout, and the JS target's (`node NAME.mjs`, where node >= 18 is installed),
    is the Python program's byte for byte (its numbers are repr's)."""
    module = load(name)
    text = coefficients_text(hostile_rows(module, 1000, ONE_D.index(name)))
    targets = [[programs[cc, name]] for cc in compilers(name)]
    if node_missing() is None:
        targets.append(["node", GENERATED / "js" / f"{name}.mjs"])
    for budget in (["--epsilon", "2"], ["--rho", "0.5", "--bound", "3"]):
        args = ["privatize", *budget, "--key", KEY]
        expected = python_protocol(name, args, text)   # the program's run_protocol, in process
        assert expected[0] == 0 and expected[1].count(b"\n") == 1001, expected[2]
        for target in targets:
            assert run(target, *args, stdin=text) == expected, (target, budget)


def python_protocol(name, args, stdin):
    """(exit status, stdout, stderr) as bytes of the Python target's protocol program
    (`python generated/NAME.py ARGS`, whose __main__ is this run_protocol), in process."""
    out, err = io.StringIO(), io.StringIO()
    module = load(name)
    status = module.run_protocol(module, args, io.StringIO(stdin.decode()), out, err)
    return status, out.getvalue().encode(), err.getvalue().encode()


def curves_text(module, count, seed):
    """count curves on their own sorted grids of 1..40 samples in the curve interval, values
    in [-1, 1], ids interleaved (a curve's samples in order): (text, max |y|)."""
    lo, hi = module.curve_interval()
    rng = numpy.random.default_rng(seed)
    n = module.VALUE_DIM
    names = ["y"] + [f"y{k}" for k in range(2, n + 1)]
    lines = []
    for k in range(count):
        t = numpy.sort(rng.uniform(lo, hi, rng.integers(1, 40)))
        y = rng.uniform(-1, 1, (t.size, n))
        lines += [(i, f"c{k}," + ",".join(map(repr, [ti, *yi.tolist()])))
                  for i, (ti, yi) in enumerate(zip(t.tolist(), y))]
    lines.sort(key=lambda item: item[0])  # interleaves the curves, keeps each one's order
    return ("curve,t," + ",".join(names) + "\n" + "".join(f"{line}\n" for _, line in lines)
            ).encode()


def parsed(out, d):
    """(ids as written, numbers) of a coefficients CSV, one curve per line: its last d
    fields are numbers (an id may hold a CR, which csv.writer leaves unquoted)."""
    lines = out.decode().split("\n")[:-1]
    assert lines[0] == ",".join(["curve"] + [f"c{j}" for j in range(d)])
    rows = [line.rsplit(",", d) for line in lines[1:]]
    return [r[0] for r in rows], numpy.array([[float(v) for v in r[1:]] for r in rows])


@pytest.mark.parametrize("name", ONE_D)
def test_release_and_project_are_within_eta_b_of_the_python_targets(programs, name):
    """project: within 2 eta B of the Python target's (each is within eta B of the exact
    projection, docs/clipping.md; B = 3 bounds every curve's norm here: |y| <= 1 and the
    interval's length L <= 9, or B = sqrt(L) n). release --bound B, same key: the same noise
    words, so each coordinate within 2 eta B plus one lattice step gamma."""
    module = load(name)
    lo, hi = module.curve_interval()
    bound = max(3.0, float(numpy.sqrt(hi - lo) * module.VALUE_DIM) * 1.01)
    text = curves_text(module, 40, ONE_D.index(name))
    args = ["release", "--rho", "0.5", "--bound", repr(bound), "--key", KEY]
    gamma = module.release_facts(rho=0.5, bound=bound)["lattice"]
    for command, tolerance in ((["project"], 0.0), (args, gamma)):
        expected = run(python_target(name), *command, stdin=text)
        got = run([programs[COMPILERS[0], name]], *command, stdin=text)
        assert expected[0] == got[0] == 0 and got[2] == b"", got[2]
        ids, want = parsed(expected[1], module.COEF_DIM)
        got_ids, values = parsed(got[1], module.COEF_DIM)
        assert got_ids == ids == [f"c{k}" for k in range(40)]
        assert numpy.all(numpy.abs(values - want) <= 2 * module.ETA * bound + tolerance)
        assert numpy.any(values != 0)


GOOD = b"curve,t,y\na,0,1\na,1,2\n"
# (arguments, stdin, words in the message): the Python target gives the same line
SAME = [
    ([], GOOD, "required: command"),
    (["publish"], GOOD, "invalid choice"),
    (["--", "release"], GOOD, "invalid choice: '--'"),
    (["release"], GOOD, "one of the arguments --epsilon --rho is required"),
    (["release", "-x"], GOOD, "one of the arguments"),
    (["release", "--epsilon", "1", "--rho", "1"], GOOD, "not allowed"),
    (["release", "--rho", "1", "--eps", "1"], GOOD, "argument --epsilon: not allowed"),
    (["release", "--epsilon", "x"], GOOD, "invalid float value: 'x'"),
    (["release", "--epsilon", "1__0"], GOOD, "invalid float value"),
    (["release", "--epsilon", "0x10"], GOOD, "invalid float value"),
    (["release", "--epsilon"], GOOD, "expected one argument"),
    (["release", "--epsilon", "-1e5"], GOOD, "expected one argument"),
    (["release", "--epsilon", "-1"], GOOD, "positive finite number, got -1.0"),
    (["release", "--epsilon=nan"], GOOD, "got nan"),
    (["release", "--epsilon", "1e-320"], GOOD, "overflows float64"),
    (["release", "--epsilon", "1", "--bound", "0"], GOOD, "positive finite number, got 0.0"),
    (["release", "--epsilon", "1", "--bound", "1e-310"], GOOD, "at least 2^-960"),
    (["release", "--epsilon", "1", "--bound", "1e300"], GOOD, "exceeds 2^50 lattice steps"),
    (["release", "--epsilon", "1", "--foo"], GOOD, "unrecognized arguments: --foo"),
    (["release", "--e", "1", "extra", "--", "3"], GOOD, "unrecognized arguments: extra -- 3"),
    (["project", "--epsilon", "1"], GOOD, "unrecognized arguments: --epsilon 1"),
    (["release", "-hx"], GOOD, "ignored explicit argument 'x'"),
    (["release", "--epsilon", "1", "--key", "zz" * 32], GOOD, "64 hexadecimal digits"),
    (["release", "--epsilon", "1", "--key", "ab" * 31], GOOD, "32 bytes or 64"),
    (["release", "--epsilon", "1", "--key", "ab" * 33], GOOD, "32 bytes or 64"),
    (["release", "--epsilon", "1"], b"", "got 'no input'"),
    (["release", "--epsilon", "1"], b"\n\n", "got 'no input'"),
    (["release", "--epsilon", "1"], b"a,0,1\na,1,2\n", "got 'a,0,1'"),
    (["release", "--epsilon", "1"], b"curve,time,y\na,0,1\n", "got 'curve,time,y'"),
    (["release", "--epsilon", "1"], b"curve,t,y\na,0,1\na,1\n", "line 3 has 2 fields"),
    (["release", "--epsilon", "1"], b"curve,t,y\na,0,1\n\na,1,2,3\n", "line 3 has 4 fields"),
    (["release", "--epsilon", "1"], b"curve,t,y\na,0,1\na,1,x\n", "line 3: y='x'"),
    (["release", "--epsilon", "1"], b"curve,t,y\na,0,1\na,1,nan\n", "not a finite number"),
    (["release", "--epsilon", "1"], b"curve,t,y\na,0,1\na,1,-inf\n", "not a finite number"),
    (["release", "--epsilon", "1"], b"curve,t,y\na,0,1\na,1,1e999\n", "not a finite number"),
    (["release", "--epsilon", "1"], b"curve,t,y\na,0,1\na,1,0x1p3\n", "not a finite number"),
    (["release", "--epsilon", "1"], b"curve,t,y\na,0,1\na,1,1_\n", "not a finite number"),
    (["release", "--epsilon", "1"], b"curve,t,y\na,0,1\na,1,\"1\x00\"\n", "not a finite"),
    (["release", "--epsilon", "1"], b"curve,t,y\na,0.5,1\na,0.2,2\n", "increasing order"),
    (["release", "--epsilon", "1"], b"curve,t,y\na,0.5,1\nb,-7,2\n", "must lie in [-1.0, 1.0]"),
    (["release", "--epsilon", "0"], GOOD, "positive finite"),
    (["project"], b"curve,t,y\na,0," + b"1" * 131073 + b"\n", "field larger than field limit"),
    (["project"], b"curve,t,y\na,\"0\n" + b"," * 10, "line 2 has 2 fields"),
    (["project"], b"curve,t,y\ra,0,1\n", "new-line character seen in unquoted field"),
    (["project"], b"curve,t,y\na,0,1\r\r\n\"b\"\rx,0,1\n", "new-line character"),
    (["privatize", "--epsilon", "1"], b"curve,c0\nr,1\n", "header"),
    (["privatize", "--epsilon", "1"],
     b"curve," + ",".join(f"c{j}" for j in range(11)).encode() + b"\nr" + b",1" * 10 + b"\n",
     "line 2 has 11 fields, expected 12"),
    (["privatize", "--epsilon", "0"], b"curve," + ",".join(f"c{j}" for j in range(11)).encode()
     + b"\n", "positive finite"),
]
# only the C target's messages (the Python target fails too, with other words)
C_ONLY = [
    (["project"], b"curve,t,y\na,0,1\xff\n", "not UTF-8 text (byte 0xff at offset 15)"),
    (["project"], bytes(range(256)) * 4, "not UTF-8 text"),
    (["project"], b"\xc0\x80curve,t,y\n", "not UTF-8 text"),
]


def test_every_bad_input_gives_the_python_targets_line_and_exit_2(programs):
    """Through legendre10 (interval [-1, 1], 11 coordinates): exit 2, nothing on stdout, one
    line on stderr, the Python target's line but for the program's name."""
    processes = [subprocess.Popen([*python_target("legendre10"), *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for args, _, _ in SAME]
    for (args, stdin, words), process in zip(SAME, processes):
        out, err = process.communicate(stdin, timeout=120)
        assert (process.returncode, out) == (2, b""), (args, err)
        for cc in compilers("legendre10"):
            status, c_out, c_err = run([programs[cc, "legendre10"]], *args, stdin=stdin)
            assert (status, c_out) == (2, b""), (args, c_err)
            assert c_err.count(b"\n") == 1 and c_err.startswith(b"legendre10: error: "), c_err
            assert c_err.replace(b"legendre10:", b"legendre10.py:") == err, (args, c_err, err)
            assert words.encode() in c_err, (words, c_err)
    for args, stdin, words in C_ONLY:
        status, out, err = run([programs[COMPILERS[0], "legendre10"]], *args, stdin=stdin)
        assert (status, out) == (2, b"") and err.count(b"\n") == 1, (args, err)
        assert words.encode() in err, (words, err)


def test_accepted_variants_give_the_python_targets_bytes(programs):
    """What argparse, csv and float() accept besides the plain form: abbreviations, --opt=,
    a repeated option, whitespace in a key, quoted and interleaved ids, CRLF line ends, a CR
    in quotes, blank lines, an unterminated last line, '_' and whitespace in numbers, ids with
    commas, quotes, spaces and non-ASCII text, repeated times, a header-only input."""
    spaced = " ".join(KEY[i:i + 2] for i in range(0, 64, 2))
    stdin = ("curve,t,y\r\n\"a,1\",0,1\r\nb\"x,0.5,  2 \r\n\n\"a,1\",0.25,1_0.5\r\n"
             "\"q\"\"\",-1,3\n\"a,1\",0.25,-0.0\n\"é\rü\",1e-5,+1E+2\n\"a\"\"\",0,1\n"
             "\"a,1\",1.,.5").encode()
    cases = [
        (["release", "--rh", "0.5", "--b=2", "--k", spaced], stdin),
        (["release", "--rho=2", "--rho", "0.5", "--bound", "2", "--key=" + KEY.upper()], stdin),
        (["project"], stdin),
        (["release", "--epsilon", "1"], b"curve,t,y\n"),
        (["privatize", "--epsilon", "1", "--key", KEY], b"curve," + ",".join(
            f"c{j}" for j in range(11)).encode() + b"\n"),
    ]
    for args, data in cases:
        expected = run(python_target("legendre10"), *args, stdin=data)
        assert expected[0] == 0, expected[2]
        got = run([programs[COMPILERS[0], "legendre10"]], *args, stdin=data)
        if args[0] == "privatize":
            assert got == expected, args
            continue
        # float projections: within 2 eta B (B = 2 >= their norms), plus a lattice step
        module = load("legendre10")
        gamma = module.release_facts(rho=0.5, bound=2)["lattice"] if "release" in args else 0
        (ids, want), (got_ids, values) = parsed(expected[1], 11), parsed(got[1], 11)
        assert got[0] == 0 and got[2] == b"" and got_ids == ids
        assert numpy.all(numpy.abs(values - want) <= 4 * module.ETA + gamma), args


@pytest.mark.parametrize("name", ["linear", "trajectory_linear"])
def test_help_is_argparses(programs, name):
    """--help of the program and of each command: argparse's text for the program's name at
    80 columns, on stdout, exit 0."""
    parser = _protocol_parser(name)
    for args in (["-h"], ["--help"], ["privatize", "-h"], ["release", "--he"], ["project", "-h"]):
        env = dict(os.environ, COLUMNS="80")
        expected = subprocess.run([sys.executable, "-c", "import sys\n"
                                   "from gpcompiler.runtime.protocol import _protocol_parser\n"
                                   f"_protocol_parser({name!r}).parse_args(sys.argv[1:])", *args],
                                  env=env, capture_output=True, cwd=ROOT)
        assert expected.returncode == 0 and expected.stdout.startswith(b"usage: ")
        assert run([programs[COMPILERS[0], name]], *args) == (0, expected.stdout, b"")
    assert parser.prog == name


DRIVER = r"""
#define main protocol_main
#include "linear_main.c"
#undef main
/* Each stdin line: "r HEX" (the bits of a double: print repr) or "f TEXT" (print float()'s
 * repr, or "error"). */
int main(void)
{
    static char line[4096];
    char out[REPR_SIZE];
    while (fgets(line, sizeof line, stdin)) {
        size_t n = strcspn(line, "\n");
        double x;
        if (line[0] == 'r') {
            uint64_t bits = strtoull(line + 2, NULL, 16);
            memcpy(&x, &bits, sizeof x);
        } else if (parse_float(line + 2, n - 2, &x)) {
            puts("error");
            continue;
        }
        repr_double(x, out);
        puts(out);
    }
    (void)protocol_main;
    return 0;
}
"""


def repr_values(random):
    """``random`` doubles of random bits, then powers of two and ten, their neighbours, their
    negatives, subnormals, the repr thresholds 1e-4 and 1e16, and multiples of 1/8."""
    rng = numpy.random.default_rng(31)
    special = [2.0 ** k for k in range(-1074, 1024)] + [10.0 ** k for k in range(-323, 308)]
    special += [9.999999999999999e-05, 1e-4, 1e16, 9999999999999998.0, 5e-324, 1.7976931348623157e308]
    with numpy.errstate(over="ignore"):
        above = numpy.nextafter(special, numpy.inf)
    return numpy.concatenate([rng.integers(0, 2 ** 64, random, dtype=numpy.uint64).view(float),
                              numpy.array(special), numpy.nextafter(special, 0),
                              above, -numpy.array(special), numpy.arange(-5000, 5000) / 8.0])


# texts float() accepts and rejects; non-ASCII digits (last) only the Python target reads
FLOAT_TEXTS = ["1", " 1.5 ", "\t-2e-3\x0b", "1_000.000_1", "1__0", "_1", "1_", "1_e5", "1e_5",
               ".5", "5.", ".", "e5", "1e", "1e+", "+-1", "inf", "-Infinity", "nAn", "infinit",
               "0x10", "1e400", "-1e-400", "1" * 400, "0." + "0" * 400 + "1", "1.5x", "", " ",
               "\x1c1\x1f", "2.4703282292062328e-324", "2.4703282292062327e-324", "1,5", "١"]


def python_float(text):
    """repr(float(text)), or "error" where float() rejects it."""
    try:
        return repr(float(text))
    except ValueError:
        return "error"


def test_repr_and_float_are_pythons(tmp_path):
    """The program's number printer against repr over 200,000 doubles (repr_values), and its
    number reader against float() over FLOAT_TEXTS."""
    shutil.copy(C_DIR / "linear_main.c", tmp_path)
    shutil.copy(C_DIR / "linear.h", tmp_path)
    (tmp_path / "driver.c").write_text(DRIVER)
    program = build(COMPILERS[0], [tmp_path / "driver.c", C_DIR / "linear.c"], tmp_path / "d",
                    f"-I{tmp_path}", "-Wno-unused-function")
    values = repr_values(150_000)
    lines = [f"r {int(b):016x}" for b in values.view(numpy.uint64)]
    lines += [f"f {t}" for t in FLOAT_TEXTS]
    done = subprocess.run([str(program)], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=300)
    got = done.stdout.splitlines()
    assert got[:len(values)] == [repr(float(v)) for v in values]
    expected = [python_float(t) for t in FLOAT_TEXTS[:-1]] + ["error"]  # ASCII digits only
    assert got[len(values):] == expected


def qemu_tools():
    missing = [tool for tool in ("aarch64-linux-gnu-gcc", "qemu-aarch64") if not shutil.which(tool)]
    return f"not installed: {', '.join(missing)} (.ci/run installs gcc-aarch64-linux-gnu and " \
           "qemu-user)" if missing else None


@pytest.mark.skipif(qemu_tools() is not None, reason=str(qemu_tools()))
@pytest.mark.parametrize("name", ["monomial32", "two_circles"])
def test_aarch64_privatize_gives_the_python_targets_bytes(tmp_path, name):
    """The program cross-built for aarch64 (static) and run under qemu-user: 200 hostile rows,
    GP and CGP, the Python target's bytes for the same key."""
    program = build("aarch64-linux-gnu-gcc", [C_DIR / f"{name}.c", C_DIR / f"{name}_main.c"],
                    tmp_path / name, "-static")
    module = load(name)
    text = coefficients_text(hostile_rows(module, 200, 7))
    for budget in (["--epsilon", "2"], ["--rho", "0.5", "--bound", "3"]):
        args = ["privatize", *budget, "--key", KEY]
        expected = run(python_target(name), *args, stdin=text)
        assert expected[0] == 0
        assert run(["qemu-aarch64", str(program)], *args, stdin=text) == expected


def test_the_docs_example_builds_runs_and_matches_the_python_target(tmp_path):
    """docs/reference/c.md's worked example, compiled as the page compiles it: its keyed
    release of the curve is the Python target's within 2 eta B plus a lattice step (the
    same words; the float projections may differ by eta B each), its projection within
    2 eta B, its bound and lattice step the Python module's."""
    page = (ROOT / "docs" / "reference" / "c.md").read_text()
    source = page.split("cat > example.c <<'EOF'\n")[1].split("\nEOF\n")[0]
    (tmp_path / "example.c").write_text(source + "\n")
    program = build(COMPILERS[0], [tmp_path / "example.c", C_DIR / "linear.c"],
                    tmp_path / "example", f"-I{C_DIR}")
    done = subprocess.run([str(program)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    facts, projection, keyed = done.stdout.splitlines()
    module = load("linear")
    t, y = numpy.array([0.0, 0.25, 0.5, 1.0]), numpy.array([1.0, 1.5, 2.0, 3.0])
    stated = module.release_facts(epsilon=1.0)
    bound, gamma = stated["bound"], stated["lattice"]
    assert float(facts.split()[1].rstrip(",")) == bound
    assert float(facts.split()[-1]) == gamma
    want = module.project(t, y, bound=bound)
    got = numpy.array([float(v) for v in projection.split()[1:]])
    assert numpy.all(numpy.abs(got - want) <= 2 * module.ETA * bound)
    release = module.project_and_privatize(t, y, epsilon=1.0, rng=KeyedGenerator(KEY))
    got = numpy.array([float.fromhex(v) for v in keyed.split()[2:]])
    assert numpy.all(numpy.abs(got - release) <= 2 * module.ETA * bound + gamma)
    assert numpy.any(got != want)  # noise was added


def test_check_reports_stale_missing_and_changed_c_files(tmp_path, capsys):
    """gpcompiler check over a copy of linear.toml and its committed outputs (Python, C and
    JS targets): clean, then a changed NAME_main.c and NAME.mjs (diffs), a missing NAME.h (a
    diff from nothing) and stray files in c/ and js/ (stale) each make it fail."""
    from gpcompiler.cli import main
    specs, generated = tmp_path / "specs", tmp_path / "generated"
    (generated / "c").mkdir(parents=True)
    (generated / "js").mkdir()
    specs.mkdir()
    shutil.copy(ROOT / "specs" / "linear.toml", specs)
    shutil.copy(GENERATED / "linear.py", generated)
    for name in ("linear.h", "linear.c", "linear_device.c", "linear_main.c"):
        shutil.copy(C_DIR / name, generated / "c")
    shutil.copy(GENERATED / "js" / "linear.mjs", generated / "js")
    check = ["check", "--specs", str(specs), "--generated", str(generated)]
    assert main(check) == 0
    main_c = generated / "c" / "linear_main.c"
    main_c.write_text(main_c.read_text().replace("#define FIELD_LIMIT 131072",
                                                 "#define FIELD_LIMIT 131073"))
    (generated / "c" / "old.c").write_text("")
    (generated / "c" / "linear.h").unlink()
    module = generated / "js" / "linear.mjs"
    module.write_text(module.read_text().replace("const BLOCK = 1024;", "const BLOCK = 1025;"))
    (generated / "js" / "old.mjs").write_text("")
    capsys.readouterr()
    assert main(check) == 1
    out = capsys.readouterr().out
    assert "+#define FIELD_LIMIT 131072" in out and "linear.h (regenerated)" in out
    assert "+const BLOCK = 1024;" in out
    assert f"stale: {generated / 'c' / 'old.c'}" in out
    assert f"stale: {generated / 'js' / 'old.mjs'}" in out
