"""Test 4 on SQLModel (table models, SQLModel's ``AsyncSession.exec``): the shapes of
:mod:`.sa_family_rel_async` on the Tests 1-3 arm's engine (aiosqlite, asyncpg, asyncmy; one connection)."""

from __future__ import annotations

from pytest_ormbench.arms.relational import RelationalArm, declared
from pytest_ormbench.suites.relational.sa_family_rel_async import AsyncRelational
from pytest_ormbench.suites.sqlmodel_async_arm import SQLModelAsyncArm


class SQLModelAsyncRelational(AsyncRelational, RelationalArm, SQLModelAsyncArm):
    name = "sqlmodel_async"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)
