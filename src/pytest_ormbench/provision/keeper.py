"""A throwaway database server that lives exactly as long as the run: what every server engine shares.

Why a keeper process: the server must go away with the run however the run ends (normal exit, Ctrl-C,
SIGTERM, or SIGKILL of the parent). :func:`start_keeper` therefore never runs the server as its own
child. It starts a keeper (``python -m pytest_ormbench.provision.<engine>``, in its own session,
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

import atexit
import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Mapping
from urllib.parse import urlsplit, urlunsplit

from pytest_ormbench.backends.server import ServerInfo

__all__ = ["ManagedServer", "ServerInfo", "ServerProcess", "ServerUnavailable", "keeper_main", "start_keeper"]

#: sun_path is 108 bytes; a socket sits in <tmp>/ormbench-xx-XXXXXXXX/sock/, so that must stay well under it
MAX_SOCKET_PATH = 100
_SRC_ROOT = str(Path(__file__).resolve().parents[2])


def _one_line(text: str) -> str:
    """Collapse a message (drivers' errors span lines) into one line."""
    return " ".join(str(text).split())


class ServerUnavailable(Exception):
    """Why there is no server, as one line that can be shown without a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(_one_line(message))


def redact(url: str) -> str:
    """The URL without its password (in the authority or in a password= query parameter)."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            auth, _, hostport = netloc.rpartition("@")
            if ":" in auth:
                auth = auth.split(":", 1)[0] + ":***"
            netloc = f"{auth}@{hostport}"
        query = re.sub(r"(^|&)(password=)[^&]*", r"\1\2***", parts.query)
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def scrub(message: str, url: str) -> str:
    """A driver message without the URL's password, should the driver echo it."""
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    return message.replace(password, "***") if password else message


def check_settings(settings: Mapping[str, str] | None, engine: str, reserved: frozenset[str]) -> dict[str, str]:
    """The caller's server settings as strings, refused (one line) when they cannot go into a config file safely."""
    out: dict[str, str] = {}
    for key, value in dict(settings or {}).items():
        key, value = str(key), str(value)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", key):
            raise ServerUnavailable(f"invalid {engine} setting name {key!r}")
        if key.lower().replace("-", "_") in reserved:
            raise ServerUnavailable(f"the {engine} setting {key} is set by pytest-ormbench and cannot be changed")
        if any(c in value for c in "\n\r\0"):
            raise ServerUnavailable(f"invalid value for {engine} setting {key}: {value!r}")
        out[key] = value
    return out


# ---------------------------------------------------------------------------------------------------------------
# the parent side


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
            message = str(exc) if isinstance(exc, ServerUnavailable) else _one_line(
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
