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
name = "wave"
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
    path = tmp_path_factory.mktemp("wave") / "wave.toml"
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
    assert "not a valid function" not in done.stderr, done.stderr
