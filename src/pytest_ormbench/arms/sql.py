"""Helpers every SQLite arm shares: pragmas, tables, chunking, exact restore, independent read-back.

An arm over SQLite subclasses :class:`SqliteArm` (sqlite3 in the arm's own thread) or
:class:`AiosqliteArm` (a sqlite3 connection living in aiosqlite's worker thread), declares its
tables with :meth:`SqliteArm.tables` (one line: :func:`tables_for`) and hands the harness its
live connection (:meth:`SqliteArm.raw_connection`, :meth:`AiosqliteArm.aiosqlite_connection`).
The rest (pragma read-back, restore by the backup API, snapshot through a separate connection)
is done here once.

The requested settings come as pragmas in the shape each ORM takes them:
:func:`pragma_pairs` (name, value) for ORMs that take pragmas as options, :func:`pragma_statements`
for an init command, :func:`apply_pragmas` on a DB-API connection in a connect hook,
:func:`pragma_connection_class` for ORMs that pass ``sqlite3.connect`` keyword arguments through.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any, AsyncContextManager, Iterator, Sequence, TypeVar

from pytest_ormbench.arms.helpers import slices
from pytest_ormbench.arms.contract import Arm
from pytest_ormbench.workload.spec import ModelSpec, Settings, Snapshot
from pytest_ormbench.backends.sqlite import (SqlTables, apply_pragmas, backup_into, expected_pragmas,
    file_change_counter, open_handles, pragma_pairs, pragma_statements, read_pragmas, read_snapshot)

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


# -- the bases ------------------------------------------------------------------------------------

async def in_aiosqlite_thread(aconn: Any, fn: Any, *args: Any) -> Any:
    """Run ``fn(sqlite3_connection, *args)`` in the thread that owns an aiosqlite connection.

    For pragma read-back and restore on an async arm's one live connection. aiosqlite has no
    public way to run a callable on its connection, so this uses its ``_execute``/``_conn``.
    """
    return await aconn._execute(fn, aconn._conn, *args)


class SqliteArm(Arm):
    """Base for arms that store in SQLite through the standard sqlite3 module, or on a server.

    An arm that also runs on a server (PostgreSQL, MariaDB) lists it in ``databases``; its ``open()`` then receives a
    :class:`~pytest_ormbench.backends.ServerLocation` (``self.on_server`` is true), ``raw_connection()``
    returns its DB-API connection to the server, and this base reads the durability back, restores and
    snapshots through the server helpers instead of SQLite's (``server_support``).
    """

    path: Any = None

    @property
    def on_server(self) -> bool:
        """Whether the arm was opened on a server database (a ``ServerLocation``) rather than a file."""
        return is_server(self.path)

    def tables(self) -> SqlTables:
        """The tables this arm created for ``self.model`` (usually ``tables_for(self.model, main)``)."""
        raise NotImplementedError

    def raw_connection(self) -> sqlite3.Connection:
        """The arm's one live sqlite3 connection (opening it if it is lazy)."""
        raise NotImplementedError

    def pragmas(self) -> dict[str, str]:
        if self.on_server:
            return server_settings(self.raw_connection(), self.path)
        return read_pragmas(self.raw_connection())

    def restore(self, template: Path) -> Any:
        self.before_restore()
        if self.on_server:
            server_restore(self.path)
        else:
            backup_into(self.raw_connection(), template)
        self.after_restore()

    def before_restore(self) -> Any:
        """End any open transaction or session before the pages are replaced."""

    def after_restore(self) -> Any:
        """Drop ORM-level state (identity maps) that described the old rows."""

    def snapshot(self) -> Snapshot:
        assert self.path is not None, "open() first"
        if self.on_server:
            return server_snapshot(self.path, self.tables(), self.model.field_names)
        return read_snapshot(self.path, self.tables(), self.model.field_names)

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
        if self.on_server:
            return settings_from_rows(self.path, await self.server_rows(settings_sql(self.path)))
        return await self.in_connection_thread(read_pragmas)

    async def restore(self, template: Path) -> None:  # type: ignore[override]
        await _maybe_await(self.before_restore())
        if self.on_server:
            server_restore(self.path)
        else:
            await self.in_connection_thread(backup_into, template)
        await _maybe_await(self.after_restore())


__all__ = [
    "LINK_FROM", "LINK_TO", "AiosqliteArm", "SqlTables", "SqliteArm", "apply_pragmas",
    "backup_into", "chunked", "expected_pragmas", "file_change_counter", "in_aiosqlite_thread", "open_handles",
    "pragma_connection_class", "pragma_pairs", "pragma_statements", "read_pragmas", "read_snapshot",
    "rows_per_statement", "tables_for", "variable_limit",
]
