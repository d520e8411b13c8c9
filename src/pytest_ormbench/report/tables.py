"""The report's tables as data: overall, detail, instructions, statements, ORM overhead, memory, footnotes,
environment."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Callable

from ..contract import MODELS, OPS, OPS_BY_LETTER
from ..record import CellRecord
from ..registry import BUILTIN_ARMS, CONTROL_ARM
from ..stats import geometric_mean
from .load import Cell, Runs

OBJECT_OPS = [op.letter for op in OPS if op.object_op]
NO_FIGURE = "— : no verified figure (not supported by the arm, or not run; see footnotes)."
#: the one line a report of instrumented cells only has where the rows/s tables would be
UNTIMED = ("No rows/s tables: every cell here ran under valgrind's callgrind (--ormbench-instructions), whose wall "
           "times are not the operations' speed; the tables give instructions per row and statements per operation.")
#: statement kinds (``instruments.statements.KINDS``) as the statements table writes them, in a transaction's order
KIND_LETTERS = {"BEGIN": "B", "SELECT": "S", "INSERT": "I", "UPDATE": "U", "DELETE": "D", "COMMIT": "C", "other": "o"}
STATEMENTS_LEGEND = ("Statements the operation sent in one untimed repetition: the total, then by kind when there is "
                     "more than one (102 (1B 100I 1C) = 1 BEGIN, 100 INSERT, 1 COMMIT); S SELECT, I INSERT, U UPDATE, "
                     "D DELETE, B BEGIN, C COMMIT, o other (PRAGMA, SAVEPOINT, ROLLBACK, ...).")
#: an arm flagged under the statements table sends more than this many times the control arm's statements
STATEMENTS_FLAG = 1.5
#: two arms' rows/s must differ by more than this before their instructions may contradict them (noise)
DISAGREE_MARGIN = 0.10
#: and their instructions per row by more than this (closer, it is the same work: counts repeat to ~0.1 %)
DISAGREE_INSTRUCTIONS_MARGIN = 0.01
#: disagreeing pairs named per operation; the rest are counted
DISAGREE_PAIRS = 3


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    anchor: str = ""
    #: columns of text, aligned left (the first always is; the others default to figures, aligned right)
    text_columns: tuple[int, ...] = ()


def fmt_rate(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def fmt_count(value: float | None) -> str:
    """A large count in three significant figures: 950, 12.3 k, 1.05 M (instructions per row)."""
    if value is None:
        return "—"
    for scale, unit in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if value >= scale * 0.9995:
            break
    else:
        return f"{value:.0f}" if value >= 100 else f"{value:.3g}"
    scaled = value / scale
    text = f"{scaled:.2f}" if scaled < 9.995 else f"{scaled:.1f}" if scaled < 99.95 else f"{scaled:.0f}"
    return text + unit


def fmt_statements(counts: dict[str, int]) -> str:
    """Total statements, by kind when there is more than one: "1 S", "102 (1B 100I 1C)"."""
    present = [(KIND_LETTERS[k], counts[k]) for k in KIND_LETTERS if counts.get(k)]
    total = sum(counts.values())
    if len(present) == 1:
        return f"{total:,} {present[0][0]}"
    return f"{total:,}" + (f" ({' '.join(f'{n:,}{letter}' for letter, n in present)})" if present else "")


def fmt_ratio(value: float | None) -> str:
    return "—" if value is None else f"×{value:.2f}"


def arm_order(runs: Runs) -> list[str]:
    present = {c.record.key.arm for c in runs.cells.values()}
    builtin = [e.name for e in BUILTIN_ARMS if e.name in present]
    return builtin + sorted(present - set(builtin))


def labels(runs: Runs) -> dict[str, str]:
    return {c.record.key.arm: c.record.env.arm_label or c.record.key.arm for c in runs.cells.values()}


def groups(runs: Runs) -> list[tuple[str, str, str]]:
    """(model, mode, table) present, in report order."""
    keys = {(k[1], k[3], k[4]) for k in runs.cells}
    order = lambda g: (["default", "large"].index(g[2]), list(MODELS).index(g[0]), ["cold", "warm"].index(g[1]))  # noqa: E731
    return sorted(keys, key=order)


def timed_groups(runs: Runs) -> list[tuple[str, str, str]]:
    """The groups with a rows/s figure: a group of instrumented cells only has none."""
    timed = {(k[1], k[3], k[4]) for k, c in runs.cells.items() if c.timed}
    return [g for g in groups(runs) if g in timed]


def figures(runs: Runs, model: str, mode: str, table: str) -> dict[str, dict[str, float]]:
    """arm -> op -> rows/s, from timed records only."""
    return _per_arm(runs, model, mode, table, lambda c: c.rows_per_s)


def instruction_figures(runs: Runs, model: str, mode: str, table: str) -> dict[str, dict[str, float]]:
    """arm -> op -> instructions per row, wherever a record counted them."""
    return _per_arm(runs, model, mode, table, lambda c: c.instructions_per_row)


def _per_arm(runs: Runs, model: str, mode: str, table: str,
             value: Callable[[Cell], float | None]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (arm, m, op, md, t), cell in runs.cells.items():
        if (m, md, t) == (model, mode, table):
            v = value(cell)
            if v is not None:
                out[arm][op] = v
    return out


def geomeans(per_arm: dict[str, dict[str, float]]) -> dict[str, tuple[float | None, int]]:
    return {arm: (geometric_mean([v for op, v in ops.items() if op in OBJECT_OPS]),
                  sum(1 for op in ops if op in OBJECT_OPS)) for arm, ops in per_arm.items()}


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
    return Table(title, header, rows, notes, anchor=f"overall-{table}")


def detail(runs: Runs, model: str, mode: str, table: str) -> Table:
    names = labels(runs)
    best = f"Best: the fastest arm other than the {names.get(CONTROL_ARM, CONTROL_ARM)} control arm."
    title = f"{MODELS[model].title} — {mode}, {table} table (rows/s, higher is better)"
    return _ops_table(runs, figures(runs, model, mode, table), fmt_rate, max, title, best,
                      anchor=f"detail-{model}-{mode}-{table}")


def instructions(runs: Runs, model: str, mode: str, table: str) -> Table | None:
    """Instructions per row, ops x arms like the rows/s table (None: no record of the group counted them)."""
    per_arm = instruction_figures(runs, model, mode, table)
    if not per_arm:
        return None
    names = labels(runs)
    best = (f"Best: the arm other than the {names.get(CONTROL_ARM, CONTROL_ARM)} control arm that executed the "
            "fewest instructions per row.")
    title = f"{MODELS[model].title} — {mode}, {table} table (instructions per row, lower is better)"
    legend = ("Instructions the operation executed, counted by valgrind's callgrind around the op only "
              "(--ormbench-instructions): the median round's count over the rows it handled; k thousand, M million. "
              "They do not depend on the machine's speed or load, and do not see the kernel's work or time spent "
              "waiting (system calls, I/O, fsync).")
    t = _ops_table(runs, per_arm, fmt_count, min, title, best, anchor=f"instructions-{model}-{mode}-{table}")
    t.notes = [legend, *t.notes, *disagreements(runs, model, mode, table)]
    return t


def _ops_table(runs: Runs, per_arm: dict[str, dict[str, float]], fmt: Callable[[float | None], str],
               better: Callable[..., str], title: str, best_note: str, anchor: str) -> Table:
    """Operations x arms with a Best column and a Geometric Mean row; ``better`` is max or min of the arms."""
    arms = [a for a in arm_order(runs) if a in per_arm]
    names = labels(runs)
    letters = [op.letter for op in OPS if any(op.letter in per_arm[a] for a in arms)]
    # The control arm is hand-written SQL, the yardstick rather than a contender: Best names the best of
    # the others, as the reference's tables do (they have no raw column); with fewer than two contenders
    # there is nothing to rank and no Best column.
    contenders = [a for a in arms if a != CONTROL_ARM]
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
    if ranked_best and CONTROL_ARM in arms:
        notes.append(best_note)
    return Table(title, header, rows, notes, anchor=anchor)


def disagreements(runs: Runs, model: str, mode: str, table: str) -> list[str]:
    """One line per op where two arms' order by rows/s and by instructions per row differ.

    Only pairs whose rows/s differ by more than DISAGREE_MARGIN (closer, the order by time may be noise) and
    whose instructions differ by more than DISAGREE_INSTRUCTIONS_MARGIN (closer, it is the same work).
    """
    rates, counts = figures(runs, model, mode, table), instruction_figures(runs, model, mode, table)
    names = labels(runs)
    arms = [a for a in arm_order(runs) if a in rates and a in counts]
    lines = []
    for op in OPS:
        both = [a for a in arms if op.letter in rates[a] and op.letter in counts[a]]
        pairs = []
        for a, b in combinations(both, 2):
            fast, slow = (a, b) if rates[a][op.letter] >= rates[b][op.letter] else (b, a)
            ratio = rates[fast][op.letter] / rates[slow][op.letter]
            more = counts[fast][op.letter] / counts[slow][op.letter]
            if ratio > 1 + DISAGREE_MARGIN and more > 1 + DISAGREE_INSTRUCTIONS_MARGIN:
                pairs.append((ratio, more, fast, slow))
        if not pairs:
            continue
        pairs.sort(key=lambda p: (-p[0], p[2], p[3]))
        (r, i, f, s), *others = pairs[:DISAGREE_PAIRS]
        line = (f"{op.letter} {op.title}: {names[f]} is faster than {names[s]} by wall time ({r:.2f}×) but executes "
                f"more instructions per row ({i:.2f}×)")
        if others:  # the same sentence again for each: the pairs, their two ratios
            line += "; likewise " + ", ".join(f"{names[f]} than {names[s]} ({r:.2f}×, {i:.2f}×)"
                                              for r, i, f, s in others)
        rest = len(pairs) - DISAGREE_PAIRS
        lines.append(line + (f"; and {rest} more pair(s)" if rest > 0 else "") + ".")
    if lines:
        lines.insert(0, f"Where wall time and instructions disagree (an arm more than {DISAGREE_MARGIN:.0%} faster by "
                        "rows/s yet executing more instructions per row), the slower arm spends its extra time where "
                        "callgrind counts nothing: waiting on I/O and in system calls (fsync), most often, or stalled "
                        "on memory.")
    return lines


def statements(runs: Runs, model: str, mode: str, table: str) -> Table | None:
    """Statements per op, ops x arms (None: no record of the group counted them or said why not)."""
    cells = {(k[0], k[2]): c for k, c in runs.cells.items() if (k[1], k[3], k[4]) == (model, mode, table)
             and (c.statements_per_op is not None or c.statements_note)}
    if not cells:
        return None
    names = labels(runs)
    arms = [a for a in arm_order(runs) if any(k[0] == a for k in cells)]
    letters = [op.letter for op in OPS if any(k[1] == op.letter for k in cells)]
    rows, flags, missing = [], [], False
    not_counted: dict[str, list[str]] = defaultdict(list)
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
        flags += _statement_flags(cells, arms, letter, names)
    notes = [STATEMENTS_LEGEND]
    notes += [f"n/a : not counted for {', '.join(arms_)} ({note})" for note, arms_ in not_counted.items()]
    if missing:
        notes.append(NO_FIGURE)
    notes += flags
    title = f"Statements per operation, by kind — {MODELS[model].title}, {mode}, {table} table"
    return Table(title, ["Operation", *(names[a] for a in arms)], rows, notes,
                 anchor=f"statements-{model}-{mode}-{table}")


def _statement_flags(cells: dict[tuple[str, str], Cell], arms: list[str], letter: str,
                     names: dict[str, str]) -> list[str]:
    """The arms sending more than STATEMENTS_FLAG times the control arm's statements for the same op: the
    hand-written SQL is the least an op needs, so many more is an ORM's extra round trips (N+1, say)."""
    control = cells.get((CONTROL_ARM, letter))
    base = control.statements_per_op if control else None
    if not base or not sum(base.values()):
        return []
    least = sum(base.values())
    over = []
    for arm in arms:
        counts = cells[(arm, letter)].statements_per_op if (arm, letter) in cells else None
        if arm != CONTROL_ARM and counts and sum(counts.values()) > STATEMENTS_FLAG * least:
            total = sum(counts.values())
            over.append(f"{names[arm]} {total:,} ({total / least:.1f}×)")
    if not over:
        return []
    return [f"{letter} {OPS_BY_LETTER[letter].title}: more than {STATEMENTS_FLAG}× the statements of the "
            f"{names[CONTROL_ARM]} control ({least:,}): {', '.join(over)}."]


def overhead(runs: Runs) -> Table | None:
    """Each arm against the raw sqlite3 control: how many times longer it takes (geometric means)."""
    cols = [g for g in groups(runs) if CONTROL_ARM in figures(runs, *g)]
    if not cols:
        return None
    names = labels(runs)
    header = ["Arm", *(f"Test {MODELS[m].test} {md}{' large' if t == 'large' else ''}" for m, md, t in cols)]
    rows = []
    for arm in arm_order(runs):
        if arm == CONTROL_ARM:
            continue
        row, seen = [names[arm]], False
        for g in cols:
            per_arm = figures(runs, *g)
            ops = [op for op in OBJECT_OPS if op in per_arm.get(arm, {}) and op in per_arm[CONTROL_ARM]]
            ratios = [per_arm[CONTROL_ARM][op] / per_arm[arm][op] for op in ops]
            value = geometric_mean(ratios)
            seen = seen or value is not None
            row.append("—" if value is None else f"{value:.2f}×")
        if seen:
            rows.append(row)
    if not rows:
        return None  # the control arm alone: nothing to price
    notes = ["Time relative to hand-written SQL on sqlite3 (1.00× = as fast as the control; 3.00× = takes three "
             "times as long), geometric mean over the object operations both ran."]
    return Table("ORM overhead over the raw sqlite3 control arm", header, rows, notes, anchor="overhead")


def memory(runs: Runs) -> list[Table]:
    out = []
    for model, mode, table in groups(runs):
        per_arm: dict[str, dict[str, int]] = defaultdict(dict)
        for (arm, m, op, md, t), cell in runs.cells.items():
            peak = cell.record.facts.memory_peak_bytes
            if (m, md, t) == (model, mode, table) and peak is not None:
                per_arm[arm][op] = peak
        if not per_arm:
            continue
        arms = [a for a in arm_order(runs) if a in per_arm]
        names = labels(runs)
        letters = [op.letter for op in OPS if any(op.letter in per_arm[a] for a in arms)]
        rows = [[f"{lt} {OPS_BY_LETTER[lt].title}",
                 *(("—" if per_arm[a].get(lt) is None else f"{per_arm[a][lt] / 1024:,.0f}") for a in arms)]
                for lt in letters]
        out.append(Table(f"Peak memory allocated by the operation, KiB — {MODELS[model].title}, {mode}, {table} table",
                         ["Operation", *(names[a] for a in arms)], rows,
                         ["Measured with tracemalloc in a separate untimed repetition (--ormbench-memory)."],
                         anchor=f"memory-{model}-{mode}-{table}"))
    return out


def footnotes(runs: Runs) -> list[str]:
    names = labels(runs)
    notes: list[str] = []
    devs: dict[str, dict[str, str]] = defaultdict(dict)
    unsupported: dict[str, dict[str, str]] = defaultdict(dict)
    bulk_ids: dict[str, set[bool]] = defaultdict(set)
    for cell in runs.cells.values():
        rec = cell.record
        arm = rec.key.arm
        for key, text in rec.deviations.items():
            devs[arm][key] = text
        for op, reason in rec.env.unsupported.items():
            unsupported[arm][op] = reason
        if rec.facts.bulk_ids_set is not None:
            bulk_ids[arm].add(bool(rec.facts.bulk_ids_set))
    for arm in arm_order(runs):
        for key, text in sorted(devs[arm].items()):
            scope = "all cells" if key == "*" else key
            notes.append(f"{names[arm]} ({scope}): {text}")
        for op, reason in sorted(unsupported[arm].items()):
            notes.append(f"{names[arm]}: {op} not supported — {reason}")
    with_ids = [names[a] for a in arm_order(runs) if bulk_ids.get(a) == {True}]
    without = [names[a] for a in arm_order(runs) if bulk_ids.get(a) == {False}]
    if with_ids and without:
        notes.append("Insert: Bulk sets the new ids on the objects for: " + ", ".join(with_ids)
                     + "; not for: " + ", ".join(without) + " (verified in every round).")
    elif with_ids or without:
        verb = "sets" if with_ids else "does not set"
        notes.append(f"Insert: Bulk {verb} the new ids on the objects for {', '.join(with_ids or without)} "
                     "(verified in every round).")
    return notes + runs.notes


def environment(runs: Runs) -> list[str]:
    parts = [p for c in runs.cells.values() for p in c.parts]  # a folded cell's instructions run counts too
    recs = [p.record for p in parts]
    machines = {_machine(p.machine) for p in parts}
    dates = sorted({p.run_datetime[:10] for p in parts if p.run_datetime})

    def values(get: Callable[[CellRecord], Any]) -> str:
        return ", ".join(sorted({str(get(r)) for r in recs if get(r) is not None})) or "unknown"

    settings = sorted({tuple(sorted((r.facts.pragmas or {}).items())) for r in recs})
    versions: dict[str, set[str]] = defaultdict(set)
    for r in recs:
        for dist, ver in r.env.versions.items():
            versions[dist].add(ver)
    lines = [
        f"Machine: {'; '.join(sorted(machines))}",
        f"Python: {values(lambda r: r.env.python)}; SQLite: {values(lambda r: r.env.sqlite_version)}",
        "SQLite settings read back from each arm's connection: "
        + "; ".join(", ".join(f"{k}={v}" for k, v in s) for s in settings if s),
        f"Rounds per cell: {values(lambda r: r.rounds)}; iterations: {values(lambda r: r.iterations)}; "
        f"batch: {values(lambda r: r.batch)}",
        "Packages: " + (", ".join(f"{d} {'/'.join(sorted(v))}" for d, v in sorted(versions.items())) or "none"),
        f"Run date(s): {', '.join(dates) or 'unknown'}; sources: {', '.join(runs.sources)}",
    ]
    if any(runs.run_facts.get(s) for s in runs.sources):
        lines.append("Drift floor: the spread of a fixed sqlite3 probe over each run (see Runs); differences "
                     "smaller than it are noise")
    if len(machines) > 1:
        lines.append("Warning: these results come from more than one machine; compare within a machine only.")
    if CONTROL_ARM not in {r.key.arm for r in recs}:
        lines.append(f"No {CONTROL_ARM} control arm in these results: there is no ORM-overhead table, and a "
                     "comparison with them cannot correct for the machine's drift (run with the control arm, the "
                     "default, to have both)")
    return lines


def runs_table(runs: Runs) -> Table:
    """One row per input file: when it was written, which arms and tables it supplies, its drift floor."""
    names, order = labels(runs), {a: i for i, a in enumerate(arm_order(runs))}
    supplied: dict[str, list[Cell]] = defaultdict(list)
    for cell in runs.cells.values():
        for part in cell.parts:  # an instructions run folded beside a timed one supplies the cell's instructions
            supplied[part.source].append(part)
    rows = []
    for source in runs.sources:
        cells = supplied.get(source, [])
        arms = sorted({c.record.key.arm for c in cells}, key=order.__getitem__)
        facts = runs.run_facts.get(source) or {}
        floor = facts.get("drift_floor")
        probes = len(facts.get("probes") or [])
        rates = [p["rows_per_s"] for p in facts.get("probes") or []
                 if isinstance(p, dict) and isinstance(p.get("rows_per_s"), (int, float))]
        rows.append([
            source,
            (runs.written.get(source) or "unknown")[:16].replace("T", " "),
            ", ".join(names[a] for a in arms) or "— (every cell superseded)",
            ", ".join(sorted({c.record.key.table for c in cells}, key=["default", "large"].index)) or "—",
            str(len(cells)),
            facts.get("schedule") or "—",
            "—" if floor is None else f"{floor:.1%} ({probes} probes)",
            fmt_rate(statistics.median(rates)) if rates else "—",
        ])
    notes = ["Written: when pytest-benchmark wrote the file (the end of its run). Cells: the cells of the report "
             "that come from the file. Drift floor: the spread of a fixed sqlite3 probe measured between the "
             "file's rounds (— : written before the probe existed). Probe level: the median of those probe "
             "figures, rows/s; the same workload in every run, so it shows how fast the machine was during each "
             "run: figures from runs whose levels differ by x % can differ by about as much for that reason alone."]
    if any(c.instructions_cell for c in runs.cells.values()):
        notes.append("A file of instrumented cells (--ormbench-instructions) beside a timed file supplies those "
                     "cells' instructions only; their rows/s come from the timed file.")
    return Table("Runs", ["File", "Written (UTC)", "Arms", "Tables", "Cells", "Schedule", "Drift floor", "Probe level"],
                 rows, notes, anchor="runs", text_columns=(1, 2, 3, 5, 6))


def _machine(info: dict[str, Any]) -> str:
    cpu = info.get("cpu") or {}
    brand = cpu.get("brand_raw") or info.get("processor") or info.get("machine") or "unknown CPU"
    count = cpu.get("count")
    system = " ".join(str(x) for x in (info.get("system"), info.get("release")) if x)
    return f"{brand}{f', {count} cores' if count else ''}{f', {system}' if system else ''}"
