"""Helpers every arm on PostgreSQL shares: the durability read-back, exact restore, independent read-back.

The work is done by the database seam (``databases.postgresql``): restore runs on the harness's own
connection (``TRUNCATE`` and a refill from the template's kept copy, sequences set back), so the arm's
connection, and every cache the ORM keeps above it, survives a restore; the read-back goes through
that connection too, never through the ORM. An arm only says how to read its live connection's
settings (:func:`server_settings` on a DB-API connection, or ``SETTINGS_SQL`` through its ORM).
"""

from __future__ import annotations

from typing import Any, Sequence

from .contract import Snapshot
from .databases import DATABASES, ServerLocation, is_server
from .databases.postgresql import SETTINGS_SQL, normalize_settings, read_settings
from .databases.sqlite import SqlTables


def _database(location: ServerLocation) -> Any:
    return DATABASES[location.db]


#: the durability the arm's live DB-API connection (psycopg, psycopg2) runs under
server_settings = read_settings


def server_restore(location: ServerLocation) -> None:
    """Reset the arm's database to its template's exact state in place (the arm's connection stays open)."""
    _database(location).restore(location)


def server_snapshot(location: ServerLocation, tables: SqlTables, field_names: Sequence[str]) -> Snapshot:
    """Every row and link, read through the harness's connection (what is committed, not what the ORM cached)."""
    columns = [tables.column(n) for n in field_names]
    link = (tables.link, tables.link_from, tables.link_to) if tables.link else None
    return _database(location).read_snapshot(location, tables.main, columns, field_names, link)  # type: ignore[arg-type]


__all__ = ["SETTINGS_SQL", "ServerLocation", "is_server", "normalize_settings", "server_restore", "server_settings",
           "server_snapshot"]
