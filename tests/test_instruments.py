"""Statements and instructions: what is counted, where, and what verification does with it."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from pytest_ormbench.scheduling.config import RunConfig
from pytest_ormbench.workload.spec import Settings
from pytest_ormbench.workload.statements import KINDS, StatementCounter, classify
from pytest_ormbench.measuring import callgrind
from pytest_ormbench.workload.plan import Sizes, make_plan
from pytest_ormbench.workload.measures import INSTRUCTIONS
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.results.record import CellRecord
from pytest_ormbench.arms.registry import all_arms
from pytest_ormbench.scheduling.scheduler import Scheduler
from pytest_ormbench.measuring.verify import VerificationError, check_statements

ROOT = Path(__file__).resolve().parents[1]
HAS_VALGRIND = shutil.which("valgrind") is not None and callgrind.header_dir() is not None


@pytest.mark.parametrize("sql, kind", [
    ("SELECT 1", "SELECT"), ("  select id from t", "SELECT"), ("WITH x AS (SELECT 1) SELECT * FROM x", "SELECT"),
    ("INSERT INTO t VALUES (1)", "INSERT"), ("REPLACE INTO t VALUES (1)", "INSERT"),
    ("UPDATE t SET a = 1", "UPDATE"), ("DELETE FROM t", "DELETE"), ("BEGIN ", "BEGIN"),
    ("BEGIN IMMEDIATE", "BEGIN"), ("COMMIT", "COMMIT"), ("PRAGMA journal_mode", "other"),
    ("SAVEPOINT s1", "other"), ("RELEASE s1", "other"), ("ROLLBACK", "other"),
    ("/* c */ SELECT 1", "SELECT"), ("-- c\nDELETE FROM t", "DELETE"), ("", "other"),
    ("WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", "INSERT"),
])
def test_statements_are_classified_by_their_first_keyword(sql: str, kind: str) -> None:
    assert classify(sql) == kind


def test_a_counter_counts_only_while_active_and_from_any_thread() -> None:
    c = StatementCounter()
    c.feed("SELECT 1")
    c.start()
    c.feed("SELECT 2")
    t = threading.Thread(target=lambda: [c.feed("INSERT INTO t VALUES (1)") for _ in range(3)])
    t.start()
    t.join()
    counts = c.stop()
    c.feed("DELETE FROM t")
    assert list(counts) == list(KINDS)
    assert counts["SELECT"] == 1 and counts["INSERT"] == 3 and sum(counts.values()) == 4


def test_the_sqlite_trace_reaches_connections_opened_later_in_any_thread(tmp_path: Path) -> None:
    # in a child: the trace replaces sqlite3.connect for the whole process
    code = textwrap.dedent("""
        import sqlite3, sqlite3.dbapi2, threading, sys
        from pytest_ormbench.backends.sqlite import trace_connections
        from pytest_ormbench.workload.statements import StatementCounter
        c = StatementCounter()
        trace_connections(c)
        assert sqlite3.connect is sqlite3.dbapi2.connect
        path = sys.argv[1]
        def work():
            con = sqlite3.connect(path)
            con.execute("CREATE TABLE IF NOT EXISTS t (a)")
            con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
            con.commit()
            con.execute("SELECT * FROM t").fetchall()
            con.close()
        c.start()
        th = threading.Thread(target=work); th.start(); th.join()
        print(c.stop())
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.db")], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    counts = eval(out)  # noqa: S307 - our own child's repr of a dict
    assert counts["INSERT"] == 2, counts  # executemany: one execution per row
    assert counts["SELECT"] == 1 and counts["COMMIT"] == 1 and counts["BEGIN"] == 1 and counts["other"] == 1


def test_a_read_answered_from_a_cache_fails_verification() -> None:
    plan = make_plan("simple", "F", "default", Sizes(5, 50))
    n = len(plan.inputs["ids"])
    check_statements(plan, {"SELECT": n})
    with pytest.raises(VerificationError, match=f"{n - 1} SELECT statements for {n} requests"):
        check_statements(plan, {"SELECT": n - 1})
    d = make_plan("simple", "D", "default", Sizes(5, 50))
    with pytest.raises(VerificationError, match="one per level"):
        check_statements(d, {"SELECT": len(d.inputs["levels"]) - 1})


def test_an_op_that_sent_no_statement_fails_verification() -> None:
    with pytest.raises(VerificationError, match="no statement reached the database"):
        check_statements(make_plan("simple", "B", "default", Sizes(5, 50)), dict.fromkeys(KINDS, 0))


def _scheduler(tmp_path: Path, **kw) -> Scheduler:  # noqa: ANN003
    base = dict(arms=("sqlite3",), models=("simple",), ops=("B", "F"), modes=("warm", "cold"), tables=("default",),
                rounds=2, sizes=Sizes(5, 50), settings=Settings(), verify_only=False, probe=False,
                register=("tests.cache_arm:CachingSqlite3Arm",))
    base.update(kw)
    run = RunConfig(**base)
    s = Scheduler(run, all_arms(run.register), ROOT)
    s.planned = [CellKey(a, m, o, md, t) for a in run.arms for m in run.models for o in run.ops
                 for md in run.modes for t in run.tables]
    return s


@pytest.mark.parametrize("verify_only", [False, True])
def test_every_cell_records_its_statements_and_a_timed_run_keeps_no_time_from_counting(
        tmp_path: Path, verify_only: bool) -> None:
    s = _scheduler(tmp_path, verify_only=verify_only)
    try:
        records = [s.outcome(k).record for k in s.planned]
    finally:
        s.close()
    assert all(r is not None for r in records)
    for r in records:
        assert r.rounds == (1 if verify_only else 2)  # the counting repetition adds no round
        assert len(r.statements) == 1, r.statements
        counts = r.statements_per_op
        if r.key.op == "F":
            assert counts["SELECT"] == 10, counts  # 2 x iterations gets, one SELECT each
        else:
            assert counts["INSERT"] == 50 and counts["COMMIT"] == 1, counts
        assert CellRecord.from_json(r.to_json()).statements == r.statements


def test_a_cached_get_fails_its_cell_with_the_reason(tmp_path: Path) -> None:
    s = _scheduler(tmp_path, arms=("caching",), ops=("F",), modes=("warm",), sizes=Sizes(50, 50))
    try:
        outcome = s.outcome(s.planned[0])
    finally:
        s.close()
    assert outcome.problem is not None and outcome.problem.outcome == "verification failed"
    assert "answered from a cache" in outcome.problem.message


def test_instructions_without_valgrind_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(callgrind.shutil, "which", lambda name: None)
    with pytest.raises(callgrind.InstructionsUnavailable, match="apt-get install valgrind"):
        callgrind.check_available()


def test_the_plugin_refuses_instructions_without_valgrind(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(): pass")
    env = {**os.environ, "PATH": str(pytester.path)}  # no valgrind there, whatever the machine has
    result = subprocess.run([sys.executable, "-m", "pytest", "--ormbench-instructions", "-p", "no:cacheprovider",
                             str(pytester.path)], capture_output=True, text=True, env=env, cwd=pytester.path)
    out = result.stdout + result.stderr
    assert result.returncode == 4, out
    assert "needs valgrind" in out and "apt-get install valgrind" in out
    assert "Traceback" not in out


def test_a_callgrind_dump_gives_its_total() -> None:
    assert callgrind.parse_total("events: Ir\nfn=x\n1 5\ntotals: 12345\n") == 12345
    assert callgrind.parse_total("summary: 77\n") == 77
    with pytest.raises(ValueError):
        callgrind.parse_total("events: Ir\n")


@pytest.mark.skipif(not HAS_VALGRIND, reason="valgrind with callgrind.h is not installed")
def test_callgrind_counts_only_the_region_and_repeats_exactly(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import os
        from pathlib import Path
        from pytest_ormbench.measuring.callgrind import Callgrind
        cg = Callgrind(Path(os.environ["PYTEST_ORMBENCH_CALLGRIND_DIR"]))
        def work(n):
            return sum(i * i for i in range(n))
        out = []
        for n in (20000, 20000, 40000):
            cg.start(); work(n); out.append(cg.stop())
        print(out)
    """)
    vg = callgrind.check_available()
    runs = []
    for _ in range(2):
        cmd = [*callgrind.command(vg, tmp_path), sys.executable, "-c", code]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, callgrind.OUT_DIR_ENV: str(tmp_path)})
        assert proc.returncode == 0, proc.stderr
        runs.append(eval(proc.stdout.strip().splitlines()[-1]))  # noqa: S307
    for a, b, c in runs:
        assert abs(a - b) / a < 0.001, (a, b)  # the same work counts the same
        assert 1.8 < c / a < 2.2, (a, c)  # twice the work, twice the count: nothing else is in it
    assert abs(runs[0][0] - runs[1][0]) / runs[0][0] < 0.001, runs


@pytest.mark.skipif(not HAS_VALGRIND, reason="valgrind with callgrind.h is not installed")
def test_an_instructions_run_records_instructions_for_every_round(tmp_path: Path) -> None:
    s = _scheduler(tmp_path, instructions=True, ops=("F",), modes=("warm", "cold"))
    try:
        records = [s.outcome(k).record for k in s.planned]
    finally:
        s.close()
    for r in records:
        assert r is not None and r.instrumented == "callgrind"
        assert len(r.measures[INSTRUCTIONS]) == 2 and all(x > 0 for x in r.measures[INSTRUCTIONS])
        assert r.statements_per_op["SELECT"] == 10  # counted in an uninstrumented worker
        assert r.to_json()["rows_per_s"] is None


@pytest.mark.skipif(not HAS_VALGRIND, reason="valgrind with callgrind.h is not installed")
def test_an_instructions_run_forks_its_cells_from_one_preloaded_worker_under_valgrind(tmp_path: Path) -> None:
    """Issue 33: under callgrind, cold rounds and warm cells run in children forked from a worker that started
    under valgrind and imported the arm (valgrind and the imports once per arm module); each child counts its
    op alone, and the counts are those of fresh processes (a cold start stays cold, the counts do not move)."""
    counts = {}
    for how in ("fork", "fresh"):
        s = _scheduler(tmp_path, instructions=True, ops=("F",), modes=("warm", "cold"), cold_start=how)
        try:
            records = [s.outcome(k).record for k in s.planned]
            preloaded = {w.pid for w in s.processes.preloaded.pool.values()}
            names = sorted(s.processes.preloaded.pool)
            facts = s.run_facts()
        finally:
            s.close()
        assert facts["cold_start"]["how"] == how
        # one under valgrind for the counted rounds, one without it for the cold statement count
        assert len(names) == (2 if how == "fork" else 0) and sum("under callgrind" in n for n in names) == len(names) // 2
        for r in records:
            assert r is not None and r.verified and r.instrumented == "callgrind"
            assert not preloaded & set(r.worker_pids)  # the preloaded worker runs no op
        counts[how] = {r.key.mode: statistics.median(r.measures[INSTRUCTIONS]) for r in records}
    for mode, fresh in counts["fresh"].items():
        assert abs(counts["fork"][mode] / fresh - 1) < 0.01, (mode, counts)


def test_a_measuring_process_under_callgrind_keeps_only_the_environment_a_count_may_depend_on() -> None:
    """Issue 33: a count moves with the environment's size (one 22-byte variable moved a cell by 0.77 %), and
    a CI's baseline and branch jobs differ in their runner's variables: those stay out, in a fixed order."""
    env = {"PATH": "/bin", "GITHUB_REF": "refs/pull/7/merge", "BASELINE": "base.json", "PYTHONPATH": "/src",
           "HOME": "/root", "CI": "true", "LC_ALL": "C", "ORMBENCH_MYARM_URL": "x", "RUNNER_OS": "Linux",
           "PYTEST_ORMBENCH_CALLGRIND_DIR": "/tmp/cg", "PGHOST": "h", "TMPDIR": "/tmp"}
    kept = callgrind.measuring_environment(env)
    assert list(kept) == ["HOME", "LC_ALL", "ORMBENCH_MYARM_URL", "PATH", "PGHOST", "PYTEST_ORMBENCH_CALLGRIND_DIR",
                          "PYTHONPATH", "TMPDIR"]
    assert all(kept[k] == env[k] for k in kept)
    # the same matrix from two jobs that differ only in their runners' variables: one environment
    other = {**env, "GITHUB_REF": "refs/heads/main", "GITHUB_EVENT_NAME": "push"}
    del other["BASELINE"]
    assert callgrind.measuring_environment(other) == kept


@pytest.mark.skipif(not HAS_VALGRIND, reason="valgrind with callgrind.h is not installed")
def test_an_instructions_run_gives_its_measuring_processes_the_kept_environment_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_HEAD_REF", "a-branch-name")
    s = _scheduler(tmp_path, instructions=True, ops=("F",), modes=("cold",), cold_start="fresh")
    try:
        assert "GITHUB_HEAD_REF" in s.processes.env  # the uncounted workers (building, statement counts) keep it
        assert "GITHUB_HEAD_REF" not in s.processes.measuring_env
        assert s.processes.measuring_env == callgrind.measuring_environment(s.processes.measuring_env)
        assert callgrind.OUT_DIR_ENV in s.processes.measuring_env
        record = s.outcome(s.planned[0]).record  # and a process under valgrind runs in it
        assert record is not None and record.verified and all(x > 0 for x in record.measures[INSTRUCTIONS])
    finally:
        s.close()
