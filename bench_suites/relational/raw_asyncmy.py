"""Test 4's control on MariaDB through asyncmy: ``control_async``'s algorithms on the Tests 1-3 control's one
connection (autocommit mode; each write shape's and the dashboard's transaction is ``begin()`` ... ``commit()``).

asyncmy quotes parameters on the client (``%s``). An insert's id is the cursor's ``lastrowid``; ``executemany``
of an INSERT (the links, the upsert's ``INSERT ... ON DUPLICATE KEY UPDATE``) sends one multi-row statement; the
increment's one UPDATE per post goes out as multi-statement queries (``_control_sql.multi_statements``, as the
Tests 1-3 control's floor does: the server still runs and counts one UPDATE per post). ``stream_comments``
reads through ``asyncmy.cursors.SSCursor`` (unbuffered), ``fetchmany(batch)`` at a time.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Sequence

from asyncmy.cursors import SSCursor

from pytest_ormbench.arms.relational import RelationalArm, StreamTotals, declared
from pytest_ormbench.suites._control_sql import multi_statements
from pytest_ormbench.suites.raw_asyncmy import RawAsyncmyArm
from pytest_ormbench.suites.relational.control_async import AsyncControl
from pytest_ormbench.suites.relational.control_sql import STREAM, schema


class RawAsyncmyRelational(AsyncControl, RelationalArm, RawAsyncmyArm):
    name = "asyncmy"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)
    db = "mysql"
    paramstyle = "format"

    async def create_schema(self) -> None:  # type: ignore[override]
        async with self.conn.cursor() as cur:
            for statement in schema("mysql"):
                await cur.execute(statement)

    async def q(self, text: str, params: Sequence[Any] = ()) -> Sequence[Sequence[Any]]:
        async with self.conn.cursor() as cur:
            await cur.execute(self.render(text), params or None)
            return await cur.fetchall()

    async def execute(self, text: str, params: Sequence[Any] = ()) -> None:
        async with self.conn.cursor() as cur:
            await cur.execute(self.render(text), params or None)

    async def executemany(self, text: str, rows: Sequence[Sequence[Any]]) -> None:
        async with self.conn.cursor() as cur:
            if text.startswith("INSERT"):
                await cur.executemany(self.render(text), rows)
                return
            for query, args in multi_statements(self.render(text), rows):
                await cur.execute(query, args)
                while await cur.nextset():
                    pass

    async def insert_returning_id(self, text: str, params: Sequence[Any]) -> int:
        async with self.conn.cursor() as cur:
            await cur.execute(self.render(text), params)
            return cur.lastrowid

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        await self.conn.begin()
        yield
        await self.conn.commit()

    async def stream_comments(self, batch: int) -> Any:
        totals = StreamTotals()
        async with self.conn.cursor(SSCursor) as cur:
            await cur.execute(STREAM)
            while True:
                rows = await cur.fetchmany(batch)
                if not rows:
                    break
                for r in rows:
                    totals.add(r[0], r[1])
        return totals.result()
