"""The ormar arm: async, pydantic-validated models on SQLAlchemy Core over aiosqlite, asyncpg or aiomysql.

ormar 0.26 does not use the ``databases`` package: ``ormar.DatabaseConnection``
wraps a SQLAlchemy ``AsyncEngine`` (``sqlite+aiosqlite``, or ``postgresql+asyncpg`` on
PostgreSQL). Plain statements run on an AUTOCOMMIT view of the engine,
``database.transaction()`` checks out a connection, BEGINs and commits. The engine's pool
is capped at one connection (pool_size=1, max_overflow=0), so the arm has exactly one
connection. On SQLite it is a sqlite3 connection living in aiosqlite's worker thread;
pragmas are applied on it by a ``connect`` listener, read back from it and ``restore``
runs the sqlite3 backup API into it, inside that thread. On PostgreSQL it is one asyncpg
connection; the durability is read back on it through ormar's query executor
(:meth:`OrmarArm.server_rows`) and the harness restores in place on its own connection.

On MariaDB the engine is ``mysql+aiomysql`` (what ``ormar[mysql]`` installs), ``charset=utf8mb4``, with
the same pool of one connection; aiomysql connects with autocommit off, so a transaction is SQLAlchemy's
autobegin and COMMIT, and a standalone statement switches the connection to autocommit and back.
ormar's ``DateTime`` and ``Float`` are SQLAlchemy's ``DateTime`` and ``Float``, which MySQL's dialect
renders as ``DATETIME`` (no microseconds) and ``FLOAT`` (4 bytes): the arm's fields are ormar's with
the MySQL variants ``DATETIME(6)`` and ``DOUBLE`` (:class:`DateTime`, :class:`Float`); elsewhere nothing
changes.

Model classes are built per ``open()`` (their ``OrmarConfig`` binds the
``DatabaseConnection``, which binds the file), from ``contract.MODELS``.
"""

from __future__ import annotations

import importlib.metadata
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, ForwardRef, Mapping, Sequence

import ormar
import sqlalchemy
from sqlalchemy import event
from sqlalchemy.dialects import mysql as sa_mysql

from pytest_ormbench.arms.helpers import assign
from pytest_ormbench.workload.spec import WIDE_DEFAULTS, Field, ModelSpec
from pytest_ormbench.arms.sql import AiosqliteArm, SqlTables, apply_pragmas, chunked, tables_for, variable_limit
from pytest_ormbench.arms.notes import load_notes


class DateTime(ormar.DateTime):
    """ormar.DateTime, ``DATETIME(6)`` on MariaDB/MySQL (SQLAlchemy's ``DateTime`` there is ``DATETIME``, which
    drops microseconds); the same ``DateTime`` column type on SQLite and PostgreSQL."""

    @classmethod
    def get_column_type(cls, **kwargs: Any) -> Any:
        return super().get_column_type(**kwargs).with_variant(sa_mysql.DATETIME(fsp=6), "mysql", "mariadb")


class Float(ormar.Float):
    """ormar.Float, ``DOUBLE`` on MariaDB/MySQL (SQLAlchemy's ``Float`` there is a 4-byte ``FLOAT``); the same
    ``Float`` column type on SQLite and PostgreSQL (where it is already double precision)."""

    @classmethod
    def get_column_type(cls, **kwargs: Any) -> Any:
        return super().get_column_type(**kwargs).with_variant(sqlalchemy.Double(), "mysql", "mariadb")


def _wide_column(f: Field) -> Any:
    """The ormar field for one of Test 3's typed columns (defaults: sets 1, 3; else nullable)."""
    opts: dict[str, Any] = (
        {"default": WIDE_DEFAULTS[f.kind], "nullable": False} if f.has_default else {"nullable": True}
    )
    if f.kind == "float":
        return Float(**opts)
    if f.kind == "smallint":
        return ormar.SmallInteger(**opts)
    if f.kind == "int":
        return ormar.Integer(**opts)
    if f.kind == "bigint":
        return ormar.BigInteger(**opts)
    if f.kind == "char":
        return ormar.String(max_length=255, **opts)
    if f.kind == "text":
        return ormar.Text(**opts)
    if f.kind == "decimal":
        return ormar.Decimal(max_digits=10, decimal_places=2, **opts)
    if f.kind == "json":
        return ormar.JSON(**opts)
    raise ValueError(f.kind)


def build_models(model: ModelSpec, database: ormar.DatabaseConnection) -> tuple[type, type | None, sqlalchemy.MetaData]:
    """The ormar model class (and the through model for Test 2) on a fresh MetaData."""
    metadata = sqlalchemy.MetaData()
    table = f"journal_{model.name}"
    ns: dict[str, Any] = {
        "__module__": __name__,
        "ormar_config": ormar.OrmarConfig(database=database, metadata=metadata, tablename=table),
        "id": ormar.Integer(primary_key=True),
        "timestamp": DateTime(),
        "level": ormar.Integer(index=True),
        "text": ormar.String(max_length=255, index=True),
    }
    link = None
    if model.relations:
        link = type("JournalLink", (ormar.Model,), {
            "__module__": __name__,
            "ormar_config": ormar.OrmarConfig(database=database, metadata=metadata, tablename=f"{table}_links"),
            "id": ormar.Integer(primary_key=True),
        })
        # The relation attribute is named parent_id (column parent_id): ormar's values()
        # drops an FK whose column name differs from its field name (name="parent_id").
        ns["parent_id"] = ormar.ForeignKey(
            ForwardRef("Journal"), nullable=True, related_name="children", ondelete="SET NULL", index=True,
        )
        # Directed self many-to-many: a.links_to.add(b) writes (from_id=a, to_id=b).
        ns["links_to"] = ormar.ManyToMany(
            ForwardRef("Journal"), through=link, related_name="links_from",
            through_relation_name="from_id", through_reverse_relation_name="to_id",
            through_relation_nullable=False, through_reverse_relation_nullable=False,
        )
    for f in model.wide_fields:
        ns[f.name] = _wide_column(f)
    cls = type("Journal", (ormar.Model,), ns)
    if model.relations:
        cls.update_forward_refs()
        lt = link.ormar_config.table
        # the same indexes the other arms have on the link table
        sqlalchemy.Index(f"ix_{lt.name}_from_id", lt.c.from_id)
        sqlalchemy.Index(f"ix_{lt.name}_to_id", lt.c.to_id)
    return cls, link, metadata


#: asyncpg's limit on the arguments of one statement (the SQLite branch reads SQLite's variable limit instead)
PG_MAX_ARGS = 32767
#: MySQL's limit on the placeholders of one prepared statement. aiomysql quotes the values into the text on
#: the client and is not bound by it; chunks under it keep a starting state's multi-row INSERTs (20,100 wide
#: rows are about 11 MB of SQL) well under the server's max_allowed_packet (16 MB)
MYSQL_MAX_ARGS = 65535


NOTES = load_notes("pytest_ormbench.suites", "ormar")


class OrmarArm(AiosqliteArm):
    name = "ormar"
    label = "ormar"
    packages = ("ormar", "aiosqlite", "sqlalchemy", "pydantic")
    databases = ("sqlite", "postgresql", "mysql")
    bulk_sets_ids = False
    unsupported = NOTES.unsupported
    deviations = NOTES.deviations
    #: a DatabaseConnection (its own engine, a pool of one) and models built per instance, on the process's one
    #: event loop. ormar's module-wide context variables (the transaction's connection and depth) scope a
    #: transaction within one op: safe because the harness drives each call as its own Task
    #: (``run_until_complete``), with a copy of the context, so no instance sees another's transaction
    independent_sessions = True

    #: ormar's connection to the database (not ``Arm.database``, the harness's storage backend)
    db: ormar.DatabaseConnection | None = None

    def tables(self) -> SqlTables:
        return tables_for(self.model, f"journal_{self.model.name}")

    # -- connection -----------------------------------------------------------
    async def open_sqlite(self, path: Path) -> None:
        await self._connect(self.dialect.url(path, "sqlite+aiosqlite"))
        settings = self.settings

        # registered after ormar's own listener (PRAGMA foreign_keys=ON), so these win
        @event.listens_for(self.db.engine.sync_engine, "connect")
        def _pragmas(dbapi_conn: Any, record: Any) -> None:
            apply_pragmas(dbapi_conn, settings)

        self._max_vars = await self.in_connection_thread(variable_limit)

    async def open_postgresql(self, location: Any) -> None:
        await self._connect(self.dialect.url(location, "postgresql+asyncpg"))
        self._max_vars = PG_MAX_ARGS

    async def open_mysql(self, location: Any) -> None:
        await self._connect(self.dialect.url(location, "mysql+aiomysql") + "?charset=utf8mb4")
        self._max_vars = MYSQL_MAX_ARGS

    async def _connect(self, url: str) -> None:
        """The engine on ``url`` (its pool of one connection), the models bound to it, connected."""
        self.db = ormar.DatabaseConnection(url, pool_size=1, max_overflow=0)
        self.Journal, self.Link, self.metadata = build_models(self.model, self.db)
        await self.db.connect()
        self._columns = len(self.Journal.ormar_config.table.columns)  # bound values per row in C

    async def close(self) -> None:
        if self.db is not None:
            await self.db.disconnect()
            self.db = None

    async def server_rows(self, sql: str) -> list[tuple[Any, ...]]:
        """``sql``'s rows through ormar's query executor on the arm's one pooled connection (asyncpg, aiomysql)."""
        assert self.db is not None
        async with self.db.get_query_executor() as executor:
            return [tuple(r.values()) for r in await executor.fetch_all(sqlalchemy.text(sql))]

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        try:
            import asyncpg
        except ImportError:  # SQLite only: the postgresql extra brings asyncpg
            pass
        else:
            out["postgresql_driver"] = f"asyncpg {asyncpg.__version__}"
        try:
            out["mysql_driver"] = f"aiomysql {importlib.metadata.version('aiomysql')}"
        except importlib.metadata.PackageNotFoundError:  # the mysql extra brings aiomysql
            pass
        return out

    @asynccontextmanager
    async def aiosqlite_connection(self) -> AsyncIterator[Any]:
        """The pool's one connection, checked out; its aiosqlite connection lives in aiosqlite's thread."""
        assert self.db is not None
        async with self.db.connection() as conn:
            raw = await conn.get_raw_connection()
            yield raw.driver_connection  # aiosqlite.Connection

    # restore (AiosqliteArm's): no transaction is open between ops; ormar keeps no identity map

    async def create_schema(self) -> None:
        assert self.db is not None
        async with self.db.engine.begin() as conn:
            await conn.run_sync(self.metadata.create_all)

    async def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        assert self.db is not None
        objs = [self.Link(from_id=a, to_id=b) for a, b in links]
        async with self.db.transaction():
            for chunk in chunked(objs, len(self.Link.ormar_config.table.columns), self._max_vars):
                await self.Link.objects.bulk_create(chunk)

    # -- objects ----------------------------------------------------------------
    def build(self, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        J = self.Journal
        return [J(**r) for r in rows]

    async def load_all(self) -> list[Any]:
        return await self.Journal.objects.order_by("id").all()

    # -- operations -------------------------------------------------------------
    async def insert_single(self, objs: list[Any]) -> None:
        db = self.db
        for obj in objs:
            async with db.transaction():
                await obj.save()

    async def insert_batch(self, objs: list[Any]) -> None:
        async with self.db.transaction():
            for obj in objs:
                await obj.save()

    async def insert_bulk(self, objs: list[Any]) -> None:
        qs = self.Journal.objects
        async with self.db.transaction():
            for chunk in chunked(objs, self._columns, self._max_vars):
                await qs.bulk_create(chunk)

    async def filter_large(self, levels: Sequence[int]) -> list[Any]:
        J, out = self.Journal, []
        for lv in levels:
            out.extend(await J.objects.filter(level=lv).all())
        return out

    async def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[Any]:
        J, out = self.Journal, []
        for lv, offset in pages:
            out.extend(await J.objects.filter(level=lv).order_by("id").offset(offset).limit(limit).all())
        return out

    async def get(self, ids: Sequence[int]) -> list[Any]:
        J = self.Journal
        return [await J.objects.get(id=i) for i in ids]

    async def filter_dicts(self, levels: Sequence[int]) -> list[dict[str, Any]]:
        J, out = self.Journal, []
        for lv in levels:
            out.extend(await J.objects.filter(level=lv).values())
        return out

    async def filter_tuples(self, levels: Sequence[int]) -> list[tuple]:
        J, out = self.Journal, []
        for lv in levels:
            out.extend(await J.objects.filter(level=lv).values_list())
        return out

    async def update_whole(self, objs: list[Any], values: Sequence[Mapping[str, Any]]) -> None:
        async with self.db.transaction():
            for obj, new in zip(objs, values):
                assign(obj, new)
                await obj.update()

    async def update_partial(self, objs: list[Any], levels: Sequence[int]) -> None:
        async with self.db.transaction():
            for obj, lv in zip(objs, levels):
                obj.level = lv
                await obj.update(_columns=["level"])

    async def delete(self, objs: list[Any]) -> None:
        async with self.db.transaction():
            for obj in objs:
                await obj.delete()
