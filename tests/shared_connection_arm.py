"""Test-only arms: raw sqlite3 with one connection for the whole process, as Django's ``connections`` is.

Opening an instance closes the process's connection and opens it on the new path, so a second open instance
takes the first one's connection. ``SharedConnectionArm`` says so (``independent_sessions = False``, the
contract's default); ``MisdeclaredSharedConnectionArm`` claims its instances keep apart. Register them with
``--ormbench-register=tests.shared_connection_arm:SharedConnectionArm`` (and ``:MisdeclaredSharedConnectionArm``).
"""

from __future__ import annotations

import sqlite3
from typing import ClassVar

from pytest_ormbench.suites.raw_sqlite3 import RawSqlite3Arm


class SharedConnectionArm(RawSqlite3Arm):
    name = "shared_connection"
    label = "raw sqlite3 (one connection per process)"
    independent_sessions = False

    _process_connection: ClassVar[sqlite3.Connection | None] = None

    @property  # type: ignore[override]
    def conn(self) -> sqlite3.Connection | None:
        return SharedConnectionArm._process_connection

    @conn.setter
    def conn(self, value: sqlite3.Connection | None) -> None:
        """The process's one connection moves to the instance that opens (or is closed by the one that closes)."""
        old = SharedConnectionArm._process_connection
        if old is not None and old is not value:
            old.close()
        SharedConnectionArm._process_connection = value


class MisdeclaredSharedConnectionArm(SharedConnectionArm):
    name = "misdeclared_shared_connection"
    label = "raw sqlite3 (one connection per process, declared independent)"
    independent_sessions = True
