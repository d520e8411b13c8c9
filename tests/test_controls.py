"""The control arms are the floor: each op that writes sends its statements the fastest way its driver allows,
one statement per row as the op defines it (docs/operations.md), and the database ends up where it should.

sqlite3 runs here always; psycopg and asyncpg on a throwaway PostgreSQL server, mysqlclient and asyncmy on a
throwaway MariaDB (each skipped where its server or driver is missing).
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import server_helpers
from pytest_ormbench.arms.contract import MODELS, Settings
from pytest_ormbench.suites import _control_sql
from pytest_ormbench.suites._control_sql import multi_statements
from pytest_ormbench.workload.plan import State

N = 30  # rows in the starting state


def _run(result: Any) -> Any:
    return asyncio.get_event_loop().run_until_complete(result) if inspect.isawaitable(result) else result


@pytest.fixture
def loop() -> Iterator[None]:
    """One event loop for a test's async arm (open, ops and close must share it)."""
    new = asyncio.new_event_loop()
    asyncio.set_event_loop(new)
    try:
        yield
    finally:
        asyncio.set_event_loop(None)
        new.close()


def test_multi_statements_joins_one_statement_per_row_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_control_sql, "MULTI_ROWS", 2)
    got = multi_statements("DELETE FROM t WHERE id = %s", [(1,), (2,), (3,)])
    assert got == [("DELETE FROM t WHERE id = %s;DELETE FROM t WHERE id = %s", [1, 2]),
                   ("DELETE FROM t WHERE id = %s", [3])]
    assert multi_statements("UPDATE t SET a = %s WHERE id = %s", []) == []


def _check_writes(arm: Any, rows: Callable[[], list[tuple]], spy: dict[str, int], per_op: dict[str, int]) -> None:
    """I, J then K over every row, each op's driver calls in ``spy`` compared with ``per_op`` (reset per op),
    and the rows read back after each."""
    objs = [dict(r) for r in _run(arm.load_all())]
    new = [{"level": 10 + i % 5 * 10, "text": f"new {i}"} for i in range(len(objs))]
    spy.clear()
    _run(arm.update_whole(objs, new))
    assert spy == per_op, ("update_whole", spy)
    assert [(r[0], r[1], r[2]) for r in rows()] == [(o["id"], v["level"], v["text"]) for o, v in zip(objs, new)]
    spy.clear()
    _run(arm.update_partial(objs, [50] * len(objs)))
    assert spy == per_op, ("update_partial", spy)
    assert {r[1] for r in rows()} == {50}
    spy.clear()
    _run(arm.delete(objs))
    assert spy == per_op, ("delete", spy)
    assert rows() == []


def _counting(monkeypatch: pytest.MonkeyPatch, spy: dict[str, int], cls: Any, *names: str) -> None:
    """Count the calls of ``cls.<name>`` in ``spy`` under ``<cls name>.<name>``."""
    for name in names:
        original = getattr(cls, name)

        def wrapper(*args: Any, __name: str = f"{cls.__name__}.{name}", __orig: Any = original, **kw: Any) -> Any:
            spy[__name] = spy.get(__name, 0) + 1
            return __orig(*args, **kw)

        monkeypatch.setattr(cls, name, wrapper)


def _in_pipeline(monkeypatch: pytest.MonkeyPatch, spy: dict[str, int], name: str) -> None:
    """Count under "in a pipeline" the calls of psycopg's ``Cursor.<name>`` made inside a pipeline whose
    transaction has begun (its BEGIN queued in the same pipeline)."""
    import psycopg

    original = getattr(psycopg.Cursor, name)

    def wrapper(self: Any, *args: Any, **kw: Any) -> Any:
        conn = self.connection
        if conn._pipeline is not None and conn._num_transactions:
            spy["in a pipeline"] = spy.get("in a pipeline", 0) + 1
        return original(self, *args, **kw)

    monkeypatch.setattr(psycopg.Cursor, name, wrapper)


class _CountingSqlite:
    """A sqlite3 connection that counts ``execute`` and ``executemany`` (the C type's methods cannot be patched)."""

    def __init__(self, conn: Any, spy: dict[str, int]) -> None:
        self._conn, self._spy = conn, spy

    def execute(self, sql: str, *args: Any) -> Any:
        self._spy[f"execute {sql.split()[0]}"] = self._spy.get(f"execute {sql.split()[0]}", 0) + 1
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, rows: Any) -> Any:
        self._spy["executemany"] = self._spy.get("executemany", 0) + 1
        return self._conn.executemany(sql, rows)


def test_sqlite3_control_writes_each_statement_over_its_rows_with_executemany(tmp_path: Path) -> None:
    from pytest_ormbench.suites.raw_sqlite3 import RawSqlite3Arm

    arm = RawSqlite3Arm(MODELS["wide"], Settings())
    arm.open(tmp_path / "db.sqlite")
    try:
        arm.create_schema()
        arm.populate(State(MODELS["wide"], N).rows(), [])
        conn, spy = arm.conn, {}
        arm.conn = _CountingSqlite(conn, spy)  # type: ignore[assignment]
        _check_writes(arm, lambda: conn.execute(f"SELECT id, level, text FROM {arm.table} ORDER BY id").fetchall(),
                      spy, {"execute BEGIN": 1, "executemany": 1, "execute COMMIT": 1})
    finally:
        arm.conn = conn
        arm.close()


@pytest.fixture(scope="module")
def pg_server() -> Iterator[Any]:
    with server_helpers.started("postgresql", "asyncpg") as srv:
        yield srv


_SETVAL = "SELECT setval(pg_get_serial_sequence('{t}', 'id'), (SELECT max(id) FROM {t}))"


def _on_pg(tmp_path: Path, server: Any) -> Any:
    return server_helpers.on_server("postgresql", tmp_path, server=server)


def test_psycopg_control_pipelines_its_writes(tmp_path: Path, pg_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg
    from pytest_ormbench.suites.raw_psycopg import RawPsycopgArm

    with _on_pg(tmp_path, pg_server) as (db, _):
        loc = server_helpers.new_template(db, tmp_path, "simple")
        arm = RawPsycopgArm(MODELS["simple"], Settings())
        arm.open(loc)
        try:
            arm.create_schema()
            arm.populate(State(MODELS["simple"], N).rows(), [])
            arm.conn.execute(_SETVAL.format(t=arm.sql.table))  # as finish_template does
            spy: dict[str, int] = {}
            _counting(monkeypatch, spy, psycopg.Connection, "execute")
            _counting(monkeypatch, spy, psycopg.Cursor, "execute", "executemany")
            for name in ("execute", "executemany"):  # ... in the op's one pipeline, BEGIN sent in it too
                _in_pipeline(monkeypatch, spy, name)
            # B: one pipelined executemany with RETURNING, and every row gets its id
            objs = arm.build(State(MODELS["simple"], N + 5).rows()[N:])
            for o in objs:
                o["id"] = None
            arm.insert_batch(objs)
            assert spy == {"Cursor.executemany": 1, "in a pipeline": 1}, spy
            assert [o["id"] for o in objs] == list(range(N + 1, N + 6))
            # A: one pipeline for the op, each row its own transaction, its id back
            spy.clear()
            more = arm.build(State(MODELS["simple"], N + 8).rows()[N + 5:])
            for o in more:
                o["id"] = None
            arm.insert_single(more)
            assert spy == {"Cursor.execute": 3, "in a pipeline": 3}, spy
            assert [o["id"] for o in more] == list(range(N + 6, N + 9))
            assert db._conn(loc).execute(f"SELECT count(*) FROM {arm.sql.table}").fetchone() == (N + 8,)
            # I, J, K: BEGIN, every row's statement and COMMIT in one pipeline, no statement sent alone
            _check_writes(arm, lambda: db._conn(loc).execute(
                f"SELECT id, level, text FROM {arm.sql.table} ORDER BY id").fetchall(),
                spy, {"Cursor.executemany": 1, "in a pipeline": 1})
        finally:
            arm.close()


def test_asyncpg_control_sends_its_rows_with_executemany(tmp_path: Path, pg_server: Any, loop: None,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("asyncpg") is None:
        pytest.skip("asyncpg is not installed")
    import asyncpg
    from pytest_ormbench.suites.raw_asyncpg import RawAsyncpgArm

    with _on_pg(tmp_path, pg_server) as (db, _):
        loc = server_helpers.new_template(db, tmp_path, "simple")
        arm = RawAsyncpgArm(MODELS["simple"], Settings())
        _run(arm.open(loc))
        try:
            _run(arm.create_schema())
            _run(arm.populate(State(MODELS["simple"], N).rows(), []))
            _run(arm.conn.execute(_SETVAL.format(t=arm.sql.table)))  # as finish_template does
            spy: dict[str, int] = {}
            _counting(monkeypatch, spy, asyncpg.connection.Connection, "execute", "executemany", "fetchmany",
                      "fetchval")
            objs = arm.build(State(MODELS["simple"], N + 5).rows()[N:])
            for o in objs:
                o["id"] = None
            _run(arm.insert_batch(objs))
            assert spy == {"Connection.execute": 2, "Connection.fetchmany": 1}, spy  # BEGIN, the rows, COMMIT
            assert [o["id"] for o in objs] == list(range(N + 1, N + 6))
            _check_writes(arm, lambda: db._conn(loc).execute(
                f"SELECT id, level, text FROM {arm.sql.table} ORDER BY id").fetchall(),
                spy, {"Connection.execute": 2, "Connection.executemany": 1})
        finally:
            _run(arm.close())


@pytest.mark.parametrize("driver", ["mysqlclient", "asyncmy"])
def test_mysql_controls_send_updates_and_deletes_as_multi_statement_queries(
        driver: str, tmp_path: Path, loop: None, monkeypatch: pytest.MonkeyPatch) -> None:
    module = {"mysqlclient": "MySQLdb", "asyncmy": "asyncmy"}[driver]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{driver} is not installed")
    monkeypatch.setattr(_control_sql, "MULTI_ROWS", 7)  # N rows: five queries
    if driver == "mysqlclient":
        import MySQLdb.cursors
        from pytest_ormbench.suites.raw_mysqlclient import RawMysqlclientArm as Arm
        cursor_cls = MySQLdb.cursors.Cursor
    else:
        import asyncmy.cursors
        from pytest_ormbench.suites.raw_asyncmy import RawAsyncmyArm as Arm
        cursor_cls = asyncmy.cursors.Cursor
    with server_helpers.empty_database("mysql", tmp_path, module) as (db, loc):
        arm = Arm(MODELS["simple"], Settings())
        _run(arm.open(loc))
        try:
            _run(arm.create_schema())
            _run(arm.populate(State(MODELS["simple"], N).rows(), []))
            spy: dict[str, int] = {}
            if driver == "mysqlclient":
                _counting(monkeypatch, spy, cursor_cls, "execute")
            else:  # a Cython type: count through the connection's cursor() instead
                original = arm.conn.cursor

                class Counting:
                    def __init__(self, cur: Any) -> None:
                        self._cur = cur

                    async def __aenter__(self) -> Any:
                        return self

                    async def __aexit__(self, *exc: Any) -> None:
                        await self._cur.close()

                    async def execute(self, *args: Any) -> Any:
                        spy["Cursor.execute"] = spy.get("Cursor.execute", 0) + 1
                        return await self._cur.execute(*args)

                    def __getattr__(self, name: str) -> Any:
                        return getattr(self._cur, name)

                arm.conn.cursor = lambda: Counting(original())
            table = arm.sql.table

            def rows() -> list[tuple]:
                with db._conn(loc).cursor() as cur:
                    cur.execute(f"SELECT id, level, text FROM {table} ORDER BY id")
                    return list(cur.fetchall())

            _check_writes(arm, rows, spy, {"Cursor.execute": 5})
        finally:
            _run(arm.close())
