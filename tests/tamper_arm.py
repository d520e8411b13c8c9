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
