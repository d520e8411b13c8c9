"""A comparison as text: a terminal table (``render_text``) or a pull-request comment (``render_markdown``)."""

from __future__ import annotations

import math

from pytest_ormbench.workload.cells import DEFAULT_DB
from pytest_ormbench.workload.measures import INSTRUCTIONS, WALL
from pytest_ormbench.arms.registry import CONTROL_ARM
from pytest_ormbench.results.report.format import fmt_pct, fmt_rate, machine_text, md_cell
from pytest_ormbench.results.report.load import LoadedCell
from pytest_ormbench.results.report.table import Table, markdown_table, text_table
from pytest_ormbench.results.compare.model import CATEGORIES, IMPROVEMENT, REGRESSION, CellResult, StatementChange
from pytest_ormbench.results.compare.baseline import Side
from pytest_ormbench.results.compare.drift import Drift, drift_group, group_drift, group_order
from pytest_ormbench.results.compare.checks import joined, versions
from pytest_ormbench.results.compare.judge import INSTRUCTIONS_FLOOR, Comparison

#: "median time" is new / baseline after drift correction, the figure the threshold and the floor apply to
#: (×1.10 is 10 % slower); "rows/s change" is the same figure as a change in rows/s
HEADER = ["cell", "baseline rows/s", "new rows/s", "rows/s change", "median time", "p", "threshold", "floor"]
#: by instructions: "change" is new / baseline median instructions (×1.020 is 2 % more work); no p, no test made
INSTRUCTIONS_HEADER = ["cell", "baseline instr/row", "new instr/row", "change", "threshold", "floor"]
STATEMENTS_HEADER = ["cell", "kinds that moved (per op)", "total", "verdict"]


def _p(p: float | None) -> str:
    return "—" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}")


def _row(r: CellResult, verdict: bool = True) -> list[str]:
    row = [r.id, fmt_rate(r.base.rows_per_s) if r.base else "—", fmt_rate(r.new.rows_per_s) if r.new else "—",
           fmt_pct(r.change, signed=True), "—" if r.ratio is None else f"×{r.ratio:.2f}", _p(r.p),
           fmt_pct(r.threshold), fmt_pct(r.floor)]
    return row + [r.category] if verdict else row


def _instr(cell: LoadedCell | None) -> str:
    return fmt_rate(cell.record.instructions_per_row if cell else None)


def _instructions_row(r: CellResult, verdict: bool = True) -> list[str]:
    ratio = "—" if r.ratio is None else ("×∞" if math.isinf(r.ratio) else f"×{r.ratio:.3f}")
    row = [r.id, _instr(r.base), _instr(r.new), ratio, fmt_pct(r.threshold), fmt_pct(r.floor)]
    return row + [r.category] if verdict else row


def _table(title: str, rows: list[CellResult], verdict: bool = True, measure: str = WALL) -> Table:
    header, make = (INSTRUCTIONS_HEADER, _instructions_row) if measure == INSTRUCTIONS else (HEADER, _row)
    return Table(title, header + (["verdict"] if verdict else []), [make(r, verdict) for r in rows],
                 text_columns=(len(header),) if verdict else ())


def _statements_table(title: str, changes: list[StatementChange]) -> Table:
    rows = [[c.id, c.describe(), f"{c.total_base}→{c.total_new} ({c.total_new - c.total_base:+d})", c.verdict]
            for c in changes]
    return Table(title, STATEMENTS_HEADER, rows, text_columns=(1, 3))


def _drift_line(d: Drift) -> str:
    if d.place == DEFAULT_DB and d.controls == (CONTROL_ARM,):
        return (f"{d.mode}/{d.table}: the control arm ran ×{d.shift:.2f} the baseline's time ({d.cells} cells), "
                f"divided out of the new run; floor {fmt_pct(d.floor)} (its cells' largest deviation from that)")
    arms = f"the control arm{'s' if len(d.controls) > 1 else ''} {', '.join(d.controls)}"
    return (f"{d.mode}/{d.table} on {d.place}: {arms} ran ×{d.shift:.2f} the baseline's time ({d.cells} cells), "
            f"divided out of the new run's cells there; floor {fmt_pct(d.floor)} (their largest deviation from that)")


def _floor_line(cmp: Comparison) -> str:
    if cmp.measure == INSTRUCTIONS:
        return (f"floor: {fmt_pct(INSTRUCTIONS_FLOOR)} (instruction counts repeat between runs to within 0.1 %, "
                "doubled for margin) or the wider spread of a cell's own rounds (max/min − 1) on either side, "
                "whichever is larger; no drift correction: counts do not depend on the machine's speed")

    def one(side: Side) -> str:
        return "not recorded" if side.floor is None else fmt_pct(side.floor)
    runs = f"baseline {one(cmp.base)}, new {one(cmp.new)}"
    groups = {drift_group(c.key) for c in cmp.cells if c.p_raw is not None}
    corrected = [cmp.drifts[g] for g in sorted(cmp.drifts, key=group_order)]
    lines = [f"drift correction: {_drift_line(d)}" for d in corrected]
    borrowed = sorted(g for g in groups if g not in cmp.drifts and (g[0], g[1], DEFAULT_DB) in cmp.drifts)
    if borrowed:
        lines.append("drift correction of " + ", ".join(f"{m}/{t} on {p}" for m, t, p in borrowed)
                     + f": no control cells of their own there, so the {CONTROL_ARM} control's correction of the same "
                     "mode and table")
    if corrected and all(group_drift(cmp.drifts, g) for g in groups):
        lines.append(f"runs' own probe floors ({runs}) recorded; the control arm's floor is used instead")
        return "; ".join(lines)
    if cmp.base.floor is None and cmp.new.floor is None:
        lines.append("drift floor" + (" of the uncorrected cells" if corrected else "")
                     + ": recorded by neither run, taken as 0")
    else:
        lines.append(f"drift floor{' of the uncorrected cells' if corrected else ''} {fmt_pct(cmp.floor)} "
                     f"(the larger of the runs' probe floors: {runs}): smaller differences are within noise")
    return "; ".join(lines)


def _settings_line(cmp: Comparison) -> str:
    if cmp.measure == INSTRUCTIONS:
        judged = sum(c.ratio is not None for c in cmp.cells)
        return (f"judged by instructions: median of each cell's rounds, new over baseline, {judged} cells, no "
                f"significance test; thresholds: {cmp.thresholds.describe()}")
    tested = sum(c.p_raw is not None for c in cmp.cells)
    level = (f"alpha {cmp.alpha:g} for the whole comparison (Holm over {tested} cells)" if cmp.correction == "holm"
             else f"alpha {cmp.alpha:g} per cell (no correction for the {tested} cells tested)")
    return f"{level}; thresholds: {cmp.thresholds.describe()}"


def _counts_line(cmp: Comparison, bold: bool = False) -> str:
    """The headline, the cells it covers, and the statement changes when there are any."""
    statements = cmp.statement_headline(bold)
    return f"{cmp.headline(bold)} ({len(cmp.cells)} cells)" + (f"; {statements}" if statements else "")


def render_text(cmp: Comparison) -> str:
    """The comparison as a terminal table, sorted by verdict then cell id; statement changes after it."""
    if cmp.measure == INSTRUCTIONS:
        title = ("instructions per row per cell (change: new/baseline median instructions, above 1 is more work; "
                 "counted by callgrind)")
        what = "comparison by instructions"
    else:
        title = ("rows/s per cell (change: positive is faster; median time: new/baseline, drift-corrected; "
                 "p: Mann-Whitney U, two-sided, Holm-adjusted unless stated)")
        what = "comparison"
    lines = [f"pytest-ormbench {what}: baseline {cmp.base.source} ({cmp.base.datetime or 'date unknown'}) "
             f"vs new {cmp.new.source} ({cmp.new.datetime or 'date unknown'})",
             text_table(_table(title, cmp.cells, measure=cmp.measure))]
    if cmp.statement_changes:
        lines += ["", text_table(_statements_table("statement changes (statements per op, exact counts; more in "
                                                   "total is a regression)", cmp.statement_changes))]
    lines += ["",
              _counts_line(cmp),
              _settings_line(cmp),
              _floor_line(cmp)]
    lines += [f"warning: {w}" for w in cmp.warnings]
    return "\n".join(lines) + "\n"


def _side_facts(side: Side) -> dict[str, str]:
    recs = [c.record for c in side.cells.values()]
    found = versions(side, side.cells)
    rounds = sorted({len(c.seconds) for c in side.cells.values()})
    packages = sorted((d, v) for d, v in found.items() if d not in ("Python", "SQLite"))
    return {
        "source": side.source,
        "date": side.datetime or "unknown",
        "node": str(side.machine.get("node") or "unknown"),
        "CPU": machine_text(side.machine) if side.machine else "unknown",
        "Python": joined(found.get("Python")) if found.get("Python") else "unknown",
        "SQLite": joined(found.get("SQLite")) if found.get("SQLite") else "unknown",
        "packages": ", ".join(f"{d} {joined(v)}" for d, v in packages) or "none recorded",
        "cells": str(len(recs)),
        "rounds per cell": "—" if not rounds else "–".join(dict.fromkeys(str(r) for r in (rounds[0], rounds[-1]))),
        "schedule": side.schedule or "not recorded",
        "drift floor": "not recorded" if side.floor is None else fmt_pct(side.floor),
        "instructions": "counted (callgrind)" if any(r.instructions for r in recs) else "not counted",
        "statements": "counted" if any(r.statements for r in recs) else "not counted",
    }


def render_markdown(cmp: Comparison) -> str:
    """The comparison for a pull-request comment: the verdicts that matter first, the rest folded away.

    The heading names the measure judged, so that two comparisons of one run (instructions for the
    verdict, wall time as advice) can be posted one after the other."""
    if cmp.measure == INSTRUCTIONS:
        measure = "instructions"
        explain = ("Figures are instructions per row of the median round, counted by callgrind (lower is better); "
                   "change is new over baseline median instructions (the threshold and the floor apply to it); ")
    else:
        measure = "wall time"
        explain = ("Figures are rows/s as measured (higher is better); median time is new over baseline after drift "
                   "correction (the threshold and the floor apply to it, and the change is the same figure in rows/s); "
                   "p is the two-sided Mann–Whitney U test on the round times; ")
    parts = [f"### pytest-ormbench: comparison with the baseline ({measure})", "",
             f"{_counts_line(cmp, bold=True)}."
             + (f" {len(cmp.warnings)} warning(s) at the end." if cmp.warnings else ""), "",
             f"{explain}{_settings_line(cmp)}; {_floor_line(cmp)}.", ""]
    if cmp.statement_changes:
        parts += ["#### Statement changes", "",
                  "Statements per op, counted exactly (the same code on the same data sends the same statements); "
                  "more statements in total fail the comparison.", "",
                  markdown_table(_statements_table("", cmp.statement_changes), heading=""), ""]
    for category, title in ((REGRESSION, "Regressions"), (IMPROVEMENT, "Improvements")):
        rows = cmp.of(category)
        if rows:
            parts += [f"#### {title}", "", markdown_table(_table(title, rows, verdict=False, measure=cmp.measure),
                                                          heading=""), ""]
    rest = [c for c in cmp.cells if c.category not in (REGRESSION, IMPROVEMENT)]
    if rest:
        summary = ", ".join(f"{len(cmp.of(c))} {c}" for c in CATEGORIES[2:] if cmp.of(c))
        parts += [f"<details><summary>{len(rest)} other cell{'s' if len(rest) > 1 else ''}: {summary}</summary>", "",
                  markdown_table(_table("", rest, measure=cmp.measure), heading=""), "", "</details>", ""]
    base, new = _side_facts(cmp.base), _side_facts(cmp.new)
    parts += ["#### The two runs", "", "| | baseline | new |", "| --- | --- | --- |"]
    parts += [f"| {k} | {md_cell(base[k])} | {md_cell(new[k])} |" for k in base]
    if cmp.warnings:
        parts += ["", "#### Warnings", "", *(f"- {w}" for w in cmp.warnings)]
    return "\n".join(parts).rstrip() + "\n"
