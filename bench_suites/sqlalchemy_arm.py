"""SQLAlchemy ORM (2.x declarative), sync, on sqlite3 through the pysqlite dialect, or on PostgreSQL
through ``postgresql+psycopg`` (psycopg 3).

The models, engine set-up and op bodies are shared with the other
SQLAlchemy-family arms in :mod:`pytest_ormbench.suites.sqlalchemy_family`.
"""

from __future__ import annotations

from pytest_ormbench.suites.sqlalchemy_family.models import sa_flavor
from pytest_ormbench.suites.sqlalchemy_family.sync import SyncOps


class SQLAlchemyArm(SyncOps):
    name = "sqlalchemy"
    label = "SA ORM"
    packages = ("SQLAlchemy",)
    flavor = sa_flavor()
    databases = ("sqlite", "postgresql", "mysql")
