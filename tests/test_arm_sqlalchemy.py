"""The four SQLAlchemy-family arms: their Test 2 relations are real ORM relations
(self FK both ways, directed many-to-many both ways), SQLite does the ON DELETE
(SET NULL for children, CASCADE for links) with nothing related loaded, and the
pragmas read back from the one live connection are the asked ones. On PostgreSQL
(a throwaway server, where its binaries are installed): the same relations with the
server doing the ON DELETE, the durability read back on the arm's one connection,
no transaction left open after an op or a read-back, and the column types
(double precision, numeric(10,2), jsonb, timestamp without time zone).

(Their selfchecks run from tests/test_arms.py once they are in BUILTIN_ARMS.)
Everything runs in a subprocess, so that no other arm's process-wide state (sqlite3
adapters, event loops) leaks in or out.
"""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path
from typing import Iterator

import pytest
from conftest import run_isolated


ARMS = {
    "sqlalchemy": ("pytest_ormbench.suites.sqlalchemy_arm:SQLAlchemyArm", ("sqlalchemy",)),
    "sqlalchemy_async": ("pytest_ormbench.suites.sqlalchemy_async_arm:SQLAlchemyAsyncArm",
                         ("sqlalchemy", "aiosqlite", "greenlet")),
    "sqlmodel": ("pytest_ormbench.suites.sqlmodel_arm:SQLModelArm", ("sqlmodel",)),
    "sqlmodel_async": ("pytest_ormbench.suites.sqlmodel_async_arm:SQLModelAsyncArm",
                       ("sqlmodel", "aiosqlite", "greenlet")),
}


def _needs(name: str) -> str:
    target, mods = ARMS[name]
    for mod in mods:
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed")
    return target




RELATIONS = textwrap.dedent(
    """
    import asyncio, datetime as dt, importlib, sys
    from pathlib import Path
    from pytest_ormbench.arms.contract import MODELS, Settings
    from pytest_ormbench.measuring.timing import drive
    from pytest_ormbench.arms.sql import expected_pragmas, open_handles

    target, db = sys.argv[1], Path(sys.argv[2])
    module, _, name = target.partition(":")
    Arm = getattr(importlib.import_module(module), name)
    settings = Settings(journal_mode="delete", synchronous="normal")
    arm = Arm(MODELS["fk"], settings)
    drive(arm.open(db))

    def check(s):
        M = arm.M
        root = s.get(M, 1)
        assert sorted(c.id for c in root.children) == [2, 3]          # reverse FK
        assert s.get(M, 2).parent is root                                # self FK
        assert sorted(j.id for j in s.get(M, 3).links_to) == [1, 2]     # directed m2m, forward
        assert sorted(j.id for j in root.links_from) == [2, 3]          # and reverse
        assert list(root.links_to) == []

    def kill(s):  # a fresh session: nothing related is loaded, SQLite must do ON DELETE
        s.delete(s.get(arm.M, 1))
        s.commit()

    try:
        drive(arm.create_schema())
        assert drive(arm.pragmas()) == expected_pragmas(settings), drive(arm.pragmas())
        t = dt.datetime(2026, 1, 1)
        rows = [{"id": i, "timestamp": t, "level": 10, "text": f"r{i}", "parent_id": 1 if i > 1 else None}
                for i in (1, 2, 3)]
        drive(arm.populate(rows, [(2, 1), (3, 1), (3, 2)]))
        if arm.is_async:
            async def run(fn):
                async with arm.Session() as s:
                    await s.run_sync(fn)
            drive(run(check))
            drive(run(kill))
        else:
            for fn in (check, kill):
                with arm.Session() as s:
                    fn(s)
        assert open_handles(db) in (None, 1)
        snap = arm.snapshot()
        assert snap.rows[2]["parent_id"] is None and snap.rows[3]["parent_id"] is None  # ON DELETE SET NULL
        assert snap.links == {(3, 2)}                                    # ON DELETE CASCADE on the links
        assert drive(arm.pragmas()) == expected_pragmas(settings)
    finally:
        drive(arm.close())
    print("relations ok")
    """
)


@pytest.mark.parametrize("name", list(ARMS))
def test_relations_and_pragmas(name: str, tmp_path: Path) -> None:
    target = _needs(name)
    proc = run_isolated("-c", RELATIONS, target, str(tmp_path / "rel.db"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "relations ok" in proc.stdout


# -- PostgreSQL ------------------------------------------------------------------------------------

PG_RELATIONS = textwrap.dedent(
    """
    import datetime as dt, importlib, sys
    from pathlib import Path
    import psycopg
    from pytest_ormbench.arms.contract import MODELS, Settings
    from pytest_ormbench.backends.postgresql import HARNESS_APP, PostgresDatabase
    from pytest_ormbench.measuring.timing import drive

    target, driver, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    module, _, name = target.partition(":")
    Arm = getattr(importlib.import_module(module), name)
    database = PostgresDatabase()
    settings = Settings()
    loc = database.location(work, "rel")
    database.create_empty(loc)

    def watch(sql, *params):
        with psycopg.connect(loc.conninfo(), autocommit=True, application_name=HARNESS_APP) as c:
            return c.execute(sql, params).fetchall()

    def states():  # the state of every connection of the arm: one, and never "idle in transaction"
        return [r[0] for r in watch("SELECT state FROM pg_stat_activity WHERE datname = %s "
                                    "AND backend_type = 'client backend' AND application_name <> %s",
                                    loc.dbname, HARNESS_APP)]

    arm = Arm(MODELS["fk"], settings)
    mod = importlib.import_module(driver)
    assert arm.describe()["postgresql_driver"] == f"{driver} {mod.__version__}", arm.describe()
    drive(arm.open(loc))

    def check(s):
        M = arm.M
        root = s.get(M, 1)
        assert sorted(c.id for c in root.children) == [2, 3]          # reverse FK
        assert s.get(M, 2).parent is root                                # self FK
        assert sorted(j.id for j in s.get(M, 3).links_to) == [1, 2]     # directed m2m, forward
        assert sorted(j.id for j in root.links_from) == [2, 3]          # and reverse
        assert list(root.links_to) == []

    def kill(s):  # a fresh session: nothing related is loaded, the server must do ON DELETE
        s.delete(s.get(arm.M, 1))
        s.commit()

    try:
        assert arm.on_server
        drive(arm.create_schema())
        assert drive(arm.pragmas()) == database.expected_durability(settings), drive(arm.pragmas())
        assert states() == ["idle"], states()
        t = dt.datetime(2026, 1, 1)
        rows = [{"id": i, "timestamp": t, "level": 10, "text": f"r{i}", "parent_id": 1 if i > 1 else None}
                for i in (1, 2, 3)]
        drive(arm.populate(rows, [(2, 1), (3, 1), (3, 2)]))
        if arm.is_async:
            async def run(fn):
                async with arm.Session() as s:
                    await s.run_sync(fn)
            drive(run(check))
            drive(run(kill))
        else:
            for fn in (check, kill):
                with arm.Session() as s:
                    fn(s)
        assert database.connections(loc) == 1
        snap = arm.snapshot()
        assert snap.rows[2]["parent_id"] is None and snap.rows[3]["parent_id"] is None  # ON DELETE SET NULL
        assert snap.links == {(3, 2)}                                    # ON DELETE CASCADE on the links
        # reads, writes and the read-back end their transactions (the harness's TRUNCATE would wait)
        assert [o.id for o in drive(arm.get([2, 3]))] == [2, 3]
        assert states() == ["idle"], states()
        objs = drive(arm.load_all())
        drive(arm.update_partial(objs, [20] * len(objs)))
        assert states() == ["idle"], states()
        assert drive(arm.pragmas()) == database.expected_durability(settings)
        assert states() == ["idle"], states()
    finally:
        drive(arm.close())

    wide = Arm(MODELS["wide"], settings)
    drive(wide.open(loc))
    try:
        drive(wide.create_schema())
    finally:
        drive(wide.close())
    types = dict(watch("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                       "WHERE attrelid = 'journal_wide'::regclass AND attnum > 0"))
    expected = {"id": "integer", "timestamp": "timestamp without time zone", "level": "integer",
                "text": "character varying(255)", "col_float_1": "double precision", "col_smallint_1": "smallint",
                "col_bigint_1": "bigint", "col_char_1": "character varying(255)", "col_text_1": "text",
                "col_decimal_1": "numeric(10,2)", "col_json_1": "jsonb"}
    assert {k: types[k] for k in expected} == expected, types
    database.remove(loc)
    database.close_connections()
    print("postgresql ok")
    """
)

PG_DRIVERS = {"sqlalchemy": "psycopg", "sqlalchemy_async": "asyncpg", "sqlmodel": "psycopg",
              "sqlmodel_async": "asyncpg"}


@pytest.fixture(scope="module")
def pg_server_env() -> Iterator[dict[str, str]]:
    """One throwaway server for the module (skipped where there are no server binaries or no psycopg)."""
    pytest.importorskip("psycopg")
    pg_server = pytest.importorskip("pytest_ormbench.provision.postgresql")
    if pg_server.find_binaries() is None:
        pytest.skip("no PostgreSQL server binaries here")
    from pytest_ormbench.backends.postgresql import SERVER_ENV

    with pg_server.start_server() as srv:
        yield {SERVER_ENV: json.dumps(srv.info.to_json())}


@pytest.mark.parametrize("name", list(ARMS))
def test_on_postgresql(name: str, tmp_path: Path, pg_server_env: dict[str, str],
                       monkeypatch: pytest.MonkeyPatch) -> None:
    target = _needs(name)
    driver = PG_DRIVERS[name]
    if importlib.util.find_spec(driver) is None:
        pytest.skip(f"{driver} is not installed")
    for key, value in pg_server_env.items():
        monkeypatch.setenv(key, value)  # the subprocess inherits it
    proc = run_isolated("-c", PG_RELATIONS, target, driver, str(tmp_path / "work"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "postgresql ok" in proc.stdout
