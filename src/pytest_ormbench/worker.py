"""The measuring child process, and the parent's handle on it (pyperf's shape).

Protocol: one JSON object per line. The parent writes a request on the child's
stdin; the child answers on a private copy of its original stdout, while
anything an ORM prints goes to stderr. Requests:

    {"cmd": "build", "cell": {...}}  -> {"ok": true, "template": path, "info": {...}}
    {"cmd": "run", "cell": {...}}    -> {"ok": true, "rounds": [{"seconds": s, "facts": {...}}], "info": {...}}

A failure answers {"ok": false, "kind": "unsupported" | "verification" | "error",
"error": "...", "traceback": "..."}. In cold mode the parent starts a fresh
child for every timed round; in warm mode it keeps one child per arm.

A worker only ever imports one arm: some ORMs change process-wide state on
import (Piccolo registers sqlite3 adapters and converters, for example), so two
arms must never share a measuring process.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import IO, Any


def describe_environment(arm_name: str, model: str, settings: Any) -> dict[str, Any]:
    """Versions and declarations of the arm, read inside the measuring process."""
    import importlib.metadata
    import sqlite3

    from .contract import MODELS
    from .registry import load_arm_class

    cls = load_arm_class(arm_name)
    versions = {}
    for dist in cls.packages:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "unknown"
    return {
        "arm_label": cls.label or cls.name,
        "driver": cls.driver,
        "is_async": cls.is_async,
        "versions": versions,
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "sqlite_version": sqlite3.sqlite_version,
        "deviations": dict(cls.deviations),
        "unsupported": dict(cls.unsupported),
        "bulk_sets_ids_declared": cls.bulk_sets_ids,
        "arm_info": cls(MODELS[model], settings).describe(),
    }


def handle(request: dict[str, Any]) -> dict[str, Any]:
    from .contract import Unsupported
    from .runner import Cell, build_templates, run_cell
    from .verify import VerificationError

    cell = Cell.from_json(request["cell"])
    try:
        if request["cmd"] == "build":
            template = build_templates(cell)
            return {"ok": True, "template": template, "info": describe_environment(cell.arm, cell.model, cell.settings), "pid": os.getpid()}
        if request["cmd"] == "run":
            rounds = run_cell(cell)
            return {
                "ok": True,
                "rounds": [{"seconds": r.seconds, "facts": r.facts} for r in rounds],
                "info": describe_environment(cell.arm, cell.model, cell.settings),
                "pid": os.getpid(),
            }
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
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = handle(json.loads(line))
        proto.write(json.dumps(reply, default=str) + "\n")
        proto.flush()
    return 0


# --------------------------------------------------------------------------
# The parent's side
# --------------------------------------------------------------------------


class WorkerCrashed(RuntimeError):
    pass


class Worker:
    """One child process speaking the protocol."""

    def __init__(self, python: str = sys.executable, env: dict[str, str] | None = None,
                 cwd: str | None = None) -> None:
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        self.proc = subprocess.Popen(
            [python, "-m", "pytest_ormbench.worker"],
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

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except Exception:
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


if __name__ == "__main__":
    sys.exit(main())
