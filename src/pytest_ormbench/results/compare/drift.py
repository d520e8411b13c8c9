"""How far the machine moved between the two runs, seen by the control arms, and what is divided out of the
new run's times because of it (see the package's docstring: drift correction)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping

from pytest_ormbench.workload.cells import DEFAULT_DB, CellKey
from pytest_ormbench.arms.registry import CONTROL_ARM, CONTROL_ARMS  # their cells measure the machine's drift
from pytest_ormbench.results.stats import median
from pytest_ormbench.results.compare.baseline import Side

DRIFT_MODES = ("control", "off")
#: fewer common control cells than this in a (mode, table, place) group: no correction of its own there
MIN_CONTROL_CELLS = 3

#: (mode, table, place): where one drift correction applies
Group = tuple[str, str, str]


@dataclass
class Drift:
    """How far the machine moved between the runs, seen by the control arm(s) in one (mode, table, place) group."""

    mode: str
    table: str
    #: geometric mean of the control cells' median-time ratios, new / baseline (> 1: the machine was slower)
    shift: float
    #: the largest relative deviation of one control cell's ratio from ``shift``
    floor: float
    cells: int
    #: where the control cells ran (``sqlite``, ``postgresql``, ``postgresql@5ms``)
    place: str = DEFAULT_DB
    #: the control arms whose cells these are
    controls: tuple[str, ...] = (CONTROL_ARM,)


def controls_of(place: str) -> list[str]:
    """The control arms whose cells measure the drift at a place: those of its database."""
    db = place.partition("@")[0]
    return [arm for arm, on in CONTROL_ARMS.items() if on == db]


def drift_group(key: CellKey) -> Group:
    """(mode, table, place): where one drift correction applies."""
    return (key.mode, key.table, key.place)


def group_order(group: Group) -> tuple[bool, Group]:
    """SQLite's groups first, then the others, each in (mode, table, place) order."""
    return (group[2] != DEFAULT_DB, group)


def control_drift(base: Side, new: Side, common: Iterable[CellKey]) -> dict[Group, Drift]:
    """The control arms' shift and unevenness per (mode, table, place), where they have enough cells in both
    runs: sqlite3's on SQLite, psycopg's and asyncpg's together on PostgreSQL (each RTT of a sweep apart)."""
    ratios: dict[Group, list[float]] = defaultdict(list)
    arms: dict[Group, set[str]] = defaultdict(set)
    for key in common:
        group = drift_group(key)
        if key.arm not in controls_of(group[2]):
            continue
        mb, mn = median(base.cells[key].seconds), median(new.cells[key].seconds)
        if mb > 0 and mn > 0:
            ratios[group].append(mn / mb)
            arms[group].add(key.arm)
    out = {}
    for (mode, table, place), rs in ratios.items():
        if len(rs) < MIN_CONTROL_CELLS:
            continue
        shift = math.exp(sum(math.log(r) for r in rs) / len(rs))
        controls = tuple(a for a in controls_of(place) if a in arms[(mode, table, place)])
        out[(mode, table, place)] = Drift(mode, table, shift, max(max(r / shift, shift / r) - 1 for r in rs),
                                          len(rs), place, controls)
    return out


def drift_for(drifts: Mapping[Group, Drift], key: CellKey) -> Drift | None:
    """The correction a cell takes: its place's own, else the sqlite3 control's of its mode and table, else none."""
    return group_drift(drifts, drift_group(key))


def group_drift(drifts: Mapping[Group, Drift], group: Group) -> Drift | None:
    """The correction a (mode, table, place) group takes (see :func:`drift_for`)."""
    mode, table, _ = group
    return drifts.get(group) or drifts.get((mode, table, DEFAULT_DB))


def drift_warnings(common: list[CellKey], drifts: dict[Group, Drift]) -> list[str]:
    """One line per group whose control cells were too few for a correction of its own, saying what it took."""
    out = []
    for mode, table, place in sorted({drift_group(k) for k in common}, key=group_order):
        if (mode, table, place) in drifts:
            continue
        controls = controls_of(place)
        n = sum(1 for k in common if k.arm in controls and drift_group(k) == (mode, table, place))
        keep = f"keep --ormbench-arms={','.join(controls)} in the matrix" if controls else ""
        if place == DEFAULT_DB:
            out.append(f"{mode}/{table} cells: the control arm {CONTROL_ARM} has {n} cell(s) in both runs, fewer "
                       f"than {MIN_CONTROL_CELLS}: the machine's drift between the runs is not corrected there and the "
                       f"runs' probe floors are used; {keep}")
            continue
        who = (f"the control arm{'s' if len(controls) > 1 else ''} {', '.join(controls)} "
               f"{'have' if len(controls) > 1 else 'has'} {n} cell(s) in both runs, fewer than {MIN_CONTROL_CELLS}"
               if controls else "no control arm runs there")
        then = (f"the {CONTROL_ARM} control's correction of {mode}/{table} is used instead"
                if (mode, table, DEFAULT_DB) in drifts else
                "the machine's drift between the runs is not corrected there and the runs' probe floors are used")
        out.append(f"{mode}/{table} cells on {place}: {who}: {then}" + (f"; {keep}" if keep else ""))
    return out
