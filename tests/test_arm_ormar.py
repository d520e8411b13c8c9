"""The ormar arm's Test 2 relations are real and directed, on SQLite, PostgreSQL and MariaDB (there with
exact datetimes and floats); the whole matrix is verified by the smoke run and tests/test_arms.py."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
from pathlib import Path

import pytest

import server_helpers

pytest.importorskip("ormar")
pytest.importorskip("aiosqlite")

from pytest_ormbench.suites.ormar_arm import OrmarArm  # noqa: E402
from pytest_ormbench.workload.spec import MODELS, Settings  # noqa: E402



def test_relations_are_real_and_directed(tmp_path: Path) -> None:
    async def scenario() -> None:
        arm = OrmarArm(MODELS["fk"], Settings(journal_mode="wal"))
        await arm.open(tmp_path / "fk.db")
        try:
            await arm.create_schema()
            assert await arm.pragmas() == {"journal_mode": "wal", "synchronous": "full", "foreign_keys": "on",
                                           "locking_mode": "normal"}
            t = dt.datetime(2026, 1, 1)
            a, b = arm.build([{"timestamp": t, "level": 10, "text": "a"}, {"timestamp": t, "level": 20, "text": "b"}])
            await arm.insert_batch([a])
            b.parent_id = a
            await arm.insert_batch([b])
            await b.links_to.add(a)  # directed: b -> a
            assert arm.snapshot().links == {(b.id, a.id)}
            parent = await arm.Journal.objects.select_related("children").get(id=a.id)
            assert [c.id for c in parent.children] == [b.id]
            linked = await arm.Journal.objects.select_related("links_from").get(id=a.id)
            assert [x.id for x in linked.links_from] == [b.id]
            await arm.delete([a])  # ON DELETE SET NULL on the parent, CASCADE on the links
            snap = arm.snapshot()
            assert snap.rows[b.id]["parent_id"] is None and snap.links == set()
        finally:
            await arm.close()

    asyncio.run(scenario())
    with sqlite3.connect(tmp_path / "fk.db") as conn:
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"ix_journal_fk_parent_id", "ix_journal_fk_links_from_id", "ix_journal_fk_links_to_id"} <= indexes


# -- PostgreSQL ------------------------------------------------------------------------------------

@pytest.fixture
def pg_location(tmp_path: Path):  # noqa: ANN201
    """An empty database on a throwaway server (skipped where there are no server binaries or no asyncpg)."""
    with server_helpers.empty_database("postgresql", tmp_path, "asyncpg") as found:
        yield found


def test_on_postgresql_relations_types_durability_and_one_connection(pg_location) -> None:  # noqa: ANN001
    import psycopg

    database, loc = pg_location

    async def scenario() -> None:
        arm = OrmarArm(MODELS["fk"], Settings())
        await arm.open(loc)
        try:
            assert arm.on_server
            await arm.create_schema()
            settings = await arm.pragmas()
            assert {k: settings[k] for k in ("synchronous_commit", "fsync", "full_page_writes")} == {
                "synchronous_commit": "on", "fsync": "on", "full_page_writes": "on"}
            t = dt.datetime(2026, 1, 1)
            a, b = arm.build([{"timestamp": t, "level": 10, "text": "a"}, {"timestamp": t, "level": 20, "text": "b"}])
            await arm.insert_batch([a])
            b.parent_id = a
            await arm.insert_batch([b])
            await b.links_to.add(a)  # directed: b -> a
            assert database.connections(loc) == 1  # the pool's one asyncpg connection
            assert arm.snapshot().links == {(b.id, a.id)}
            linked = await arm.Journal.objects.select_related("links_from").get(id=a.id)
            assert [x.id for x in linked.links_from] == [b.id]
            await arm.delete([a])  # ON DELETE SET NULL on the parent, CASCADE on the links
            snap = arm.snapshot()
            assert snap.rows[b.id]["parent_id"] is None and snap.links == set()
        finally:
            await arm.close()

        wide = OrmarArm(MODELS["wide"], Settings())
        await wide.open(loc)
        try:
            await wide.create_schema()
        finally:
            await wide.close()

    asyncio.run(scenario())
    with psycopg.connect(loc.conninfo()) as conn:
        types = dict(conn.execute(
            "SELECT column_name, format_type(atttypid, atttypmod) FROM information_schema.columns c "
            "JOIN pg_attribute a ON a.attrelid = c.table_name::regclass AND a.attname = c.column_name "
            "WHERE c.table_name = 'journal_wide'").fetchall())
        indexes = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename LIKE 'journal_fk%'")}
    assert types["timestamp"] == "timestamp without time zone"
    assert types["col_float_1"] == "double precision"  # a 4-byte real would fail verification
    assert types["col_decimal_1"] == "numeric(10,2)"
    assert types["col_json_1"] == "json"  # ormar.JSON is SQLAlchemy's generic JSON (no jsonb in ormar)
    assert {"ix_journal_fk_parent_id", "ix_journal_fk_links_from_id", "ix_journal_fk_links_to_id"} <= indexes


def test_describe_names_the_postgresql_driver() -> None:
    asyncpg = pytest.importorskip("asyncpg")
    info = OrmarArm(MODELS["simple"], Settings()).describe()
    assert info["postgresql_driver"] == f"asyncpg {asyncpg.__version__}"


# -- MariaDB ---------------------------------------------------------------------------------------

@pytest.fixture
def mysql_location(tmp_path: Path):  # noqa: ANN201
    """An empty database on a throwaway MariaDB (skipped where there are no server binaries or no aiomysql)."""
    with server_helpers.empty_database("mysql", tmp_path, "aiomysql") as found:
        yield found


def test_on_mariadb_relations_exact_types_durability_and_one_connection(mysql_location) -> None:  # noqa: ANN001
    from decimal import Decimal

    database, loc = mysql_location

    async def scenario() -> None:
        arm = OrmarArm(MODELS["fk"], Settings())
        await arm.open(loc)
        try:
            assert arm.on_server
            await arm.create_schema()
            assert await arm.pragmas() == database.expected_durability(Settings())
            t = dt.datetime(2026, 1, 1, 12, 30, 45, 123456)
            a, b = arm.build([{"timestamp": t, "level": 10, "text": "a"}, {"timestamp": t, "level": 20, "text": "b"}])
            await arm.insert_batch([a])
            b.parent_id = a
            await arm.insert_batch([b])
            await b.links_to.add(a)  # directed: b -> a
            assert database.connections(loc) == 1  # the pool's one aiomysql connection
            assert database.open_transactions(loc) == 0  # nothing left open by a standalone query
            snap = arm.snapshot()
            assert snap.links == {(b.id, a.id)} and snap.rows[a.id]["timestamp"] == t  # microseconds kept
            linked = await arm.Journal.objects.select_related("links_from").get(id=a.id)
            assert [x.id for x in linked.links_from] == [b.id]
            await arm.delete([a])  # ON DELETE SET NULL on the parent, CASCADE on the links
            snap = arm.snapshot()
            assert snap.rows[b.id]["parent_id"] is None and snap.links == set()
            assert database.open_transactions(loc) == 0
        finally:
            await arm.close()

        wide = OrmarArm(MODELS["wide"], Settings())
        await wide.open(loc)
        try:
            await wide.create_schema()
            row = {"timestamp": dt.datetime(2026, 1, 2, 3, 4, 5, 678901), "level": 1, "text": "w",
                   "col_float_1": 0.1 + 0.2, "col_decimal_1": Decimal("12345678.91")}
            await wide.insert_bulk(wide.build([row]))
            got = wide.snapshot().rows[1]
            assert {k: got[k] for k in row} == row  # a 4-byte FLOAT or a DATETIME without fsp would not be
        finally:
            await wide.close()

    asyncio.run(scenario())
    types = database.column_types(loc)
    assert types["journal_fk.timestamp"] == types["journal_wide.timestamp"] == "datetime(6)"
    assert types["journal_wide.col_float_1"] == "double"
    assert types["journal_wide.col_decimal_1"] == "decimal(10,2)"
    assert types["journal_wide.col_json_1"] == "longtext (json)"
    indexes = {str(r[0]) for r in database._run(
        "SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s", (loc.dbname,))}
    assert {"ix_journal_fk_parent_id", "ix_journal_fk_links_from_id", "ix_journal_fk_links_to_id"} <= indexes


def test_the_column_types_change_only_on_mysql() -> None:
    """The DateTime and Float subclasses add a MySQL variant; SQLite's and PostgreSQL's DDL stay ormar's."""
    import ormar
    from sqlalchemy.dialects import mysql, postgresql, sqlite
    from sqlalchemy.schema import CreateTable

    from pytest_ormbench.suites.ormar_arm import build_models

    J, _, _ = build_models(MODELS["wide"], ormar.DatabaseConnection("sqlite+aiosqlite://"))
    table = J.ormar_config.table

    def ddl(dialect) -> str:  # noqa: ANN001
        return str(CreateTable(table).compile(dialect=dialect.dialect()))

    assert "timestamp DATETIME(6)" in ddl(mysql) and "col_float_1 DOUBLE" in ddl(mysql)
    assert "timestamp TIMESTAMP WITHOUT TIME ZONE" in ddl(postgresql) and "col_float_1 FLOAT" in ddl(postgresql)
    assert "timestamp DATETIME NOT NULL" in ddl(sqlite) and "col_float_1 FLOAT" in ddl(sqlite)


def test_describe_names_the_mysql_driver() -> None:
    pytest.importorskip("aiomysql")
    import importlib.metadata

    info = OrmarArm(MODELS["simple"], Settings()).describe()
    assert info["mysql_driver"] == f"aiomysql {importlib.metadata.version('aiomysql')}"
