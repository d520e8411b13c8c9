"""The parent's side of a cell: schedule worker processes, record the result.

Nothing here measures time (the worker does) or imports an ORM. It turns a
cell's round times into a pytest-benchmark result, with the facts the worker
verified in ``extra_info``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .contract import MODELS, OPS_BY_LETTER
from .options import RunConfig
from .registry import ArmEntry
from .runner import Cell
from .stats import median, rows_per_second
from .worker import Worker, WorkerCrashed, child_env


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


@dataclass
class OrmbenchSession:
    run: RunConfig
    arms: dict[str, ArmEntry]
    rootdir: Path
    tmp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="pytest-ormbench-")))
    workers: dict[str, Worker] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    not_run: list[tuple[str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.env = child_env([str(self.rootdir)])

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
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- one cell ---------------------------------------------------------------
    def cell(self, spec: CellSpec, rounds: int, warmup: bool, memory: bool = False) -> Cell:
        return Cell(
            arm=spec.arm, model=spec.model, op=spec.op, table=spec.table, mode=spec.mode,
            sizes=self.run.sizes, settings=self.run.settings,
            templates_dir=self.tmp / "templates", work_dir=self.tmp / "work",
            rounds=rounds, warmup=warmup, register=self.run.register, memory=memory,
        )

    def _ask(self, worker: Worker, spec: CellSpec, payload: dict[str, Any], persistent: bool) -> dict[str, Any]:
        try:
            reply = worker.request(payload)
        except WorkerCrashed as exc:
            if persistent:
                self.workers.pop(spec.arm, None)
            self.not_run.append((spec.id, "failed", "worker crashed"))
            pytest.fail(f"{spec.id}: {exc}", pytrace=False)
        if reply.get("ok"):
            return reply
        kind, error = reply.get("kind"), reply.get("error", "")
        if kind == "unsupported":
            self.not_run.append((spec.id, "unsupported", error))
            pytest.skip(f"unsupported by {spec.arm}: {error}")
        outcome = "verification failed" if kind == "verification" else "failed"
        self.not_run.append((spec.id, outcome, error.splitlines()[0] if error else kind or "error"))
        detail = reply.get("traceback", "") if kind != "verification" else ""
        pytest.fail(f"{spec.id}: {outcome}: {error}\n{detail}".rstrip(), pytrace=False)

    def execute(self, spec: CellSpec, benchmark: Any) -> dict[str, Any]:
        benchmark._mode = "pytest-ormbench"  # we feed the fixture ourselves
        entry = self.arms[spec.arm]
        missing = entry.missing()
        if missing:
            self.not_run.append((spec.id, "skipped", missing))
            pytest.skip(f"{spec.arm}: {missing}")
        rounds = 1 if self.run.verify_only else self.run.rounds
        warm = spec.mode == "warm"
        build = self._ask(self.persistent(spec.arm), spec,
                          {"cmd": "build", "cell": self.cell(spec, 1, False).to_json()}, persistent=True)
        results: list[dict[str, Any]] = []
        pids: list[int] = []
        memory = self.run.memory and not self.run.verify_only
        if warm:
            payload = {"cmd": "run", "cell": self.cell(spec, rounds, True, memory).to_json()}
            reply = self._ask(self.persistent(spec.arm), spec, payload, persistent=True)
            results, pids = reply["rounds"], [reply["pid"]]
        else:
            for r in range(rounds):
                last = r == rounds - 1
                payload = {"cmd": "run", "cell": self.cell(spec, 1, False, memory and last).to_json()}
                worker = self.fresh()
                try:
                    reply = self._ask(worker, spec, payload, persistent=False)
                finally:
                    worker.close()
                results.extend(reply["rounds"])
                pids.append(reply["pid"])
        record = self._record(spec, build["info"], results, pids)
        if not self.run.verify_only and not benchmark.disabled:
            stats = benchmark._make_stats(1)
            for r in results:
                stats.update(r["seconds"])
            benchmark.extra_info.update(record)
            self.records.append(record)
        return record

    def _record(self, spec: CellSpec, info: dict[str, Any], results: list[dict[str, Any]],
                pids: list[int]) -> dict[str, Any]:
        from .plan import make_plan

        plan = make_plan(spec.model, spec.op, spec.table, self.run.sizes)
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
