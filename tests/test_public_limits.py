"""Public limits, decided before any data is read (issue 30, finding 5; docs/threat-model.md,
"Public limits"): the memory of a projection does not grow with the span of the private
sample times, a spec whose quadrature would need unbounded work is refused when it is
compiled, and no curve's failure stops another curve's release."""
import os
import subprocess
import sys
import textwrap

import numpy
import pytest

from conftest import ROOT
from gpcompiler.compiler.build import load

# sin(8000 t) on [0, 1000]: 10^6 Gauss sub-pieces of width 8/frequency across the domain,
# just within the public limit (2^20); a curve spanning the domain needed about 460 MiB.
WAVE = """\
name = "fast_wave"
title = "A fast wave"
[domain]
intervals = [["0", "1000"]]
[basis]
functions = ["1", "sin(8000*t)", "cos(8000*t)"]
"""

# Run in a subprocess: the module is loaded and BLAS warmed up first, then the address
# space is limited to what the process uses plus HEADROOM, then the command runs.
UNDER_A_LIMIT = """\
import resource, sys
import numpy
from gpcompiler.compiler.build import load
from gpcompiler.cli.parser import main
load(sys.argv[1])
numpy.ones((64, 64)) @ numpy.ones((64, 64))
with open("/proc/self/status") as status:
    used = next(int(line.split()[1]) for line in status if line.startswith("VmSize:")) * 1024
limit = used + {headroom}
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.exit(main(["privatize", sys.argv[1], sys.argv[2], "--epsilon", "1", "--seed", "3",
               "-o", sys.argv[3]]))
"""
HEADROOM = 192 << 20


@pytest.fixture(scope="module")
def wave(tmp_path_factory):
    path = tmp_path_factory.mktemp("wave") / "fast_wave.toml"
    path.write_text(WAVE)
    load(path)  # compiled once, into the tests' build cache (the subprocess reuses it)
    return path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc")
def test_a_curve_spanning_the_domain_does_not_stop_the_other_curves_release(wave, tmp_path):
    """Finding 5: bob's two samples span the domain of a fast basis. His projection's memory
    grew with that span (about 460 MiB), so under an address-space limit the whole file
    aborted (exit 3, no file) though alice alone is released. Now the weights are built in
    blocks of bounded memory: both curves are released, bob's from his data."""
    data = tmp_path / "curves.csv"
    alice = "".join(f"alice,{t},{numpy.sin(t):.6f}\n" for t in numpy.linspace(10, 10.5, 50))
    data.write_text("curve,t,y\n" + alice + "bob,0,1.0\nbob,1000,2.0\n")
    out = tmp_path / "release.csv"
    done = subprocess.run(
        [sys.executable, "-c", UNDER_A_LIMIT.format(headroom=HEADROOM), str(wave), str(data),
         str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    rows = [line.split(",")[0] for line in out.read_text().splitlines()
            if line and not line.startswith("#")]
    assert {"alice", "bob"} <= set(rows), rows
    assert "not valid" not in done.stderr, done.stderr


def _peak_mib(function):
    """The tracemalloc peak of a call, in MiB (NumPy's arrays are traced)."""
    import tracemalloc
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()


def test_the_weights_memory_does_not_grow_with_the_span_of_the_times(wave):
    """Two samples 250 apart on sin(8000 t): 250,000 sub-pieces. Their nodes were all held at
    once (peak about 115 MiB, growing with the span); now in blocks of _CHUNK atom values,
    the same few MiB as two samples 1 apart."""
    module = load(wave)
    narrow, wide = (_peak_mib(lambda: module.projection_weights(numpy.array([0.0, span]),
                                                               cache=False))
                    for span in (1.0, 250.0))
    assert wide < 8 and narrow < 8, (narrow, wide)


def _wave_hat_integrals(t, omega):
    """X[s, a] = int hat_s phi_a for phi = (1, sin(omega t), cos(omega t)), in closed form
    (mpmath, 50 digits): int_a^b (b - x)/h f and int_a^b (x - a)/h f by parts."""
    import mpmath
    with mpmath.workdps(50):
        t, w = [mpmath.mpf(float(v)) for v in t], mpmath.mpf(omega)
        out = [[mpmath.mpf(0)] * 3 for _ in t]
        for i in range(len(t) - 1):
            a, b = t[i], t[i + 1]
            h = b - a
            ca, sa = mpmath.cos(w * a), mpmath.sin(w * a)
            cb, sb = mpmath.cos(w * b), mpmath.sin(w * b)
            left = [h / 2, (h * ca / w - (sb - sa) / w ** 2) / h,
                    (-h * sa / w + (ca - cb) / w ** 2) / h]   # int (b - x)/h {1, sin, cos}
            right = [h / 2, (-h * cb / w + (sb - sa) / w ** 2) / h,
                     (h * sb / w + (cb - ca) / w ** 2) / h]  # int (x - a)/h {1, sin, cos}
            for j in range(3):
                out[i][j] += left[j]
                out[i + 1][j] += right[j]
        return numpy.array([[float(v) for v in row] for row in out])


@pytest.mark.parametrize("chunk", [None, 17 * 3 * 7])
def test_blocked_weights_match_the_closed_form(wave, monkeypatch, chunk):
    """Pieces of 700 to 6,700 sub-pieces, in one block each (the module's _CHUNK) or in
    blocks of 7 sub-pieces (a piece's partial sums added by the binary counter): the weights
    in the user basis, A R^T, match the closed-form integrals to 1e-13 of each node's hat
    integral (numerical; a block's partial sum dropped or added twice is off by about
    1e-3)."""
    module = load(wave)
    if chunk is not None:
        monkeypatch.setattr(module, "_CHUNK", chunk)
    t = numpy.array([0.0, 0.7, 3.3, 10.0])
    weights = module.projection_weights(t, cache=False) @ module._cholesky({}).T
    reference = _wave_hat_integrals(t, 8000)
    scale = numpy.abs(reference[:, :1])   # int hat_s, >= int hat_s |phi_a|
    assert numpy.all(numpy.abs(weights - reference) <= 1e-13 * scale)


def test_graded_weights_in_small_blocks_are_the_same_weights():
    """The graded sub-pieces of a weight singular at both ends (1/sqrt(1 - t^2)), numbered
    in blocks of one uniform part (up to G + 1 graded sub-pieces) or all in one block: the
    same weights to 1e-14 of each row (numerical: the sums are grouped differently)."""
    from conftest import compiled
    module = compiled("kind_chebyshev")
    grid = numpy.array([-1.0, -1 + 1e-9, -0.3, 0.5, 1 - 1e-12, 1.0])
    whole = module.projection_weights(grid, cache=False)
    module._CHUNK, default = 1, module._CHUNK
    try:
        blocked = module.projection_weights(grid, cache=False)
    finally:
        module._CHUNK = default
    scale = numpy.abs(whole).max(axis=1, keepdims=True)
    assert numpy.all(numpy.abs(blocked - whole) <= 1e-14 * scale)


CURVES = "curve,t,y\nalice,0,0.5\nalice,0.5,1\nalice,1,0.25\nbob,0,2\nbob,0.4,-1\nbob,1,3\n"
ZERO_BOB = "curve,t,y\nalice,0,0.5\nalice,0.5,1\nalice,1,0.25\nbob,0.4,-1\n"  # 1 sample: 0


def _release_curves(cli, tmp_path, name, text):
    data, out = tmp_path / f"{name}.csv", tmp_path / f"{name}.json"
    data.write_text(text)
    status, _, err = cli("privatize", "specs/linear.toml", data, "--epsilon", "1", "--seed",
                         "5", "-o", out)
    return status, err, out


@pytest.mark.parametrize("failure", [MemoryError("Unable to allocate 8 TiB"),
                                     OverflowError("int too large to convert")])
def test_a_curve_whose_projection_fails_is_released_as_the_zero_function(
        cli, tmp_path, monkeypatch, failure):
    """bob's projection runs out of memory (or overflows): bob alone is released as the zero
    function, named on standard error ("not private"), and alice's release is the one she
    gets when bob's curve is the zero function (same seed: the same bits). Before, the
    whole file aborted with an internal error (exit 3)."""
    import json
    module = load(ROOT / "specs" / "linear.toml")
    original = module.project_and_privatize

    def failing(t, y, **kwargs):
        if len(t) == 3 and y[0] == 2:
            raise failure
        return original(t, y, **kwargs)
    expected_status, _, expected = _release_curves(cli, tmp_path, "zero", ZERO_BOB)
    monkeypatch.setattr(module, "project_and_privatize", failing)
    status, err, out = _release_curves(cli, tmp_path, "failing", CURVES)
    assert status == expected_status == 0, err
    assert "not private" in err and "bob (" in err and "alice (" not in err, err
    assert ("bob (out of memory" in err) == isinstance(failure, MemoryError), err
    assert json.loads(out.read_text())["curves"] == json.loads(expected.read_text())["curves"]


def test_a_bug_in_one_curves_release_still_surfaces(cli, tmp_path, monkeypatch):
    """An exception that is not a curve's own failure (CURVE_ERRORS) is a bug: exit 3 and
    no file, as before; it is not hidden by releasing the zero function."""
    module = load(ROOT / "specs" / "linear.toml")
    original = module.project_and_privatize

    def buggy(t, y, **kwargs):
        if len(t) == 3 and y[0] == 2:
            raise AssertionError("a bug")
        return original(t, y, **kwargs)
    monkeypatch.setattr(module, "project_and_privatize", buggy)
    status, err, out = _release_curves(cli, tmp_path, "buggy", CURVES)
    assert status == 3 and "internal error: AssertionError" in err and not out.exists(), err


def test_a_field_whose_projection_fails_is_released_as_the_zero_field(cli, tmp_path,
                                                                       monkeypatch):
    """Fields too: the second field's projection runs out of memory; it is released as the
    zero field (same seed: the bits of a batch whose second field is 0), the first as ever."""
    import json
    module = load(ROOT / "specs" / "legendre_box.toml")
    original = module.project_and_privatize
    values = numpy.stack([numpy.ones((4, 3)), numpy.full((4, 3), 7.0)])

    def failing(grids, y, **kwargs):
        if numpy.max(y) == 7:
            raise MemoryError("Unable to allocate 8 TiB")
        return original(grids, y, **kwargs)
    releases = []
    for name, batch in (("zero", values * [[[1]], [[0]]]), ("failing", values)):
        if name == "failing":
            monkeypatch.setattr(module, "project_and_privatize", failing)
        numpy.save(tmp_path / f"{name}.npy", batch)
        status, _, err = cli("privatize", "specs/legendre_box.toml", tmp_path / f"{name}.npy",
                             "--epsilon", "1", "--seed", "5", "-o", tmp_path / f"{name}.json")
        assert status == 0, err
        releases.append(json.loads((tmp_path / f"{name}.json").read_text())["fields"])
    assert "not private" in err and "Unable to allocate" in err, err
    assert releases[0] == releases[1]


def test_the_scheduler_returns_a_curves_memory_error_as_its_result():
    """--scheduler: a worker's projection that runs out of memory is that curve's result
    (raised when the client reaches the curve, so released as the zero function there),
    not an error that stops the whole batch."""
    pytest.importorskip("distributed")
    from gpcompiler.engines import dask as engine

    class Module:
        @staticmethod
        def project(t, y, **kwargs):
            raise MemoryError("Unable to allocate 8 TiB")
    error = engine._projection(Module, numpy.zeros(2), numpy.zeros(2), {}, 1.0, True)
    assert isinstance(error, MemoryError)


LIMITED = [  # (spec body, the key named, what the message says)
    ('[domain]\nintervals = [["0", "1"]]\n[basis]\nfunctions = ["1", "sin(1e9*t)"]\n',
     "basis.functions", "1.25e+08 sub-pieces"),
    ('[domain]\nintervals = [["-oo", "oo"]]\n[basis]\nfamily = { name = "hermite", '
     'degree = 3 }\n', "domain.curve_interval", "needs a finite curve interval"),
    ('[domain]\nintervals = [["-oo", "oo"]]\ncurve_interval = ["0", "1e7"]\n[basis]\n'
     'family = { name = "sinc", count = 4 }\n', "domain.curve_interval", "3.927e+06 sub-pieces"),
    ('[domain]\nintervals = [["0", "1"]]\n[basis]\nfamily = { name = "legendre", degree = 2 }\n'
     '[metric]\nweight = "2 + sin(1e8*t)"\n', "metric.weight", "1.25e+07 sub-pieces"),
    ('[domain]\nvariables = ["x", "y"]\nintervals = [["0", "1"], ["0", "1"]]\n[basis]\n'
     'functions = ["1", "sin(1e6*x)*y"]\n', "basis.functions", "1.25e+05 sub-cells"),
]


@pytest.mark.parametrize("body, key, says", LIMITED,
                         ids=["sin-1e9", "hermite-on-R", "sinc-wide", "weight", "box"])
def test_a_spec_beyond_the_public_work_limit_is_one_line_spec_error(cli, tmp_path, body, key,
                                                                     says):
    """sin(10^9 t) compiled with no warning (finding 5); now a spec whose quadrature needs
    more than 2^20 sub-pieces of width 8/frequency across its curve interval (2^16 sub-cells
    over a box), or a basis on R without a finite curve interval, is refused when it is
    compiled: one line naming the file, the key and the limit."""
    path = tmp_path / "fast.toml"
    path.write_text('name = "fast"\n' + body)
    status, _, err = cli("explain", path)
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert "fast.toml" in err and f"{key}: " in err and says in err, err
    assert ("2^16 = 65536" if "sub-cells" in says else "2^20 = 1048576") in err, err


def test_a_spec_within_the_limit_compiles(wave):
    """sin(8000 t) on [0, 1000]: 10^6 sub-pieces, just within 2^20."""
    assert load(wave)._FREQUENCY * 1000 / 8 == 10 ** 6


@pytest.mark.parametrize("curve, ok", [('["0", "2"]', False), ('["-1", "1/2"]', False),
                                       ('["1/4", "1"]', True)])
def test_a_curve_interval_lies_in_the_domain(cli, tmp_path, curve, ok):
    """A curve interval beyond a finite domain is a spec error naming the key (it compiled,
    then privatize stopped with an internal error, exit 3; new-user review of issue 30);
    one inside it compiles."""
    path = tmp_path / "inside.toml"
    path.write_text('name = "inside"\n[domain]\nintervals = [["0", "1"]]\n'
                    f'curve_interval = {curve}\n[basis]\nfunctions = ["1", "t"]\n')
    status, _, err = cli("explain", path)
    assert (status == 0) == ok, err
    if not ok:
        assert status == 2 and "domain.curve_interval: expected an interval inside" in err
