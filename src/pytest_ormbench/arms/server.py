"""Helpers every arm on a server database shares: the durability read-back, exact restore, independent read-back.

The work is done by the database seam (``backends.postgresql``, ``backends.mysql``): restore runs on the
harness's own connection (the tables emptied and refilled from the template, sequences or AUTO_INCREMENT
set back), so the arm's connection, and every cache the ORM keeps above it, survives a restore; the
read-back goes through that connection too, never through the ORM. An arm only says how to read its live
connection's settings: :func:`server_settings` on a DB-API connection, or :func:`settings_sql` through
its ORM's raw-SQL API, handing the rows to :func:`settings_from_rows`.
"""

from __future__ import annotations

from typing import Any, Sequence

from pytest_ormbench.workload.spec import Snapshot
from pytest_ormbench.backends import DATABASES, ServerLocation, is_server
from pytest_ormbench.backends.sqlite import SqlTables


def _database(location: ServerLocation) -> Any:
    return DATABASES[location.db]


def settings_sql(location: ServerLocation) -> str:
    """The one query that reads the durability settings on the arm's connection (any driver)."""
    return _database(location).settings_sql


def settings_from_rows(location: ServerLocation, rows: Sequence[Sequence[Any]]) -> dict[str, str]:
    """:func:`settings_sql`'s rows as the durability dict the harness compares."""
    return _database(location).settings_from_rows(rows)


def server_settings(conn: Any, location: ServerLocation) -> dict[str, str]:
    """The durability the arm's live DB-API connection (psycopg, psycopg2, mysqlclient, PyMySQL) runs under."""
    return _database(location).read_settings(conn)


def server_restore(location: ServerLocation) -> None:
    """Reset the arm's database to its template's exact state in place (the arm's connection stays open)."""
    _database(location).restore(location)


def server_snapshot(location: ServerLocation, tables: SqlTables, field_names: Sequence[str]) -> Snapshot:
    """Every row and link, read through the harness's connection (what is committed, not what the ORM cached)."""
    columns = [tables.column(n) for n in field_names]
    link = (tables.link, tables.link_from, tables.link_to) if tables.link else None
    return _database(location).read_snapshot(location, tables.main, columns, field_names, link)  # type: ignore[arg-type]


__all__ = ["ServerLocation", "is_server", "server_restore", "server_settings", "server_snapshot", "settings_from_rows",
           "settings_sql"]
