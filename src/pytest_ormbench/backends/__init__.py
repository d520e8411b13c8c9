"""The database seam: what the harness needs from the place an arm stores its data.

The harness (``runner``) asks a :class:`~.base.Database` for a throwaway location, copies
templates, counts commits and connections, and learns which durability the live connection
must report. Arms name their database in ``Arm.database`` (a registered name, or an instance
for an engine that lives with its arm, like ObjectBox). SQLite is the first backend; a server
database is one more module here and one entry in :data:`DATABASES`.
"""

from __future__ import annotations

from typing import Any

from pytest_ormbench.workload.spec import Unsupported
from pytest_ormbench.backends.base import Database
from pytest_ormbench.backends.mysql import MysqlDatabase
from pytest_ormbench.backends.postgresql import PostgresDatabase
from pytest_ormbench.backends.server import ServerDatabase, ServerLocation
from pytest_ormbench.backends.sqlite import SqliteDatabase
from pytest_ormbench.workload.cells import DATABASE_AXIS, DEFAULT_DB

#: the value of the database axis that means the embedded side: SQLite, or an arm's own store (ObjectBox)
EMBEDDED = DEFAULT_DB
DATABASES: dict[str, Database] = {"sqlite": SqliteDatabase(), "postgresql": PostgresDatabase(),
                                   "mysql": MysqlDatabase()}
#: every value ``--ormbench-dbs`` takes, in the order tables show them
AXIS = DATABASE_AXIS
assert tuple(DATABASES) == AXIS, "a backend for every value of the database axis (workload.cells.DATABASE_AXIS)"


class NotOnThisDatabase(Unsupported):
    """An arm asked to run on a database it does not run on (its cells are reported unsupported, with the reason)."""


def database_for(arm_cls: Any, db: str = EMBEDDED) -> Database:
    """The database an arm class stores in for one value of the database axis.

    On the embedded side: what the arm declares (``Arm.database``: a name in :data:`DATABASES` or an
    instance). On a server: that server's backend, if the arm lists it in ``Arm.databases``.
    """
    if db not in getattr(arm_cls, "databases", (EMBEDDED,)):
        notes = getattr(arm_cls, "database_notes", {}) or {}
        label = getattr(arm_cls, "label", "") or arm_cls.__name__
        raise NotOnThisDatabase(f"{label} does not run on {db}: "
                                + notes.get(db, "its adapter has no code for this database yet"))
    if db != EMBEDDED:
        return DATABASES[db]
    declared = getattr(arm_cls, "database", "sqlite")
    if isinstance(declared, Database):
        return declared
    try:
        return DATABASES[declared]
    except KeyError:
        raise KeyError(f"{arm_cls.__name__}.database = {declared!r}: unknown database; "
                       f"known: {', '.join(sorted(DATABASES))}") from None


def close_server_connections() -> None:
    """Close the harness's connections to every server database (a worker between requests holds none)."""
    for database in DATABASES.values():
        if isinstance(database, ServerDatabase):
            database.close_connections()


def is_server(location: Any) -> bool:
    """Whether an arm's ``open()`` got a server database's location rather than a file path."""
    return isinstance(location, ServerLocation)


__all__ = ["AXIS", "DATABASES", "EMBEDDED", "Database", "MysqlDatabase", "NotOnThisDatabase", "PostgresDatabase",
           "ServerDatabase", "ServerLocation", "SqliteDatabase", "close_server_connections", "database_for",
           "is_server"]
