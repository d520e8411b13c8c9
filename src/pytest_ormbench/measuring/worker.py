"""The measuring child process, and the parent's handle on it (pyperf's shape).

Protocol: one JSON object per line. The parent writes a request on the child's
stdin; the child answers on a private copy of its original stdout, while
anything an ORM prints goes to stderr. Requests:

    {"cmd": "build", "cell": {...}}  -> {"ok": true, "template": path, "pid": n}
    {"cmd": "run", "cell": {...}}    -> {"ok": true, "record": {...}, "pid": n}
    {"cmd": "run", "cell": {...}, "keep": true}  -> the same, the cell's session kept open for its next request
    {"cmd": "preload", "cell": {...}} -> {"ok": true, "forkable": bool, "why": "...", "pid": n}
    {"cmd": "fork", "cell": {...}}   -> what "run" answers, from a child forked for the request

A cold round's process is a fresh interpreter, or (``--ormbench-cold-start=fork``) a child forked from a
worker that has only imported the cell's arm module and the measuring code (``preload``) and opened
nothing: what a fresh process does before the arm opens its connection, done once. The child then runs
the request exactly as a fresh process would (the template found, the copy, the connection, the round),
replies and exits; the preloaded worker never runs an op.

The cell names the arm's ``module:Class``; the record is a
:class:`pytest_ormbench.results.record.CellRecord` as JSON (the parent merges a cell's
replies, adds each round's place in the run, and stores it).

A failure answers {"ok": false, "kind": "unsupported" | "verification" | "error",
"error": "...", "traceback": "..."}. In cold mode the parent starts a fresh
child for every timed round; in warm mode it keeps one child per arm.

A worker only ever imports one arm: some ORMs change process-wide state on
import (Piccolo registers sqlite3 adapters and converters, for example), so two
arms must never share a measuring process.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import re
import sqlite3
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pytest_ormbench.results.record import CellRecord, Environment
    from pytest_ormbench.measuring.runner import Cell


def describe_environment(arm_cls: type, model: str, settings: Any, db: str = "sqlite") -> "Environment":
    """Versions and declarations of the arm, read inside the measuring process."""
    import importlib.metadata

    from pytest_ormbench.workload.spec import ALL_MODELS
    from pytest_ormbench.backends import database_for
    from pytest_ormbench.results.record import Environment

    versions = {}
    for dist in arm_cls.packages:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "unknown"
    database = database_for(arm_cls, db)
    arm_info = arm_cls(ALL_MODELS[model], settings).describe()
    if db != "sqlite":
        arm_info = {**arm_info, **database.describe()}
    arm_info = {**arm_info, **_provenance(tuple(versions.items()))}
    return Environment(
        arm_label=arm_cls.label or arm_cls.name,
        driver=arm_cls.driver,
        is_async=arm_cls.is_async,
        versions=versions,
        python=platform.python_version(),
        sqlite_version=sqlite3.sqlite_version,
        database=database.name,
        unsupported=dict(arm_cls.unsupported),
        arm_info=arm_info,
    )


@functools.lru_cache(maxsize=None)
def _provenance(versions: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """What the environment says of where the arm's packages came from (once per process: a cold round's fresh
    process asks once): ``origins``, each package installed from a local folder, a VCS or an archive (path, commit,
    editable; none from an index), and ``untested_versions``, one line per package whose version lies outside the
    range pytest-ormbench's extra for it was tested with (``peewee>=3.17``)."""
    from pytest_ormbench.arms.registry import origin, untested_version

    out: dict[str, Any] = {}
    origins = {dist: where for dist, _ in versions if (where := origin(dist))}
    if origins:
        out["origins"] = origins
    untested = [line for dist, version in versions if version != "unknown"
                and (line := untested_version(dist, version)) is not None]
    if untested:
        out["untested_versions"] = untested
    return out


#: kept sessions (``"keep": true``): cell id -> its arm, connection and work database, open between requests
_KEPT: dict[str, Any] = {}


def _session_id(cell: "Cell") -> str:
    return "|".join(map(str, (cell.target, cell.model, cell.op, cell.mode, cell.table, cell.db, cell.rtt_ms,
                              cell.strategy, cell.sizes, cell.settings.to_json())))


def _run_rounds(cell: "Cell", keep: bool) -> tuple[list[Any], Any]:
    """The request's rounds: in the cell's kept session when an earlier request kept one, else in a new one;
    kept again after them when ``keep`` (an interleaved warm cell's rounds before its last), else closed."""
    from pytest_ormbench.measuring.runner import CellSession

    session = _KEPT.pop(_session_id(cell), None)
    try:
        if session is not None:
            session.check_kept()
        else:
            session = CellSession(cell)
        rounds = session.run(cell)
    except BaseException:
        if session is not None:
            session.close()
        raise
    # only an arm whose open instances keep apart (``Arm.independent_sessions``: each holds its own engine, not
    # the process's) keeps a session while the worker serves other cells, sync or async (one event loop per process)
    if keep and session.arm.independent_sessions:
        _KEPT[_session_id(cell)] = session
    else:
        session.close()
    return rounds, session.counters


def close_kept() -> None:
    """Close every kept session (the worker's end: their connections closed, their databases removed)."""
    while _KEPT:
        _, session = _KEPT.popitem()
        try:
            session.close()
        except Exception:  # noqa: BLE001  (one session's close must not keep the others open)
            traceback.print_exc()


def measure(cell: "Cell", keep: bool = False) -> "CellRecord":
    """Run the cell's rounds here and return them as one record (the parent adds slots and schedule)."""
    from pytest_ormbench.workload.plan import make_plan
    from pytest_ormbench.workload.measures import GC_COLLECTIONS, INSTRUCTIONS, WALL
    from pytest_ormbench.workload.cells import CellKey
    from pytest_ormbench.results.record import CellRecord, Facts, applicable_deviations
    from pytest_ormbench.arms.registry import import_arm
    from pytest_ormbench.measuring.runner import shape_plan_of

    rounds, counters = _run_rounds(cell, keep)
    measures: dict[str, list[float]] = {WALL: [r.seconds for r in rounds],
                                        GC_COLLECTIONS: [float(r.gc_collections) for r in rounds]}
    if counters.callgrind is not None:
        if any(r.instructions is None for r in rounds):
            raise RuntimeError("a round ran under callgrind but brought back no instruction count")
        measures[INSTRUCTIONS] = [float(r.instructions) for r in rounds]  # type: ignore[arg-type]
    arm_cls = import_arm(cell.target)
    key = CellKey(cell.arm, cell.model, cell.op, cell.mode, cell.table, cell.db, cell.rtt_ms, cell.strategy)
    deviations = applicable_deviations(arm_cls.deviations, key)
    if key.relational:
        shape_plan = shape_plan_of(cell)
        rows, start_rows = shape_plan.repetitions, sum(len(r) for r in shape_plan.data.rows.values())
        name = shape_plan.shape.name
        if name in getattr(arm_cls, "shape_notes", {}):
            deviations[name] = arm_cls.shape_notes[name]
        if rounds:
            if cell.strategy is not None:
                rounds[-1].facts["strategy_kind"] = arm_cls.strategies[name][cell.strategy]
            if name == "delete_cascade":
                rounds[-1].facts["cascade"] = arm_cls.cascade
    else:
        plan = make_plan(cell.model, cell.op, cell.table, cell.sizes)
        rows, start_rows = plan.rows, plan.state.count
    return CellRecord(
        key=key, rows=rows, start_rows=start_rows,
        iterations=cell.sizes.iterations, batch=cell.sizes.batch,
        settings=cell.settings.to_json(),
        env=describe_environment(arm_cls, cell.model, cell.settings, cell.db),
        facts=Facts.from_round(rounds[-1].facts),
        measures=measures,
        deviations=deviations,
        slots=[None] * len(rounds),
        worker_pids=[os.getpid()] * (1 if rounds else 0),
        statements=[r.statements for r in rounds if r.statements is not None],
        statements_note=counters.statements_not_applicable,
        instrumented="callgrind" if counters.callgrind is not None else None,
        phases=dict(counters.phases.seconds),
    )


def handle(request: dict[str, Any]) -> dict[str, Any]:
    from pytest_ormbench.measuring.runner import Cell

    cell = Cell.from_json(request["cell"])
    try:
        return _handle(request, cell)
    finally:
        # between requests a worker holds no connection of the harness's (many idle workers, one server)
        from pytest_ormbench.backends import close_server_connections

        close_server_connections()


def preload(cell: Any) -> dict[str, Any]:
    """Import what a fresh cold process imports before its arm opens a connection (the arm's module and the
    measuring code), and open nothing; forkable only while this process has one thread (a fork copies the
    calling thread alone: a lock another thread held stays held in the child)."""
    import threading

    from pytest_ormbench.arms.registry import import_arm
    from pytest_ormbench.measuring import runner  # noqa: F401  (what run_cell needs before the arm's import)
    from pytest_ormbench.results import record  # noqa: F401

    import_arm(cell.target)
    threads = threading.active_count()
    forkable = hasattr(os, "fork") and threads == 1
    why = "" if forkable else (f"{threads} threads after the arm's import" if hasattr(os, "fork") else "no fork()")
    return {"ok": True, "forkable": forkable, "why": why, "pid": os.getpid()}


MADV_POPULATE_WRITE = 23  # Linux 5.14+: fault pages in writable without touching them (a private one is copied)


def _own_the_heap() -> None:
    """Copy every page the parent shares with this forked child into the child before anything is timed: the
    first write to a shared page (a reference count, an allocator's free list, a driver's buffer) would
    otherwise cost a page fault and a copy inside the timed region, which a fresh interpreter, whose pages are
    its own, never pays. Each private writable mapping's resident pages are faulted in writable by the kernel
    (MADV_POPULATE_WRITE), which changes no byte; where the kernel lacks it, listing every object the
    collector tracks writes to each object's header, the pages most writes go to."""
    import gc

    from pytest_ormbench.measuring.callgrind import OUT_DIR_ENV

    if os.environ.get(OUT_DIR_ENV):
        return  # under callgrind: a page fault is the kernel's work, which no count contains
    if not _populate_private_pages():
        objects = gc.get_objects()
        del objects


def _populate_private_pages() -> bool:
    """Fault in, writable, the resident pages of this process's private writable mappings; False where the
    kernel or libc cannot (no /proc, no madvise, a kernel before 5.14)."""
    import ctypes  # only a forked child needs it

    page = os.sysconf("SC_PAGE_SIZE")
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        with open("/proc/self/maps", encoding="ascii") as maps:
            lines = maps.read().splitlines()
    except (OSError, AttributeError):
        return False
    done = False
    for line in lines:
        fields = line.split()
        if len(fields) < 2 or not fields[1].startswith("rw") or fields[1][3:4] != "p":
            continue
        if len(fields) >= 6 and fields[5].startswith("[") and fields[5] not in ("[heap]", "[stack]"):
            continue  # [vvar], [vsyscall] and the like are the kernel's
        start, end = (int(x, 16) for x in fields[0].split("-"))
        resident = (ctypes.c_ubyte * ((end - start) // page))()
        if libc.mincore(ctypes.c_void_p(start), ctypes.c_size_t(end - start), resident) != 0:
            continue
        # only the pages the parent had in memory: a reservation nobody touched stays untouched
        for run in re.finditer(rb"[\x01-\xff]+", bytes(resident)):
            at, length = start + run.start() * page, (run.end() - run.start()) * page
            # a kernel before 5.14 answers EINVAL to every call, and the collector's walk stands in
            done = libc.madvise(ctypes.c_void_p(at), ctypes.c_size_t(length), MADV_POPULATE_WRITE) == 0 or done
    return done


def forked(request: dict[str, Any]) -> dict[str, Any]:
    """Run the request in a child forked from this (preloaded) process and return the child's reply, read
    through a pipe of its own (a child that dies without replying is an error reply, not a hang)."""
    read_end, write_end = os.pipe()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: one request, as a fresh process would run it, then out
        status = 0
        try:
            os.close(read_end)
            _own_the_heap()
            reply = handle({**request, "cmd": "run"})
            with os.fdopen(write_end, "w", encoding="utf-8") as out:
                out.write(json.dumps(reply, default=str))
        except BaseException:  # noqa: BLE001  (nothing may unwind into the parent's loop in a child)
            traceback.print_exc()
            status = 1
        finally:
            sys.stderr.flush()
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "r", encoding="utf-8") as inp:
        text = inp.read()
    _, status = os.waitpid(pid, 0)
    if text:
        return json.loads(text)
    return {"ok": False, "kind": "error", "error": f"the forked round's process {pid} exited with status "
            f"{os.waitstatus_to_exitcode(status)} without a reply"}


def _handle(request: dict[str, Any], cell: Any) -> dict[str, Any]:
    from pytest_ormbench.workload.spec import Unsupported
    from pytest_ormbench.measuring.runner import build_templates
    from pytest_ormbench.measuring.verify import VerificationError

    try:
        if request["cmd"] == "build":
            return {"ok": True, "template": build_templates(cell), "pid": os.getpid()}
        if request["cmd"] == "run":
            keep = bool(request.get("keep"))
            record = measure(cell, keep).to_json()
            # asked to keep: whether it did (an arm that does not declare independent_sessions is closed)
            kept = {"kept": _session_id(cell) in _KEPT} if keep else {}
            return {"ok": True, "record": record, "pid": os.getpid(), **kept}
        if request["cmd"] == "preload":
            return preload(cell)
        if request["cmd"] == "fork":
            return forked(request)
        return {"ok": False, "kind": "error", "error": f"unknown command {request['cmd']!r}"}
    except Unsupported as exc:
        return {"ok": False, "kind": "unsupported", "error": str(exc)}
    except VerificationError as exc:
        return {"ok": False, "kind": "verification", "error": str(exc), "traceback": traceback.format_exc()}
    except Exception as exc:
        return {"ok": False, "kind": "error", "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()}


def main() -> int:
    proto: IO[str] = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever the ORMs print must not corrupt the protocol
    sys.stdout = sys.stderr
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            reply = handle(json.loads(line))
            proto.write(json.dumps(reply, default=str) + "\n")
            proto.flush()
    finally:
        # a worker that ends by an exception (Ctrl-C reaches the run's whole process group; a parent gone
        # mid-reply) closes its kept sessions too, their connections, aiosqlite's threads and work databases
        close_kept()
    return 0


if __name__ == "__main__":
    sys.exit(main())
