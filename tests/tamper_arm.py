"""A test-only arm: raw sqlite3 whose Update: Partial writes one wrong level on its third call, so that a round
after rounds that passed must still fail (the verifier's memo of verified read-backs must not carry it)."""

from __future__ import annotations

from typing import Any, Sequence

from pytest_ormbench.suites.raw_sqlite3 import RawSqlite3Arm


class TamperingSqlite3Arm(RawSqlite3Arm):
    """raw sqlite3; the third update_partial of an instance sets row 1's level one higher than asked."""

    name = "tampering"
    label = "raw sqlite3 (wrong third update)"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.updates = 0

    def update_partial(self, objs: list[dict[str, Any]], levels: Sequence[int]) -> None:
        self.updates += 1
        if self.updates == 3:
            levels = [levels[0] + 1, *levels[1:]]
        super().update_partial(objs, levels)


class ReadBackCountingSqlite3Arm(RawSqlite3Arm):
    """raw sqlite3 that counts the harness's read-backs of its table (per instance: the session's own arm)."""

    name = "readbacks"
    label = "raw sqlite3 (read-backs counted)"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_backs = 0

    def snapshot(self) -> Any:
        self.read_backs += 1
        return super().snapshot()


class WritingReadSqlite3Arm(ReadBackCountingSqlite3Arm):
    """raw sqlite3 whose second Filter: Large of an instance also raises row 1's level and commits: a read that
    wrote must fail even where reads that wrote nothing are not read back."""

    name = "writing_read"
    label = "raw sqlite3 (a read that writes)"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads = 0

    def filter_large(self, levels: Sequence[int]) -> list[tuple]:
        out = super().filter_large(levels)
        self.reads += 1
        if self.reads == 2:
            self.raw_connection().execute(f"UPDATE {self.table} SET level = level + 1 WHERE id = 1")
        return out
