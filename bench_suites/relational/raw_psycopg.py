"""Test 4's control on PostgreSQL through psycopg 3: the hand-written SQL of ``control_sql`` on the Tests 1-3
control's one connection (autocommit mode, so nothing is open between shapes).

Transactions are psycopg's ``conn.transaction()`` blocks (``BEGIN`` ... ``COMMIT``). As on Tests 1-3 the
control is the floor, so each write shape's transaction runs inside ``conn.pipeline()``: ``BEGIN``, the
statements and ``COMMIT`` go out without waiting for one another where no answer is needed before the next
statement (an insert's ``RETURNING id`` still waits for its row). ``executemany`` pipelines its rows anyway.
Reads are one query after another, except the dashboard's ``pipelined`` strategy: its five queries in one
``conn.pipeline()`` (libpq's pipeline mode) inside one read transaction, every answer fetched after all five
went out. ``stream_comments`` reads through a named (server-side) cursor inside a transaction, ``fetchmany``
of ``batch`` rows (``FETCH FORWARD``).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from pytest_ormbench.arms.relational import RelationalArm, declared
from pytest_ormbench.suites.raw_psycopg import RawPsycopgArm
from pytest_ormbench.suites.relational.control_sql import (DASHBOARD, STREAM, SyncControl, dashboard_result, drain,
    schema)


class RawPsycopgRelational(SyncControl, RelationalArm, RawPsycopgArm):
    name = "psycopg"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)
    db = "postgresql"
    paramstyle = "format"

    def connection(self) -> Any:
        return self.raw_connection()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.raw_connection().transaction():
            yield

    @contextmanager
    def write_transaction(self) -> Iterator[None]:
        conn = self.raw_connection()
        with conn.pipeline(), conn.transaction():
            yield

    def create_schema(self) -> None:
        conn = self.raw_connection()
        with conn.transaction():
            for statement in schema("postgresql"):
                conn.execute(statement)

    def insert_returning_id(self, text: str, params: Sequence[Any]) -> int:
        cur = self.raw_connection().cursor()
        cur.execute(self.render(text + " RETURNING id"), params)
        new_id = cur.fetchone()[0]  # type: ignore[index]
        cur.close()
        return new_id

    def stream_comments(self, batch: int) -> Any:
        conn = self.raw_connection()
        with conn.transaction(), conn.cursor(name="rel_stream_comments") as cur:
            cur.execute(STREAM)
            return drain(cur, batch)

    def dashboard(self, strategy: str, repeats: int) -> Any:
        if strategy != "pipelined":
            return super().dashboard(strategy, repeats)
        conn = self.raw_connection()
        out = []
        for _ in range(repeats):
            with conn.pipeline(), conn.transaction():
                cursors = [conn.execute(text) for text in DASHBOARD]
                answers = [cur.fetchall() for cur in cursors]
            out.append(dashboard_result(answers))
        return out
