"""Where a run's wall time goes: the phases every cell's work is charged to (issue 33's account).

The measuring child times its own phases per request (``measuring.runner``: the template, the copy, the
connection, the warm-up, each round's preparation, op, verification and restore, the memory repetition); the
parent times what only it sees (starting processes and the messages to them, building starting states,
counting statements, the drift probe) and calls the rest of the run's wall time ``other``. The record of
a cell carries its child's phases; the run's facts carry the account per arm.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator, Mapping

#: phase -> what it is, in the order the summary shows them
PHASES: dict[str, str] = {
    "timed": "the timed op: the clock's own region (what the figures are made of)",
    "prepare": "each round's inputs prepared before the clock (objects built, rows loaded)",
    "verify": "each round checked after the clock (read-back, counts, durability)",
    "restore": "the database restored to its starting state between rounds",
    "warmup": "the warm-up round of a warm cell (prepared, run and verified, its time discarded)",
    "memory": "the extra repetition under tracemalloc (--ormbench-memory)",
    "copy": "the template copied to the process's work database, and the column types read",
    "open": "the arm's connection opened and closed",
    "template": "a starting state built or found in a measuring process",
    "build": "building and verifying starting states (the parent's request to the arm's worker)",
    "count": "the untimed repetition that counts statements (a process of its own)",
    "process": "measuring processes started (interpreter, imports), the parent's messages to them, their exit",
    "probe": "the drift probe (the fixed sqlite3 cells timed through the run)",
    "other": "the rest of the run's wall time: the parent's planning, bookkeeping and output",
}
#: the phases the child reports (a request's time less these is the parent's "process" share)
CHILD_PHASES = ("timed", "prepare", "verify", "restore", "warmup", "memory", "copy", "open", "template")


class PhaseClock:
    """Seconds per phase, accumulated: ``with clock("restore"): ...`` or ``clock.add("timed", s)``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, phase: str, seconds: float) -> None:
        if phase not in PHASES:
            raise KeyError(f"unknown phase {phase!r}")
        self.seconds[phase] = self.seconds.get(phase, 0.0) + max(0.0, seconds)

    def merge(self, other: Mapping[str, float]) -> None:
        for phase, seconds in other.items():
            self.add(phase, seconds)

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(phase, time.perf_counter() - t0)

    def total(self) -> float:
        return sum(self.seconds.values())


class RunAccount:
    """A run's wall time per unit (an arm at its place; ``probe``) and phase: what each request's child
    reported of its own phases, the parent's share of each request (``process``), and, when asked, the run's
    time no request took (``other``)."""

    def __init__(self) -> None:
        self.units: dict[str, PhaseClock] = {}
        self._started = time.monotonic()

    def charge(self, unit: str, phase: str, wall: float, inside: float = 0.0,
               phases: Mapping[str, float] | None = None) -> None:
        """A request of ``wall`` seconds: the child's ``phases`` when it reported them (the rest is
        ``process``), else ``phase`` for the ``inside`` seconds the child says it took (all of ``wall``
        without one) and ``process`` for the rest."""
        clock = self.units.setdefault(unit, PhaseClock())
        if phases:
            clock.merge(phases)
            clock.add("process", wall - min(sum(phases.values()), wall))
            return
        inside = min(inside, wall) if inside else wall
        clock.add(phase, inside)
        clock.add("process", wall - inside)

    def summary(self) -> dict[str, object]:
        """The account so far: ``run_seconds``, ``total`` and ``units`` (seconds per phase)."""
        run = time.monotonic() - self._started
        units = {u: dict(c.seconds) for u, c in sorted(self.units.items())}
        total = PhaseClock()
        for phases in units.values():
            total.merge(phases)
        total.add("other", run - total.total())
        return {"run_seconds": run, "total": dict(total.seconds), "units": units}
