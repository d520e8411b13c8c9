"""Where the figures come from: the footnotes (deviations, unsupported operations, what Insert: Bulk does with
ids), the environment lines, and the runs table (one row per input file)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any, Callable, Iterable

from pytest_ormbench.workload.cells import DEFAULT_DB, format_rtt
from pytest_ormbench.arms.registry import CONTROL_ARM, CONTROL_ARMS, describe_origin
from pytest_ormbench.results.record import CellRecord
from pytest_ormbench.results.report.format import db_rank, db_title, fmt_rate, machine_text
from pytest_ormbench.results.report.load import LoadedCell, Runs
from pytest_ormbench.results.report.table import Table
from pytest_ormbench.results.report.tables.scope import all_arm_order, control_label, labels, whole

#: the footnote that explains the rows/s tables' "old GC discipline" note, once
OLD_DISCIPLINE_FOOTNOTE = (
    "Old GC discipline: figures timed before the freeze discipline ran a full garbage collection right before the "
    "clock. It evicts the CPU caches and made the raw sqlite3 arm's ops read up to 14 % slow (results/fidelity.md); "
    "the fastest arms lose most, so their ratios to slower arms read compressed. Since then the collector is frozen "
    "just before the clock and nothing is collected there (docs/methodology.md). The tables with such figures say "
    "so, and the Runs table names their files.")


def _db_scope(dbs: set[str], every: set[str]) -> str:
    """", PostgreSQL" when a footnote holds on some of an arm's databases only; "" when on all of them."""
    if dbs == every:
        return ""
    return ", " + "/".join(db_title(db) for db in sorted(dbs, key=db_rank))


def footnotes(runs: Runs) -> list[str]:
    """The arms' deviations and unsupported ops, and what Insert: Bulk does with ids, for every database: a
    footnote that holds on some of an arm's databases only names them."""
    all_runs = whole(runs)
    names = labels(runs)
    order = all_arm_order(runs)
    notes: list[str] = []
    # per arm and database, the last record's text for each key (as before databases: one text per key)
    devs: dict[str, dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    unsupported: dict[str, dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    bulk_ids: dict[str, dict[str, set[bool]]] = defaultdict(lambda: defaultdict(set))
    arm_dbs: dict[str, set[str]] = defaultdict(set)
    for cell in all_runs.cells.values():
        rec = cell.record
        arm, db = rec.key.arm, rec.key.db
        arm_dbs[arm].add(db)
        for key, text in rec.deviations.items():
            devs[arm][db][key] = text
        for op, reason in rec.env.unsupported.items():
            unsupported[arm][db][op] = reason
        if rec.facts.bulk_ids_set is not None:
            bulk_ids[db][arm].add(bool(rec.facts.bulk_ids_set))

    def merged(per_db: dict[str, dict[str, str]]) -> list[tuple[str, str, set[str]]]:
        where: dict[tuple[str, str], set[str]] = defaultdict(set)
        for db, texts in per_db.items():
            for key, text in texts.items():
                where[(key, text)].add(db)
        return [(key, text, dbs) for (key, text), dbs in sorted(where.items())]

    for arm in order:
        for key, text, dbs in merged(devs[arm]):
            scope = ("all cells" if key == "*" else key) + _db_scope(dbs, arm_dbs[arm])
            notes.append(f"{names[arm]} ({scope}): {text}")
        for op, reason, dbs in merged(unsupported[arm]):
            where = _db_scope(dbs, arm_dbs[arm])
            notes.append(f"{names[arm]}{f' ({where[2:]})' if where else ''}: {op} not supported — {reason}")
    several = len(bulk_ids) > 1
    for db in sorted(bulk_ids, key=db_rank):
        per_arm = bulk_ids[db]
        on = f" on {db_title(db)}" if several else ""
        with_ids = [names[a] for a in order if per_arm.get(a) == {True}]
        without = [names[a] for a in order if per_arm.get(a) == {False}]
        if with_ids and without:
            notes.append(f"Insert: Bulk{on} sets the new ids on the objects for: " + ", ".join(with_ids)
                         + "; not for: " + ", ".join(without) + " (verified in every round).")
        elif with_ids or without:
            verb = "sets" if with_ids else "does not set"
            notes.append(f"Insert: Bulk{on} {verb} the new ids on the objects for {', '.join(with_ids or without)} "
                         "(verified in every round).")
    if any(c.record.collected_before_clock for c in all_runs.cells.values()):
        notes.append(OLD_DISCIPLINE_FOOTNOTE)
    return notes + runs.notes


def _rtts(recs: Iterable[CellRecord]) -> list[float]:
    return sorted({r.key.rtt_ms for r in recs if r.key.rtt_ms is not None})


def environment(runs: Runs) -> list[str]:
    all_runs = whole(runs)
    parts = [p for c in all_runs.cells.values() for p in c.parts]  # a folded cell's instructions run counts too
    recs = [p.record for p in parts]
    machines = {machine_text(p.machine) for p in parts}
    dates = sorted({p.run_datetime[:10] for p in parts if p.run_datetime})
    by_db: dict[str, list[CellRecord]] = defaultdict(list)
    for r in recs:
        by_db[r.key.db].append(r)
    # SQLite's lines speak for its cells (a server's records carry the sqlite3 module's version too)
    lite = by_db.get(DEFAULT_DB) or ([] if by_db else recs)

    def values(get: Callable[[CellRecord], Any], of: list[CellRecord] = recs) -> str:
        return ", ".join(sorted({str(get(r)) for r in of if get(r) is not None})) or "unknown"

    settings = sorted({tuple(sorted((r.facts.pragmas or {}).items())) for r in lite})
    versions: dict[str, set[str]] = defaultdict(set)
    for r in recs:
        for dist, ver in r.env.versions.items():
            versions[dist].add(ver)
    lines = [
        f"Machine: {'; '.join(sorted(machines))}",
        *all_runs.header,
        f"Python: {values(lambda r: r.env.python)}"
        + (f"; SQLite: {values(lambda r: r.env.sqlite_version, lite)}" if lite or not by_db else ""),
    ]
    if lite or not by_db:
        lines.append("SQLite settings read back from each arm's connection: "
                     + "; ".join(", ".join(f"{k}={v}" for k, v in s) for s in settings if s))
    for db in sorted(set(by_db) - {DEFAULT_DB}, key=db_rank):
        these = by_db[db]
        server = values(lambda r: r.env.arm_info.get(f"{db}_version"), these)
        how = values(lambda r: r.env.arm_info.get("server"), these)
        read = sorted({tuple(sorted((r.facts.pragmas or {}).items())) for r in these})
        at_start = sorted({str(r.env.arm_info["server_settings"]) for r in these
                           if r.env.arm_info.get("server_settings")})
        line = (f"{db_title(db)}: server {server}" + (f" ({how})" if how != "unknown" else "")
                + "; settings read back from each arm's connection: "
                + ("; ".join(", ".join(f"{k}={v}" for k, v in s) for s in read if s) or "none recorded")
                + (f"; server settings read at start: {'; '.join(at_start)}" if at_start else ""))
        rtts = _rtts(these)
        if rtts:
            line += (f"; latency sweep through the proxy at RTT {', '.join(format_rtt(r) for r in rtts)} ms "
                     f"({sum(1 for r in these if r.key.rtt_ms is not None)} cells)")
        lines.append(line)
    lines += [
        f"Rounds per cell: {values(lambda r: r.rounds)}; iterations: {values(lambda r: r.iterations)}; "
        f"batch: {values(lambda r: r.batch)}",
        "Packages: " + (", ".join(f"{d} {'/'.join(sorted(v))}" for d, v in sorted(versions.items())) or "none"),
        f"Run date(s): {', '.join(dates) or 'unknown'}; sources: {', '.join(runs.sources)}",
    ]
    # where a measured package came from, when not from an index (a checkout: path and commit), and a version
    # below what its arm was tested with (both recorded by the measuring process in arm_info)
    origins = sorted({describe_origin(dist, r.env.versions.get(dist, "?"), where) for r in recs
                      for dist, where in (r.env.arm_info.get("origins") or {}).items() if isinstance(where, dict)})
    if origins:
        lines.append("Installed from: " + "; ".join(origins))
    untested = sorted({str(line) for r in recs for line in (r.env.arm_info.get("untested_versions") or [])})
    if untested:
        lines.append("Outside the tested versions: " + "; ".join(untested))
    if any(runs.run_facts.get(s) for s in runs.sources):
        lines.append("Drift floor: the spread of a fixed sqlite3 probe over each run (see Runs); differences "
                     "smaller than it are noise")
    if len(machines) > 1:
        lines.append("Warning: these results come from more than one machine; compare within a machine only.")
    if (lite or not by_db) and CONTROL_ARM not in {r.key.arm for r in lite}:
        lines.append(f"No {CONTROL_ARM} control arm in these results: there is no ORM-overhead table, and a "
                     "comparison with them cannot correct for the machine's drift (run with the control arm, the "
                     "default, to have both)")
    names = labels(runs)
    for db in sorted(set(by_db) - {DEFAULT_DB}, key=db_rank):
        controls = [a for a, on in CONTROL_ARMS.items() if on == db]
        if controls and not {r.key.arm for r in by_db[db]} & set(controls):
            lines.append(f"No {' or '.join(controls)} control arm in the {db_title(db)} results: there is no "
                         f"ORM-overhead table for {db_title(db)}, and a comparison with them corrects its cells "
                         f"for the machine's drift by the {CONTROL_ARM} control, if at all (run with "
                         f"--ormbench-arms including {' and '.join(controls)} to have both)")
        elif controls:
            missing = [c for c in controls if c not in {r.key.arm for r in by_db[db]}]
            if missing:
                lines.append(f"No {' or '.join(control_label(names, c) for c in missing)} control arm in the "
                             f"{db_title(db)} results: the arms it is the yardstick for have no ORM-overhead figure")
    return lines


def _places_text(recs: Iterable[CellRecord]) -> str:
    """The databases of a file's cells: ``sqlite``, ``postgresql``, ``postgresql @ RTT 0/1/5/25 ms``."""
    recs = list(recs)
    out = []
    for db in sorted({r.key.db for r in recs}, key=db_rank):
        these = [r for r in recs if r.key.db == db]
        if any(r.key.rtt_ms is None for r in these):
            out.append(db)
        rtts = _rtts(these)
        if rtts:
            out.append(f"{db} @ RTT {'/'.join(format_rtt(r) for r in rtts)} ms")
    return ", ".join(out) or "—"


def probe_level(facts: dict[str, Any]) -> float | None:
    """The median rows/s of a run's drift probe (None: the run had none): how fast the machine was."""
    rates = [p["rows_per_s"] for p in facts.get("probes") or []
             if isinstance(p, dict) and isinstance(p.get("rows_per_s"), (int, float))]
    return statistics.median(rates) if rates else None


def _fresh_warm_note(runs: Runs, supplied: dict[str, list[LoadedCell]], names: dict[str, str],
                     order: dict[str, int]) -> list[str]:
    """The arms whose warm cells a run that keeps warm sessions timed fresh all the same (its facts'
    ``warm_start_fresh``), where the report shows some of their kept-eligible warm cells (SQLite, no proxy); and
    the files that keep warm sessions but were written before runs said which arms they could not keep."""
    fresh: dict[str, list[str]] = defaultdict(list)
    unsaid = []
    for source in runs.sources:
        facts = runs.run_facts.get(source) or {}
        shown = {c.record.key.arm for c in supplied.get(source, []) if c.record.key.mode == "warm"
                 and c.record.key.db == DEFAULT_DB and c.record.key.rtt_ms is None and c.timed}
        if facts.get("warm_start") != "kept" or not shown:
            continue
        if "warm_start_fresh" not in facts:
            unsaid.append(source)
        for arm in facts.get("warm_start_fresh") or {}:
            if arm in shown:
                fresh[arm].append(source)
    out = []
    if fresh:
        which = "; ".join(f"{names.get(a, a)} ({', '.join(fresh[a])})"
                          for a in sorted(fresh, key=lambda a: order.get(a, len(order))))
        out.append(f"Warm sessions: kept between an interleaved cell's rounds (--ormbench-warm-start=kept), except "
                   f"for {which}: an arm that does not declare independent_sessions (its connection or models are "
                   "the process's) opens, warms up and closes again on every visit (docs/methodology.md).")
    if unsaid:
        out.append(f"Warm sessions in {', '.join(unsaid)}: kept between rounds, but these files were written "
                   "before runs named the arms they could not keep; then the async arms, Django and SQLObject "
                   "opened, warmed up and closed again on every visit (docs/methodology.md).")
    return out


def runs_table(runs: Runs) -> Table:
    """One row per input file: when it was written, which databases, arms and tables it supplies, its drift floor.

    The Databases column is there when some cell is not on SQLite (a report of SQLite files is what it was)."""
    all_runs = whole(runs)
    names, order = labels(runs), {a: i for i, a in enumerate(all_arm_order(runs))}
    several = any(c.record.key.db != DEFAULT_DB or c.record.key.rtt_ms is not None for c in all_runs.cells.values())
    short = all_runs.machine_labels()  # {} from one machine: no column
    supplied: dict[str, list[LoadedCell]] = defaultdict(list)
    for cell in all_runs.cells.values():
        for part in cell.parts:  # an instructions run folded beside a timed one supplies the cell's instructions
            supplied[part.source].append(part)
    rows = []
    for source in runs.sources:
        cells = supplied.get(source, [])
        arms = sorted({c.record.key.arm for c in cells}, key=order.__getitem__)
        facts = runs.run_facts.get(source) or {}
        floor = facts.get("drift_floor")
        probes = len(facts.get("probes") or [])
        level = probe_level(facts)
        rows.append([
            source,
            (runs.written.get(source) or "unknown")[:16].replace("T", " "),
            *([_places_text(c.record for c in cells)] if several else []),
            ", ".join(names[a] for a in arms) or "— (every cell superseded)",
            ", ".join(sorted({c.record.key.table for c in cells}, key=["default", "large"].index)) or "—",
            str(len(cells)),
            facts.get("schedule") or "—",
            "—" if floor is None else f"{floor:.1%} ({probes} probes)",
            fmt_rate(level) if level is not None else "—",
            *([short.get(all_runs.machines.get(source, ""), "?")] if short else []),
        ])
    notes = ["Written: when pytest-benchmark wrote the file (the end of its run). Cells: the cells of the report "
             "that come from the file. Drift floor: the spread of a fixed sqlite3 probe measured between the "
             "file's rounds (— : written before the probe existed). Probe level: the median of those probe "
             "figures, rows/s; the same workload in every run, so it shows how fast the machine was during each "
             "run: figures from runs whose levels differ by x % can differ by about as much for that reason alone."]
    if several:
        notes.append("Databases: where the file's cells stored (postgresql @ RTT …: through the latency proxy at "
                     "those round-trip times).")
    if short:
        notes.append("Machine: " + "; ".join(f"{label} = {name}" for name, label in short.items())
                     + ". Wall times, rows/s and probe levels of different machines are not comparable (a ratio "
                       "inside one file, each arm against the control timed beside it, removes a machine's overall "
                       "speed).")
    old = [s for s in runs.sources if any(c.record.collected_before_clock for c in supplied.get(s, []))]
    if old:
        notes.append(f"Timed with the old GC discipline (see the footnotes): {', '.join(old)}.")
    notes.extend(_fresh_warm_note(runs, supplied, names, order))
    if any(c.instructions_cell for c in all_runs.cells.values()):
        notes.append("A file of instrumented cells (--ormbench-instructions) beside a timed file supplies those "
                     "cells' instructions only; their rows/s come from the timed file.")
    header = ["File", "Written (UTC)", *(["Databases"] if several else []), "Arms", "Tables", "Cells", "Schedule",
              "Drift floor", "Probe level", *(["Machine"] if short else [])]
    text = (1, 2, 3, 4, 6, 7) if several else (1, 2, 3, 5, 6)
    if short:
        text = (*text, len(header) - 1)
    return Table("Runs", header, rows, notes, anchor="runs", text_columns=text)
