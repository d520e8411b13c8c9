"""SQLAlchemy ORM (2.x declarative), asyncio: AsyncSession on aiosqlite, or on PostgreSQL through
``postgresql+asyncpg``.

The same op shapes as the sync arm, awaited (:mod:`bench_suites._sqlalchemy_common`).
"""

from __future__ import annotations

from bench_suites._sqlalchemy_common import DEVIATIONS, AsyncOps, sa_flavor


class SQLAlchemyAsyncArm(AsyncOps):
    name = "sqlalchemy_async"
    label = "SA ORM async"
    packages = ("SQLAlchemy", "aiosqlite", "greenlet")
    flavor = sa_flavor()
    deviations = DEVIATIONS
    databases = ("sqlite", "postgresql", "mysql")
