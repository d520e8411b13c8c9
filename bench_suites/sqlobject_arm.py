"""The SQLObject arm (sync; sqlite3, psycopg 3 on PostgreSQL, or mysqlclient on MariaDB).

SQLObject is an active-record ORM: creating an object INSERTs its row (and
reads it back), assigning an attribute UPDATEs its column. So ``build()`` can
only prepare the field values (kwargs dicts) and the timed insert creates the
objects; updates use ``obj.set(...)`` / attribute assignment, deletes
``destroySelf()``.

Connection: one :class:`SQLiteConnection` per arm, bound to the model classes
through a :class:`ConnectionHub` (``_connection = hub``, as SQLObject documents
it). SQLObject keeps one sqlite3 connection per thread; :class:`_OneConnection`
applies the requested pragmas to it when SQLObject opens it and refuses to open
a second one, so a hidden second connection fails loudly instead of skewing
results. Transactions are ``hub.doInTransaction(func)``.

On PostgreSQL the connection is SQLObject's :class:`PostgresConnection`, made from the URI
``postgres://user@host:port/dbname?driver=psycopg`` (``connectionFromURI``): psycopg 3, the first
driver SQLObject tries and its "first class" PostgreSQL driver since 3.13 (psycopg2 is the next in
its default list). :class:`_OnePgConnection` holds it to one DB-API connection the same way; SQLObject
puts the connection in autocommit mode, and a transaction switches autocommit off (the driver sends
``BEGIN`` before the first statement), commits, and switches it back on. The models are a second set
of classes (registry ``ormbench_sqlobject_pg``) because JSON is :class:`JsonbCol` (``jsonb``) there;
every other column maps as on SQLite: ``FLOAT`` is double precision on PostgreSQL,
``DECIMAL(10, 2)``, ``TIMESTAMP``, ``VARCHAR(255)``, ``TEXT``.

On MariaDB it is SQLObject's :class:`MySQLConnection` from ``mysql://user@host:port/dbname?driver=mysqldb``:
mysqlclient, the first driver SQLObject tries, held to one connection the same way (with the client
library's default charset: SQLObject also takes ``charset=`` as a Python codec, which ``utf8mb4`` is not);
SQLObject switches the driver's autocommit on and a transaction off and on again, as on PostgreSQL. The
SQLite models serve: ``FloatCol`` is ``DOUBLE PRECISION`` there, ``DateTimeCol`` ``DATETIME(6)`` (SQLObject
asks for microseconds when the server has them), ``DecimalCol`` ``DECIMAL(10, 2)``, and ``JSONCol`` ``TEXT``
(SQLObject has no JSON column for MySQL).

Cache: SQLObject's per-connection object cache is left on (its default, how
users run it). It is emptied on every restore, so no round reads objects that an
earlier round fetched; within one round an object already fetched is reused
(see ``deviations``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from sqlobject import (
    BigIntCol,
    DatabaseIndex,
    DateTimeCol,
    DecimalCol,
    FloatCol,
    ForeignKey,
    IntCol,
    JSONCol,
    JsonbCol,
    MultipleJoin,
    SmallIntCol,
    SQLObject,
    SQLRelatedJoin,
    StringCol,
)
from sqlobject.dbconnection import ConnectionHub
from sqlobject.mysql.mysqlconnection import MySQLConnection
from sqlobject.postgres.pgconnection import PostgresConnection
from sqlobject.sqlbuilder import Select
from sqlobject.sqlite.sqliteconnection import SQLiteConnection

from pytest_ormbench.arms.contract import DECIMAL_DIGITS, DECIMAL_PLACES
from pytest_ormbench.workload.spec import TEXT_MAX, WIDE_DEFAULTS, Field, ModelSpec, Settings
from pytest_ormbench.arms.sql import SqliteArm, SqlTables, apply_pragmas, tables_for
from pytest_ormbench.arms.notes import load_notes

_REGISTRY = "ormbench_sqlobject"
#: the PostgreSQL models' class registry (their JSON columns differ, the class names do not)
_PG_REGISTRY = "ormbench_sqlobject_pg"
#: SQLObject's PostgreSQL driver (its ``driver=`` URI parameter): psycopg 3, the first it tries by default
PG_DRIVER = "psycopg"
#: SQLObject's MySQL driver: mysqlclient (``mysqldb``), the first it tries by default
MYSQL_DRIVER = "mysqldb"


# --------------------------------------------------------------------------
# Models: one set of classes per canonical model, built once per process
# --------------------------------------------------------------------------


class _Models:
    """The SQLObject classes of one canonical model and the hub they use."""

    def __init__(self, model: ModelSpec, jsonb: bool = False) -> None:
        registry = _PG_REGISTRY if jsonb else _REGISTRY
        cols = _PG_WIDE_COLS if jsonb else _WIDE_COLS
        self.hub = ConnectionHub()
        self.table = f"journal_{model.name}"
        self.link_table = f"{self.table}_links" if model.relations else None
        cls_name = "Journal" + model.name.capitalize()
        attrs: dict[str, Any] = {
            "_connection": self.hub,
            "sqlmeta": type("sqlmeta", (), {"table": self.table, "idName": "id", "registry": registry}),
            "timestamp": DateTimeCol(dbName="timestamp", notNone=True),
            "level": IntCol(dbName="level", notNone=True),
            "text": StringCol(dbName="text", length=TEXT_MAX, notNone=True),
            "level_index": DatabaseIndex("level"),
            "text_index": DatabaseIndex("text"),
        }
        if model.relations:
            # Self FK: nullable, indexed, ON DELETE SET NULL (SQLObject also
            # nulls the children itself in destroySelf, cascade='null').
            attrs["parent"] = ForeignKey(cls_name, dbName="parent_id", default=None, cascade="null")
            attrs["parent_index"] = DatabaseIndex("parent")
            attrs["children"] = MultipleJoin(cls_name, joinColumn="parent_id")
            # Directed M2M through our own intermediate table (SQLObject FAQ:
            # "How can I define my own intermediate table"), so that the link
            # table has an id and indexes on both columns like the other arms'.
            attrs["links"] = SQLRelatedJoin(
                cls_name, intermediateTable=self.link_table, joinColumn="from_id",
                otherColumn="to_id", createRelatedTable=False, addRemoveName="Link",
            )
        for f in model.wide_fields:
            attrs[f.name] = _wide_col(f, cols)
        self.journal: type[SQLObject] = type(cls_name, (SQLObject,), attrs)
        self.link: type[SQLObject] | None = None
        if model.relations:
            self.link = type(cls_name + "Link", (SQLObject,), {
                "_connection": self.hub,
                "sqlmeta": type("sqlmeta", (), {"table": self.link_table, "idName": "id", "registry": registry}),
                "source": ForeignKey(cls_name, dbName="from_id", notNone=True),
                "target": ForeignKey(cls_name, dbName="to_id", notNone=True),
                "source_index": DatabaseIndex("source"),
                "target_index": DatabaseIndex("target"),
            })
        # canonical field name -> SQLObject attribute name
        self.attr = {name: ("parentID" if name == "parent_id" else name) for name in model.field_names}
        q = self.journal.q
        self.q_columns = [getattr(q, self.attr[n]) for n in model.field_names]


_WIDE_COLS = {
    "float": lambda **kw: FloatCol(**kw),
    "smallint": lambda **kw: SmallIntCol(**kw),
    "int": lambda **kw: IntCol(**kw),
    "bigint": lambda **kw: BigIntCol(**kw),
    "char": lambda **kw: StringCol(length=TEXT_MAX, **kw),
    "text": lambda **kw: StringCol(**kw),
    "decimal": lambda **kw: DecimalCol(size=DECIMAL_DIGITS, precision=DECIMAL_PLACES, **kw),
    "json": lambda **kw: JSONCol(**kw),
}

#: PostgreSQL: SQLObject's own jsonb column (JSONCol is TEXT); the rest as on SQLite
_PG_WIDE_COLS = {**_WIDE_COLS, "json": lambda **kw: JsonbCol(**kw)}


def _wide_col(f: Field, cols: Mapping[str, Any]) -> Any:
    if f.has_default:
        return cols[f.kind](dbName=f.name, notNone=True, default=WIDE_DEFAULTS[f.kind])
    return cols[f.kind](dbName=f.name, default=None)


_MODELS: dict[tuple[str, bool], _Models] = {}


def _models(model: ModelSpec, jsonb: bool = False) -> _Models:
    """The classes of one model: SQLite's (also MariaDB's), or PostgreSQL's (``jsonb``: JSON is JsonbCol)."""
    key = (model.name, jsonb)
    if key not in _MODELS:
        _MODELS[key] = _Models(model, jsonb)
    return _MODELS[key]


# --------------------------------------------------------------------------
# Connection
# --------------------------------------------------------------------------


class _OneConnection(SQLiteConnection):
    """SQLObject's SQLite connection, held to one sqlite3 connection with our pragmas.

    SQLObject opens sqlite3 connections lazily (one per thread, kept in its
    thread pool). This opens the one we allow, applies the pragmas on it, keeps
    it for pragma read-back and restore, and refuses to open another.
    """

    def __init__(self, filename: str, settings: Settings, **kw: Any) -> None:
        self._settings = settings
        self.raw: sqlite3.Connection | None = None
        super().__init__(filename, **kw)

    def makeConnection(self) -> sqlite3.Connection:
        if self.raw is not None:
            raise RuntimeError("SQLObject tried to open a second sqlite3 connection; the arm allows one")
        conn = super().makeConnection()
        apply_pragmas(conn, self._settings)
        self.raw = conn
        return conn


class _HeldToOne:
    """A SQLObject server connection held to one DB-API connection (as :class:`_OneConnection`).

    Made with ``connectionFromURI``; SQLObject's pool opens the driver connection lazily, in autocommit
    mode. The durability is the server's: nothing to apply on the connection.
    """

    raw: Any = None
    engine = "server"

    def makeConnection(self) -> Any:
        if self.raw is not None:
            raise RuntimeError(f"SQLObject tried to open a second {self.engine} connection; the arm allows one")
        conn = super().makeConnection()  # type: ignore[misc]
        self.raw = conn
        return conn


class _OnePgConnection(_HeldToOne, PostgresConnection):
    engine = "PostgreSQL"

    def in_transaction(self) -> bool:
        """Whether the driver connection is inside a transaction (psycopg 3 or psycopg2)."""
        raw = self.raw
        if raw is None:
            return False
        if self.driver == "psycopg":
            return raw.info.transaction_status != self.module.pq.TransactionStatus.IDLE
        return raw.get_transaction_status() != self.module.extensions.TRANSACTION_STATUS_IDLE


class _OneMysqlConnection(_HeldToOne, MySQLConnection):
    engine = "MariaDB"

    def in_transaction(self) -> bool:
        """Whether the driver connection is inside a transaction (MariaDB's ``@@in_transaction``)."""
        if self.raw is None:
            return False
        cur = self.raw.cursor()
        try:
            cur.execute("SELECT @@in_transaction")
            return bool(cur.fetchone()[0])
        finally:
            cur.close()


def _driver_version(*dists: str) -> str:
    """The version of a server driver (describe() runs on an unopened arm)."""
    import importlib.metadata

    for dist in dists:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not installed"


# --------------------------------------------------------------------------
# The arm
# --------------------------------------------------------------------------


NOTES = load_notes("pytest_ormbench.suites", "sqlobject")


class SQLObjectArm(SqliteArm):
    name = "sqlobject"
    label = "SQLObject"
    driver = "sqlite3"
    packages = ("SQLObject",)
    databases = ("sqlite", "postgresql", "mysql")
    bulk_sets_ids = False
    unsupported = NOTES.unsupported
    deviations = NOTES.deviations

    so_conn: _OneConnection | _OnePgConnection | _OneMysqlConnection | None = None

    def __init__(self, model: ModelSpec, settings: Settings) -> None:
        super().__init__(model, settings)
        self.m = _models(model)
        self.Journal = self.m.journal

    # -- connection -----------------------------------------------------------
    def open_sqlite(self, path: Path) -> None:
        self._open_with(_models(self.model), lambda: _OneConnection(str(path), self.settings))

    def open_postgresql(self, location: Any) -> None:
        # models of its own (JsonbCol)
        self._open_with(_models(self.model, jsonb=True), lambda: _OnePgConnection.connectionFromURI(
            f"{location.url('postgres')}?driver={PG_DRIVER}"))

    def open_mysql(self, location: Any) -> None:
        # the SQLite models (JSONCol is TEXT there)
        self._open_with(_models(self.model), lambda: _OneMysqlConnection.connectionFromURI(
            f"{location.url('mysql')}?driver={MYSQL_DRIVER}"))

    def _open_with(self, models: _Models, connection: Callable[[], Any]) -> None:
        """Bind ``models``' hub to the SQLObject connection ``connection()`` makes, and open its one connection."""
        self.m = models
        self.Journal = self.m.journal
        hub = self.m.hub
        if getattr(hub, "processConnection", None) is not None:
            raise RuntimeError(f"another SQLObject arm for {self.model.name!r} is still open in this process")
        self.so_conn = connection()
        hub.processConnection = self.so_conn
        self.raw_connection()  # open it now, so pragmas are in force before anything else

    def close(self) -> None:
        if self.so_conn is None:
            return
        raw = self.so_conn.raw
        self.so_conn.close()
        # SQLObject's close may have closed it already (mysqlclient refuses a second close; sqlite3 and psycopg
        # do not mind)
        if raw is not None and not getattr(raw, "closed", False) and getattr(raw, "open", True):
            raw.close()
        self.so_conn.raw = None
        self.so_conn.cache.clear()
        self.m.hub.processConnection = None
        self.so_conn = None

    def raw_connection(self) -> Any:
        """The one live sqlite3 connection, or on a server the one psycopg or mysqlclient connection."""
        assert self.so_conn is not None, "open() first"
        if self.so_conn.raw is None:
            # SQLObject's own way to the DB-API connection; it goes back to
            # SQLObject's per-thread pool and stays the one connection.
            self.so_conn.releaseConnection(self.so_conn.getConnection(), explicit=True)
        assert self.so_conn.raw is not None
        return self.so_conn.raw

    def tables(self) -> SqlTables:
        return tables_for(self.model, self.m.table, self.m.link_table)

    def create_schema(self) -> None:
        self.Journal.createTable()
        if self.m.link is not None:
            self.m.link.createTable()

    def before_restore(self) -> None:
        assert self.so_conn is not None
        raw = self.raw_connection()
        if isinstance(self.so_conn, (_OnePgConnection, _OneMysqlConnection)):
            open_tx = self.so_conn.in_transaction()  # the harness's TRUNCATE would wait for its locks
        else:
            open_tx = raw.in_transaction
        if open_tx:
            raise RuntimeError("a transaction is still open before restore")

    def after_restore(self) -> None:
        # The rows changed under SQLObject: forget every cached object.
        assert self.so_conn is not None
        self.so_conn.expireAll()
        self.so_conn.cache.clear()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "sqlobject_cache": "on (default), emptied on restore",
                "cacheValues": self.Journal.sqlmeta.cacheValues, "lazyUpdate": self.Journal.sqlmeta.lazyUpdate,
                "postgresql_driver": f"{PG_DRIVER} {_driver_version(PG_DRIVER)} (postgres:// URI, driver={PG_DRIVER})",
                "postgresql_json_col": "JsonbCol (jsonb)",
                "mysql_driver": f"mysqlclient {_driver_version('mysqlclient')} (mysql:// URI, driver={MYSQL_DRIVER})",
                "mysql_json_col": "JSONCol (TEXT)"}

    # -- objects --------------------------------------------------------------
    def _kwargs(self, row: Mapping[str, Any]) -> dict[str, Any]:
        attr = self.m.attr
        return {attr[k]: v for k, v in row.items() if k != "id" or v is not None}

    def build(self, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Field values only: SQLObject would INSERT on construction."""
        return [self._kwargs(r) for r in rows]

    def id_of(self, obj: Any) -> int | None:
        if isinstance(obj, dict):
            return obj.get("id")
        return obj.id

    def fields_of(self, obj: Any) -> dict[str, Any]:
        return {name: getattr(obj, a) for name, a in self.m.attr.items()}

    def load_all(self) -> list[Any]:
        J = self.Journal
        return list(J.select(orderBy=J.q.id))

    def populate(self, rows: Sequence[Mapping[str, Any]], links: Sequence[tuple[int, int]]) -> None:
        # No bulk path: create the objects (explicit ids) in one transaction.
        objs = self.build(rows)
        self.insert_batch(objs)
        if links:
            self.insert_links(links)

    def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        J = self.Journal

        def work() -> None:
            for a, b in links:
                J.get(a).addLink(b)

        self.m.hub.doInTransaction(work)

    # -- operations -----------------------------------------------------------
    def insert_single(self, objs: list[Any]) -> None:
        J, tx = self.Journal, self.m.hub.doInTransaction
        for i, kw in enumerate(objs):
            objs[i] = tx(J, **kw)

    def insert_batch(self, objs: list[Any]) -> None:
        J = self.Journal

        def work() -> None:
            for i, kw in enumerate(objs):
                objs[i] = J(**kw)

        self.m.hub.doInTransaction(work)

    def filter_large(self, levels: Sequence[int]) -> list[Any]:
        J, out = self.Journal, []
        level = J.q.level
        for lv in levels:
            out.extend(J.select(level == lv))
        return out

    def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[Any]:
        J, out = self.Journal, []
        level, order = J.q.level, J.q.id
        for lv, offset in pages:
            out.extend(J.select(level == lv, orderBy=order)[offset:offset + limit])
        return out

    def get(self, ids: Sequence[int]) -> list[Any]:
        # A cached id would be answered from memory: sync() re-reads its row, as a user who needs the
        # database's current row does (the cache is emptied on restore, so a hit is an id this op fetched).
        J = self.Journal
        assert self.so_conn is not None
        cached, get, out = self.so_conn.cache.tryGet, J.get, []
        for i in ids:
            hit = cached(i, J) is not None
            obj = get(i)
            if hit:
                obj.sync()
            out.append(obj)
        return out

    def filter_tuples(self, levels: Sequence[int]) -> list[tuple]:
        conn, cols, level, out = self.so_conn, self.m.q_columns, self.Journal.q.level, []
        assert conn is not None
        for lv in levels:
            out.extend(conn.queryAll(conn.sqlrepr(Select(cols, where=level == lv))))
        return out

    def update_whole(self, objs: list[Any], values: Sequence[Mapping[str, Any]]) -> None:
        def work() -> None:
            for obj, new in zip(objs, values):
                obj.set(**new)

        self.m.hub.doInTransaction(work)

    def update_partial(self, objs: list[Any], levels: Sequence[int]) -> None:
        def work() -> None:
            for obj, lv in zip(objs, levels):
                obj.level = lv

        self.m.hub.doInTransaction(work)

    def delete(self, objs: list[Any]) -> None:
        def work() -> None:
            for obj in objs:
                obj.destroySelf()

        self.m.hub.doInTransaction(work)
