"""The ORM-overhead table: each arm's time over its control arm's (hand-written SQL on the same database)."""

from __future__ import annotations

from collections import defaultdict

from pytest_ormbench.workload.spec import MODELS
from pytest_ormbench.arms.registry import CONTROL_ARM, CONTROL_ARMS
from pytest_ormbench.results.stats import geometric_mean
from pytest_ormbench.results.report.load import Runs
from pytest_ormbench.results.report.table import Table
from pytest_ormbench.results.report.tables.scope import (OBJECT_OPS, arm_order, control_arms, control_label,
                                                         controls_named, figures, groups, is_async, labels,
                                                         shown_cells, whole, yardstick)


def overhead(runs: Runs) -> Table | None:
    """Each arm against its control arm: how many times longer it takes (geometric means).

    On SQLite every arm is priced against raw sqlite3; on PostgreSQL the sync arms against raw psycopg and
    the async ones against raw asyncpg (an "Against" column says which). An arm whose control arm did not
    run has no figure, and a note says so.
    """
    controls = control_arms(runs)
    every = {g: figures(runs, *g) for g in groups(runs)}
    cols = [g for g, per_arm in every.items() if any(c in per_arm for c in controls)]
    if not cols:
        return None
    names = labels(runs)
    several = len(controls) > 1
    header = ["Arm", *(["Against"] if several else []),
              *(f"Test {MODELS[m].test} {md}{' large' if t == 'large' else ''}" for m, md, t in cols)]
    rows = []
    unpriced: dict[str, list[str]] = defaultdict(list)
    in_run: set[str] = set()
    elsewhere: set[str] = set()  # priced against no control: the tables' ran on another machine
    for arm in arm_order(runs):
        if arm in CONTROL_ARMS:
            continue
        control = yardstick(runs, arm)
        if control is None:
            continue
        row, seen = [names[arm], *([control_label(names, control)] if several else [])], False
        for g in cols:
            value, own_run = arm_overhead(runs, arm, g, every[g])
            if own_run:
                in_run.add(arm)  # its own run's control is not the one the tables show
            if value is None and every[g].get(arm) and every[g].get(control):
                elsewhere.add(arm)
            seen = seen or value is not None
            row.append("—" if value is None else f"{value:.2f}×")
        if seen:
            rows.append(row)
        elif not any(control in per_arm for per_arm in every.values()):
            unpriced[control].append(names[arm])
    if not rows:
        return None  # the control arm alone: nothing to price
    if not several:
        notes = [f"Time relative to hand-written SQL on {controls[0]} (1.00× = as fast as the control; 3.00× = takes "
                 "three times as long), geometric mean over the object operations both ran."]
        title = ("ORM overhead over the raw sqlite3 control arm" if controls == [CONTROL_ARM]
                 else f"ORM overhead over {controls_named(names, controls)}")
    else:
        sync = [c for c in controls if not is_async(runs, c)]
        asyn = [c for c in controls if is_async(runs, c)]
        pairs = "; ".join(part for part in (
            f"sync arms against {' and '.join(control_label(names, c) for c in sync)}" if sync else "",
            f"async arms against {' and '.join(control_label(names, c) for c in asyn)}" if asyn else "") if part)
        notes = [f"Time relative to hand-written SQL on the same database, driven the way the arm drives it: "
                 f"{pairs} (Against: each arm's control; 1.00× = as fast as the control; 3.00× = takes three times "
                 "as long), geometric mean over the object operations both ran."]
        title = f"ORM overhead over {controls_named(names, controls)}"
    if in_run:
        which = ", ".join(names[a] for a in arm_order(runs) if a in in_run)
        notes.append("Each arm is priced against the control arm's cells timed in its own run where that run timed "
                     "them (a run times the control beside the arm unless --ormbench-control=off), so that a change "
                     "in the machine's speed between runs stays out of the ratio; for " + which + " those are not "
                     "the control figures the tables show, which come from a later run.")
    if elsewhere:
        notes.append("— for " + ", ".join(names[a] for a in arm_order(runs) if a in elsewhere) + ": its run timed no "
                     "control beside it, and the control figures the tables show come from another machine, so no "
                     "ratio is given.")
    for control, arms in unpriced.items():
        notes.append(f"No {control_label(names, control)} control arm in these results: no overhead figure for "
                     f"{', '.join(arms)} (run with --ormbench-arms including {control} to have one).")
    return Table(title, header, rows, notes, anchor="overhead", text_columns=(1,) if several else ())


def arm_overhead(runs: Runs, arm: str, group: tuple[str, str, str],
                 per_arm: dict[str, dict[str, float]] | None = None) -> tuple[float | None, bool]:
    """(the arm's time over its control's in ``group``, geometric mean over the object operations both ran, or
    None; whether the control cells it was priced against are its own run's rather than the ones the tables
    show). ``per_arm``: the group's ``figures``, when the caller has them."""
    control = yardstick(runs, arm)
    if control is None:
        return None, False
    per_arm = figures(runs, *group) if per_arm is None else per_arm
    shown = per_arm.get(control, {})
    same = _same_run_control(runs, arm, control, group)
    if same is None and whole(runs).across_machines(_sources(runs, group, {arm, control})):
        return None, False  # the tables' control ran on another machine than the arm: no ratio holds
    base = same or shown
    own_run = any(base[op] != shown.get(op) for op in base if op in per_arm.get(arm, {}))
    ops = [op for op in OBJECT_OPS if op in per_arm.get(arm, {}) and op in base]
    return geometric_mean([base[op] / per_arm[arm][op] for op in ops]), own_run


def _sources(runs: Runs, group: tuple[str, str, str], arms: set[str]) -> set[str]:
    """The files the timed cells of these arms in ``group`` come from."""
    return {c.source for k, c in shown_cells(runs)
            if (k.model, k.mode, k.table) == group and c.timed and k.arm in arms}


def _same_run_control(runs: Runs, arm: str, control: str, group: tuple[str, str, str]) -> dict[str, float] | None:
    """op -> the control arm's rows/s timed in the file the arm's cells of ``group`` come from, when that file
    timed the control beside the arm on every op the arm has (the tables may show a later run's control
    cells: the replaced ones are kept); None otherwise, and the arm is priced against the tables' figures."""
    shown = [c for k, c in shown_cells(runs) if (k.model, k.mode, k.table) == group and c.timed]
    mine = [c for c in shown if c.record.key.arm == arm and c.record.key.op in OBJECT_OPS]
    sources = {c.source for c in mine}
    if len(sources) != 1:
        return None
    source = sources.pop()
    keys = {c.key for c in shown}
    rates = {c.record.key.op: c.rows_per_s for c in (*shown, *whole(runs).superseded)
             if c.source == source and c.timed and c.record.key.arm == control and c.key in keys
             and c.rows_per_s is not None}
    if not all(c.record.key.op in rates for c in mine):
        return None
    return rates
