"""What the four SQLAlchemy-family arms share: models, engine set-up and op bodies.

Two model flavours (plain SQLAlchemy 2.x declarative, and SQLModel table models)
times two drivers (sqlite3 through pysqlite, aiosqlite through AsyncSession; on
PostgreSQL psycopg 3 and asyncpg, on MariaDB mysqlclient and asyncmy) make four arms. The model factories, the
engine/connection set-up and the op bodies live here once: :class:`SyncOps` holds
the sync op bodies, :class:`AsyncOps` the same shapes awaited (why they are two,
see :class:`AsyncOps`); a :class:`Flavor`
(:func:`sa_flavor` / :func:`sqlmodel_flavor`) supplies the models, ``select`` and the
names of the session methods that run a query (``scalars``/``execute`` for
SQLAlchemy, ``exec`` for SQLModel).

Choices that hold for all four arms (see ``COMMON_NOTES``):

* one engine, ``poolclass=StaticPool`` (one DBAPI connection, ever; a second
  ``connect`` event raises), pragmas applied in the pool's ``connect`` event;
* SQLAlchemy's documented SQLite transaction recipe: the driver's own (legacy)
  transaction handling is switched off (``isolation_level = None``) and the
  engine's ``begin`` event emits ``BEGIN``; ``COMMIT``/``ROLLBACK`` come from
  the driver. So a session's transaction is exactly one SQLite transaction;
* on PostgreSQL (``databases.is_server(path)``): ``postgresql+psycopg`` (sync) or
  ``postgresql+asyncpg`` (async), the engine's default queue pool limited to one
  connection (``pool_size=1, max_overflow=0``; the same ``connect`` guard), and
  SQLAlchemy's default transaction handling (the driver begins implicitly, the
  session commits or rolls back and closes, so no transaction outlives an op);
  JSON is ``JSONB`` there (``JSON().with_variant(JSONB(), "postgresql")``);
* on MariaDB: ``mysql+mysqldb`` (mysqlclient, SQLAlchemy's default MySQL driver) or ``mysql+asyncmy``,
  ``charset=utf8mb4``, the same one-connection pool and default transactions; ``Float`` and ``DateTime``
  get MySQL variants, ``DOUBLE`` and ``DATETIME(6)`` (SQLAlchemy's plain ``FLOAT`` is 4 bytes there and
  its ``DATETIME`` keeps no microseconds);
* sessions with ``expire_on_commit=False``, so objects stay readable after the
  commit that ends each op (each op runs in its own session, closed at its end;
  update/delete use the session ``load_all`` loaded the objects in);
* reads (D, E, F) use ``populate_existing``: a row that is already in the
  session's identity map is still fetched *and* loaded into its object, so
  repeated ids/levels are real work rather than identity-map hits.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import types
from contextlib import asynccontextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, AsyncIterator, Callable, ClassVar, List, Mapping, Optional, Sequence

import sqlalchemy
from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    Numeric,
    SmallInteger,
    String,
    Table,
    Text,
    event,
    insert,
)
from sqlalchemy.dialects import mysql as mysql_types
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship, sessionmaker
from sqlalchemy.pool import StaticPool

from pytest_ormbench.arms.helpers import assign_all
from pytest_ormbench.arms.contract import DECIMAL_DIGITS, DECIMAL_PLACES
from pytest_ormbench.workload.spec import TEXT_MAX, Field, ModelSpec, Settings
from pytest_ormbench.backends import is_server
from pytest_ormbench.arms.server import settings_from_rows, settings_sql
from pytest_ormbench.arms.sql import AiosqliteArm, SqliteArm, SqlTables, apply_pragmas, tables_for

# --------------------------------------------------------------------------
# Column types
# --------------------------------------------------------------------------

#: SQLAlchemy type of each wide-column kind (one set for both databases: the model classes are built once
#: per process). On PostgreSQL Float renders FLOAT, which is double precision there; JSON is JSONB there
#: (the variant most PostgreSQL users choose, and what Django's JSONField and the control arms use).
#: On MariaDB Float would be FLOAT (4 bytes) and DateTime DATETIME (whole seconds): the MySQL variants are
#: what SQLAlchemy's MySQL documentation offers (``DOUBLE``, ``DATETIME(fsp=6)``).
_MYSQL = ("mysql", "mariadb")
TIMESTAMP_TYPE = DateTime().with_variant(mysql_types.DATETIME(fsp=6), *_MYSQL)
SA_TYPES: dict[str, Any] = {
    # asdecimal=False: MySQL's DOUBLE type returns Decimal by default; Float's Python type is float
    "float": Float().with_variant(mysql_types.DOUBLE(asdecimal=False), *_MYSQL),
    "smallint": SmallInteger,
    "int": Integer,
    "bigint": BigInteger,
    "char": String(TEXT_MAX),
    "text": Text,
    "decimal": Numeric(DECIMAL_DIGITS, DECIMAL_PLACES, asdecimal=True),
    "json": JSON().with_variant(JSONB(), "postgresql"),
}

#: Python type of each wide-column kind (SQLModel annotations)
PY_TYPES: dict[str, Any] = {
    "float": float, "smallint": int, "int": int, "bigint": int,
    "char": str, "text": str, "decimal": Decimal, "json": dict,
}

#: what every SQLAlchemy-family arm does differently from the others (shown in the tables)
DEVIATIONS: dict[str, str] = {
    "wide": "defaults of sets 1 and 3 are Python-side column defaults (applied by the INSERT), not DDL DEFAULTs",
    "sqlite:wide": "SQLAlchemy's SQLite dialect has no native decimal: Numeric(10, 2) values are bound as float and "
                   "stored as REAL (NUMERIC affinity), read back as Decimal quantized to 2 places; JSON is stored as "
                   "TEXT (json.dumps)",
    "postgresql:wide": "On PostgreSQL: Float is FLOAT (double precision), Numeric(10, 2) is numeric(10,2) (exact), "
                       "DateTime is timestamp without time zone, JSON is JSON().with_variant(JSONB(), 'postgresql') "
                       "(jsonb)",
    "mysql:wide": "On MariaDB: Float is Float().with_variant(mysql.DOUBLE(asdecimal=False), 'mysql', 'mariadb') "
                  "(DOUBLE, read back as float; plain Float is a 4-byte FLOAT there), Numeric(10, 2) DECIMAL(10,2), "
                  "JSON MariaDB's JSON (LONGTEXT with json_valid)",
    "fk": "passive_deletes=True on children and on both many-to-many sides: the ON DELETE SET NULL "
          "of children and the ON DELETE CASCADE of link rows are done by the database (SQLite with "
          "foreign_keys=ON, PostgreSQL or InnoDB), not by the ORM loading and updating related rows",
    "update_whole": "the unit of work writes only the columns whose value changed (level and text), "
                    "not the whole row as a whole-object save in Django or peewee does",
    "mysql": "timestamp is DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql'): SQLAlchemy's DATETIME on MySQL "
             "keeps whole seconds only",
    "postgresql:insert_batch": "the one flush at commit sends the rows as one INSERT ... SELECT ... FROM (VALUES "
                               "...) ORDER BY sentinel RETURNING id per 1,000 rows (SQLAlchemy's insertmanyvalues on "
                               "PostgreSQL), not a statement per row as on SQLite and in the other arms",
    "mysql:insert_batch": "the one flush at commit sends the rows as one multi-row INSERT ... VALUES ... RETURNING "
                          "id per 1,000 rows (SQLAlchemy's insertmanyvalues; MariaDB 10.5+ has RETURNING), not a "
                          "statement per row as on SQLite and in the other arms",
}

COMMON_NOTES = {
    "engine": "one engine, StaticPool (one connection), pragmas set in the pool's connect event; "
              "driver-level legacy transactions off (isolation_level=None), BEGIN emitted by the "
              "engine's begin event (SQLAlchemy's documented SQLite recipe)",
    "session": "each op runs in its own session (expire_on_commit=False) and closes it; update and "
               "delete commit and close the session load_all loaded the objects in",
    "reads": "D, E, F use populate_existing: rows already in the session's identity map are still "
             "fetched and loaded into their objects; F is session.get(..., populate_existing=True), "
             "one SELECT per id even when the id repeats",
    "insert_bulk": "session.bulk_save_objects(objs) (ids not set); session.execute(insert(Model), dicts) "
                   "was as fast within noise (and also sets no ids on the objects); add_all is the batch path",
    "insert_batch": "add() per object, one commit: on SQLite the flush INSERTs row by row with RETURNING "
                    "(no implicit insertmanyvalues sentinel for SQLite); on PostgreSQL the same flush sends "
                    "one batched INSERT ... SELECT FROM (VALUES ...) ORDER BY sentinel RETURNING id per 1000 rows "
                    "(insertmanyvalues), on MariaDB one multi-row INSERT ... VALUES ... RETURNING id per 1000 "
                    "rows, and bulk_save_objects (no RETURNING) the driver's executemany",
    "postgresql": "sync: postgresql+psycopg (psycopg 3), async: postgresql+asyncpg; the engine's queue pool "
                  "limited to one connection (pool_size=1, max_overflow=0), a second connect raises; "
                  "SQLAlchemy's default transactions (the driver's implicit BEGIN, so reads too run in a "
                  "transaction the closing session rolls back); the connection is opened lazily (with the "
                  "dialect's first-connect queries) as on SQLite",
    "mysql": "sync: mysql+mysqldb (mysqlclient), async: mysql+asyncmy; charset=utf8mb4; the same one-connection "
             "queue pool and default transactions (the driver's autocommit off, the closing session rolls back)",
}

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


def server_url(path: Any, is_async: bool) -> str:
    """The engine URL of a server location, with the driver this family documents for it."""
    url = path.url(SERVER_DIALECTS[(path.db, is_async)])
    return url + "?charset=utf8mb4" if path.db == "mysql" else url


def table_name(spec: ModelSpec) -> str:
    return f"journal_{spec.name}"


@dataclass(frozen=True)
class ModelSet:
    """The mapped class of one canonical model and the tables it lives in."""

    cls: type
    tables: tuple[Table, ...]
    sql_tables: SqlTables
    link: Optional[Table] = None


# --------------------------------------------------------------------------
# Flavour 1: SQLAlchemy 2.x declarative (DeclarativeBase / mapped_column)
# --------------------------------------------------------------------------

class _JournalColumns:
    """Test 1's columns, shared by every SQLAlchemy model (a declarative mixin)."""

    # sort_order: these come first in the table, in canonical order, like the other arms
    id: Mapped[int] = mapped_column(Integer, primary_key=True, sort_order=-4)
    timestamp: Mapped[dt.datetime] = mapped_column(TIMESTAMP_TYPE, sort_order=-3)
    level: Mapped[int] = mapped_column(Integer, index=True, sort_order=-2)
    text: Mapped[str] = mapped_column(String(TEXT_MAX), index=True, sort_order=-1)


def _sa_wide_column(f: Field) -> Any:
    if f.has_default:
        return mapped_column(SA_TYPES[f.kind], nullable=False, default=f.default)
    return mapped_column(SA_TYPES[f.kind], nullable=True)


def _build_sa_models(spec: ModelSpec) -> ModelSet:
    class Base(DeclarativeBase):
        pass

    t = table_name(spec)
    cls_name = f"SaJournal{spec.name.capitalize()}"
    link: Optional[Table] = None
    if spec.relations:
        link = Table(
            f"{t}_links", Base.metadata,
            Column("id", Integer, primary_key=True),
            Column("from_id", ForeignKey(f"{t}.id", ondelete="CASCADE"), nullable=False, index=True),
            Column("to_id", ForeignKey(f"{t}.id", ondelete="CASCADE"), nullable=False, index=True),
        )

        class SaJournalFk(_JournalColumns, Base):
            __tablename__ = t
            # indexed, and ON DELETE SET NULL done by the database (passive_deletes on the reverse side)
            parent_id: Mapped[Optional[int]] = mapped_column(
                ForeignKey(f"{t}.id", ondelete="SET NULL"), index=True, nullable=True)
            parent: Mapped[Optional["SaJournalFk"]] = relationship(
                remote_side=lambda: [SaJournalFk.id], back_populates="children")
            children: Mapped[List["SaJournalFk"]] = relationship(
                back_populates="parent", passive_deletes=True)
            # directed many-to-many: from_id -> to_id; link rows are removed by ON DELETE CASCADE
            links_to: Mapped[List["SaJournalFk"]] = relationship(
                secondary=link,
                primaryjoin=lambda: SaJournalFk.id == link.c.from_id,
                secondaryjoin=lambda: SaJournalFk.id == link.c.to_id,
                back_populates="links_from", passive_deletes=True)
            links_from: Mapped[List["SaJournalFk"]] = relationship(
                secondary=link,
                primaryjoin=lambda: SaJournalFk.id == link.c.to_id,
                secondaryjoin=lambda: SaJournalFk.id == link.c.from_id,
                back_populates="links_to", passive_deletes=True)

        cls: type = SaJournalFk
    else:
        ns: dict[str, Any] = {"__tablename__": t}
        for f in spec.wide_fields:
            ns[f.name] = _sa_wide_column(f)
        cls = types.new_class(cls_name, (_JournalColumns, Base), {}, lambda body: body.update(ns))
    tables = tuple(Base.metadata.sorted_tables)
    return ModelSet(cls, tables, tables_for(spec, t), link)


# --------------------------------------------------------------------------
# Flavour 2: SQLModel table models (Field / Relationship / link_model)
# --------------------------------------------------------------------------

def _build_sqlmodel_models(spec: ModelSpec) -> ModelSet:
    from sqlmodel import Field as SMField
    from sqlmodel import Relationship, SQLModel

    t = table_name(spec)
    suffix = spec.name.capitalize()

    base_ns: dict[str, Any] = {
        "__annotations__": {"id": Optional[int], "timestamp": dt.datetime, "level": int, "text": str},
        "id": SMField(default=None, primary_key=True),
        # naive, like every other arm (recent SQLModel maps a bare datetime to a tz-aware type)
        "timestamp": SMField(sa_type=TIMESTAMP_TYPE),
        "level": SMField(index=True),
        "text": SMField(max_length=TEXT_MAX, index=True),
    }
    link_cls: Optional[type] = None
    if spec.relations:
        link_cls = types.new_class(
            f"SqlModelJournal{suffix}Link", (SQLModel,), {"table": True},
            lambda body: body.update({
                "__tablename__": f"{t}_links",
                "__annotations__": {"id": Optional[int], "from_id": int, "to_id": int},
                "id": SMField(default=None, primary_key=True),
                "from_id": SMField(foreign_key=f"{t}.id", ondelete="CASCADE", index=True),
                "to_id": SMField(foreign_key=f"{t}.id", ondelete="CASCADE", index=True),
            }),
        )
        name = f"SqlModelJournal{suffix}"
        lname = link_cls.__name__
        ns = dict(base_ns, __annotations__=dict(base_ns["__annotations__"]))
        ns["__annotations__"].update({
            "parent_id": Optional[int],
            "parent": Optional[name],
            "children": List[name],
            "links_to": List[name],
            "links_from": List[name],
        })
        ns.update({
            "parent_id": SMField(default=None, foreign_key=f"{t}.id", ondelete="SET NULL", index=True),
            "parent": Relationship(back_populates="children",
                                   sa_relationship_kwargs={"remote_side": f"{name}.id"}),
            "children": Relationship(back_populates="parent", passive_deletes=True),
            "links_to": Relationship(
                back_populates="links_from", link_model=link_cls, passive_deletes=True,
                sa_relationship_kwargs={"primaryjoin": f"{name}.id == {lname}.from_id",
                                        "secondaryjoin": f"{name}.id == {lname}.to_id"}),
            "links_from": Relationship(
                back_populates="links_to", link_model=link_cls, passive_deletes=True,
                sa_relationship_kwargs={"primaryjoin": f"{name}.id == {lname}.to_id",
                                        "secondaryjoin": f"{name}.id == {lname}.from_id"}),
        })
    else:
        ns = dict(base_ns, __annotations__=dict(base_ns["__annotations__"]))
        for f in spec.wide_fields:
            py = PY_TYPES[f.kind]
            kw: dict[str, Any] = {}
            if f.kind == "decimal":
                kw.update(max_digits=DECIMAL_DIGITS, decimal_places=DECIMAL_PLACES)
            elif f.kind == "char":
                kw.update(max_length=TEXT_MAX)
            else:
                kw.update(sa_type=SA_TYPES[f.kind])
            if f.has_default:
                ns["__annotations__"][f.name] = py
                ns[f.name] = SMField(default=f.default, nullable=False, **kw)
            else:
                ns["__annotations__"][f.name] = Optional[py]
                ns[f.name] = SMField(default=None, nullable=True, **kw)
    ns["__tablename__"] = t
    cls = types.new_class(f"SqlModelJournal{suffix}", (SQLModel,), {"table": True},
                          lambda body: body.update(ns))
    main = cls.__table__  # type: ignore[attr-defined]
    link = link_cls.__table__ if link_cls is not None else None  # type: ignore[attr-defined]
    tables = (main,) if link is None else (main, link)
    return ModelSet(cls, tables, tables_for(spec, t), link)


_MODEL_CACHE: dict[tuple[str, str], ModelSet] = {}


def models_for(flavor: str, spec: ModelSpec) -> ModelSet:
    """One mapped class per (flavour, model) per process, shared by the sync and async arm."""
    key = (flavor, spec.name)
    if key not in _MODEL_CACHE:
        build = _build_sa_models if flavor == "sqlalchemy" else _build_sqlmodel_models
        _MODEL_CACHE[key] = build(spec)
    return _MODEL_CACHE[key]


@dataclass(frozen=True)
class Flavor:
    """What differs between plain SQLAlchemy and SQLModel inside the op bodies."""

    name: str
    #: ``select`` to build statements with (SQLModel's returns objects from ``exec``)
    select: Callable[..., Any]
    #: session method returning ORM objects for ``select(Model)``
    objects_method: str
    #: session method returning rows for ``select(*columns)``
    rows_method: str


def sa_flavor() -> Flavor:
    return Flavor("sqlalchemy", sqlalchemy.select, "scalars", "execute")


def sqlmodel_flavor() -> Flavor:
    import sqlmodel

    return Flavor("sqlmodel", sqlmodel.select, "exec", "exec")


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


def _as_dict(obj: Any, names: Sequence[str]) -> dict[str, Any]:
    d = obj.__dict__
    return {n: d[n] for n in names if n in d}


# --------------------------------------------------------------------------
# The arm bases
# --------------------------------------------------------------------------

class _SABase(SqliteArm):
    """State and untimed parts common to the sync and async arms."""

    flavor: ClassVar[Flavor]
    #: "bulk_save_objects" (chosen: fastest, with insert_dicts within noise) or "insert_dicts":
    #: ``session.execute(insert(Model), [dicts])``, the 2.0 ORM bulk INSERT (see COMMON_NOTES)
    bulk_path: ClassVar[str] = "bulk_save_objects"
    bulk_sets_ids = False

    engine: Any = None
    session: Any = None  # the session load_all loaded objects in (update/delete)

    def _setup_models(self) -> None:
        ms = models_for(self.flavor.name, self.model)
        self.ms = ms
        self.M = ms.cls
        self._names = self.model.field_names
        self._columns = [getattr(self.M, n) for n in self._names]

    def tables(self) -> SqlTables:
        return self.ms.sql_tables

    def build(self, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        M = self.M
        return [M(**r) for r in rows]

    # statement shapes (built per call, as an application would; SQLAlchemy caches the compiled form)
    def _by_level(self, lv: int) -> Any:
        M = self.M
        return self.flavor.select(M).where(M.level == lv).execution_options(populate_existing=True)

    def _page(self, lv: int, offset: int, limit: int) -> Any:
        M = self.M
        return (self.flavor.select(M).where(M.level == lv).order_by(M.id).offset(offset).limit(limit)
                .execution_options(populate_existing=True))

    def _cols_by_level(self, lv: int) -> Any:
        return self.flavor.select(*self._columns).where(self.M.level == lv)

    def _all_ordered(self) -> Any:
        return self.flavor.select(self.M).order_by(self.M.id)

    def _bulk_rows(self, objs: list[Any]) -> list[dict[str, Any]]:
        """The objects' set attributes as dicts (an unset id is left to SQLite)."""
        names = self._names if objs and objs[0].id is not None else self._names[1:]
        return [_as_dict(o, names) for o in objs]

    def _link_rows(self, links: Sequence[tuple[int, int]]) -> list[dict[str, int]]:
        return [{"from_id": a, "to_id": b} for a, b in links]

    # attribute assignment is where the ORM tracks changes: timed, inside I (assign_all) and J
    @staticmethod
    def _assign_levels(objs: list[Any], levels: Sequence[int]) -> None:
        for obj, lv in zip(objs, levels):
            obj.level = lv

    def describe(self) -> dict[str, Any]:
        drivers = {f"{db}_driver": _driver_version(SERVER_DRIVER_MODULES[(db, bool(self.is_async))])
                   for db in ("postgresql", "mysql")}
        return {"sqlite_version": sqlite3.sqlite_version, **drivers, "bulk_path": self.bulk_path, **COMMON_NOTES}


class SyncOps(_SABase):
    """The eleven ops on a sync ``Session`` over pysqlite."""

    packages = ("SQLAlchemy",)
    driver = "sqlite3"
    is_async = False

    def open(self, path: Path) -> None:
        self.path = path
        self._setup_models()
        self._conn = OneConnection(self.settings, server=is_server(path))
        if is_server(path):
            self.engine = sqlalchemy.create_engine(server_url(path, False), **SERVER_POOL)
        else:
            self.engine = sqlalchemy.create_engine(f"sqlite:///{path}", poolclass=StaticPool)
        self._conn.install(self.engine)
        self.Session = sessionmaker(self.engine, class_=self.session_class(), expire_on_commit=False)
        self.session = None

    @classmethod
    def session_class(cls) -> type:
        from sqlalchemy.orm import Session

        return Session

    def close(self) -> None:
        self._end_session()
        if self.engine is not None:
            self.engine.dispose()
            self.engine = None

    def raw_connection(self) -> sqlite3.Connection:
        if self._conn.dbapi is None:
            self.engine.raw_connection().close()  # connects (the connect listener keeps it)
        return self._conn.dbapi

    def pragmas(self) -> dict[str, str]:
        if not self.on_server:
            return super().pragmas()
        # through the engine, on its one pooled connection: closing the Connection rolls back the
        # transaction psycopg began for the read (a read on the bare DB-API connection would leave it open)
        with self.engine.connect() as c:
            return settings_from_rows(self.path, c.exec_driver_sql(settings_sql(self.path)).all())

    def _end_session(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def before_restore(self) -> None:
        self._end_session()

    def create_schema(self) -> None:
        self.ms.tables[0].metadata.create_all(self.engine, tables=list(self.ms.tables))

    def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        with self.Session() as s:
            getattr(s, self.flavor.rows_method)(insert(self.ms.link), params=self._link_rows(links))
            s.commit()

    def load_all(self) -> list[Any]:
        self._end_session()
        self.session = self.Session()
        return list(getattr(self.session, self.flavor.objects_method)(self._all_ordered()).all())

    # -- A, B, C ------------------------------------------------------------
    def insert_single(self, objs: list[Any]) -> None:
        with self.Session() as s:
            for obj in objs:
                s.add(obj)
                s.commit()

    def insert_batch(self, objs: list[Any]) -> None:
        with self.Session() as s:
            for obj in objs:
                s.add(obj)
            s.commit()

    def insert_bulk(self, objs: list[Any]) -> None:
        with self.Session() as s:
            if self.bulk_path == "bulk_save_objects":
                s.bulk_save_objects(objs)
            else:
                getattr(s, self.flavor.rows_method)(insert(self.M), params=self._bulk_rows(objs))
            s.commit()

    # -- D to H ----------------------------------------------------------------
    def filter_large(self, levels: Sequence[int]) -> list[Any]:
        out: list[Any] = []
        with self.Session() as s:
            fetch = getattr(s, self.flavor.objects_method)
            for lv in levels:
                out.extend(fetch(self._by_level(lv)).all())
        return out

    def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[Any]:
        out: list[Any] = []
        with self.Session() as s:
            fetch = getattr(s, self.flavor.objects_method)
            for lv, offset in pages:
                out.extend(fetch(self._page(lv, offset, limit)).all())
        return out

    def get(self, ids: Sequence[int]) -> list[Any]:
        M = self.M
        with self.Session() as s:
            get = s.get
            return [get(M, i, populate_existing=True) for i in ids]

    def filter_dicts(self, levels: Sequence[int]) -> list[Any]:
        out: list[Any] = []
        with self.Session() as s:
            run = getattr(s, self.flavor.rows_method)
            for lv in levels:
                out.extend(run(self._cols_by_level(lv)).mappings().all())
        return out

    def filter_tuples(self, levels: Sequence[int]) -> list[Any]:
        out: list[Any] = []
        with self.Session() as s:
            run = getattr(s, self.flavor.rows_method)
            for lv in levels:
                out.extend(run(self._cols_by_level(lv)).all())
        return out

    # -- I, J, K --------------------------------------------------------------
    def update_whole(self, objs: list[Any], values: Sequence[Mapping[str, Any]]) -> None:
        assign_all(objs, values)
        self.session.commit()
        self._end_session()

    def update_partial(self, objs: list[Any], levels: Sequence[int]) -> None:
        self._assign_levels(objs, levels)
        self.session.commit()
        self._end_session()

    def delete(self, objs: list[Any]) -> None:
        s = self.session
        for obj in objs:
            s.delete(obj)
        s.commit()
        self._end_session()


class AsyncOps(_SABase, AiosqliteArm):
    """The same op shapes on an ``AsyncSession`` over aiosqlite, awaited.

    Why this is a second copy of :class:`SyncOps`'s bodies rather than those bodies run through
    ``AsyncSession.run_sync`` (which would make them one source): it would measure something else.
    Each awaited ``AsyncSession`` call (``execute``, ``scalars``, ``get``, ``commit``, ``delete``)
    enters SQLAlchemy's greenlet bridge (``greenlet_spawn``) once; under ``run_sync`` a whole op
    would run in one greenlet, without that per-call cost. An asyncio application awaits the
    session's methods; ``run_sync`` is SQLAlchemy's escape hatch for sync-only APIs, used here
    only where AsyncSession has no method (``bulk_save_objects``). Statement shapes, models and
    everything untimed are shared in :class:`_SABase`; the bodies differ only by ``await``.
    """

    packages = ("SQLAlchemy", "aiosqlite", "greenlet")
    driver = "aiosqlite"
    is_async = True

    async def open(self, path: Path) -> None:
        from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

        self.path = path
        self._setup_models()
        self._conn = OneConnection(self.settings, server=is_server(path))
        if is_server(path):
            self.engine = create_async_engine(server_url(path, True), **SERVER_POOL)
        else:
            self.engine = create_async_engine(f"sqlite+aiosqlite:///{path}", poolclass=StaticPool)
        self._conn.install(self.engine.sync_engine)
        self.Session = async_sessionmaker(self.engine, class_=self.session_class(), expire_on_commit=False)
        self.session = None

    @classmethod
    def session_class(cls) -> type:
        from sqlalchemy.ext.asyncio import AsyncSession

        return AsyncSession

    async def close(self) -> None:
        await self._end_session()
        if self.engine is not None:
            await self.engine.dispose()
            self.engine = None

    async def _end_session(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None

    @asynccontextmanager
    async def aiosqlite_connection(self) -> AsyncIterator[Any]:
        """The pool's one live aiosqlite connection (connecting if the engine has not yet).

        AiosqliteArm reads the pragmas and restores (the backup API, page for page) in its thread:
        the engine, its pool connection and SQLAlchemy's caches survive; the session load_all
        opened is closed first (before_restore).
        """
        if self._conn.dbapi is None:
            async with self.engine.connect() as conn:
                await conn.get_raw_connection()
        yield self._conn.dbapi.driver_connection

    async def server_rows(self, sql: str) -> list[tuple[Any, ...]]:
        """On a server: ``sql``'s rows on the pool's one connection (``exec_driver_sql``); closing the
        connection rolls back the transaction the read began."""
        async with self.engine.connect() as c:
            return [tuple(r) for r in (await c.exec_driver_sql(sql)).all()]

    async def before_restore(self) -> None:  # type: ignore[override]
        await self._end_session()

    async def create_schema(self) -> None:
        metadata = self.ms.tables[0].metadata
        tables = list(self.ms.tables)
        async with self.engine.begin() as conn:
            await conn.run_sync(lambda c: metadata.create_all(c, tables=tables))

    async def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        async with self.Session() as s:
            await getattr(s, self.flavor.rows_method)(insert(self.ms.link), params=self._link_rows(links))
            await s.commit()

    async def load_all(self) -> list[Any]:
        await self._end_session()
        self.session = self.Session()
        result = await getattr(self.session, self.flavor.objects_method)(self._all_ordered())
        return list(result.all())

    # -- A, B, C ------------------------------------------------------------
    async def insert_single(self, objs: list[Any]) -> None:
        async with self.Session() as s:
            for obj in objs:
                s.add(obj)
                await s.commit()

    async def insert_batch(self, objs: list[Any]) -> None:
        async with self.Session() as s:
            for obj in objs:
                s.add(obj)
            await s.commit()

    async def insert_bulk(self, objs: list[Any]) -> None:
        async with self.Session() as s:
            if self.bulk_path == "bulk_save_objects":
                # AsyncSession has no bulk_save_objects: the documented way is run_sync
                await s.run_sync(lambda ss: ss.bulk_save_objects(objs))
            else:
                await getattr(s, self.flavor.rows_method)(insert(self.M), params=self._bulk_rows(objs))
            await s.commit()

    # -- D to H ----------------------------------------------------------------
    async def filter_large(self, levels: Sequence[int]) -> list[Any]:
        out: list[Any] = []
        async with self.Session() as s:
            fetch = getattr(s, self.flavor.objects_method)
            for lv in levels:
                out.extend((await fetch(self._by_level(lv))).all())
        return out

    async def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[Any]:
        out: list[Any] = []
        async with self.Session() as s:
            fetch = getattr(s, self.flavor.objects_method)
            for lv, offset in pages:
                out.extend((await fetch(self._page(lv, offset, limit))).all())
        return out

    async def get(self, ids: Sequence[int]) -> list[Any]:
        M = self.M
        async with self.Session() as s:
            get = s.get
            return [await get(M, i, populate_existing=True) for i in ids]

    async def filter_dicts(self, levels: Sequence[int]) -> list[Any]:
        out: list[Any] = []
        async with self.Session() as s:
            run = getattr(s, self.flavor.rows_method)
            for lv in levels:
                out.extend((await run(self._cols_by_level(lv))).mappings().all())
        return out

    async def filter_tuples(self, levels: Sequence[int]) -> list[Any]:
        out: list[Any] = []
        async with self.Session() as s:
            run = getattr(s, self.flavor.rows_method)
            for lv in levels:
                out.extend((await run(self._cols_by_level(lv))).all())
        return out

    # -- I, J, K --------------------------------------------------------------
    async def update_whole(self, objs: list[Any], values: Sequence[Mapping[str, Any]]) -> None:
        assign_all(objs, values)
        await self.session.commit()
        await self._end_session()

    async def update_partial(self, objs: list[Any], levels: Sequence[int]) -> None:
        self._assign_levels(objs, levels)
        await self.session.commit()
        await self._end_session()

    async def delete(self, objs: list[Any]) -> None:
        s = self.session
        for obj in objs:
            await s.delete(obj)
        await s.commit()
        await self._end_session()

