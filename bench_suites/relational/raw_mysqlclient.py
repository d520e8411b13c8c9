"""Test 4's control on MariaDB through mysqlclient (MySQLdb): the hand-written SQL of ``control_sql`` on the Tests
1-3 control's one connection (autocommit mode; each write shape's and the dashboard's transaction is
``begin()`` ... ``commit()``).

mysqlclient quotes parameters on the client. An insert's id is ``lastrowid``; ``executemany`` of an INSERT (the
links, the upsert's ``INSERT ... ON DUPLICATE KEY UPDATE``) sends one multi-row statement; the increment's one
UPDATE per post goes out as multi-statement queries (``_control_sql.multi_statements``, as the Tests 1-3
control's floor does: one round trip, the server still runs and counts one UPDATE per post).
``stream_comments`` reads through ``MySQLdb.cursors.SSCursor`` (unbuffered: rows come off the socket as
``fetchmany(batch)`` asks for them).
"""

from __future__ import annotations

from typing import Any, Sequence

import MySQLdb.cursors

from pytest_ormbench.arms.relational import RelationalArm, declared
from pytest_ormbench.suites._control_sql import multi_statements
from pytest_ormbench.suites.raw_mysqlclient import RawMysqlclientArm
from pytest_ormbench.suites.relational.control_sql import SyncControl, schema


class RawMysqlclientRelational(SyncControl, RelationalArm, RawMysqlclientArm):
    name = "mysqlclient"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)
    db = "mysql"
    paramstyle = "format"

    def connection(self) -> Any:
        return self.raw_connection()

    def begin(self) -> None:
        self.raw_connection().begin()

    def create_schema(self) -> None:
        with self.raw_connection().cursor() as cur:
            for statement in schema("mysql"):
                cur.execute(statement)

    def executemany(self, text: str, rows: Sequence[Sequence[Any]]) -> None:
        if text.startswith("INSERT"):
            return super().executemany(text, rows)
        with self.raw_connection().cursor() as cur:
            for query, args in multi_statements(self.render(text), rows):
                cur.execute(query, args)
                while cur.nextset():
                    pass

    def stream_cursor(self) -> Any:
        return self.raw_connection().cursor(MySQLdb.cursors.SSCursor)
