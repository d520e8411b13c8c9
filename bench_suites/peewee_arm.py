"""The peewee arm: peewee's Model API on ``SqliteDatabase`` (stdlib sqlite3).

Models are built per arm instance on a deferred ``SqliteDatabase(None)``;
``open()`` points it at the file with the suite's pragmas. peewee sets no
pragma of its own (it runs only those passed as ``pragmas=``), opens the
sqlite3 connection with ``isolation_level=None`` and issues ``BEGIN``/``COMMIT``
itself inside ``db.atomic()``; outside a transaction each statement autocommits.

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

import sqlite3
from pathlib import Path
from typing import Any, Mapping, Sequence

import peewee as pw
from playhouse.sqlite_ext import JSONField

from pytest_ormbench.arm_helpers import assign
from pytest_ormbench.contract import (
    DECIMAL_DIGITS,
    DECIMAL_PLACES,
    TEXT_MAX,
    WIDE_DEFAULTS,
    Field,
    ModelSpec,
    Settings,
)
from pytest_ormbench.sqlite_support import (
    SqliteArm,
    SqlTables,
    chunked,
    pragma_pairs,
    rows_per_statement,
    tables_for,
    variable_limit,
)

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


def _default_of(f: Field) -> Any:
    value = WIDE_DEFAULTS[f.kind]
    if isinstance(value, (dict, list)):
        # peewee shares a non-callable default between instances: a mutable
        # default must be a callable returning a fresh copy (peewee's docs).
        return lambda: dict(value)
    return value


def _wide_field(f: Field) -> pw.Field:
    if f.has_default:
        return _WIDE_FIELDS[f.kind](default=_default_of(f))
    return _WIDE_FIELDS[f.kind](null=True)


def make_models(db: pw.Database, spec: ModelSpec) -> tuple[type[pw.Model], type[pw.Model] | None]:
    """The peewee models for a canonical model: (Journal, JournalLink or None)."""
    table = f"journal_{spec.name}"
    attrs: dict[str, Any] = {
        "id": pw.AutoField(),
        "timestamp": pw.DateTimeField(),
        "level": pw.IntegerField(index=True),
        "text": pw.CharField(max_length=TEXT_MAX, index=True),
    }
    if spec.relations:
        # attribute ``parent`` (the object), ``parent_id`` (the raw id), column parent_id
        attrs["parent"] = pw.ForeignKeyField(
            "self", null=True, backref="children", on_delete="SET NULL", index=True, column_name="parent_id"
        )
    for f in spec.wide_fields:
        attrs[f.name] = _wide_field(f)
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


class PeeweeArm(SqliteArm):
    name = "peewee"
    label = "peewee"
    driver = "sqlite3"
    packages = ("peewee",)
    #: ``Model.bulk_create`` sets ids only if the database was made with
    #: ``returning_clause=True`` (not the default on SQLite); this arm keeps
    #: the default, so the bulk-inserted objects keep ``id=None``.
    bulk_sets_ids = False
    deviations = {
        "fk": (
            "many-to-many is an explicit through model with two ForeignKeyFields (from_id, to_id), "
            "peewee's documented way for a self-referential directed relation: peewee's ManyToManyField "
            "does not support a model relating to itself"
        ),
        "wide": (
            "decimal: DecimalField(10, 2) declares DECIMAL(10,2), which SQLite stores with NUMERIC affinity "
            "(REAL for non-integral values), read back as Decimal; json: playhouse.sqlite_ext.JSONField, "
            "a TEXT column written through SQLite's json() function; defaults are peewee (Python-side) defaults, "
            "applied when the object is built, not SQL DEFAULT clauses, so every insert binds the 8 set-3 "
            "columns explicitly"
        ),
    }

    db: pw.SqliteDatabase

    def __init__(self, model: ModelSpec, settings: Settings) -> None:
        super().__init__(model, settings)
        self.db = pw.SqliteDatabase(None)
        self.Journal, self.Link = make_models(self.db, model)
        #: canonical field name -> peewee field, in the model's (= canonical) column order
        self._fields = {fld.column_name: fld for fld in self.Journal._meta.sorted_fields}
        assert tuple(self._fields) == model.field_names, (tuple(self._fields), model.field_names)
        # G: canonical dict keys (peewee keys by field name; alias where they differ)
        self._dict_cols = [
            fld.alias(name) if fld.name != name else fld for name, fld in self._fields.items()
        ]
        #: SQLite's limit of bound variables per statement (the library's; open() reads the live connection's)
        self._max_vars = variable_limit()

    # -- connection -----------------------------------------------------------
    def open(self, path: Path) -> None:
        self.path = path
        # peewee runs exactly these on every connection it opens, nothing else
        self.db.init(str(path), pragmas=pragma_pairs(self.settings))
        self.db.connect()
        self._max_vars = variable_limit(self.db.connection())

    def close(self) -> None:
        if not self.db.is_closed():
            self.db.close()

    def raw_connection(self) -> sqlite3.Connection:
        return self.db.connection()

    def tables(self) -> SqlTables:
        return tables_for(self.model, self.Journal._meta.table_name)

    def create_schema(self) -> None:
        models = [self.Journal] + ([self.Link] if self.Link is not None else [])
        self.db.create_tables(models)

    def before_restore(self) -> None:
        # every op leaves its db.atomic() block before restore; end a stray transaction anyway
        conn = self.db.connection()
        if conn.in_transaction:
            conn.rollback()

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "returning_clause": bool(self.db.returning_clause),
            "json_field": f"{JSONField.__module__}.{JSONField.__name__}",
            "bulk_rows_per_statement": rows_per_statement(self._max_vars, len(self._fields) - 1),
        }

    # -- building states --------------------------------------------------------
    def populate(self, rows: Sequence[Mapping[str, Any]], links: Sequence[tuple[int, int]]) -> None:
        # Rows carry explicit ids, and bulk_create leaves out an auto-increment id, so
        # write them with insert_many (bulk_create's own path) including the id column.
        J, fields = self.Journal, list(self._fields.values())
        attrs = [f.safe_name for f in fields]
        with self.db.atomic():
            for batch in chunked(self.build(rows), len(fields), self._max_vars):
                J.insert_many([[getattr(o, a) for a in attrs] for o in batch], fields=fields).execute()
        if links:
            self.insert_links(links)

    def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        assert self.Link is not None
        L = self.Link
        with self.db.atomic():
            for batch in chunked(links, 2, self._max_vars):
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
        # SQLite allows was the fastest (fewer, longer statements) in our measurements
        rows = rows_per_statement(self._max_vars, len(self._fields) - 1)
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
