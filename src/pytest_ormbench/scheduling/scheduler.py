"""The parent's side of a run, without pytest: the two schedules, the drift probe, the run's account (its
measuring processes: ``processes.py``).

Nothing here measures time (the child does) or imports an ORM. It asks workers to build and run
cells, merges each cell's replies into one :class:`~pytest_ormbench.results.record.CellRecord`, and numbers
every timed round by its place in the run. The pytest layer (``plugin.py``) turns an
:class:`Outcome` into a test result; anything else (a script, another runner) can drive it too.

Two schedules. *Interleaved* (the default for timed runs): round r of every selected cell runs
before round r + 1, the arm order rotated each round, so slow drift of the machine spreads over all
arms instead of landing on one. *Back-to-back*: each cell runs all its rounds together. Both take a
drift probe (a fixed sqlite3 workload) several times per run; the spread of its figures is the run's
noise floor. :meth:`Scheduler.run_all` runs the whole timed schedule at once (the pytest layer calls
it before the first test, which then only reports its cell); without it, the first cell asked for
runs the interleaved schedule, and a back-to-back or verify-only cell runs when it is asked for.

Every round carries the machine's 1-minute load, read by the parent as the round's reply comes in
(the measure-like series :data:`LOADAVG` in the record's ``measures``, one value per round).
"""

from __future__ import annotations

import shutil
from collections import Counter
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from pytest_ormbench.scheduling.config import RunConfig
from pytest_ormbench.provision.servers import Servers
from pytest_ormbench.workload.plan import Sizes
from pytest_ormbench.scheduling.progress import Kind, Progress
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.results.record import CellRecord
from pytest_ormbench.arms.registry import CONTROL_ARM, ArmEntry
from pytest_ormbench.measuring.runner import Cell
from pytest_ormbench.scheduling.probe import (LOADAVG, PROBE_CELLS, PROBE_ROUNDS, PROBE_SIZES, loadavg,  # noqa: F401
                                              probe_facts, probe_figure)
from pytest_ormbench.scheduling.processes import CellProblem, Processes  # noqa: F401  (CellProblem: the outcome's)
from pytest_ormbench.scheduling.workers import Worker, child_env
from pytest_ormbench.workload.phases import RunAccount


#: why the cells of an arm whose package is missing are dropped from the run's count
MISSING = "skipped: package missing"
#: the run facts' reason for an arm whose warm sessions were not kept in a run that keeps them
NOT_KEPT = ("the arm does not declare independent_sessions (its connection or models are the process's): each "
            "visit opens, warms up and closes again")


@dataclass
class Outcome:
    """What a cell came to: a verified record, or the reason it has none."""

    key: CellKey
    record: CellRecord | None = None
    problem: CellProblem | None = None
    #: the seconds the parent spent on this cell (its starting state, rounds and counting; no probe)
    seconds: float = 0.0


@dataclass
class _Gathered:
    """One cell's replies so far, while its schedule runs."""

    record: CellRecord | None = None
    problem: CellProblem | None = None
    seconds: float = 0.0

    def add(self, record: CellRecord) -> None:
        self.record = record if self.record is None else self.record.merged(record)


@dataclass
class Scheduler:
    run: RunConfig
    arms: dict[str, ArmEntry]
    rootdir: Path
    #: progress lines (a callable taking one line); None: silent
    say: Callable[[str], None] | None = None
    #: at most one progress line per this many seconds (besides the ones at the end of each phase)
    progress_interval: float = 30.0
    tmp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="pytest-ormbench-")))
    #: the cells this process will run, in collection order (set once collection is final)
    planned: list[CellKey] = field(default_factory=list)
    #: the verified records kept for the run's summary, report and comparison
    records: list[CellRecord] = field(default_factory=list)
    #: cells without a number: (cell id, outcome, first line of the reason)
    not_run: list[tuple[str, str, str]] = field(default_factory=list)
    #: drift probe figures: {"when", "rows_per_s", "loadavg_1min", "round_seconds": {cell: [s, ...]}}
    probes: list[dict[str, Any]] = field(default_factory=list)
    probe_notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.env = child_env([str(self.rootdir)])
        #: where the run's wall time went, per unit (arm at its place; "probe" for the drift probe)
        self.account = RunAccount()
        #: the arms whose interleaved warm sessions were not kept although the run keeps them (``NOT_KEPT``)
        self.fresh_warm: set[str] = set()
        #: the run's database servers, started when a cell first needs one
        self.servers = Servers(self.run.settings, self.tmp, self.run.postgresql_url, self.run.mysql_url)
        #: a latency sweep's statement counts, taken once per cell on the direct connection (``_count``)
        self._direct_counts: dict[CellKey, CellRecord] = {}
        self._prefix: list[str] | None = None
        measuring_env = self.env
        if self.run.instructions:
            from pytest_ormbench.measuring import callgrind

            out = self.tmp / "callgrind"
            out.mkdir(parents=True, exist_ok=True)
            self._prefix = callgrind.command(callgrind.check_available(), out)
            measuring_env = callgrind.measuring_environment({**self.env, callgrind.OUT_DIR_ENV: str(out)})
        #: the run's measuring processes (the arms' long-lived, counting, preloaded and fresh workers)
        self.processes = Processes(self.env, self.rootdir, self.servers, self.run.rtts, self._prefix,
                                   measuring_env, self.run.cold_start)
        self._gathered: dict[CellKey, _Gathered] | None = None
        #: the end probe of a back-to-back run is taken
        self._ended = False
        self._executed = 0
        self._probe_worker: Worker | None = None
        #: timed rounds run so far in this process: each round's place in the run's order
        self._slot = 0
        self._progress: Progress | None = None
        self._said_drops = ""

    @property
    def timed(self) -> bool:
        return self.run.timed

    @property
    def interleaved(self) -> bool:
        return self.timed and self.run.schedule == "interleaved"

    # -- workers --------------------------------------------------------------------------------------
    @staticmethod
    def unit(key: CellKey) -> str:
        """What takes its turn in the interleaved order (``CellKey.unit``)."""
        return key.unit

    def kind(self, key: CellKey, step: str = "") -> Kind:
        """One unit of the cell's work, as the estimate of the time left tells units apart (``progress.Kind``):
        its arm at its place, model, op, mode and table, and the step (``""``: a timed round; ``memory``: the
        last round under ``--ormbench-memory``, which also measures memory; ``count``: the untimed repetition
        that counts statements; ``build``: its starting state)."""
        return Kind(self.unit(key), key.model, f"{key.op_id}-{key.mode}-{key.table}", step)

    def measures_memory(self, key: CellKey) -> bool:
        """Whether the cell's last round is followed by the untimed repetition that measures memory: under
        --ormbench-memory, and always for Test 4's streaming read (constant memory is its point: peak Python
        allocation and the process's resident-set growth are recorded beside its time)."""
        if not self.timed:
            return False
        stream = key.relational and key.operation.name == "stream_comments" and not self.run.instructions
        return self.run.memory or stream

    def _timed_units(self, key: CellKey, first_round: int = 0) -> Counter[Kind]:
        """The interleaved schedule's units of a cell from round ``first_round`` (from 0) on: its rounds and the
        counting repetition after the last one."""
        rounds, last = self.run.rounds, "memory" if self.measures_memory(key) else ""
        units = Counter(self.kind(key, last if r == rounds - 1 else "") for r in range(first_round, rounds))
        units[self.kind(key, "count")] += 1
        return units

    def _say_drops(self, progress: Progress) -> None:
        """The one-line note of the rounds dropped so far and why, when it changed since it was last said."""
        note = progress.dropped_note()
        if note and note != self._said_drops:
            self._said_drops = note
            self._say(note)

    def close(self) -> None:
        """Stop every worker, remove the run's databases and stop its servers."""
        self.processes.close(*([self._probe_worker] if self._probe_worker is not None else []))
        self._probe_worker = None
        self.servers.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _cell(self, key: CellKey, rounds: int, warmup: bool, memory: bool = False,
              sizes: Sizes | None = None, statements: bool = False) -> Cell:
        target = self.arms[key.arm].target_for(key.model)
        if not target:
            raise CellProblem("unsupported", f"{key.arm} has no Test 4 (relational) arm yet")
        return Cell(
            arm=key.arm, target=target, model=key.model, op=key.op, table=key.table,
            mode=key.mode, sizes=sizes or self.run.sizes, settings=self.run.settings,
            templates_dir=self.tmp / "templates", work_dir=self.tmp / "work",
            rounds=rounds, warmup=warmup, memory=memory, statements=statements, db=key.db, rtt_ms=key.rtt_ms,
            strategy=key.strategy,
        )

    def _build(self, key: CellKey) -> None:
        """The cell's starting state, built and verified in the arm's long-lived worker (untimed)."""
        t0 = time.monotonic()
        payload = {"cmd": "build", "cell": self._cell(key, 1, False).to_json()}
        reply = self.processes.ask(self.processes.persistent(key), key, payload, persistent=True)
        self._charge(key, "build", time.monotonic() - t0, reply)

    # -- the account of the run's wall time ----------------------------------------------------------
    def _charge(self, key: CellKey | None, phase: str, wall: float, reply: dict[str, Any] | None = None,
                record: CellRecord | None = None) -> None:
        """Charge a request's wall time to the cell's unit: the child's phases as it reported them (a record's),
        else ``phase``; what the parent waited beyond the child's own time is ``process``."""
        inside = float(reply.get("request_seconds") or 0.0) if reply else 0.0
        self.account.charge("probe" if key is None else self.unit(key), phase, wall, inside,
                            record.phases if record is not None else None)

    def phase_account(self) -> dict[str, Any]:
        """Where the run's wall time went so far (``workload.phases.RunAccount.summary``)."""
        return self.account.summary()

    def keeps(self, key: CellKey) -> bool:
        """Whether the cell's interleaved warm rounds share one session in the arm's worker (its connection and
        work database kept, warmed up once: ``--ormbench-warm-start=kept``): SQLite only, since a server's
        connections are a budget the kept sessions of every cell would spend."""
        return (self.interleaved and key.mode == "warm" and key.db == "sqlite" and self._prefix is None
                and self.run.warm_start == "kept")

    def _rounds(self, key: CellKey, rounds: int, memory: bool, count: bool = True, keep: bool = False) -> CellRecord:
        """``rounds`` rounds back to back (warm: in the arm's worker; cold: a fresh worker each), numbered.

        ``count``: also count the op's statements. A verify-only run counts in the round itself; a timed
        run counts in one more repetition in a process of its own (the trace costs a Python call per
        statement, which no timed round may pay), warm after a warm-up repetition, cold as the first op.
        """
        record: CellRecord | None = None
        inline = count and not self.timed
        if key.mode == "warm" and self._prefix is not None:
            # under callgrind a warm cell gets a process of its own (warm-up, then its rounds): an op's count
            # then depends on the cell alone, not on what other cells left in a long-lived worker's heap; forked
            # from the arm module's preloaded worker under valgrind, like a cold round (``Processes.cold``)
            cell = self._cell(key, rounds, True, memory)
            reply, wall = self._cold(key, cell, measuring=True)
            record = _with_load(CellRecord.from_json(reply["record"]))
            self._charge(key, "timed", wall, reply, record)
        elif key.mode == "warm":
            t0 = time.monotonic()
            cell = self._cell(key, rounds, True, memory, statements=inline)
            payload = {"cmd": "run", "cell": cell.to_json(), **({"keep": True} if keep else {})}
            reply = self.processes.ask(self.processes.persistent(key), key, payload, persistent=True)
            record = _with_load(CellRecord.from_json(reply["record"]))
            self._charge(key, "timed", time.monotonic() - t0, reply, record)
            if keep and reply.get("kept") is False:
                self.fresh_warm.add(key.arm)
        else:
            for r in range(rounds):
                cell = self._cell(key, 1, False, memory and r == rounds - 1, statements=inline)
                reply, wall = self._cold(key, cell, measuring=True)
                one = _with_load(CellRecord.from_json(reply["record"]))
                self._charge(key, "timed", wall, reply, one)
                record = one if record is None else record.merged(one)
        assert record is not None
        if self.timed:
            record.slots = list(range(self._slot, self._slot + record.rounds))
            self._slot += record.rounds
            if count:
                record = record.with_statements(self._count(key))
        return record

    def _count(self, key: CellKey) -> CellRecord:
        """One untimed repetition with statements counted: warm in the arm's counting worker, cold in a fresh one.

        A latency-sweep cell is counted once for the whole sweep, on the direct connection (its twin without the
        RTT): what an op sends does not depend on the round trip, and a lazy read through a 25 ms proxy takes
        tens of seconds per repetition. The record says so (``statements_counted_direct``)."""
        twin = replace(key, rtt_ms=None)
        if twin in self._direct_counts:
            return self._direct_counts[twin]
        if key.rtt_ms is not None:
            return self._count(twin)
        if key.mode != "warm":
            reply, wall = self._cold(key, self._cell(key, 1, False, statements=True))
        else:
            t0 = time.monotonic()
            payload = {"cmd": "run", "cell": self._cell(key, 1, True, statements=True).to_json()}
            reply = self.processes.ask(self.processes.counter(key), key, payload, persistent=True)
            wall = time.monotonic() - t0
        self._charge(key, "count", wall, reply)
        counted = CellRecord.from_json(reply["record"])
        if self.run.rtts and key.db != "sqlite":
            self._direct_counts[key] = counted
        return counted

    def _cold(self, key: CellKey, cell: Cell, measuring: bool = False) -> tuple[dict[str, Any], float]:
        """A cold request (``Processes.cold``): its reply and its wall seconds, less a preloading worker's start,
        which is charged here to the cell's arm as ``process`` (so that no second is charged twice)."""
        t0, started = time.monotonic(), [0.0]
        try:
            reply = self.processes.cold(key, cell, measuring, lambda seconds: started.__setitem__(0, seconds))
        finally:
            if started[0]:
                self._charge(key, "process", started[0])
        return reply, max(0.0, time.monotonic() - t0 - started[0])

    def _say(self, line: str) -> None:
        if self.say is not None:
            self.say(line)

    # -- the drift probe ------------------------------------------------------------------------------
    @property
    def probing(self) -> bool:
        return self.timed and self.run.probe and not self.run.instructions and CONTROL_ARM in self.arms

    def probe(self, when: str) -> None:
        """Time the fixed sqlite3 probe once (median of a few warm rounds); never fails the run."""
        if not self.probing:
            return
        t0 = time.monotonic()
        try:
            self._probe_once(when)
        finally:
            self._charge(None, "probe", time.monotonic() - t0)
            if self._progress is not None:
                self._progress.finish("probe", time.monotonic() - t0)

    def _probe_once(self, when: str) -> None:
        try:
            if self._probe_worker is None or self._probe_worker.proc.poll() is not None:
                self._probe_worker = self.processes.fresh()
            worker = self._probe_worker
            figure, rounds = probe_figure(
                lambda key, rounds, warmup: self._cell(key, rounds, warmup, sizes=PROBE_SIZES),
                lambda key, payload: self.processes.ask(worker, key, payload, persistent=False))
        except CellProblem as exc:
            self.probe_notes.append(f"drift probe at {when} failed: {exc.message}")
            return
        self.probes.append({"when": when, "rows_per_s": figure, "loadavg_1min": loadavg(), "round_seconds": rounds})

    def run_facts(self) -> dict[str, Any]:
        """Run-level facts for the JSON's top-level ``ormbench`` key (the phase account among them)."""
        facts = {**probe_facts(self.run.schedule_name, self.probes, self.probe_notes), "phases": self.phase_account()}
        if self.run.shard is not None:
            index, count = self.run.shard
            facts["shard"] = {"index": index, "count": count, "cells": len(self.planned),
                              "durations": self.run.shard_durations or None}
        if any(k.mode == "warm" for k in self.planned) and self.interleaved:
            facts["warm_start"] = "kept" if any(self.keeps(k) for k in self.planned) else "fresh"
            if facts["warm_start"] == "kept":
                # the arms whose warm sessions were opened and warmed up again on every visit all the same
                facts["warm_start_fresh"] = {arm: NOT_KEPT for arm in sorted(self.fresh_warm)}
        if any(k.mode == "cold" for k in self.planned):
            facts["cold_start"] = {"how": "fork" if self.processes.forks else "fresh",
                                   "fresh": dict(self.processes.preloaded.refused)}
        return facts

    def finish(self) -> None:
        """End of the run: the last probe of a back-to-back run (an interleaved one took it already)."""
        if self.timed and not self.interleaved and self._executed and self.records and not self._ended:
            self._ended = True
            self.probe("end")
        if self._progress is not None:
            self._say_drops(self._progress)

    def run_all(self) -> None:
        """The whole timed schedule of :attr:`planned`, now; :meth:`outcome` then only says what a cell came to.

        A verify-only run has no schedule: each cell runs when it is asked for (under pytest-xdist, in the
        process that was given it)."""
        if not self.timed or self._gathered is not None:
            return
        if self.interleaved:
            self._gathered = self._run_interleaved()
            return
        gathered: dict[CellKey, _Gathered] = {}
        for key in self.planned:
            if not self.arms[key.arm].missing(key.db) and key not in gathered:
                gathered[key] = self._run_one(key)
        self._gathered = gathered
        if self._executed and any(g.record is not None for g in gathered.values()):
            self._ended = True
            self.probe("end")
        if self._progress is not None:
            self._say_drops(self._progress)

    # -- the interleaved schedule ---------------------------------------------------------------------
    def _run_interleaved(self) -> dict[CellKey, _Gathered]:
        gathered: dict[CellKey, _Gathered] = {}
        keys = [k for k in self.planned if not self.arms[k.arm].missing(k.db)]
        started = time.monotonic()
        rounds = self.run.rounds
        arms = list(dict.fromkeys(self.unit(k) for k in keys))
        self._say(f"pytest-ormbench: building and verifying the starting states of {len(keys)} cells "
                  f"(untimed; on the large table this takes minutes)")
        building = self._progress = Progress.of("starting states", (self.kind(k, "build") for k in keys), self.say,
                                                self.progress_interval)
        for key in keys:
            g = gathered[key] = _Gathered()
            t0 = time.monotonic()
            try:
                self._build(key)
            except CellProblem as exc:
                g.problem = exc
            g.seconds += time.monotonic() - t0
            building.finish(self.kind(key, "build"), time.monotonic() - t0)
        ready = [k for k in keys if gathered[k].problem is None]
        self._say(f"pytest-ormbench: starting states ready after {time.monotonic() - started:.0f} s; "
                  f"interleaved schedule: {len(ready)} cells x {rounds} rounds, arm order rotated every round")
        # the count starts from the plan's rounds (every planned cell's), less the dropped ones, named with their reason
        units = Counter[Kind]()
        for key in self.planned:
            units.update(self._timed_units(key))
        probes = rounds + 1 if self.probing else 0
        timing = self._progress = Progress.of(
            "timed rounds", [k for k, n in units.items() if k.step != "count" for _ in range(n)], self.say,
            self.progress_interval, extra=[k for k in units if k.step == "count"] + [Kind("probe")] * probes)
        for key in self.planned:
            problem = gathered[key].problem if key in gathered else None
            if key not in gathered or problem is not None:
                timing.drop(MISSING if problem is None else problem.why, self._timed_units(key))
        self._say_drops(timing)
        self.probe("start")
        for r in range(rounds):
            order = arms[r % len(arms):] + arms[:r % len(arms)] if arms else []
            last = r == rounds - 1
            for arm in order:
                for key in (k for k in keys if self.unit(k) == arm):
                    g = gathered[key]
                    if g.problem is not None:
                        continue
                    t0 = time.monotonic()
                    timed = False
                    try:
                        # the round, then (after the last) the untimed repetition that counts statements: each is
                        # a unit of its own for the estimate, so that the last round does not look slow
                        memory = self.measures_memory(key) and last
                        record = self._rounds(key, 1, memory, count=False, keep=not last and self.keeps(key))
                        timing.finish(self.kind(key, "memory" if memory else ""), time.monotonic() - t0)
                        timed = True
                        if last:
                            t1 = time.monotonic()
                            record = record.with_statements(self._count(key))
                            timing.finish(self.kind(key, "count"), time.monotonic() - t1)
                        g.add(record)
                    except CellProblem as exc:
                        g.problem = exc
                        timing.drop(exc.why, self._timed_units(key, r + timed))
                    g.seconds += time.monotonic() - t0
            self.probe(f"after round {r + 1}")
            self._say(f"pytest-ormbench: round {r + 1}/{rounds} done after {time.monotonic() - started:.0f} s "
                      f"(arm order: {', '.join(order) if len(order) <= 4 else f'{order[0]}, {order[1]}, ... ({len(order)} arms)'}); "
                      + ("done" if last else timing.eta()))
        self._say_drops(timing)
        self._progress = None
        return gathered

    # -- one cell -------------------------------------------------------------------------------------
    def _gather(self, key: CellKey) -> _Gathered:
        if self._gathered is not None and key in self._gathered:
            return self._gathered[key]
        if self.interleaved and key in self.planned:
            if self._gathered is None:
                self._gathered = self._run_interleaved()
            return self._gathered[key]
        return self._run_one(key)

    def _run_one(self, key: CellKey) -> _Gathered:
        """One cell's starting state and all its rounds, back to back (with the start and middle probes)."""
        g = _Gathered()
        per = self.run.rounds if self.timed else 1
        if self._progress is None and not self._executed:
            probes = 3 if self.probing and len(self.planned) > 2 else 2 if self.probing else 0
            # counted in rounds, as the plan is (a verify-only run's one round per cell: its cells)
            self._progress = Progress.of("timed rounds" if self.timed else "cells",
                                         [self.kind(k) for k in self.planned for _ in range(per)], self.say,
                                         self.progress_interval, extra=[Kind("probe")] * probes)
            for k in self.planned:
                if self.arms[k.arm].missing(k.db):
                    self._progress.drop(MISSING, {self.kind(k): per})
            self._say_drops(self._progress)
        if self.timed and not self._executed:
            self.probe("start")
        t0 = time.monotonic()
        try:
            self._build(key)
            g.add(self._rounds(key, per, self.measures_memory(key)))
        except CellProblem as exc:
            g.problem = exc
        g.seconds = time.monotonic() - t0
        if self._progress is not None and key in self.planned:
            if g.problem is None:
                self._progress.finish(self.kind(key), time.monotonic() - t0, per)
            else:
                self._progress.drop(g.problem.why, {self.kind(key): per})
        self._executed += 1
        if self.timed and self._executed == max(1, len(self.planned) // 2) and len(self.planned) > 2:
            self.probe("middle")
        return g

    def outcome(self, key: CellKey) -> Outcome:
        """Run what the cell needs (under the chosen schedule) and say what it came to."""
        missing = self.arms[key.arm].missing(key.db)
        if missing:
            problem = CellProblem("skipped", f"{key.arm}: {missing}")
            self.not_run.append((key.id, "skipped", missing))
            return Outcome(key, problem=problem)
        g = self._gather(key)
        if g.problem is not None:
            first = g.problem.message.splitlines()[0] if g.problem.message else g.problem.outcome
            self.not_run.append((key.id, g.problem.outcome, first))
            return Outcome(key, problem=g.problem, seconds=g.seconds)
        assert g.record is not None
        g.record.schedule = self.run.schedule_name
        # the busiest the machine was while the cell's rounds ran (each round's own is in the series)
        loads = [x for x in g.record.measures.get(LOADAVG, []) if x is not None]
        g.record.loadavg_1min = max(loads) if loads else None
        return Outcome(key, record=g.record, seconds=g.seconds)

    def keep(self, record: CellRecord) -> None:
        """Keep a timed record for the run's summary, report and comparison."""
        self.records.append(record)


def _with_load(record: CellRecord) -> CellRecord:
    """A reply's record with the machine's load now, as its rounds' :data:`LOADAVG` (read as the reply comes in:
    a round's load is the load while it ran, not when its cell is reported)."""
    load = loadavg()
    if load is not None:
        record.measures[LOADAVG] = [load] * record.rounds
    return record
