"""Running pieces: one pytest process at a time in the frozen tree, its log and its end line, a stop by a
signal, resuming (a piece done before is skipped), the folder's lock and its manifest."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import re
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from pytest_ormbench.commands.publish.errors import PublishError
from pytest_ormbench.commands.publish.plan import Piece, Plan
from pytest_ormbench.commands.publish.tree import tree_env

#: the last line of a piece's log (run-large-arms.sh wrote it so before; wall-times.md and run tables read it)
END_LINE = re.compile(r"exit=(\d+) wall_seconds=(\d+) started=(\S+)")
MANIFEST = "publish-manifest.jsonl"
LOCK = ".publish.lock"
#: pytest's exit status for a usage error (a bad --ormbench-* value)
USAGE_ERROR = 4


@dataclass
class Outcome:
    stem: str
    status: str  # "skipped", "ok", "failed", "stopped"
    code: int | None = None
    seconds: int | None = None


def last_end_line(log: Path) -> tuple[int, int, str] | None:
    """(exit, wall seconds, started) from a log's last end line, or None (no log, or a piece still running or
    killed before it could write one)."""
    try:
        found = END_LINE.findall(log.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    if not found:
        return None
    code, secs, started = found[-1]
    return int(code), int(secs), started


def is_done(out: Path, piece: Piece) -> tuple[int, int, str] | None:
    end = last_end_line(out / f"{piece.stem}.log")
    return end if end and end[0] == 0 and (out / f"{piece.stem}.json").is_file() else None


def minsec(secs: int) -> str:
    return f"{secs // 60} min {secs % 60:02d} s"


def stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(int(t), dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Stop(Exception):
    """A signal asked the publish to stop; the running piece was stopped and recorded."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Runner:
    """Runs pieces one at a time; a SIGTERM, SIGINT or SIGHUP stops the running piece's whole process group."""

    def __init__(self, plan: Plan, tree: Path, sha: str, lock_fd: int, say: IO[str]) -> None:
        self.plan, self.tree, self.sha, self.lock_fd, self.say = plan, tree, sha, lock_fd, say
        self.child: subprocess.Popen[bytes] | None = None
        self.signum = 0

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.signum = self.signum or signum
        if self.child is not None and self.child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.child.pid, signal.SIGTERM)

    @contextlib.contextmanager
    def signals(self) -> Iterator[None]:
        old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    def command(self, piece: Piece, json_path: Path) -> list[str]:
        return [self.plan.python, "-m", "pytest", "bench_suites", "-p", "no:cacheprovider", "-q",
                f"--ormbench-preset={self.plan.preset}", f"--ormbench-arms={piece.arm}", f"{piece.db_flag}={piece.db}",
                *self.plan.passthrough, f"--benchmark-json={json_path}"]

    def run(self, piece: Piece) -> Outcome:
        out = self.plan.out
        log, final, partial = out / f"{piece.stem}.log", out / f"{piece.stem}.json", out / f"{piece.stem}.json.partial"
        # an earlier attempt's log and JSON are kept beside, out of the *.log and *.json that finalize reads: a
        # piece stopped now leaves no JSON
        for earlier in (log, final):
            if earlier.exists():
                os.replace(earlier, earlier.with_name(earlier.name + ".prev"))
        partial.unlink(missing_ok=True)
        cmd = self.command(piece, partial)
        start = time.time()
        with open(log, "w", encoding="utf-8") as fh:
            fh.write(f"ormbench publish: piece {piece.stem}: tree {self.sha} ({self.tree}); python {self.plan.python}; "
                     f"started={stamp(start)}\n")
            fh.write(f"ormbench publish: {shlex.join(cmd)}\n")
            fh.flush()
            if self.signum:
                raise Stop(self.signum)
            # a session of its own, so that a stop reaches its workers too; the lock goes with it, so that no
            # second publish starts in this folder while an orphaned piece still writes to it
            self.child = subprocess.Popen(cmd, cwd=self.tree, env=tree_env(self.tree), stdout=fh,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True, pass_fds=(self.lock_fd,))
            code = self._wait(self.child)
            self.child = None
            wall = int(time.time() - start)
            if code < 0:  # killed by a signal: as a shell reports it
                code = 128 - code
            if self.signum and code == 0:
                code = 128 + self.signum  # stopped between pytest's end and here: count it as stopped
            # 0: every cell passed; 1: pytest finished and a cell failed (its JSON is kept for the record, the log's
            # exit=1 makes the next run redo it); anything else: the JSON, if any, is not a whole run
            if code in (0, 1) and partial.exists():
                os.replace(partial, final)
            else:
                partial.unlink(missing_ok=True)
            fh.write(f"exit={code} wall_seconds={wall} started={stamp(start)}\n")
        if self.signum:
            raise Stop(self.signum)
        return Outcome(piece.stem, "ok" if code == 0 else "failed", code, wall)

    def _wait(self, child: subprocess.Popen[bytes]) -> int:
        while True:
            try:
                return child.wait(timeout=60 if self.signum else None)
            except subprocess.TimeoutExpired:  # a minute after the stop it is still running: kill the group
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)


def usage_line(log: Path) -> str:
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    errors = [ln for ln in lines if ln.startswith("ERROR:") or "error:" in ln]
    return (errors[-1] if errors else lines[-2] if len(lines) > 1 else "usage error").removeprefix("ERROR: ")


@contextlib.contextmanager
def locked(out: Path) -> Iterator[int]:
    """Hold ``out``'s lock file (an flock, so a killed holder leaves no stale lock); removed when done."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise PublishError(f"{out} is being published by another process (pid {holder}); one publish per "
                               "folder") from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder before us removed the file after we opened it: lock the new one
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield fd
    finally:
        path.unlink(missing_ok=True)  # still ours: nobody else can hold the lock on this file
        os.close(fd)


def manifest(out: Path, record: dict[str, object]) -> None:
    with open(out / MANIFEST, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
