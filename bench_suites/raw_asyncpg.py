"""The async control arm on PostgreSQL: hand-written SQL on asyncpg, one connection, one coroutine.

It prices async ORM overhead against raw async rather than against sync: the async ORMs here run on
asyncpg, so an async ORM's figure over this one is what the ORM adds. asyncpg prepares every statement
it runs (its statement cache), ``executemany`` sends the rows of one statement in a pipeline, and
``connection.transaction()`` sends ``BEGIN`` and ``COMMIT``. JSON goes through a codec that encodes with
``json.dumps`` and decodes with ``json.loads``, as asyncpg's documentation sets one up.

It is the floor, so every op that runs one statement over many rows sends them the fastest way asyncpg
allows, without changing what the op is (one statement per row, docs/operations.md): ``executemany``
(C, I, J, K) and, where each row's id comes back, ``fetchmany`` (B, asyncpg >= 0.30) send every row's
Bind/Execute without waiting and one Sync at the end (one round trip for the rows instead of one per
row). The statements the server runs, and so their counts, are the same as one by one. asyncpg has no
pipeline for different statements, so A's ``BEGIN``, ``INSERT`` and ``COMMIT`` are three round trips,
and reads stay one query after another.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import asyncpg

from pytest_ormbench.suites._control_sql import ControlRows, ControlSql
from pytest_ormbench.arms.sql import AiosqliteArm as AsyncSqlArm
from pytest_ormbench.arms.sql import SqlTables
from pytest_ormbench.arms.notes import load_notes


NOTES = load_notes("pytest_ormbench.suites", "raw_asyncpg")


class RawAsyncpgArm(ControlRows, AsyncSqlArm):
    name = "asyncpg"
    label = "raw asyncpg"
    driver = "asyncpg"
    packages = ("asyncpg",)
    databases = ("postgresql",)
    database_notes = NOTES.database_notes
    bulk_sets_ids = False
    deviations = NOTES.deviations

    conn: Any = None

    def __init__(self, model: Any, settings: Any) -> None:
        super().__init__(model, settings)
        self.sql = ControlSql(model)

    def tables(self) -> SqlTables:
        return self.sql.tables()

    # -- connection -----------------------------------------------------------
    async def open(self, path: Any) -> None:  # type: ignore[override]
        self.path = path
        self.conn = await asyncpg.connect(host=path.host, port=path.port, user=path.user, password=path.password,
                                          database=path.dbname)
        for typename in ("json", "jsonb"):
            await self.conn.set_type_codec(typename, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")

    async def close(self) -> None:  # type: ignore[override]
        if self.conn is not None:
            await self.conn.close()
            self.conn = None

    async def server_rows(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in await self.conn.fetch(sql)]

    async def create_schema(self) -> None:  # type: ignore[override]
        async with self.conn.transaction():
            for stmt in self.sql.ddl():
                await self.conn.execute(stmt)

    async def insert_links(self, links: Sequence[tuple[int, int]]) -> None:  # type: ignore[override]
        async with self.conn.transaction():
            await self.conn.executemany(self.sql.insert_link, links)

    def describe(self) -> dict[str, Any]:
        return {"asyncpg": asyncpg.__version__}

    # -- objects ----------------------------------------------------------------
    async def load_all(self) -> list[dict[str, Any]]:  # type: ignore[override]
        names = self.model.field_names
        return [dict(zip(names, r)) for r in await self.conn.fetch(self.sql.all)]

    def _insert_sql(self, obj: Mapping[str, Any], returning: bool = True) -> str:
        return self.sql.insert_for(obj, returning)

    def _values(self, obj: Mapping[str, Any]) -> list[Any]:
        return self.sql.values(obj)

    # -- operations -----------------------------------------------------------
    async def insert_single(self, objs: list[dict[str, Any]]) -> None:  # type: ignore[override]
        c, sql = self.conn, self._insert_sql(objs[0])
        for obj in objs:
            async with c.transaction():
                obj["id"] = await c.fetchval(sql, *self._values(obj))

    async def insert_batch(self, objs: list[dict[str, Any]]) -> None:  # type: ignore[override]
        c = self.conn
        async with c.transaction():
            rows = await c.fetchmany(self._insert_sql(objs[0]), [self._values(o) for o in objs])
        for obj, row in zip(objs, rows):
            obj["id"] = row[0]

    async def insert_bulk(self, objs: list[dict[str, Any]]) -> None:  # type: ignore[override]
        await self._write_many(self._insert_sql(objs[0], returning=False), [self._values(o) for o in objs])

    async def filter_large(self, levels: Sequence[int]) -> list[Any]:  # type: ignore[override]
        c, sql, out = self.conn, self.sql.by_level, []
        for lv in levels:
            out.extend(await c.fetch(sql, lv))
        return out

    filter_tuples = filter_large

    async def filter_dicts(self, levels: Sequence[int]) -> list[dict[str, Any]]:  # type: ignore[override]
        c, sql, out = self.conn, self.sql.by_level, []
        for lv in levels:
            out.extend(dict(r) for r in await c.fetch(sql, lv))
        return out

    async def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[Any]:  # type: ignore[override]
        c, sql, out = self.conn, self.sql.page, []
        for lv, offset in pages:
            out.extend(await c.fetch(sql, lv, limit, offset))
        return out

    async def get(self, ids: Sequence[int]) -> list[Any]:  # type: ignore[override]
        c, sql = self.conn, self.sql.by_id
        return [await c.fetchrow(sql, i) for i in ids]

    async def _write_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One transaction, ``sql`` once per row through ``executemany``: the rows in one round trip."""
        c = self.conn
        async with c.transaction():
            await c.executemany(sql, rows)

    async def update_whole(self, objs: list[dict[str, Any]], values: Sequence[Mapping[str, Any]]) -> None:  # type: ignore[override]
        rest = self.sql.rest
        for obj, new in zip(objs, values):
            obj.update(new)
        await self._write_many(self.sql.update_whole, [[o[n] for n in rest] + [o["id"]] for o in objs])

    async def update_partial(self, objs: list[dict[str, Any]], levels: Sequence[int]) -> None:  # type: ignore[override]
        for obj, lv in zip(objs, levels):
            obj["level"] = lv
        await self._write_many(self.sql.update_level, [(o["level"], o["id"]) for o in objs])

    async def delete(self, objs: list[dict[str, Any]]) -> None:  # type: ignore[override]
        await self._write_many(self.sql.delete, [(o["id"],) for o in objs])
