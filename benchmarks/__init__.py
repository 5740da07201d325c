"""Benchmark scripts (not in the wheel).

Run ``python -m benchmarks.cpu`` or ``python -m pytropical_gpu bench``.
"""
