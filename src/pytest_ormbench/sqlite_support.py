"""Helpers every SQLite arm shares: pragmas, exact restore, independent read-back.

An arm over SQLite subclasses :class:`SqliteArm`, declares its tables with
:meth:`SqliteArm.tables` and hands the harness its live ``sqlite3`` connection
through :meth:`SqliteArm.raw_connection`. The rest (pragma read-back, restore by
the backup API, snapshot through a separate connection) is done here once.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .contract import Arm, Snapshot

_SYNC_NAMES = {0: "off", 1: "normal", 2: "full", 3: "extra"}


@dataclass(frozen=True)
class SqlTables:
    """Where an arm keeps a model: the main table and, for Test 2, the link table."""

    main: str
    link: str | None = None
    link_from: str | None = None
    link_to: str | None = None
    #: canonical field name -> column name, where they differ
    columns: tuple[tuple[str, str], ...] = ()

    def column(self, name: str) -> str:
        return dict(self.columns).get(name, name)


def read_pragmas(conn: sqlite3.Connection) -> dict[str, str]:
    """The settings that matter for fairness, as the live connection reports them."""
    cur = conn.cursor()  # DB-API cursors only: some adapters' Connection.execute is not sqlite3's

    def one(sql: str) -> Any:
        cur.execute(sql)
        return cur.fetchone()[0]

    journal, sync, fks = one("PRAGMA journal_mode"), one("PRAGMA synchronous"), one("PRAGMA foreign_keys")
    cur.close()
    return {
        "journal_mode": str(journal).lower(),
        "synchronous": _SYNC_NAMES.get(int(sync), str(sync)),
        "foreign_keys": "on" if int(fks) else "off",
    }


def apply_pragmas(conn: sqlite3.Connection, statements: Sequence[str]) -> None:
    for stmt in statements:
        conn.execute(stmt).fetchall()


def backup_into(live: sqlite3.Connection, template: Path) -> None:
    """Overwrite the live connection's database with the template, page for page.

    The connection object survives, so every cache above it stays warm, while
    rows, indexes and id sequences (sqlite_sequence) become exactly the template's.
    """
    src = sqlite3.connect(str(template))
    try:
        src.backup(live)
    finally:
        src.close()


async def in_aiosqlite_thread(aconn: Any, fn: Any, *args: Any) -> Any:
    """Run ``fn(sqlite3_connection, *args)`` in the thread that owns an aiosqlite connection.

    For pragma read-back and restore on an async arm's one live connection. aiosqlite has no
    public way to run a callable on its connection, so this uses its ``_execute``/``_conn``.
    """
    return await aconn._execute(fn, aconn._conn, *args)


def file_change_counter(path: Path) -> int | None:
    """SQLite's header counter (offset 24) of committed write transactions.

    Only rollback-journal modes maintain it; in WAL mode this returns None.
    """
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
    except OSError:
        return None
    if len(header) < 100 or header[18] == 2:  # read/write version 2 = WAL
        return None
    return int.from_bytes(header[24:28], "big")


def open_handles(path: Path) -> int | None:
    """How many file descriptors of this process point at the database file (Linux)."""
    fd_dir = Path("/proc/self/fd")
    if not fd_dir.is_dir():
        return None
    target = os.path.realpath(path)
    count = 0
    for fd in os.listdir(fd_dir):
        try:
            if os.readlink(fd_dir / fd) == target:
                count += 1
        except OSError:
            continue
    return count


def read_snapshot(path: Path, tables: SqlTables, field_names: Sequence[str]) -> Snapshot:
    """Read every row and link through a fresh read-only connection."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cols = ", ".join(f'"{tables.column(n)}"' for n in field_names)
        rows: dict[int, dict[str, Any]] = {}
        for rec in conn.execute(f'SELECT {cols} FROM "{tables.main}"'):
            row = dict(zip(field_names, rec))
            rows[int(row["id"])] = row
        links: set[tuple[int, int]] = set()
        if tables.link:
            q = f'SELECT "{tables.link_from}", "{tables.link_to}" FROM "{tables.link}"'
            links = {(int(a), int(b)) for a, b in conn.execute(q)}
        return Snapshot(rows, links)
    finally:
        conn.close()


class SqliteArm(Arm):
    """Base for arms that store in SQLite through the standard sqlite3 module."""

    path: Path | None = None

    def tables(self) -> SqlTables:
        """The tables this arm created for ``self.model``."""
        raise NotImplementedError

    def raw_connection(self) -> sqlite3.Connection:
        """The arm's one live sqlite3 connection (opening it if it is lazy)."""
        raise NotImplementedError

    def pragmas(self) -> dict[str, str]:
        return read_pragmas(self.raw_connection())

    def restore(self, template: Path) -> None:
        self.before_restore()
        backup_into(self.raw_connection(), template)
        self.after_restore()

    def before_restore(self) -> None:
        """End any open transaction or session before the pages are replaced."""

    def after_restore(self) -> None:
        """Drop ORM-level state (identity maps) that described the old rows."""

    def snapshot(self) -> Snapshot:
        assert self.path is not None, "open() first"
        return read_snapshot(self.path, self.tables(), self.model.field_names)

    def describe(self) -> dict[str, Any]:
        return {"sqlite_version": sqlite3.sqlite_version}
