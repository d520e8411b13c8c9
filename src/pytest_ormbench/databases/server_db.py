"""What every server database behind the seam shares: where an arm's database is, and how a worker finds the server.

The parent starts a server for the run (or takes one by URL) and hands its :class:`~.keeper.ServerInfo`
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Sequence

from ..record import format_rtt
from .base import Database


class ServerNotConfigured(RuntimeError):
    """A worker asked for a server database without a server handed to it (a bug in the parent, or a bad manual run)."""


@dataclass(frozen=True)
class ServerLocation:
    """Where an arm's database lives on a server: what ``Arm.open`` receives instead of a file path."""

    dbname: str
    server: Any  # keeper.ServerInfo (typed loosely: this module must import without any driver)
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
            from .keeper import ServerInfo

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
    def location(self, directory: Path, stem: str) -> ServerLocation:  # type: ignore[override]
        run = hashlib.sha1(str(Path(directory).parent).encode()).hexdigest()[:8]
        kind = "t" if Path(directory).name == "templates" else "w"
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
