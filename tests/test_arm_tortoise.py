"""The Tortoise ORM arm: its
Test 2 relations, the pragmas it undoes, and re-opening on another path after close();
on PostgreSQL and MariaDB (where server binaries are here): the same relations, the column types, one connection."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path

import pytest

import server_helpers

pytest.importorskip("tortoise")
pytest.importorskip("aiosqlite")

from pytest_ormbench.workload.spec import MODELS, Settings  # noqa: E402
from pytest_ormbench.measuring.timing import drive  # noqa: E402
from pytest_ormbench.arms.sql import expected_pragmas  # noqa: E402


def _rows(n: int) -> list[dict]:
    t = dt.datetime(2026, 1, 1)
    return [{"id": i, "timestamp": t, "level": 10, "text": f"r{i}", "parent_id": 1 if i > 1 else None}
            for i in range(1, n + 1)]


def _check_relations(arm) -> None:  # noqa: ANN001
    """Test 2's relations through Tortoise's own API, and ON DELETE SET NULL / CASCADE (the arm open, schema made)."""
    drive(arm.populate(_rows(4), [(2, 1), (3, 1), (3, 2)]))
    J = arm.cls

    async def check() -> None:
        root, three = await J.get(id=1), await J.get(id=3)
        assert sorted(c.id for c in await root.children.all()) == [2, 3, 4]
        assert (await (await J.get(id=2)).parent).id == 1
        # directed many-to-many: 3 -> {1, 2}, and 1 <- {2, 3}
        assert sorted(x.id for x in await three.links.all()) == [1, 2]
        assert sorted(x.id for x in await root.linked_from.all()) == [2, 3]
        assert await root.links.all() == []
        # the ORM's own add() writes (from_id, to_id) as insert_links does
        await (await J.get(id=4)).links.add(three)

    drive(check())
    assert arm.snapshot().links == {(2, 1), (3, 1), (3, 2), (4, 3)}
    drive(arm.delete(drive(arm.load_all())[:1]))  # ON DELETE SET NULL on children, CASCADE on links
    snap = arm.snapshot()
    assert all(snap.rows[i]["parent_id"] is None for i in (2, 3, 4))
    assert snap.links == {(3, 2), (4, 3)}


def test_relations_are_real_and_directed(tmp_path: Path) -> None:
    from pytest_ormbench.suites.tortoise_arm import TortoiseArm

    arm = TortoiseArm(MODELS["fk"], Settings())
    drive(arm.open(tmp_path / "fk.db"))
    try:
        drive(arm.create_schema())
        _check_relations(arm)
    finally:
        drive(arm.close())
    with sqlite3.connect(tmp_path / "fk.db") as conn:
        indexed = {(r[0], r[1]) for r in conn.execute(
            "SELECT m.tbl_name, i.name FROM sqlite_master m, pragma_index_info(m.name) i WHERE m.type = 'index'")}
    assert {("journal_fk", "parent_id"), ("journal_fk_links", "from_id"), ("journal_fk_links", "to_id")} <= indexed


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_pragmas_read_back_and_reopen(tmp_path: Path, journal: str) -> None:
    """Tortoise's own defaults (WAL, journal_size_limit) are undone; open() works again after close()."""
    from pytest_ormbench.suites.tortoise_arm import TortoiseArm

    settings = Settings(journal_mode=journal, synchronous="normal")
    for name in ("one", "two"):
        arm = TortoiseArm(MODELS["simple"], settings)
        drive(arm.open(tmp_path / f"{name}.db"))
        try:
            assert drive(arm.pragmas()) == expected_pragmas(settings)
            drive(arm.create_schema())
            drive(arm.insert_batch(arm.build([{"timestamp": dt.datetime(2026, 1, 1), "level": 10, "text": "x"}])))
            assert drive(arm.client.execute_query("PRAGMA journal_size_limit"))[1][0][0] == -1
        finally:
            drive(arm.close())
        assert set(arm.snapshot().rows) == {1}


def _writes_on_sqlite_first(tmp_path: Path) -> None:
    """Every kind of write on SQLite, in this process: what Tortoise compiles for it must not reach a server."""
    from pytest_ormbench.suites.tortoise_arm import TortoiseArm

    lite = TortoiseArm(MODELS["fk"], Settings())
    drive(lite.open(tmp_path / "first.db"))
    try:
        drive(lite.create_schema())
        drive(lite.populate(_rows(2), [(2, 1)]))
        drive(lite.update_partial(drive(lite.load_all()), [11, 12]))
        drive(lite.delete(drive(lite.load_all())[:1]))
    finally:
        drive(lite.close())


# -- PostgreSQL -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pg_server():  # noqa: ANN201
    with server_helpers.started("postgresql", "asyncpg") as srv:
        yield srv


@pytest.fixture
def pg_location(pg_server, tmp_path: Path):  # noqa: ANN001, ANN201
    """An empty database on the module's server, through the harness's own backend (snapshot reads through it)."""
    with server_helpers.empty_database("postgresql", tmp_path, server=pg_server, shared=True) as found:
        yield found


def test_on_postgresql_relations_types_and_one_connection(pg_location, tmp_path: Path) -> None:  # noqa: ANN001
    from pytest_ormbench.suites.tortoise_arm import TortoiseArm

    # First on SQLite in this process: Tortoise caches compiled writes per (connection name, table), never
    # per dialect, so PostgreSQL must not be handed SQLite's statements (the arm names the connections apart).
    _writes_on_sqlite_first(tmp_path)

    db, location = pg_location
    arm = TortoiseArm(MODELS["fk"], Settings())
    drive(arm.open(location))
    try:
        assert arm.on_server
        assert db.connections(location) == 1  # the pool's one asyncpg connection, opened in open()
        assert drive(arm.pragmas()) == db.expected_durability(Settings())
        drive(arm.create_schema())
        _check_relations(arm)
        drive(arm.update_partial(drive(arm.load_all()), [11, 12, 13]))
        assert {r["level"] for r in arm.snapshot().rows.values()} == {11, 12, 13}
        assert db.connections(location) == 1
        types = db.column_types(location)
        assert types["journal_fk.timestamp"] == "timestamp without time zone"  # not Tortoise's TIMESTAMPTZ
        indexed = {tuple(r) for r in db._conn(location).execute(
            "SELECT t.relname, a.attname FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid "
            "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = i.indkey[0]").fetchall()}
        assert {("journal_fk", "parent_id"), ("journal_fk_links", "from_id"), ("journal_fk_links", "to_id")} <= indexed
    finally:
        drive(arm.close())
    assert db.connections(location) == 0


def test_on_postgresql_the_wide_types(pg_location) -> None:  # noqa: ANN001
    from pytest_ormbench.suites.tortoise_arm import TortoiseArm

    db, location = pg_location
    arm = TortoiseArm(MODELS["wide"], Settings())
    drive(arm.open(location))
    try:
        drive(arm.create_schema())
    finally:
        drive(arm.close())
    types = db.column_types(location)
    assert {types[f"journal_wide.col_{kind}_1"] for kind in ("float", "decimal", "json")} == {
        "double precision", "numeric(10,2)", "jsonb"}


# -- MariaDB ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mysql_server():  # noqa: ANN201
    with server_helpers.started("mysql", "asyncmy") as srv:  # asyncmy: Tortoise's MySQL client
        yield srv


@pytest.fixture
def mysql_location(mysql_server, tmp_path: Path):  # noqa: ANN001, ANN201
    """An empty database on the module's MariaDB, through the harness's own backend (snapshot reads through it)."""
    with server_helpers.empty_database("mysql", tmp_path, server=mysql_server, shared=True) as found:
        yield found


def test_on_mariadb_relations_types_and_one_connection(mysql_location, tmp_path: Path) -> None:  # noqa: ANN001
    from pytest_ormbench.suites.tortoise_arm import TortoiseArm

    # SQLite first in this process: the compiled writes Tortoise caches per (connection name, table) must not
    # reach MariaDB with SQLite's placeholders (the arm names each database's connection apart)
    _writes_on_sqlite_first(tmp_path)

    db, location = mysql_location
    arm = TortoiseArm(MODELS["fk"], Settings())
    drive(arm.open(location))
    try:
        assert arm.on_server
        assert db.connections(location) == 1  # the pool's one asyncmy connection, opened in open()
        assert drive(arm.pragmas()) == db.expected_durability(Settings())
        drive(arm.create_schema())
        _check_relations(arm)
        drive(arm.update_partial(drive(arm.load_all()), [11, 12, 13]))
        assert {r["level"] for r in arm.snapshot().rows.values()} == {11, 12, 13}
        assert db.connections(location) == 1
        assert db.open_transactions(location) == 0  # autocommit: reads leave nothing open
        types = db.column_types(location)
        assert types["journal_fk.timestamp"] == "datetime(6)"  # microseconds kept
        indexed = {(str(t), str(c)) for t, c in db._run(
            "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = %s AND SEQ_IN_INDEX = 1", (location.dbname,))}
        assert {("journal_fk", "parent_id"), ("journal_fk_links", "from_id"), ("journal_fk_links", "to_id")} <= indexed
    finally:
        drive(arm.close())
    server_helpers.wait_closed(db, location)  # the server ends a closed connection's thread on its own time
    assert db.connections(location) == 0


def test_on_mariadb_the_wide_types_round_trip(mysql_location) -> None:  # noqa: ANN001
    from decimal import Decimal

    from pytest_ormbench.suites.tortoise_arm import TortoiseArm

    db, location = mysql_location
    arm = TortoiseArm(MODELS["wide"], Settings())
    drive(arm.open(location))
    try:
        drive(arm.create_schema())
        types = db.column_types(location)
        assert {types[f"journal_wide.col_{kind}_1"] for kind in ("float", "decimal", "json")} == {
            "double", "decimal(10,2)", "longtext (json)"}
        spec = MODELS["wide"]
        row = {f.name: (f.default if f.has_default else None) for f in spec.wide_fields}
        # the values a lossy mapping would change: microseconds, a 64-bit float, 10 digits, nested JSON
        row.update(timestamp=dt.datetime(2026, 1, 2, 3, 4, 5, 678901), level=10, text="x",
                   col_float_1=0.1 + 0.2, col_decimal_1=Decimal("12345678.91"), col_json_1={"a": [1, 2.5, "é"]})
        drive(arm.insert_batch(arm.build([row])))
        got = arm.snapshot().rows[1]  # as stored: JSON is the text Tortoise wrote
        decoded = {n: json.loads(v) if n.startswith("col_json") and v is not None else v for n, v in got.items()}
        assert {name: decoded[name] for name in row} == row
    finally:
        drive(arm.close())
