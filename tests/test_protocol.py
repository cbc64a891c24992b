"""The protocol program (gpcompiler/runtime/protocol.py, docs/reference/randomness.md): every
shipped 1-D module run as a script gives, for the same key, the bits of its in-process API;
bad input gives one line on stderr, exit 2 and nothing on stdout."""
import csv
import importlib.util
import io
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from gpcompiler.runtime.keyed import KeyedGenerator

GENERATED = Path(__file__).resolve().parents[1] / "generated"
ONE_D = ["linear", "legendre10", "monomial32", "fourier8", "sinc_ecg", "trajectory_linear",
         "circle_shift", "two_circles", "ellipse"]
KEY = "5a" * 16 + "c3" * 16


def load(name):
    spec = importlib.util.spec_from_file_location(f"protocol_{name}", GENERATED / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(name, *args, stdin=""):
    """The module as a script: (exit status, stdout, stderr); several may run at once."""
    return subprocess.Popen([sys.executable, str(GENERATED / f"{name}.py"), *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True), stdin


def finish(process):
    process, stdin = process
    out, err = process.communicate(stdin, timeout=120)
    return process.returncode, out, err


def coefficients_csv(module):
    """Rows of zeros, -0.0, huge and tiny magnitudes, lattice midpoints (of the GP scale
    1/2's lattice), at and beyond the default bound."""
    d = module.COEF_DIM
    gamma = module.lattice(0.5)
    bound = module.default_bound(epsilon=2.0)
    rows = [numpy.zeros(d), numpy.full(d, -0.0), numpy.full(d, 1e300), numpy.full(d, 5e-324),
            (numpy.arange(d) + 0.5) * gamma, numpy.eye(d)[0] * bound,
            numpy.eye(d)[-1] * -bound * 3, numpy.random.default_rng(d).normal(size=d)]
    text = "curve," + ",".join(f"c{j}" for j in range(d)) + "\n"
    text += "".join(f"r{i}," + ",".join(map(repr, map(float, row))) + "\n"
                    for i, row in enumerate(rows))
    return text, numpy.array(rows).reshape((len(rows),) + module.COEF_SHAPE)


def curves_csv(module):
    """Three curves on their own grids (one with a single sample: the zero function)."""
    lo, hi = module.curve_interval()
    names = ["y"] + [f"y{k}" for k in range(2, module.VALUE_DIM + 1)]
    curves = []
    for key, size in (("a", 40), ("b", 1), ("c", 17)):
        t = numpy.linspace(lo, hi, size) if size > 1 else numpy.array([lo])
        y = numpy.stack([numpy.sin(3 * t / (hi - lo) + k) for k in range(len(names))], axis=-1)
        curves.append((key, t, y[:, 0] if module.VALUE_DIM == 1 else y))
    text = "curve,t," + ",".join(names) + "\n" + "".join(
        f"{key},{ti!r}," + ",".join(map(repr, numpy.atleast_1d(yi).tolist())) + "\n"
        for key, t, y in curves for ti, yi in zip(t.tolist(), y))
    return text, curves


def parsed(out, module):
    """(ids, coefficients (B, COEF_DIM)) of the program's output, checking its header."""
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["curve"] + [f"c{j}" for j in range(module.COEF_DIM)]
    return [r[0] for r in rows[1:]], numpy.array([[float(v) for v in r[1:]] for r in rows[1:]])


def same_bits(a, b):
    a, b = numpy.ascontiguousarray(a, dtype=float), numpy.ascontiguousarray(b, dtype=float)
    return a.shape == b.shape and numpy.array_equal(a.view(numpy.uint64), b.view(numpy.uint64))


def in_process(module, *args, stdin=""):
    """run_protocol on the imported module: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    status = module.run_protocol(module, list(args), io.StringIO(stdin), out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", ONE_D)
def test_the_script_gives_the_bits_of_the_api(name):
    """privatize and release as subprocesses (GP and CGP alternating over the modules), the
    other law and project through run_protocol, against the API with a KeyedGenerator from
    row 0 (privatize: the batch; release: one curve after another)."""
    module = load(name)
    c_text, c = coefficients_csv(module)
    t_text, curves = curves_csv(module)
    gp, cgp = ["--epsilon", "2"], ["--rho", "0.5", "--bound", "3"]
    first, second = (gp, cgp) if ONE_D.index(name) % 2 else (cgp, gp)
    runs = [run(name, "privatize", *first, "--key", KEY, stdin=c_text),
            run(name, "release", *second, "--key", KEY, stdin=t_text)]
    results = [finish(r) for r in runs] + [
        in_process(module, "privatize", *second, "--key", KEY, stdin=c_text),
        in_process(module, "project", stdin=t_text)]
    assert [status for status, _, _ in results] == [0] * 4, results

    def options(args):
        return ({"epsilon": 2.0} if args is gp else {"rho": 0.5, "bound": 3.0})
    generator = KeyedGenerator(KEY)
    expected = [module.privatize(c, rng=KeyedGenerator(KEY), **options(first)),
                [module.project_and_privatize(t, y, rng=generator, **options(second))
                 for _, t, y in curves],
                module.privatize(c, rng=KeyedGenerator(KEY), **options(second)),
                [module.project(t, y) for _, t, y in curves]]
    rows = [f"r{i}" for i in range(8)], ["a", "b", "c"]
    for (_, out, err), want, ids in zip(results, expected, rows * 2):
        got_ids, got = parsed(out, module)
        assert got_ids == ids and err == ""
        assert same_bits(got, numpy.reshape(want, got.shape))


def test_without_a_key_the_noise_is_fresh():
    module = load("legendre10")
    c_text, _ = coefficients_csv(module)
    first, second = (finish(run("legendre10", "privatize", "--epsilon", "1", stdin=c_text))
                     for _ in range(2))
    assert first[0] == second[0] == 0
    assert not same_bits(parsed(first[1], module)[1], parsed(second[1], module)[1])


GOOD = "curve,t,y\na,0,1\na,1,2\n"
BAD = [
    (["release", "--epsilon", "1", "--rho", "1"], GOOD, "not allowed"),
    (["release", "--epsilon", "1", "--key", "zz" * 32], GOOD, "key"),
    (["release", "--epsilon", "1"], "", "header"),  # no input at all
    (["release", "--epsilon", "1"], "a,0,1\na,1,2\n", "header"),  # no header
    (["release", "--epsilon", "1"], "curve,time,y\na,0,1\n", "header"),  # wrong header
    (["release", "--epsilon", "1"], "curve,t,y\na,0,1\na,1\n", "line 3 has 2 fields"),
    (["release", "--epsilon", "1"], "curve,t,y\na,0,1\na,1,x\n", "line 3: y='x'"),
    (["release", "--epsilon", "1"], "curve,t,y\na,0,1\na,1,nan\n", "not a finite number"),
    (["release", "--epsilon", "1"], "curve,t,y\na,0.5,1\na,0.2,2\n", "increasing"),
    (["release"], GOOD, "required"),
    (["release", "--epsilon", "0"], GOOD, "positive"),
    (["release", "--epsilon", "1", "--key", "ab" * 31], GOOD, "key"),
    (["privatize", "--epsilon", "1"], "curve,c0\nr,1\n", "header"),
    (["privatize", "--epsilon", "1"],
     "curve," + ",".join(f"c{j}" for j in range(11)) + "\nr" + ",1" * 10 + "\n", "fields"),
    (["publish"], GOOD, "invalid choice"),
    (["project"], "curve,t,y\na,0," + "1" * 131073 + "\n", "field larger than field limit"),
]


def test_every_bad_input_gives_one_line_and_exit_2():
    """Through run_protocol of legendre10 (interval [-1, 1], 11 coordinates), and three as
    subprocesses (the exit status itself)."""
    module = load("legendre10")
    results = [in_process(module, *args, stdin=stdin) for args, stdin, _ in BAD]
    results[:3] = [finish(run("legendre10", *args, stdin=stdin)) for args, stdin, _ in BAD[:3]]
    for (status, out, err), (args, stdin, words) in zip(results, BAD):
        assert (status, out) == (2, ""), (args, stdin, err)
        assert err.count("\n") == 1 and err.startswith("legendre10.py: error: "), err
        assert words in err, (words, err)
