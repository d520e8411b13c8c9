"""Shared pieces for the plugin tests: a bench module and probe arms written into pytester's dir."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

# numpy (matplotlib's) refuses a second import in one process ("cannot load module more than once"), and an
# inline pytester run drops from sys.modules what it imported: a test whose inline run writes charts would break
# every later import of matplotlib in that worker. Imported here, before any inline run, it is never dropped.
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
except ImportError:  # the [plot] extra is not installed: the chart tests skip
    pass

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

    import pytest_ormbench.measuring.timing as timing
    from pytest_ormbench.suites.raw_sqlite3 import RawSqlite3Arm

    EVENTS = os.environ.get("ORMBENCH_PROBE_LOG")


    def log(event, **kw):
        if EVENTS:
            with open(EVENTS, "a") as fh:
                fh.write(json.dumps({"event": event, "pid": os.getpid(), **kw}) + "\\n")


    _clock = timing.clock


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


    timing.clock = _logged_clock


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


# --- skips for want of system packages ---------------------------------------------------------------------------
# A machine with only python3 runs tests/ with what needs a system package skipped (the throwaway servers, valgrind,
# mysqlclient's C build); those skips are listed once at the end of the session, each with the command that enables
# it. With ORMBENCH_REQUIRE_ALL=1 (CI: .ci/run) a missing package fails the session at its start and such a skip
# fails its test, so that CI cannot lose coverage silently.

REQUIRE_ALL = "ORMBENCH_REQUIRE_ALL"


def _has_postgresql() -> bool:
    from pytest_ormbench.provision import postgresql

    return postgresql.find_binaries() is not None


def _has_mariadb() -> bool:
    from pytest_ormbench.provision import mysql

    return mysql.find_binaries() is not None


def _has_valgrind() -> bool:
    from pytest_ormbench.measuring import callgrind

    return shutil.which("valgrind") is not None and callgrind.header_dir() is not None


def _has_cc() -> bool:
    return any(shutil.which(name) for name in (os.environ.get("CC", ""), "cc", "gcc", "clang") if name)


def _has_mysqlclient() -> bool:
    return importlib.util.find_spec("MySQLdb") is not None


def _has_chromium() -> bool:
    """tests/test_html.py's headless browser: Debian's chromium and chromium-driver (paths it may be told)."""
    paths = (os.environ.get("ORMBENCH_CHROMIUM", "/usr/bin/chromium"),
             os.environ.get("ORMBENCH_CHROMEDRIVER", "/usr/bin/chromedriver"))
    return all(os.access(path, os.X_OK) for path in paths)


#: (what, the command that enables it, is it here, a skip reason that names it)
SYSTEM_PACKAGES = (
    ("PostgreSQL server", "apt-get install postgresql", _has_postgresql,
     re.compile(r"PostgreSQL server|ORMBENCH_PG_BINDIR", re.I)),
    ("MariaDB server", "apt-get install mariadb-server", _has_mariadb,
     re.compile(r"MariaDB server|mariadb-server|ORMBENCH_MYSQL_BINDIR", re.I)),
    ("valgrind", "apt-get install valgrind", _has_valgrind, re.compile(r"valgrind|callgrind", re.I)),
    ("a C compiler", "apt-get install gcc", _has_cc, re.compile(r"C compiler", re.I)),
    ("mysqlclient (a C build against libmariadb)",
     "apt-get install libmariadb-dev pkg-config, then ORMBENCH_TOX_EXTRAS=mysql tox, or pip install -e '.[mysql]'",
     _has_mysqlclient, re.compile(r"MySQLdb|mysqlclient", re.I)),
    ("chromium", "apt-get install chromium chromium-driver", _has_chromium,
     re.compile(r"chromium|chromedriver|headless browser", re.I)),
)


def missing_system_packages() -> list[tuple[str, str]]:
    """``(what, how to get it)`` for each system package this machine lacks."""
    return [(what, how) for what, how, here, _ in SYSTEM_PACKAGES if not here()]


def wanted_packages(reason: str, missing: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The missing system packages a skip's ``reason`` names (none: a skip for another reason)."""
    names = {what for what, _, _, pattern in SYSTEM_PACKAGES if pattern.search(reason)}
    return [(what, how) for what, how in missing if what in names]


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _require_all(config: pytest.Config) -> bool:
    return os.environ.get(REQUIRE_ALL, "") not in ("", "0")


def pytest_sessionstart(session: pytest.Session) -> None:
    if _require_all(session.config) and not hasattr(session.config, "workerinput"):
        missing = missing_system_packages()
        if missing:
            listed = "; ".join(f"{what} ({how})" for what, how in missing)
            raise pytest.UsageError(f"{REQUIRE_ALL}=1, but this machine lacks: {listed}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules marked ``xdist_group`` first (stable, otherwise in collection order). Such a module's
    module-scoped fixture is a run of its own (the shards' matrix, a publish, the page and browser); under tox's
    ``--dist loadgroup`` the module is one unit of work, so the fixture is built once instead of once per worker,
    and handed out first it runs on one worker while the other takes the single tests, not as the run's tail."""
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)


def _fail_if_wanted(report: pytest.TestReport | pytest.CollectReport, config: pytest.Config) -> None:
    """Under ORMBENCH_REQUIRE_ALL, a skip for want of a system package becomes a failure."""
    if not report.skipped or not _require_all(config) or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    wanted = wanted_packages(reason, missing_system_packages())
    if wanted:
        report.outcome = "failed"
        report.longrepr = f"{REQUIRE_ALL}=1: skipped for want of {', '.join(w for w, _ in wanted)}: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    _fail_if_wanted(outcome.get_result(), item.config)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield
    _fail_if_wanted(outcome.get_result(), collector.config)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:  # noqa: ANN001
    """The session's skips, each reason once: first those for want of a system package, by package, with the
    command that enables them, then any other reason with its count (tox gives no -rs to tests/: this is the list)."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    missing = missing_system_packages()
    wanted: dict[tuple[str, str], int] = {}
    other: dict[str, int] = {}
    for report in skipped:
        reason = _skip_reason(report)
        packages = wanted_packages(reason, missing)
        for package in packages:
            wanted[package] = wanted.get(package, 0) + 1
        if not packages:
            reason = reason.removeprefix("Skipped: ")
            other[reason] = other.get(reason, 0) + 1
    if wanted:
        listed = ", ".join(f"{what} ({how}): {n} skipped" for (what, how), n in wanted.items())
        terminalreporter.write_line(f"skipped for want of system packages: {listed}", yellow=True, bold=True)
    for reason, n in other.items():
        terminalreporter.write_line(f"skipped ({n}): {reason}", yellow=True)


def child_env(**extra: str) -> dict[str, str]:
    """This environment less pytest-xdist's marks, for a child pytest: under ``pytest -n`` it would inherit
    PYTEST_XDIST_WORKER, and pytest-benchmark in it would take itself for a worker and record nothing."""
    import os
    return {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}, **extra}
