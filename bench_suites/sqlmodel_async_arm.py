"""SQLModel, asyncio: SQLModel's AsyncSession on aiosqlite, or on PostgreSQL through ``postgresql+asyncpg``.

The same op shapes as the sync arm, awaited (:mod:`pytest_ormbench.suites.sqlalchemy_family`);
queries go through ``AsyncSession.exec``.
"""

from __future__ import annotations

from pytest_ormbench.suites.sqlalchemy_family.models import sqlmodel_flavor
from pytest_ormbench.suites.sqlalchemy_family.async_ import AsyncOps


class SQLModelAsyncArm(AsyncOps):
    name = "sqlmodel_async"
    label = "SQLModel async"
    packages = ("sqlmodel", "SQLAlchemy", "aiosqlite", "greenlet")
    flavor = sqlmodel_flavor()
    databases = ("sqlite", "postgresql", "mysql")

    @classmethod
    def session_class(cls) -> type:
        from sqlmodel.ext.asyncio.session import AsyncSession

        return AsyncSession
