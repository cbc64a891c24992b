"""Benchmarks, run as `python -m benchmarks` (see __main__.py)."""
