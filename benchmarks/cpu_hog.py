"""Run a pytest command on a loaded machine (issue 30): N busy processes beside it.

    python -m benchmarks.cpu_hog                          # the suite beside 2 x cores hogs
    python -m benchmarks.cpu_hog --hogs 4 -- tests/test_hostile.py -n 0 -q

Everything after ``--`` goes to ``python -m pytest`` (nothing: the README's ``-q``, with
pyproject's addopts: two xdist workers). Each hog is a Python loop that ends itself once
this runner is gone (it polls its parent), and the runner stops them when pytest ends,
fails or is interrupted (SIGINT, SIGTERM), so no hog outlives a run, even a killed one.
Prints the hogs' ids, pytest's wall time and the load average; exits with pytest's status.
Not part of the test suite, nor of ``python -m benchmarks``.
"""
import argparse
import os
import signal
import subprocess
import sys
import time

# busy while its parent is this runner (its id is the argument): once the runner is gone,
# even before the hog has started, the hog is re-parented and ends
HOG = ("import os, sys\nwhile os.getppid() == int(sys.argv[1]):\n"
       "    for _ in range(100000):\n        pass\n")


def start_hogs(count):
    """``count`` busy processes, children of this one."""
    return [subprocess.Popen([sys.executable, "-c", HOG, str(os.getpid())])
            for _ in range(count)]


def stop_hogs(hogs):
    """Kill each hog by its id and reap it."""
    for hog in hogs:
        hog.kill()
    for hog in hogs:
        hog.wait()


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ours, pytest_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) \
        if "--" in argv else (argv, ["-q"])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hogs", type=int, default=2 * (os.cpu_count() or 1),
                        help="busy processes (default: 2 x the cores)")
    options = parser.parse_args(ours)
    signal.signal(signal.SIGTERM, _terminated)
    hogs = start_hogs(options.hogs)
    try:
        print(f"cpu_hog: {len(hogs)} hogs: {' '.join(str(h.pid) for h in hogs)}", flush=True)
        start = time.monotonic()
        status = subprocess.call([sys.executable, "-m", "pytest", *pytest_args])
        print(f"cpu_hog: pytest exit {status} after {time.monotonic() - start:.1f} s, "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
        return status
    finally:
        stop_hogs(hogs)


if __name__ == "__main__":
    sys.exit(main())
