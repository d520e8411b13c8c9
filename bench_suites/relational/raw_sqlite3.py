"""Test 4's control on SQLite: the hand-written SQL of ``control_sql`` on the raw sqlite3 connection."""

from __future__ import annotations

from typing import Any

from pytest_ormbench.arms.relational import RelationalArm, declared
from pytest_ormbench.suites.raw_sqlite3 import RawSqlite3Arm
from pytest_ormbench.suites.relational.control_sql import SyncControl, schema


class RawSqlite3Relational(SyncControl, RelationalArm, RawSqlite3Arm):
    name = "sqlite3"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)

    def connection(self) -> Any:
        return self.raw_connection()

    def commit(self) -> None:
        self.connection().execute("COMMIT")

    def create_schema(self) -> None:
        for statement in schema("sqlite"):
            self.raw_connection().execute(statement)
