"""The statements tables: statements per operation by kind, ops x arms, and the arms far above their control."""

from __future__ import annotations

from collections import defaultdict

from pytest_ormbench.workload.spec import MODELS, OPS, OPS_BY_LETTER
from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.results.report.format import NO_FIGURE, fmt_statements
from pytest_ormbench.results.report.load import LoadedCell, Runs
from pytest_ormbench.results.report.table import Table
from pytest_ormbench.results.report.tables.scope import arm_order, labels, shown_cells, yardstick

STATEMENTS_LEGEND = ("Statements the operation sent in one untimed repetition: the total, then by kind when there is "
                     "more than one (102 (1B 100I 1C) = 1 BEGIN, 100 INSERT, 1 COMMIT); S SELECT, I INSERT, U UPDATE, "
                     "D DELETE, B BEGIN, C COMMIT, o other (PRAGMA, SAVEPOINT, ROLLBACK, ...).")
#: an arm flagged under the statements table sends more than this many times the control arm's statements
STATEMENTS_FLAG = 1.5


def statements(runs: Runs, model: str, mode: str, table: str) -> Table | None:
    """Statements per op, ops x arms (None: no record of the group counted them or said why not)."""
    cells = {(k.arm, k.op): c for k, c in shown_cells(runs) if (k.model, k.mode, k.table) == (model, mode, table)
             and (c.statements_per_op is not None or c.statements_note)}
    if not cells:
        return None
    names = labels(runs)
    arms = [a for a in arm_order(runs) if any(k[0] == a for k in cells)]
    letters = [op.letter for op in OPS if any(k[1] == op.letter for k in cells)]
    rows, flags, missing = [], [], False
    not_counted: dict[str, list[str]] = defaultdict(list)
    yardsticks = {a: yardstick(runs, a) for a in arms}
    for letter in letters:
        row = [f"{letter} {OPS_BY_LETTER[letter].title}"]
        for arm in arms:
            cell = cells.get((arm, letter))
            counts = cell.statements_per_op if cell else None
            if counts is not None:
                row.append(fmt_statements(counts))
            elif cell is not None and cell.statements_note:
                row.append("n/a")
                if names[arm] not in not_counted[cell.statements_note]:
                    not_counted[cell.statements_note].append(names[arm])
            else:
                row.append("—")
                missing = True
        rows.append(row)
        flags += _statement_flags(cells, arms, letter, names, yardsticks)
    notes = [STATEMENTS_LEGEND]
    notes += [f"n/a : not counted for {', '.join(arms_)} ({note})" for note, arms_ in not_counted.items()]
    if missing:
        notes.append(NO_FIGURE)
    notes += flags
    title = f"Statements per operation, by kind — {MODELS[model].title}, {mode}, {table} table"
    return Table(title, ["Operation", *(names[a] for a in arms)], rows, notes,
                 anchor=f"statements-{model}-{mode}-{table}")


def _statement_flags(cells: dict[tuple[str, str], LoadedCell], arms: list[str], letter: str,
                     names: dict[str, str], yardsticks: dict[str, str | None]) -> list[str]:
    """The arms sending more than STATEMENTS_FLAG times their control arm's statements for the same op: the
    hand-written SQL is the least an op needs, so many more is an ORM's extra round trips (N+1, say). One
    line per control arm (PostgreSQL has two: psycopg for the sync arms, asyncpg for the async ones)."""
    lines = []
    for control_arm in dict.fromkeys(y for y in yardsticks.values() if y):
        control = cells.get((control_arm, letter))
        base = control.statements_per_op if control else None
        if not base or not sum(base.values()):
            continue
        least = sum(base.values())
        over = []
        for arm in arms:
            counts = cells[(arm, letter)].statements_per_op if (arm, letter) in cells else None
            if (arm not in CONTROL_ARMS and yardsticks.get(arm) == control_arm and counts
                    and sum(counts.values()) > STATEMENTS_FLAG * least):
                total = sum(counts.values())
                over.append(f"{names[arm]} {total:,} ({total / least:.1f}×)")
        if over:
            lines.append(f"{letter} {OPS_BY_LETTER[letter].title}: more than {STATEMENTS_FLAG}× the statements of "
                         f"the {names[control_arm]} control ({least:,}): {', '.join(over)}.")
    return lines
