"""The rows/s tables: the overall geometric means, and each group's operations x arms; the grid they share
with the instructions tables."""

from __future__ import annotations

from typing import Callable

from pytest_ormbench.workload.spec import MODELS, OPS, OPS_BY_LETTER
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.results.report.format import NO_FIGURE, fmt_rate, fmt_ratio
from pytest_ormbench.results.report.load import Runs
from pytest_ormbench.results.report.table import Table
from pytest_ormbench.results.report.tables.scope import (OBJECT_OPS, arm_order, controls_named, figures, geomeans,
                                                         labels, present_controls, shown_cells, timed_groups)

#: the one line a report of instrumented cells only has where the rows/s tables would be
UNTIMED = ("No rows/s tables: every cell here ran under valgrind's callgrind (--ormbench-instructions), whose wall "
           "times are not the operations' speed; the tables give instructions per row and statements per operation.")
#: the note under a rows/s table some of whose figures were timed before the freeze discipline (issue 17)
OLD_DISCIPLINE = ("Timed with the old GC discipline ({arms}): a full collection right before the clock "
                  "(see the footnotes).")


def overall(runs: Runs, table: str) -> Table | None:
    present = [(m, md) for (m, md, t) in timed_groups(runs) if t == table]
    if not present:
        return None
    models = [m for m in MODELS if any(p[0] == m for p in present)]
    arms, names = arm_order(runs), labels(runs)
    gms = {(m, md): geomeans(figures(runs, m, md, table)) for m, md in present}
    header = ["Arm"]
    for m in models:
        for md in ("cold", "warm"):
            if (m, md) in gms:
                header.append(f"Test {MODELS[m].test} {md}")
    rows = []
    for arm in arms:
        row = [names[arm]]
        any_value = False
        for m in models:
            cold = gms.get((m, "cold"), {}).get(arm, (None, 0))[0]
            warm = gms.get((m, "warm"), {}).get(arm, (None, 0))[0]
            if (m, "cold") in gms:
                row.append(fmt_rate(cold))
            if (m, "warm") in gms:
                cell = fmt_rate(warm)
                if warm is not None and cold:
                    cell += f" ({fmt_ratio(warm / cold)})"
                row.append(cell)
            any_value = any_value or cold is not None or warm is not None
        if any_value:
            rows.append(row)
    title = "Overall: geometric means, rows/s" + (" — large table" if table == "large" else "")
    both = any((m, "cold") in gms and (m, "warm") in gms for m in models)
    notes = ["Geometric mean over the object operations (A–F, I–K) each arm ran"
             + ("; warm figures carry their ratio to cold in parentheses." if both else ".")]
    if any("—" in c for r in rows for c in r[1:]):
        notes.append(NO_FIGURE)
    notes.extend(old_discipline(runs, lambda k: k.table == table))
    return Table(title, header, rows, notes, anchor=f"overall-{table}")


def detail(runs: Runs, model: str, mode: str, table: str) -> Table:
    names = labels(runs)
    best = f"Best: the fastest arm other than {controls_named(names, present_controls(runs, model, mode, table))}."
    title = f"{MODELS[model].title} — {mode}, {table} table (rows/s, higher is better)"
    t = ops_table(runs, figures(runs, model, mode, table), fmt_rate, max, title, best,
                  anchor=f"detail-{model}-{mode}-{table}")
    t.notes.extend(old_discipline(runs, lambda k: (k.model, k.mode, k.table) == (model, mode, table)))
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


def ops_table(runs: Runs, per_arm: dict[str, dict[str, float]], fmt: Callable[[float | None], str],
              better: Callable[..., str], title: str, best_note: str, anchor: str) -> Table:
    """Operations x arms with a Best column and a Geometric Mean row; ``better`` is max or min of the arms."""
    arms = [a for a in arm_order(runs) if a in per_arm]
    names = labels(runs)
    letters = [op.letter for op in OPS if any(op.letter in per_arm[a] for a in arms)]
    # The control arm is hand-written SQL, the yardstick rather than a contender: Best names the best of
    # the others, as the reference's tables do (they have no raw column); with fewer than two contenders
    # there is nothing to rank and no Best column.
    contenders = [a for a in arms if a not in CONTROL_ARMS]
    ranked_best = len(contenders) >= 2
    header = ["Operation", *(names[a] for a in arms), *(["Best"] if ranked_best else [])]
    rows = []
    for letter in letters:
        vals = {a: per_arm[a].get(letter) for a in arms}
        ran = [a for a in contenders if vals[a] is not None]
        best = names[better(ran, key=lambda a: vals[a])] if ran else "—"  # type: ignore[arg-type,return-value]
        rows.append([f"{letter} {OPS_BY_LETTER[letter].title}", *(fmt(vals[a]) for a in arms),
                     *([best] if ranked_best else [])])
    gm = geomeans(per_arm)
    most = max((n for _, n in gm.values()), default=0)
    ranked = [a for a in contenders if gm[a][0] is not None]
    best_gm = better(ranked, key=lambda a: gm[a][0]) if ranked else None  # type: ignore[arg-type,return-value]
    gm_row = ["Geometric Mean"]
    notes = []
    for a in arms:
        value, n = gm[a]
        mark = ""
        if value is not None and n < most:
            mark = "¹"
            notes.append(f"¹ {names[a]}: geometric mean over {n} object operations, not {most}")
        gm_row.append(fmt(value) + mark)
    if ranked_best:
        gm_row.append(names[best_gm] if best_gm else "—")
    rows.append(gm_row)
    if any(letter not in OBJECT_OPS for letter in letters):
        notes.append("G and H (dicts, tuples) are not object operations and are left out of the geometric mean.")
    if any(c == "—" or c.startswith("—") for r in rows for c in r[1:len(arms) + 1]):
        notes.append(NO_FIGURE)
    if ranked_best and any(a in CONTROL_ARMS for a in arms):
        notes.append(best_note)
    return Table(title, header, rows, notes, anchor=anchor)
