"""SQLite: the embedded default, and the first backend behind the database seam.

Module-level functions are the SQLite mechanics that arms share through
``pytest_ormbench.arms.sql`` (pragmas, exact restore by the backup API, an
independent read-back); :class:`SqliteDatabase` is what the harness asks.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from pytest_ormbench.workload.spec import Settings, Snapshot
from pytest_ormbench.workload.statements import StatementCounter
from pytest_ormbench.backends.base import Database

_SYNC_NAMES = {0: "off", 1: "normal", 2: "full", 3: "extra"}
SIDE_FILES = ("-journal", "-wal", "-shm")


# -- the requested settings as pragmas --------------------------------------------------------------

def pragma_pairs(settings: Settings) -> list[tuple[str, str]]:
    """The pragmas every connection of every arm runs, as (name, value): for ORMs that take them so."""
    return [
        ("journal_mode", settings.journal_mode.upper()),
        ("synchronous", settings.synchronous.upper()),
        ("foreign_keys", "ON" if settings.foreign_keys else "OFF"),
    ]


def pragma_statements(settings: Settings) -> list[str]:
    """The same pragmas as SQL statements, for ORMs that take an init command or a connect hook."""
    return [f"PRAGMA {name}={value}" for name, value in pragma_pairs(settings)]


def apply_pragmas(conn: Any, settings: Settings) -> None:
    """Run the pragmas on a DB-API connection to SQLite (sqlite3's, or one that wraps it)."""
    cur = conn.cursor()
    try:
        for stmt in pragma_statements(settings):
            cur.execute(stmt)
            cur.fetchall()
    finally:
        cur.close()


def expected_pragmas(settings: Settings) -> dict[str, str]:
    """What :func:`read_pragmas` must return on a connection that runs under ``settings``: the requested
    durability, and SQLite's normal locking (an exclusive lock held between transactions spares every read its
    locking, and stops the file change counter from counting each commit, which the checks rely on)."""
    return {
        "journal_mode": settings.journal_mode,
        "synchronous": settings.synchronous,
        "foreign_keys": "on" if settings.foreign_keys else "off",
        "locking_mode": "normal",
    }


def read_pragmas(conn: Any) -> dict[str, str]:
    """The settings that matter for fairness, as the live connection reports them."""
    cur = conn.cursor()  # DB-API cursors only: some adapters' Connection.execute is not sqlite3's

    def one(sql: str) -> Any:
        cur.execute(sql)
        row = cur.fetchone()
        return row[0] if not isinstance(row, Mapping) else next(iter(row.values()))

    try:
        journal, sync, fks = one("PRAGMA journal_mode"), one("PRAGMA synchronous"), one("PRAGMA foreign_keys")
        locking = one("PRAGMA locking_mode")
    finally:
        cur.close()
    return {
        "journal_mode": str(journal).lower(),
        "synchronous": _SYNC_NAMES.get(int(sync), str(sync)),
        "foreign_keys": "on" if int(fks) else "off",
        "locking_mode": str(locking).lower(),
    }


# -- exact restore and independent read-back ---------------------------------------------------------

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


# -- counted from the storage -----------------------------------------------------------------------

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


class SqliteDatabase(Database):
    """One SQLite file per database; commits from its header, connections from /proc/self/fd."""

    name: ClassVar[str] = "sqlite"
    counts_every_write: ClassVar[bool] = True

    def __init__(self) -> None:
        #: descriptors SQLite keeps open after the harness's own read-back connection closes (it
        #: defers close() while another connection in the process holds a POSIX lock on the file);
        #: they are not the arm's and are not counted
        self._harness_handles: dict[Path, int] = {}

    def remove(self, location: Path) -> None:
        for p in (location, *(location.with_name(location.name + s) for s in SIDE_FILES)):
            super().remove(p)

    def leftovers(self, location: Path) -> list[Path]:
        side = (location.with_name(location.name + s) for s in SIDE_FILES)
        return [p for p in side if p.exists() and p.stat().st_size]

    def expected_durability(self, settings: Settings) -> dict[str, str]:
        return expected_pragmas(settings)

    def commits(self, location: Path) -> int | None:
        return file_change_counter(location)

    def connections(self, location: Path) -> int | None:
        if not location.is_file():
            return None
        n = open_handles(location)
        return None if n is None else n - self._harness_handles.get(location, 0)

    def settle(self, location: Path, arm_connections: int | None) -> None:
        self._harness_handles[location] = (open_handles(location) or 0) - (arm_connections or 0)

    def trace_statements(self, counter: StatementCounter) -> str | None:
        trace_connections(counter)
        return None

    def describe(self) -> dict[str, str]:
        return {"sqlite_version": sqlite3.sqlite_version}

    def read_tables(self, location: Path, tables: Mapping[str, Sequence[str]]) -> dict[str, list[tuple[Any, ...]]]:
        conn = _connect_unwrapped(f"file:{location}?mode=ro", uri=True)
        try:
            return {t: conn.execute(f'SELECT {", ".join(_q(c) for c in cols)} FROM {_q(t)}').fetchall()
                    for t, cols in tables.items()}
        finally:
            conn.close()

    def fill_tables(self, location: Path, rows: Mapping[str, tuple[Sequence[str], Sequence[Sequence[Any]]]]) -> None:
        conn = _connect_unwrapped(str(location), isolation_level=None)
        try:
            conn.execute("BEGIN")
            for table, (cols, data) in rows.items():
                marks = ", ".join("?" for _ in cols)
                conn.executemany(f'INSERT INTO {_q(table)} ({", ".join(_q(c) for c in cols)}) VALUES ({marks})', data)
            conn.execute("COMMIT")
        finally:
            conn.close()


def _q(identifier: str) -> str:
    return f'"{identifier}"'


def _connect_unwrapped(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    """A harness connection that feeds no statement counter (the original ``sqlite3.connect``)."""
    connect = getattr(sqlite3.connect, "__wrapped__", sqlite3.connect)
    return connect(*args, **kwargs)


# -- statements, counted at the driver ----------------------------------------------------------------

_tracing: dict[str, Any] = {}


def trace_connections(counter: StatementCounter) -> None:
    """From now on, every ``sqlite3`` connection this process opens feeds ``counter`` its statements.

    sqlite3's trace callback is set on each new connection, in the thread that opens it (a
    connection refuses calls from other threads, and aiosqlite opens its own in its worker thread).
    Every ORM here reaches SQLite through ``sqlite3.connect`` (or ``sqlite3.dbapi2.connect``, the
    same function), looked up when it connects, so replacing it catches them all; an arm whose
    connection escaped would count no statement at all, which verification refuses. The trace fires
    once per execution of a statement: ``executemany`` over n rows counts n. Later calls only change
    the counter.
    """
    import sqlite3.dbapi2 as dbapi2

    _tracing["counter"] = counter
    if "original" in _tracing:
        return
    original = _tracing["original"] = dbapi2.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = original(*args, **kwargs)
        conn.set_trace_callback(_tracing["counter"].feed)
        return conn

    connect.__wrapped__ = original  # type: ignore[attr-defined]
    sqlite3.connect = dbapi2.connect = connect  # type: ignore[assignment]
