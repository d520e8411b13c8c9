"""Shared pieces for the plugin tests: a bench module and probe arms written into pytester's dir."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

#: the bench module users run, as it ships: its test checks the record each cell hands back
BENCH_MODULE = (REPO_ROOT / "bench_suites" / "test_orm_benchmarks.py").read_text(encoding="utf-8")

#: arms the tests register with --ormbench-register; each one is the control arm
#: with one thing changed, so that the harness's checks can be seen to work.
PROBE_ARMS = textwrap.dedent(
    '''
    import gc
    import json
    import os

    import pytest_ormbench.measuring.runner as runner
    from pytest_ormbench.suites.raw_sqlite3 import RawSqlite3Arm

    EVENTS = os.environ.get("ORMBENCH_PROBE_LOG")


    def log(event, **kw):
        if EVENTS:
            with open(EVENTS, "a") as fh:
                fh.write(json.dumps({"event": event, "pid": os.getpid(), **kw}) + "\\n")


    _clock = runner.clock


    def _logged_clock():
        log("clock")
        return _clock()


    class ProbeArm(RawSqlite3Arm):
        """Logs the order of build / clock / op, and whether gc was frozen in the op."""
        name = "probe"
        label = "probe"

        def build(self, rows):
            log("build")
            return super().build(rows)

        def load_all(self):
            log("load_all")
            return super().load_all()

        def insert_batch(self, objs):
            log("op", frozen=gc.get_freeze_count())
            return super().insert_batch(objs)

        def update_partial(self, objs, levels):
            log("op", frozen=gc.get_freeze_count())
            return super().update_partial(objs, levels)


    runner.clock = _logged_clock


    class LazyArm(RawSqlite3Arm):
        """Claims success but forgets the last row of every batch."""
        name = "lazy"
        label = "lazy"

        def insert_batch(self, objs):
            super().insert_batch(objs[:-1])
            objs[-1]["id"] = objs[-2]["id"] + 1


    class AutoincrementArm(RawSqlite3Arm):
        """Ids from sqlite_sequence (AUTOINCREMENT): only an exact restore gives the same ids again."""
        name = "autoinc"
        label = "autoinc"

        def _column_ddl(self, f):
            if f.kind == "id":
                return "id INTEGER PRIMARY KEY AUTOINCREMENT"
            return super()._column_ddl(f)


    class NoRestoreArm(AutoincrementArm):
        """Restores the rows but not the id sequence (the mistake the warm mode must catch)."""
        name = "norestore"
        label = "norestore"

        def restore(self, template):
            c = self.raw_connection()
            c.execute("DELETE FROM %s WHERE id > 100" % self.table)


    class SlothArm(RawSqlite3Arm):
        """Declares insert_bulk unsupported."""
        name = "sloth"
        label = "sloth"
        unsupported = {"insert_bulk": "sloths do not bulk insert"}


    class MissingArm(RawSqlite3Arm):
        name = "missing"
        label = "missing"
        requires = ("surely_not_an_installed_package",)
    '''
)

PROBES = [f"probe_arms:{c}" for c in ("ProbeArm", "LazyArm", "AutoincrementArm", "NoRestoreArm", "SlothArm")]

#: tiny sizes, and no drift probe (a fixed, second-long workload) unless a test asks for it
TINY = ["--ormbench-iterations=5", "--ormbench-batch=50", "--ormbench-rounds=1", "--ormbench-no-probe",
        "-p", "no:cacheprovider"]


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester dir holding a bench module and the probe arms."""
    # when these tests themselves run under xdist, the inner session must not think it is a
    # worker (pytest-benchmark would switch itself off)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(test_bench=BENCH_MODULE, probe_arms=PROBE_ARMS)
    pytester.syspathinsert()
    return pytester


def register(*names: str) -> list[str]:
    return [f"--ormbench-register=probe_arms:{n}" for n in names]


def run_isolated(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """``python *args`` in a fresh interpreter at the repository root.

    Arm tests use it because ORMs change process-wide state on import (sqlite3 adapters,
    event loops), which must not leak into other tests. ``-c`` scripts see the root on sys.path,
    and this folder after everything else (a script on a server imports ``server_helpers``).
    """
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(REPO_ROOT / "tests")) if p)
    return subprocess.run([sys.executable, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": path})


@pytest.fixture
def short_tmpdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private, short TMPDIR (the server's directory goes there), so that leftovers are this test's own
    even when tests run in parallel; traversable by the servers' users (nobody for PostgreSQL, mysql for MariaDB)."""
    base = Path(tempfile.mkdtemp(prefix="osv-", dir="/tmp"))
    base.chmod(0o755)
    monkeypatch.setenv("TMPDIR", str(base))
    try:
        yield base
    finally:
        leftovers = list(base.iterdir())
        for path in leftovers:  # do not leave it for the next run, whatever the test found
            subprocess.run(["rm", "-rf", str(path)], check=False)
        base.rmdir()
        assert not leftovers, f"left behind: {leftovers}"
