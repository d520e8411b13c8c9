"""A throwaway PostgreSQL server that lives exactly as long as the run, or an existing one given by URL.

Why a keeper process: the server must go away with the run however the run ends (normal exit, Ctrl-C,
SIGTERM, or SIGKILL of the parent). :func:`start_server` therefore never runs ``postgres`` as its own
child. It starts a keeper (``python -m pytest_ormbench.databases.pg_server``, in its own session, so a
terminal Ctrl-C reaches only the parent) whose stdin is a pipe from the parent. The keeper runs initdb,
starts ``postgres`` as its child (with a parent-death signal, so postgres dies with the keeper), reports
one JSON line on stdout and then blocks reading stdin. The parent can only hold the pipe open by being
alive: when it exits, closes the pipe or is killed, the keeper reads EOF, stops postgres with a fast
shutdown and removes every directory it made.

PostgreSQL refuses to run as root, so when we are root, initdb and postgres run as ``nobody``.

This module imports no ORM and no pytest; psycopg 3 is imported only inside the functions that connect.
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
from typing import IO, Any, Mapping
from urllib.parse import quote, urlsplit, urlunsplit

__all__ = ["ManagedServer", "ServerInfo", "ServerUnavailable", "connect_url", "find_binaries", "start_server"]

#: the superuser role initdb makes in a managed server
MANAGED_USER = "ormbench"
#: settings read back and recorded: what decides durability, and autovacuum (which the managed server turns off)
READ_BACK = ("synchronous_commit", "fsync", "full_page_writes", "wal_sync_method", "autovacuum")
#: settings the keeper owns: changing them would break what ServerInfo says about the server
RESERVED = frozenset({"port", "listen_addresses", "unix_socket_directories", "shared_preload_libraries"})
#: the settings a managed server gets before the caller's (the caller's come later in postgresql.conf and win)
BASE_SETTINGS: dict[str, str] = {
    "listen_addresses": "127.0.0.1",
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track_utility": "on",
    # workers of many arms each keep the harness's connections beside the arm's
    "max_connections": "300",
    # every cold round creates a database: keep the statement table from evicting entries mid-count
    "pg_stat_statements.max": "20000",
    # the benchmark restores its tables every round: autovacuum would run at random moments inside measurements
    "autovacuum": "off",
    # checkpoints only when the harness asks (after each copy and restore, untimed): none lands inside an op
    "checkpoint_timeout": "1h",
    "max_wal_size": "8GB",
}
#: sun_path is 108 bytes; the socket is <sock>/.s.PGSQL.<port>, so the directory must be well under it
MAX_SOCKET_PATH = 100
_UNPRIVILEGED = "nobody"
_INSTALL_HINT = ("install the Debian/Ubuntu package `postgresql` (apt-get install postgresql) "
                 "or give a server with --ormbench-postgresql-url=postgresql://user:password@host:port/dbname")


class ServerUnavailable(Exception):
    """Why there is no server, as one line that can be shown without a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(_one_line(message))


@dataclass(frozen=True)
class ServerInfo:
    """What the plugin needs to reach a server and to record which one it measured."""

    host: str
    port: int
    user: str
    password: str | None
    socket_dir: str | None
    version: str
    managed: bool
    maintenance_db: str = "postgres"
    settings: dict[str, str] = field(default_factory=dict)

    def conninfo(self, dbname: str) -> str:
        """A libpq key=value string over TCP (never the socket: clients measure what a network client pays)."""
        parts = {"host": self.host, "port": str(self.port), "user": self.user}
        if self.password is not None:
            parts["password"] = self.password
        parts["dbname"] = dbname
        return " ".join(f"{k}={_conninfo_value(v)}" for k, v in parts.items())

    def url(self, dbname: str, scheme: str = "postgresql") -> str:
        """A URL for ORMs that take one, e.g. ``postgresql+psycopg://ormbench@127.0.0.1:5433/db``."""
        auth = quote(self.user, safe="")
        if self.password is not None:
            auth += ":" + quote(self.password, safe="")
        if self.host.startswith("/"):  # a unix socket directory cannot go in the authority
            return (f"{scheme}://{auth}@/{quote(dbname, safe='')}"
                    f"?host={quote(self.host, safe='')}&port={self.port}")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{auth}@{host}:{self.port}/{quote(dbname, safe='')}"

    def to_json(self) -> dict[str, Any]:
        """A plain dict, for the keeper's report and for the run's record."""
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ServerInfo":
        return cls(host=str(d["host"]), port=int(d["port"]), user=str(d["user"]),
                   password=None if d.get("password") is None else str(d["password"]),
                   socket_dir=None if d.get("socket_dir") is None else str(d["socket_dir"]),
                   version=str(d["version"]), managed=bool(d["managed"]),
                   maintenance_db=str(d.get("maintenance_db", "postgres")),
                   settings={str(k): str(v) for k, v in dict(d.get("settings") or {}).items()})


# ---------------------------------------------------------------------------------------------------------------
# small helpers


def _one_line(text: str) -> str:
    """Collapse a message (libpq's errors span lines) into one line."""
    return " ".join(str(text).split())


def _conninfo_value(value: str) -> str:
    if value and not re.search(r"[\s'\\]", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _redact(url: str) -> str:
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


def _has_binaries(directory: Path) -> bool:
    return all(os.access(directory / name, os.X_OK) and (directory / name).is_file() for name in ("initdb", "postgres"))


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", path.parent.name)) or (0,)


def find_binaries(environ: Mapping[str, str] | None = None) -> Path | None:
    """The directory holding initdb and postgres, or None.

    Looked for in this order: ``ORMBENCH_PG_BINDIR`` (when set it is the only place looked at: a wrong
    explicit choice must not silently fall back to another server version), ``pg_config --bindir`` on PATH,
    the newest ``/usr/lib/postgresql/*/bin`` (Debian keeps the server off PATH), then ``initdb`` on PATH.
    ``environ`` defaults to ``os.environ`` read at call time.
    """
    env = os.environ if environ is None else environ
    explicit = env.get("ORMBENCH_PG_BINDIR")
    if explicit:
        path = Path(explicit).expanduser()
        return path if _has_binaries(path) else None
    search_path = env.get("PATH", "")
    pg_config = shutil.which("pg_config", path=search_path) if search_path else None
    if pg_config:
        try:
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10,
                                 env={**env, "LC_ALL": "C"})
            if out.returncode == 0 and out.stdout.strip() and _has_binaries(Path(out.stdout.strip())):
                return Path(out.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True):
        if _has_binaries(candidate):
            return candidate
    initdb = shutil.which("initdb", path=search_path) if search_path else None
    if initdb:
        for directory in (Path(initdb).parent, Path(initdb).resolve().parent):
            if _has_binaries(directory):
                return directory
    return None


def _missing_binaries_message(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    where = (f"ORMBENCH_PG_BINDIR={env['ORMBENCH_PG_BINDIR']} holds no initdb and postgres"
             if env.get("ORMBENCH_PG_BINDIR") else
             "no PostgreSQL server binaries found (ORMBENCH_PG_BINDIR, pg_config, /usr/lib/postgresql/*/bin, PATH)")
    return f"{where}: {_INSTALL_HINT}"


def _check_settings(settings: Mapping[str, str] | None) -> dict[str, str]:
    """The caller's settings as strings, refused (one line) when they cannot go into postgresql.conf safely."""
    out: dict[str, str] = {}
    for key, value in dict(settings or {}).items():
        key, value = str(key), str(value)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", key):
            raise ServerUnavailable(f"invalid PostgreSQL setting name {key!r}")
        if key.lower() in RESERVED:
            raise ServerUnavailable(f"the PostgreSQL setting {key} is set by pytest-ormbench and cannot be changed")
        if any(c in value for c in "\n\r\0"):
            raise ServerUnavailable(f"invalid value for PostgreSQL setting {key}: {value!r}")
        out[key] = value
    return out


# ---------------------------------------------------------------------------------------------------------------
# the parent side


_LIVE: set["ManagedServer"] = set()
_LIVE_LOCK = threading.Lock()
_MODULE = "pytest_ormbench.databases.pg_server"
_SRC_ROOT = str(Path(__file__).resolve().parents[2])


class ManagedServer:
    """A server started by :func:`start_server`; :meth:`stop` (or leaving the ``with`` block) ends it.

    Holding the keeper's stdin open is what keeps the server alive; see the module docstring.
    """

    def __init__(self, proc: subprocess.Popen[bytes], info: ServerInfo, directory: str, postmaster_pid: int) -> None:
        self.info = info
        #: the temporary directory holding data/ and sock/ (removed by stop)
        self.directory = directory
        self.postmaster_pid = postmaster_pid
        self.keeper_pid = proc.pid
        self._proc = proc
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._stopped = False
        with _LIVE_LOCK:
            _LIVE.add(self)

    @property
    def running(self) -> bool:
        return not self._stopped and self._proc.poll() is None

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server and remove its directories; idempotent.

        Closing the keeper's stdin asks it to stop postgres and clean up; if it does not within ``timeout``,
        its process group (keeper, and postgres with it) is killed and the directory removed here.
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
        # the keeper removes everything; this is for a keeper that was killed (postgres then died of its
        # parent-death signal, but nobody removed the directory)
        _kill_postmaster(Path(self.directory) / "data")
        _remove_tree(Path(self.directory))

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


def start_server(settings: Mapping[str, str] | None = None, timeout: float = 60.0) -> ManagedServer:
    """Start a throwaway server: initdb and postgres, run by a keeper process that outlives nothing.

    ``settings`` are extra postgresql.conf settings for the whole server (e.g. ``{"fsync": "off"}``);
    without them the server keeps its durable defaults. Any failure raises :class:`ServerUnavailable`
    with one line (missing binaries, initdb failed, postgres failed to start with the end of its log).
    """
    extra = _check_settings(settings)
    bindir = find_binaries()
    if bindir is None:
        raise ServerUnavailable(_missing_binaries_message())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_SRC_ROOT, env.get("PYTHONPATH")) if p)
    config = {"bindir": str(bindir), "settings": extra, "timeout": float(timeout)}
    try:
        proc = subprocess.Popen([sys.executable, "-m", _MODULE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, env=env, close_fds=True)
    except OSError as exc:
        raise ServerUnavailable(f"cannot start the PostgreSQL keeper process: {exc}") from None
    try:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(config).encode() + b"\n")
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
            raise ServerUnavailable(f"the PostgreSQL server did not start within {timeout:g} s")
        _finish_failed(proc)
        if reply is not None:
            raise ServerUnavailable(str(reply.get("error") or "the PostgreSQL server did not start"))
        last = [ln for ln in err.decode(errors="replace").splitlines() if ln.strip()]
        raise ServerUnavailable(f"the PostgreSQL keeper process exited ({proc.returncode}) before reporting"
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
        _killpg(proc.pid)  # the keeper and, in its process group, initdb or postgres
        proc.wait()
    _close(proc.stdout)
    _close(proc.stderr)


def connect_url(url: str, timeout: float = 5.0) -> ServerInfo:
    """An existing server given by URL: checked reachable, with its version and durability settings read.

    The URL's database (default ``postgres``) is where the check connects and becomes ``maintenance_db``.
    Errors name the URL without its password.
    """
    shown = _redact(url)
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise ServerUnavailable(f"{shown}: connecting to a PostgreSQL URL needs psycopg 3 "
                                "(pip install 'psycopg[binary]')") from None
    if not re.match(r"postgres(ql)?://", url):
        raise ServerUnavailable(f"{shown}: not a PostgreSQL URL (postgresql://user:password@host:port/dbname)")
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise ServerUnavailable(f"{shown}: invalid URL: {_scrub(str(exc), url)}") from None
    dbname = str(params.get("dbname") or "postgres")
    params["dbname"] = dbname
    params["connect_timeout"] = str(max(2, int(round(timeout))))
    try:
        with psycopg.connect(**params, autocommit=True) as conn:
            version, settings = _read_server(conn)
            info = conn.info
            host, port, user = info.host, int(info.port), info.user
            password = info.password or None
    except psycopg.Error as exc:
        raise ServerUnavailable(f"cannot connect to {shown}: {_scrub(str(exc), url)}") from None
    return ServerInfo(host=host, port=port, user=user, password=password, socket_dir=None, version=version,
                      managed=False, maintenance_db=dbname, settings=settings)


def _scrub(message: str, url: str) -> str:
    """A driver message without the URL's password, should the driver echo it."""
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    return message.replace(password, "***") if password else message


def _read_server(conn: Any) -> tuple[str, dict[str, str]]:
    """server_version and the settings in :data:`READ_BACK`, as SHOW reports them."""
    with conn.cursor() as cur:
        cur.execute("SHOW server_version")
        version = str(cur.fetchone()[0])
        cur.execute("SELECT name, current_setting(name) FROM unnest(%s::text[]) AS name", (list(READ_BACK),))
        settings = {str(k): str(v) for k, v in cur.fetchall()}
    return version, settings


# ---------------------------------------------------------------------------------------------------------------
# the keeper process


class _Stop(Exception):
    """Raised by the keeper's signal handler: unwind to the cleanup."""


def _tempdir_base(uid: int | None, gid: int | None) -> str:
    """A base for the temporary directory: TMPDIR if its socket path stays short and the server user can
    traverse it, else /tmp."""
    candidates = [os.environ.get("TMPDIR") or "", "/tmp"]
    for base in candidates:
        if not base or not os.path.isdir(base):
            continue
        # <base>/ormbench-pg-XXXXXXXX/sock/.s.PGSQL.65535
        if len(os.path.abspath(base)) + len("/ormbench-pg-12345678/sock/.s.PGSQL.65535") >= MAX_SOCKET_PATH:
            continue
        if uid is not None and not _traversable(Path(base).resolve(), uid, gid):
            continue
        return base
    raise ServerUnavailable("no short temporary directory the PostgreSQL server user can reach "
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


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _conf_value(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _log_tail(path: Path, lines: int = 3) -> str:
    """The last lines of a server log, without the timestamp prefix, as one line."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    out = []
    for ln in text.splitlines():
        ln = ln.strip()
        if not ln:
            continue
        m = re.search(r"\b(PANIC|FATAL|ERROR|WARNING|LOG|DETAIL|HINT|CONTEXT|STATEMENT):", ln)
        out.append(_one_line(ln[m.start():] if m else ln))
    return " | ".join(out[-lines:])


def _remove_tree(path: Path) -> None:
    for _ in range(20):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.05)  # a backend that is still exiting may write a file as we remove


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_postmaster(data: Path) -> None:
    """SIGKILL the postmaster recorded in ``data``/postmaster.pid if it still runs on that data directory."""
    try:
        lines = (data / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return
    if os.path.isdir("/proc"):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return  # not running
        if str(data) not in cmdline:
            return  # the pid is someone else's now
    elif not _pid_alive(pid):
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    for _ in range(100):
        if not _pid_alive(pid):
            return
        time.sleep(0.02)


class _Keeper:
    """The keeper's state: the temporary directory, the postmaster, and how to take them down."""

    def __init__(self, bindir: Path, settings: Mapping[str, str], timeout: float) -> None:
        self.bindir = bindir
        self.settings = dict(settings)
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout
        self.directory: Path | None = None
        self.postmaster: subprocess.Popen[bytes] | None = None
        self.uid: int | None = None
        self.gid: int | None = None
        if os.geteuid() == 0:
            import pwd
            try:
                pw = pwd.getpwnam(_UNPRIVILEGED)
            except KeyError:
                raise ServerUnavailable(f"running as root, and there is no user {_UNPRIVILEGED!r} "
                                        "to run PostgreSQL as") from None
            self.uid, self.gid = pw.pw_uid, pw.pw_gid

    # -- start

    def start(self) -> tuple[ServerInfo, int]:
        self.directory = Path(tempfile.mkdtemp(prefix="ormbench-pg-", dir=_tempdir_base(self.uid, self.gid)))
        data, sock = self.directory / "data", self.directory / "sock"
        data.mkdir(mode=0o700)
        sock.mkdir(mode=0o700)
        if self.uid is not None:
            os.chmod(self.directory, 0o711)  # nobody may pass through, not list
            for d in (data, sock):
                os.chown(d, self.uid, self.gid if self.gid is not None else -1)
        self._initdb(data)
        self._write_conf(data, sock)
        port = _free_port()
        try:
            self._start_postgres(data, port)
        except ServerUnavailable as exc:
            if "could not bind" not in str(exc) and "already in use" not in str(exc):
                raise
            port = _free_port()  # someone took the port between our probe and postgres' bind: once more
            self._start_postgres(data, port)
        assert self.postmaster is not None
        version, settings = self._prepare(port, sock)
        info = ServerInfo(host="127.0.0.1", port=port, user=MANAGED_USER, password=None, socket_dir=str(sock),
                          version=version, managed=True, maintenance_db="postgres", settings=settings)
        return info, self.postmaster.pid

    def _child_args(self) -> dict[str, Any]:
        assert self.directory is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C", TZ=os.environ.get("TZ", "UTC"))
        args: dict[str, Any] = {"cwd": str(self.directory), "env": env, "stdin": subprocess.DEVNULL,
                                "close_fds": True}
        if self.uid is not None:
            env["HOME"] = str(self.directory)
            args.update(user=self.uid, group=self.gid, extra_groups=[])
        return args

    def _remaining(self) -> float:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise ServerUnavailable(f"the PostgreSQL server did not start within {self.timeout:g} s")
        return remaining

    def _initdb(self, data: Path) -> None:
        cmd = [str(self.bindir / "initdb"), "-D", str(data), "-U", MANAGED_USER, "--auth=trust", "-E", "UTF8",
               "--no-locale", "--no-sync"]
        try:
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=self._remaining(),
                                 **self._child_args())
        except subprocess.TimeoutExpired:
            raise ServerUnavailable(f"initdb did not finish within {self.timeout:g} s") from None
        except OSError as exc:
            raise ServerUnavailable(f"cannot run initdb: {exc}") from None
        if out.returncode != 0:
            lines = [ln.strip() for ln in out.stdout.decode(errors="replace").splitlines() if ln.strip()]
            raise ServerUnavailable(f"initdb failed (exit {out.returncode}): " + " | ".join(lines[-3:]))

    def _write_conf(self, data: Path, sock: Path) -> None:
        merged = {**BASE_SETTINGS, "unix_socket_directories": str(sock), **self.settings}
        lines = ["", "# pytest-ormbench: a throwaway server (later lines win)"]
        lines += [f"{k} = {_conf_value(v)}" for k, v in merged.items()]
        with open(data / "postgresql.conf", "a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")

    def _start_postgres(self, data: Path, port: int) -> None:
        assert self.directory is not None
        log_path = self.directory / f"postgres-{port}.log"
        keeper = os.getpid()
        preexec = _parent_death_signal(keeper)
        with open(log_path, "ab") as log:
            try:
                self.postmaster = subprocess.Popen([str(self.bindir / "postgres"), "-D", str(data), "-p", str(port)],
                                                   stdout=log, stderr=subprocess.STDOUT, preexec_fn=preexec,
                                                   **self._child_args())
            except (OSError, subprocess.SubprocessError) as exc:
                raise ServerUnavailable(f"cannot run postgres: {exc}") from None
        pidfile = data / "postmaster.pid"
        while True:
            rc = self.postmaster.poll()
            if rc is not None:
                self.postmaster = None
                tail = _log_tail(log_path)
                raise ServerUnavailable(f"postgres failed to start (exit {rc})" + (f": {tail}" if tail else ""))
            try:
                lines = pidfile.read_text().splitlines()
            except OSError:
                lines = []
            # line 8 of postmaster.pid is the postmaster's status; "ready" once it accepts connections
            if len(lines) >= 8 and lines[0].strip() == str(self.postmaster.pid) and lines[7].strip() == "ready":
                return
            if time.monotonic() > self.deadline:
                tail = _log_tail(log_path)
                raise ServerUnavailable(f"postgres did not accept connections within {self.timeout:g} s"
                                        + (f": {tail}" if tail else ""))
            time.sleep(0.02)

    def _prepare(self, port: int, sock: Path) -> tuple[str, dict[str, str]]:
        """Create pg_stat_statements in the maintenance database and read back what the server runs with."""
        try:
            import psycopg
        except ImportError:
            return self._prepare_with_psql(sock, port)
        conninfo = f"host=127.0.0.1 port={port} user={MANAGED_USER} dbname=postgres connect_timeout=5"
        while True:
            try:
                with psycopg.connect(conninfo, autocommit=True) as conn:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                    return _read_server(conn)
            except psycopg.OperationalError as exc:
                if time.monotonic() > self.deadline:
                    raise ServerUnavailable(f"cannot connect to the new PostgreSQL server: {exc}") from None
                time.sleep(0.05)
            except psycopg.Error as exc:
                raise ServerUnavailable(f"preparing the new PostgreSQL server failed: {exc}") from None

    def _prepare_with_psql(self, sock: Path, port: int) -> tuple[str, dict[str, str]]:
        """Without psycopg in this interpreter, psql (which ships beside the server) does the same."""
        psql = self.bindir / "psql"
        if not os.access(psql, os.X_OK):
            raise ServerUnavailable("reading the new PostgreSQL server needs psycopg 3 "
                                    "(pip install 'psycopg[binary]') or psql")
        names = ",".join(f"'{n}'" for n in READ_BACK)
        sql = ("CREATE EXTENSION IF NOT EXISTS pg_stat_statements;"
               f"SELECT 'server_version', current_setting('server_version') UNION ALL "
               f"SELECT n, current_setting(n) FROM unnest(ARRAY[{names}]) AS n;")
        cmd = [str(psql), "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
               "-p", str(port), "-U", MANAGED_USER, "-d", "postgres", "-c", sql]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=self._remaining())
        if out.returncode != 0:
            raise ServerUnavailable(f"preparing the new PostgreSQL server failed: {out.stderr.strip()}")
        rows = dict(ln.split("\t", 1) for ln in out.stdout.splitlines() if "\t" in ln)
        version = rows.pop("server_version", "")
        return version, rows

    # -- stop

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then immediate (SIGQUIT) after 10 s, then SIGKILL; then remove everything."""
        pm = self.postmaster
        if pm is not None and pm.poll() is None:
            for sig, wait in ((signal.SIGINT, 10.0), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
                try:
                    pm.send_signal(sig)
                    pm.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
                except ProcessLookupError:
                    break
        if self.directory is not None:
            _kill_postmaster(self.directory / "data")
            _remove_tree(self.directory)


def _parent_death_signal(keeper_pid: int) -> Any:
    """A preexec_fn that makes the child receive SIGQUIT (immediate shutdown) when the keeper dies.

    subprocess applies user=/group= before preexec_fn runs, which matters: Linux clears the parent-death
    signal whenever the effective uid or gid changes. None off Linux (no prctl).
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    PR_SET_PDEATHSIG = 1
    sigquit = int(signal.SIGQUIT)

    def preexec() -> None:
        if prctl(PR_SET_PDEATHSIG, sigquit, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != keeper_pid:  # the keeper died before the signal was armed
            os._exit(1)

    return preexec


def _single_line_error(exc: BaseException) -> str:
    if isinstance(exc, ServerUnavailable):
        return str(exc)
    return _one_line(f"the PostgreSQL keeper failed: {type(exc).__name__}: {exc}")


def main() -> int:
    """The keeper: read a config line, start the server, report one JSON line, then live until stdin closes."""
    stopping = False

    def on_signal(signum: int, frame: Any) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            raise _Stop(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    keeper: _Keeper | None = None
    try:
        try:
            line = sys.stdin.buffer.readline()
            if not line:
                return 0  # the parent went away before asking for anything
            config = json.loads(line)
            keeper = _Keeper(Path(config["bindir"]), config.get("settings") or {}, float(config.get("timeout", 60)))
            info, pid = keeper.start()
            reply: dict[str, Any] = {"ok": True, "info": info.to_json(), "dir": str(keeper.directory), "pid": pid}
        except _Stop:
            return 0
        except Exception as exc:  # noqa: BLE001 - every failure becomes the one-line report
            reply = {"ok": False, "error": _single_line_error(exc)}
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


if __name__ == "__main__":
    sys.exit(main())
