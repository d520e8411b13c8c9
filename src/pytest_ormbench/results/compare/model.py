"""What a comparison says about one cell: its verdict (``CellResult``), its statement changes
(``StatementChange``), the verdicts' names, and the one error a comparison raises."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.workload.statements import KINDS
from pytest_ormbench.results.report.load import LoadedCell

REGRESSION = "regression"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
NOISE = "within noise"
NEW = "new"
GONE = "gone"
#: the order of the tables and of the headline
CATEGORIES = (REGRESSION, IMPROVEMENT, UNCHANGED, NOISE, NEW, GONE)
#: a verdict's plural where it is not the verdict itself ("3 within noise")
PLURAL = {REGRESSION: "regressions", IMPROVEMENT: "improvements"}


class CompareError(Exception):
    """Bad input for a comparison; its message is the one line the user sees."""


@dataclass
class CellResult:
    """One cell's verdict. ``ratio`` is the new median over the baseline's, of the measure judged
    (> 1: slower, or more instructions); ``p`` stays None when no test was made (instructions)."""

    key: CellKey
    id: str
    category: str
    base: LoadedCell | None
    new: LoadedCell | None
    ratio: float | None = None
    #: the p-value the verdict used: Holm-adjusted over the comparison's cells unless correction is "none"
    p: float | None = None
    threshold: float | None = None
    #: the cell's own Mann-Whitney p-value, before any adjustment
    p_raw: float | None = None
    #: the floor this cell was judged against
    floor: float | None = None

    @property
    def change(self) -> float | None:
        """Relative change in rows/s (positive: faster), after drift correction."""
        if self.ratio is None or self.ratio <= 0 or math.isinf(self.ratio):
            return None
        return 1 / self.ratio - 1


@dataclass(frozen=True)
class StatementChange:
    """One cell whose statements per op differ between the runs. The counts are exact and repeat
    run after run, so any difference is the code's, and more statements in total is a regression."""

    key: CellKey
    id: str
    base: dict[str, int]
    new: dict[str, int]

    @property
    def moved(self) -> list[tuple[str, int, int]]:
        """(kind, baseline count, new count) for every kind that moved, in the order of KINDS."""
        kinds = [*KINDS, *sorted((self.base.keys() | self.new.keys()) - set(KINDS))]
        return [(k, self.base.get(k, 0), self.new.get(k, 0)) for k in kinds
                if self.base.get(k, 0) != self.new.get(k, 0)]

    @property
    def total_base(self) -> int:
        return sum(self.base.values())

    @property
    def total_new(self) -> int:
        return sum(self.new.values())

    @property
    def more(self) -> bool:
        """More statements in total: a regression, whatever the measure judged."""
        return self.total_new > self.total_base

    @property
    def n_plus_one(self) -> bool:
        """A Test 4 loading strategy that sends more SELECTs than before: the relation it should load at once is
        now loaded (in part) object by object."""
        return bool(self.key.strategy) and self.new.get("SELECT", 0) > self.base.get("SELECT", 0)

    @property
    def verdict(self) -> str:
        if self.n_plus_one:
            return "more SELECTs: an N+1 regression"
        if self.more:
            return "more statements"
        return "fewer statements" if self.total_new < self.total_base else "same total"

    def describe(self) -> str:
        """e.g. ``SELECT 40→80 (+40)``, one entry per kind that moved."""
        return ", ".join(f"{k} {b}→{n} ({n - b:+d})" for k, b, n in self.moved)
