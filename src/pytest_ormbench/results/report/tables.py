"""The report's tables as data: overall, detail, instructions, statements, ORM overhead, memory, the latency
sweep, footnotes, environment.

The tables of one database are built from the runs scoped to it (:meth:`Runs.at`); a whole, unscoped
``Runs`` shows its first database's cells (SQLite's when there are any), so that a caller that does not
know about databases never sees two databases' figures of one arm merged into one. Labels, footnotes,
the environment and the runs table speak for every database.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Callable, Iterable

from pytest_ormbench.workload.spec import MODELS, OPS, OPS_BY_LETTER
from pytest_ormbench.workload.cells import DEFAULT_DB, CellKey, format_rtt
from pytest_ormbench.results.record import CellRecord
from pytest_ormbench.arms.registry import BUILTIN_ARMS, CONTROL_ARM, CONTROL_ARMS
from pytest_ormbench.results.stats import geometric_mean
from pytest_ormbench.results.report.load import Cell, Runs

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
#: the note under a rows/s table some of whose figures were timed before the freeze discipline (issue 17)
OLD_DISCIPLINE = ("Timed with the old GC discipline ({arms}): a full collection right before the clock "
                  "(see the footnotes).")
#: the footnote that explains it, once
OLD_DISCIPLINE_FOOTNOTE = (
    "Old GC discipline: figures timed before the freeze discipline ran a full garbage collection right before the "
    "clock. It evicts the CPU caches and made the raw sqlite3 arm's ops read up to 14 % slow (results/fidelity.md); "
    "the fastest arms lose most, so their ratios to slower arms read compressed. Since then the collector is frozen "
    "just before the clock and nothing is collected there (docs/methodology.md). The tables with such figures say "
    "so, and the Runs table names their files.")
#: the databases as section headings and notes name them
DB_TITLES = {"sqlite": "SQLite", "postgresql": "PostgreSQL", "mysql": "MariaDB"}
_DB_ORDER = {db: i for i, db in enumerate(DB_TITLES)}
#: which control arms drive their database asynchronously (the yardstick of the async arms there); a control
#: arm's own records say so too, and win
ASYNC_CONTROLS = {"sqlite3": False, "psycopg": False, "asyncpg": True, "mysqlclient": False, "asyncmy": True}


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    anchor: str = ""
    #: columns of text, aligned left (the first always is; the others default to figures, aligned right)
    text_columns: tuple[int, ...] = ()
    #: the report section the table opens or continues (a heading of its own: "PostgreSQL"); "" none
    section: str = ""
    #: what the renderer writes below the section's heading, when this table opens the section
    intro: str = ""


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


def db_title(db: str) -> str:
    return DB_TITLES.get(db, db)


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


def _cells(runs: Runs) -> Iterable[tuple[CellKey, Cell]]:
    """(key, cell) of the cells the runs' tables show (:func:`scoped`)."""
    return ((c.record.key, c) for c in scoped(runs).cells.values())


def _whole(runs: Runs) -> Runs:
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
    return _order({k.arm for k, _ in _cells(runs)})


def all_arm_order(runs: Runs) -> list[str]:
    """Every arm of every database, in the report's order."""
    return _order({c.record.key.arm for c in _whole(runs).cells.values()})


def labels(runs: Runs) -> dict[str, str]:
    """arm -> label, one for every database: an arm on several is named the same in each section (SQLite's
    cells name it when they disagree)."""
    cells = list(_whole(runs).cells.values())
    ordered = [c for c in cells if c.record.key.db != DEFAULT_DB] + [c for c in cells if c.record.key.db == DEFAULT_DB]
    return {c.record.key.arm: c.record.env.arm_label or c.record.key.arm for c in ordered}


def control_arms(runs: Runs) -> list[str]:
    """The control arms of the runs' database: sqlite3 on SQLite; psycopg and asyncpg on PostgreSQL; mysqlclient
    and asyncmy on MariaDB."""
    db = db_of(runs)
    return [arm for arm, on in CONTROL_ARMS.items() if on == db]


def _is_async(runs: Runs, arm: str) -> bool:
    recorded = {c.record.env.is_async for k, c in _cells(runs) if k.arm == arm} - {None}
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
    kind = _is_async(runs, arm)
    return next((c for c in controls if _is_async(runs, c) == kind), controls[0])


def control_label(names: dict[str, str], arm: str) -> str:
    """A control arm's label, from the records when it ran, else from the registry."""
    return names.get(arm) or next((e.label for e in BUILTIN_ARMS if e.name == arm), arm)


def _controls_named(names: dict[str, str], controls: list[str]) -> str:
    """"the raw sqlite3 control arm", "the raw psycopg and raw asyncpg control arms"."""
    shown = " and ".join(control_label(names, c) for c in controls)
    return f"the {shown} control arm{'s' if len(controls) > 1 else ''}"


def groups(runs: Runs) -> list[tuple[str, str, str]]:
    """(model, mode, table) present, in report order."""
    keys = {(k.model, k.mode, k.table) for k, _ in _cells(runs)}
    order = lambda g: (["default", "large"].index(g[2]), list(MODELS).index(g[0]), ["cold", "warm"].index(g[1]))  # noqa: E731
    return sorted(keys, key=order)


def timed_groups(runs: Runs) -> list[tuple[str, str, str]]:
    """The groups with a rows/s figure: a group of instrumented cells only has none."""
    timed = {(k.model, k.mode, k.table) for k, c in _cells(runs) if c.timed}
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
    for k, cell in _cells(runs):
        if (k.model, k.mode, k.table) == (model, mode, table):
            v = value(cell)
            if v is not None:
                out[k.arm][k.op] = v
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
    notes.extend(old_discipline(runs, lambda k: k.table == table))
    return Table(title, header, rows, notes, anchor=f"overall-{table}")


def detail(runs: Runs, model: str, mode: str, table: str) -> Table:
    names = labels(runs)
    best = f"Best: the fastest arm other than {_controls_named(names, _present_controls(runs, model, mode, table))}."
    title = f"{MODELS[model].title} — {mode}, {table} table (rows/s, higher is better)"
    t = _ops_table(runs, figures(runs, model, mode, table), fmt_rate, max, title, best,
                   anchor=f"detail-{model}-{mode}-{table}")
    t.notes.extend(old_discipline(runs, lambda k: (k.model, k.mode, k.table) == (model, mode, table)))
    return t


def old_discipline(runs: Runs, where: Callable[[CellKey], bool]) -> list[str]:
    """The note for the cells ``where`` picks whose figures were timed with the old GC discipline (none: [])."""
    names, order = labels(runs), {a: i for i, a in enumerate(arm_order(runs))}
    arms = {k.arm for k, c in _cells(runs) if where(k) and c.record.collected_before_clock}
    if not arms:
        return []
    every = {k.arm for k, c in _cells(runs) if where(k) and c.timed}
    which = "every arm" if arms >= every else ", ".join(names[a] for a in sorted(arms, key=order.__getitem__))
    return [OLD_DISCIPLINE.format(arms=which)]


def instructions(runs: Runs, model: str, mode: str, table: str) -> Table | None:
    """Instructions per row, ops x arms like the rows/s table (None: no record of the group counted them)."""
    per_arm = instruction_figures(runs, model, mode, table)
    if not per_arm:
        return None
    names = labels(runs)
    best = (f"Best: the arm other than {_controls_named(names, _present_controls(runs, model, mode, table))} that "
            "executed the fewest instructions per row.")
    title = f"{MODELS[model].title} — {mode}, {table} table (instructions per row, lower is better)"
    legend = ("Instructions the operation executed, counted by valgrind's callgrind around the op only "
              "(--ormbench-instructions): the median round's count over the rows it handled; k thousand, M million. "
              "They do not depend on the machine's speed or load, and do not see the kernel's work or time spent "
              "waiting (system calls, I/O, fsync).")
    t = _ops_table(runs, per_arm, fmt_count, min, title, best, anchor=f"instructions-{model}-{mode}-{table}")
    t.notes = [legend, *t.notes, *disagreements(runs, model, mode, table)]
    return t


def _present_controls(runs: Runs, model: str, mode: str, table: str) -> list[str]:
    """The database's control arms that have a cell in the group (all of them when none has: a note's words)."""
    present = {k.arm for k, _ in _cells(runs) if (k.model, k.mode, k.table) == (model, mode, table)}
    controls = control_arms(runs)
    return [c for c in controls if c in present] or controls or [CONTROL_ARM]


def _ops_table(runs: Runs, per_arm: dict[str, dict[str, float]], fmt: Callable[[float | None], str],
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
                        "callgrind counts nothing: waiting on I/O and in system calls (fsync), waiting between threads "
                        "(an async arm's hand-off of each statement to its driver's thread and back), or stalled on "
                        "memory.")
    return lines


def statements(runs: Runs, model: str, mode: str, table: str) -> Table | None:
    """Statements per op, ops x arms (None: no record of the group counted them or said why not)."""
    cells = {(k.arm, k.op): c for k, c in _cells(runs) if (k.model, k.mode, k.table) == (model, mode, table)
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


def _statement_flags(cells: dict[tuple[str, str], Cell], arms: list[str], letter: str,
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
    for arm in arm_order(runs):
        if arm in CONTROL_ARMS:
            continue
        control = yardstick(runs, arm)
        if control is None:
            continue
        row, seen = [names[arm], *([control_label(names, control)] if several else [])], False
        for g in cols:
            per_arm = every[g]
            shown = per_arm.get(control, {})
            base = _same_run_control(runs, arm, control, g) or shown
            if any(base[op] != shown.get(op) for op in base if op in per_arm.get(arm, {})):
                in_run.add(arm)  # its own run's control is not the one the tables show
            ops = [op for op in OBJECT_OPS if op in per_arm.get(arm, {}) and op in base]
            ratios = [base[op] / per_arm[arm][op] for op in ops]
            value = geometric_mean(ratios)
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
                 else f"ORM overhead over {_controls_named(names, controls)}")
    else:
        sync = [c for c in controls if not _is_async(runs, c)]
        asyn = [c for c in controls if _is_async(runs, c)]
        pairs = "; ".join(part for part in (
            f"sync arms against {' and '.join(control_label(names, c) for c in sync)}" if sync else "",
            f"async arms against {' and '.join(control_label(names, c) for c in asyn)}" if asyn else "") if part)
        notes = [f"Time relative to hand-written SQL on the same database, driven the way the arm drives it: "
                 f"{pairs} (Against: each arm's control; 1.00× = as fast as the control; 3.00× = takes three times "
                 "as long), geometric mean over the object operations both ran."]
        title = f"ORM overhead over {_controls_named(names, controls)}"
    if in_run:
        which = ", ".join(names[a] for a in arm_order(runs) if a in in_run)
        notes.append("Each arm is priced against the control arm's cells timed in its own run where that run timed "
                     "them (a run times the control beside the arm unless --ormbench-control=off), so that a change "
                     "in the machine's speed between runs stays out of the ratio; for " + which + " those are not "
                     "the control figures the tables show, which come from a later run.")
    for control, arms in unpriced.items():
        notes.append(f"No {control_label(names, control)} control arm in these results: no overhead figure for "
                     f"{', '.join(arms)} (run with --ormbench-arms including {control} to have one).")
    return Table(title, header, rows, notes, anchor="overhead", text_columns=(1,) if several else ())


def _same_run_control(runs: Runs, arm: str, control: str, group: tuple[str, str, str]) -> dict[str, float] | None:
    """op -> the control arm's rows/s timed in the file the arm's cells of ``group`` come from, when that file
    timed the control beside the arm on every op the arm has (the tables may show a later run's control
    cells: the replaced ones are kept); None otherwise, and the arm is priced against the tables' figures."""
    shown = [c for k, c in _cells(runs) if (k.model, k.mode, k.table) == group and c.timed]
    mine = [c for c in shown if c.record.key.arm == arm and c.record.key.op in OBJECT_OPS]
    sources = {c.source for c in mine}
    if len(sources) != 1:
        return None
    source = sources.pop()
    keys = {c.key for c in shown}
    rates = {c.record.key.op: c.rows_per_s for c in (*shown, *_whole(runs).superseded)
             if c.source == source and c.timed and c.record.key.arm == control and c.key in keys
             and c.rows_per_s is not None}
    if not all(c.record.key.op in rates for c in mine):
        return None
    return rates


def memory(runs: Runs) -> list[Table]:
    out = []
    for model, mode, table in groups(runs):
        per_arm: dict[str, dict[str, int]] = defaultdict(dict)
        for k, cell in _cells(runs):
            peak = cell.record.facts.memory_peak_bytes
            if (k.model, k.mode, k.table) == (model, mode, table) and peak is not None:
                per_arm[k.arm][k.op] = peak
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


def sweep_figures(runs: Runs, db: str, model: str, mode: str, table: str) -> dict[str, dict[str, dict[float, float]]]:
    """op -> arm -> RTT (ms) -> rows/s, of one group's latency-sweep cells on ``db`` (timed records only)."""
    out: dict[str, dict[str, dict[float, float]]] = defaultdict(lambda: defaultdict(dict))
    for cell in _whole(runs).cells.values():
        k = cell.record.key
        if k.db == db and k.rtt_ms is not None and (k.model, k.mode, k.table) == (model, mode, table):
            if cell.rows_per_s is not None:
                out[k.op][k.arm][k.rtt_ms] = cell.rows_per_s
    return out


def sweep_groups(runs: Runs, db: str) -> list[tuple[str, str, str]]:
    """(model, mode, table) with latency-sweep figures on ``db``, in report order."""
    sweep = _whole(runs).at(db, sweep=True)
    return [g for g in timed_groups(sweep) if sweep_figures(runs, db, *g)]


def latency(runs: Runs, db: str) -> list[Table]:
    """The latency sweep on a server database: per op, rows/s of each arm against the round-trip time.

    Rows are arms, columns the RTTs the proxy added (and "direct", the same cell without the proxy, when it
    ran); the last column is the figure at the highest RTT over the one at the lowest. A note names the arm
    that leads at the lowest RTT and the one at the highest, when they differ: where an ORM's extra round
    trips start to cost more than its Python does.
    """
    names = labels(runs)
    direct = _whole(runs).at(db)
    out = []
    for model, mode, table in sweep_groups(runs, db):
        per_op = sweep_figures(runs, db, model, mode, table)
        plain = _per_arm(direct, model, mode, table, lambda c: (c.sweep_direct_cell or c).rows_per_s)  # the sweep's own
        rtts = sorted({r for arms in per_op.values() for rs in arms.values() for r in rs})
        lo, hi = rtts[0], rtts[-1]
        for op in OPS:
            per_arm = per_op.get(op.letter)
            if not per_arm:
                continue
            arms = [a for a in all_arm_order(runs) if a in per_arm]
            with_direct = any(op.letter in plain.get(a, {}) for a in arms)
            header = ["Arm", *(["direct"] if with_direct else []), *(f"{format_rtt(r)} ms" for r in rtts),
                      *([f"{format_rtt(hi)} ms / {format_rtt(lo)} ms"] if len(rtts) > 1 else [])]
            rows = []
            for arm in arms:
                vals = per_arm[arm]
                ratio = vals[hi] / vals[lo] if lo in vals and hi in vals and vals[lo] else None
                rows.append([names[arm], *([fmt_rate(plain.get(arm, {}).get(op.letter))] if with_direct else []),
                             *(fmt_rate(vals.get(r)) for r in rtts), *([fmt_ratio(ratio)] if len(rtts) > 1 else [])])
            notes = ["Rows/s with the arm reaching the server through the latency proxy, which holds every round "
                     "trip for the RTT the column names"
                     + ("; direct: the same cell without the proxy, from the sweep's own run when it ran one (else the "
                        "figure of the section above)" if with_direct
                        else "")
                     + (f"; the last column is the figure at {format_rtt(hi)} ms over the one at {format_rtt(lo)} ms "
                        "(×0.10: a tenth as fast)." if len(rtts) > 1 else ".")]
            others = [a for a in arms if a not in CONTROL_ARMS]
            contenders = others or arms  # the control arms are yardsticks, not contenders, as in Best
            lead = {}
            for rtt in (lo, hi):
                ran = [a for a in contenders if rtt in per_arm[a]]
                if ran:
                    lead[rtt] = max(ran, key=lambda a: per_arm[a][rtt])  # noqa: B023
            if lo in lead and hi in lead and lead[lo] != lead[hi]:
                a, b = lead[lo], lead[hi]
                among = "of the ORMs, " if others and len(others) < len(arms) else ""
                notes.append(f"{op.letter} {op.title}: {among}{names[a]} leads at {format_rtt(lo)} ms "
                             f"({fmt_rate(per_arm[a][lo])} rows/s), {names[b]} at {format_rtt(hi)} ms "
                             f"({fmt_rate(per_arm[b][hi])} rows/s).")
            if any(c == "—" for r in rows for c in r[1:]):
                notes.append(NO_FIGURE)
            title = (f"{op.letter} {op.title} — {MODELS[model].title}, {mode}, {table} table "
                     "(rows/s against RTT, higher is better)")
            out.append(Table(title, header, rows, notes, anchor=f"latency-{db}-{model}-{mode}-{table}-{op.letter}"))
    return out


def _db_scope(dbs: set[str], every: set[str]) -> str:
    """", PostgreSQL" when a footnote holds on some of an arm's databases only; "" when on all of them."""
    if dbs == every:
        return ""
    return ", " + "/".join(db_title(db) for db in sorted(dbs, key=lambda d: _DB_ORDER.get(d, len(_DB_ORDER))))


def footnotes(runs: Runs) -> list[str]:
    """The arms' deviations and unsupported ops, and what Insert: Bulk does with ids, for every database: a
    footnote that holds on some of an arm's databases only names them."""
    whole = _whole(runs)
    names = labels(runs)
    order = all_arm_order(runs)
    notes: list[str] = []
    # per arm and database, the last record's text for each key (as before databases: one text per key)
    devs: dict[str, dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    unsupported: dict[str, dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    bulk_ids: dict[str, dict[str, set[bool]]] = defaultdict(lambda: defaultdict(set))
    arm_dbs: dict[str, set[str]] = defaultdict(set)
    for cell in whole.cells.values():
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
    for db in sorted(bulk_ids, key=lambda d: _DB_ORDER.get(d, len(_DB_ORDER))):
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
    if any(c.record.collected_before_clock for c in whole.cells.values()):
        notes.append(OLD_DISCIPLINE_FOOTNOTE)
    return notes + runs.notes


def _rtts(recs: Iterable[CellRecord]) -> list[float]:
    return sorted({r.key.rtt_ms for r in recs if r.key.rtt_ms is not None})


def environment(runs: Runs) -> list[str]:
    whole = _whole(runs)
    parts = [p for c in whole.cells.values() for p in c.parts]  # a folded cell's instructions run counts too
    recs = [p.record for p in parts]
    machines = {_machine(p.machine) for p in parts}
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
        f"Python: {values(lambda r: r.env.python)}"
        + (f"; SQLite: {values(lambda r: r.env.sqlite_version, lite)}" if lite or not by_db else ""),
    ]
    if lite or not by_db:
        lines.append("SQLite settings read back from each arm's connection: "
                     + "; ".join(", ".join(f"{k}={v}" for k, v in s) for s in settings if s))
    for db in sorted(set(by_db) - {DEFAULT_DB}, key=lambda d: _DB_ORDER.get(d, len(_DB_ORDER))):
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
    for db in sorted(set(by_db) - {DEFAULT_DB}, key=lambda d: _DB_ORDER.get(d, len(_DB_ORDER))):
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
    for db in sorted({r.key.db for r in recs}, key=lambda d: _DB_ORDER.get(d, len(_DB_ORDER))):
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


def runs_table(runs: Runs) -> Table:
    """One row per input file: when it was written, which databases, arms and tables it supplies, its drift floor.

    The Databases column is there when some cell is not on SQLite (a report of SQLite files is what it was)."""
    whole = _whole(runs)
    names, order = labels(runs), {a: i for i, a in enumerate(all_arm_order(runs))}
    several = any(c.record.key.db != DEFAULT_DB or c.record.key.rtt_ms is not None for c in whole.cells.values())
    supplied: dict[str, list[Cell]] = defaultdict(list)
    for cell in whole.cells.values():
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
        ])
    notes = ["Written: when pytest-benchmark wrote the file (the end of its run). Cells: the cells of the report "
             "that come from the file. Drift floor: the spread of a fixed sqlite3 probe measured between the "
             "file's rounds (— : written before the probe existed). Probe level: the median of those probe "
             "figures, rows/s; the same workload in every run, so it shows how fast the machine was during each "
             "run: figures from runs whose levels differ by x % can differ by about as much for that reason alone."]
    if several:
        notes.append("Databases: where the file's cells stored (postgresql @ RTT …: through the latency proxy at "
                     "those round-trip times).")
    old = [s for s in runs.sources if any(c.record.collected_before_clock for c in supplied.get(s, []))]
    if old:
        notes.append(f"Timed with the old GC discipline (see the footnotes): {', '.join(old)}.")
    if any(c.instructions_cell for c in whole.cells.values()):
        notes.append("A file of instrumented cells (--ormbench-instructions) beside a timed file supplies those "
                     "cells' instructions only; their rows/s come from the timed file.")
    header = ["File", "Written (UTC)", *(["Databases"] if several else []), "Arms", "Tables", "Cells", "Schedule",
              "Drift floor", "Probe level"]
    text = (1, 2, 3, 4, 6, 7) if several else (1, 2, 3, 5, 6)
    return Table("Runs", header, rows, notes, anchor="runs", text_columns=text)


def _machine(info: dict[str, Any]) -> str:
    cpu = info.get("cpu") or {}
    brand = cpu.get("brand_raw") or info.get("processor") or info.get("machine") or "unknown CPU"
    count = cpu.get("count")
    system = " ".join(str(x) for x in (info.get("system"), info.get("release")) if x)
    return f"{brand}{f', {count} cores' if count else ''}{f', {system}' if system else ''}"
