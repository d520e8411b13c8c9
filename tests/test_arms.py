"""Every registered arm passes its selfcheck under the other journal mode and synchronous=normal, in a process of its own.

synchronous=normal, not SQLite's own default (full): a connection opened without the suite's pragmas
reports full, so only a setting other than the default shows a missing pragma.

The smoke matrix (tox) verifies every cell in the default settings; this adds WAL mode on the ops whose commits and restores differ most. Each arm runs in a
subprocess because ORMs change process-wide state on import (sqlite3 adapters, event loops).
"""

from __future__ import annotations

import pytest
from conftest import run_isolated

from pytest_ormbench.workload.spec import MODELS
from pytest_ormbench.arms.registry import BUILTIN_ARMS

OPS = "ACFGJK"


def _selfcheck(name: str, synchronous: str) -> list[str]:
    proc = run_isolated("-m", "pytest_ormbench.commands.selfcheck", name, "--journal", "wal", "--synchronous", synchronous,
                        "--tables", "default", "--ops", OPS, "--iterations", "5", "--batch", "50")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert lines and lines[-1] == "0 failed", proc.stdout[-6000:]
    # every cell was checked or declared unsupported (every model x 6 ops x 1 table)
    checked = [line for line in lines[:-1] if line.startswith(("ok ", "UNSUPPORTED "))]
    assert len(checked) == len(MODELS) * len(OPS), proc.stdout[-6000:]
    return checked


SQLITE_ARMS = [e for e in BUILTIN_ARMS if e.control_for in ("", "sqlite")]


@pytest.mark.parametrize("entry", SQLITE_ARMS, ids=[e.name for e in SQLITE_ARMS])
def test_arm_selfcheck_in_wal_mode(entry) -> None:  # noqa: ANN001
    missing = entry.missing()
    if missing:
        pytest.skip(f"{entry.name}: {missing}")
    checked = _selfcheck(entry.name, "normal")
    if not any(line.startswith("ok ") for line in checked):
        # an engine that cannot relax its durability (ObjectBox syncs every commit) says so for every cell;
        # it is then checked in WAL mode at synchronous=full, and must run there
        assert any("synchronous=normal" in line for line in checked), checked
        checked = _selfcheck(entry.name, "full")
    assert any(line.startswith("ok ") for line in checked), checked
