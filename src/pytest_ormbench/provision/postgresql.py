"""A throwaway PostgreSQL server that lives exactly as long as the run, or an existing one given by URL.

The keeper process that makes the server die with the run however the run ends is shared with every
server engine (:mod:`.keeper`); here is what is PostgreSQL's: finding the binaries, ``initdb``, the
settings, starting ``postgres`` and waiting until it accepts connections, and reading back what it runs with.

PostgreSQL refuses to run as root, so when we are root, initdb and postgres run as ``nobody``.

This module imports no ORM and no pytest; psycopg 3 is imported only inside the functions that connect.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from pytest_ormbench.provision.messages import ServerUnavailable, check_settings, one_line, redact, scrub
from pytest_ormbench.provision.managed import ManagedServer, start_keeper
from pytest_ormbench.provision.keeper import MAX_SOCKET_PATH, ServerProcess, free_port, keeper_main
from pytest_ormbench.backends.server import ServerInfo

__all__ = ["MAX_SOCKET_PATH", "ManagedServer", "ServerInfo", "ServerUnavailable", "connect_url", "find_binaries",
           "start_server"]

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
_INSTALL_HINT = ("install the Debian/Ubuntu package `postgresql` (apt-get install postgresql) "
                 "or give a server with --ormbench-postgresql-url=postgresql://user:password@host:port/dbname")
_MODULE = "pytest_ormbench.provision.postgresql"
_redact = redact
_scrub = scrub


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
    return check_settings(settings, "PostgreSQL", RESERVED)


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
    return start_keeper(_MODULE, "PostgreSQL", {"bindir": str(bindir), "settings": extra}, timeout)


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
        out.append(one_line(ln[m.start():] if m else ln))
    return " | ".join(out[-lines:])


class _PgServer(ServerProcess):
    """initdb, then postgres on a free loopback port with its socket in sock/; ready when postmaster.pid says so."""

    engine = "PostgreSQL"
    prefix = "ormbench-pg-"
    socket_name = ".s.PGSQL.65535"
    run_as = "nobody"
    #: immediate shutdown, then SIGKILL after 10 s. Not a fast shutdown: its checkpoint fsyncs a directory that is
    #: removed a moment later, and behind another process's disk writes that took over 10 s (a CI run).
    stop_signals = ((signal.SIGQUIT, 10.0), (signal.SIGKILL, 5.0))
    #: immediate shutdown when the keeper dies
    death_signal = signal.SIGQUIT

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.bindir = Path(config["bindir"])

    def launch(self, data: Path, sock: Path) -> ServerInfo:
        self._initdb(data)
        self._write_conf(data, sock)
        port = free_port()
        try:
            self._start_postgres(data, port)
        except ServerUnavailable as exc:
            if "could not bind" not in str(exc) and "already in use" not in str(exc):
                raise
            port = free_port()  # someone took the port between our probe and postgres' bind: once more
            self._start_postgres(data, port)
        version, settings = self._prepare(port, sock)
        return ServerInfo(host="127.0.0.1", port=port, user=MANAGED_USER, password=None, socket_dir=str(sock),
                          version=version, managed=True, maintenance_db="postgres", settings=settings)

    client_env_prefixes = ("PG",)

    def _initdb(self, data: Path) -> None:
        self.run_tool("initdb", [str(self.bindir / "initdb"), "-D", str(data), "-U", MANAGED_USER, "--auth=trust",
                                 "-E", "UTF8", "--no-locale", "--no-sync"])

    def _write_conf(self, data: Path, sock: Path) -> None:
        merged = {**BASE_SETTINGS, "unix_socket_directories": str(sock), **self.settings}
        lines = ["", "# pytest-ormbench: a throwaway server (later lines win)"]
        lines += [f"{k} = {_conf_value(v)}" for k, v in merged.items()]
        with open(data / "postgresql.conf", "a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")

    def _start_postgres(self, data: Path, port: int) -> None:
        assert self.directory is not None
        log_path = self.directory / f"postgres-{port}.log"
        postmaster = self.spawn([str(self.bindir / "postgres"), "-D", str(data), "-p", str(port)], log_path)
        pidfile = data / "postmaster.pid"

        def ready() -> bool:
            try:
                lines = pidfile.read_text().splitlines()
            except OSError:
                return False
            # line 8 of postmaster.pid is the postmaster's status; "ready" once it accepts connections
            return len(lines) >= 8 and lines[0].strip() == str(postmaster.pid) and lines[7].strip() == "ready"

        self.wait_ready(postmaster, ready, "postgres", lambda: _log_tail(log_path))

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
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=self.remaining())
        if out.returncode != 0:
            raise ServerUnavailable(f"preparing the new PostgreSQL server failed: {out.stderr.strip()}")
        rows = dict(ln.split("\t", 1) for ln in out.stdout.splitlines() if "\t" in ln)
        version = rows.pop("server_version", "")
        return version, rows


if __name__ == "__main__":
    sys.exit(keeper_main(_PgServer, "PostgreSQL"))
