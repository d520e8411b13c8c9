"""Test 4's control on PostgreSQL through asyncpg: ``control_async``'s algorithms on the Tests 1-3 control's one
connection (outside a transaction between shapes).

asyncpg prepares every statement it runs (its statement cache) with ``$n`` placeholders; transactions are
``conn.transaction()`` (``BEGIN`` ... ``COMMIT``); ``executemany`` sends one statement's rows in a pipeline
(the links, the increment's UPDATEs, the upsert's ``INSERT ... ON CONFLICT``); an insert's id comes back with
``RETURNING id`` (``fetchval``). ``stream_comments`` iterates ``conn.cursor(..., prefetch=batch)`` inside a
transaction: a protocol-level portal fetched ``batch`` rows at a time.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Sequence

from pytest_ormbench.arms.relational import RelationalArm, StreamTotals, declared
from pytest_ormbench.suites.raw_asyncpg import RawAsyncpgArm
from pytest_ormbench.suites.relational.control_async import AsyncControl
from pytest_ormbench.suites.relational.control_sql import STREAM, schema


class RawAsyncpgRelational(AsyncControl, RelationalArm, RawAsyncpgArm):
    name = "asyncpg"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)
    db = "postgresql"
    paramstyle = "numeric"

    async def create_schema(self) -> None:  # type: ignore[override]
        async with self.conn.transaction():
            for statement in schema("postgresql"):
                await self.conn.execute(statement)

    async def q(self, text: str, params: Sequence[Any] = ()) -> Sequence[Sequence[Any]]:
        return await self.conn.fetch(self.render(text), *params)

    async def execute(self, text: str, params: Sequence[Any] = ()) -> None:
        await self.conn.execute(self.render(text), *params)

    async def executemany(self, text: str, rows: Sequence[Sequence[Any]]) -> None:
        await self.conn.executemany(self.render(text), rows)

    async def insert_returning_id(self, text: str, params: Sequence[Any]) -> int:
        return await self.conn.fetchval(self.render(text + " RETURNING id"), *params)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        async with self.conn.transaction():
            yield

    async def stream_comments(self, batch: int) -> Any:
        totals = StreamTotals()
        async with self.conn.transaction():
            async for r in self.conn.cursor(STREAM, prefetch=batch):
                totals.add(r[0], r[1])
        return totals.result()
