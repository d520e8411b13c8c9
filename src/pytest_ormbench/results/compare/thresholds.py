"""What may be judged, and by how much a cell may change before it counts: the measure, and per-cell thresholds."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import Iterable

from pytest_ormbench.workload.measures import COMPARABLE, INSTRUCTIONS
from pytest_ormbench.results.record import CellRecord
from pytest_ormbench.results.report.format import fmt_pct
from pytest_ormbench.results.compare.model import CompareError

DEFAULT_THRESHOLD_PCT = 10.0
#: instruction counts hardly move between runs, so a much smaller change is already worth a look
DEFAULT_INSTRUCTIONS_THRESHOLD_PCT = 2.0


def check_measure(measure: str) -> str:
    """The measure, or CompareError: only a measure with one value per round, lower is better, can be judged."""
    if measure not in COMPARABLE:
        raise CompareError(f"measure must be one of {', '.join(COMPARABLE)}, got {measure!r}")
    return measure


def default_threshold_pct(measure: str) -> float:
    """The threshold of a cell no pattern matches: 10 % of time, 2 % of instructions."""
    return DEFAULT_INSTRUCTIONS_THRESHOLD_PCT if check_measure(measure) == INSTRUCTIONS else DEFAULT_THRESHOLD_PCT


def _matches(pattern: str, record: CellRecord) -> bool:
    key = record.key
    names = (key.arm, key.model, key.op, key.operation.name)
    return pattern in names or fnmatch.fnmatchcase(key.id, pattern)


@dataclass(frozen=True)
class Thresholds:
    """Per-cell regression thresholds as fractions (0.1 = the median time may grow by 10 %).

    Entries are checked in order and the last one that matches wins, so a broad entry goes
    first and exceptions after it; ``*=12`` at the end overrides everything before it.
    """

    entries: tuple[tuple[str, float], ...] = ()
    default: float = DEFAULT_THRESHOLD_PCT / 100

    @classmethod
    def parse(cls, specs: Iterable[str], default_pct: float = DEFAULT_THRESHOLD_PCT) -> Thresholds:
        """``PATTERN=PCT`` entries (several may share one string, separated by commas)."""
        entries = []
        for spec in specs:
            for item in str(spec).split(","):
                item = item.strip()
                if not item:
                    continue
                pattern, sep, pct = item.rpartition("=")
                pattern = pattern.strip()
                if not sep or not pattern:
                    raise CompareError(f"threshold {item!r}: expected PATTERN=PERCENT, e.g. peewee=15 or *-fk-*=20")
                try:
                    value = float(pct.strip().rstrip("%").strip())
                except ValueError:
                    raise CompareError(f"threshold {item!r}: {pct.strip()!r} is not a number of percent") from None
                if not math.isfinite(value) or value < 0:
                    raise CompareError(f"threshold {item!r}: the percentage must be 0 or more")
                entries.append((pattern, value / 100))
        return cls(tuple(entries), default_pct / 100)

    def with_default_pct(self, pct: float) -> Thresholds:
        """The same entries over another default (the measure's), for thresholds parsed before it was known."""
        return Thresholds(self.entries, pct / 100)

    def for_cell(self, record: CellRecord) -> float:
        value = self.default
        for pattern, fraction in self.entries:
            if _matches(pattern, record):
                value = fraction
        return value

    def unused(self, records: Iterable[CellRecord]) -> list[str]:
        """Patterns that match no cell: most likely a typo."""
        records = list(records)
        return [p for p, _ in self.entries if not any(_matches(p, r) for r in records)]

    def describe(self) -> str:
        extra = ", ".join(f"{p}={fmt_pct(f)}" for p, f in self.entries)
        return f"{fmt_pct(self.default)} by default" + (f", then {extra} (last match wins)" if extra else "")
