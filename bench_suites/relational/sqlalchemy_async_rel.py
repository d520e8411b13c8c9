"""Test 4 on SQLAlchemy ORM 2.x (declarative, ``AsyncSession``): the shapes of :mod:`.sa_family_rel_async` on the
Tests 1-3 arm's engine (aiosqlite, asyncpg, asyncmy; one connection)."""

from __future__ import annotations

from pytest_ormbench.arms.relational import RelationalArm, declared
from pytest_ormbench.suites.relational.sa_family_rel_async import AsyncRelational
from pytest_ormbench.suites.sqlalchemy_async_arm import SQLAlchemyAsyncArm


class SQLAlchemyAsyncRelational(AsyncRelational, RelationalArm, SQLAlchemyAsyncArm):
    name = "sqlalchemy_async"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)
