"""The Django ORM arm: Django's models, managers and querysets on its sqlite3, postgresql or mysql backend.

Everything is configured in code: ``settings.configure(...)`` once per process
(the first ``open``), with the one app ``pytest_ormbench.suites.django_app`` that holds the
models; no settings module and no migrations. Tables are created from the
models with the schema editor. Later ``open`` calls close the default
connection and point its ``settings_dict`` at the new file (or server database).

Django opens every sqlite3 connection with ``PRAGMA foreign_keys = ON`` and
``PRAGMA legacy_alter_table = OFF``, then runs ``OPTIONS["init_command"]``
(split on ";"): that is where the requested journal_mode, synchronous and
foreign_keys go, so they are the last word on every connection Django opens.

On PostgreSQL (``open_postgresql()``) the engine is
``django.db.backends.postgresql``, which uses psycopg 3 when it is installed (the
arm checks that it does): one persistent connection (``CONN_MAX_AGE=None``; Django
closes connections only on request signals, which never fire here), in autocommit
mode as Django runs by default, with Django's default client-side binding
(``ClientCursor``: parameters are interpolated by psycopg, nothing is prepared on
the server). Durability is the server's: nothing is set on the connection.

On MariaDB (``open_mysql()``) the engine is ``django.db.backends.mysql`` on
mysqlclient (``MySQLdb``, the driver Django recommends), over TCP with ``OPTIONS={"charset": "utf8mb4"}``
(passed to ``MySQLdb.connect``), one persistent connection in autocommit, and Django's default session
isolation level, READ COMMITTED (the server's own is REPEATABLE READ), kept and recorded. Django's own
types are exact there (as the server reports them): ``datetime(6)``, ``double``, ``decimal(10,2)``, and
JSONField is MariaDB's ``json`` (LONGTEXT with a ``json_valid`` check). On MariaDB >= 10.5 inserts
carry ``RETURNING``, so ``bulk_create()`` sets the ids (checked on the live connection in ``open_mysql``).

What differs per database is set in the arm's ``open_<database>()`` method: Django's DATABASES entry, the
driver checked, how a transaction left open is seen, and the facts ``describe()`` records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pytest_ormbench.arms.helpers import assign
from pytest_ormbench.workload.spec import ModelSpec, Settings
from pytest_ormbench.arms.sql import SqliteArm, SqlTables, apply_pragmas, pragma_statements
from pytest_ormbench.arms.notes import load_notes

APP = "pytest_ormbench.suites.django_app"
SQLITE_ENGINE = "django.db.backends.sqlite3"
POSTGRESQL_ENGINE = "django.db.backends.postgresql"
MYSQL_ENGINE = "django.db.backends.mysql"


def _sqlite_database(name: str, init_command: str) -> dict[str, Any]:
    return {"ENGINE": SQLITE_ENGINE, "NAME": name, "OPTIONS": {"init_command": init_command}}


def _server_database(location: Any, engine: str, options: dict[str, Any]) -> dict[str, Any]:
    """Django's DATABASES entry for a server database (a ``ServerLocation``) on Django's backend ``engine``."""
    return {
        "ENGINE": engine,
        "NAME": location.dbname,
        "HOST": location.host,
        "PORT": str(location.port),
        "USER": location.user,
        "PASSWORD": location.password or "",
        # persistent: the one connection stays open across ops, as on SQLite
        "CONN_MAX_AGE": None,
        "OPTIONS": options,
    }


def _setup(database: dict[str, Any]) -> None:
    """Configure Django once per process; afterwards only the database file (or server database) changes."""
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            DEBUG=False,  # no query log
            DATABASES={"default": dict(database, OPTIONS=dict(database["OPTIONS"]))},
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


def _switch_engine(database: dict[str, Any]) -> None:
    """Replace the default connection by one of another backend (a process that moves between SQLite and a server).

    Django builds a connection's backend from ``settings.DATABASES`` once; the benchmark's workers stay on one
    database, but an in-process caller may not.
    """
    from django.conf import settings
    from django.db import connections

    connections["default"].close()
    configured = connections.configure_settings({"default": dict(database, OPTIONS=dict(database["OPTIONS"]))})
    settings.DATABASES["default"] = connections.settings["default"] = configured["default"]
    del connections["default"]


def _sqlite3_in_transaction(dbapi: Any) -> bool:
    return dbapi.in_transaction


def _psycopg_in_transaction(dbapi: Any) -> bool:
    from psycopg.pq import TransactionStatus

    return dbapi.info.transaction_status != TransactionStatus.IDLE


def _mysqlclient_in_transaction(dbapi: Any) -> bool:
    # mysqlclient reports no transaction state: Django keeps the connection in autocommit outside
    # atomic(), so autocommit off means a transaction may be open
    return not dbapi.get_autocommit()


NOTES = load_notes("pytest_ormbench.suites", "django")


class DjangoArm(SqliteArm):
    name = "django"
    label = "Django"
    driver = "sqlite3"
    packages = ("django",)
    databases = ("sqlite", "postgresql", "mysql")
    # bulk_create() fetches the new ids with INSERT ... RETURNING (SQLite >= 3.35, PostgreSQL, MariaDB >= 10.5;
    # on a server without it, open() clears this on the instance)
    bulk_sets_ids = True
    deviations = NOTES.deviations

    def __init__(self, model: ModelSpec, settings: Settings) -> None:
        super().__init__(model, settings)
        self.Model: Any = None
        #: set by open_<database>: whether the DB-API connection is inside a transaction
        self._in_transaction: Callable[[Any], bool] = _sqlite3_in_transaction
        #: set by open_<database>: what describe() records of the open database (nothing before open)
        self._database_facts: Callable[[], dict[str, Any]] = dict
        #: set by open_<database>: whether create_schema() must apply the pragmas again (SQLite)
        self._pragmas_after_ddl = False

    # -- connection -----------------------------------------------------------
    def _connection(self) -> Any:
        from django.db import connections

        return connections["default"]

    def open_sqlite(self, path: Path) -> None:
        init_command = ";".join(pragma_statements(self.settings))
        database = _sqlite_database(str(path), init_command)
        _setup(database)
        from django.db import connections

        if connections["default"].settings_dict["ENGINE"] != SQLITE_ENGINE:
            _switch_engine(database)
        conn = connections["default"]
        conn.close()
        conn.settings_dict["NAME"] = str(path)
        conn.settings_dict.setdefault("OPTIONS", {})["init_command"] = init_command
        conn.ensure_connection()
        self._in_transaction, self._database_facts = _sqlite3_in_transaction, self._sqlite_facts
        self._pragmas_after_ddl = True
        self._bind_model()

    def open_postgresql(self, location: Any) -> None:
        conn = self._open_server(_server_database(location, POSTGRESQL_ENGINE, {}))
        import psycopg

        if not isinstance(conn.connection, psycopg.Connection):  # Django falls back to psycopg2 without psycopg 3
            raise RuntimeError(f"django arm: Django's postgresql backend connected with "
                               f"{type(conn.connection).__module__}, not psycopg 3")
        self._in_transaction, self._database_facts = _psycopg_in_transaction, dict
        self._bind_model()

    def open_mysql(self, location: Any) -> None:
        # OPTIONS go to MySQLdb.connect (Django's default charset made explicit); no "isolation_level" key,
        # so Django's default, READ COMMITTED, applies
        conn = self._open_server(_server_database(location, MYSQL_ENGINE, {"charset": "utf8mb4"}))
        self._check_mysql(conn)
        self._in_transaction, self._database_facts = _mysqlclient_in_transaction, self._mysql_facts
        self._bind_model()

    def _bind_model(self) -> None:
        from .django_app.models import BY_MODEL

        self.Model = BY_MODEL[self.model.name]
        names = [f.attname for f in self.Model._meta.concrete_fields]
        if tuple(names) != self.model.field_names:  # .values()/.values_list() rely on this order
            raise RuntimeError(f"Django model fields {names} are not the canonical {self.model.field_names}")

    def _open_server(self, database: dict[str, Any]) -> Any:
        """Point Django's default connection at a server database and connect; the connection."""
        _setup(database)
        from django.db import connections

        if connections["default"].settings_dict["ENGINE"] != database["ENGINE"]:
            _switch_engine(database)
        conn = connections["default"]
        conn.close()
        for key in ("NAME", "HOST", "PORT", "USER", "PASSWORD", "CONN_MAX_AGE"):
            conn.settings_dict[key] = database[key]
        conn.settings_dict["OPTIONS"] = dict(database["OPTIONS"])
        conn.ensure_connection()
        return conn

    def _check_mysql(self, conn: Any) -> None:
        import MySQLdb

        if not isinstance(conn.connection, MySQLdb.connections.Connection):
            raise RuntimeError(f"django arm: Django's mysql backend connected with "
                               f"{type(conn.connection).__module__}, not mysqlclient")
        # Django's connect already refused a server below its minimum (MariaDB 10.5 for Django 5.2)
        # INSERT ... RETURNING: MariaDB >= 10.5, never Oracle MySQL (bulk_create then sets no ids)
        self.bulk_sets_ids = bool(conn.features.can_return_rows_from_bulk_insert)

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
        if self._pragmas_after_ddl:
            # the SQLite schema editor switches foreign_keys off and back ON: reapply what was asked
            apply_pragmas(self.raw_connection(), self.settings)

    def before_restore(self) -> None:
        conn = self._connection()
        if conn.in_atomic_block or (conn.connection is not None and self._in_transaction(conn.connection)):
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
        # one transaction of its own; Django chunks by the SQLite variable limit (on PostgreSQL: no limit,
        # one statement for all rows; Django >= 5.2 writes it as INSERT ... SELECT * FROM UNNEST(<one array
        # per column>) RETURNING id)
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
        try:  # what django.db.backends.postgresql connects with (psycopg 3 if installed, checked in open)
            import psycopg

            out["postgresql_driver"] = f"psycopg {psycopg.__version__} ({psycopg.pq.__impl__}, libpq {psycopg.pq.version()})"
        except ImportError:
            out["postgresql_driver"] = "psycopg 3 not installed"
        try:  # what django.db.backends.mysql connects with
            import MySQLdb

            out["mysql_driver"] = (f"mysqlclient {'.'.join(map(str, MySQLdb.version_info[:3]))} "
                                   f"(client library {MySQLdb._mysql.get_client_info()})")
        except ImportError:
            out["mysql_driver"] = "mysqlclient not installed"
        out.update(self._database_facts())
        return out

    def _sqlite_facts(self) -> dict[str, Any]:
        if self.Model is None:
            return {}
        fields = [f for f in self.Model._meta.concrete_fields if not f.primary_key]
        # rows per INSERT that bulk_create() uses for new objects (5.2: 999 variables; 6.x: the live limit)
        return {"bulk_create_batch_rows": self._connection().ops.bulk_batch_size(fields, [])}

    def _mysql_facts(self) -> dict[str, Any]:
        conn = self._connection()
        if conn.connection is None:
            return {}
        return {"mysql_isolation_level": conn.isolation_level or "server default",  # Django's: read committed
                "bulk_create_returning": bool(conn.features.can_return_rows_from_bulk_insert)}
