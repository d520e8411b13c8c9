"""The peewee arm: peewee's Model API on ``SqliteDatabase`` (stdlib sqlite3), ``PostgresqlDatabase`` (psycopg2)
or ``MySQLDatabase`` (PyMySQL).

Models are built per arm instance on a deferred ``SqliteDatabase(None)``;
``open()`` points it at the file with the suite's pragmas. peewee sets no
pragma of its own (it runs only those passed as ``pragmas=``), opens the
sqlite3 connection with ``isolation_level=None`` and issues ``BEGIN``/``COMMIT``
itself inside ``db.atomic()``; outside a transaction each statement autocommits.

On PostgreSQL ``open()`` rebuilds the models on a deferred ``PostgresqlDatabase(None)``
(peewee's PostgreSQL database class; its default adapter is psycopg2, psycopg 3 only with
``prefer_psycopg3=True``) and points it at the server database. peewee opens the psycopg2
connection in autocommit mode and issues ``BEGIN``/``COMMIT`` itself inside ``db.atomic()``,
as on SQLite. Two field classes differ there: ``DoubleField`` for floats (peewee's
``FloatField`` is ``REAL`` on PostgreSQL, 4 bytes) and ``playhouse.postgres_ext.BinaryJSONField``
(``jsonb``) for JSON, whose default GIN index is turned off (the canonical schema indexes
level, text and parent_id only).

On MariaDB ``open()`` rebuilds the models on ``MySQLDatabase`` (its adapter is PyMySQL, which peewee
imports first and documents; ``mariadb=True`` for MariaDB's JSON flavour), connected with
``autocommit=True`` and ``utf8mb4`` as peewee does. Three field classes differ: ``DoubleField`` (peewee's
``FloatField`` is a 4-byte ``FLOAT`` there), a ``DateTimeField`` declared ``DATETIME(6)`` (peewee's is
``DATETIME``, which drops microseconds), and ``playhouse.mysql_ext.MySQLJSONField`` (MariaDB's ``JSON``,
a ``LONGTEXT`` with a ``json_valid`` check).

Test 2's many-to-many is an explicit through model (``JournalLink``) with two
foreign keys to ``Journal``: peewee's ``ManyToManyField`` cannot point at its
own model (``ManyToManyField('self')`` fails, and one added afterwards with a
through model holding two foreign keys to the model fails on use with "More than
one foreign key between Journal and JournalLink"; checked with peewee 4.5). peewee's
documentation models a directed self-relation this way (its twitter example's
``Relationship(from_user, to_user)``); ``Journal.related()`` and
``Journal.related_to()`` expose the two directions as queries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import peewee as pw
from playhouse.mysql_ext import MySQLJSONField
from playhouse.postgres_ext import BinaryJSONField
from playhouse.sqlite_ext import JSONField

from pytest_ormbench.arms.helpers import assign
from pytest_ormbench.arms.contract import DECIMAL_DIGITS, DECIMAL_PLACES
from pytest_ormbench.workload.spec import TEXT_MAX, WIDE_DEFAULTS, Field, ModelSpec, Settings
from pytest_ormbench.arms.sql import (SqliteArm, SqlTables, chunked, pragma_pairs, rows_per_statement, tables_for,
    variable_limit)
from pytest_ormbench.arms.notes import load_notes

#: canonical wide kind -> peewee field class
_WIDE_FIELDS: dict[str, Any] = {
    "float": pw.FloatField,
    "smallint": pw.SmallIntegerField,
    "int": pw.IntegerField,
    "bigint": pw.BigIntegerField,
    "char": lambda **kw: pw.CharField(max_length=TEXT_MAX, **kw),
    "text": pw.TextField,
    "decimal": lambda **kw: pw.DecimalField(max_digits=DECIMAL_DIGITS, decimal_places=DECIMAL_PLACES, **kw),
    "json": JSONField,
}

#: PostgreSQL: the field classes that differ from SQLite's (the other kinds map as they are)
_PG_WIDE_FIELDS: dict[str, Any] = {
    **_WIDE_FIELDS,
    # FloatField is REAL (float4) on PostgreSQL; DoubleField is DOUBLE PRECISION (REAL on SQLite too)
    "float": pw.DoubleField,
    # jsonb; BinaryJSONField indexes itself (GIN) by default, the canonical schema does not index it
    "json": lambda **kw: BinaryJSONField(index=False, **kw),
}


#: MariaDB: FloatField is FLOAT (4 bytes) there too; MySQLJSONField is peewee's JSON field for MySQL/MariaDB
_MYSQL_WIDE_FIELDS: dict[str, Any] = {**_WIDE_FIELDS, "float": pw.DoubleField, "json": MySQLJSONField}


class MicrosecondDateTimeField(pw.DateTimeField):
    """``DATETIME(6)``: peewee's ``DateTimeField`` is ``DATETIME`` on MySQL, which keeps whole seconds only."""

    field_type = "DATETIME(6)"


def _dist_version(*dists: str) -> str:
    import importlib.metadata

    for dist in dists:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not installed"


def _psycopg2_version() -> str:
    """The psycopg2 that peewee's PostgresqlDatabase uses (its default adapter), without importing it."""
    return _dist_version("psycopg2", "psycopg2-binary")


def _default_of(f: Field) -> Any:
    value = WIDE_DEFAULTS[f.kind]
    if isinstance(value, (dict, list)):
        # peewee shares a non-callable default between instances: a mutable
        # default must be a callable returning a fresh copy (peewee's docs).
        return lambda: dict(value)
    return value


def _wide_field(f: Field, kinds: Mapping[str, Any]) -> pw.Field:
    if f.has_default:
        return kinds[f.kind](default=_default_of(f))
    return kinds[f.kind](null=True)


def make_models(db: pw.Database, spec: ModelSpec) -> tuple[type[pw.Model], type[pw.Model] | None]:
    """The peewee models for a canonical model on ``db``: (Journal, JournalLink or None)."""
    mysql = isinstance(db, pw.MySQLDatabase)
    kinds = (_PG_WIDE_FIELDS if isinstance(db, pw.PostgresqlDatabase) else _MYSQL_WIDE_FIELDS if mysql
             else _WIDE_FIELDS)
    table = f"journal_{spec.name}"
    attrs: dict[str, Any] = {
        "id": pw.AutoField(),
        "timestamp": MicrosecondDateTimeField() if mysql else pw.DateTimeField(),
        "level": pw.IntegerField(index=True),
        "text": pw.CharField(max_length=TEXT_MAX, index=True),
    }
    if spec.relations:
        # attribute ``parent`` (the object), ``parent_id`` (the raw id), column parent_id
        attrs["parent"] = pw.ForeignKeyField(
            "self", null=True, backref="children", on_delete="SET NULL", index=True, column_name="parent_id"
        )
    for f in spec.wide_fields:
        attrs[f.name] = _wide_field(f, kinds)
    attrs["Meta"] = type("Meta", (), {"database": db, "table_name": table})
    journal = type("Journal", (pw.Model,), attrs)
    if not spec.relations:
        return journal, None

    class JournalLink(pw.Model):
        """Directed link: from_journal -> to_journal."""

        from_journal = pw.ForeignKeyField(journal, backref="links_out", on_delete="CASCADE", column_name="from_id")
        to_journal = pw.ForeignKeyField(journal, backref="links_in", on_delete="CASCADE", column_name="to_id")

        class Meta:
            database = db
            table_name = f"{table}_links"

    def related(self: pw.Model) -> pw.ModelSelect:
        """Journals this one links to (the many-to-many, forward)."""
        return journal.select().join(JournalLink, on=JournalLink.to_journal).where(JournalLink.from_journal == self)

    def related_to(self: pw.Model) -> pw.ModelSelect:
        """Journals that link to this one (the many-to-many, reverse)."""
        return journal.select().join(JournalLink, on=JournalLink.from_journal).where(JournalLink.to_journal == self)

    journal.related = related
    journal.related_to = related_to
    return journal, JournalLink


# how each driver shows a transaction left open, ended before a restore (every op leaves its db.atomic() block)
def _end_sqlite3_transaction(db: pw.Database, conn: Any) -> None:
    if conn.in_transaction:
        conn.rollback()


def _end_psycopg2_transaction(db: pw.Database, conn: Any) -> None:
    import psycopg2.extensions

    if conn.get_transaction_status() != psycopg2.extensions.TRANSACTION_STATUS_IDLE:
        db.rollback()  # a raw ROLLBACK: the connection is in autocommit mode


def _end_pymysql_transaction(db: pw.Database, conn: Any) -> None:
    if conn.server_status & 1:  # SERVER_STATUS_IN_TRANS
        db.rollback()


NOTES = load_notes("pytest_ormbench.suites", "peewee")


class PeeweeArm(SqliteArm):
    name = "peewee"
    label = "peewee"
    driver = "sqlite3"
    packages = ("peewee",)
    databases = ("sqlite", "postgresql", "mysql")
    #: ``Model.bulk_create`` sets ids only if the database was made with
    #: ``returning_clause=True`` (not the default on SQLite); this arm keeps
    #: the default, so the bulk-inserted objects keep ``id=None``. On PostgreSQL
    #: ``returning_clause`` is peewee's default: the INSERT has ``RETURNING "id"``
    #: and the objects get their ids (recorded as the fact ``bulk_ids_set``).
    bulk_sets_ids = False
    independent_sessions = True  # models built per instance on the instance's own database
    deviations = NOTES.deviations

    db: pw.SqliteDatabase | pw.PostgresqlDatabase | pw.MySQLDatabase

    def __init__(self, model: ModelSpec, settings: Settings) -> None:
        super().__init__(model, settings)
        self._bind(pw.SqliteDatabase(None))
        #: SQLite's limit of bound variables per statement (the library's; open() reads the live connection's);
        #: None on PostgreSQL (psycopg2 binds nothing on the server: no limit, one statement per batch)
        self._max_vars: int | None = variable_limit()
        #: set by open_<database>: ends a transaction the driver shows open (before a restore)
        self._end_transaction: Callable[[pw.Database, Any], None] = _end_sqlite3_transaction

    def _bind(self, db: pw.SqliteDatabase | pw.PostgresqlDatabase | pw.MySQLDatabase) -> None:
        """Build the models on ``db`` (a deferred database: the field classes depend on its kind)."""
        self.db = db
        self.Journal, self.Link = make_models(db, self.model)
        #: canonical field name -> peewee field, in the model's (= canonical) column order
        self._fields = {fld.column_name: fld for fld in self.Journal._meta.sorted_fields}
        assert tuple(self._fields) == self.model.field_names, (tuple(self._fields), self.model.field_names)
        # G: canonical dict keys (peewee keys by field name; alias where they differ)
        self._dict_cols = [
            fld.alias(name) if fld.name != name else fld for name, fld in self._fields.items()
        ]

    # -- connection -----------------------------------------------------------
    def open_sqlite(self, path: Path) -> None:
        if not isinstance(self.db, pw.SqliteDatabase):
            self._bind(pw.SqliteDatabase(None))
        # peewee runs exactly these on every connection it opens, nothing else
        self.db.init(str(path), pragmas=pragma_pairs(self.settings))
        self.db.connect()
        self._max_vars = variable_limit(self.db.connection())
        self._end_transaction = _end_sqlite3_transaction

    def open_postgresql(self, location: Any) -> None:
        if not isinstance(self.db, pw.PostgresqlDatabase):
            self._bind(pw.PostgresqlDatabase(None))
        # psycopg2 (peewee's default adapter); peewee sets autocommit and sends no statement on connect
        params: dict[str, Any] = {"host": location.host, "port": location.port, "user": location.user}
        if location.password is not None:
            params["password"] = location.password
        self._connect_server(location, params, _end_psycopg2_transaction)

    def open_mysql(self, location: Any) -> None:
        if not isinstance(self.db, pw.MySQLDatabase):
            self._bind(pw.MySQLDatabase(None))
        # PyMySQL; peewee connects with autocommit=True and charset utf8mb4, and sends nothing else
        params = {"host": location.host, "port": location.port, "user": location.user,
                  "password": location.password or "",
                  "mariadb": "mariadb" in str(location.server.version).lower()}
        self._connect_server(location, params, _end_pymysql_transaction)

    def _connect_server(self, location: Any, params: dict[str, Any],
                        end_transaction: Callable[[pw.Database, Any], None]) -> None:
        self.db.init(location.dbname, **params)
        self.db.connect()
        self._max_vars = None  # the whole batch in one statement
        self._end_transaction = end_transaction

    def _batches(self, rows: Sequence[Any], columns: int) -> Any:
        """``rows`` in slices for multi-row INSERTs: SQLite's variable limit, or all at once on PostgreSQL."""
        if self._max_vars is None:
            return [rows]
        return chunked(rows, columns, self._max_vars)

    def close(self) -> None:
        if not self.db.is_closed():
            self.db.close()

    def raw_connection(self) -> Any:
        """The live sqlite3 connection, or on a server the live psycopg2 or PyMySQL connection."""
        return self.db.connection()

    def tables(self) -> SqlTables:
        return tables_for(self.model, self.Journal._meta.table_name)

    def create_schema(self) -> None:
        models = [self.Journal] + ([self.Link] if self.Link is not None else [])
        self.db.create_tables(models)

    def before_restore(self) -> None:
        # every op leaves its db.atomic() block before restore; end a stray transaction anyway
        self._end_transaction(self.db, self.db.connection())

    def describe(self) -> dict[str, Any]:
        # called on an unopened instance: the SQLite figures, and what the PostgreSQL branch uses
        sqlite_vars = self._max_vars if self._max_vars is not None else variable_limit()
        return {
            **super().describe(),
            "returning_clause": bool(pw.SqliteDatabase.returning_clause),
            "json_field": f"{JSONField.__module__}.{JSONField.__name__}",
            "bulk_rows_per_statement": rows_per_statement(sqlite_vars, len(self._fields) - 1),
            "postgresql_driver": f"psycopg2 {_psycopg2_version()} (peewee PostgresqlDatabase's default adapter)",
            "postgresql_returning_clause": bool(pw.PostgresqlDatabase.returning_clause),
            "postgresql_json_field": f"{BinaryJSONField.__module__}.{BinaryJSONField.__name__} (jsonb, index=False)",
            "postgresql_float_field": "peewee.DoubleField (DOUBLE PRECISION)",
            "postgresql_bulk_rows_per_statement": "the whole batch",
            "mysql_driver": f"PyMySQL {_dist_version('PyMySQL')} (peewee MySQLDatabase's first adapter)",
            "mysql_json_field": f"{MySQLJSONField.__module__}.{MySQLJSONField.__name__}",
            "mysql_float_field": "peewee.DoubleField (DOUBLE PRECISION)",
            "mysql_datetime_field": "DateTimeField as DATETIME(6)",
            "mysql_bulk_rows_per_statement": "the whole batch",
        }

    # -- building states --------------------------------------------------------
    def populate(self, rows: Sequence[Mapping[str, Any]], links: Sequence[tuple[int, int]]) -> None:
        # Rows carry explicit ids, and bulk_create leaves out an auto-increment id, so
        # write them with insert_many (bulk_create's own path) including the id column.
        J, fields = self.Journal, list(self._fields.values())
        attrs = [f.safe_name for f in fields]
        with self.db.atomic():
            for batch in self._batches(self.build(rows), len(fields)):
                J.insert_many([[getattr(o, a) for a in attrs] for o in batch], fields=fields).execute()
        if links:
            self.insert_links(links)

    def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        assert self.Link is not None
        L = self.Link
        with self.db.atomic():
            for batch in self._batches(links, 2):
                L.insert_many(batch, fields=[L.from_journal, L.to_journal]).execute()

    def build(self, rows: Sequence[Mapping[str, Any]]) -> list[pw.Model]:
        J = self.Journal
        return [J(**row) for row in rows]

    def load_all(self) -> list[pw.Model]:
        J = self.Journal
        return list(J.select().order_by(J.id))

    # -- operations ---------------------------------------------------------------
    def insert_single(self, objs: list[pw.Model]) -> None:
        db = self.db
        for obj in objs:
            with db.atomic():
                obj.save()

    def insert_batch(self, objs: list[pw.Model]) -> None:
        with self.db.atomic():
            for obj in objs:
                obj.save()

    def insert_bulk(self, objs: list[pw.Model]) -> None:
        # bulk_create writes every field but the auto-increment id; the largest batch
        # SQLite allows was the fastest (fewer, longer statements) in our measurements.
        # PostgreSQL and MariaDB (client-side interpolation: no bound-parameter limit): the whole batch at once
        rows = None if self._max_vars is None else rows_per_statement(self._max_vars, len(self._fields) - 1)
        with self.db.atomic():
            self.Journal.bulk_create(objs, batch_size=rows)

    def filter_large(self, levels: Sequence[int]) -> list[pw.Model]:
        J, out = self.Journal, []
        for lv in levels:
            out.extend(J.select().where(J.level == lv))
        return out

    def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[pw.Model]:
        J, out = self.Journal, []
        for lv, offset in pages:
            out.extend(J.select().where(J.level == lv).order_by(J.id).offset(offset).limit(limit))
        return out

    def get(self, ids: Sequence[int]) -> list[pw.Model]:
        J = self.Journal
        return [J.get_by_id(i) for i in ids]

    def filter_dicts(self, levels: Sequence[int]) -> list[dict[str, Any]]:
        J, cols, out = self.Journal, self._dict_cols, []
        for lv in levels:
            out.extend(J.select(*cols).where(J.level == lv).dicts())
        return out

    def filter_tuples(self, levels: Sequence[int]) -> list[tuple]:
        J, out = self.Journal, []
        for lv in levels:
            out.extend(J.select().where(J.level == lv).tuples())
        return out

    def update_whole(self, objs: list[pw.Model], values: Sequence[Mapping[str, Any]]) -> None:
        with self.db.atomic():
            for obj, new in zip(objs, values):
                assign(obj, new)
                obj.save()

    def update_partial(self, objs: list[pw.Model], levels: Sequence[int]) -> None:
        J = self.Journal
        with self.db.atomic():
            for obj, lv in zip(objs, levels):
                obj.level = lv
                obj.save(only=[J.level])

    def delete(self, objs: list[pw.Model]) -> None:
        # The schema declares ON DELETE SET NULL (children) and CASCADE (links) and
        # foreign_keys=ON enforces them, so plain delete_instance() (one DELETE per
        # object) is complete; recursive=True would redo that work in Python.
        with self.db.atomic():
            for obj in objs:
                obj.delete_instance()
