"""Progress lines for long runs, with an estimate of the time left, for a terminal and a log alike.

A phase of a run is a known number of units (a cell's timed round, a starting state to build), counted in
its lines, plus work that is not counted but takes time (a drift probe, a cell's statement-counting
repetition: ``extra``). Each unit has a :class:`Kind`: the arm at its place (``unit``), the model, the work
(op, mode, table) and a step (a round, the counting repetition, a build).

The estimate of the time left, in two factors:

- **what each remaining unit costs**: the mean time the units of its own kind took so far. A kind not yet
  measured borrows, most specific first: (1) the same kind (model, work, step) on other arms, scaled by
  how this arm compares with them on the kinds both have run (the geometric mean of the ratios: an arm
  twice as slow as another on what both did is taken to be twice as slow on the rest, and a wide model's
  insert that cost 50 times a simple get on the other arms costs 50 times here too), (2) for a counting
  repetition or a last round that also measures memory, the kind's own round, (3) the arm's mean on the
  same model and step, (4) the arm's mean. An arm that has finished nothing yet leaves the estimate
  unknown, and the line says so.
- **how fast the machine is going now**: a speed factor, 1 at the start. Each finished unit whose kind
  was measured before compares its time with that kind's mean so far (the ratio actual / expected), and
  the factor moves towards the ratio by ``1 - exp(-expected seconds / TAU)``: an exponential smoothing
  over about the last ``TAU`` (30) seconds of work, so that one short round's jitter moves it little and a
  change of load shows within half a minute (one unit of several minutes, under callgrind, moves it
  almost all the way). A unit measured for the first time says nothing about the pace (its expected
  time is a guess) and leaves the factor as it is.

The time left is the sum over the remaining units of cost × factor. When the machine slows down by 2×,
the factor rises to about 2 within ``TAU`` seconds of work, and the estimate with it; as the means
absorb the slow rounds the factor settles back, their product staying at what the rounds take now.

Units that will not run after all (a cell that is unsupported, whose package is missing, whose server is
not there, or that failed) are dropped with their reason, so that done + dropped + to go is the total the
plan announced; the lines say how many and why, and :meth:`Progress.dropped_note` says it in full.

Lines come at most every ``interval`` seconds and whenever a phase ends (pytest's own progress shows
nothing while the timed schedule runs, before the first test). They are whole lines, written and flushed
one at a time by the caller, so a log file or a pipe shows them as they happen, as pytest's ``-v``
lines do; nothing here redraws a line (tqdm's ``\\r`` only reads well on a terminal).
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, NamedTuple

#: seconds of work the speed factor is smoothed over
TAU = 30.0


def duration(seconds: float) -> str:
    """``45 s``, ``2 min 10 s``, ``1 h 5 min``: as a person says it."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


class Kind(NamedTuple):
    """What a unit is, for its expected cost: an arm at its place (or ``probe``), the model, the work (op, mode,
    table) and the step (``""``: a timed round; ``count``, ``memory``, ``build``: see the scheduler)."""

    unit: str
    model: str = ""
    work: str = ""
    step: str = ""


def _kind(kind: Kind | str) -> Kind:
    return kind if isinstance(kind, Kind) else Kind(kind)


@dataclass
class Progress:
    """One phase of a run: ``what`` names its units ("timed rounds", "starting states")."""

    what: str
    #: units still to do, per kind
    todo: Counter[Kind]
    say: Callable[[str], None] | None = None
    interval: float = 30.0
    clock: Callable[[], float] = time.monotonic
    #: kinds whose units take time but are not counted in the lines (a drift probe, a counting repetition)
    extra: set[Kind] = field(default_factory=set)
    started: float = field(default=0.0)
    spent: dict[Kind, float] = field(default_factory=lambda: defaultdict(float))
    finished: Counter[Kind] = field(default_factory=Counter)
    #: the speed factor: what units take now over what their kinds took so far (see the module's docstring)
    speed: float = 1.0
    tau: float = TAU
    #: counted units dropped, and the cells they belonged to, by reason ("unsupported", "failed", …)
    dropped: Counter[str] = field(default_factory=Counter)
    dropped_cells: Counter[str] = field(default_factory=Counter)
    _last: float = 0.0

    @classmethod
    def of(cls, what: str, kinds: Iterable[Kind | str], say: Callable[[str], None] | None = None,
           interval: float = 30.0, clock: Callable[[], float] = time.monotonic,
           extra: Iterable[Kind | str] = ()) -> Progress:
        """A phase of ``kinds`` (one per counted unit) and ``extra`` (one per uncounted unit: probes, counting)."""
        extra = [_kind(k) for k in extra]
        p = cls(what, Counter(_kind(k) for k in kinds) + Counter(extra), say, interval, clock, set(extra))
        p.started = p._last = clock()
        return p

    # -- counting -------------------------------------------------------------------------------------
    def _counted(self, counter: Counter[Kind]) -> int:
        return sum(n for k, n in counter.items() if k not in self.extra)

    @property
    def total(self) -> int:
        """Counted units of the phase: done, dropped and still to do."""
        return self.done + self.to_go + sum(self.dropped.values())

    @property
    def done(self) -> int:
        return self._counted(self.finished)

    @property
    def to_go(self) -> int:
        return self._counted(self.todo)

    def finish(self, kind: Kind | str, seconds: float, units: int = 1) -> None:
        """``units`` of ``kind`` took ``seconds`` together; report if a line is due."""
        kind = _kind(kind)
        expected = self._mean(kind)
        if expected is not None and units:
            # the pace now: this unit's time against what its kind took so far, smoothed over TAU seconds of work
            ratio = seconds / units / max(expected, 1e-9)
            weight = 1.0 - math.exp(-expected * units * self.speed / self.tau)
            self.speed += weight * (ratio - self.speed)
        self.todo[kind] = max(0, self.todo[kind] - units)
        self.finished[kind] += units
        self.spent[kind] += seconds
        self._due()

    def _due(self) -> None:
        if self.clock() - self._last >= self.interval:
            self.report()

    def drop(self, why: str, units: Mapping[Kind | str, int]) -> None:
        """One cell's ``units`` ({kind: how many}) will not run after all; ``why``: "unsupported", "failed", …"""
        counted = 0
        for kind, n in units.items():
            kind = _kind(kind)
            n = min(n, self.todo[kind])
            self.todo[kind] -= n
            counted += 0 if kind in self.extra else n
        if counted:
            self.dropped[why] += counted
            self.dropped_cells[why] += 1
            self._due()

    # -- the estimate ---------------------------------------------------------------------------------
    def _mean(self, kind: Kind) -> float | None:
        n = self.finished[kind]
        return self.spent[kind] / n if n else None

    def _costs(self) -> dict[str, dict[tuple[str, str, str], float]]:
        """Mean seconds per unit of every measured kind: {unit: {(model, work, step): seconds}}."""
        out: dict[str, dict[tuple[str, str, str], float]] = defaultdict(dict)
        for kind, n in self.finished.items():
            if n:
                out[kind.unit][kind[1:]] = max(self.spent[kind] / n, 1e-9)
        return out

    def expected(self, kind: Kind | str, costs: dict | None = None, _ratios: dict | None = None) -> float | None:
        """Seconds one unit of ``kind`` is expected to take at the pace its kinds were measured at (before the
        speed factor): its own mean, or borrowed as the module's docstring says; None: nothing to go by."""
        kind = _kind(kind)
        own = self._mean(kind)
        if own is not None:
            return own
        costs = self._costs() if costs is None else costs
        ratios = {} if _ratios is None else _ratios
        mine, what = costs.get(kind.unit, {}), kind[1:]
        if not mine:
            return None
        # (1) the same kind on other arms, scaled by this arm's pace against theirs on the kinds both have run
        logs = []
        for other, theirs in costs.items():
            if other == kind.unit or what not in theirs:
                continue
            if (kind.unit, other) not in ratios:
                shared = mine.keys() & theirs.keys()
                ratios[kind.unit, other] = (sum(math.log(mine[s] / theirs[s]) for s in shared) / len(shared)
                                            if shared else None)
            ratio = ratios[kind.unit, other]
            if ratio is not None:
                logs.append(math.log(theirs[what]) + ratio)
        if logs:
            return math.exp(sum(logs) / len(logs))
        # (2) a counting repetition, a round that also measures memory: as long as the kind's round
        if kind.step:
            return self.expected(kind._replace(step=""), costs, ratios)
        # (3) the arm's mean on the model, (4) the arm's mean
        rounds = {k: v for k, v in mine.items() if k[2] == kind.step} or mine
        pool = [v for k, v in rounds.items() if k[0] == kind.model] or list(rounds.values())
        return sum(pool) / len(pool)

    def left(self) -> float | None:
        """Seconds still to go, or None while some arm with work left has not finished a unit yet."""
        costs, ratios, total = self._costs(), {}, 0.0
        for kind, n in self.todo.items():
            if not n:
                continue
            each = self.expected(kind, costs, ratios)
            if each is None:
                return None
            total += n * each
        return total * self.speed

    # -- the lines ------------------------------------------------------------------------------------
    def _dropped_words(self) -> str:
        return ", ".join(f"{cells} cell{'s' if cells != 1 else ''} {why}" for why, cells in self.dropped_cells.items())

    def dropped_note(self) -> str:
        """One line: how many of the planned units were dropped, and why (empty: none)."""
        n = sum(self.dropped.values())
        if not n:
            return ""
        parts = ", ".join(f"{cells} cell{'s' if cells != 1 else ''} {why} ({self.dropped[why]:,})"
                          for why, cells in self.dropped_cells.items())
        return (f"pytest-ormbench: {n:,} of the {self.total:,} planned {self.what} dropped: {parts}; "
                f"{self.done + self.to_go:,} run or to run")

    def pace(self) -> str:
        """The speed factor in words, when it has moved by more than a tenth."""
        if self.speed > 1.1:
            return f" (recent {self.what} {self.speed:.1f}x slower than their kinds so far)"
        if self.speed < 1 / 1.1:
            return f" (recent {self.what} {1 / self.speed:.1f}x faster than their kinds so far)"
        return ""

    def eta(self) -> str:
        left = self.left()
        return ("time left known once every arm has run one" if left is None
                else f"about {duration(left)} left{self.pace()}")

    def line(self) -> str:
        done, total, dropped = self.done, self.total, sum(self.dropped.values())
        gone = f", {dropped:,} dropped ({self._dropped_words()}), {self.to_go:,} to go" if dropped else ""
        return (f"pytest-ormbench: {self.what}: {done:,} of {total:,} done{gone} "
                f"({(done + dropped) / max(1, total):.0%}), {duration(self.clock() - self.started)} elapsed, "
                f"{self.eta()}")

    def report(self) -> None:
        self._last = self.clock()
        if self.say is not None:
            self.say(self.line())
