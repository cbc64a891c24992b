"""The release plot at 1, 10 and 100 curves (issue 20 items 5 and 7): one-second segments of
the bundled ECG (MIT-BIH record 208) as a user's CSV without units, a spec declaring
[domain] units = "s" and [values] units = "mV", Legendre degree 15, epsilon = 50, with
--compare (the true curves are drawn: the pictures are not private). Writes
docs/images/release_{1,10,100}_curves.png.

    python docs/many_curves.py
"""
import sys
import tempfile
from importlib import resources
from pathlib import Path

import numpy

from gpcompiler.cli import main

HERE = Path(__file__).resolve().parent
SPEC = """name = "ecg_seconds"
title = "Legendre degree 15 on one-second ECG segments"

[domain]
intervals = [["0", "1"]]
units = "s"

[basis]
family = { name = "legendre", degree = 15 }

[values]
units = "mV"
"""


def segments(count, rate=360):
    """``count`` consecutive one-second segments of record 208 (mV, t in s)."""
    with resources.files("gpcompiler").joinpath("data/mitbih_record208_360hz.npz").open("rb") as f:
        raw = numpy.load(f)["ecg"]
    millivolts = (raw[:count * rate].astype(float) - 1024.0) / 200.0
    t = numpy.arange(rate) / rate
    return [(f"s{k}", t, millivolts[k * rate:(k + 1) * rate]) for k in range(count)]


def main_(counts=(1, 10, 100)):
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        (scratch / "ecg_seconds.toml").write_text(SPEC)
        for count in counts:
            rows = [f"{key},{ti!r},{yi!r}" for key, t, y in segments(count)
                    for ti, yi in zip(t.tolist(), y.tolist())]
            data = scratch / f"ecg_{count}.csv"
            data.write_text("curve,t,y\n" + "\n".join(rows) + "\n")
            status = main(["privatize", str(scratch / "ecg_seconds.toml"), str(data),
                           "--epsilon", "50", "--seed", "1", "--grid", "400", "--compare",
                           "-q", "-o", str(scratch / "release.json"),
                           "--plot", str(HERE / "images" / f"release_{count}_curves.png")])
            if status:
                sys.exit(status)


if __name__ == "__main__":
    main_()
