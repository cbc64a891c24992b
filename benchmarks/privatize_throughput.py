"""Batch Project-and-Privatize throughput, as ratios measured in one run.

Prints, for the 800-function sinc module on B windows of the bundled ECG (3600 samples):
  projection weights once, then per batch: project_and_privatize with a seeded NumPy
  generator, with the default secure generator (OS entropy), and the bare matrix product
  of the same shapes. Ratios are what matter on a shared, noisy machine.
Run: python benchmarks/privatize_throughput.py [--batch 256] [--repeats 5]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpcompiler.build import import_module_file  # noqa: E402
from gpcompiler.curves import bundled_ecg  # noqa: E402


def best_time(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    module = import_module_file(ROOT / "generated" / "sinc_ecg.py")
    windows = [bundled_ecg(w % 30) for w in range(args.batch)]
    t = windows[0].times[0]
    y = numpy.stack([w.values[0] for w in windows])
    weights = module.projection_weights(t)
    seeded = numpy.random.default_rng(0)
    bare = best_time(lambda: y @ weights, args.repeats)
    project = best_time(lambda: module.project(t, y), args.repeats)
    noise_seeded = best_time(lambda: module.privatize(y @ weights, epsilon=1.0, rng=seeded), args.repeats)
    noise_secure = best_time(lambda: module.privatize(y @ weights, epsilon=1.0), args.repeats)
    full_seeded = best_time(lambda: module.project_and_privatize(t, y, epsilon=1.0, rng=seeded), args.repeats)
    full_secure = best_time(lambda: module.project_and_privatize(t, y, epsilon=1.0), args.repeats)
    print(f"batch {args.batch} x {t.size} samples -> {module.COEF_DIM} coordinates (best of {args.repeats})")
    print(f"  bare matrix product            {bare * 1e3:8.2f} ms   1.00")
    print(f"  matmul + privatize (seeded)    {noise_seeded * 1e3:8.2f} ms   {noise_seeded / bare:5.2f}")
    print(f"  matmul + privatize (secure)    {noise_secure * 1e3:8.2f} ms   {noise_secure / bare:5.2f}")
    print(f"  project (cached grid weights)  {project * 1e3:8.2f} ms   {project / bare:5.2f}")
    print(f"  project_and_privatize seeded   {full_seeded * 1e3:8.2f} ms   {full_seeded / bare:5.2f}")
    print(f"  project_and_privatize secure   {full_secure * 1e3:8.2f} ms   {full_secure / bare:5.2f}")
    print(f"secure / seeded, privatize after a precomputed projection: {noise_secure / noise_seeded:.2f}")
    print(f"secure / seeded, project_and_privatize:                    {full_secure / full_seeded:.2f}")


if __name__ == "__main__":
    main()
