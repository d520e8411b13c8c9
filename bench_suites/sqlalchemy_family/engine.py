"""The SQLAlchemy family's engine set-up, shared by the sync and async arms: one connection, ever (the
SQLite recipe on SQLite; the default transactions on a server), and the drivers of the server databases."""

from __future__ import annotations

from typing import Any

import sqlalchemy
from sqlalchemy import event

from pytest_ormbench.arms.sql import apply_pragmas
from pytest_ormbench.workload.spec import Settings

#: the SQLAlchemy driver of each server database, sync and async
SERVER_DIALECTS: dict[tuple[str, bool], str] = {
    ("postgresql", False): "postgresql+psycopg", ("postgresql", True): "postgresql+asyncpg",
    ("mysql", False): "mysql+mysqldb", ("mysql", True): "mysql+asyncmy",
}
#: the driver module each of those loads (recorded with its version)
SERVER_DRIVER_MODULES: dict[tuple[str, bool], str] = {
    ("postgresql", False): "psycopg", ("postgresql", True): "asyncpg",
    ("mysql", False): "MySQLdb", ("mysql", True): "asyncmy",
}


#: what the engine URL adds per server database: on MariaDB the charset made explicit
URL_QUERIES: dict[str, str] = {"postgresql": "", "mysql": "?charset=utf8mb4"}


def server_url(path: Any, is_async: bool) -> str:
    """The engine URL of a server location, with the driver this family documents for it."""
    return path.url(SERVER_DIALECTS[(path.db, is_async)]) + URL_QUERIES[path.db]


# --------------------------------------------------------------------------
# Engine set-up (shared by sync and async)
# --------------------------------------------------------------------------

class OneConnection:
    """Listeners for an engine that must only ever hold one connection (SQLite, or a server).

    On SQLite it also applies the pragmas and SQLAlchemy's SQLite transaction recipe; on a server
    (``server=True``) it only guards: the driver's and SQLAlchemy's default transaction handling stay.
    """

    def __init__(self, settings: Settings, server: bool = False) -> None:
        self.settings = settings
        self.server = server
        #: the pool's DBAPI connection (sqlite3, SA's aiosqlite adapter, psycopg, SA's asyncpg adapter)
        self.dbapi: Any = None

    def install(self, sync_engine: sqlalchemy.Engine) -> None:
        event.listen(sync_engine, "connect", self.on_connect)
        if not self.server:
            event.listen(sync_engine, "begin", self.on_begin)

    def on_connect(self, dbapi_connection: Any, _record: Any) -> None:
        if self.dbapi is not None:
            raise RuntimeError("a second database connection was opened; the arm must hold exactly one")
        if not self.server:
            # the documented recipe: the driver's legacy BEGIN handling off, BEGIN from on_begin
            dbapi_connection.isolation_level = None
            apply_pragmas(dbapi_connection, self.settings)
        self.dbapi = dbapi_connection

    @staticmethod
    def on_begin(conn: sqlalchemy.Connection) -> None:
        conn.exec_driver_sql("BEGIN")


#: one connection on a server: the engine's default queue pool (QueuePool, AsyncAdaptedQueuePool), held to one
SERVER_POOL: dict[str, Any] = {"pool_size": 1, "max_overflow": 0}


def _driver_version(module: str) -> str:
    """``"psycopg 3.3.9"``: a server driver module and its version (describe() runs un-opened)."""
    import importlib
    import importlib.metadata

    try:
        mod = importlib.import_module(module)
    except ImportError:
        return f"{module} (not installed)"
    version = getattr(mod, "__version__", None)
    if version is None:
        try:
            version = importlib.metadata.version({"MySQLdb": "mysqlclient"}.get(module, module))
        except importlib.metadata.PackageNotFoundError:
            version = "?"
    return f"{module} {version}"
