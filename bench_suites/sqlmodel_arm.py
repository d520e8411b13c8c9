"""SQLModel (table models on SQLAlchemy), sync, on sqlite3 through the pysqlite dialect, or on
PostgreSQL through ``postgresql+psycopg`` (psycopg 3).

Shares the engine set-up and op bodies with the SQLAlchemy arms
(:mod:`pytest_ormbench.suites.sqlalchemy_family`); queries go through ``Session.exec``.
"""

from __future__ import annotations

from pytest_ormbench.suites.sqlalchemy_family.models import sqlmodel_flavor
from pytest_ormbench.suites.sqlalchemy_family.sync import SyncOps


class SQLModelArm(SyncOps):
    name = "sqlmodel"
    label = "SQLModel"
    packages = ("sqlmodel", "SQLAlchemy")
    flavor = sqlmodel_flavor()
    databases = ("sqlite", "postgresql", "mysql")

    @classmethod
    def session_class(cls) -> type:
        from sqlmodel import Session

        return Session
