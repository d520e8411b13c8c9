"""The async control arm on MariaDB: hand-written SQL on asyncmy, one connection, one coroutine.

It prices async ORM overhead on MariaDB against raw async: asyncmy is the driver SQLAlchemy's async
dialect and Tortoise document for MySQL. asyncmy (a Cython port of PyMySQL) quotes parameters on the
client; ``executemany`` of an INSERT sends one multi-row ``INSERT``; ``begin()`` and ``commit()`` wrap
each op that writes, on a connection in autocommit mode; an insert's id is the cursor's ``lastrowid``.

It is the floor, so I, J and K, one UPDATE or DELETE per row, go out as multi-statement queries of up to
1,000 statements (``_control_sql.multi_statements``: asyncmy connects with ``CLIENT.MULTI_STATEMENTS``),
one round trip per chunk; the server runs and counts the same statements as one by one.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any, Mapping, Sequence

import asyncmy

from pytest_ormbench.suites._control_sql import MysqlControl, for_psycopg, multi_statements
from pytest_ormbench.suites._control_sql import encode_json as encode
from pytest_ormbench.arms.sql import AiosqliteArm as AsyncSqlArm
from pytest_ormbench.arms.notes import load_notes


NOTES = load_notes("pytest_ormbench.suites", "raw_asyncmy")


class RawAsyncmyArm(MysqlControl, AsyncSqlArm):
    name = "asyncmy"
    label = "raw asyncmy"
    driver = "asyncmy"
    packages = ("asyncmy",)
    database_notes = NOTES.database_notes

    conn: Any = None

    def __init__(self, model: Any, settings: Any) -> None:
        super().__init__(model, settings)
        self._by_level = for_psycopg(self.sql.by_level)
        self._page = for_psycopg(self.sql.page)
        self._by_id = for_psycopg(self.sql.by_id)

    # -- connection -----------------------------------------------------------
    async def open(self, path: Any) -> None:  # type: ignore[override]
        self.path = path
        self.conn = await asyncmy.connect(host=path.host, port=path.port, user=path.user,
                                          password=path.password or "", database=path.dbname, charset="utf8mb4",
                                          autocommit=True)

    async def close(self) -> None:  # type: ignore[override]
        if self.conn is not None:
            await self.conn.ensure_closed()
            self.conn = None

    async def _rows(self, sql: str, args: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        async with self.conn.cursor() as cur:
            await cur.execute(sql, args)
            return list(await cur.fetchall())

    async def server_rows(self, sql: str) -> list[tuple[Any, ...]]:
        return await self._rows(sql)

    async def _in_transaction(self, sql: str, rows: Sequence[Sequence[Any]], many: bool = False) -> None:
        """One transaction: ``sql`` once per row, through ``executemany`` with ``many`` (an INSERT: multi-row),
        else as multi-statement queries, every statement's result read before the next query."""
        c = self.conn
        await c.begin()
        async with c.cursor() as cur:
            if many:
                await cur.executemany(sql, rows)
            else:
                for text, args in multi_statements(sql, rows):
                    await cur.execute(text, args)
                    while await cur.nextset():
                        pass
        await c.commit()

    async def create_schema(self) -> None:  # type: ignore[override]
        async with self.conn.cursor() as cur:
            for stmt in self.sql.ddl():
                await cur.execute(stmt)

    async def insert_links(self, links: Sequence[tuple[int, int]]) -> None:  # type: ignore[override]
        await self._in_transaction(for_psycopg(self.sql.insert_link), links, many=True)

    def describe(self) -> dict[str, Any]:
        return {"asyncmy": importlib.metadata.version("asyncmy")}

    # -- objects ----------------------------------------------------------------
    async def load_all(self) -> list[dict[str, Any]]:  # type: ignore[override]
        names = self.model.field_names
        return [dict(zip(names, r)) for r in await self._rows(self.sql.all)]

    # -- operations -----------------------------------------------------------
    async def insert_single(self, objs: list[dict[str, Any]]) -> None:  # type: ignore[override]
        c, sql = self.conn, self._insert_sql(objs[0])
        async with c.cursor() as cur:
            for obj in objs:
                await c.begin()
                await cur.execute(sql, self._values(obj))
                obj["id"] = cur.lastrowid
                await c.commit()

    async def insert_batch(self, objs: list[dict[str, Any]]) -> None:  # type: ignore[override]
        c, sql = self.conn, self._insert_sql(objs[0])
        await c.begin()
        async with c.cursor() as cur:
            for obj in objs:
                await cur.execute(sql, self._values(obj))
                obj["id"] = cur.lastrowid
        await c.commit()

    async def insert_bulk(self, objs: list[dict[str, Any]]) -> None:  # type: ignore[override]
        await self._in_transaction(self._insert_sql(objs[0]), [self._values(o) for o in objs], many=True)

    async def filter_large(self, levels: Sequence[int]) -> list[Any]:  # type: ignore[override]
        out: list[Any] = []
        async with self.conn.cursor() as cur:
            for lv in levels:
                await cur.execute(self._by_level, (lv,))
                out.extend(await cur.fetchall())
        return out

    filter_tuples = filter_large

    async def filter_dicts(self, levels: Sequence[int]) -> list[dict[str, Any]]:  # type: ignore[override]
        names = self.model.field_names
        return [dict(zip(names, r)) for r in await self.filter_large(levels)]

    async def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[Any]:  # type: ignore[override]
        out: list[Any] = []
        async with self.conn.cursor() as cur:
            for lv, offset in pages:
                await cur.execute(self._page, (lv, limit, offset))
                out.extend(await cur.fetchall())
        return out

    async def get(self, ids: Sequence[int]) -> list[Any]:  # type: ignore[override]
        out: list[Any] = []
        async with self.conn.cursor() as cur:
            for i in ids:
                await cur.execute(self._by_id, (i,))
                out.append(await cur.fetchone())
        return out

    async def update_whole(self, objs: list[dict[str, Any]], values: Sequence[Mapping[str, Any]]) -> None:  # type: ignore[override]
        rest = self.sql.rest
        for obj, new in zip(objs, values):
            obj.update(new)
        await self._in_transaction(for_psycopg(self.sql.update_whole),
                                   [[encode(o[n]) for n in rest] + [o["id"]] for o in objs])

    async def update_partial(self, objs: list[dict[str, Any]], levels: Sequence[int]) -> None:  # type: ignore[override]
        for obj, lv in zip(objs, levels):
            obj["level"] = lv
        await self._in_transaction(for_psycopg(self.sql.update_level), [(o["level"], o["id"]) for o in objs])

    async def delete(self, objs: list[dict[str, Any]]) -> None:  # type: ignore[override]
        await self._in_transaction(for_psycopg(self.sql.delete), [(o["id"],) for o in objs])
