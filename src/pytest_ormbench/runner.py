"""Runs one cell inside the measuring process: restore, prepare, time, verify.

This is the only place where the clock runs. It knows the contract and the
plan, nothing of pytest and nothing of any particular ORM.
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import time
import tracemalloc
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .contract import MODELS, Arm, Settings, Unsupported
from .plan import CellPlan, Sizes, State, make_plan
from .registry import load_arm_class, set_extra_targets
from .sqlite_support import open_handles
from .verify import VerificationError, check_pragmas, check_state, verify

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
    #: extra "module:Class" arms registered for this run
    register: tuple[str, ...] = ()
    #: after the timed rounds, one more untimed, verified repetition under tracemalloc
    memory: bool = False

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Cell":
        return cls(
            arm=d["arm"], model=d["model"], op=d["op"], table=d["table"], mode=d["mode"],
            sizes=Sizes(**d["sizes"]), settings=Settings(**d["settings"]),
            templates_dir=Path(d["templates_dir"]), work_dir=Path(d["work_dir"]),
            rounds=int(d.get("rounds", 1)), warmup=bool(d.get("warmup", False)),
            register=tuple(d.get("register", ())), memory=bool(d.get("memory", False)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "arm": self.arm, "model": self.model, "op": self.op, "table": self.table, "mode": self.mode,
            "sizes": {"iterations": self.sizes.iterations, "batch": self.sizes.batch},
            "settings": self.settings.to_json(), "templates_dir": str(self.templates_dir),
            "work_dir": str(self.work_dir), "rounds": self.rounds, "warmup": self.warmup,
            "register": list(self.register), "memory": self.memory,
        }


@dataclass
class RoundResult:
    seconds: float
    facts: dict[str, Any] = field(default_factory=dict)


def copy_db(src: Path, dst: Path) -> None:
    """Copy a database (a file, or a directory for engines that keep one)."""
    if dst.is_dir():
        shutil.rmtree(dst)
    elif dst.exists():
        dst.unlink()
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copyfile(src, dst)


def remove_db(path: Path) -> None:
    for p in (path, *(path.with_name(path.name + s) for s in ("-journal", "-wal", "-shm"))):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        elif p.exists():
            p.unlink()


def _settings_tag(settings: Settings) -> str:
    return f"{settings.journal_mode}-{settings.synchronous}-fk{int(settings.foreign_keys)}"


def ensure_template(arm_cls: type[Arm], state: State, settings: Settings, templates_dir: Path) -> Path:
    """Build a starting state once (untimed), verify it, keep it for every round."""
    templates_dir.mkdir(parents=True, exist_ok=True)
    path = templates_dir / f"{arm_cls.name}-{state.key}-{_settings_tag(settings)}.db"
    if path.exists():
        return path
    tmp = templates_dir / f".building-{uuid.uuid4().hex}.db"
    arm = arm_cls(state.model, settings)
    drive(arm.open(tmp))
    try:
        drive(arm.create_schema())
        if state.count:
            drive(arm.populate(state.rows(), state.links()))
        check_state(state.model, arm.snapshot(), state.expected_rows(), state.links(), "starting state")
        check_pragmas(drive(arm.pragmas()), arm.expected_settings())
    finally:
        drive(arm.close())
    for suffix in ("-journal", "-wal", "-shm"):
        leftover = tmp.with_name(tmp.name + suffix)
        if leftover.exists() and leftover.stat().st_size:
            raise RuntimeError(f"{arm_cls.name}: close() left {leftover.name} behind; the template is not self-contained")
    os.replace(tmp, path)
    return path


def _prepare(arm: Arm, plan: CellPlan) -> tuple[tuple[Any, ...], list[Any] | None]:
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


def run_round(arm: Arm, plan: CellPlan, db: Path, memory: bool = False) -> RoundResult:
    """Prepare, run the op once (timed), then verify it. Raises on a failed check.

    With ``memory`` the op runs under tracemalloc instead (slower: never a timed round)
    and the facts carry the peak it allocated.
    """
    args, objs = _prepare(arm, plan)
    method = getattr(arm, plan.op.name)
    before = arm.commit_counter(db)
    peak = None
    if memory:
        gc.collect()
        coro = method(*args) if arm.is_async else None
        tracemalloc.start()
        t0 = clock()
        result = event_loop().run_until_complete(coro) if coro is not None else method(*args)
        t1 = clock()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    elif arm.is_async:
        loop = event_loop()
        gc.collect()
        gc.freeze()
        try:
            coro = method(*args)
            t0 = clock()
            result = loop.run_until_complete(coro)
            t1 = clock()
        finally:
            gc.unfreeze()
    else:
        gc.collect()
        gc.freeze()
        try:
            t0 = clock()
            result = method(*args)
            t1 = clock()
        finally:
            gc.unfreeze()
    after = arm.commit_counter(db)
    commits = after - before if before is not None and after is not None else None
    handles = _arm_handles(db)
    snap = arm.snapshot()
    _harness_handles[db] = (open_handles(db) or 0) - (handles or 0)
    if handles is not None and handles > 1:
        raise VerificationError(f"{handles} connections are open on the database; every arm must use one")
    facts = verify(arm, plan, result, objs, snap, commits)
    pragmas = drive(arm.pragmas())
    check_pragmas(pragmas, arm.expected_settings())
    facts.update(pragmas=pragmas, connections=handles)
    facts.update(arm.op_facts())
    if peak is not None:
        facts["memory_peak_bytes"] = peak
    return RoundResult(t1 - t0, facts)


#: descriptors SQLite keeps open after the harness's own read-back connection
#: closes (it defers close() while another connection in the process holds a
#: POSIX lock on the file); they are not the arm's and are not counted.
_harness_handles: dict[Path, int] = {}


def _arm_handles(db: Path) -> int | None:
    """Connections the arm holds on the database file (Linux; None elsewhere or for directories)."""
    if not db.is_file():
        return None
    n = open_handles(db)
    return None if n is None else n - _harness_handles.get(db, 0)


def run_cell(cell: Cell, on_round: Callable[[RoundResult], None] | None = None) -> list[RoundResult]:
    """Run a cell's rounds in this process (one round per process in cold mode)."""
    set_extra_targets(cell.register)
    arm_cls = load_arm_class(cell.arm)
    model = MODELS[cell.model]
    plan = make_plan(cell.model, cell.op, cell.table, cell.sizes)
    reason = arm_cls.unsupported.get(plan.op.name)
    if reason:
        raise Unsupported(reason)
    event_loop()
    template = ensure_template(arm_cls, plan.state, cell.settings, cell.templates_dir)
    cell.work_dir.mkdir(parents=True, exist_ok=True)
    db = cell.work_dir / f"{cell.arm}-{uuid.uuid4().hex[:8]}.db"
    copy_db(template, db)
    arm = arm_cls(model, cell.settings)
    drive(arm.open(db))
    results: list[RoundResult] = []
    try:
        if cell.warmup:
            run_round(arm, plan, db)  # the warm-up: verified, its time discarded
            drive(arm.restore(template))
        for r in range(cell.rounds):
            if r:
                drive(arm.restore(template))
            res = run_round(arm, plan, db)
            results.append(res)
            if on_round:
                on_round(res)
        if cell.memory:
            drive(arm.restore(template))
            mem = run_round(arm, plan, db, memory=True)
            results[-1].facts["memory_peak_bytes"] = mem.facts["memory_peak_bytes"]
    finally:
        drive(arm.close())
        remove_db(db)
    return results


def build_templates(cell: Cell) -> str:
    """Build the cell's starting state in this process (so a cold child need not)."""
    set_extra_targets(cell.register)
    arm_cls = load_arm_class(cell.arm)
    plan = make_plan(cell.model, cell.op, cell.table, cell.sizes)
    reason = arm_cls.unsupported.get(plan.op.name)
    if reason:
        raise Unsupported(reason)
    return str(ensure_template(arm_cls, plan.state, cell.settings, cell.templates_dir))
