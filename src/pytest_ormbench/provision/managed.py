"""The parent's handle on a keeper process: start it, read its report, end it with the run (see ``keeper``)."""

from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Mapping

from pytest_ormbench.backends.server import ServerInfo
from pytest_ormbench.provision.keeper import kill_server, remove_tree
from pytest_ormbench.provision.messages import ServerUnavailable

_SRC_ROOT = str(Path(__file__).resolve().parents[2])


_LIVE: set["ManagedServer"] = set()
_LIVE_LOCK = threading.Lock()


class ManagedServer:
    """A server started by :func:`start_keeper`; :meth:`stop` (or leaving the ``with`` block) ends it.

    Holding the keeper's stdin open is what keeps the server alive; see the module docstring.
    """

    def __init__(self, proc: subprocess.Popen[bytes], info: ServerInfo, directory: str, server_pid: int) -> None:
        self.info = info
        #: the temporary directory holding data/ and sock/ (removed by stop)
        self.directory = directory
        self.server_pid = server_pid
        self.keeper_pid = proc.pid
        self._proc = proc
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._stopped = False
        with _LIVE_LOCK:
            _LIVE.add(self)

    @property
    def postmaster_pid(self) -> int:
        """PostgreSQL's name for the server process."""
        return self.server_pid

    @property
    def running(self) -> bool:
        return not self._stopped and self._proc.poll() is None

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server and remove its directories; idempotent.

        Closing the keeper's stdin asks it to stop the server and clean up; if it does not within ``timeout``,
        its process group (keeper, and the server with it) is killed and the directory removed here.
        """
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        with _LIVE_LOCK:
            _LIVE.discard(self)
        proc = self._proc
        _close(proc.stdin)
        if os.getpid() != self._owner:  # a forked child: the server belongs to the process that started it
            return
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _killpg(proc.pid)
            proc.wait()
        _close(proc.stdout)
        _close(proc.stderr)
        # the keeper removes everything; this is for a keeper that was killed (the server then died of its
        # parent-death signal, but nobody removed the directory)
        kill_server(self.server_pid, self.directory)
        remove_tree(Path(self.directory))

    def __enter__(self) -> "ManagedServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<ManagedServer {self.info.host}:{self.info.port} {self.directory} {state}>"


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None:
        try:
            stream.close()
        except OSError:
            pass


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_all() -> None:
    """atexit: a run that forgot to stop its server (or ended by an exception) still leaves nothing behind."""
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - at exit, one failure must not keep the others running
            pass


def _after_fork_in_child() -> None:
    """A forked child must not hold the keepers' stdin open (the server would outlive its owner) nor stop them."""
    global _LIVE_LOCK
    _LIVE_LOCK = threading.Lock()  # another thread may have held it at the fork: the child is single-threaded now
    servers = list(_LIVE)
    _LIVE.clear()
    for server in servers:
        server._stopped = True
        _close(server._proc.stdin)


atexit.register(_stop_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def start_keeper(module: str, engine: str, config: Mapping[str, Any], timeout: float) -> ManagedServer:
    """Run ``python -m module`` as the keeper of one server, hand it ``config`` and wait for its report.

    Any failure raises :class:`ServerUnavailable` with one line; ``engine`` names the server in it.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_SRC_ROOT, env.get("PYTHONPATH")) if p)
    try:
        proc = subprocess.Popen([sys.executable, "-m", module], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, env=env, close_fds=True)
    except OSError as exc:
        raise ServerUnavailable(f"cannot start the {engine} keeper process: {exc}") from None
    try:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({**config, "timeout": float(timeout)}).encode() + b"\n")
        proc.stdin.flush()
        line, err, timed_out = _read_report(proc, deadline=time.monotonic() + timeout + 20.0)
    except BaseException:
        _abandon(proc)
        raise
    reply: dict[str, Any] | None = None
    if line:
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
    if reply is None or not reply.get("ok"):
        if timed_out:
            _abandon(proc)
            raise ServerUnavailable(f"the {engine} server did not start within {timeout:g} s")
        _finish_failed(proc)
        if reply is not None:
            raise ServerUnavailable(str(reply.get("error") or f"the {engine} server did not start"))
        last = [ln for ln in err.decode(errors="replace").splitlines() if ln.strip()]
        raise ServerUnavailable(f"the {engine} keeper process exited ({proc.returncode}) before reporting"
                                + (f": {last[-1].strip()}" if last else ""))
    _close(proc.stderr)  # the keeper sends its stderr to its own log once it has reported
    proc.stderr = None
    return ManagedServer(proc, ServerInfo.from_json(reply["info"]), str(reply["dir"]), int(reply["pid"]))


def _read_report(proc: subprocess.Popen[bytes], deadline: float) -> tuple[bytes, bytes, bool]:
    """The keeper's one stdout line (b"" on EOF or timeout), what it wrote to stderr meanwhile, and whether
    the deadline passed first.

    stderr is drained too, so that a chatty keeper cannot fill the pipe and block before it reports.
    """
    assert proc.stdout is not None and proc.stderr is not None
    out, err = b"", b""
    open_fds = {proc.stdout.fileno(): "out", proc.stderr.fileno(): "err"}
    with selectors.DefaultSelector() as sel:
        for fd in open_fds:
            sel.register(fd, selectors.EVENT_READ)
        while open_fds and b"\n" not in out:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return b"", err, True
            for key, _ in sel.select(timeout=remaining):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fd)
                    del open_fds[key.fd]
                elif open_fds[key.fd] == "out":
                    out += chunk
                else:
                    err += chunk
    return (out.split(b"\n", 1)[0] if b"\n" in out else b""), err, False


def _finish_failed(proc: subprocess.Popen[bytes]) -> None:
    """Let a keeper that reported a failure exit (it cleaned up before reporting)."""
    _end_keeper(proc, terminate=False)


def _abandon(proc: subprocess.Popen[bytes]) -> None:
    """Interrupted (Ctrl-C) or timed out while the keeper starts the server: it reads stdin only once it has
    reported, so SIGTERM asks it to clean up now."""
    _end_keeper(proc, terminate=True)


def _end_keeper(proc: subprocess.Popen[bytes], terminate: bool) -> None:
    _close(proc.stdin)
    if terminate and proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        _killpg(proc.pid)  # the keeper and, in its process group, the server or its initialisation
        proc.wait()
    _close(proc.stdout)
    _close(proc.stderr)


# ---------------------------------------------------------------------------------------------------------------
# the keeper process
