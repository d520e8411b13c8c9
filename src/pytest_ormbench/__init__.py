"""pytest-ormbench: honest benchmarks of Python ORMs and embedded databases, as a pytest plugin."""

__version__ = "0.1.0"
