"""What every SQL arm builds on: the bases, the per-database strategy, pragmas, tables, chunking.

An arm over SQL subclasses :class:`SqliteArm` (sync: sqlite3 in the arm's own thread, or a DB-API
connection to a server) or :class:`AiosqliteArm` (async: a sqlite3 connection living in aiosqlite's
worker thread, or an async driver's connection to a server), declares its tables with
:meth:`SqliteArm.tables` (one line: :func:`tables_for`) and hands the harness its live connection
(:meth:`SqliteArm.raw_connection`, :meth:`AiosqliteArm.aiosqlite_connection`).

Per database, an arm writes one method: ``open_sqlite(path)``, ``open_postgresql(location)``,
``open_mysql(location)``; the base's ``open()`` calls the one of the database it is given (or raises
:class:`NotOnThisDatabase`). Whatever else differs per database the arm decides there (and keeps on the
instance), or asks ``self.dialect`` (a :class:`Dialect`: the database's name, identifier quoting,
parameter placeholders, URLs), never comparing database names. The rest (durability read-back,
exact restore, snapshot through a separate connection) is the dialect's, done here once.

The requested settings come as pragmas in the shape each ORM takes them:
:func:`pragma_pairs` (name, value) for ORMs that take pragmas as options, :func:`pragma_statements`
for an init command, :func:`apply_pragmas` on a DB-API connection in a connect hook,
:func:`pragma_connection_class` for ORMs that pass ``sqlite3.connect`` keyword arguments through.
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncContextManager, Iterator, Sequence, TypeVar

from pytest_ormbench.arms.helpers import slices
from pytest_ormbench.arms.contract import Arm
from pytest_ormbench.workload.spec import ModelSpec, Settings, Snapshot
from pytest_ormbench.backends.sqlite import (SqlTables, apply_pragmas, backup_into, expected_pragmas,
    file_change_counter, open_handles, pragma_pairs, pragma_statements, read_pragmas, read_snapshot)

from pytest_ormbench.backends import AXIS, NotOnThisDatabase
from pytest_ormbench.arms.server import (is_server, server_restore, server_settings, server_snapshot,
    settings_from_rows, settings_sql)

T = TypeVar("T")

#: the link table's columns every arm but Django uses: ``from_id`` -> ``to_id``
LINK_FROM, LINK_TO = "from_id", "to_id"


# -- tables ---------------------------------------------------------------------------------------

def tables_for(model: ModelSpec, main: str, link: str | None = None,
               link_from: str = LINK_FROM, link_to: str = LINK_TO) -> SqlTables:
    """Where ``model`` lives: the ``main`` table and, for Test 2 only, its link table.

    The link table defaults to ``<main>_links`` with columns ``from_id``, ``to_id``.
    """
    if not model.relations:
        return SqlTables(main)
    return SqlTables(main, link or f"{main}_links", link_from, link_to)


# -- pragmas ----------------------------------------------------------------------------------------

def pragma_connection_class(settings: Settings) -> type[sqlite3.Connection]:
    """A ``sqlite3.Connection`` subclass that applies the pragmas when it opens.

    For ORMs that hand their keyword arguments to ``sqlite3.connect`` (pass it as ``factory``)
    and open connections the arm cannot reach with a hook.
    """

    class PragmaConnection(sqlite3.Connection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            apply_pragmas(self, settings)

    return PragmaConnection


# -- SQLite's bound-variable limit ------------------------------------------------------------------

def variable_limit(conn: sqlite3.Connection | None = None) -> int:
    """``SQLITE_LIMIT_VARIABLE_NUMBER`` of a live connection (32766 by default since SQLite 3.32).

    Without a connection: the limit a new connection of this process's SQLite library gets
    (for arms that hold no connection, or before they open one).
    """
    if conn is not None:
        return conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    probe = sqlite3.connect(":memory:")
    try:
        return probe.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    finally:
        probe.close()


def rows_per_statement(conn_or_limit: sqlite3.Connection | int, columns: int) -> int:
    """The most rows one multi-row statement with ``columns`` bound values per row can carry (at least 1).

    ``conn_or_limit``: the live sqlite3 connection (its limit is read), or the limit already read.
    """
    limit = conn_or_limit if isinstance(conn_or_limit, int) else variable_limit(conn_or_limit)
    return max(1, limit // columns)


def chunked(rows: Sequence[T], columns: int, conn_or_limit: sqlite3.Connection | int) -> Iterator[Sequence[T]]:
    """``rows`` in slices that each fit one statement within SQLite's bound-variable limit."""
    return slices(rows, rows_per_statement(conn_or_limit, columns))


async def in_aiosqlite_thread(aconn: Any, fn: Any, *args: Any) -> Any:
    """Run ``fn(sqlite3_connection, *args)`` in the thread that owns an aiosqlite connection.

    For pragma read-back and restore on an async arm's one live connection. aiosqlite has no
    public way to run a callable on its connection, so this uses its ``_execute``/``_conn``.
    """
    return await aconn._execute(fn, aconn._conn, *args)


# -- dialects: what differs between the databases an SQL arm runs on --------------------------------

#: a parameter placeholder per style: ``qmark`` (sqlite3), ``format`` (psycopg, psycopg2, mysqlclient, PyMySQL,
#: asyncmy, aiomysql), ``dollar`` (asyncpg); ``n`` is the parameter's number, from 1
_PLACEHOLDERS = {"qmark": lambda n: "?", "format": lambda n: "%s", "dollar": lambda n: f"${n}"}


@dataclass(frozen=True)
class Dialect:
    """One database an SQL arm runs on, as the arm sees it (``SqliteArm.dialect``).

    A strategy object: an arm asks it instead of comparing database names, and the bases let it do their
    per-database work (durability read-back, restore, snapshot: :class:`SqliteDialect`, :class:`ServerDialect`).
    """

    #: the database axis value (``sqlite``, ``postgresql``, ``mysql``); the arm's method for it is ``open_<name>``
    name: str
    #: the character that quotes an identifier (MariaDB's default sql_mode has no ANSI_QUOTES: a backtick)
    quote_char: str = '"'
    #: the placeholder style of the database's usual DB-API drivers (an arm on another driver names its own)
    paramstyle: str = "qmark"
    #: MySQL or MariaDB: one SQL dialect, one family of drivers
    mysql_like: bool = False

    #: a server the harness reaches over the network (restore and read-back on its own connection)
    server = False

    @property
    def opener(self) -> str:
        """The arm's method that opens a database of this kind."""
        return f"open_{self.name}"

    def quote(self, identifier: str) -> str:
        """``identifier`` quoted for this database."""
        q = self.quote_char
        return f"{q}{identifier}{q}"

    def placeholders(self, n: int, paramstyle: str | None = None) -> str:
        """``n`` parameter placeholders, comma-separated (``?, ?``; ``%s, %s``; ``$1, $2``)."""
        mark = _PLACEHOLDERS[paramstyle or self.paramstyle]
        return ", ".join(mark(i) for i in range(1, n + 1))

    def url(self, location: Any, scheme: str) -> str:
        """An engine URL with the driver's ``scheme`` (``sqlite+aiosqlite``, ``postgresql+psycopg``)."""
        raise NotImplementedError

    # -- the bases' per-database work (the arm's live connection; the harness's own read-back) -----------------
    def read_settings(self, arm: "SqliteArm") -> dict[str, str]:
        """The durability the sync arm's live connection runs under."""
        raise NotImplementedError

    async def read_settings_async(self, arm: "AiosqliteArm") -> dict[str, str]:
        """The durability the async arm's live connection runs under."""
        raise NotImplementedError

    def restore(self, arm: "SqliteArm", template: Any) -> None:
        """The sync arm's database made exactly ``template`` again, its connection kept."""
        raise NotImplementedError

    async def restore_async(self, arm: "AiosqliteArm", template: Any) -> None:
        """The async arm's database made exactly ``template`` again, its connection kept."""
        raise NotImplementedError

    def snapshot(self, arm: "SqliteArm") -> Snapshot:
        """Every row and link, read past the ORM."""
        raise NotImplementedError


@dataclass(frozen=True)
class SqliteDialect(Dialect):
    """A SQLite file: pragmas read on the arm's connection, restore by the backup API into it, read-back on a
    separate read-only connection."""

    def url(self, location: Any, scheme: str) -> str:
        return f"{scheme}:///{location}"

    def read_settings(self, arm: "SqliteArm") -> dict[str, str]:
        return read_pragmas(arm.raw_connection())

    async def read_settings_async(self, arm: "AiosqliteArm") -> dict[str, str]:
        return await arm.in_connection_thread(read_pragmas)

    def restore(self, arm: "SqliteArm", template: Any) -> None:
        backup_into(arm.raw_connection(), template)

    async def restore_async(self, arm: "AiosqliteArm", template: Any) -> None:
        await arm.in_connection_thread(backup_into, template)

    def snapshot(self, arm: "SqliteArm") -> Snapshot:
        return read_snapshot(arm.path, arm.tables(), arm.model.field_names)


@dataclass(frozen=True)
class ServerDialect(Dialect):
    """A server database (a ``ServerLocation``): settings read on the arm's connection, restore and read-back on
    the harness's own (``arms.server``)."""

    server = True

    def url(self, location: Any, scheme: str) -> str:
        return location.url(scheme)

    def read_settings(self, arm: "SqliteArm") -> dict[str, str]:
        return arm.server_settings()

    async def read_settings_async(self, arm: "AiosqliteArm") -> dict[str, str]:
        return settings_from_rows(arm.path, await arm.server_rows(settings_sql(arm.path)))

    def restore(self, arm: "SqliteArm", template: Any) -> None:
        server_restore(arm.path)

    async def restore_async(self, arm: "AiosqliteArm", template: Any) -> None:
        server_restore(arm.path)

    def snapshot(self, arm: "SqliteArm") -> Snapshot:
        return server_snapshot(arm.path, arm.tables(), arm.model.field_names)


SQLITE = SqliteDialect("sqlite")
POSTGRESQL = ServerDialect("postgresql", paramstyle="format")
MYSQL = ServerDialect("mysql", quote_char="`", paramstyle="format", mysql_like=True)
#: the database axis value -> its dialect
DIALECTS: dict[str, Dialect] = {d.name: d for d in (SQLITE, POSTGRESQL, MYSQL)}
assert tuple(DIALECTS) == AXIS, "a dialect for every value of the database axis (workload.cells.DATABASE_AXIS)"


def dialect_of(location: Any) -> Dialect:
    """The dialect of what an arm's ``open()`` got: a server database's location, else a SQLite file (or nothing
    yet: an unopened arm answers as on SQLite, as its ``describe()`` does)."""
    return DIALECTS[location.db] if is_server(location) else SQLITE


# -- the bases ------------------------------------------------------------------------------------

class SqliteArm(Arm):
    """Base for sync SQL arms: on SQLite through the standard sqlite3 module, or on a server.

    The arm writes ``open_sqlite(path)`` and, for each server database it lists in ``databases``,
    ``open_postgresql(location)`` / ``open_mysql(location)`` (a
    :class:`~pytest_ormbench.backends.ServerLocation`); :meth:`open` sets ``self.path`` and calls the one of the
    database it is given. ``raw_connection()`` returns the live sqlite3 connection, or the DB-API connection to
    the server; the dialect (``self.dialect``) reads the durability back, restores and snapshots.
    """

    path: Any = None

    @property
    def dialect(self) -> Dialect:
        """The database the arm was opened on (SQLite's before ``open``)."""
        return dialect_of(self.path)

    @property
    def on_server(self) -> bool:
        """Whether the arm was opened on a server database (a ``ServerLocation``) rather than a file."""
        return self.dialect.server

    def open(self, path: Any) -> Any:
        """Open ``path`` with the arm's method for its database (``open_sqlite``, ``open_postgresql``, ...)."""
        self.path = path
        dialect = self.dialect
        opener = getattr(self, dialect.opener, None)
        if opener is None:
            raise NotOnThisDatabase(f"{type(self).__name__} has no {dialect.opener}(): "
                                    f"it does not run on {dialect.name}")
        return opener(path)

    def tables(self) -> SqlTables:
        """The tables this arm created for ``self.model`` (usually ``tables_for(self.model, main)``)."""
        raise NotImplementedError

    def raw_connection(self) -> sqlite3.Connection:
        """The arm's one live sqlite3 connection (opening it if it is lazy)."""
        raise NotImplementedError

    def server_settings(self) -> dict[str, str]:
        """On a server: the durability the arm's live connection runs under (read on ``raw_connection()``)."""
        return server_settings(self.raw_connection(), self.path)

    def pragmas(self) -> dict[str, str]:
        return self.dialect.read_settings(self)

    def restore(self, template: Path) -> Any:
        self.before_restore()
        self.dialect.restore(self, template)
        self.after_restore()

    def before_restore(self) -> Any:
        """End any open transaction or session before the pages are replaced."""

    def after_restore(self) -> Any:
        """Drop ORM-level state (identity maps) that described the old rows."""

    def snapshot(self) -> Snapshot:
        assert self.path is not None, "open() first"
        return self.dialect.snapshot(self)

    def describe(self) -> dict[str, Any]:
        return {"sqlite_version": sqlite3.sqlite_version}


async def _maybe_await(value: Any) -> Any:
    return await value if asyncio.iscoroutine(value) else value


class AiosqliteArm(SqliteArm):
    """Base for async arms whose one sqlite3 connection lives in an aiosqlite worker thread.

    The arm says how to reach its live ``aiosqlite.Connection`` (:meth:`aiosqlite_connection`)
    and, as for :class:`SqliteArm`, what to end before a restore and drop after it
    (``before_restore``/``after_restore``, plain methods or coroutines). Pragma read-back and
    exact restore run in the connection's own thread (:meth:`in_connection_thread`), so the
    connection, and every cache the ORM keeps above it, survives.
    """

    driver = "aiosqlite"
    is_async = True

    def aiosqlite_connection(self) -> AsyncContextManager[Any]:
        """An async context manager yielding the arm's live ``aiosqlite.Connection``.

        Write it as an ``@contextlib.asynccontextmanager`` method: check the connection out of a pool,
        or open a transaction first, where the ORM hands out its connection only so; yield it as it
        is where the arm holds it (never ``async with`` the aiosqlite connection itself: that closes it).
        """
        raise NotImplementedError

    async def in_connection_thread(self, fn: Any, *args: Any) -> Any:
        """``fn(sqlite3_connection, *args)`` in the thread that owns the arm's live connection."""
        async with self.aiosqlite_connection() as aconn:
            return await in_aiosqlite_thread(aconn, fn, *args)

    def raw_connection(self) -> sqlite3.Connection:
        raise TypeError(f"{type(self).__name__}: the sqlite3 connection lives in aiosqlite's thread; "
                        "use in_connection_thread()")

    async def server_rows(self, sql: str) -> list[tuple[Any, ...]]:
        """On a server: ``sql``'s rows through the arm's own live connection (the ORM's raw-SQL API)."""
        raise NotImplementedError(f"{type(self).__name__} runs on a server but does not implement server_rows()")

    async def pragmas(self) -> dict[str, str]:  # type: ignore[override]
        return await self.dialect.read_settings_async(self)

    async def restore(self, template: Path) -> None:  # type: ignore[override]
        await _maybe_await(self.before_restore())
        await self.dialect.restore_async(self, template)
        await _maybe_await(self.after_restore())


__all__ = [
    "DIALECTS", "LINK_FROM", "LINK_TO", "MYSQL", "POSTGRESQL", "SQLITE", "AiosqliteArm", "Dialect",
    "NotOnThisDatabase", "ServerDialect", "SqlTables", "SqliteArm", "SqliteDialect", "apply_pragmas",
    "backup_into", "chunked", "dialect_of", "expected_pragmas", "file_change_counter", "in_aiosqlite_thread", "open_handles",
    "pragma_connection_class", "pragma_pairs", "pragma_statements", "read_pragmas", "read_snapshot",
    "rows_per_statement", "tables_for", "variable_limit",
]
