"""Golden values for the JS runtime's tests (tests/js/), computed with mpmath.

    python tests/js/golden/make_golden.py           # writes tests/js/golden/kernel.json
    python tests/js/golden/make_golden.py --check   # exit 1 if the committed files differ

kernel.json: the exact kernel's functions (gp_runtime.mjs, gpLn, gpSincosTurn, gpPi, gpLn2)
at levels 1, 2 and 6: inputs and the exact values times 2^F (F = 64 (L + 3) fraction bits),
rounded to the nearest integer, from mpmath at F + 128 bits (more than 60 digits at every
level). Also the self-test table of gp_runtime.mjs (GP_LIB_CHECKS): the fast path's arguments
of Math.log and Math.tan, each with its value correctly rounded to a double by mpmath at 60
digits; --check compares the table in the runtime's text too."""
import json
import re
import sys
from pathlib import Path

import mpmath
import numpy

HERE = Path(__file__).resolve().parent
RUNTIME = HERE.parents[2] / "gpcompiler" / "runtime" / "js" / "gp_runtime.mjs"
LEVELS = (1, 2, 6)


def nearest(value):
    """The double nearest an mpf (mpmath rounds to nearest at 53 bits)."""
    with mpmath.workprec(53):
        return float(+value)


def lib_checks():
    """[x, f(x) correctly rounded] for log at u = (2m + 1) 2^-53 and w near 1, and for tan at
    fl(pi/2) R, R in [0, 1/2] as the fast path forms them."""
    rng = numpy.random.default_rng(32)
    ms = [0, 1, 2, 3, 2 ** 52 - 1, 2 ** 51] + [int(m) for m in rng.integers(0, 2 ** 52, 24)]
    ms += [int(rng.integers(0, 2 ** k)) for k in range(4, 52, 4)]
    us = [(2 * m + 1) * 2.0 ** -53 for m in ms]
    ws = [1 + float(v) for v in rng.uniform(-0.5, 0.5, 8)] + [1 + 2.0 ** -30, 1 - 2.0 ** -40]
    angles = [0.0, 2.0 ** -1000, 2.0 ** -30, 0.7853981633974483, 0.78539816339744828]
    angles += [float(numpy.float64(1.5707963267948966) * numpy.float64(r))
               for r in rng.uniform(0, 0.5, 30)]
    with mpmath.workdps(60):
        log = [[x, nearest(mpmath.log(mpmath.mpf(x)))] for x in us + ws]
        tan = [[x, nearest(mpmath.tan(mpmath.mpf(x)))] for x in angles]
    return {"log": log, "tan": tan}


def kernel():
    """Inputs and exact values (times 2^F, nearest integers) of the kernel's functions."""
    rng = numpy.random.default_rng(320)
    cases = []
    for level in LEVELS:
        bits = 64 * (level + 3)
        one = 1 << bits
        with mpmath.workprec(bits + 128):
            scale = mpmath.mpf(2) ** bits

            def fixed(value):
                return str(int(mpmath.nint(value * scale)))
            ys = [one, one // 3, one * 5 // 4, 1 << 140, (1 << 140) + 12345, one * 12345 + 17,
                  one // (1 << 60), (1 << 61) * one - 1]
            ys += [int.from_bytes(rng.bytes(bits // 8), "little") >> int(rng.integers(0, bits))
                   or 1 for _ in range(6)]
            us = [0, one // 4, one // 2, one * 3 // 4, one // 8, one - 1]
            us += [int.from_bytes(rng.bytes(bits // 8), "little") for _ in range(6)]
            cases.append({
                "level": level,
                "pi": fixed(mpmath.pi), "ln2": fixed(mpmath.log(2)),
                "ln": [[str(y), fixed(mpmath.log(mpmath.mpf(y) / scale))] for y in ys],
                "sincos": [[str(u), fixed(mpmath.cos(2 * mpmath.pi * u / scale)),
                            fixed(mpmath.sin(2 * mpmath.pi * u / scale))] for u in us],
            })
    return cases


def runtime_table(checks):
    """The text of GP_LIB_CHECKS's rows (repr: they parse back to the same doubles)."""
    def rows(pairs):
        return "\n".join(f"        [{x!r}, {y!r}]," for x, y in pairs)
    return rows(checks["log"]), rows(checks["tan"])


def with_table(text, checks):
    log, tan = runtime_table(checks)
    text = re.sub(r"(    log: \[\n)(.*?)(\n    \],)", lambda m: m[1] + log + m[3], text, flags=re.S)
    return re.sub(r"(    tan: \[\n)(.*?)(\n    \],)", lambda m: m[1] + tan + m[3], text, flags=re.S)


def main(argv):
    checks = lib_checks()
    golden = json.dumps({"lib_checks": checks, "kernel": kernel()}, indent=1) + "\n"
    runtime = with_table(RUNTIME.read_text(), checks)
    if "--check" in argv:
        same = (HERE / "kernel.json").read_text() == golden and RUNTIME.read_text() == runtime
        print("golden files up to date" if same else "golden files differ: rerun without --check")
        return 0 if same else 1
    (HERE / "kernel.json").write_text(golden)
    RUNTIME.write_text(runtime)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
