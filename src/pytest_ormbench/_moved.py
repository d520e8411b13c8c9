"""Old import paths of modules that moved into the role packages keep working for a while.

A module that third-party arms import (the contract, the arm bases and helpers, the registry, the
record) stays importable from its old path: the old module *is* the new one (one object, so
``isinstance`` and class identity hold), and importing it by the old path warns once.
"""

from __future__ import annotations

import importlib
import sys
import warnings


def alias(old: str, new: str) -> None:
    """Make ``old`` the module ``new``, with a DeprecationWarning naming the new path."""
    warnings.warn(f"{old} moved to {new}; the old path will be removed in a later release",
                  DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
