"""The async SQLAlchemy-family arms' op bodies (``AsyncSession``: aiosqlite, asyncpg, asyncmy)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Mapping, Sequence

from sqlalchemy import insert
from sqlalchemy.pool import StaticPool

from pytest_ormbench.suites.sqlalchemy_family.base import _SABase
from pytest_ormbench.suites.sqlalchemy_family.engine import SERVER_POOL, OneConnection, server_url
from pytest_ormbench.arms.helpers import assign_all
from pytest_ormbench.arms.sql import AiosqliteArm


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
    #: an engine and session per instance, held by the instance on the process's one event loop (no context
    #: variable); the mapped classes bind to no database (as SyncOps)
    independent_sessions = True

    async def open_sqlite(self, path: Path) -> None:
        self._open(self.dialect.url(path, "sqlite+aiosqlite"), poolclass=StaticPool)

    async def open_postgresql(self, location: Any) -> None:
        self._open(server_url(location, True), **SERVER_POOL)  # asyncpg

    async def open_mysql(self, location: Any) -> None:
        self._open(server_url(location, True), **SERVER_POOL)  # asyncmy, utf8mb4

    def _open(self, url: str, **pool: Any) -> None:
        """The engine on ``url``, held to one connection (``pool``: the database's pool of one)."""
        from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

        self._setup_models()
        self._conn = OneConnection(self.settings, server=self.dialect.server)
        self.engine = create_async_engine(url, **pool)
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
