"""The rows/s tables: the overall geometric means, and each group's operations x arms; the grid they share
with the instructions tables."""

from __future__ import annotations

from typing import Callable, Iterable

from pytest_ormbench.workload.spec import MODELS, OPS, OPS_BY_LETTER
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.results.report.format import NO_FIGURE, fmt_rate, fmt_ratio, fmt_spread
from pytest_ormbench.results.report.load import LoadedCell, Runs
from pytest_ormbench.results.report.table import Table
from pytest_ormbench.results.report.tables.noise import (CONTESTED, Figure, figure_grid, leader, object_means,
                                                         run_floors)
from pytest_ormbench.results.report.tables.scope import (OBJECT_OPS, all_arm_order, arm_order, controls_named,
                                                         labels, present_controls, shown_cells, timed_groups, whole)

#: the one line a report of instrumented cells only has where the rows/s tables would be
UNTIMED = ("No rows/s tables: every cell here ran under valgrind's callgrind (--ormbench-instructions), whose wall "
           "times are not the operations' speed; the tables give instructions per row and statements per operation.")
#: the note under a rows/s table some of whose figures were timed before the freeze discipline (issue 17)
OLD_DISCIPLINE = ("Timed with the old GC discipline ({arms}): a full collection right before the clock "
                  "(see the footnotes).")
#: the note under a rows/s table whose rows come from more than one machine
ACROSS_MACHINES = ("Rows from {count} machines (the Runs table's Machine column): {which}. Rows/s of different "
                   "machines are not comparable: no Best is named among them. The ORM-overhead table "
                   "compares them better: it prices each arm against the control timed beside it, which removes a "
                   "machine's overall speed (not how differently it runs different kinds of work).")
#: the legend of the ± beside a figure
SPREAD_NOTE = ("±: half the range of the rounds' rows/s over the figure (a geometric mean's: of the means of the "
               "rounds' lows and highs); no ± with one round.")
#: under a rows/s table with a contested Best (the rule: docs/reports.md, "Who leads")
CONTESTED_NOTE = ("contested: the leader's lead over the runner-up is within the noise, the larger of the runs' "
                  "drift floors and either cell's whole round range (twice its ±){floor}; no arm is named.")
#: the same under an instructions table
INSTRUCTIONS_CONTESTED = ("contested: the fewest instructions lead the runner-up by no more than 0.2 % (the counts' "
                          "repeatability) or either cell's round range; no arm is named.")


def overall(runs: Runs, table: str) -> Table | None:
    present = [(m, md) for (m, md, t) in timed_groups(runs) if t == table]
    if not present:
        return None
    models = [m for m in MODELS if any(p[0] == m for p in present)]
    arms, names = arm_order(runs), labels(runs)
    gms = {(m, md): object_means(figure_grid(runs, m, md, table)) for m, md in present}
    header = ["Arm"]
    for m in models:
        for md in ("cold", "warm"):
            if (m, md) in gms:
                header.append(f"Test {MODELS[m].test} {md}")

    def shown(fig: Figure | None) -> str:
        return fmt_rate(None) if fig is None else " ".join([fmt_rate(fig.value), fmt_spread(fig.spread)]).strip()

    rows = []
    for arm in arms:
        row = [names[arm]]
        any_value = False
        for m in models:
            cold = gms.get((m, "cold"), {}).get(arm)
            warm = gms.get((m, "warm"), {}).get(arm)
            if (m, "cold") in gms:
                row.append(shown(cold))
            if (m, "warm") in gms:
                cell = shown(warm)
                if warm is not None and cold is not None:
                    cell += f" ({fmt_ratio(warm.value / cold.value)})"
                row.append(cell)
            any_value = any_value or cold is not None or warm is not None
        if any_value:
            rows.append(row)
    title = "Overall: geometric means, rows/s" + (" — large table" if table == "large" else "")
    both = any((m, "cold") in gms and (m, "warm") in gms for m in models)
    notes = ["Geometric mean over the object operations (A–F, I–K) each arm ran"
             + ("; warm figures carry their ratio to cold in parentheses." if both else ".")]
    if any(f.spread is not None for g in gms.values() for f in g.values()):
        notes.append(SPREAD_NOTE)
    if any("—" in c for r in rows for c in r[1:]):
        notes.append(NO_FIGURE)
    notes.extend(old_discipline(runs, lambda k: k.table == table))
    notes.extend(machines_note(runs, lambda k: k.table == table))
    return Table(title, header, rows, notes, anchor=f"overall-{table}")


def detail(runs: Runs, model: str, mode: str, table: str) -> Table:
    names = labels(runs)
    best = (f"Best: the fastest arm other than {controls_named(names, present_controls(runs, model, mode, table))}, "
            "where its lead over the runner-up is beyond the noise.")
    title = f"{MODELS[model].title} — {mode}, {table} table (rows/s, higher is better)"
    t = ops_table(runs, figure_grid(runs, model, mode, table), fmt_rate, max, title, best,
                  anchor=f"detail-{model}-{mode}-{table}", spread=True)
    t.notes.extend(old_discipline(runs, lambda k: (k.model, k.mode, k.table) == (model, mode, table)))
    t.notes.extend(machines_note(runs, lambda k: (k.model, k.mode, k.table) == (model, mode, table)))
    return t


def old_discipline(runs: Runs, where: Callable[[CellKey], bool]) -> list[str]:
    """The note for the cells ``where`` picks whose figures were timed with the old GC discipline (none: [])."""
    names, order = labels(runs), {a: i for i, a in enumerate(arm_order(runs))}
    arms = {k.arm for k, c in shown_cells(runs) if where(k) and c.record.collected_before_clock}
    if not arms:
        return []
    every = {k.arm for k, c in shown_cells(runs) if where(k) and c.timed}
    which = "every arm" if arms >= every else ", ".join(names[a] for a in sorted(arms, key=order.__getitem__))
    return [OLD_DISCIPLINE.format(arms=which)]


def machines_note(runs: Runs, where: Callable[[CellKey], bool], template: str = ACROSS_MACHINES) -> list[str]:
    """The note for the timed cells ``where`` picks when they come from more than one machine (one: [])."""
    return machines_line(runs, [(k, c) for k, c in shown_cells(runs) if where(k)], template)


def machines_line(runs: Runs, cells: Iterable[tuple[CellKey, LoadedCell]],
                  template: str = ACROSS_MACHINES) -> list[str]:
    """``template`` filled with the machines these timed cells ran on and the arms of each, when they are more
    than one (one: []); ``{count}`` and ``{which}`` are its fields."""
    cells = [(k, c) for k, c in cells if c.timed]
    every = whole(runs)
    if not every.across_machines(c.source for _, c in cells):
        return []
    # every database's arms: the sweep tables are given the whole runs, whose arms the scoped order may lack
    names, order, short = labels(runs), {a: i for i, a in enumerate(all_arm_order(runs))}, every.machine_labels()
    arms_on: dict[str, set[str]] = {}
    for k, c in cells:
        arms_on.setdefault(short.get(every.machines.get(c.source, ""), "?"), set()).add(k.arm)

    def listed(arms: set[str]) -> str:
        return ", ".join(names.get(a, a) for a in sorted(arms, key=lambda a: order.get(a, len(order))))

    which = "; ".join(f"{m}: {listed(arms)}" for m, arms in sorted(arms_on.items()))
    return [template.format(count=len(arms_on), which=which)]


def ops_table(runs: Runs, per_arm: dict[str, dict[str, Figure]], fmt: Callable[[float | None], str],
              better: Callable[..., str], title: str, best_note: str, anchor: str, *, spread: bool = False) -> Table:
    """Operations x arms with a Best column and a Geometric Mean row; ``better`` is max or min of the arms.

    Best names an arm only where its lead over the runner-up is beyond the noise (``noise.leader``), and
    reads "contested" otherwise; ``spread`` writes each figure's ± beside it."""
    arms = [a for a in arm_order(runs) if a in per_arm]
    names = labels(runs)
    letters = [op.letter for op in OPS if any(op.letter in per_arm[a] for a in arms)]
    # The control arm is hand-written SQL, the yardstick rather than a contender: Best names the best of
    # the others, as the reference's tables do (they have no raw column); with fewer than two contenders
    # there is nothing to rank and no Best column.
    contenders = [a for a in arms if a not in CONTROL_ARMS]
    ranked_best = len(contenders) >= 2
    header = ["Operation", *(names[a] for a in arms), *(["Best"] if ranked_best else [])]

    def shown(fig: Figure | None, mark: str = "") -> str:
        if fig is None:
            return fmt(None)
        return fmt(fig.value) + mark + (f" {fmt_spread(fig.spread)}" if spread and fig.spread is not None else "")

    def best(figs: dict[str, Figure]) -> str:
        arm, clear = leader(runs, {a: figs[a] for a in contenders if a in figs}, better)
        return "—" if arm is None else names[arm] if clear else CONTESTED

    rows = []
    for letter in letters:
        vals = {a: per_arm[a][letter] for a in arms if letter in per_arm[a]}
        rows.append([f"{letter} {OPS_BY_LETTER[letter].title}", *(shown(vals.get(a)) for a in arms),
                     *([best(vals)] if ranked_best else [])])
    gm = object_means(per_arm)
    counts = {a: sum(1 for op in per_arm[a] if op in OBJECT_OPS) for a in arms}
    most = max(counts.values(), default=0)
    gm_row = ["Geometric Mean"]
    notes = []
    for a in arms:
        mark = ""
        if a in gm and counts[a] < most:
            mark = "¹"
            notes.append(f"¹ {names[a]}: geometric mean over {counts[a]} object operations, not {most}")
        gm_row.append(shown(gm.get(a), mark))
    if ranked_best:
        gm_row.append(best(gm))
    rows.append(gm_row)
    contested = ranked_best and any(r[-1] == CONTESTED for r in rows)
    if any(letter not in OBJECT_OPS for letter in letters):
        notes.append("G and H (dicts, tuples) are not object operations and are left out of the geometric mean.")
    if any(c == "—" or c.startswith("—") for r in rows for c in r[1:len(arms) + 1]):
        notes.append(NO_FIGURE)
    if spread and any(f.spread is not None for ops in per_arm.values() for f in ops.values()):
        notes.append(SPREAD_NOTE)
    if ranked_best and any(a in CONTROL_ARMS for a in arms):
        notes.append(best_note)
    if contested:
        notes.append(INSTRUCTIONS_CONTESTED if any(f.instructions for ops in per_arm.values() for f in ops.values())
                     else CONTESTED_NOTE.format(floor=_floor_text(runs, per_arm)))
    return Table(title, header, rows, notes, anchor=anchor)


def _floor_text(runs: Runs, per_arm: dict[str, dict[str, Figure]]) -> str:
    """"drift floor 12%" (the largest of the runs behind the table), or "" without a probe."""
    floors = [f for f in run_floors(runs, {s for ops in per_arm.values() for f in ops.values() for s in f.sources})
              if f is not None]
    return f"; the noise here includes a drift floor of up to {max(floors):.0%}" if floors else ""
