"""The run's measuring processes, as the scheduler asks for them (the parent's side of pyperf's manager/worker).

Per arm on each database: a long-lived worker (it builds starting states and runs warm cells) and, in a timed
run, a counting worker (its statement trace costs a Python call per statement, so it never times a round).
Cold rounds run in a child forked from a worker per arm module that has only imported it
(``--ormbench-cold-start=fork``), or in a fresh worker each. Under callgrind the measuring processes run under
valgrind: the preloaded worker is started under it (counting off) and a warm cell's process is forked from it
too, so that valgrind and the imports start once per arm module rather than once per cell and round. A reply
that is not ``ok`` becomes a :class:`CellProblem`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from pytest_ormbench.measuring.runner import Cell
from pytest_ormbench.provision.servers import ServerProblem, Servers
from pytest_ormbench.scheduling.workers import Preloaded, Worker, WorkerCrashed
from pytest_ormbench.workload.cells import CellKey


class CellProblem(Exception):
    """A cell that produced no number: unsupported, skipped, failed or failed verification."""

    def __init__(self, outcome: str, message: str, detail: str = "", why: str = "") -> None:
        super().__init__(message)
        self.outcome, self.message, self.detail = outcome, message, detail
        #: the reason in a few words, for the progress lines' count of dropped cells ("1 cell skipped: no server")
        self.why = why or {"verification failed": "failed verification"}.get(outcome, outcome)


def owner(key: CellKey) -> str:
    """What owns a long-lived worker: an arm on one database (its cells of every RTT share it, as its cells
    of every op do; each cell opens and closes its own connection)."""
    return key.arm if key.db == "sqlite" else f"{key.arm}@{key.db}"


class Processes:
    """Every measuring process of one run, started on first need and stopped by :meth:`close`."""

    def __init__(self, env: dict[str, str], rootdir: Path, servers: Servers, rtts: tuple[float | None, ...],
                 prefix: list[str] | None = None, measuring_env: dict[str, str] | None = None,
                 cold_start: str = "fresh") -> None:
        self.env, self.rootdir, self.servers, self.rtts = env, rootdir, servers, rtts
        #: what runs a measuring interpreter (valgrind's command line for an instructions run), and its env
        self.prefix, self.measuring_env = prefix, measuring_env or env
        self.cold_start = cold_start
        self.workers: dict[str, Worker] = {}
        self.counters: dict[str, Worker] = {}
        self.preloaded = Preloaded()

    @property
    def forks(self) -> bool:
        """Whether cold rounds (and, under callgrind, warm cells' processes) fork from a preloaded worker."""
        return self.cold_start == "fork"

    def env_for(self, base: dict[str, str], key: CellKey) -> dict[str, str]:
        """A worker's environment for a cell's database: the server it connects to, started on first need."""
        try:
            extra = self.servers.env_for(key.db, self.rtts)
        except ServerProblem as exc:
            raise CellProblem("skipped", str(exc), why="skipped: no server") from None
        return {**base, **extra} if extra else base

    def _long_lived(self, pool: dict[str, Worker], key: CellKey) -> Worker:
        w = pool.get(owner(key))
        if w is None or w.proc.poll() is not None:
            w = pool[owner(key)] = Worker(env=self.env_for(self.env, key), cwd=str(self.rootdir))
        return w

    def persistent(self, key: CellKey) -> Worker:
        """The arm's long-lived worker on the cell's database: builds starting states, runs warm cells."""
        return self._long_lived(self.workers, key)

    def counter(self, key: CellKey) -> Worker:
        """The arm's worker that counts statements of warm cells."""
        return self._long_lived(self.counters, key)

    def fresh(self, measuring: bool = False, key: CellKey | None = None) -> Worker:
        """A new worker: under callgrind when it measures an instructions run."""
        env = self.measuring_env if measuring and self.prefix is not None else self.env
        if key is not None:
            env = self.env_for(env, key)
        if measuring and self.prefix is not None:
            return Worker(env=env, cwd=str(self.rootdir), prefix=self.prefix)
        return Worker(env=env, cwd=str(self.rootdir))

    def ask(self, worker: Worker, key: CellKey, payload: dict[str, Any], persistent: bool) -> dict[str, Any]:
        """One request; a bad reply becomes a :class:`CellProblem` (a crashed long-lived worker is forgotten)."""
        try:
            reply = worker.request(payload)
        except WorkerCrashed as exc:
            if persistent:
                for pool in (self.workers, self.counters):
                    if pool.get(owner(key)) is worker:
                        pool.pop(owner(key))
                self.preloaded.forget(worker)
            raise CellProblem("failed", f"worker crashed: {exc}") from None
        if reply.get("ok"):
            return reply
        kind, error = reply.get("kind"), reply.get("error", "")
        if kind == "unsupported":
            raise CellProblem("unsupported", error)
        outcome = "verification failed" if kind == "verification" else "failed"
        detail = reply.get("traceback", "") if kind != "verification" else ""
        raise CellProblem(outcome, error or kind or "error", detail)

    def cold(self, key: CellKey, cell: Cell, measuring: bool = False,
             started: Callable[[float], None] | None = None) -> dict[str, Any]:
        """A request in a process of its own: in a child forked from the arm module's preloaded worker (under
        valgrind when ``measuring`` an instructions run), else in a fresh worker; ``started`` is told the seconds
        a preloading worker took to start and import (the run's account)."""
        if not self.forks:
            return self.once(key, cell, measuring)
        import time

        t0 = time.monotonic()
        valgrind = measuring and self.prefix is not None
        name = f"{owner(key)} {cell.target}" + (" under callgrind" if valgrind else "")

        def start() -> Worker:
            if valgrind:
                return Worker(env=self.env_for(self.measuring_env, key), cwd=str(self.rootdir), prefix=self.prefix)
            return Worker(env=self.env_for(self.env, key), cwd=str(self.rootdir))

        before, asked = self.preloaded.pool.get(name), cell.target in self.preloaded.refused
        worker = self.preloaded.get(
            name, cell.target, start,
            lambda w: self.ask(w, key, {"cmd": "preload", "cell": cell.to_json()}, persistent=False))
        if started is not None and (worker is not before or (worker is None and not asked)):
            started(time.monotonic() - t0)
        if worker is None:
            return self.once(key, cell, measuring)
        return self.ask(worker, key, {"cmd": "fork", "cell": cell.to_json()}, persistent=True)

    def once(self, key: CellKey, cell: Cell, measuring: bool = False) -> dict[str, Any]:
        """One request in a fresh worker, closed after it."""
        worker = self.fresh(measuring, key)
        answered = False
        try:
            reply = self.ask(worker, key, {"cmd": "run", "cell": cell.to_json()}, persistent=False)
            answered = True
            return reply
        except CellProblem:
            answered = True  # the worker replied (with an error) or is gone: it ends as usual
            raise
        finally:
            # a request left unanswered (Ctrl-C, SIGTERM) is a round nobody will read: stop it now rather than
            # wait for it (under callgrind a round can run for minutes)
            worker.close(timeout=10.0 if answered else 0.0)

    def close(self, *others: Worker) -> None:
        """Stop every worker (and ``others``): all told at once to end, then each waited for."""
        workers = [*self.workers.values(), *self.counters.values(), *self.preloaded.pool.values(), *others]
        for w in workers:
            w.close_input()  # all at once: each worker ends its request and exits while the others do
        for w in workers:
            w.close()
        for pool in (self.workers, self.counters, self.preloaded.pool):
            pool.clear()
