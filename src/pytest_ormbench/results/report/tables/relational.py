"""Test 4's tables (the relational workload): per strategy shape, each arm's strategies with their statements and
their cost over the control's same kind of strategy; the other shapes, shapes x arms; the geometric means of
Test 4 apart from Tests 1-3's; and the latency sweep's strategy table.

Figures are operations per second: units one round did (pages, users, gets, rows streamed: the shape's
``unit``) over the median round time. Statements are per unit, from the untimed counting repetition.
"""

from __future__ import annotations

from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.results.report.format import NO_FIGURE, fmt_count, fmt_rate, fmt_ratio, fmt_spread
from pytest_ormbench.results.report.load import LoadedCell, Runs
from pytest_ormbench.results.report.table import Table
from pytest_ormbench.results.report.tables.noise import CONTESTED, Figure, leader, mean_figure, rate_figure
from pytest_ormbench.results.report.tables.rates import machines_line
from pytest_ormbench.results.report.tables.scope import arm_order, labels, shown_cells, whole, yardstick
from pytest_ormbench.workload.cells import CellKey, format_rtt
from pytest_ormbench.workload.relational import SHAPES, SHAPES_BY_CODE, SHAPES_BY_NAME, Shape
from pytest_ormbench.workload.spec import RELATIONAL

#: the order strategy kinds are shown in
KIND_ORDER = ("lazy", "join", "batched", "sequential", "pipelined")
SELECT_NOTE = ("SELECTs: per unit (a page, a user, a dashboard), from the untimed repetition that counted the "
               "statements (n/a: the engine has no SQL); a lazy read of a 50-user page sends 51, a batched one 2, a "
               "join 1.")
OVER_CONTROL_NOTE = ("× control: the arm's time per unit over the control's (hand-written SQL on the raw driver) "
                     "with the same kind of strategy on the same database; ×1.00 is the driver's floor.")
OPS_NOTE = "Operations per second (higher is better): units one round did over the median round time."
#: under a Test 4 table whose rows come from more than one machine: the strategy, shapes and means tables'
_ROWS_FROM = "Rows from {count} machines (the Runs table's Machine column): {which}. "
STRATEGY_ACROSS_MACHINES = (_ROWS_FROM + "Ops/s of different machines are not comparable; × control takes only a "
                            "control timed on the arm's own machine (blank where none was).")
SHAPES_ACROSS_MACHINES = _ROWS_FROM + "Ops/s of different machines are not comparable: no Best is named among them."
MEANS_ACROSS_MACHINES = _ROWS_FROM + "Means of different machines are not comparable."
#: the same under a latency sweep's table
SWEEP_ACROSS_MACHINES = (_ROWS_FROM + "Compare each arm's strategies with each other; figures of different "
                         "machines are not comparable.")
INSTRUCTIONS_NOTE = ("instr./unit: instructions per unit under callgrind (--ormbench-instructions), the op alone, median "
                     "of the rounds (lower is better); such a run's wall times are not speeds, so it has no ops/s.")


def relational_cells(runs: Runs) -> list[tuple[CellKey, LoadedCell]]:
    return [(k, c) for k, c in shown_cells(runs) if k.model == RELATIONAL.name]


def _kind(cell: LoadedCell) -> str | None:
    facts = cell.record.facts.arm_facts or {}
    kind = facts.get("strategy_kind")
    return str(kind) if kind else None


def _selects(cell: LoadedCell) -> str:
    """SELECTs per unit of the cell ("51", "2.5"), or n/a / — ."""
    counts = cell.statements_per_op
    if counts is None:
        return "n/a" if cell.statements_note else "—"
    units = max(1, cell.record.rows)
    per = counts.get("SELECT", 0) / units
    return f"{per:,.0f}" if per == int(per) else f"{per:,.2f}"


def _shown(fig: Figure | None) -> str:
    if fig is None:
        return fmt_rate(None)
    return " ".join([fmt_rate(fig.value), fmt_spread(fig.spread)]).strip()


def _same_machine_control(runs: Runs, cell: LoadedCell, control: str | None, kind: str,
                          fig: Figure) -> Figure | None:
    """The control's figure for ``cell``'s shape, mode and strategy kind from a file of the arm's own machine, among
    the cells a later file replaced (a control timed beside the arm, superseded by another machine's); None when
    there is none."""
    every, key = whole(runs), cell.record.key
    for old in reversed(every.superseded):
        k = old.record.key
        if (k.arm, k.model, k.op, k.mode, k.db, k.rtt_ms) == (control, key.model, key.op, key.mode, key.db, None) \
                and old.timed and _kind(old) == kind:
            base = rate_figure(old)
            if base is not None and not every.across_machines(base.sources | fig.sources):
                return base
    return None


def strategy_table(runs: Runs, shape: Shape, mode: str, legend: bool = True) -> Table | None:
    """One strategy shape: a row per arm and strategy, with its kind, ops/s, SELECTs and cost over the control."""
    cells = {(k.arm, k.strategy): c for k, c in relational_cells(runs) if k.op == shape.code and k.mode == mode}
    if not cells:
        return None
    names = labels(runs)
    figures = {key: rate_figure(c) for key, c in cells.items()}
    control_by_kind: dict[tuple[str, str], Figure] = {}
    for (arm, _strategy), c in cells.items():
        kind, fig = _kind(c), figures[(arm, _strategy)]
        if arm in CONTROL_ARMS and kind and fig is not None:
            control_by_kind[(arm, kind)] = fig
    rows = []
    order = {a: i for i, a in enumerate(arm_order(runs))}
    best_of_arm: dict[str, tuple[str, bool]] = {}
    counted = any(c.instructions_per_row is not None for c in cells.values())
    for arm in sorted({a for a, _ in cells}, key=lambda a: order.get(a, len(order))):
        mine = {s: figures[(arm, s)] for (a, s) in cells if a == arm and figures[(arm, s)] is not None}
        lead, clear = leader(runs, mine) if len(mine) > 1 else (None, False)
        if lead is not None:
            best_of_arm[arm] = (lead, clear)
        strategies = sorted((s for (a, s) in cells if a == arm),
                            key=lambda s: (KIND_ORDER.index(_kind(cells[(arm, s)]) or "lazy")
                                           if _kind(cells[(arm, s)]) in KIND_ORDER else 9, s or ""))
        for strategy in strategies:
            c, fig = cells[(arm, strategy)], figures[(arm, strategy)]
            kind = _kind(c) or "—"
            control = yardstick(runs, arm)
            base = control_by_kind.get((control, kind)) if control else None
            if base is not None and fig is not None and whole(runs).across_machines(base.sources | fig.sources):
                base = _same_machine_control(runs, c, control, kind, fig)  # the shown one ran on another machine
            over = fmt_ratio(base.value / fig.value) if base is not None and fig is not None and arm != control else ""
            mark = ""
            if arm in best_of_arm and best_of_arm[arm][0] == strategy:
                mark = " (fastest)" if best_of_arm[arm][1] else " (" + CONTESTED + ")"
            row = [names.get(arm, arm), f"{strategy}{mark}", kind, _shown(fig), _selects(c), over]
            if counted:
                row.append(fmt_count(c.instructions_per_row))
            rows.append(row)
    notes = [f"One unit: one {shape.unit}."]
    if legend:
        notes += [OPS_NOTE, SELECT_NOTE, OVER_CONTROL_NOTE,
                  "(fastest): the arm's fastest strategy here, its lead beyond the noise; (contested): within it."]
    if any(r[3] == "—" for r in rows):
        notes.append(NO_FIGURE)
    if counted and legend:
        notes.append(INSTRUCTIONS_NOTE)
    notes.extend(machines_line(runs, ((k, c) for k, c in relational_cells(runs) if k.op == shape.code
                                      and k.mode == mode), STRATEGY_ACROSS_MACHINES))
    return Table(f"{shape.code} {shape.title} — {mode} (ops/s by strategy)",
                 ["Arm", "Strategy", "Kind", "ops/s", "SELECTs", "× control", *(["instr./unit"] if counted else [])],
                 rows, notes, anchor=f"relational-{shape.name}-{mode}")


def shapes_table(runs: Runs, mode: str) -> Table | None:
    """The shapes without a strategy axis: shapes x arms, ops/s, with a Best column."""
    flat = [s for s in SHAPES if not s.strategies]
    cells = {(k.arm, k.op): c for k, c in relational_cells(runs)
             if k.mode == mode and not SHAPES_BY_CODE[k.op].strategies}
    if not cells:
        return None
    names = labels(runs)
    arms = [a for a in arm_order(runs) if any(k[0] == a for k in cells)]
    contenders = [a for a in arms if a not in CONTROL_ARMS]
    rows = []
    for shape in flat:
        figs = {a: f for a in arms if (c := cells.get((a, shape.code))) is not None and (f := rate_figure(c))}
        if not any((a, shape.code) in cells for a in arms):
            continue
        best, clear = leader(runs, {a: figs[a] for a in contenders if a in figs})
        best_text = "—" if best is None else names[best] if clear else CONTESTED
        rows.append([f"{shape.code} {shape.name}", *(_shown(figs.get(a)) for a in arms), best_text])
    notes = [OPS_NOTE + " Units: " + "; ".join(f"{s.code} a {s.unit}" for s in flat) + ".",
             "Best: the fastest arm other than the controls, where its lead over the runner-up is beyond the noise."]
    if any(c.startswith("—") for r in rows for c in r[1:-1]):
        notes.append(NO_FIGURE)
    notes.extend(machines_line(runs, ((k, c) for k, c in relational_cells(runs) if k.mode == mode
                                      and not SHAPES_BY_CODE[k.op].strategies), SHAPES_ACROSS_MACHINES))
    return Table(f"Test 4: the other shapes — {mode} (ops/s, higher is better)", ["Shape", *(names[a] for a in arms),
                 "Best"], rows, notes, anchor=f"relational-shapes-{mode}")


def stream_memory_table(runs: Runs, mode: str) -> Table | None:
    """R12's memory beside its speed: the peak of Python's allocations and the growth of the process's resident set
    while one repetition streamed the table (drivers buffer rows in C, which only the second shows)."""
    code = SHAPES_BY_NAME["stream_comments"].code
    cells = [(k, c) for k, c in relational_cells(runs) if k.op == code and k.mode == mode
             and c.record.facts.memory_peak_bytes is not None]
    if not cells:
        return None
    names = labels(runs)
    order = {a: i for i, a in enumerate(arm_order(runs))}
    rows = []
    for k, c in sorted(cells, key=lambda kc: order.get(kc[0].arm, 99)):
        rss = (c.record.facts.arm_facts or {}).get("rss_peak_growth_bytes")
        rows.append([names.get(k.arm, k.arm), _shown(rate_figure(c)), _mib(c.record.facts.memory_peak_bytes),
                     "—" if rss is None else _mib(rss)])
    return Table(f"R12 stream_comments — {mode}: memory beside speed",
                 ["Arm", "rows/s", "Python peak, MiB", "RSS growth, MiB"], rows,
                 ["Measured in one untimed repetition after the timed rounds: the peak of the allocations "
                  "tracemalloc sees, and how far the process's peak resident set grew during the op (Linux VmHWM, "
                  "reset before it). Constant memory is the point of streaming: a figure that grows with the table "
                  "means the rows were held at once."], anchor=f"relational-stream-memory-{mode}")


def _mib(value: float | None) -> str:
    return "—" if value is None else f"{value / 2**20:,.1f}"


def instructions_table(runs: Runs, mode: str) -> Table | None:
    """Instructions per unit of the shapes without a strategy axis, shapes x arms (an instructions run's figure)."""
    cells = {(k.arm, k.op): c for k, c in relational_cells(runs)
             if k.mode == mode and not SHAPES_BY_CODE[k.op].strategies and c.instructions_per_row is not None}
    if not cells:
        return None
    names = labels(runs)
    arms = [a for a in arm_order(runs) if any(k[0] == a for k in cells)]
    rows = [[f"{shape.code} {shape.name}", *(fmt_count(c.instructions_per_row) if (c := cells.get((a, shape.code)))
                                             else "—" for a in arms)]
            for shape in SHAPES if any((a, shape.code) in cells for a in arms)]
    return Table(f"Test 4: the other shapes — {mode} (instructions per unit, lower is better)",
                 ["Shape", *(names[a] for a in arms)], rows, [INSTRUCTIONS_NOTE], anchor=f"relational-instructions-{mode}")


def selects_table(runs: Runs, mode: str) -> Table | None:
    """Statements per unit of the shapes without a strategy axis, shapes x arms (the strategy shapes' are in their
    own tables)."""
    cells = {(k.arm, k.op): c for k, c in relational_cells(runs)
             if k.mode == mode and not SHAPES_BY_CODE[k.op].strategies}
    if not cells or not any(c.statements_per_op is not None for c in cells.values()):
        return None
    names = labels(runs)
    arms = [a for a in arm_order(runs) if any(k[0] == a for k in cells)]
    rows = []
    for shape in SHAPES:
        if shape.strategies or not any((a, shape.code) in cells for a in arms):
            continue
        row = [f"{shape.code} {shape.name}"]
        per_unit = shape.kind == "read" and shape.name != "stream_comments"
        for a in arms:
            c = cells.get((a, shape.code))
            row.append("—" if c is None else _statements_text(c, per_unit))
        rows.append(row)
    return Table(f"Test 4: statements — {mode}", ["Shape", *(names[a] for a in arms)], rows,
                 ["Statements by kind (S SELECT, I INSERT, U UPDATE, D DELETE, B BEGIN, C COMMIT, o other), from the "
                  "untimed counting repetition: per unit for the reads (a page, a query, a get), per round for the "
                  "writes and R12 (one round streams the whole table). On SQLite an arm whose schema deletes R18's "
                  "children by ON DELETE CASCADE shows each cascaded deletion as a DELETE (the driver's trace "
                  "reports them)."], anchor=f"relational-statements-{mode}")


def _statements_text(cell: LoadedCell, per_unit: bool) -> str:
    counts = cell.statements_per_op
    if counts is None:
        return "n/a" if cell.statements_note else "—"
    units = max(1, cell.record.rows) if per_unit else 1
    letters = {"SELECT": "S", "INSERT": "I", "UPDATE": "U", "DELETE": "D", "BEGIN": "B", "COMMIT": "C", "other": "o"}
    parts = []
    for kind, letter in letters.items():
        n = counts.get(kind, 0)
        if n:
            per = n / units
            parts.append((f"{per:,.0f}" if per == int(per) else f"{per:,.2g}") + letter)
    return " ".join(parts) or "0"


def means_table(runs: Runs) -> Table | None:
    """Test 4's geometric means per arm and mode, over every shape the arm ran (a strategy shape counts once,
    with the arm's fastest strategy), apart from Tests 1-3's."""
    cells = relational_cells(runs)
    if not cells:
        return None
    modes = [m for m in ("cold", "warm") if any(k.mode == m for k, _ in cells)]
    best: dict[tuple[str, str, str], Figure] = {}
    for k, c in cells:
        fig = rate_figure(c)
        if fig is None:
            continue
        slot = (k.arm, k.mode, k.op)
        if slot not in best or fig.value > best[slot].value:
            best[slot] = fig
    names = labels(runs)
    arms = [a for a in arm_order(runs) if any(s[0] == a for s in best)]
    most = {m: max((sum(1 for s in best if s[0] == a and s[1] == m) for a in arms), default=0) for m in modes}
    rows, short = [], False
    for a in arms:
        row = [names[a]]
        for m in modes:
            figs = [f for s, f in best.items() if s[0] == a and s[1] == m]
            gm = mean_figure(figs) if figs else None
            text = _shown(gm)
            if figs and len(figs) < most[m]:
                text += f" ({len(figs)}/{most[m]})"
                short = True
            row.append(text)
        rows.append(row)
    notes = ["Geometric mean of ops/s over the Test 4 shapes each arm ran; a strategy shape counts once, with the "
             "arm's fastest strategy. Not comparable with Tests 1-3's means (other work, other units)."]
    if short:
        notes.append("(n/m): the arm ran n of the m shapes the most complete arm ran; its mean is over those.")
    notes.extend(machines_line(runs, cells, MEANS_ACROSS_MACHINES))
    return Table("Test 4 overall: geometric means, ops/s", ["Arm", *(f"Test 4 {m}" for m in modes)], rows, notes,
                 anchor="relational-overall")


def relational_tables(runs: Runs) -> list[Table]:
    """Test 4's tables for one database, in order (none when it has no Test 4 cell)."""
    cells = relational_cells(runs)
    if not cells:
        return []
    out: list[Table] = []
    means = means_table(runs)
    if means:
        out.append(means)
    modes = [m for m in ("cold", "warm") if any(k.mode == m for k, _ in cells)]
    for mode in modes:
        legend = True
        for shape in SHAPES:
            if shape.strategies:
                t = strategy_table(runs, shape, mode, legend)
                if t:
                    out.append(t)
                    legend = False
        flat = shapes_table(runs, mode) if any(c.timed for _, c in cells) else None
        for t in (flat, stream_memory_table(runs, mode), instructions_table(runs, mode), selects_table(runs, mode)):
            if t:
                out.append(t)
    return out


def sweep_figures(runs: Runs, db: str) -> dict[tuple[Shape, str], dict[tuple[str, str | None], dict[float | None,
                                                                                                   Figure]]]:
    """(shape, mode) -> (arm, strategy) -> RTT (None: direct) -> the cell's ops/s figure, for the strategy shapes
    of a latency sweep on ``db`` (timed records only; shapes without a swept cell left out)."""
    whole = runs.whole or runs
    out: dict[tuple[Shape, str], dict[tuple[str, str | None], dict[float | None, Figure]]] = {}
    cells = [(k, c) for k, c in whole.cells.items() if k.model == RELATIONAL.name and k.db == db and c.timed]
    swept = {(k.op, k.mode) for k, _ in cells if k.rtt_ms is not None}
    for k, c in cells:
        shape = SHAPES_BY_CODE[k.op]
        if not shape.strategies or (k.op, k.mode) not in swept:
            continue
        fig = rate_figure(c)
        if fig is not None and fig.value:
            out.setdefault((shape, k.mode), {}).setdefault((k.arm, k.strategy), {})[k.rtt_ms] = fig
    return dict(sorted(out.items(), key=lambda kv: (SHAPES.index(kv[0][0]), kv[0][1])))


def strategy_sweep(runs: Runs, db: str) -> dict[tuple[Shape, str], dict[tuple[str, str | None], dict[float | None,
                                                                                                  float]]]:
    """As :func:`sweep_figures`, in milliseconds per unit (the charts' figure)."""
    return {sm: {arm_s: {r: 1000.0 / f.value for r, f in by_rtt.items()} for arm_s, by_rtt in figs.items()}
            for sm, figs in sweep_figures(runs, db).items()}


def fastest_strategies(runs: Runs, figs: dict[tuple[str, str | None], dict[float | None, Figure]],
                       columns: list[float | None]) -> dict[tuple[str, float | None], tuple[str | None, bool]]:
    """(arm, RTT) -> the arm's fastest strategy there and whether its lead over the arm's runner-up stands beyond
    the noise (``noise.leader``); (None, False) where the arm ran one strategy only."""
    out: dict[tuple[str, float | None], tuple[str | None, bool]] = {}
    for arm in {a for a, _ in figs}:
        for r in columns:
            mine = {str(s): v[r] for (a, s), v in figs.items() if a == arm and r in v}
            out[(arm, r)] = leader(runs, mine) if len(mine) > 1 else (None, False)
    return out


def sweep_columns(ms: dict[tuple[str, str | None], dict[float | None, object]]) -> list[float | None]:
    """The RTTs of a sweep in order, "direct" (None) first when it ran."""
    rtts = sorted({r for v in ms.values() for r in v if r is not None})
    return ([None] if any(None in v for v in ms.values()) else []) + rtts


def latency_strategies(runs: Runs, db: str) -> list[Table]:
    """The latency sweep of the strategy shapes on ``db``: per shape, a row per arm and strategy, ms per unit at
    each RTT, and which of the arm's strategies is fastest there (beyond the noise, or within it)."""
    names = labels(runs)
    order = {a: i for i, a in enumerate(arm_order(runs.whole or runs))}
    out = []
    for (shape, mode), figs in sweep_figures(runs, db).items():
        columns = sweep_columns(figs)
        fastest = fastest_strategies(runs, figs, columns)
        rows = []
        for (arm, strategy) in sorted(figs, key=lambda x: (order.get(x[0], 99), x[1] or "")):
            row = [names.get(arm, arm), strategy or "—"]
            for r in columns:
                fig = figs[(arm, strategy)].get(r)
                text = "—" if fig is None else f"{1000.0 / fig.value:.3g}"
                lead, clear = fastest.get((arm, r), (None, False))
                if fig is not None and lead == strategy:
                    text += "*" if clear else "~"
                row.append(text)
            rows.append(row)
        header = ["Arm", "Strategy", *("direct" if r is None else f"{format_rtt(r)} ms" for r in columns)]
        notes = ["Milliseconds per unit (lower is better, the median round's) at each round-trip time the latency "
                 "proxy held; *: the arm's fastest strategy at that RTT, its lead over the arm's runner-up beyond "
                 "the noise (the larger of the run's drift floor and either cell's round range); ~: fastest, but "
                 "within the noise (contested)."]
        notes += _flips(fastest, columns, names)
        notes += machines_line(runs, ((k, c) for k, c in whole(runs).cells.items() if k.model == RELATIONAL.name
                                      and k.db == db and k.op == shape.code and k.mode == mode), SWEEP_ACROSS_MACHINES)
        out.append(Table(f"{shape.code} {shape.title} — {mode}, by round-trip time", header, rows, notes,
                         anchor=f"relational-latency-{shape.name}-{mode}"))
    return out


def _flips(fastest: dict[tuple[str, float | None], tuple[str | None, bool]], columns: list[float | None],
           names: dict[str, str]) -> list[str]:
    """One line per arm whose fastest strategy changes along the RTTs, counted only between leads that stand
    beyond the noise; an arm whose leader changes only through contested leads gets a line saying so."""
    lines = []
    for arm in sorted({a for a, _ in fastest}):
        clear = [(r, fastest[(arm, r)][0]) for r in columns if fastest.get((arm, r), (None, False))[1]
                 and fastest[(arm, r)][0]]
        changes = [(a, b) for a, b in zip(clear, clear[1:]) if a[1] != b[1]]
        if changes:
            steps = ", ".join(f"{w0[1]} at {_rtt(w0[0])} → {w1[1]} at {_rtt(w1[0])}" for w0, w1 in changes)
            lines.append(f"{names.get(arm, arm)}: the fastest strategy flips: {steps}.")
            continue
        every = [fastest[(arm, r)][0] for r in columns if fastest.get((arm, r), (None, False))[0]]
        if len(set(every)) > 1:
            lines.append(f"{names.get(arm, arm)}: the fastest strategy changes along the RTTs "
                         f"({' / '.join(str(w) for w in every)}), but only through leads within the noise: "
                         "not a flip.")
    return lines


def _rtt(r: float | None) -> str:
    return "direct" if r is None else f"{format_rtt(r)} ms"

