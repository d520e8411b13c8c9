"""The parent's side of a run: schedule worker processes, record the results.

Nothing here measures time (the worker does) or imports an ORM. It turns a
cell's round times into a pytest-benchmark result, with the facts the worker
verified in ``extra_info``.

Two schedules. *Interleaved* (the default for timed runs): round r of every
selected cell runs before round r + 1, the arm order rotated each round, so
slow drift of the machine spreads over all arms instead of landing on one;
the whole schedule runs when the first cell's test calls it, and each test
then reports its own cell. *Back-to-back*: each test runs all rounds of its
cell. Both take a drift probe (a fixed sqlite3 workload) several times per
run; the spread of its figures is the run's noise floor.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .contract import MODELS, OPS_BY_LETTER
from .options import RunConfig
from .plan import CellPlan, Sizes, make_plan
from .registry import CONTROL_ARM, ArmEntry
from .runner import Cell
from .stats import drift_floor, geometric_mean, median, rows_per_second
from .worker import Worker, WorkerCrashed, child_env

#: the drift probe: raw sqlite3, Test 1, one durable commit (B) and a read path (F), warm
PROBE_CELLS: tuple[tuple[str, str], ...] = (("simple", "B"), ("simple", "F"))
PROBE_ROUNDS = 5
#: the probe's own sizes, whatever the run's: a fixed workload (B writes 10,000 rows in one commit, F does
#: 2,000 gets), long enough (~0.1 s a round) that its own jitter stays below the drift it is there to see
PROBE_SIZES = Sizes(iterations=1000, batch=10000)


def _loadavg() -> float | None:
    """The machine's 1-minute load when the cell ended: a busy machine makes figures unreliable."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


@dataclass(frozen=True)
class CellSpec:
    arm: str
    model: str
    op: str  # letter
    mode: str
    table: str

    @property
    def id(self) -> str:
        return f"{self.arm}-{self.model}-{OPS_BY_LETTER[self.op].name}-{self.mode}-{self.table}"


class CellProblem(Exception):
    """A cell that produced no number: unsupported, skipped, failed or failed verification."""

    def __init__(self, outcome: str, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.outcome, self.message, self.detail = outcome, message, detail


@dataclass
class Measured:
    """What the schedule gathered for one cell before its test reports it."""

    info: dict[str, Any] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    problem: CellProblem | None = None


@dataclass
class OrmbenchSession:
    run: RunConfig
    arms: dict[str, ArmEntry]
    rootdir: Path
    tmp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="pytest-ormbench-")))
    workers: dict[str, Worker] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    not_run: list[tuple[str, str, str]] = field(default_factory=list)
    #: the cells this process will run, in collection order (set once collection is final)
    planned: list[CellSpec] = field(default_factory=list)
    #: drift probe figures: {"when", "rows_per_s", "loadavg_1min"}
    probes: list[dict[str, Any]] = field(default_factory=list)
    probe_notes: list[str] = field(default_factory=list)
    #: progress lines for the terminal (the plugin sets it; capture is off while it writes)
    progress: Any = None
    #: the end-of-run comparison with a baseline, rendered for the terminal
    comparison_text: str = ""

    def __post_init__(self) -> None:
        self.env = child_env([str(self.rootdir)])
        self._measured: dict[CellSpec, Measured] | None = None
        self._executed = 0
        self._probe_worker: Worker | None = None
        #: timed rounds run so far in this process: each round's place in the run's order
        self._slot = 0

    @property
    def timed(self) -> bool:
        return not self.run.verify_only

    @property
    def interleaved(self) -> bool:
        return self.timed and self.run.schedule == "interleaved"

    # -- workers ----------------------------------------------------------------
    def persistent(self, arm: str) -> Worker:
        """The arm's long-lived worker: builds starting states, runs warm cells."""
        w = self.workers.get(arm)
        if w is None or w.proc.poll() is not None:
            w = self.workers[arm] = Worker(env=self.env, cwd=str(self.rootdir))
        return w

    def fresh(self) -> Worker:
        return Worker(env=self.env, cwd=str(self.rootdir))

    def close(self) -> None:
        for w in self.workers.values():
            w.close()
        self.workers.clear()
        if self._probe_worker is not None:
            self._probe_worker.close()
            self._probe_worker = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- one cell ---------------------------------------------------------------
    def cell(self, spec: CellSpec, rounds: int, warmup: bool, memory: bool = False,
             sizes: Sizes | None = None) -> Cell:
        return Cell(
            arm=spec.arm, model=spec.model, op=spec.op, table=spec.table, mode=spec.mode,
            sizes=sizes or self.run.sizes, settings=self.run.settings,
            templates_dir=self.tmp / "templates", work_dir=self.tmp / "work",
            rounds=rounds, warmup=warmup, register=self.run.register, memory=memory,
        )

    def _ask(self, worker: Worker, spec: CellSpec, payload: dict[str, Any], persistent: bool) -> dict[str, Any]:
        """One request; a bad reply becomes a :class:`CellProblem`."""
        try:
            reply = worker.request(payload)
        except WorkerCrashed as exc:
            if persistent:
                self.workers.pop(spec.arm, None)
            raise CellProblem("failed", f"worker crashed: {exc}") from None
        if reply.get("ok"):
            return reply
        kind, error = reply.get("kind"), reply.get("error", "")
        if kind == "unsupported":
            raise CellProblem("unsupported", error)
        outcome = "verification failed" if kind == "verification" else "failed"
        detail = reply.get("traceback", "") if kind != "verification" else ""
        raise CellProblem(outcome, error or kind or "error", detail)

    def _build(self, spec: CellSpec) -> dict[str, Any]:
        """The cell's starting state, built and verified in the arm's long-lived worker (untimed)."""
        payload = {"cmd": "build", "cell": self.cell(spec, 1, False).to_json()}
        return self._ask(self.persistent(spec.arm), spec, payload, persistent=True)["info"]

    def _rounds(self, spec: CellSpec, rounds: int, memory: bool) -> tuple[list[dict[str, Any]], list[int]]:
        """``rounds`` timed rounds back to back: warm in the arm's worker, cold a fresh worker each."""
        results, pids = self._rounds_unnumbered(spec, rounds, memory)
        for r in results:
            r["slot"] = self._slot
            self._slot += 1
        return results, pids

    def _rounds_unnumbered(self, spec: CellSpec, rounds: int, memory: bool) -> tuple[list[dict[str, Any]], list[int]]:
        if spec.mode == "warm":
            payload = {"cmd": "run", "cell": self.cell(spec, rounds, True, memory).to_json()}
            reply = self._ask(self.persistent(spec.arm), spec, payload, persistent=True)
            return reply["rounds"], [reply["pid"]]
        results: list[dict[str, Any]] = []
        pids: list[int] = []
        for r in range(rounds):
            payload = {"cmd": "run", "cell": self.cell(spec, 1, False, memory and r == rounds - 1).to_json()}
            worker = self.fresh()
            try:
                reply = self._ask(worker, spec, payload, persistent=False)
            finally:
                worker.close()
            results.extend(reply["rounds"])
            pids.append(reply["pid"])
        return results, pids

    def _say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    # -- the drift probe --------------------------------------------------------
    def probe(self, when: str) -> None:
        """Time the fixed sqlite3 probe once (median of a few warm rounds); never fails the run."""
        if not self.timed or not self.run.probe or CONTROL_ARM not in self.arms:
            return
        figures = []
        try:
            if self._probe_worker is None or self._probe_worker.proc.poll() is not None:
                self._probe_worker = self.fresh()
            for model, op in PROBE_CELLS:
                spec = CellSpec(CONTROL_ARM, model, op, "warm", "default")
                build = self.cell(spec, 1, False, sizes=PROBE_SIZES)
                self._ask(self._probe_worker, spec, {"cmd": "build", "cell": build.to_json()}, persistent=False)
                run = self.cell(spec, PROBE_ROUNDS, True, sizes=PROBE_SIZES)
                reply = self._ask(self._probe_worker, spec, {"cmd": "run", "cell": run.to_json()}, persistent=False)
                rows = make_plan(model, op, "default", PROBE_SIZES).rows
                figures.append(rows_per_second(rows, [r["seconds"] for r in reply["rounds"]]))
        except CellProblem as exc:
            self.probe_notes.append(f"drift probe at {when} failed: {exc.message}")
            return
        figure = geometric_mean(figures)
        self.probes.append({"when": when, "rows_per_s": figure, "loadavg_1min": _loadavg()})

    def run_facts(self) -> dict[str, Any]:
        """Run-level facts for the JSON's top-level ``ormbench`` key."""
        figures = [p["rows_per_s"] for p in self.probes]
        return {
            "schedule": self.run.schedule if self.timed else "verify-only",
            "drift_floor": drift_floor(figures),
            "probes": self.probes,
            "probe": {"arm": CONTROL_ARM, "cells": [f"{m}-{OPS_BY_LETTER[o].name}-warm-default" for m, o in PROBE_CELLS],
                      "rounds": PROBE_ROUNDS, "iterations": PROBE_SIZES.iterations, "batch": PROBE_SIZES.batch,
                      "figure": "geometric mean of the cells' median rows/s"},
            "notes": self.probe_notes,
        }

    def finish(self) -> None:
        """End of the run: the last probe of a back-to-back run (an interleaved one took it already)."""
        if self.timed and not self.interleaved and self._executed and self.records:
            self.probe("end")

    # -- the interleaved schedule -----------------------------------------------
    def _run_schedule(self) -> dict[CellSpec, Measured]:
        measured: dict[CellSpec, Measured] = {}
        specs = [s for s in self.planned if not self.arms[s.arm].missing()]
        started = time.monotonic()
        self._say(f"pytest-ormbench: building and verifying the starting states of {len(specs)} cells "
                  f"(untimed; on the large table this takes minutes)")
        for spec in specs:
            m = measured[spec] = Measured()
            try:
                m.info = self._build(spec)
            except CellProblem as exc:
                m.problem = exc
        arms: list[str] = []
        for spec in specs:
            if spec.arm not in arms:
                arms.append(spec.arm)
        rounds = self.run.rounds
        memory = self.run.memory
        self._say(f"pytest-ormbench: starting states ready after {time.monotonic() - started:.0f} s; "
                  f"interleaved schedule: {len(specs)} cells x {rounds} rounds, arm order rotated every round")
        self.probe("start")
        for r in range(rounds):
            order = arms[r % len(arms):] + arms[:r % len(arms)] if arms else []
            for arm in order:
                for spec in (s for s in specs if s.arm == arm):
                    m = measured[spec]
                    if m.problem is not None:
                        continue
                    try:
                        results, pids = self._rounds(spec, 1, memory and r == rounds - 1)
                    except CellProblem as exc:
                        m.problem = exc
                        continue
                    m.results.extend(results)
                    m.pids.extend(pids)
            self.probe(f"after round {r + 1}")
            self._say(f"pytest-ormbench: round {r + 1}/{rounds} done after {time.monotonic() - started:.0f} s "
                      f"(arm order: {', '.join(order)})")
        return measured

    # -- one cell ---------------------------------------------------------------
    def _fail(self, spec: CellSpec, problem: CellProblem) -> None:
        first = problem.message.splitlines()[0] if problem.message else problem.outcome
        self.not_run.append((spec.id, problem.outcome, first))
        if problem.outcome == "unsupported":
            pytest.skip(f"unsupported by {spec.arm}: {problem.message}")
        pytest.fail(f"{spec.id}: {problem.outcome}: {problem.message}\n{problem.detail}".rstrip(), pytrace=False)

    def _measure(self, spec: CellSpec) -> Measured:
        if self.interleaved and spec in self.planned:
            if self._measured is None:
                self._measured = self._run_schedule()
            return self._measured[spec]
        m = Measured()
        if self.timed and not self._executed:
            self.probe("start")
        try:
            m.info = self._build(spec)
            m.results, m.pids = self._rounds(spec, self.run.rounds if self.timed else 1,
                                             self.run.memory and self.timed)
        except CellProblem as exc:
            m.problem = exc
        self._executed += 1
        if self.timed and self._executed == max(1, len(self.planned) // 2) and len(self.planned) > 2:
            self.probe("middle")
        return m

    def execute(self, spec: CellSpec, benchmark: Any) -> dict[str, Any]:
        benchmark._mode = "pytest-ormbench"  # we feed the fixture ourselves
        missing = self.arms[spec.arm].missing()
        if missing:
            self.not_run.append((spec.id, "skipped", missing))
            pytest.skip(f"{spec.arm}: {missing}")
        m = self._measure(spec)
        if m.problem is not None:
            self._fail(spec, m.problem)
        record = self._record(spec, m.info, m.results, m.pids)
        if self.timed and not benchmark.disabled:
            stats = benchmark._make_stats(1)
            for r in m.results:
                stats.update(r["seconds"])
            benchmark.extra_info.update(record)
            self.records.append(record)
        return record

    def _plan(self, spec: CellSpec) -> CellPlan:
        return make_plan(spec.model, spec.op, spec.table, self.run.sizes)

    def _record(self, spec: CellSpec, info: dict[str, Any], results: list[dict[str, Any]],
                pids: list[int]) -> dict[str, Any]:
        plan = self._plan(spec)
        op = plan.op
        seconds = [r["seconds"] for r in results]
        facts = results[-1]["facts"]
        devs = info.get("deviations", {})
        deviations = {k: v for k, v in devs.items() if k in ("*", op.name, spec.model, f"{spec.model}:{op.name}")}
        record = {
            "arm": spec.arm,
            "arm_label": info.get("arm_label", spec.arm),
            "driver": info.get("driver"),
            "is_async": info.get("is_async"),
            "model": spec.model,
            "test": MODELS[spec.model].test,
            "op": op.letter,
            "op_name": op.name,
            "op_title": op.title,
            "object_op": op.object_op,
            "mode": spec.mode,
            "table": spec.table,
            "rows": plan.rows,
            "start_rows": plan.state.count,
            "rounds": len(seconds),
            "round_seconds": seconds,
            "median_seconds": median(seconds),
            "rows_per_s": rows_per_second(plan.rows, seconds),
            "verified": True,
            "iterations": self.run.sizes.iterations,
            "batch": self.run.sizes.batch,
            "versions": info.get("versions", {}),
            "python": info.get("python"),
            "sqlite_version": info.get("sqlite_version"),
            "settings": self.run.settings.to_json(),
            "pragmas": facts.get("pragmas"),
            "connections": facts.get("connections"),
            "commits": facts.get("commits"),
            "deviations": deviations,
            "unsupported": info.get("unsupported", {}),
            "arm_info": info.get("arm_info", {}),
            "worker_pids": pids,
            "schedule": self.run.schedule if self.timed else "verify-only",
            # each timed round's place in the run's order (0 = the first round this process timed)
            "round_slots": [r.get("slot") for r in results],
            "loadavg_1min": _loadavg(),
        }
        extra_facts = {k: v for k, v in facts.items()
                       if k not in ("pragmas", "connections", "commits", "bulk_ids_set", "memory_peak_bytes")}
        if extra_facts:
            record["arm_facts"] = extra_facts
        if "memory_peak_bytes" in facts:
            record["memory_peak_bytes"] = facts["memory_peak_bytes"]
        if "bulk_ids_set" in facts:
            record["bulk_ids_set"] = facts["bulk_ids_set"]
        return record
