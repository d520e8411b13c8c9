"""Runs one cell inside the measuring process: restore, prepare, time (``measuring.timing``), verify.

It knows the contract and the plan, nothing of pytest and nothing of any particular ORM; the clock runs
only in ``timing.timed_call``.
"""

from __future__ import annotations

import gc
import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from pytest_ormbench.workload.spec import ALL_MODELS, RELATIONAL, Settings, Unsupported
from pytest_ormbench.arms.contract import Arm
from pytest_ormbench.backends import Database, database_for
from pytest_ormbench.workload.phases import PhaseClock
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.workload.statements import StatementCounter
from pytest_ormbench.measuring.callgrind import Callgrind
from pytest_ormbench.workload.plan import CellPlan, Sizes, State, make_plan
from pytest_ormbench.workload.relational import RelationalSizes, ShapePlan, make_shape_plan
from pytest_ormbench.measuring import relational
from pytest_ormbench.arms.registry import import_arm
from pytest_ormbench.measuring.timing import GC_DISCIPLINE, Counters, drive, event_loop, timed_call
from pytest_ormbench.measuring.verify import (VerificationError, VerifiedStates, check_pragmas, check_state,
    check_statements, needs_read_back, verify)

#: the bookkeeping clock: where a round's untimed time goes (docs/methodology.md, "Where a run's time
#: goes"); a name apart so that ``clock`` is read only around the op
phase_clock: Callable[[], float] = time.perf_counter


@dataclass
class Cell:
    """One benchmark cell as the worker receives it."""

    arm: str
    #: "module:Class" of the arm, resolved from the registry by the parent: the child imports just this
    target: str
    model: str
    op: str  # letter
    table: str
    mode: str
    sizes: Sizes
    settings: Settings
    templates_dir: Path
    work_dir: Path
    rounds: int = 1
    warmup: bool = False
    #: after the timed rounds, one more untimed, verified repetition under tracemalloc
    memory: bool = False
    #: count every round's statements in this process (a trace on every connection it opens; it costs a
    #: Python call per statement, so a timed run asks for it in a process of its own and keeps no time from it)
    statements: bool = False
    #: the database axis: ``sqlite`` (the embedded side) or a server (``postgresql``)
    db: str = "sqlite"
    #: a latency sweep's round-trip time (ms) between the arm and its server; None: direct
    rtt_ms: float | None = None
    #: a Test 4 shape's loading strategy (as the arm names it); None: the shape has no strategy axis
    strategy: str | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Cell":
        return cls(
            arm=d["arm"], target=d["target"], model=d["model"], op=d["op"], table=d["table"], mode=d["mode"],
            sizes=Sizes(**d["sizes"]), settings=Settings.from_json(d["settings"]),
            templates_dir=Path(d["templates_dir"]), work_dir=Path(d["work_dir"]),
            rounds=int(d.get("rounds", 1)), warmup=bool(d.get("warmup", False)),
            memory=bool(d.get("memory", False)), statements=bool(d.get("statements", False)),
            db=str(d.get("db") or "sqlite"), rtt_ms=None if d.get("rtt_ms") is None else float(d["rtt_ms"]),
            strategy=d.get("strategy"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "arm": self.arm, "target": self.target, "model": self.model, "op": self.op, "table": self.table, "mode": self.mode,
            "sizes": {"iterations": self.sizes.iterations, "batch": self.sizes.batch},
            "settings": self.settings.to_json(), "templates_dir": str(self.templates_dir),
            "work_dir": str(self.work_dir), "rounds": self.rounds, "warmup": self.warmup,
            "memory": self.memory, "statements": self.statements, "db": self.db,
            "rtt_ms": self.rtt_ms, "strategy": self.strategy,
        }


@dataclass
class RoundResult:
    seconds: float
    facts: dict[str, Any] = field(default_factory=dict)
    #: statements by kind, when this round counted them
    statements: dict[str, int] | None = None
    #: callgrind's count for the op, when this round ran under it
    instructions: int | None = None
    #: collector runs inside the timed region
    gc_collections: int = 0
    #: the round's own phases (prepare, timed, verify), seconds (``workload.phases``)
    phases: dict[str, float] = field(default_factory=dict)


def _settings_tag(settings: Settings) -> str:
    tag = f"{settings.journal_mode}-{settings.synchronous}-fk{int(settings.foreign_keys)}"
    return tag + "".join(f"-{k}={v}" for k, v in (*settings.postgresql, *settings.mysql))


def expected_durability(arm: Arm, database: Database) -> Mapping[str, str]:
    """What the arm's live connection must report: the arm's own claim, else its database's."""
    expected = arm.expected_settings()
    return database.expected_durability(arm.settings) if expected is None else expected


def ensure_template(arm_cls: type[Arm], state: State, settings: Settings, templates_dir: Path,
                    db: str = "sqlite") -> Path:
    """Build a starting state once (untimed), verify it, keep it for every round."""
    database = database_for(arm_cls, db)
    templates_dir.mkdir(parents=True, exist_ok=True)
    path = database.location(templates_dir, f"{arm_cls.name}-{db}-{state.key}-{_settings_tag(settings)}",
                             template=True)
    if database.exists(path):
        return path
    tmp = database.location(templates_dir, f".building-{uuid.uuid4().hex}", template=True)
    database.create_empty(tmp)
    arm = arm_cls(state.model, settings)
    drive(arm.open(tmp))
    try:
        drive(arm.create_schema())
        if state.count:
            drive(arm.populate(state.rows(), state.links()))
        check_state(state.model, arm.snapshot(), state.expected_rows(), state.links(), "starting state")
        check_pragmas(drive(arm.pragmas()), expected_durability(arm, database))
    finally:
        drive(arm.close())
    for leftover in database.leftovers(tmp):
        raise RuntimeError(f"{arm_cls.name}: close() left {leftover.name} behind; the template is not self-contained")
    database.finish_template(tmp)
    database.rename(tmp, path)
    return path


def prepare_inputs(arm: Arm, plan: CellPlan) -> tuple[tuple[Any, ...], list[Any] | None]:
    """Everything before the timer: objects built, rows loaded, values chosen."""
    name, inputs = plan.op.name, plan.inputs
    if name.startswith("insert_"):
        objs = arm.build(plan.new_rows)
        return (objs,), objs
    if name in ("filter_large", "filter_dicts", "filter_tuples"):
        return (inputs["levels"],), None
    if name == "filter_small":
        return (inputs["pages"], inputs["limit"]), None
    if name == "get":
        return (inputs["ids"],), None
    objs = list(drive(arm.load_all()))
    ids = [arm.id_of(o) for o in objs]
    if ids != list(range(1, plan.state.count + 1)):
        raise VerificationError(f"load_all returned {len(ids)} objects, not ids 1..{plan.state.count} in order")
    if name == "update_whole":
        return (objs, inputs["values"]), objs
    if name == "update_partial":
        return (objs, inputs["levels"]), objs
    return (objs,), objs


def check_after_op(arm: Arm, database: Database, db: Path) -> int | None:
    """What every op must leave: no transaction open, one connection; the arm's handles counted."""
    handles = database.connections(db)
    if database.open_transactions(db):
        raise VerificationError("the arm's connection is still inside a transaction after the op: a write in it "
                                "would be neither committed nor counted")
    return handles


def check_connections(arm: Arm, database: Database, db: Path, handles: int | None) -> dict[str, Any]:
    """After the harness's read-back: one connection, the durability read back; the facts to record."""
    database.settle(db, handles)
    if handles is not None and handles > 1:
        raise VerificationError(f"{handles} connections are open on the database; every arm must use one")
    pragmas = drive(arm.pragmas())
    check_pragmas(pragmas, expected_durability(arm, database))
    return {"pragmas": pragmas, "connections": handles, **arm.op_facts()}


def run_round(arm: Arm, plan: CellPlan, db: Path, memory: bool = False, counters: Counters | None = None,
              discipline: str | None = None, database: Database | None = None,
              verified: VerifiedStates | None = None, read_back_always: bool = False) -> RoundResult:
    """Prepare, run the op once (timed), then verify it. Raises on a failed check.

    With ``memory`` the op runs under tracemalloc instead (slower: never a timed round)
    and the facts carry the peak it allocated. ``counters`` count statements or
    instructions between the two clock reads. ``verified``: the cell's read-backs that passed before.
    The table is read back only where verification needs it (``needs_read_back``), or after every round with
    ``read_back_always`` (a warm process under callgrind: what runs between its counted rounds stays as it was).
    """
    discipline = discipline or GC_DISCIPLINE
    database = database or database_for(type(arm))
    start = phase_clock()
    # Everything that touches files or the whole heap happens before preparation, which then warms the
    # caches the op needs; between preparation and the clock only the collector's state changes. (The
    # commit counter read here also counts any commit preparation made, so such a commit fails the check.)
    before = database.commits(db)
    if discipline == "prep-collect" or memory:
        gc.collect()
    args, objs = prepare_inputs(arm, plan)
    prepared = phase_clock()
    timed = timed_call(arm, getattr(arm, plan.op.name), args, memory=memory, counters=counters, discipline=discipline)
    after = database.commits(db)
    commits = after - before if before is not None and after is not None else None
    handles = check_after_op(arm, database, db)
    read_back = read_back_always or needs_read_back(plan, commits, database.counts_every_write)
    snap = arm.snapshot() if read_back else None
    facts = verify(arm, plan, timed.result, objs, snap, commits, verified, database.counts_every_write)
    facts.update(check_connections(arm, database, db, handles))
    if timed.statements is not None:
        check_statements(plan, timed.statements)
    if timed.memory_peak is not None:
        facts["memory_peak_bytes"] = timed.memory_peak
    return RoundResult(timed.seconds, facts, statements=timed.statements, instructions=timed.instructions,
                       gc_collections=timed.gc_collections, phases=round_phases(start, prepared, timed.seconds))


def round_phases(start: float, prepared: float, seconds: float) -> dict[str, float]:
    """A round's phases from its clock reads: preparation up to ``prepared``, the op, and the rest (the
    collector held and let go, the checks) as verification."""
    end = phase_clock()
    return {"prepare": prepared - start, "timed": seconds, "verify": max(0.0, end - prepared - seconds)}


def run_shape_round(arm: Arm, plan: ShapePlan, strategy: str | None, db: Path, memory: bool = False,
                    counters: Counters | None = None, discipline: str | None = None,
                    database: Database | None = None) -> RoundResult:
    """One round of a Test 4 shape: its inputs prepared, the arm's shape method timed, then verified."""
    discipline = discipline or GC_DISCIPLINE
    database = database or database_for(type(arm))
    start = phase_clock()
    before = database.commits(db)
    if discipline == "prep-collect" or memory:
        gc.collect()
    args, kwargs = relational.call_args(plan, strategy)
    rss_before = reset_peak_rss() if memory else None
    prepared = phase_clock()
    timed = timed_call(arm, getattr(arm, plan.shape.name), args, kwargs, memory=memory, counters=counters,
                       discipline=discipline)
    after = database.commits(db)
    commits = after - before if before is not None and after is not None else None
    handles = check_after_op(arm, database, db)
    facts = relational.verify_round(arm, plan, timed.result, database, db, commits)
    facts.update(check_connections(arm, database, db, handles))
    if timed.statements is not None:
        relational.check_selects(plan, timed.statements)
    if timed.memory_peak is not None:
        facts["memory_peak_bytes"] = timed.memory_peak
        rss_peak = peak_rss()
        if rss_before is not None and rss_peak is not None:
            facts["rss_peak_growth_bytes"] = max(0, rss_peak - rss_before)
    return RoundResult(timed.seconds, facts, statements=timed.statements, instructions=timed.instructions,
                       gc_collections=timed.gc_collections, phases=round_phases(start, prepared, timed.seconds))


def peak_rss() -> int | None:
    """The process's peak resident set since the last reset (Linux ``VmHWM``), in bytes; None elsewhere."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def reset_peak_rss() -> int | None:
    """Reset the peak resident set to what the process holds now (Linux: ``5`` into ``clear_refs``) and return
    it, so that the next :func:`peak_rss` is what the op alone grew to (drivers buffer rows in C, which
    tracemalloc does not see); None where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return None
    return peak_rss()


def counters_for(cell: Cell, database: Database) -> Counters:
    """What this process counts around each op: statements if the cell asks, instructions under callgrind."""
    counters = Counters(callgrind=Callgrind.from_environment())
    if cell.statements:
        counter = StatementCounter()
        reason = database.trace_statements(counter)
        if reason is None:
            counters.statements = counter
        else:
            counters.statements_not_applicable = reason
    return counters


@dataclass
class CellWork:
    """What a cell runs, whichever test it belongs to: how to build its starting state and run one round."""

    build: Callable[[], Path]
    round: Callable[..., RoundResult]


def cell_work(cell: Cell, arm_cls: type[Arm]) -> CellWork:
    """The cell's work (Tests 1-3: an op on a model; Test 4: a shape, maybe with a strategy); raises
    :class:`Unsupported` with the arm's reason for a cell it does not run."""
    if cell.model == RELATIONAL.name:
        shape_plan = shape_plan_of(cell)
        reason = arm_cls.unsupported_reason(shape_plan.shape, cell.strategy)  # type: ignore[attr-defined]
        if reason:
            raise Unsupported(reason)
        # a shape's read-back is a table-by-table equality already: no memo of verified states
        return CellWork(
            lambda: relational.ensure_relational_template(arm_cls, shape_plan.sizes, cell.settings, cell.templates_dir,
                                                          cell.db, drive, expected_durability),
            lambda arm, db, verified=None, read_back_always=False, **kw: run_shape_round(
                arm, shape_plan, cell.strategy, db, **kw))
    plan = make_plan(cell.model, cell.op, cell.table, cell.sizes)
    reason = arm_cls.unsupported.get(plan.op.name)
    if reason:
        raise Unsupported(reason)
    return CellWork(lambda: ensure_template(arm_cls, plan.state, cell.settings, cell.templates_dir, cell.db),
                    lambda arm, db, **kw: run_round(arm, plan, db, **kw))


def verified_key(cell: Cell) -> str:
    """What fixes a cell's expected state: its arm, work, table, sizes, database and settings (not its mode: a
    warm round's verified read-back vouches for a cold one's, and the other way round)."""
    return json.dumps([cell.target, cell.arm, cell.model, cell.op, cell.table, asdict(cell.sizes), cell.db,
                       cell.settings.to_json(), cell.strategy, cell.rtt_ms], sort_keys=True, default=str)


def shape_plan_of(cell: Cell) -> ShapePlan:
    """A Test 4 cell's plan: its shape on data scaled by ``--ormbench-iterations``."""
    from pytest_ormbench.workload.relational import SHAPES_BY_CODE
    return make_shape_plan(SHAPES_BY_CODE[cell.op].name, RelationalSizes.from_iterations(cell.sizes.iterations))


class CellSession:
    """A cell's arm, connection and work database in this process, opened once (the template found or built,
    the copy, the connection): then one request's rounds, or (a kept session, ``measuring.worker``) the rounds
    of each interleaved request of a warm cell in turn, warmed up once and restored before every round as the
    rounds of one request are. :attr:`phases` is the current request's account."""

    def __init__(self, cell: Cell) -> None:
        arm_cls = import_arm(cell.target)
        self.work = cell_work(cell, arm_cls)
        event_loop()
        database = self.database = database_for(arm_cls, cell.db)
        if cell.db != "sqlite":
            database.rtt_ms = cell.rtt_ms  # type: ignore[attr-defined]  # the proxy the arm's location points at
        self.phases = PhaseClock()
        with self.phases("template"):
            self.template = self.work.build()
        self.counters = counters_for(cell, database)  # before the arm connects: the trace goes on at connect time
        self.counters.phases = self.phases
        # under callgrind, a warm process reads back after every round and compares every read-back in full, as
        # before either shortcut, so that the shortcuts do not change what runs between its counted rounds (the
        # harness's own code still shapes the heap: docs/methodology.md, instructions); a cold round's checks come
        # after its one counted op
        self.counted_warm = self.counters.callgrind is not None and cell.mode != "cold"
        self.verified = None if self.counted_warm else VerifiedStates(verified_key(cell), cell.work_dir / "verified")
        cell.work_dir.mkdir(parents=True, exist_ok=True)
        with self.phases("copy"):
            self.db = database.location(cell.work_dir, f"{cell.arm}-{uuid.uuid4().hex[:8]}")
            database.copy(self.template, self.db)
            # on a server: the column types the ORM created, recorded per cell (how each ORM maps JSON, ...)
            self.column_types = database.column_types(self.db)
        self.arm = arm_cls(ALL_MODELS[cell.model], cell.settings)
        self.opened = False
        with self.phases("open"):
            try:
                drive(self.arm.open(self.db))
                self.opened = True
            finally:
                if not self.opened:
                    database.remove(self.db)
        self.read_only = CellKey(cell.arm, cell.model, cell.op, cell.mode, cell.table).read_only
        self.refreshed = False
        #: the database holds what an op left (the next round restores first); the warm-up has run
        self.dirty = self.warmed = False
        self.requests = 0

    def check_kept(self) -> None:
        """Before a kept session's next request: the arm must still hold its work database open. An arm that
        declares ``independent_sessions`` but shares its connection with the process's other instances lost it
        to the cell the worker served in between; its rounds would run on that cell's database."""
        handles = self.database.connections(self.db)
        if handles is not None and handles < 1:
            raise RuntimeError(f"{type(self.arm).__name__} declares independent_sessions, but its kept session no "
                               f"longer holds its database open: another instance in this process took its "
                               f"connection (set independent_sessions = False, or --ormbench-warm-start=fresh)")

    def reset(self) -> None:
        # a read leaves the rows as it found them (its counted statements must show no write, or it fails
        # verification), so a server skips the refill and redoes only the statistics
        if self.read_only and self.database.refresh_unchanged(self.db):
            self.refreshed = True
        else:
            drive(self.arm.restore(self.template))
        self.dirty = False

    def run(self, cell: Cell, on_round: Callable[[RoundResult], None] | None = None) -> list[RoundResult]:
        """The request's ``cell.rounds`` rounds: after the warm-up the first time a warm cell asks, each from
        the starting state; then the memory repetition when asked."""
        if self.requests:
            self.phases = self.counters.phases = PhaseClock()
        self.requests += 1
        phases, arm, db, database = self.phases, self.arm, self.db, self.database
        results: list[RoundResult] = []
        if cell.warmup and not self.warmed:
            with phases("warmup"):
                self.dirty = self.warmed = True
                # the warm-up: verified, its time discarded
                self.work.round(arm, db, database=database, verified=self.verified,
                                read_back_always=self.counted_warm)
        for _ in range(cell.rounds):
            if self.dirty:
                with phases("restore"):
                    self.reset()
            self.dirty = True
            res = self.work.round(arm, db, counters=self.counters, database=database, verified=self.verified,
                                 read_back_always=self.counted_warm)
            phases.merge(res.phases)
            results.append(res)
            if on_round:
                on_round(res)
        if cell.memory:
            with phases("memory"):
                self.reset()
                self.dirty = True
                mem = self.work.round(arm, db, memory=True, database=database, verified=self.verified,
                                      read_back_always=self.counted_warm)
            for fact in ("memory_peak_bytes", "rss_peak_growth_bytes"):
                if fact in mem.facts:
                    results[-1].facts[fact] = mem.facts[fact]
        if self.column_types and results:
            results[-1].facts["column_types"] = self.column_types
        if self.refreshed and results:
            # recorded: reads on a server timed before this discipline started from a refilled database
            results[-1].facts["between_rounds"] = "statistics only (a read: no refill)"
        return results

    def close(self) -> None:
        if self.opened:
            self.opened = False
            with self.phases("open"):
                try:
                    drive(self.arm.close())
                finally:
                    self.database.remove(self.db)


def run_cell(cell: Cell, on_round: Callable[[RoundResult], None] | None = None) -> tuple[list[RoundResult], Counters]:
    """Run a cell's rounds in this process (one round per process in cold mode); ``counters.phases`` says where
    this process's time on it went."""
    session = CellSession(cell)
    try:
        return session.run(cell, on_round), session.counters
    finally:
        session.close()


def build_templates(cell: Cell) -> str:
    """Build the cell's starting state in this process (so a cold child need not)."""
    return str(cell_work(cell, import_arm(cell.target)).build())
