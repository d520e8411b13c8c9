"""The helpers arms share (pytest_ormbench.arms.helpers, pytest_ormbench.arms.sql)."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, AsyncIterator

import pytest

from pytest_ormbench.arms.helpers import assign, assign_all, slices
from pytest_ormbench.workload.spec import MODELS, Settings
from pytest_ormbench.arms.sql import (AiosqliteArm, SqlTables, apply_pragmas, chunked, expected_pragmas,
    pragma_connection_class, pragma_pairs, pragma_statements, read_pragmas, rows_per_statement, tables_for,
    variable_limit)

SETTINGS = [Settings(), Settings(journal_mode="wal", synchronous="normal"), Settings(synchronous="off",
                                                                                    foreign_keys=False)]


def test_assign_sets_each_value_and_returns_the_object() -> None:
    obj = SimpleNamespace(level=10, text="a")
    assert assign(obj, {"level": 20, "text": "b"}) is obj
    assert (obj.level, obj.text) == (20, "b")
    objs = [SimpleNamespace(level=1), SimpleNamespace(level=2)]
    assign_all(objs, [{"level": 3}, {"level": 4, "text": "t"}])
    assert [vars(o) for o in objs] == [{"level": 3}, {"level": 4, "text": "t"}]


def test_slices_cover_the_sequence_in_order() -> None:
    assert list(slices([1, 2, 3, 4, 5], 2)) == [[1, 2], [3, 4], [5]]
    assert list(slices([1, 2], 0)) == [[1], [2]]  # at least one per slice
    assert list(slices([], 3)) == []


def test_tables_for_a_model() -> None:
    assert tables_for(MODELS["simple"], "journal_simple") == SqlTables("journal_simple")
    assert tables_for(MODELS["wide"], "w", "ignored") == SqlTables("w")
    assert tables_for(MODELS["fk"], "journal_fk") == SqlTables("journal_fk", "journal_fk_links", "from_id", "to_id")
    assert tables_for(MODELS["fk"], "m", "l", "a", "b") == SqlTables("m", "l", "a", "b")


def test_bound_variable_chunking_reads_the_live_limit() -> None:
    conn = sqlite3.connect(":memory:")
    try:
        assert variable_limit(conn) == variable_limit() == conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 10)
        assert variable_limit(conn) == 10
        assert rows_per_statement(conn, 3) == rows_per_statement(10, 3) == 3
        assert rows_per_statement(10, 40) == 1
        rows = list(range(7))
        assert list(chunked(rows, 3, conn)) == [[0, 1, 2], [3, 4, 5], [6]]
        # every chunk really fits one statement on that connection
        conn.execute("CREATE TABLE t (a, b, c)")
        for chunk in chunked([(i, i, i) for i in range(7)], 3, conn):
            values = ", ".join("(?, ?, ?)" for _ in chunk)
            conn.execute(f"INSERT INTO t VALUES {values}", [v for row in chunk for v in row])
        assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 7
    finally:
        conn.close()


@pytest.mark.parametrize("settings", SETTINGS)
def test_pragmas_in_every_shape_agree(tmp_path: Path, settings: Settings) -> None:
    pairs = pragma_pairs(settings)
    assert pragma_statements(settings) == [f"PRAGMA {k}={v}" for k, v in pairs]
    conn = sqlite3.connect(tmp_path / "a.db")
    try:
        apply_pragmas(conn, settings)
        assert read_pragmas(conn) == expected_pragmas(settings)
    finally:
        conn.close()
    conn = sqlite3.connect(tmp_path / "b.db", factory=pragma_connection_class(settings))
    try:
        assert read_pragmas(conn) == expected_pragmas(settings)
        conn.row_factory = lambda cur, row: {d[0]: v for d, v in zip(cur.description, row)}  # dict rows too
        assert read_pragmas(conn) == expected_pragmas(settings)
    finally:
        conn.close()


def test_an_exclusive_lock_kept_between_transactions_fails_the_settings_check(tmp_path: Path) -> None:
    """SQLite's exclusive locking mode spares reads their locking and counts only a lock's first commit in the file
    change counter (which the commit checks, and the skipped read-back after a read, rely on): not allowed."""
    from pytest_ormbench.arms.sql import file_change_counter
    from pytest_ormbench.measuring.verify import VerificationError, check_pragmas

    path = tmp_path / "x.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        apply_pragmas(conn, Settings())
        conn.execute("CREATE TABLE t (v)")
        before = file_change_counter(path)
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("INSERT INTO t VALUES (2)")
        assert file_change_counter(path) == before + 2  # normal locking: every commit counted
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        with pytest.raises(VerificationError, match="locking_mode=exclusive"):
            check_pragmas(read_pragmas(conn), expected_pragmas(Settings()))
        before = file_change_counter(path)
        for v in range(3):
            conn.execute("INSERT INTO t VALUES (?)", (v,))
        assert file_change_counter(path) == before + 1  # exclusive: the lock's first commit only
    finally:
        conn.close()


def test_aiosqlite_arm_reads_pragmas_and_restores_in_the_connection_thread(tmp_path: Path) -> None:
    aiosqlite = pytest.importorskip("aiosqlite")
    template = tmp_path / "template.db"
    with sqlite3.connect(template) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        conn.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
    conn.close()
    settings = Settings(journal_mode="wal", synchronous="normal")
    calls: list[str] = []

    class Probe(AiosqliteArm):
        name = "probe"

        async def open(self, path: Path) -> None:
            self.path = path
            self.conn = await aiosqlite.connect(str(path))
            await self.conn.execute("SELECT 1")
            for stmt in pragma_statements(self.settings):
                await (await self.conn.execute(stmt)).fetchall()

        @asynccontextmanager
        async def aiosqlite_connection(self) -> AsyncIterator[Any]:
            yield self.conn

        async def before_restore(self) -> None:
            calls.append("before")

        def after_restore(self) -> None:
            calls.append("after")

        async def close(self) -> None:
            await self.conn.close()

        def create_schema(self) -> None: ...
        def build(self, rows: Any) -> list[Any]: return []
        def load_all(self) -> list[Any]: return []

    async def scenario() -> None:
        arm = Probe(MODELS["simple"], settings)
        await arm.open(tmp_path / "live.db")
        try:
            assert await arm.pragmas() == expected_pragmas(settings)
            live = arm.conn
            await arm.restore(template)
            assert arm.conn is live and calls == ["before", "after"]
            rows = await (await live.execute("SELECT id FROM t ORDER BY id")).fetchall()
            assert [r[0] for r in rows] == [1, 2]
            with pytest.raises(TypeError):
                arm.raw_connection()
        finally:
            await arm.close()

    asyncio.run(scenario())
