"""Repository root: nothing to configure; the plugin loads through its pytest11 entry point.

Benchmarks live in bench_suites/ (``pytest bench_suites``), correctness tests in tests/.
"""
