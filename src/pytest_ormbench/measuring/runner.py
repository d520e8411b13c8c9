"""Runs one cell inside the measuring process: restore, prepare, time, verify.

This is the only place where the clock runs. It knows the contract and the
plan, nothing of pytest and nothing of any particular ORM.
"""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from pytest_ormbench.workload.spec import MODELS, Settings, Unsupported
from pytest_ormbench.arms.contract import Arm
from pytest_ormbench.backends import Database, database_for
from pytest_ormbench.workload.statements import StatementCounter
from pytest_ormbench.measuring.callgrind import Callgrind
from pytest_ormbench.workload.plan import CellPlan, Sizes, State, make_plan
from pytest_ormbench.arms.registry import import_arm
from pytest_ormbench.measuring.verify import (VerificationError, check_pragmas, check_state, check_statements,
    verify)

#: the clock: monotonic, the highest resolution the platform offers
clock: Callable[[], float] = time.perf_counter

_loop: asyncio.AbstractEventLoop | None = None


def event_loop() -> asyncio.AbstractEventLoop:
    """One loop per process, created before any timer starts."""
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = asyncio.new_event_loop()
    # set it again every time: some ORMs call asyncio.run() in constructors, which unsets it
    asyncio.set_event_loop(_loop)
    return _loop


def drive(value: Any) -> Any:
    """Run a coroutine to completion on the process loop; pass other values through."""
    if asyncio.iscoroutine(value):
        return event_loop().run_until_complete(value)
    return value


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

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Cell":
        return cls(
            arm=d["arm"], target=d["target"], model=d["model"], op=d["op"], table=d["table"], mode=d["mode"],
            sizes=Sizes(**d["sizes"]), settings=Settings.from_json(d["settings"]),
            templates_dir=Path(d["templates_dir"]), work_dir=Path(d["work_dir"]),
            rounds=int(d.get("rounds", 1)), warmup=bool(d.get("warmup", False)),
            memory=bool(d.get("memory", False)), statements=bool(d.get("statements", False)),
            db=str(d.get("db") or "sqlite"), rtt_ms=None if d.get("rtt_ms") is None else float(d["rtt_ms"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "arm": self.arm, "target": self.target, "model": self.model, "op": self.op, "table": self.table, "mode": self.mode,
            "sizes": {"iterations": self.sizes.iterations, "batch": self.sizes.batch},
            "settings": self.settings.to_json(), "templates_dir": str(self.templates_dir),
            "work_dir": str(self.work_dir), "rounds": self.rounds, "warmup": self.warmup,
            "memory": self.memory, "statements": self.statements, "db": self.db,
            "rtt_ms": self.rtt_ms,
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


#: how the garbage collector is held while the op runs (see docs/methodology.md, "What is timed").
#: ``freeze``: everything alive is frozen just before the clock (out of the collector's reach, so
#: preparation's garbage is never walked inside the op), the collector stays on for what the op allocates;
#: ``disable``: the same, and the collector off while timed (what timeit does);
#: ``prep-collect``: ``freeze`` after a full collection before preparation;
#: ``collect``: the old discipline, a full collection and a freeze right before the clock;
#: ``none``: nothing at all (the bare loop of experiments/fidelity.py).
GC_DISCIPLINES = ("freeze", "disable", "prep-collect", "collect", "none")
GC_DISCIPLINE = "freeze"


@dataclass
class Counters:
    """What a round counts around its op besides the clock (each optional)."""

    statements: StatementCounter | None = None
    #: why statements are not counted for this arm (no SQL), when they were asked for
    statements_not_applicable: str | None = None
    callgrind: Callgrind | None = None


class _GcWatch:
    """Counts the collector's runs inside the timed region (a gc callback costs nothing until one runs)."""

    def __init__(self) -> None:
        self.collections = 0

    def __call__(self, phase: str, info: Mapping[str, Any]) -> None:
        if phase == "start":
            self.collections += 1


def _held_gc(discipline: str) -> Callable[[], None]:
    """Put the collector in the discipline's state just before the clock; returns the undo."""
    if discipline == "none":
        return lambda: None
    if discipline == "collect":
        gc.collect()
    gc.freeze()
    if discipline == "disable":
        was_enabled = gc.isenabled()
        gc.disable()

        def undo() -> None:
            if was_enabled:
                gc.enable()
            gc.unfreeze()
        return undo
    return gc.unfreeze


def run_round(arm: Arm, plan: CellPlan, db: Path, memory: bool = False, counters: Counters | None = None,
              discipline: str | None = None, database: Database | None = None) -> RoundResult:
    """Prepare, run the op once (timed), then verify it. Raises on a failed check.

    With ``memory`` the op runs under tracemalloc instead (slower: never a timed round)
    and the facts carry the peak it allocated. ``counters`` count statements or
    instructions between the two clock reads.
    """
    discipline = discipline or GC_DISCIPLINE
    counters = counters or Counters()
    database = database or database_for(type(arm))
    # Everything that touches files or the whole heap happens before preparation, which then warms the
    # caches the op needs; between preparation and the clock only the collector's state changes. (The
    # commit counter read here also counts any commit preparation made, so such a commit fails the check.)
    before = database.commits(db)
    if discipline == "prep-collect" or memory:
        gc.collect()
    args, objs = prepare_inputs(arm, plan)
    method = getattr(arm, plan.op.name)
    statements, callgrind = counters.statements, counters.callgrind
    peak = instructions = counted = None
    watch = _GcWatch()
    undo = _held_gc("none" if memory else discipline)
    gc.callbacks.append(watch)
    try:
        coro = method(*args) if arm.is_async else None
        if memory:
            tracemalloc.start()
        if statements is not None:
            statements.start()
        if callgrind is not None:
            callgrind.start()
        if coro is not None:
            loop = event_loop()
            t0 = clock()
            result = loop.run_until_complete(coro)
            t1 = clock()
        else:
            t0 = clock()
            result = method(*args)
            t1 = clock()
        if callgrind is not None:
            instructions = callgrind.stop()
        if statements is not None:
            counted = statements.stop()
        if memory:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    finally:
        gc.callbacks.remove(watch)
        undo()
    after = database.commits(db)
    commits = after - before if before is not None and after is not None else None
    handles = database.connections(db)
    if database.open_transactions(db):
        raise VerificationError("the arm's connection is still inside a transaction after the op: a write in it "
                                "would be neither committed nor counted")
    snap = arm.snapshot()
    database.settle(db, handles)
    if handles is not None and handles > 1:
        raise VerificationError(f"{handles} connections are open on the database; every arm must use one")
    facts = verify(arm, plan, result, objs, snap, commits)
    if counted is not None:
        check_statements(plan, counted)
    pragmas = drive(arm.pragmas())
    check_pragmas(pragmas, expected_durability(arm, database))
    facts.update(pragmas=pragmas, connections=handles)
    facts.update(arm.op_facts())
    if peak is not None:
        facts["memory_peak_bytes"] = peak
    return RoundResult(t1 - t0, facts, statements=counted, instructions=instructions,
                       gc_collections=watch.collections)


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


def run_cell(cell: Cell, on_round: Callable[[RoundResult], None] | None = None) -> tuple[list[RoundResult], Counters]:
    """Run a cell's rounds in this process (one round per process in cold mode)."""
    arm_cls = import_arm(cell.target)
    model = MODELS[cell.model]
    plan = make_plan(cell.model, cell.op, cell.table, cell.sizes)
    reason = arm_cls.unsupported.get(plan.op.name)
    if reason:
        raise Unsupported(reason)
    event_loop()
    database = database_for(arm_cls, cell.db)
    if cell.db != "sqlite":
        database.rtt_ms = cell.rtt_ms  # type: ignore[attr-defined]  # the proxy the arm's location points at
    template = ensure_template(arm_cls, plan.state, cell.settings, cell.templates_dir, cell.db)
    counters = counters_for(cell, database)  # before the arm connects: the trace goes on at connect time
    cell.work_dir.mkdir(parents=True, exist_ok=True)
    db = database.location(cell.work_dir, f"{cell.arm}-{uuid.uuid4().hex[:8]}")
    database.copy(template, db)
    # on a server: the column types the ORM created, recorded per cell (how each ORM maps JSON, decimals, ...)
    column_types = database.column_types(db)
    arm = arm_cls(model, cell.settings)
    drive(arm.open(db))
    results: list[RoundResult] = []
    try:
        if cell.warmup:
            run_round(arm, plan, db, database=database)  # the warm-up: verified, its time discarded
            drive(arm.restore(template))
        for r in range(cell.rounds):
            if r:
                drive(arm.restore(template))
            res = run_round(arm, plan, db, counters=counters, database=database)
            results.append(res)
            if on_round:
                on_round(res)
        if cell.memory:
            drive(arm.restore(template))
            mem = run_round(arm, plan, db, memory=True, database=database)
            results[-1].facts["memory_peak_bytes"] = mem.facts["memory_peak_bytes"]
        if column_types and results:
            results[-1].facts["column_types"] = column_types
    finally:
        drive(arm.close())
        database.remove(db)
    return results, counters


def build_templates(cell: Cell) -> str:
    """Build the cell's starting state in this process (so a cold child need not)."""
    arm_cls = import_arm(cell.target)
    plan = make_plan(cell.model, cell.op, cell.table, cell.sizes)
    reason = arm_cls.unsupported.get(plan.op.name)
    if reason:
        raise Unsupported(reason)
    return str(ensure_template(arm_cls, plan.state, cell.settings, cell.templates_dir, cell.db))
