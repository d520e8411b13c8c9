"""A run stopped by Ctrl-C (SIGINT) or SIGTERM leaves no worker process and no database behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import child_env

from interrupts import sigint_as_in_a_terminal

ROOT = Path(__file__).resolve().parents[1]


def _marked(mark: str) -> list[int]:
    """Processes whose environment carries the mark (the run and every worker it started)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if mark.encode() in (proc / "environ").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def _can_start_postgresql() -> bool:
    try:
        from pytest_ormbench.provision.postgresql import find_binaries
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return find_binaries() is not None


def _can_start_mysql() -> bool:
    try:
        from pytest_ormbench.provision.mysql import find_binaries
        import MySQLdb  # noqa: F401
        import pymysql  # noqa: F401
    except ImportError:
        return False
    return find_binaries() is not None


RUNS = {
    "sqlite": ["--ormbench-arms=sqlite3"],
    # a throwaway PostgreSQL server (its keeper and postmaster carry the mark too) must go with the run
    "postgresql": ["--ormbench-dbs=postgresql", "--ormbench-arms=psycopg"],
    # and a throwaway MariaDB (its keeper and mariadbd)
    "mysql": ["--ormbench-dbs=mysql", "--ormbench-arms=mysqlclient"],
}


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("db", list(RUNS))
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_run_leaves_nothing_behind(tmp_path: Path, signum: int, db: str) -> None:
    if db == "postgresql" and not _can_start_postgresql():
        pytest.skip("no PostgreSQL server binaries or psycopg here")
    if db == "mysql" and not _can_start_mysql():
        pytest.skip("no MariaDB server binaries, mysqlclient or PyMySQL here")
    mark = f"ORMBENCH_INTERRUPT_TEST={uuid.uuid4().hex}"
    env = child_env(TMPDIR=str(tmp_path), **{mark.split("=")[0]: mark.split("=")[1]})
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "bench_suites", "-p", "no:cacheprovider", "-q", *RUNS[db],
         "--ormbench-no-control", "--ormbench-models=simple", "--ormbench-modes=warm,cold", "--ormbench-rounds=50", "--ormbench-no-probe"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=sigint_as_in_a_terminal)
    try:
        deadline = time.monotonic() + 60
        # wait until the run has its databases and its workers
        while not (list(tmp_path.glob("pytest-ormbench-*/work")) and len(_marked(mark)) > 2):
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "the run did not start its workers in time"
            time.sleep(0.2)
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0, out
    assert "Traceback" not in out.split("KeyboardInterrupt")[0], out
    deadline = time.monotonic() + 10
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _marked(mark), f"worker processes left: {_marked(mark)}"
    assert not list(tmp_path.glob("pytest-ormbench-*")), list(tmp_path.iterdir())


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc (Linux)")
def test_ctrl_c_to_the_whole_group_with_kept_async_sessions_leaves_nothing_behind(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches every process of the run's group, workers too, here while a worker keeps an
    async session per cell (aiosqlite's non-daemon threads among them): no process and no file is left."""
    pytest.importorskip("aiosqlite")
    mark = f"ORMBENCH_INTERRUPT_TEST={uuid.uuid4().hex}"
    env = child_env(TMPDIR=str(tmp_path), **{mark.split("=")[0]: mark.split("=")[1]})
    log = tmp_path / "run.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "bench_suites", "-p", "no:cacheprovider", "-q",
             "--ormbench-arms=sqlalchemy_async", "--ormbench-no-control", "--ormbench-no-probe",
             "--ormbench-models=simple", "--ormbench-modes=warm", "--ormbench-rounds=500", "--ormbench-iterations=5",
             "--ormbench-batch=50"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True,
            preexec_fn=sigint_as_in_a_terminal)
    try:
        deadline = time.monotonic() + 90
        while "round 1/500 done" not in log.read_text():  # every cell has a kept session from here on
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the run did not finish its first round in time"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0, log.read_text()
    deadline = time.monotonic() + 10
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _marked(mark), f"worker processes left: {_marked(mark)}"
    assert not list(tmp_path.glob("pytest-ormbench-*")), list(tmp_path.iterdir())
