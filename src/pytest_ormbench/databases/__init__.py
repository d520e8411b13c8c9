"""The database seam: what the harness needs from the place an arm stores its data.

The harness (``runner``) asks a :class:`~.base.Database` for a throwaway location, copies
templates, counts commits and connections, and learns which durability the live connection
must report. Arms name their database in ``Arm.database`` (a registered name, or an instance
for an engine that lives with its arm, like ObjectBox). SQLite is the first backend; a server
database is one more module here and one entry in :data:`DATABASES`.
"""

from __future__ import annotations

from typing import Any

from .base import Database
from .sqlite import SqliteDatabase

DATABASES: dict[str, Database] = {"sqlite": SqliteDatabase()}


def database_for(arm_cls: Any) -> Database:
    """The database an arm class declares (``Arm.database``): a name in :data:`DATABASES` or an instance."""
    declared = getattr(arm_cls, "database", "sqlite")
    if isinstance(declared, Database):
        return declared
    try:
        return DATABASES[declared]
    except KeyError:
        raise KeyError(f"{arm_cls.__name__}.database = {declared!r}: unknown database; "
                       f"known: {', '.join(sorted(DATABASES))}") from None


__all__ = ["DATABASES", "Database", "SqliteDatabase", "database_for"]
