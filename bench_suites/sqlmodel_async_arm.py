"""SQLModel, asyncio: SQLModel's AsyncSession on aiosqlite, or on PostgreSQL through ``postgresql+asyncpg``.

The same op shapes as the sync arm, awaited (:mod:`bench_suites._sqlalchemy_common`);
queries go through ``AsyncSession.exec``.
"""

from __future__ import annotations

from bench_suites._sqlalchemy_common import DEVIATIONS, AsyncOps, sqlmodel_flavor


class SQLModelAsyncArm(AsyncOps):
    name = "sqlmodel_async"
    label = "SQLModel async"
    packages = ("sqlmodel", "SQLAlchemy", "aiosqlite", "greenlet")
    flavor = sqlmodel_flavor()
    deviations = DEVIATIONS
    databases = ("sqlite", "postgresql", "mysql")

    @classmethod
    def session_class(cls) -> type:
        from sqlmodel.ext.asyncio.session import AsyncSession

        return AsyncSession
