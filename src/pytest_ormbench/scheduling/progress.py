"""Progress lines for long runs, with an estimate of the time left, for a terminal and a log alike.

A run is a known number of units (a cell's round, a starting state to build, a drift probe). Each
kind of unit is timed as it finishes, per arm (one arm's round can take a hundred times another's),
and the time left is what is still to do times what each such unit has taken so far. Until every arm
with work left has finished one unit, the estimate is unknown and the line says so.

Lines come at most every ``interval`` seconds and whenever a phase ends (pytest's own progress shows
nothing while the timed schedule runs, before the first test). They are whole lines, written and flushed
one at a time by the caller, so a log file or a pipe shows them as they happen, as pytest's ``-v``
lines do; nothing here redraws a line (tqdm's ``\\r`` only reads well on a terminal).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable


def duration(seconds: float) -> str:
    """``45 s``, ``2 min 10 s``, ``1 h 5 min``: as a person says it."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


@dataclass
class Progress:
    """One phase of a run: ``what`` names its units ("rounds", "starting states")."""

    what: str
    #: units still to do, per kind (an arm's name, or "probe")
    todo: Counter[str]
    say: Callable[[str], None] | None = None
    interval: float = 30.0
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)
    spent: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    finished: Counter[str] = field(default_factory=Counter)
    _last: float = 0.0

    @classmethod
    def of(cls, what: str, kinds: Iterable[str], say: Callable[[str], None] | None = None,
           interval: float = 30.0, clock: Callable[[], float] = time.monotonic) -> Progress:
        p = cls(what, Counter(kinds), say, interval, clock)
        p.started = p._last = clock()
        return p

    @property
    def total(self) -> int:
        return sum(self.todo.values()) + sum(self.finished.values())

    @property
    def done(self) -> int:
        return sum(self.finished.values())

    def finish(self, kind: str, seconds: float, units: int = 1) -> None:
        """``units`` of ``kind`` took ``seconds`` together; report if a line is due."""
        self.todo[kind] = max(0, self.todo[kind] - units)
        self.finished[kind] += units
        self.spent[kind] += seconds
        if self.clock() - self._last >= self.interval:
            self.report()

    def skip(self, kind: str, units: int = 1) -> None:
        """Units that will not run after all (a cell that failed leaves the schedule)."""
        self.todo[kind] = max(0, self.todo[kind] - units)

    def left(self) -> float | None:
        """Seconds still to go, or None while some kind with work left has not finished a unit yet."""
        total = 0.0
        for kind, n in self.todo.items():
            if not n:
                continue
            if not self.finished[kind]:
                return None
            total += n * self.spent[kind] / self.finished[kind]
        return total

    def line(self) -> str:
        done, total = self.done, max(1, self.total)
        left = self.left()
        eta = ("time left known once every arm has run one" if left is None
               else f"about {duration(left)} left")
        return (f"pytest-ormbench: {self.what}: {done:,} of {self.total:,} done ({done / total:.0%}), "
                f"{duration(self.clock() - self.started)} elapsed, {eta}")

    def report(self) -> None:
        self._last = self.clock()
        if self.say is not None:
            self.say(self.line())
