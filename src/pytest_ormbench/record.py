"""Moved to :mod:`pytest_ormbench.results.record` (this path is deprecated)."""

from pytest_ormbench._moved import alias

alias(__name__, "pytest_ormbench.results.record")
