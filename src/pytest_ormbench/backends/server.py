"""What every server database behind the seam shares: where an arm's database is, and how a worker finds the server.

The parent starts a server for the run (or takes one by URL) and hands its :class:`ServerInfo`
to every worker in an environment variable, with the latency proxies of the sweep in a second one. A
worker's backend (:class:`ServerDatabase`) reads them, names every database after the run (so a URL
server keeps nothing of ours after ``drop_run``), and keeps the harness's own connections, one per
database, for restores and read-backs. The engine modules (``postgresql``, ``mysql``) add the SQL.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence
from urllib.parse import quote

from pytest_ormbench.workload.cells import format_rtt
from pytest_ormbench.backends.base import Database


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
    #: the database the harness's administrative connection uses (PostgreSQL: ``postgres``; MariaDB: none)
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


def _conninfo_value(value: str) -> str:
    if value and not re.search(r"[\s'\\]", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class ServerNotConfigured(RuntimeError):
    """A worker asked for a server database without a server handed to it (a bug in the parent, or a bad manual run)."""


@dataclass(frozen=True)
class ServerLocation:
    """Where an arm's database lives on a server: what ``Arm.open`` receives instead of a file path."""

    dbname: str
    server: Any  # ServerInfo
    #: the database axis value (``postgresql``, ``mysql``)
    db: str = "postgresql"

    @property
    def host(self) -> str:
        return self.server.host

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def user(self) -> str:
        return self.server.user

    @property
    def password(self) -> str | None:
        return self.server.password

    def conninfo(self) -> str:
        """libpq's ``key=value`` string (psycopg, psycopg2)."""
        return self.server.conninfo(self.dbname)

    def url(self, scheme: str | None = None) -> str:
        """A URL with the driver's scheme, e.g. ``postgresql+psycopg`` (SQLAlchemy) or ``mysql`` (Tortoise)."""
        return self.server.url(self.dbname, scheme or self.db)

    def connect_args(self) -> dict[str, Any]:
        """host, port, user, password and the database name as DB-API drivers of MySQL take them."""
        return {"host": self.host, "port": self.port, "user": self.user, "password": self.password or "",
                "database": self.dbname}

    @property
    def name(self) -> str:
        return self.dbname

    def __str__(self) -> str:
        return f"{self.db}://{self.host}:{self.port}/{self.dbname}"


class ServerStatements:
    """Statements of the process's current work database, read from the server's statistics around the op.

    The counter's source (``StatementCounter.add_source``): the calls per statement text before and after.
    """

    def __init__(self, database: "ServerDatabase") -> None:
        self.database = database
        self._before: dict[str, int] | None = None

    def begin(self) -> None:
        # settled too: the statements just before the op (the untimed load) must not land inside its window
        self._before = self.database.settled_statement_calls()

    def end(self) -> list[tuple[str, int]]:
        after = self.database.settled_statement_calls()
        before = self._before or {}
        return [(q, n - before.get(q, 0)) for q, n in after.items() if n > before.get(q, 0)]


class ServerDatabase(Database):
    """A backend on one server: the server from the parent, databases named after the run, cached connections."""

    #: the environment variable that carries the server's ServerInfo (JSON) from the parent to its workers
    server_env: ClassVar[str]
    #: the run's latency proxies in front of the server (JSON: RTT in ms as ids show it -> {host, port})
    arm_address_env: ClassVar[str]
    #: the engine's name in messages
    engine: ClassVar[str]
    #: one query that reads the durability settings on any connection (its rows go to settings_from_rows)
    settings_sql: ClassVar[str]

    @staticmethod
    def settings_from_rows(rows: Sequence[Sequence[Any]]) -> dict[str, str]:
        """``settings_sql``'s rows as the durability dict the harness compares."""
        raise NotImplementedError

    @staticmethod
    def read_settings(conn: Any) -> dict[str, str]:
        """The durability a live DB-API connection runs under (leaving no transaction open)."""
        raise NotImplementedError

    def __init__(self) -> None:
        self._info: Any = None
        self._admin: Any = None
        self._conns: dict[str, Any] = {}
        #: the work database this process measures in now (statements are counted there)
        self.current: ServerLocation | None = None

    #: the latency sweep's round-trip time of the cell this process runs now (None: the arm connects directly)
    rtt_ms: float | None = None

    # -- the server -----------------------------------------------------------------------------------
    @property
    def info(self) -> Any:
        if self._info is None:
            raw = os.environ.get(self.server_env)
            if not raw:
                raise ServerNotConfigured(f"no {self.engine} server was handed to this process "
                                          f"({self.server_env} is unset)")

            self._info = ServerInfo.from_json(json.loads(raw))
        return self._info

    @property
    def arm_server(self) -> Any:
        """The server as the arm reaches it: through the latency proxy of the cell's RTT, else the server itself."""
        if self.rtt_ms is None:
            return self.info
        proxies = json.loads(os.environ.get(self.arm_address_env) or "{}")
        address = proxies.get(format_rtt(self.rtt_ms))
        if address is None:
            raise ServerNotConfigured(f"no latency proxy for {format_rtt(self.rtt_ms)} ms was handed to this process")
        return dataclasses.replace(self.info, host=str(address["host"]), port=int(address["port"]))

    # -- the harness's own connections ------------------------------------------------------------------
    def _connect(self, dbname: str) -> Any:
        """A new harness connection (autocommit, marked as the harness's) to ``dbname``."""
        raise NotImplementedError

    @staticmethod
    def _closed(conn: Any) -> bool:
        return bool(conn.closed)

    def _admin_conn(self) -> Any:
        if self._admin is None or self._closed(self._admin):
            self._admin = self._connect(self.info.maintenance_db)
        return self._admin

    def _conn(self, location: ServerLocation) -> Any:
        """The harness's own connection to a database (kept: restore and read-back run every round)."""
        conn = self._conns.get(location.dbname)
        if conn is None or self._closed(conn):
            conn = self._conns[location.dbname] = self._connect(location.dbname)
        return conn

    def _forget(self, dbname: str) -> None:
        conn = self._conns.pop(dbname, None)
        if conn is not None and not self._closed(conn):
            conn.close()

    def close_connections(self) -> None:
        """Close every harness connection (a worker between requests holds none)."""
        for dbname in list(self._conns):
            self._forget(dbname)
        if self._admin is not None and not self._closed(self._admin):
            self._admin.close()
        self._admin = None

    # -- statements -------------------------------------------------------------------------------------
    def statement_calls(self) -> dict[str, int]:
        """Calls per statement text in the current work database, from the server's statistics."""
        raise NotImplementedError

    def settled_statement_calls(self) -> dict[str, int]:
        """:meth:`statement_calls` once the op's last statement is in them (an engine whose statistics lag
        its answers waits here)."""
        return self.statement_calls()

    # -- locations --------------------------------------------------------------------------------------
    def location(self, directory: Path, stem: str, *,  # type: ignore[override]
                 template: bool = False) -> ServerLocation:
        run = hashlib.sha1(str(Path(directory).parent).encode()).hexdigest()[:8]
        kind = "t" if template else "w"
        digest = hashlib.sha1(stem.encode()).hexdigest()[:16]
        # a starting state is built over the direct connection; only the measured rounds go through the proxy
        return ServerLocation(f"ormbench_{run}_{kind}{digest}", self.arm_server if kind == "w" else self.info,
                              self.name)

    @staticmethod
    def run_prefix(tmp: Path) -> str:
        """The name prefix of every database a run (its scheduler's temporary directory) creates."""
        return f"ormbench_{hashlib.sha1(str(tmp).encode()).hexdigest()[:8]}_"

    def drop_run(self, prefix: str) -> int:
        """Drop every database whose name starts with ``prefix`` (the run's own); returns how many."""
        raise NotImplementedError

    def describe(self) -> dict[str, str]:
        info = self.info
        out = {f"{self.name}_version": str(info.version),
               "server": "started for the run" if info.managed else "given by URL"}
        if info.settings:  # what the server was read to run with at start (durability is also read per round)
            out["server_settings"] = ", ".join(f"{k}={v}" for k, v in sorted(info.settings.items()))
        if self.rtt_ms is not None:
            out["latency_proxy_rtt_ms"] = format_rtt(self.rtt_ms)
        return out
