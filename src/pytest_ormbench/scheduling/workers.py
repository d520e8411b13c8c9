"""The parent's handle on a measuring child (the protocol: :mod:`pytest_ormbench.measuring.worker`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable




class WorkerCrashed(RuntimeError):
    pass


class Worker:
    """One child process speaking the protocol."""

    def __init__(self, python: str = sys.executable, env: dict[str, str] | None = None,
                 cwd: str | None = None, prefix: list[str] | None = None) -> None:
        """``prefix``: what runs the interpreter (valgrind's command line, for instructions)."""
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        self.proc = subprocess.Popen(
            [*(prefix or []), python, "-m", "pytest_ormbench.measuring.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env=env, cwd=cwd, text=True, encoding="utf-8",
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write(json.dumps(payload) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            raise WorkerCrashed(f"the worker process exited with status {self.proc.returncode}:\n{self.stderr_tail()}")
        return json.loads(line)

    def stderr_tail(self, limit: int = 4000) -> str:
        self._stderr.seek(0)
        data = self._stderr.read().decode("utf-8", "replace")
        return data[-limit:]

    def close_input(self) -> None:
        """Tell the worker to exit once its current request is done (its stdin reaches end of file)."""
        if self.proc.poll() is None and self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def close(self, timeout: float = 10.0) -> None:
        """Let the worker exit; one still busy after ``timeout`` seconds (a long op under callgrind, a hung
        driver) is terminated, then killed: a stopped run never waits for a round nobody will read."""
        if self.proc.poll() is None:
            self.close_input()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self._stderr.close()


def child_env(extra_paths: list[str]) -> dict[str, str]:
    """The parent's environment, with its import path, so the child finds the same arms."""
    env = dict(os.environ)
    paths = [p for p in extra_paths + sys.path if p and Path(p).is_dir()]
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths + ([old] if old else [])))
    env["PYTHONHASHSEED"] = env.get("PYTHONHASHSEED", "0")
    return env


class Preloaded:
    """Cold rounds' processes forked from a worker per arm module that has imported it and opened nothing
    (``--ormbench-cold-start=fork``; the worker's ``preload`` and ``fork`` requests). A module whose import
    leaves threads running cannot be forked safely: its cold rounds start fresh interpreters, and
    :attr:`refused` says why."""

    def __init__(self) -> None:
        self.pool: dict[str, Worker] = {}
        #: module target -> why its cold rounds start fresh processes
        self.refused: dict[str, str] = {}

    def get(self, name: str, target: str, start: Callable[[], Worker],
            preload: Callable[[Worker], dict[str, Any]]) -> Worker | None:
        """The preloaded worker ``name`` (an arm's place and module), started and preloaded on first need;
        None when the module refused."""
        if target in self.refused:
            return None
        worker = self.pool.get(name)
        if worker is not None and worker.proc.poll() is None:
            return worker
        worker = start()
        try:
            reply = preload(worker)
        except BaseException:
            worker.close(timeout=0.0)
            raise
        if not reply.get("forkable"):
            worker.close()
            self.refused[target] = str(reply.get("why") or "not forkable")
            return None
        self.pool[name] = worker
        return worker

    def forget(self, worker: Worker) -> None:
        for name, w in list(self.pool.items()):
            if w is worker:
                del self.pool[name]
