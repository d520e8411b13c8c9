"""Test 4 on SQLAlchemy ORM 2.x (declarative, sync ``Session``): the shapes of :mod:`.sa_family_rel` on the
Tests 1-3 arm's engine (pysqlite, psycopg 3, mysqlclient; one connection)."""

from __future__ import annotations

from pytest_ormbench.arms.relational import RelationalArm, declared
from pytest_ormbench.suites.relational.sa_family_rel import SyncRelational
from pytest_ormbench.suites.sqlalchemy_arm import SQLAlchemyArm


class SQLAlchemyRelational(SyncRelational, RelationalArm, SQLAlchemyArm):
    name = "sqlalchemy"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)
