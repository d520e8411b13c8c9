"""What one database's tables see: the runs scoped to it, its arms in order and their labels, its control arms
and which one prices each arm, its groups, and the figures per arm.

The tables of one database are built from the runs scoped to it (:meth:`Runs.at`); a whole, unscoped
``Runs`` shows its first database's cells (SQLite's when there are any), so that a caller that does not
know about databases never sees two databases' figures of one arm merged into one. Labels, footnotes,
the environment and the runs table speak for every database.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable

from pytest_ormbench.workload.spec import MODELS, OPS
from pytest_ormbench.workload.cells import DEFAULT_DB, CellKey
from pytest_ormbench.arms.registry import BUILTIN_ARMS, CONTROL_ARM, CONTROL_ARMS
from pytest_ormbench.results.stats import geometric_mean
from pytest_ormbench.results.report.load import LoadedCell, Runs

OBJECT_OPS = [op.letter for op in OPS if op.object_op]
#: which control arms drive their database asynchronously (the yardstick of the async arms there); a control
#: arm's own records say so too, and win
ASYNC_CONTROLS = {"sqlite3": False, "psycopg": False, "asyncpg": True, "mysqlclient": False, "asyncmy": True}


def scoped(runs: Runs) -> Runs:
    """The runs as the tables of one database see them: a scoped one as it is, a whole one cut to its first
    database reached directly (or, without such cells, that database's latency sweep)."""
    if runs.scope is not None:
        return runs
    dbs = runs.dbs()
    if not dbs or (len(dbs) == 1 and not any(c.record.key.rtt_ms is not None for c in runs.cells.values())):
        return runs  # one database reached directly: every cell (the report of old files is what it was)
    direct = runs.at(dbs[0])
    return direct if direct.cells else runs.at(dbs[0], sweep=True)


def shown_cells(runs: Runs) -> Iterable[tuple[CellKey, LoadedCell]]:
    """(key, cell) of the cells the runs' tables show (:func:`scoped`)."""
    return ((c.record.key, c) for c in scoped(runs).cells.values())


def whole(runs: Runs) -> Runs:
    """The runs of every database, a scoped one was cut from."""
    return runs.whole or runs


def db_of(runs: Runs) -> str:
    """The database the runs' tables show."""
    scope = scoped(runs).scope
    if scope is not None:
        return scope.partition("@")[0]
    return next((c.record.key.db for c in runs.cells.values()), DEFAULT_DB)


def _order(present: set[str]) -> list[str]:
    builtin = [e.name for e in BUILTIN_ARMS if e.name in present]
    return builtin + sorted(present - set(builtin))


def arm_order(runs: Runs) -> list[str]:
    return _order({k.arm for k, _ in shown_cells(runs)})


def all_arm_order(runs: Runs) -> list[str]:
    """Every arm of every database, in the report's order."""
    return _order({c.record.key.arm for c in whole(runs).cells.values()})


def labels(runs: Runs) -> dict[str, str]:
    """arm -> label, one for every database: an arm on several is named the same in each section (SQLite's
    cells name it when they disagree)."""
    cells = list(whole(runs).cells.values())
    ordered = [c for c in cells if c.record.key.db != DEFAULT_DB] + [c for c in cells if c.record.key.db == DEFAULT_DB]
    return {c.record.key.arm: c.record.env.arm_label or c.record.key.arm for c in ordered}


def control_arms(runs: Runs) -> list[str]:
    """The control arms of the runs' database: sqlite3 on SQLite; psycopg and asyncpg on PostgreSQL; mysqlclient
    and asyncmy on MariaDB."""
    db = db_of(runs)
    return [arm for arm, on in CONTROL_ARMS.items() if on == db]


def is_async(runs: Runs, arm: str) -> bool:
    """Whether the arm drives its database asynchronously: as its records say, else as ASYNC_CONTROLS does."""
    recorded = {c.record.env.is_async for k, c in shown_cells(runs) if k.arm == arm} - {None}
    if recorded:
        return True in recorded
    return ASYNC_CONTROLS.get(arm, False)


def yardstick(runs: Runs, arm: str) -> str | None:
    """The control arm an arm is priced against on the runs' database: the one control there is (sqlite3 on
    SQLite, for sync and async arms alike), or the control that drives the database the way the arm does
    (on PostgreSQL: psycopg for a sync arm, asyncpg for an async one). None: the database has no control arm."""
    controls = control_arms(runs)
    if len(controls) <= 1:
        return controls[0] if controls else None
    kind = is_async(runs, arm)
    return next((c for c in controls if is_async(runs, c) == kind), controls[0])


def control_label(names: dict[str, str], arm: str) -> str:
    """A control arm's label, from the records when it ran, else from the registry."""
    return names.get(arm) or next((e.label for e in BUILTIN_ARMS if e.name == arm), arm)


def controls_named(names: dict[str, str], controls: list[str]) -> str:
    """"the raw sqlite3 control arm", "the raw psycopg and raw asyncpg control arms"."""
    shown = " and ".join(control_label(names, c) for c in controls)
    return f"the {shown} control arm{'s' if len(controls) > 1 else ''}"


def present_controls(runs: Runs, model: str, mode: str, table: str) -> list[str]:
    """The database's control arms that have a cell in the group (all of them when none has: a note's words)."""
    present = {k.arm for k, _ in shown_cells(runs) if (k.model, k.mode, k.table) == (model, mode, table)}
    controls = control_arms(runs)
    return [c for c in controls if c in present] or controls or [CONTROL_ARM]


def groups(runs: Runs) -> list[tuple[str, str, str]]:
    """Tests 1-3's (model, mode, table) present, in report order (Test 4's cells have tables of their own)."""
    keys = {(k.model, k.mode, k.table) for k, _ in shown_cells(runs) if k.model in MODELS}
    order = lambda g: (["default", "large"].index(g[2]), list(MODELS).index(g[0]), ["cold", "warm"].index(g[1]))  # noqa: E731
    return sorted(keys, key=order)


def timed_groups(runs: Runs) -> list[tuple[str, str, str]]:
    """The groups with a rows/s figure: a group of instrumented cells only has none."""
    timed = {(k.model, k.mode, k.table) for k, c in shown_cells(runs) if c.timed}
    return [g for g in groups(runs) if g in timed]


def figures(runs: Runs, model: str, mode: str, table: str) -> dict[str, dict[str, float]]:
    """arm -> op -> rows/s, from timed records only."""
    return per_arm(runs, model, mode, table, lambda c: c.rows_per_s)


def instruction_figures(runs: Runs, model: str, mode: str, table: str) -> dict[str, dict[str, float]]:
    """arm -> op -> instructions per row, wherever a record counted them."""
    return per_arm(runs, model, mode, table, lambda c: c.instructions_per_row)


def per_arm(runs: Runs, model: str, mode: str, table: str,
            value: Callable[[LoadedCell], float | None]) -> dict[str, dict[str, float]]:
    """arm -> op -> ``value`` of the group's shown cells (cells whose value is None left out)."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for k, cell in shown_cells(runs):
        if (k.model, k.mode, k.table) == (model, mode, table):
            v = value(cell)
            if v is not None:
                out[k.arm][k.op] = v
    return out


def geomeans(by_arm: dict[str, dict[str, float]]) -> dict[str, tuple[float | None, int]]:
    """arm -> (geometric mean over the object operations it has, how many it has)."""
    return {arm: (geometric_mean([v for op, v in ops.items() if op in OBJECT_OPS]),
                  sum(1 for op in ops if op in OBJECT_OPS)) for arm, ops in by_arm.items()}
