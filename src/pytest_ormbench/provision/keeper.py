"""A throwaway database server that lives exactly as long as the run: what every server engine shares.

Why a keeper process: the server must go away with the run however the run ends (normal exit, Ctrl-C,
SIGTERM, or SIGKILL of the parent). :func:`managed.start_keeper` (the parent's side, ``managed.py``) therefore never runs the server
as its own child. It starts a keeper (``python -m pytest_ormbench.provision.<engine>``, in its own session,
so a terminal Ctrl-C reaches only the parent) whose stdin is a pipe from the parent. The keeper
initialises a data directory, starts the server as its child (with a parent-death signal, so the server
dies with the keeper), reports one JSON line on stdout and then blocks reading stdin. The parent can only
hold the pipe open by being alive: when it exits, closes the pipe or is killed, the keeper reads EOF,
stops the server and removes every directory it made.

An engine module (``provision/postgresql.py``, ``provision/mysql.py``) gives a :class:`ServerProcess` subclass (how to
initialise, start, read back and stop its server) and calls :func:`keeper_main` as its ``__main__``.
This module imports no ORM, no driver and no pytest.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from pytest_ormbench.backends.server import ServerInfo


from pytest_ormbench.provision.messages import ServerUnavailable, one_line

__all__ = ["ServerProcess", "keeper_main"]

#: sun_path is 108 bytes; a socket sits in <tmp>/ormbench-xx-XXXXXXXX/sock/, so that must stay well under it
MAX_SOCKET_PATH = 100


class _Stop(Exception):
    """Raised by the keeper's signal handler: unwind to the cleanup."""


def tempdir_base(prefix: str, socket_name: str, uid: int | None, gid: int | None, engine: str) -> str:
    """A base for the temporary directory: TMPDIR if the socket path stays short and the server user can
    traverse it, else /tmp."""
    candidates = [os.environ.get("TMPDIR") or "", "/tmp"]
    for base in candidates:
        if not base or not os.path.isdir(base):
            continue
        # <base>/<prefix>XXXXXXXX/sock/<socket_name>
        if len(os.path.abspath(base)) + len(f"/{prefix}12345678/sock/{socket_name}") >= MAX_SOCKET_PATH:
            continue
        if uid is not None and not _traversable(Path(base).resolve(), uid, gid):
            continue
        return base
    raise ServerUnavailable(f"no short temporary directory the {engine} server user can reach "
                            "(TMPDIR too long or not traversable, and /tmp unusable)")


def _traversable(path: Path, uid: int, gid: int | None) -> bool:
    """Whether ``uid`` may search every directory down to ``path`` (mode bits only; ACLs are not read)."""
    for directory in [path, *path.parents]:
        st = directory.stat()
        if st.st_uid == uid:
            bit = 0o100
        elif gid is not None and st.st_gid == gid:
            bit = 0o010
        else:
            bit = 0o001
        if not st.st_mode & bit:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def remove_tree(path: Path) -> None:
    for _ in range(20):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.05)  # a server process that is still exiting may write a file as we remove


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_server(pid: int, directory: str | Path) -> None:
    """SIGKILL ``pid`` if it still runs a server on ``directory`` (its command line names it)."""
    if pid <= 0:
        return
    if os.path.isdir("/proc"):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return  # not running
        if str(directory) not in cmdline:
            return  # the pid is someone else's now
    elif not pid_alive(pid):
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    for _ in range(100):
        if not pid_alive(pid):
            return
        time.sleep(0.02)


def parent_death_signal(keeper_pid: int, sig: int) -> Any:
    """A preexec_fn that makes the child receive ``sig`` when the keeper dies.

    subprocess applies user=/group= before preexec_fn runs, which matters: Linux clears the parent-death
    signal whenever the effective uid or gid changes (so the server must not switch users itself).
    None off Linux (no prctl).
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    PR_SET_PDEATHSIG = 1
    signum = int(sig)

    def preexec() -> None:
        if prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != keeper_pid:  # the keeper died before the signal was armed
            os._exit(1)

    return preexec


class ServerProcess:
    """One server run by the keeper: its temporary directory, its process, and how to take them down.

    A subclass sets :attr:`engine`, :attr:`prefix` and :attr:`socket_name`, and implements :meth:`launch`
    (initialise ``data``, start the server, return its ServerInfo); :meth:`stop` is shared.
    """

    engine = "server"
    prefix = "ormbench-db-"
    socket_name = "server.sock"
    #: the unprivileged user the server runs as when we are root
    run_as = "nobody"
    #: the signals that stop the server, each with how long to wait for it (the last one should be SIGKILL)
    stop_signals: tuple[tuple[int, float], ...] = ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0))
    #: what the server gets when the keeper dies without stopping it
    death_signal = signal.SIGKILL
    #: the engine's client environment variables (PGHOST, MYSQL_PWD, ...), kept from the server's programs
    client_env_prefixes: tuple[str, ...] = ()

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)
        self.settings: dict[str, str] = dict(config.get("settings") or {})
        self.timeout = float(config.get("timeout", 60))
        self.deadline = time.monotonic() + self.timeout
        self.directory: Path | None = None
        self.server: subprocess.Popen[bytes] | None = None
        self.uid: int | None = None
        self.gid: int | None = None
        if os.geteuid() == 0:
            import pwd
            try:
                pw = pwd.getpwnam(self.run_as)
            except KeyError:
                raise ServerUnavailable(f"running as root, and there is no user {self.run_as!r} "
                                        f"to run {self.engine} as") from None
            self.uid, self.gid = pw.pw_uid, pw.pw_gid

    def start(self) -> tuple[ServerInfo, int]:
        """Make the directory (data/ and sock/, owned by the server's user), then :meth:`launch`."""
        base = tempdir_base(self.prefix, self.socket_name, self.uid, self.gid, self.engine)
        self.directory = Path(tempfile.mkdtemp(prefix=self.prefix, dir=base))
        data, sock = self.directory / "data", self.directory / "sock"
        data.mkdir(mode=0o700)
        sock.mkdir(mode=0o700)
        if self.uid is not None:
            os.chmod(self.directory, 0o711)  # the server's user may pass through, not list
            for d in (data, sock):
                os.chown(d, self.uid, self.gid if self.gid is not None else -1)
        info = self.launch(data, sock)
        assert self.server is not None
        return info, self.server.pid

    def launch(self, data: Path, sock: Path) -> ServerInfo:
        raise NotImplementedError

    def child_args(self) -> dict[str, Any]:
        """subprocess arguments for the server's programs: its user, a clean C locale, no stdin, and none of the
        caller's client variables of the engine (:attr:`client_env_prefixes`)."""
        assert self.directory is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith(self.client_env_prefixes)}
        env.update(LC_ALL="C", LANG="C", TZ=os.environ.get("TZ", "UTC"))
        args: dict[str, Any] = {"cwd": str(self.directory), "env": env, "stdin": subprocess.DEVNULL,
                                "close_fds": True}
        if self.uid is not None:
            env["HOME"] = str(self.directory)
            args.update(user=self.uid, group=self.gid, extra_groups=[])
        return args

    def remaining(self) -> float:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise ServerUnavailable(f"the {self.engine} server did not start within {self.timeout:g} s")
        return remaining

    def run_tool(self, what: str, cmd: list[str]) -> None:
        """Run an initialisation program as the server's user; its failure is one line with its last output."""
        try:
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=self.remaining(),
                                 **self.child_args())
        except subprocess.TimeoutExpired:
            raise ServerUnavailable(f"{what} did not finish within {self.timeout:g} s") from None
        except OSError as exc:
            raise ServerUnavailable(f"cannot run {what}: {exc}") from None
        if out.returncode != 0:
            lines = [ln.strip() for ln in out.stdout.decode(errors="replace").splitlines() if ln.strip()]
            errors = [ln for ln in lines if "error" in ln.lower() or "fatal" in ln.lower()]
            raise ServerUnavailable(f"{what} failed (exit {out.returncode}): " + " | ".join((errors or lines)[-3:]))

    def spawn(self, cmd: list[str], log_path: Path) -> subprocess.Popen[bytes]:
        """Start the server program as the keeper's child, with the parent-death signal armed."""
        preexec = parent_death_signal(os.getpid(), self.death_signal)
        with open(log_path, "ab") as log:
            try:
                self.server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=preexec,
                                               **self.child_args())
            except (OSError, subprocess.SubprocessError) as exc:
                raise ServerUnavailable(f"cannot run {Path(cmd[0]).name}: {exc}") from None
        return self.server

    def wait_ready(self, proc: subprocess.Popen[bytes], ready: Callable[[], bool], what: str,
                   tail: Callable[[], str]) -> None:
        """Poll until ``ready()``; a server that exits first, or is not ready by the deadline, is one line with
        the end of its log (``tail()``)."""
        while True:
            rc = proc.poll()
            if rc is not None:
                self.server = None
                said = tail()
                raise ServerUnavailable(f"{what} failed to start (exit {rc})" + (f": {said}" if said else ""))
            if ready():
                return
            if time.monotonic() > self.deadline:
                said = tail()
                raise ServerUnavailable(f"{what} did not accept connections within {self.timeout:g} s"
                                        + (f": {said}" if said else ""))
            time.sleep(0.02)

    def stop(self) -> None:
        """Each of :attr:`stop_signals` in turn until the server is gone; then remove everything."""
        proc = self.server
        if proc is not None and proc.poll() is None:
            for sig, wait in self.stop_signals:
                try:
                    proc.send_signal(sig)
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
                except ProcessLookupError:
                    break
        if self.directory is not None:
            if proc is not None:
                kill_server(proc.pid, self.directory)
            remove_tree(self.directory)


def keeper_main(make: Callable[[Mapping[str, Any]], ServerProcess], engine: str) -> int:
    """The keeper: read a config line, start the server, report one JSON line, then live until stdin closes."""
    stopping = False

    def on_signal(signum: int, frame: Any) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            raise _Stop(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    keeper: ServerProcess | None = None
    try:
        try:
            line = sys.stdin.buffer.readline()
            if not line:
                return 0  # the parent went away before asking for anything
            keeper = make(json.loads(line))
            info, pid = keeper.start()
            reply: dict[str, Any] = {"ok": True, "info": info.to_json(), "dir": str(keeper.directory), "pid": pid}
        except _Stop:
            return 0
        except Exception as exc:  # noqa: BLE001 - every failure becomes the one-line report
            message = str(exc) if isinstance(exc, ServerUnavailable) else one_line(
                f"the {engine} keeper failed: {type(exc).__name__}: {exc}")
            reply = {"ok": False, "error": message}
            if keeper is not None:
                keeper.stop()  # clean up before reporting: when the parent reads the error, nothing is left
                keeper = None
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        if not reply["ok"]:
            return 0
        assert keeper is not None and keeper.directory is not None
        # from now on nothing reads our stderr: send it to a file in the directory
        fd = os.open(keeper.directory / "keeper.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
        while os.read(0, 65536):
            pass  # the parent writes nothing more; EOF means it is gone or asked us to stop
    except (_Stop, OSError):
        pass
    finally:
        stopping = True
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        if keeper is not None:
            keeper.stop()
    return 0
