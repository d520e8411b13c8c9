"""SQLAlchemy ORM (2.x declarative), asyncio: AsyncSession on aiosqlite, or on PostgreSQL through
``postgresql+asyncpg``.

The same op shapes as the sync arm, awaited (:mod:`pytest_ormbench.suites.sqlalchemy_family`).
"""

from __future__ import annotations

from pytest_ormbench.suites.sqlalchemy_family.models import sa_flavor
from pytest_ormbench.suites.sqlalchemy_family.async_ import AsyncOps


class SQLAlchemyAsyncArm(AsyncOps):
    name = "sqlalchemy_async"
    label = "SA ORM async"
    packages = ("SQLAlchemy", "aiosqlite", "greenlet")
    flavor = sa_flavor()
    databases = ("sqlite", "postgresql", "mysql")
