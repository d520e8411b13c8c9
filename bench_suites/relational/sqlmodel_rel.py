"""Test 4 on SQLModel (table models, sync ``Session.exec``): the shapes of :mod:`.sa_family_rel` on the
Tests 1-3 arm's engine (pysqlite, psycopg 3, mysqlclient; one connection)."""

from __future__ import annotations

from pytest_ormbench.arms.relational import RelationalArm, declared
from pytest_ormbench.suites.relational.sa_family_rel import SyncRelational
from pytest_ormbench.suites.sqlmodel_arm import SQLModelArm


class SQLModelRelational(SyncRelational, RelationalArm, SQLModelArm):
    name = "sqlmodel"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)
