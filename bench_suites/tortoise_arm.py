"""The Tortoise ORM arm (async: aiosqlite on SQLite, asyncpg on PostgreSQL, asyncmy on MariaDB).

Tortoise keeps its state (apps, connections) in a ``TortoiseContext`` held in a
context variable. The harness drives each coroutine with
``loop.run_until_complete``, which runs it in a task holding a *copy* of the
caller's context, so a context entered inside a coroutine would be lost when it
returns. ``open()`` therefore enters a fresh ``TortoiseContext`` synchronously
(in the harness's own context, which every later task copies) and returns the
coroutine that calls ``Tortoise.init`` on the process's one event loop.

Tortoise's SQLite client runs ``PRAGMA journal_mode=WAL`` and
``PRAGMA journal_size_limit=16384`` on connect unless the connection
credentials say otherwise; the credentials here pass the harness's settings
(and SQLite's default journal_size_limit of -1), and ``pragmas()`` reads them
back from the live aiosqlite connection.

On PostgreSQL the connection is Tortoise's ``asyncpg://`` URL with the client's own
pool parameters ``minsize=1&maxsize=1``: an asyncpg pool holding exactly one
connection, opened in ``open()``. Every query outside a transaction, and every
``in_transaction()`` block, checks that connection out of the pool and back in, and
asyncpg's pool resets a connection it gets back (``Connection.reset()``: one
``SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;`` round trip),
as it does for every Tortoise user on PostgreSQL. The durability is read back on
that connection through Tortoise's raw-SQL API (``client.execute_query``,
:meth:`TortoiseArm.server_rows`); the harness restores in place on its own connection.

On MariaDB the connection is Tortoise's ``mysql://`` URL, its documented client asyncmy, with the same
pool of one connection (``minsize=1&maxsize=1``). Tortoise connects in autocommit mode, with
``charset=utf8mb4`` and its default session ``sql_mode=STRICT_TRANS_TABLES``, and asyncmy's pool hands a
connection back without a reset round trip. Tortoise's own MySQL types keep the data exact:
DatetimeField ``DATETIME(6)``, FloatField ``DOUBLE``, DecimalField ``DECIMAL(10,2)``, JSONField ``JSON``
(MariaDB's LONGTEXT with a ``json_valid`` check).
"""

from __future__ import annotations

import importlib.metadata
import sys
import types
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Mapping, Sequence

from tortoise import Tortoise, fields
from tortoise.context import TortoiseContext
from tortoise.models import Model
from tortoise.transactions import in_transaction

from pytest_ormbench.arms.helpers import assign
from pytest_ormbench.arms.contract import DECIMAL_DIGITS, DECIMAL_PLACES
from pytest_ormbench.workload.spec import MODELS, TEXT_MAX, Field, ModelSpec, Settings
from pytest_ormbench.arms.sql import LINK_FROM, LINK_TO, AiosqliteArm, SqlTables, pragma_pairs, tables_for
from pytest_ormbench.arms.notes import load_notes

APP = "models"
CONNECTION = "default"
# On a server the connection is named after the database (``postgresql``, ``mysql``): Tortoise caches each
# model's compiled INSERT/UPDATE/DELETE per process in ``EXECUTOR_CACHE``, keyed by (connection name, schema,
# table) and never by dialect: under one name, a process that ran the SQLite arm would send SQLite's ``?``
# placeholders to PostgreSQL (or PostgreSQL's ``$1`` to MariaDB).
#: a server URL's query: the client's pool capped at one connection (its minsize/maxsize)
ONE_CONNECTION = "?minsize=1&maxsize=1"

# --------------------------------------------------------------------------
# Models: one Tortoise model per canonical model, built from contract.MODELS
# --------------------------------------------------------------------------

class NaiveDatetimeField(fields.DatetimeField):
    """Tortoise's DatetimeField, declared ``TIMESTAMP`` (without time zone) on PostgreSQL.

    Tortoise declares every DatetimeField ``TIMESTAMPTZ`` on PostgreSQL, whatever ``use_tz`` says; with
    ``use_tz=False`` it then hands asyncpg naive datetimes (which asyncpg reads as the process's local
    time) and strips the zone from what it reads back. The canonical timestamps are naive, so the arm
    overrides the PostgreSQL column type, the way Tortoise's own fields override it per dialect. Nothing
    changes on SQLite (the column stays ``TIMESTAMP``).
    """

    class _db_postgres:
        SQL_TYPE = "TIMESTAMP"


_FIELD_TYPES = {
    "datetime": lambda **kw: NaiveDatetimeField(**kw),
    "int": lambda **kw: fields.IntField(**kw),
    "str": lambda **kw: fields.CharField(max_length=TEXT_MAX, **kw),
    "float": lambda **kw: fields.FloatField(**kw),
    "smallint": lambda **kw: fields.SmallIntField(**kw),
    "bigint": lambda **kw: fields.BigIntField(**kw),
    "char": lambda **kw: fields.CharField(max_length=TEXT_MAX, **kw),
    "text": lambda **kw: fields.TextField(**kw),
    "decimal": lambda **kw: fields.DecimalField(max_digits=DECIMAL_DIGITS, decimal_places=DECIMAL_PLACES, **kw),
    "json": lambda **kw: fields.JSONField(**kw),
}


def _class_name(spec: ModelSpec) -> str:
    return f"Journal{spec.name.capitalize()}"


def _table(spec: ModelSpec) -> str:
    return f"journal_{spec.name}"


def _link_table(spec: ModelSpec) -> str:
    return f"{_table(spec)}_links"


def _tortoise_field(spec: ModelSpec, f: Field) -> Any:
    if f.kind == "id":
        return fields.IntField(primary_key=True)
    if f.kind == "fk":
        # attribute ``parent``, column and attribute ``parent_id``
        return fields.ForeignKeyField(
            f"{APP}.{_class_name(spec)}", related_name="children", null=True,
            on_delete=fields.SET_NULL, db_index=True,
        )
    kw: dict[str, Any] = {}
    if f.nullable:
        kw["null"] = True
    if f.has_default:
        kw["default"] = f.default  # Tortoise deep-copies non-scalar defaults per object
    if f.indexed:
        kw["db_index"] = True
    return _FIELD_TYPES[f.kind](**kw)


def _build_model(spec: ModelSpec) -> type[Model]:
    attrs: dict[str, Any] = {"__module__": __name__}
    for f in spec.fields:
        name = "parent" if f.kind == "fk" else f.name
        attrs[name] = _tortoise_field(spec, f)
    if spec.relations:
        # directed self many-to-many: ``links`` forward (from_id -> to_id),
        # ``linked_from`` the reverse side
        attrs["links"] = fields.ManyToManyField(
            f"{APP}.{_class_name(spec)}", related_name="linked_from", through=_link_table(spec),
            backward_key=LINK_FROM, forward_key=LINK_TO,
        )
    attrs["Meta"] = type("Meta", (), {"table": _table(spec), "app": APP})
    return type(Model)(_class_name(spec), (Model,), attrs)


#: model name -> its Tortoise model class
MODEL_CLASSES: dict[str, type[Model]] = {name: _build_model(spec) for name, spec in MODELS.items()}


def _models_module(spec: ModelSpec) -> str:
    """The name of a module holding only this model, so that each arm registers
    (and creates the tables of) one model. Tortoise's config takes module names."""
    name = f"{__name__}_models_{spec.name}"
    if name not in sys.modules:
        mod = types.ModuleType(name)
        mod.__models__ = [MODEL_CLASSES[spec.name]]  # type: ignore[attr-defined]
        sys.modules[name] = mod
    return name


# --------------------------------------------------------------------------
# The arm
# --------------------------------------------------------------------------


NOTES = load_notes("pytest_ormbench.suites", "tortoise")


class TortoiseArm(AiosqliteArm):
    name = "tortoise"
    label = "Tortoise ORM"
    packages = ("tortoise-orm", "aiosqlite")
    databases = ("sqlite", "postgresql", "mysql")
    bulk_sets_ids = False  # bulk_create runs executemany: objects keep pk None
    deviations = NOTES.deviations

    #: add an index on the link table's to_id (see create_schema)
    index_link_to: bool = True

    _ctx: TortoiseContext | None = None

    def __init__(self, model: ModelSpec, settings: Settings) -> None:
        super().__init__(model, settings)
        self.cls = MODEL_CLASSES[model.name]
        self.names = model.field_names
        self.client: Any = None
        #: the placeholder style of the client's driver (open_<database> sets it): sqlite3's, asyncpg's, asyncmy's
        self.paramstyle = "qmark"

    def tables(self) -> SqlTables:
        return tables_for(self.model, _table(self.model), _link_table(self.model))

    # -- connection -----------------------------------------------------------
    def _credentials(self, path: Path) -> dict[str, Any]:
        # Tortoise runs these as PRAGMAs, in this order, when it connects
        pairs = dict(pragma_pairs(self.settings))
        return {
            "file_path": str(path),
            # Tortoise defaults these to WAL and 16384; -1 is SQLite's own default
            "journal_mode": pairs.pop("journal_mode"),
            "journal_size_limit": -1,
            **pairs,  # synchronous, foreign_keys
        }

    def open(self, path: Path) -> Any:
        # Entered here, synchronously, so that every task the harness's loop
        # runs later (each a copy of this context) sees the Tortoise state.
        self._ctx = TortoiseContext()
        self._ctx.__enter__()
        return super().open(path)  # the coroutine of open_<database>

    async def open_sqlite(self, path: Path) -> None:
        self.paramstyle = "qmark"
        await self._init(CONNECTION, {"engine": "tortoise.backends.sqlite", "credentials": self._credentials(path)})

    async def open_postgresql(self, location: Any) -> None:
        # asyncpg
        self.paramstyle = "dollar"
        await self._init(self.dialect.name, location.url("asyncpg") + ONE_CONNECTION)

    async def open_mysql(self, location: Any) -> None:
        # asyncmy; the MySQL client's charset defaults to utf8mb4
        self.paramstyle = "format"
        await self._init(self.dialect.name, location.url("mysql") + ONE_CONNECTION)

    async def _init(self, name: str, connection: Any) -> None:
        """``Tortoise.init`` with the one connection ``name`` (a URL, or a SQLite engine's credentials)."""
        config = {
            "connections": {name: connection},
            "apps": {APP: {"models": [_models_module(self.model)], "default_connection": name}},
            # the canonical timestamps are naive; use_tz=True would warn and convert on every write
            "use_tz": False,
        }
        await Tortoise.init(config=config)
        self.client = Tortoise.get_connection(name)
        # connect now: on SQLite the pragmas applied, one handle; on a server the pool and its one connection
        await self.client.create_connection(with_db=True)

    def close(self) -> Any:
        ctx, self._ctx = self._ctx, None
        if ctx is None:
            return None
        ctx.__exit__(None, None, None)
        self.client = None
        return ctx.close_connections()

    async def server_rows(self, sql: str) -> list[tuple[Any, ...]]:
        """``sql``'s rows through Tortoise's raw-SQL API, on the pool's one connection (asyncpg records
        on PostgreSQL, dicts keyed by column on MariaDB)."""
        _, rows = await self.client.execute_query(sql)
        return [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in rows]

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        try:
            import asyncpg
        except ImportError:  # SQLite only: asyncpg is what the PostgreSQL branch needs
            pass
        else:
            out["postgresql_driver"] = f"asyncpg {asyncpg.__version__}"
        try:
            out["mysql_driver"] = f"asyncmy {importlib.metadata.version('asyncmy')}"
        except importlib.metadata.PackageNotFoundError:  # Tortoise falls back to aiomysql without asyncmy
            pass
        return out

    def _quote(self, name: str) -> str:
        """An identifier quoted for the arm's database (backticks on MariaDB: its sql_mode has no ANSI_QUOTES)."""
        return self.dialect.quote(name)

    @asynccontextmanager
    async def aiosqlite_connection(self) -> AsyncIterator[Any]:
        conn = self.client._connection  # the live aiosqlite.Connection
        assert conn is not None, "open() first"
        yield conn

    async def create_schema(self) -> None:
        await Tortoise.generate_schemas(safe=False)
        if self.model.relations and self.index_link_to:
            # Tortoise indexes the through table only by UNIQUE(from_id, to_id);
            # without an index on to_id, ON DELETE CASCADE scans the whole link
            # table for every deleted row. The control arm indexes both columns.
            link, q = _link_table(self.model), self._quote
            await self.client.execute_script(f"CREATE INDEX {q(f'idx_{link}_to')} ON {q(link)} ({q(LINK_TO)})")

    # restore (AiosqliteArm's): no transaction is open between ops and Tortoise keeps no identity
    # map, so the pages are overwritten in place, keeping the connection (and Tortoise's compiled
    # queries) warm; nothing to end before or drop after.

    async def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        # Untimed. ``obj.links.add()`` costs a SELECT and an INSERT per source
        # object (minutes for the large states over aiosqlite), so the pairs go
        # into the relation's own through table and key columns in one
        # executemany; tests/test_arm_tortoise.py checks that ``links.add()``
        # writes the same (from_id, to_id) rows.
        m2m, q = self.cls._meta.fields_map["links"], self._quote
        # sqlite3's placeholders, asyncpg's or asyncmy's
        marks = self.dialect.placeholders(2, self.paramstyle)
        sql = (f"INSERT INTO {q(m2m.through)} ({q(m2m.backward_key)}, {q(m2m.forward_key)}) "
               f"VALUES ({marks})")
        async with in_transaction() as conn:
            await conn.execute_many(sql, [[a, b] for a, b in links])

    # -- objects ----------------------------------------------------------------
    def build(self, rows: Sequence[Mapping[str, Any]]) -> list[Model]:
        cls = self.cls
        return [cls(**r) for r in rows]

    async def load_all(self) -> list[Model]:
        return await self.cls.all().order_by("id")

    # -- operations -----------------------------------------------------------
    async def insert_single(self, objs: list[Model]) -> None:
        for obj in objs:
            async with in_transaction():
                await obj.save()

    async def insert_batch(self, objs: list[Model]) -> None:
        async with in_transaction():
            for obj in objs:
                await obj.save()

    async def insert_bulk(self, objs: list[Model]) -> None:
        # executemany: no variable limit, so no batch_size needed
        async with in_transaction():
            await self.cls.bulk_create(objs)

    async def filter_large(self, levels: Sequence[int]) -> list[Model]:
        cls, out = self.cls, []
        for lv in levels:
            out.extend(await cls.filter(level=lv))
        return out

    async def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[Model]:
        cls, out = self.cls, []
        for lv, offset in pages:
            out.extend(await cls.filter(level=lv).order_by("id").offset(offset).limit(limit))
        return out

    async def get(self, ids: Sequence[int]) -> list[Model]:
        cls = self.cls
        return [await cls.get(id=i) for i in ids]

    async def filter_dicts(self, levels: Sequence[int]) -> list[dict[str, Any]]:
        cls, names, out = self.cls, self.names, []
        for lv in levels:
            out.extend(await cls.filter(level=lv).values(*names))
        return out

    async def filter_tuples(self, levels: Sequence[int]) -> list[tuple]:
        cls, names, out = self.cls, self.names, []
        for lv in levels:
            out.extend(await cls.filter(level=lv).values_list(*names))
        return out

    async def update_whole(self, objs: list[Model], values: Sequence[Mapping[str, Any]]) -> None:
        async with in_transaction():
            for obj, new in zip(objs, values):
                assign(obj, new)
                await obj.save()

    async def update_partial(self, objs: list[Model], levels: Sequence[int]) -> None:
        async with in_transaction():
            for obj, lv in zip(objs, levels):
                obj.level = lv
                await obj.save(update_fields=["level"])

    async def delete(self, objs: list[Model]) -> None:
        async with in_transaction():
            for obj in objs:
                await obj.delete()
