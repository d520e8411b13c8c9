"""The Django ORM arm: Django's models, managers and querysets on its sqlite3 backend.

Everything is configured in code: ``settings.configure(...)`` once per process
(the first ``open``), with the one app ``bench_suites.django_app`` that holds the
models; no settings module and no migrations. Tables are created from the
models with the schema editor. Later ``open`` calls close the default
connection and point its ``settings_dict`` at the new file.

Django opens every sqlite3 connection with ``PRAGMA foreign_keys = ON`` and
``PRAGMA legacy_alter_table = OFF``, then runs ``OPTIONS["init_command"]``
(split on ";"): that is where the requested journal_mode, synchronous and
foreign_keys go, so they are the last word on every connection Django opens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from pytest_ormbench.arm_helpers import assign
from pytest_ormbench.contract import ModelSpec, Settings
from pytest_ormbench.sqlite_support import SqliteArm, SqlTables, apply_pragmas, pragma_statements

APP = "bench_suites.django_app"


def _setup(name: str, init_command: str) -> None:
    """Configure Django once per process; afterwards only the database file changes."""
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            DEBUG=False,  # no query log
            DATABASES={
                "default": {
                    "ENGINE": "django.db.backends.sqlite3",
                    "NAME": name,
                    "OPTIONS": {"init_command": init_command},
                }
            },
            INSTALLED_APPS=[APP],
            DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
            # the canonical timestamps are naive: store them as given
            USE_TZ=False,
            TIME_ZONE="UTC",
        )
    elif APP not in settings.INSTALLED_APPS:
        raise RuntimeError(
            f"Django settings were configured elsewhere without {APP!r} in INSTALLED_APPS; "
            "the django arm must configure Django itself"
        )
    django.setup()


class DjangoArm(SqliteArm):
    name = "django"
    label = "Django"
    driver = "sqlite3"
    packages = ("django",)
    # bulk_create() fetches the new ids with INSERT ... RETURNING (SQLite >= 3.35)
    bulk_sets_ids = True
    deviations = {
        "fk": "ON DELETE SET NULL is carried out by Django's deletion collector (on_delete=SET_NULL), "
              "not by the database: the parent_id column is REFERENCES ... DEFERRABLE INITIALLY DEFERRED "
              "without an ON DELETE clause, and the collector also deletes the M2M link rows. So Delete "
              "(K) on Test 2 sends 3 statements per object (DELETE its links in both directions, UPDATE "
              "its children SET parent_id = NULL, DELETE the row): that is what obj.delete() costs in Django.",
        "wide": "DecimalField is declared 'decimal' (NUMERIC affinity), so SQLite stores the values as "
                "REAL/INTEGER; Django quantizes them back to 2 places on read. JSONField is stored as "
                "JSON text. Defaults are Django field defaults (set on the object when it is built, "
                "untimed); the schema has no SQL DEFAULT clauses.",
    }

    def __init__(self, model: ModelSpec, settings: Settings) -> None:
        super().__init__(model, settings)
        self.Model: Any = None

    # -- connection -----------------------------------------------------------
    def _connection(self) -> Any:
        from django.db import connections

        return connections["default"]

    def open(self, path: Path) -> None:
        self.path = path
        init_command = ";".join(pragma_statements(self.settings))
        _setup(str(path), init_command)
        from django.db import connections

        conn = connections["default"]
        conn.close()
        conn.settings_dict["NAME"] = str(path)
        conn.settings_dict.setdefault("OPTIONS", {})["init_command"] = init_command
        conn.ensure_connection()

        from .django_app.models import BY_MODEL

        self.Model = BY_MODEL[self.model.name]
        names = [f.attname for f in self.Model._meta.concrete_fields]
        if tuple(names) != self.model.field_names:  # .values()/.values_list() rely on this order
            raise RuntimeError(f"Django model fields {names} are not the canonical {self.model.field_names}")

    def close(self) -> None:
        self._connection().close()

    def raw_connection(self) -> Any:
        conn = self._connection()
        conn.ensure_connection()
        return conn.connection

    def tables(self) -> SqlTables:
        opts = self.Model._meta
        if self.model.relations:
            # Django's own names for the auto-created through table and its columns
            links = opts.get_field("links")
            return SqlTables(opts.db_table, links.m2m_db_table(), links.m2m_column_name(), links.m2m_reverse_name())
        return SqlTables(opts.db_table)

    def create_schema(self) -> None:
        conn = self._connection()
        # create_model() also creates the auto-created M2M through table and the indexes
        with conn.schema_editor() as editor:
            editor.create_model(self.Model)
        # the SQLite schema editor switches foreign_keys off and back ON: reapply what was asked
        apply_pragmas(self.raw_connection(), self.settings)

    def before_restore(self) -> None:
        conn = self._connection()
        if conn.in_atomic_block or (conn.connection is not None and conn.connection.in_transaction):
            raise RuntimeError("django arm: a transaction is open at restore")

    # Django has no identity map or session: nothing to drop after a restore.

    def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        field = self.Model._meta.get_field("links")
        through = field.remote_field.through
        src, dst = field.m2m_column_name(), field.m2m_reverse_name()  # from_<model>_id, to_<model>_id
        # bulk_create wraps itself in one transaction
        through.objects.bulk_create([through(**{src: a, dst: b}) for a, b in links])

    # -- objects ----------------------------------------------------------------
    def build(self, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        M = self.Model
        return [M(**row) for row in rows]

    def load_all(self) -> list[Any]:
        return list(self.Model.objects.order_by("id"))

    # -- operations -------------------------------------------------------------
    def insert_single(self, objs: list[Any]) -> None:
        # Django runs in autocommit mode: a save() outside atomic() is its own
        # transaction (one INSERT ... RETURNING, committed by SQLite at once).
        for obj in objs:
            obj.save()

    def insert_batch(self, objs: list[Any]) -> None:
        from django.db import transaction

        with transaction.atomic():
            for obj in objs:
                obj.save()

    def insert_bulk(self, objs: list[Any]) -> None:
        # one transaction of its own; Django chunks by the SQLite variable limit
        self.Model.objects.bulk_create(objs)

    def filter_large(self, levels: Sequence[int]) -> list[Any]:
        qs, out = self.Model.objects, []
        for lv in levels:
            out.extend(qs.filter(level=lv))
        return out

    def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[Any]:
        qs, out = self.Model.objects, []
        for lv, offset in pages:
            out.extend(qs.filter(level=lv).order_by("id")[offset : offset + limit])
        return out

    def get(self, ids: Sequence[int]) -> list[Any]:
        get = self.Model.objects.get
        return [get(id=i) for i in ids]

    def filter_dicts(self, levels: Sequence[int]) -> list[dict[str, Any]]:
        # .values() without arguments: every concrete field, keyed by attname (= canonical name)
        qs, out = self.Model.objects, []
        for lv in levels:
            out.extend(qs.filter(level=lv).values())
        return out

    def filter_tuples(self, levels: Sequence[int]) -> list[tuple]:
        # .values_list() without arguments: concrete fields in model order (= canonical order, checked in open)
        qs, out = self.Model.objects, []
        for lv in levels:
            out.extend(qs.filter(level=lv).values_list())
        return out

    def update_whole(self, objs: list[Any], values: Sequence[Mapping[str, Any]]) -> None:
        from django.db import transaction

        with transaction.atomic():
            for obj, new in zip(objs, values):
                assign(obj, new)
                obj.save()

    def update_partial(self, objs: list[Any], levels: Sequence[int]) -> None:
        from django.db import transaction

        with transaction.atomic():
            for obj, lv in zip(objs, levels):
                obj.level = lv
                obj.save(update_fields=["level"])

    def delete(self, objs: list[Any]) -> None:
        from django.db import transaction

        with transaction.atomic():
            for obj in objs:
                obj.delete()

    # -- reporting ------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        import django

        out = super().describe()
        out["django"] = django.get_version()
        if self.Model is not None:
            fields = [f for f in self.Model._meta.concrete_fields if not f.primary_key]
            # rows per INSERT that bulk_create() uses for new objects (5.2: 999 variables; 6.x: the live limit)
            out["bulk_create_batch_rows"] = self._connection().ops.bulk_batch_size(fields, [])
        return out
