"""A throwaway MariaDB server that lives exactly as long as the run, or an existing MariaDB/MySQL given by URL.

The keeper process (:mod:`.keeper`) makes the server die with the run however the run ends. Here is what
is MariaDB's: finding ``mariadbd`` and ``mariadb-install-db``, the option file, waiting for the server's
greeting on its loopback port, and reading back what it runs with (through the ``mariadb`` client that
ships with the server, so the keeper needs no Python driver).

mariadbd refuses root unless told otherwise, and switching users itself would clear the parent-death
signal, so when we are root the keeper runs it as ``mysql`` (Debian's package creates that user), else
``nobody``.

This module imports no ORM and no pytest; PyMySQL is imported only inside :func:`connect_url`.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import unquote, urlsplit

from pytest_ormbench.provision.messages import ServerUnavailable, check_settings, one_line, redact, scrub
from pytest_ormbench.provision.managed import ManagedServer, start_keeper
from pytest_ormbench.provision.keeper import ServerProcess, free_port, keeper_main
from pytest_ormbench.backends.server import ServerInfo

__all__ = ["DURABILITY", "ManagedServer", "ServerInfo", "ServerUnavailable", "connect_url", "find_binaries",
           "start_server"]

#: the account the managed server's clients use (mariadb-install-db makes root@127.0.0.1 without a password)
MANAGED_USER = "root"
#: what decides durability: every arm's live connection must report the same
DURABILITY = ("innodb_flush_log_at_trx_commit", "sync_binlog", "log_bin", "innodb_doublewrite")
#: settings read back and recorded: durability, and what else shapes the measurements
READ_BACK = DURABILITY + ("innodb_flush_method", "innodb_stats_auto_recalc", "performance_schema",
                          "character_set_server", "collation_server", "query_cache_type", "innodb_buffer_pool_size")
#: the oldest MariaDB whose information_schema, performance_schema and RETURNING the harness and the arms use
MIN_VERSION = (10, 5)
#: settings the keeper owns: changing them would break what ServerInfo says about the server
RESERVED = frozenset({"port", "socket", "bind_address", "datadir", "pid_file", "log_error", "user", "skip_networking",
                      "tmpdir", "skip_log_bin", "log_bin_basename"})
#: the option file's [mariadbd] settings before the caller's (the caller's come later and win)
BASE_SETTINGS: dict[str, str] = {
    "bind-address": "127.0.0.1",
    "skip-name-resolve": "ON",
    # the durable settings: every commit flushed, binlog off as MariaDB ships it (sync_binlog=1 should a
    # caller turn it on), doublewrite on
    "innodb_flush_log_at_trx_commit": "1",
    "sync_binlog": "1",
    "innodb_doublewrite": "ON",
    # statements counted per schema from the digest summary; commits from InnoDB's counter
    "performance_schema": "ON",
    "performance_schema_digests_size": "20000",
    "innodb_monitor_enable": "trx_rw_commits",
    # the benchmark restores its tables every round: no statistics recalculated at random moments inside
    # measurements (the harness runs ANALYZE TABLE after every copy and restore instead)
    "innodb_stats_auto_recalc": "OFF",
    "character-set-server": "utf8mb4",
    "collation-server": "utf8mb4_general_ci",
    # workers of many arms each keep the harness's connections beside the arm's
    "max_connections": "300",
}
_INSTALL_HINT = ("install the Debian/Ubuntu package `mariadb-server` (apt-get install mariadb-server) "
                 "or give a server with --ormbench-mysql-url=mysql://user:password@host:port/dbname")
_MODULE = "pytest_ormbench.provision.mysql"
_BOOLEAN = frozenset({"log_bin", "innodb_doublewrite", "innodb_stats_auto_recalc", "performance_schema"})
_SOCKET = "mariadbd.sock"


def _tool(env: Mapping[str, str], names: tuple[str, ...], extra: tuple[str, ...]) -> Path | None:
    explicit = env.get("ORMBENCH_MYSQL_BINDIR")
    dirs = [explicit] if explicit else [*env.get("PATH", "").split(os.pathsep), *extra]
    for d in dirs:
        for name in names:
            path = Path(d).expanduser() / name if d else None
            if path is not None and path.is_file() and os.access(path, os.X_OK):
                return path
    return None


def find_binaries(environ: Mapping[str, str] | None = None) -> tuple[Path, Path, Path] | None:
    """``mariadbd``, ``mariadb-install-db`` and the ``mariadb`` client, or None.

    ``ORMBENCH_MYSQL_BINDIR``, when set, is the only place looked at; else PATH, then /usr/sbin and
    /usr/bin (Debian keeps mariadbd in /usr/sbin, which root's PATH may lack).
    """
    env = os.environ if environ is None else environ
    extra = ("/usr/sbin", "/usr/bin", "/usr/local/mysql/bin")
    server = _tool(env, ("mariadbd", "mysqld"), extra)
    install = _tool(env, ("mariadb-install-db", "mysql_install_db"), extra)
    client = _tool(env, ("mariadb", "mysql"), extra)
    if server is None or install is None or client is None:
        return None
    return server, install, client


def _missing_binaries_message(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    where = (f"ORMBENCH_MYSQL_BINDIR={env['ORMBENCH_MYSQL_BINDIR']} holds no mariadbd, mariadb-install-db "
             "and mariadb" if env.get("ORMBENCH_MYSQL_BINDIR") else
             "no MariaDB server binaries found (ORMBENCH_MYSQL_BINDIR, PATH, /usr/sbin)")
    return f"{where}: {_INSTALL_HINT}"


def start_server(settings: Mapping[str, str] | None = None, timeout: float = 60.0) -> ManagedServer:
    """Start a throwaway MariaDB: mariadb-install-db and mariadbd, run by a keeper process that outlives nothing.

    ``settings`` are extra ``[mariadbd]`` options for the whole server (e.g. ``{"innodb_flush_log_at_trx_commit":
    "2"}``); without them the server runs with the durable settings above. Any failure raises
    :class:`ServerUnavailable` with one line.
    """
    extra = check_settings(settings, "MariaDB", RESERVED)
    found = find_binaries()
    if found is None:
        raise ServerUnavailable(_missing_binaries_message())
    server, install, client = found
    config = {"server": str(server), "install": str(install), "client": str(client), "settings": extra}
    return start_keeper(_MODULE, "MariaDB", config, timeout)


def parse_url(url: str) -> dict[str, Any]:
    """``mysql://user:password@host:port/dbname`` (also ``mariadb://``) as connect arguments; one line if it is not."""
    shown = redact(url)
    if not re.match(r"(mysql|mariadb)://", url):
        raise ServerUnavailable(f"{shown}: not a MySQL/MariaDB URL (mysql://user:password@host:port/dbname)")
    try:
        parts = urlsplit(url)
        port = parts.port or 3306
    except ValueError as exc:
        raise ServerUnavailable(f"{shown}: invalid URL: {exc}") from None
    return {"host": parts.hostname or "127.0.0.1", "port": int(port), "user": unquote(parts.username or "root"),
            "password": None if parts.password is None else unquote(parts.password),
            "database": unquote(parts.path.lstrip("/")) or ""}


def connect_url(url: str, timeout: float = 5.0) -> ServerInfo:
    """An existing server given by URL: checked reachable, with its version and settings read (PyMySQL)."""
    shown = redact(url)
    args = parse_url(url)
    try:
        import pymysql
    except ImportError:
        raise ServerUnavailable(f"{shown}: connecting to a MySQL URL needs PyMySQL (pip install pymysql)") from None
    try:
        conn = pymysql.connect(host=args["host"], port=args["port"], user=args["user"],
                               password=args["password"] or "", database=args["database"] or None,
                               connect_timeout=max(2, int(round(timeout))), autocommit=True)
    except pymysql.Error as exc:
        raise ServerUnavailable(f"cannot connect to {shown}: {scrub(str(exc), url)}") from None
    try:
        version, settings = read_server(conn)
        if "mariadb" not in version.lower():
            raise ServerUnavailable(f"{shown} is MySQL {version}: only MariaDB servers are supported (its "
                                    "information_schema and performance_schema differ), or let the plugin start one")
        numbers = tuple(int(x) for x in re.findall(r"\d+", version.split("-")[0])[:2])
        if numbers < MIN_VERSION:
            raise ServerUnavailable(f"{shown} is MariaDB {version}: the plugin needs "
                                    f"{'.'.join(map(str, MIN_VERSION))} or newer")
        _enable_commit_counter(conn, shown)
    except pymysql.Error as exc:
        raise ServerUnavailable(f"reading {shown} failed: {scrub(str(exc), url)}") from None
    finally:
        conn.close()
    return ServerInfo(host=args["host"], port=args["port"], user=args["user"], password=args["password"],
                      socket_dir=None, version=version, managed=False, maintenance_db=args["database"],
                      settings=settings)


def _enable_commit_counter(conn: Any, shown: str) -> None:
    """Commits are counted by InnoDB's trx_rw_commits: switch it on where it is off, or say why not."""
    import pymysql

    with conn.cursor() as cur:
        cur.execute("SELECT ENABLED FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rw_commits'")
        row = cur.fetchone()
        if row is not None and int(row[0]):
            return
        try:
            cur.execute("SET GLOBAL innodb_monitor_enable = 'trx_rw_commits'")
        except pymysql.Error as exc:
            raise ServerUnavailable(f"{shown}: commits are counted by InnoDB's trx_rw_commits counter, which is off "
                                    f"there and cannot be switched on ({exc.args[-1]}): start the server with "
                                    "innodb_monitor_enable=trx_rw_commits, or let the plugin start one") from None


def _settings_sql() -> str:
    return "SELECT VERSION()" + "".join(f", @@{name}" for name in READ_BACK)


def _normalize(names: tuple[str, ...], values: tuple[Any, ...]) -> dict[str, str]:
    out = {}
    for name, value in zip(names, values):
        text = str(value)
        out[name] = {"1": "ON", "0": "OFF"}.get(text, text.upper()) if name in _BOOLEAN else text
    return out


def read_server(conn: Any) -> tuple[str, dict[str, str]]:
    """The server's version and the settings in :data:`READ_BACK`, on a DB-API connection."""
    cur = conn.cursor()
    try:
        cur.execute(_settings_sql())
        row = tuple(cur.fetchone())
    finally:
        cur.close()
    return str(row[0]), _normalize(READ_BACK, row[1:])


# ---------------------------------------------------------------------------------------------------------------
# the keeper process


def _log_tail(path: Path, lines: int = 3) -> str:
    """The last error lines of the server's log, without timestamps, as one line."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    picked = [ln for ln in text.splitlines() if "[ERROR]" in ln] or [ln for ln in text.splitlines() if ln.strip()]
    out = [one_line(re.sub(r"^\S+ \S+ \d+ ", "", ln)) for ln in picked]
    return " | ".join(out[-lines:])


def _greets(port: int) -> bool | None:
    """True once the server sends its handshake on ``port``, False for an error packet, None for nothing yet."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
            data = s.recv(64)
    except OSError:
        return None
    if len(data) < 5:
        return None
    return data[4] != 0xFF  # protocol version 10 greets; 0xff is an error packet (e.g. still starting)


class _MariadbServer(ServerProcess):
    """mariadb-install-db, then mariadbd on a free loopback port; ready when it greets a client."""

    engine = "MariaDB"
    prefix = "ormbench-my-"
    socket_name = _SOCKET
    #: normal shutdown (SIGTERM), then SIGKILL after 10 s (the data is thrown away either way)
    stop_signals = ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0))
    death_signal = signal.SIGKILL

    def __init__(self, config: Mapping[str, Any]) -> None:
        if os.geteuid() == 0:
            import pwd
            try:
                pwd.getpwnam("mysql")
                self.run_as = "mysql"
            except KeyError:
                self.run_as = "nobody"
        super().__init__(config)
        self.server_bin = Path(config["server"])
        self.install_bin = Path(config["install"])
        self.client_bin = Path(config["client"])

    def _tmp(self) -> Path:
        """The server's own temporary directory (its on-disk temporary tables; TMPDIR of its programs), not the
        shared /tmp, nor a TMPDIR of the caller's that the server's user cannot write."""
        assert self.directory is not None
        tmp = self.directory / "tmp"
        if not tmp.exists():
            tmp.mkdir(mode=0o700)
            if self.uid is not None:
                os.chown(tmp, self.uid, self.gid if self.gid is not None else -1)
        return tmp

    client_env_prefixes = ("MYSQL", "MARIADB")

    def child_args(self) -> dict[str, Any]:
        args = super().child_args()
        args["env"]["TMPDIR"] = str(self._tmp())
        return args

    def launch(self, data: Path, sock: Path) -> ServerInfo:
        assert self.directory is not None
        self.run_tool("mariadb-install-db", [str(self.install_bin), "--no-defaults", f"--datadir={data}",
                                             "--auth-root-authentication-method=normal", "--skip-test-db"])
        port = free_port()
        try:
            self._start(data, sock, port)
        except ServerUnavailable as exc:
            if "already in use" not in str(exc) and "bind" not in str(exc).lower():
                raise
            port = free_port()  # someone took the port between our probe and the server's bind: once more
            self._start(data, sock, port)
        version, settings = self._read_back(sock)
        return ServerInfo(host="127.0.0.1", port=port, user=MANAGED_USER, password=None, socket_dir=str(sock),
                          version=version, managed=True, maintenance_db="", settings=settings)

    def _write_options(self, data: Path, sock: Path, port: int) -> Path:
        assert self.directory is not None
        tmp = self._tmp()
        merged = {**BASE_SETTINGS, "datadir": str(data), "socket": str(sock / _SOCKET), "port": str(port),
                  "tmpdir": str(tmp),
                  "pid-file": str(sock / "mariadbd.pid"), "log-error": str(data / "mariadbd.err"), **self.settings}
        lines = ["# pytest-ormbench: a throwaway server (later lines win)", "[mariadbd]"]
        for key, value in merged.items():
            if key in ("log_bin", "log-bin"):
                # log-bin takes the log's base name, not a switch: ON names one in the data directory
                lines.append(f"log-bin = {data / 'binlog'}" if value.upper() in ("ON", "1") else "skip-log-bin")
            else:
                lines.append(f"{key} = {value}")
        path = self.directory / f"my-{port}.cnf"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.chmod(path, 0o644)
        return path

    def _start(self, data: Path, sock: Path, port: int) -> None:
        assert self.directory is not None
        options = self._write_options(data, sock, port)
        server = self.spawn([str(self.server_bin), f"--defaults-file={options}"], self.directory / "mariadbd.out")
        log_path = data / "mariadbd.err"
        out_path = self.directory / "mariadbd.out"
        self.wait_ready(server, lambda: bool(_greets(port)), "mariadbd",
                        lambda: _log_tail(log_path) or _log_tail(out_path))

    def _read_back(self, sock: Path) -> tuple[str, dict[str, str]]:
        """The version and :data:`READ_BACK`, through the ``mariadb`` client over the socket."""
        cmd = [str(self.client_bin), "--no-defaults", "-S", str(sock / _SOCKET), "-u", MANAGED_USER, "-N", "-B",
               "-e", _settings_sql()]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=self.remaining(), **{
            k: v for k, v in self.child_args().items() if k in ("env", "cwd")})
        if out.returncode != 0:
            raise ServerUnavailable(f"reading the new MariaDB server failed: {one_line(out.stderr)}")
        values = out.stdout.rstrip("\n").split("\t")
        return values[0], _normalize(READ_BACK, tuple(values[1:]))


if __name__ == "__main__":
    sys.exit(keeper_main(_MariadbServer, "MariaDB"))
