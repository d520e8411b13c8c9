"""A test-only arm: raw sqlite3 made slower on purpose, to measure what a comparison detects.

``ORMBENCH_TEST_SLOWDOWN=0.10`` makes every operation take 10 % longer: after the real
operation returns, it spins for that fraction of the time the operation took. Register it
with ``--ormbench-register=tests.delay_arm:DelayedSqlite3Arm``; it is never in the registry.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any, Callable

from bench_suites.raw_sqlite3 import RawSqlite3Arm
from pytest_ormbench.contract import OPS


def _slowdown() -> float:
    return float(os.environ.get("ORMBENCH_TEST_SLOWDOWN", "0") or 0)


def _slowed(op: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(op)
    def slowed(self: RawSqlite3Arm, *args: Any) -> Any:
        t0 = time.perf_counter()
        result = op(self, *args)
        spent = time.perf_counter() - t0
        until = time.perf_counter() + spent * _slowdown()
        while time.perf_counter() < until:  # busy-wait: a sleep would hand the core to other work
            pass
        return result

    return slowed


class DelayedSqlite3Arm(RawSqlite3Arm):
    """raw sqlite3, every operation slowed by ORMBENCH_TEST_SLOWDOWN (a fraction)."""

    name = "delayed"
    label = "raw sqlite3 (delayed)"


for _op in OPS:
    setattr(DelayedSqlite3Arm, _op.name, _slowed(getattr(RawSqlite3Arm, _op.name)))
