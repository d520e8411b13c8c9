"""The run's matrix: every cell the options select, in collection order (the one place that spells it out).

Tests 1-3: arm x model x op x mode x table x database (x RTT). Test 4: arm x shape (x each strategy the arm
declares for it) x mode x database (x RTT), on the default table only (its sizes follow
``--ormbench-iterations``; the large table is Tests 1-3's). Control arms run on their own database only.
"""

from __future__ import annotations

from typing import Mapping

from pytest_ormbench.arms.registry import CONTROL_ARMS, ArmEntry
from pytest_ormbench.scheduling.config import RunConfig
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.workload.relational import DASHBOARD_STRATEGIES, SHAPES_BY_NAME, STRATEGY_KINDS
from pytest_ormbench.workload.spec import RELATIONAL

#: the table Test 4's cells name (their data has one size per ``--ormbench-iterations``)
RELATIONAL_TABLE = "default"


def shape_strategies(entry: ArmEntry | None, shape_name: str, wanted: tuple[str, ...]) -> list[str | None]:
    """The strategies of ``shape_name`` the arm runs and the options keep (``[None]``: the shape has no axis, or
    the arm declares none, in which case its one cell reports why)."""
    shape = SHAPES_BY_NAME[shape_name]
    if not shape.strategies:
        return [None]
    declared: Mapping[str, str] = entry.relational_declarations().strategies.get(shape_name, {}) if entry else {}
    if not declared:
        return [None] if not wanted else []
    kinds = DASHBOARD_STRATEGIES if shape.overlap else STRATEGY_KINDS
    return [name for name, kind in declared.items()
            if not wanted or name in wanted or (kind in kinds and kind in wanted)]


def run_cells(run: RunConfig, entries: Mapping[str, ArmEntry]) -> list[CellKey]:
    """Every cell of the run, in the order pytest collects them."""
    keys: list[CellKey] = []
    for db in run.dbs:
        for arm in run.arms:
            if CONTROL_ARMS.get(arm, db) != db:
                continue
            entry = entries.get(arm)
            for model in run.models:
                for mode in run.modes:
                    for rtt in (run.rtts if run.rtts and db != "sqlite" else (None,)):
                        if model == RELATIONAL.name:
                            for shape in run.shapes:
                                for strategy in shape_strategies(entry, shape, run.strategies):
                                    keys.append(CellKey(arm, model, SHAPES_BY_NAME[shape].code, mode, RELATIONAL_TABLE,
                                                        db, rtt, strategy))
                            continue
                        for op in run.ops:
                            for table in run.tables:
                                keys.append(CellKey(arm, model, op, mode, table, db, rtt))
    return keys
