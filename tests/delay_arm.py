"""A test-only arm: raw sqlite3 made slower on purpose, to measure what a comparison detects.

``ORMBENCH_TEST_SLOWDOWN=0.10`` makes every operation 10 % more expensive: after the real operation
returns, it does extra CPU work. Register it with ``--ormbench-register=tests.delay_arm:DelayedSqlite3Arm``;
it is never in the registry. Two ways to size the extra work:

- by time (the default): spin for that fraction of the wall time the operation took;
- by instructions, when ``ORMBENCH_TEST_SLOWDOWN_CALIBRATION`` names a JSON file of
  ``{op name: spin iterations that cost as many instructions as the op}`` (made from a baseline
  ``--ormbench-instructions`` run by ``experiments/ci-instructions/calibrate.py``): spin that fraction of
  the op's iterations. The count is then fixed, so a +5 % arm executes 5 % more instructions in every
  run, however fast the machine is.
"""

from __future__ import annotations

import functools
import json
import os
import time
from typing import Any, Callable

from pytest_ormbench.suites.raw_sqlite3 import RawSqlite3Arm
from pytest_ormbench.workload.spec import OPS


def _slowdown() -> float:
    return float(os.environ.get("ORMBENCH_TEST_SLOWDOWN", "0") or 0)


@functools.lru_cache(maxsize=1)
def _calibration() -> dict[str, float] | None:
    path = os.environ.get("ORMBENCH_TEST_SLOWDOWN_CALIBRATION")
    if not path:
        return None
    with open(path, encoding="utf-8") as f:
        return {str(k): float(v) for k, v in json.load(f).items()}


def spin(iterations: int) -> int:
    """Fixed CPU work: the same instructions for the same count."""
    x = 0
    for i in range(iterations):
        x ^= i
    return x


def _slowed(op: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(op)
    def slowed(self: RawSqlite3Arm, *args: Any) -> Any:
        calibration = _calibration()
        if calibration is not None:
            result = op(self, *args)
            key = f"{self.model.name}:{op.__name__}"
            spin(round(calibration.get(key, 0.0) * _slowdown()))
            return result
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
