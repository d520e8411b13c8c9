"""A test-only arm: raw sqlite3 whose Get answers a repeated id from a dict, as an object cache does.

Its rows are right, so every value check passes; only the statement count shows that some gets never
reached the database. Register it with ``--ormbench-register=tests.cache_arm:CachingSqlite3Arm``.
"""

from __future__ import annotations

from typing import Sequence

from pytest_ormbench.suites.raw_sqlite3 import RawSqlite3Arm


class CachingSqlite3Arm(RawSqlite3Arm):
    """raw sqlite3 with a per-op identity cache in front of Get."""

    name = "caching"
    label = "raw sqlite3 (caching Get)"

    def get(self, ids: Sequence[int]) -> list[tuple]:
        seen: dict[int, tuple] = {}
        fetch = super().get
        return [seen[i] if i in seen else seen.setdefault(i, fetch([i])[0]) for i in ids]
