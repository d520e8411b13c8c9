"""What the harness counts besides wall time, each around the measured op alone.

- :mod:`.statements`: SQL statements the engine was asked to run, counted at the driver
  (for SQLite: a trace callback on every connection the process opens). Counting costs a
  Python call per statement, so a timed process never counts: the counts come from an
  untimed repetition of the round in a process of its own.
- :mod:`.callgrind`: instructions the process executed inside the op, counted by valgrind's
  callgrind with instrumentation switched on only between the op's two clock reads.
"""

from __future__ import annotations

from .statements import KINDS, StatementCounter, classify

__all__ = ["KINDS", "StatementCounter", "classify"]
