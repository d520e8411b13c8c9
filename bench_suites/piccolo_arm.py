"""The Piccolo ORM arm (async: aiosqlite on SQLite, asyncpg on PostgreSQL).

Piccolo is configured in code only: one ``SQLiteEngine`` per opened database,
assigned to the model's Table classes through ``Table._meta.db``; nothing is
read from or written to a ``piccolo_conf.py``.

Connections. Piccolo's ``SQLiteEngine`` keeps no connection. Every
``engine.transaction()`` opens a new aiosqlite connection (a new worker thread
plus a sqlite3 connection) and closes it on exit, and every query run outside
a transaction does the same on its own. There is no public API for a
persistent SQLite connection (connection pools are Postgres-only). So the arm
holds no connection between ops, and every op except A runs inside one
``engine.transaction()``, which makes it use exactly one connection. The
pragmas reach every connection Piccolo opens through a ``sqlite3.Connection``
subclass passed as the ``factory`` connection kwarg (SQLiteEngine hands its
kwargs to ``sqlite3.connect``).

On PostgreSQL the engine is a ``PostgresEngine`` (asyncpg). Without a pool it too
opens a new connection for every query and every transaction; with one, every query
outside a transaction and every ``engine.transaction()`` checks a connection out of
the pool. So ``open_postgresql()`` starts Piccolo's connection pool with ``min_size=1,
max_size=1`` (``engine.start_connection_pool``, as Piccolo's docs advise for an app):
exactly one asyncpg connection, opened in ``open()`` and held until ``close()``. With
the connection held, reads need no transaction to share it and run outside one; writes
run in ``engine.transaction()`` as on SQLite. asyncpg's pool resets the connection
each time it is checked back in (``Connection.reset()``: one ``SELECT
pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;`` round trip), as for
every Piccolo user with a pool. The wide model's json column is ``JSONB`` there (the
type Piccolo recommends on PostgreSQL; SQLite keeps ``JSON``). The durability is read
back on the pool's connection through ``Table.raw`` (:meth:`PiccoloArm.server_rows`);
the harness restores in place on its own connection.
"""

from __future__ import annotations

import sqlite3
import types
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Mapping, Sequence

from piccolo.columns import (
    JSON,
    JSONB,
    M2M,
    BigInt,
    Column,
    DoublePrecision,
    ForeignKey,
    Integer,
    LazyTableReference,
    Numeric,
    SmallInt,
    Text,
    Timestamp,
    Varchar,
)
from piccolo.columns.base import OnDelete
from piccolo.engine.postgres import PostgresEngine
from piccolo.engine.sqlite import SQLiteEngine, TransactionType
from piccolo.table import Table

from pytest_ormbench.arms.helpers import assign
from pytest_ormbench.arms.contract import DECIMAL_DIGITS, DECIMAL_PLACES
from pytest_ormbench.workload.spec import MODELS, TEXT_MAX, Field, ModelSpec, Settings, Unsupported
from pytest_ormbench.arms.server import server_restore
from pytest_ormbench.arms.sql import (AiosqliteArm, SqlTables, backup_into, chunked, expected_pragmas,
    pragma_connection_class, tables_for, variable_limit)
from pytest_ormbench.arms.notes import load_notes

# --------------------------------------------------------------------------
# Tables (one set per model; the engine is attached in PiccoloArm.open)
# --------------------------------------------------------------------------

_WIDE_COLUMNS: dict[str, Callable[..., Column]] = {
    "float": DoublePrecision,
    "smallint": SmallInt,
    "int": Integer,
    "bigint": BigInt,
    "char": lambda **kw: Varchar(length=TEXT_MAX, **kw),
    "text": Text,
    "decimal": lambda **kw: Numeric(digits=(DECIMAL_DIGITS, DECIMAL_PLACES), **kw),
    "json": JSON,
}


#: on PostgreSQL, json is JSONB (binary jsonb; Piccolo's JSON would be the text json type)
_PG_WIDE_COLUMNS: dict[str, Callable[..., Column]] = {**_WIDE_COLUMNS, "json": JSONB}


def _wide_column(f: Field, columns: Mapping[str, Callable[..., Column]] = _WIDE_COLUMNS) -> Column:
    if f.has_default:
        return columns[f.kind](default=f.default)
    # Piccolo's numeric columns default to 0 even when null=True: ask for NULL.
    return columns[f.kind](null=True, default=None)


def _base_columns() -> dict[str, Column]:
    return {
        "timestamp": Timestamp(),
        "level": Integer(index=True),
        "text": Varchar(length=TEXT_MAX, index=True),
    }


def _table(class_name: str, tablename: str, columns: Mapping[str, Any]) -> type[Table]:
    cls = types.new_class(class_name, (Table,), {"tablename": tablename}, lambda ns: ns.update(columns))
    cls.__module__ = __name__
    return cls


JournalSimple = _table("JournalSimple", "journal_simple", _base_columns())

JournalFk = _table("JournalFk", "journal_fk", {
    **_base_columns(),
    "parent_id": ForeignKey("self", null=True, on_delete=OnDelete.set_null, index=True),
    # Piccolo's M2M column through the joining table below (directed: from_id -> to_id).
    "links": M2M(LazyTableReference("JournalFkLink", module_path=__name__)),
})

JournalFkLink = _table("JournalFkLink", "journal_fk_links", {
    "from_id": ForeignKey(JournalFk, null=False, on_delete=OnDelete.cascade, index=True),
    "to_id": ForeignKey(JournalFk, null=False, on_delete=OnDelete.cascade, index=True),
})

JournalWide = _table("JournalWide", "journal_wide", {
    **_base_columns(),
    **{f.name: _wide_column(f) for f in MODELS["wide"].wide_fields},
})

#: the same table on PostgreSQL, its json column JSONB
JournalWidePg = _table("JournalWidePg", "journal_wide", {
    **_base_columns(),
    **{f.name: _wide_column(f, _PG_WIDE_COLUMNS) for f in MODELS["wide"].wide_fields},
})

_TABLES: dict[str, tuple[type[Table], type[Table] | None]] = {
    "simple": (JournalSimple, None),
    "fk": (JournalFk, JournalFkLink),
    "wide": (JournalWide, None),
}
#: where PostgreSQL's tables differ from SQLite's
_PG_TABLES: dict[str, tuple[type[Table], type[Table] | None]] = {**_TABLES, "wide": (JournalWidePg, None)}

#: asyncpg's limit on the arguments of one statement (the SQLite branch reads SQLite's variable limit instead)
PG_MAX_ARGS = 32767


NOTES = load_notes("pytest_ormbench.suites", "piccolo")


class PiccoloArm(AiosqliteArm):
    name = "piccolo"
    label = "Piccolo"
    packages = ("piccolo", "aiosqlite")
    databases = ("sqlite", "postgresql")
    database_notes = NOTES.database_notes
    bulk_sets_ids = True
    unsupported = NOTES.unsupported
    deviations = NOTES.deviations

    db: SQLiteEngine | PostgresEngine | None = None

    def __init__(self, model: ModelSpec, settings: Settings) -> None:
        super().__init__(model, settings)
        self.table, self.link = _TABLES[model.name]
        self.load_json = bool(self.table._meta.json_columns)
        # Piccolo holds no connection: the limit a new connection of this SQLite library gets
        self._max_vars = variable_limit()
        self._columns = len(self.table._meta.columns)  # bound values per row in C
        #: set by open_<database>: the durability to expect, and the restore (SQLite's before open)
        self._expected_settings: Callable[[], dict[str, str] | None] = self._sqlite_expected_settings
        self._restore: Callable[[Path], None] = self._sqlite_restore

    def tables(self) -> SqlTables:
        return tables_for(self.model, self.table._meta.tablename)

    # -- connection -----------------------------------------------------------
    # The engines are built inside the running loop (open_<database> are coroutines): their __init__ uses
    # piccolo's run_sync, which would otherwise call asyncio.run() on this thread and unset the harness's
    # event loop.
    async def open_sqlite(self, path: Path) -> None:
        self.db = SQLiteEngine(path=str(path), factory=pragma_connection_class(self.settings))
        self._expected_settings, self._restore = self._sqlite_expected_settings, self._sqlite_restore
        self._attach_engine()

    async def open_postgresql(self, location: Any) -> None:
        self.table, self.link = _PG_TABLES[self.model.name]
        # PostgresEngine.__init__ asks the server's version on a connection of its own (closed again)
        self.db = PostgresEngine(config={"host": location.host, "port": location.port, "user": location.user,
                                         "password": location.password, "database": location.dbname})
        # one connection, held until close(): without a pool Piccolo connects for every query
        await self.db.start_connection_pool(min_size=1, max_size=1)
        self._max_vars = PG_MAX_ARGS
        self._expected_settings, self._restore = self._server_expected_settings, self._server_restore
        self._attach_engine()

    def _attach_engine(self) -> None:
        for t in (self.table, self.link):
            if t is not None:
                t._meta.db = self.db

    async def close(self) -> None:
        # SQLite: Piccolo closes each connection when its transaction or query ends.
        db, self.db = self.db, None
        if isinstance(db, PostgresEngine):
            await db.close_connection_pool()

    def _engine(self) -> SQLiteEngine | PostgresEngine:
        assert self.db is not None, "open() first"
        return self.db

    def _write(self):
        db = self._engine()
        if isinstance(db, PostgresEngine):
            return db.transaction()
        return db.transaction(transaction_type=TransactionType.immediate)

    def _read(self):
        db = self._engine()
        if isinstance(db, PostgresEngine):
            return nullcontext()  # the pool's one connection, no transaction
        return db.transaction()

    async def server_rows(self, sql: str) -> list[tuple[Any, ...]]:
        """``sql``'s rows through Piccolo's raw-SQL API (``Table.raw``), on the pool's one connection."""
        return [tuple(r.values()) for r in await self.table.raw(sql)]

    @asynccontextmanager
    async def aiosqlite_connection(self) -> AsyncIterator[Any]:
        """For pragma read-back: a connection Piccolo opens, exactly as it opens one for an op."""
        async with self._read() as tx:
            yield tx.connection

    def expected_settings(self) -> dict[str, str] | None:
        return self._expected_settings()

    def _sqlite_expected_settings(self) -> dict[str, str] | None:
        if not self.settings.foreign_keys:
            raise Unsupported("Piccolo runs PRAGMA foreign_keys = 1 before every query; it cannot run with them off")
        return expected_pragmas(self.settings)

    @staticmethod
    def _server_expected_settings() -> None:
        return None  # what the server backend expects (PostgreSQL always enforces foreign keys)

    def restore(self, template: Path) -> None:
        self._restore(template)

    def _server_restore(self, template: Path) -> None:
        server_restore(self.path)  # in place, on the harness's connection; the pool's stays open

    def _sqlite_restore(self, template: Path) -> None:
        # Not AiosqliteArm's restore: there is no live connection to keep warm, and the one a
        # transaction hands out cannot be a backup target (it is inside BEGIN).
        conn = sqlite3.connect(**self._engine().connection_kwargs)
        try:
            backup_into(conn, template)
        finally:
            conn.close()

    async def create_schema(self) -> None:
        async with self._write():
            await self.table.create_table()
            if self.link is not None:
                await self.link.create_table()

    async def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        assert self.link is not None
        link = self.link
        rows = [link(from_id=a, to_id=b) for a, b in links]
        async with self._write():
            for chunk in chunked(rows, len(link._meta.columns), self._max_vars):
                await link.insert(*chunk)

    # -- objects ----------------------------------------------------------------
    def build(self, rows: Sequence[Mapping[str, Any]]) -> list[Table]:
        t = self.table
        return [t(**r) for r in rows]

    def _objects(self):
        q = self.table.objects()
        return q.output(load_json=True) if self.load_json else q

    async def load_all(self) -> list[Table]:
        async with self._read():
            return await self._objects().order_by(self.table.id)

    # -- operations -----------------------------------------------------------
    async def insert_single(self, objs: list[Table]) -> None:
        for obj in objs:
            await obj.save()

    async def insert_batch(self, objs: list[Table]) -> None:
        async with self._write():
            for obj in objs:
                await obj.save()

    async def insert_bulk(self, objs: list[Table]) -> None:
        t = self.table
        async with self._write():
            for chunk in chunked(objs, self._columns, self._max_vars):
                await t.insert(*chunk)

    async def filter_large(self, levels: Sequence[int]) -> list[Table]:
        t, out = self.table, []
        async with self._read():
            for lv in levels:
                out.extend(await self._objects().where(t.level == lv))
        return out

    async def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[Table]:
        t, out = self.table, []
        async with self._read():
            for lv, offset in pages:
                out.extend(await self._objects().where(t.level == lv).order_by(t.id).offset(offset).limit(limit))
        return out

    async def get(self, ids: Sequence[int]) -> list[Table]:
        t, out = self.table, []
        async with self._read():
            for i in ids:
                out.append(await self._objects().get(t.id == i))
        return out

    async def filter_dicts(self, levels: Sequence[int]) -> list[dict[str, Any]]:
        t, out = self.table, []
        async with self._read():
            for lv in levels:
                q = t.select().where(t.level == lv)
                out.extend(await (q.output(load_json=True) if self.load_json else q))
        return out

    async def update_whole(self, objs: list[Table], values: Sequence[Mapping[str, Any]]) -> None:
        async with self._write():
            for obj, new in zip(objs, values):
                assign(obj, new)
                await obj.save()

    async def update_partial(self, objs: list[Table], levels: Sequence[int]) -> None:
        columns = [self.table.level]
        async with self._write():
            for obj, lv in zip(objs, levels):
                obj.level = lv
                await obj.save(columns)

    async def delete(self, objs: list[Table]) -> None:
        async with self._write():
            for obj in objs:
                await obj.remove()

    def describe(self) -> dict[str, Any]:
        from piccolo.utils.encoding import ORJSON

        try:
            import asyncpg
        except ImportError:  # SQLite only: asyncpg is what the PostgreSQL branch needs
            pg: dict[str, str] = {}
        else:
            pg = {"postgresql_driver": f"asyncpg {asyncpg.__version__}",
                  "postgresql_connections": "Piccolo's connection pool, min_size=1, max_size=1: one asyncpg connection"}
        return {
            **super().describe(),
            "connections": "one aiosqlite connection per transaction: one per op, one per object in A",
            **pg,
            # piccolo encodes and decodes JSON with orjson when it is installed
            "json_library": "orjson" if ORJSON else "json",
        }
