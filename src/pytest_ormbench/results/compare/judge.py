"""The comparison itself: every cell's verdict on the measure judged, after drift correction and Holm's
adjustment, and the cells whose statements changed (``compare`` gives a ``Comparison``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.workload.measures import INSTRUCTIONS, WALL
from pytest_ormbench.results.stats import INSTRUCTIONS_NOISE, holm, mann_whitney, median, spread
from pytest_ormbench.results.compare.model import (CATEGORIES, GONE, IMPROVEMENT, NEW, NOISE, PLURAL, REGRESSION,
                                                   UNCHANGED, CellResult, CompareError, StatementChange)
from pytest_ormbench.results.compare.thresholds import Thresholds, check_measure, default_threshold_pct
from pytest_ormbench.results.compare.baseline import Side
from pytest_ormbench.results.compare.drift import DRIFT_MODES, Drift, Group, control_drift, drift_for, drift_warnings
from pytest_ormbench.results.compare.checks import (check_comparable, matrix_diff, require_instructions,
                                                    require_timed, run_warnings)

#: the floor of an instructions comparison: the same code on the same data repeated its counts between
#: runs to within 0.1 %; doubled for margin (a cell whose own rounds spread wider gets that spread)
INSTRUCTIONS_FLOOR = INSTRUCTIONS_NOISE  # the one figure, in results/stats.py
DEFAULT_ALPHA = 0.05
CORRECTIONS = ("holm", "none")


@dataclass
class Comparison:
    base: Side
    new: Side
    thresholds: Thresholds
    alpha: float
    floor: float
    cells: list[CellResult]
    warnings: list[str]
    correction: str = "holm"
    #: per (mode, table, place): the control arms' view of the drift there; empty when nothing was corrected
    drifts: dict[Group, Drift] = field(default_factory=dict)
    #: what the verdicts judged: ``wall_seconds`` or ``instructions``
    measure: str = WALL
    #: cells whose statements per op differ, more statements first
    statement_changes: list[StatementChange] = field(default_factory=list)

    def of(self, category: str) -> list[CellResult]:
        return [c for c in self.cells if c.category == category]

    @property
    def regressions(self) -> list[CellResult]:
        return self.of(REGRESSION)

    @property
    def improvements(self) -> list[CellResult]:
        return self.of(IMPROVEMENT)

    @property
    def counts(self) -> dict[str, int]:
        return {cat: len(self.of(cat)) for cat in CATEGORIES}

    @property
    def statement_regressions(self) -> list[StatementChange]:
        return [c for c in self.statement_changes if c.more]

    @property
    def exit_code(self) -> int:
        """What a CI step should exit with: 1 when any cell regressed, or sends more statements."""
        return 1 if self.regressions or self.statement_regressions else 0

    def statement_headline(self, bold: bool = False) -> str:
        """e.g. "1 cell sends more statements, 2 fewer"; empty when no cell's statements moved."""
        more = len(self.statement_regressions)
        fewer = sum(c.total_new < c.total_base for c in self.statement_changes)
        same = len(self.statement_changes) - more - fewer
        parts = []
        if more:
            first = f"{more} cell{' sends' if more == 1 else 's send'} more statements"
            parts.append(f"**{first}**" if bold else first)
        if fewer:
            parts.append(f"{fewer} fewer" if more else
                         f"{fewer} cell{' sends' if fewer == 1 else 's send'} fewer statements")
        if same:
            parts.append(f"{same} cell{'' if same == 1 else 's'} the same number in other kinds")
        return ", ".join(parts)

    def headline(self, bold: bool = False) -> str:
        counts = self.counts
        n = counts[REGRESSION]
        first = f"{n} {'regression' if n == 1 else 'regressions'}" if n else "No regressions"
        if bold and n:
            first = f"**{first}**"
        rest = [f"{counts[c]} {c if counts[c] == 1 else PLURAL.get(c, c)}"
                for c in CATEGORIES[1:] if counts[c]]
        return ", ".join([first, *rest])


def classify(ratio: float, p: float | None, alpha: float, threshold: float, floor: float) -> str:
    """The verdict for a cell present on both sides (see the package docstring); ``p`` None: no test
    was made (instruction counts), the floor alone separates noise from change."""
    # the floor on a log scale: x10 slower and x10 faster are the same distance from "unchanged"
    distance = math.inf if ratio <= 0 or math.isinf(ratio) else abs(math.log(ratio))
    if (p is not None and p >= alpha) or distance <= math.log1p(floor):
        return NOISE
    if ratio >= 1 + threshold:
        return REGRESSION
    if ratio <= 1 / (1 + threshold):
        return IMPROVEMENT
    return UNCHANGED


def _in_order(keys: Iterable[CellKey]) -> list[CellKey]:
    """The keys by arm, model, op, mode, table, then database and RTT (a cell on SQLite before its server's)."""
    return sorted(keys, key=CellKey.astuple)


def compare(base: Side, new: Side, thresholds: Thresholds | None = None, alpha: float = DEFAULT_ALPHA,
            correction: str = "holm", drift: str = "control", measure: str = WALL) -> Comparison:
    """Every cell of either side with its verdict on ``measure``, the cells whose statements changed, plus
    warnings about what may distort the verdicts."""
    check_measure(measure)
    thresholds = thresholds or Thresholds(default=default_threshold_pct(measure) / 100)
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise CompareError(f"alpha must be between 0 and 1, got {alpha!r}")
    if correction not in CORRECTIONS:
        raise CompareError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    if drift not in DRIFT_MODES:
        raise CompareError(f"drift correction must be one of {', '.join(DRIFT_MODES)}, got {drift!r}")
    if measure == WALL:
        require_timed(base, "the baseline was run")
        require_timed(new, "the new run was made")
    both = _in_order(base.cells.keys() & new.cells.keys())
    if not both:
        raise CompareError(f"no cell in common: the runs measured different matrices ({matrix_diff(base, new)})")
    check_comparable(base, new, both)
    # a cell that ran under callgrind on either side has no time to judge
    untimed = ({k for s in (base, new) for k, c in s.cells.items() if c.record.instrumented} if measure == WALL
               else set())
    common = [k for k in both if k not in untimed]
    if not common:
        raise CompareError("every cell in common ran under --ormbench-instructions in one of the runs: their times "
                           "are not speeds; compare with --ormbench-compare-measure=instructions")
    keys = _in_order((base.cells.keys() | new.cells.keys()) - untimed)
    floor = max(base.floor or 0.0, new.floor or 0.0)
    drifts: dict[Group, Drift] = {}
    if measure == INSTRUCTIONS:
        require_instructions(base, "baseline", common)
        require_instructions(new, "new run", common)
        floor = INSTRUCTIONS_FLOOR
        results = [_instructions_result(key, base, new, thresholds) for key in keys]
    elif measure == WALL:
        drifts = control_drift(base, new, common) if drift == "control" else {}
        results = [_wall_result(key, base, new, thresholds, drifts, floor) for key in keys]
    else:  # a name added to COMPARABLE without its verdict here: never judge it by wall time under its name
        raise CompareError(f"no verdict for the measure {measure!r} yet (results/compare/judge.py judges "
                           f"{WALL} and {INSTRUCTIONS})")
    tested = [r for r in results if r.p_raw is not None]
    if correction == "holm":
        for r, adjusted in zip(tested, holm([r.p_raw for r in tested])):  # type: ignore[misc]
            r.p = adjusted
    for r in tested:
        r.category = classify(r.ratio, r.p, alpha, r.threshold, r.floor)  # type: ignore[arg-type]
    results.sort(key=lambda r: (CATEGORIES.index(r.category), r.id))
    warnings = run_warnings(base, new, common, thresholds, alpha, len(tested) if correction == "holm" else 1, measure)
    if drift == "control" and measure == WALL:
        warnings += drift_warnings(common, drifts)
    if untimed:
        warnings.append(f"{len(untimed)} cell(s) ran under --ormbench-instructions in one of the runs: their times "
                        "are not speeds, so they are left out; compare them with "
                        "--ormbench-compare-measure=instructions")
    changes, not_compared = statement_changes(base, new, both)
    if not_compared:
        warnings.append(not_compared)
    return Comparison(base, new, thresholds, alpha, floor, results, warnings, correction, drifts, measure, changes)


def _wall_result(key: CellKey, base: Side, new: Side, thresholds: Thresholds,
                 drifts: Mapping[Group, Drift], floor: float) -> CellResult:
    """One cell judged by time: drift-corrected ratio and Mann-Whitney p (the verdict waits for Holm)."""
    b, n = base.cells.get(key), new.cells.get(key)
    record = (b or n).record  # type: ignore[union-attr]
    if b is None or n is None:
        return CellResult(key, record.id, NEW if b is None else GONE, b, n)
    d = drift_for(drifts, key)
    new_seconds = [t / d.shift for t in n.seconds] if d else n.seconds
    mb, mn = median(b.seconds), median(new_seconds)
    ratio = mn / mb if mb > 0 else (math.inf if mn > 0 else 1.0)
    _, p = mann_whitney(new_seconds, b.seconds)
    return CellResult(key, record.id, "", b, n, ratio, p, thresholds.for_cell(record), p, d.floor if d else floor)


def _instructions_result(key: CellKey, base: Side, new: Side, thresholds: Thresholds) -> CellResult:
    """One cell judged by instructions: no test and no drift, the counts' repeatability as the floor."""
    b, n = base.cells.get(key), new.cells.get(key)
    record = (b or n).record  # type: ignore[union-attr]
    if b is None or n is None:
        return CellResult(key, record.id, NEW if b is None else GONE, b, n)
    bi, ni = b.record.instructions, n.record.instructions
    mb, mn = median(bi), median(ni)
    ratio = mn / mb if mb > 0 else (math.inf if mn > 0 else 1.0)
    floor = max(INSTRUCTIONS_FLOOR, spread(bi), spread(ni))
    threshold = thresholds.for_cell(record)
    return CellResult(key, record.id, classify(ratio, None, 1.0, threshold, floor), b, n, ratio, None, threshold,
                      None, floor)


def statement_changes(base: Side, new: Side, common: Iterable[CellKey]) -> tuple[list[StatementChange], str]:
    """The cells whose statements per op differ, more statements first, and a warning (or "") for the
    cells only one side counted statements for."""
    changes, lacking = [], {"baseline": [], "new run": []}  # type: ignore[var-annotated]
    notes: set[str] = set()
    for key in common:
        b, n = base.cells[key].record, new.cells[key].record
        sb, sn = b.statements_per_op, n.statements_per_op
        if sb is None or sn is None:
            if sb is not None or sn is not None:
                missing = b if sb is None else n
                lacking["baseline" if sb is None else "new run"].append(missing.id)
                if missing.statements_note:
                    notes.add(missing.statements_note)
            continue
        change = StatementChange(key, b.id, sb, sn)
        if change.moved:
            changes.append(change)
    changes.sort(key=lambda c: (not c.more, c.id))
    count = sum(len(v) for v in lacking.values())
    if not count:
        return changes, ""
    which = "; ".join(f"the {label} has no counts for {len(ids)} (e.g. {ids[0]})" for label, ids in lacking.items()
                      if ids)
    why = ("; ".join(sorted(notes)) if notes else
           "that run was written before pytest-ormbench counted statements")
    return changes, f"statements were not compared for {count} cell(s) that only one run counted: {which}: {why}"
