"""The SQL arms' base: ``open()`` calls the arm's method for the database it is given, and ``self.dialect``
answers what differs between the databases (no ORM, no server: the dispatch and the dialects alone)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pytest_ormbench.arms.sql import (DIALECTS, MYSQL, POSTGRESQL, SQLITE, AiosqliteArm, NotOnThisDatabase,
    SqliteArm, dialect_of)
from pytest_ormbench.backends import AXIS, ServerLocation
from pytest_ormbench.backends.server import ServerInfo
from pytest_ormbench.workload.spec import MODELS, Settings

SERVER = ServerInfo(host="127.0.0.1", port=5433, user="ormbench", password=None, socket_dir=None, version="x",
                    managed=True)


def _location(db: str) -> ServerLocation:
    return ServerLocation("work", SERVER, db)


class _Opens:
    opened: Any = None

    def close(self) -> None: ...
    def create_schema(self) -> None: ...
    def build(self, rows: Any) -> list[Any]: return []
    def load_all(self) -> list[Any]: return []


class SyncArm(_Opens, SqliteArm):
    name = "dispatch"

    def open_sqlite(self, path: Path) -> None:
        self.opened = ("sqlite", path)

    def open_postgresql(self, location: Any) -> None:
        self.opened = ("postgresql", location)


class AsyncArm(_Opens, AiosqliteArm):
    name = "dispatch_async"

    async def open_sqlite(self, path: Path) -> None:
        self.opened = ("sqlite", path)

    async def open_mysql(self, location: Any) -> None:
        self.opened = ("mysql", location)


def _arm(cls: type) -> Any:
    return cls(MODELS["simple"], Settings())


def test_open_calls_the_method_of_the_database(tmp_path: Path) -> None:
    arm = _arm(SyncArm)
    assert arm.dialect is SQLITE and not arm.on_server  # before open: SQLite's
    arm.open(tmp_path / "db.sqlite3")
    assert arm.opened == ("sqlite", tmp_path / "db.sqlite3") and arm.dialect is SQLITE
    arm = _arm(SyncArm)
    location = _location("postgresql")
    arm.open(location)
    assert arm.opened == ("postgresql", location) and arm.path is location
    assert arm.dialect is POSTGRESQL and arm.on_server


def test_an_async_arm_gets_the_coroutine_of_its_method() -> None:
    arm = _arm(AsyncArm)
    location = _location("mysql")
    coro = arm.open(location)
    assert arm.opened is None
    asyncio.run(coro)
    assert arm.opened == ("mysql", location) and arm.dialect is MYSQL


@pytest.mark.parametrize("cls, db", [(SyncArm, "mysql"), (AsyncArm, "postgresql")])
def test_no_method_for_the_database_is_not_on_this_database(cls: type, db: str) -> None:
    with pytest.raises(NotOnThisDatabase, match=f"no open_{db}"):
        _arm(cls).open(_location(db))


def test_a_dialect_for_every_database() -> None:
    assert tuple(DIALECTS) == AXIS
    assert all(dialect_of(_location(db)) is DIALECTS[db] for db in AXIS if db != "sqlite")
    assert dialect_of(None) is SQLITE and dialect_of(Path("x.sqlite3")) is SQLITE


def test_what_the_dialects_answer(tmp_path: Path) -> None:
    assert [d.quote("t") for d in (SQLITE, POSTGRESQL, MYSQL)] == ['"t"', '"t"', "`t`"]
    assert [d.placeholders(2) for d in (SQLITE, POSTGRESQL, MYSQL)] == ["?, ?", "%s, %s", "%s, %s"]
    assert POSTGRESQL.placeholders(3, "dollar") == "$1, $2, $3"
    assert [d.mysql_like for d in (SQLITE, POSTGRESQL, MYSQL)] == [False, False, True]
    assert [d.server for d in (SQLITE, POSTGRESQL, MYSQL)] == [False, True, True]
    assert SQLITE.url(tmp_path / "a.db", "sqlite+aiosqlite") == f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"
    location = _location("postgresql")
    assert POSTGRESQL.url(location, "postgresql+psycopg") == location.url("postgresql+psycopg")
