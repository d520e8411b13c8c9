"""The report's tables as data: overall, detail, ORM overhead, memory, footnotes, environment."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from ..contract import MODELS, OPS, OPS_BY_LETTER
from ..record import CellRecord
from ..registry import BUILTIN_ARMS, CONTROL_ARM
from ..stats import geometric_mean
from .load import Cell, Runs

OBJECT_OPS = [op.letter for op in OPS if op.object_op]
NO_FIGURE = "— : no verified figure (not supported by the arm, or not run; see footnotes)."


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


def figures(runs: Runs, model: str, mode: str, table: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (arm, m, op, md, t), cell in runs.cells.items():
        if (m, md, t) == (model, mode, table):
            out[arm][op] = cell.rows_per_s
    return out


def geomeans(per_arm: dict[str, dict[str, float]]) -> dict[str, tuple[float | None, int]]:
    return {arm: (geometric_mean([v for op, v in ops.items() if op in OBJECT_OPS]),
                  sum(1 for op in ops if op in OBJECT_OPS)) for arm, ops in per_arm.items()}


def overall(runs: Runs, table: str) -> Table | None:
    present = [(m, md) for (m, md, t) in groups(runs) if t == table]
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
    per_arm = figures(runs, model, mode, table)
    arms = [a for a in arm_order(runs) if a in per_arm]
    names = labels(runs)
    letters = [op.letter for op in OPS if any(op.letter in per_arm[a] for a in arms)]
    # The control arm is hand-written SQL, the yardstick rather than a contender: Best names the fastest of
    # the others, as the reference's tables do (they have no raw column); with fewer than two contenders
    # there is nothing to rank and no Best column.
    contenders = [a for a in arms if a != CONTROL_ARM]
    ranked_best = len(contenders) >= 2
    header = ["Operation", *(names[a] for a in arms), *(["Best"] if ranked_best else [])]
    rows = []
    for letter in letters:
        vals = {a: per_arm[a].get(letter) for a in arms}
        ran = [a for a in contenders if vals[a] is not None]
        best = names[max(ran, key=lambda a: vals[a])] if ran else "—"  # type: ignore[arg-type,return-value]
        rows.append([f"{letter} {OPS_BY_LETTER[letter].title}", *(fmt_rate(vals[a]) for a in arms),
                     *([best] if ranked_best else [])])
    gm = geomeans(per_arm)
    most = max((n for _, n in gm.values()), default=0)
    ranked = [a for a in contenders if gm[a][0] is not None]
    best_gm = max(ranked, key=lambda a: gm[a][0]) if ranked else None  # type: ignore[arg-type,return-value]
    gm_row = ["Geometric Mean"]
    notes = []
    for a in arms:
        value, n = gm[a]
        mark = ""
        if value is not None and n < most:
            mark = "¹"
            notes.append(f"¹ {names[a]}: geometric mean over {n} object operations, not {most}")
        gm_row.append(fmt_rate(value) + mark)
    if ranked_best:
        gm_row.append(names[best_gm] if best_gm else "—")
    rows.append(gm_row)
    if any(letter not in OBJECT_OPS for letter in letters):
        notes.append("G and H (dicts, tuples) are not object operations and are left out of the geometric mean.")
    if any(c == "—" or c.startswith("—") for r in rows for c in r[1:len(arms) + 1]):
        notes.append(NO_FIGURE)
    if ranked_best and CONTROL_ARM in arms:
        notes.append(f"Best: the fastest arm other than the {names[CONTROL_ARM]} control arm.")
    title = f"{MODELS[model].title} — {mode}, {table} table (rows/s, higher is better)"
    return Table(title, header, rows, notes, anchor=f"detail-{model}-{mode}-{table}")


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
    recs = [c.record for c in runs.cells.values()]
    machines = {_machine(c.machine) for c in runs.cells.values()}
    dates = sorted({c.run_datetime[:10] for c in runs.cells.values() if c.run_datetime})

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
        supplied[cell.source].append(cell)
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
    return Table("Runs", ["File", "Written (UTC)", "Arms", "Tables", "Cells", "Schedule", "Drift floor", "Probe level"],
                 rows, notes, anchor="runs", text_columns=(1, 2, 3, 5, 6))


def _machine(info: dict[str, Any]) -> str:
    cpu = info.get("cpu") or {}
    brand = cpu.get("brand_raw") or info.get("processor") or info.get("machine") or "unknown CPU"
    count = cpu.get("count")
    system = " ".join(str(x) for x in (info.get("system"), info.get("release")) if x)
    return f"{brand}{f', {count} cores' if count else ''}{f', {system}' if system else ''}"
