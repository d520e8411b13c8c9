"""The scheduler without pytest: the parent's side of a run driven from plain Python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_ormbench.scheduling.config import RunConfig
from pytest_ormbench.workload.spec import Settings
from pytest_ormbench.workload.plan import Sizes
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.arms.registry import all_arms
from pytest_ormbench.scheduling.scheduler import Scheduler

ROOT = Path(__file__).resolve().parents[1]


def _config(**kw) -> RunConfig:  # noqa: ANN003
    base = dict(arms=("sqlite3",), models=("simple",), ops=("B", "F"), modes=("warm", "cold"), tables=("default",),
                rounds=2, sizes=Sizes(5, 50), settings=Settings(), verify_only=False, probe=False)
    base.update(kw)
    return RunConfig(**base)


@pytest.fixture
def scheduler(request: pytest.FixtureRequest) -> Scheduler:
    run = _config(**getattr(request, "param", {}))
    s = Scheduler(run, all_arms(run.register), ROOT)
    s.planned = [CellKey(a, m, o, md, t) for a in run.arms for m in run.models for o in run.ops
                 for md in run.modes for t in run.tables]
    yield s
    s.close()
    assert not s.tmp.exists()


def test_an_interleaved_run_gives_each_cell_its_rounds_numbered_in_run_order(scheduler: Scheduler) -> None:
    outcomes = [scheduler.outcome(k) for k in scheduler.planned]
    assert all(o.problem is None for o in outcomes), [o.problem for o in outcomes]
    records = [o.record for o in outcomes]
    assert [r.key for r in records] == scheduler.planned
    assert all(r.rounds == 2 and r.verified and r.schedule == "interleaved" for r in records)
    slots = sorted(s for r in records for s in r.slots)
    assert slots == list(range(8))  # 4 cells x 2 rounds, each round its own place
    by_mode = {r.key.mode: r for r in records if r.key.op == "B"}
    assert len(set(by_mode["cold"].worker_pids)) == 2 and len(set(by_mode["warm"].worker_pids)) == 1
    assert by_mode["warm"].facts.commits == 1 and by_mode["warm"].facts.connections == 1


@pytest.mark.parametrize("scheduler", [{"schedule": "back-to-back", "modes": ("warm",)}], indirect=True)
def test_back_to_back_runs_a_cell_when_asked(scheduler: Scheduler) -> None:
    first = scheduler.outcome(scheduler.planned[0]).record
    assert first is not None and first.slots == [0, 1] and first.schedule == "back-to-back"


def test_an_unknown_cell_of_a_missing_arm_is_skipped_with_its_reason(scheduler: Scheduler) -> None:
    from pytest_ormbench.arms.registry import ArmEntry

    scheduler.arms["ghost"] = ArmEntry("ghost", "nowhere:Ghost", "ghost", ("surely_not_installed_pkg",), "ghost")
    outcome = scheduler.outcome(CellKey("ghost", "simple", "B", "warm", "default"))
    assert outcome.record is None and outcome.problem.outcome == "skipped"
    assert "surely_not_installed_pkg" in outcome.problem.message
    assert scheduler.not_run[-1][0] == "ghost-simple-insert_batch-warm-default"


def test_the_scheduler_imports_no_pytest() -> None:
    code = "import sys, pytest_ormbench.scheduling.scheduler; sys.exit('pytest' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def test_an_interrupted_round_is_stopped_not_waited_for(scheduler: Scheduler,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C or SIGTERM while a fresh worker runs a round: its process is terminated at once (no grace
    period), since nobody will read the round; an answered request still lets the worker end by itself."""
    import pytest_ormbench.scheduling.processes as processes_module

    closed: list[float] = []
    real_close = processes_module.Worker.close

    def recording_close(self, timeout: float = 10.0) -> None:  # noqa: ANN001
        closed.append(timeout)
        real_close(self, timeout)

    monkeypatch.setattr(processes_module.Worker, "close", recording_close)
    key = CellKey("sqlite3", "simple", "F", "cold", "default")
    cell = scheduler._cell(key, 1, False)
    assert scheduler.processes.once(key, cell)["record"]
    assert closed == [10.0]

    def interrupted(*args, **kwargs):  # noqa: ANN002, ANN003
        raise KeyboardInterrupt

    monkeypatch.setattr(scheduler.processes, "ask", interrupted)
    with pytest.raises(KeyboardInterrupt):
        scheduler.processes.once(key, cell)
    assert closed == [10.0, 0.0]


@pytest.mark.parametrize("scheduler", [{"schedule": "back-to-back", "modes": ("warm",), "probe": True},
                                       {"modes": ("warm",)}], indirect=True, ids=["back-to-back", "interleaved"])
def test_run_all_runs_the_schedule_once_and_each_round_carries_its_load(scheduler: Scheduler) -> None:
    from pytest_ormbench.scheduling.scheduler import LOADAVG

    scheduler.run_all()
    slots_after_run = [s for k in scheduler.planned for s in scheduler._gathered[k].record.slots]
    outcomes = [scheduler.outcome(k) for k in scheduler.planned]
    assert all(o.problem is None and o.seconds > 0 for o in outcomes), outcomes
    # the outcomes were gathered by run_all: asking ran nothing more
    assert [s for o in outcomes for s in o.record.slots] == slots_after_run
    assert sorted(slots_after_run) == list(range(4))
    for o in outcomes:
        loads = o.record.measures[LOADAVG]
        assert len(loads) == o.record.rounds == 2 and all(x >= 0 for x in loads)
        assert o.record.loadavg_1min == max(loads)
        assert o.record.to_json()["measures"][LOADAVG] == loads
    if scheduler.run.schedule == "back-to-back":
        assert [p["when"] for p in scheduler.probes] == ["start", "end"]  # 2 cells: no middle probe
        scheduler.records.extend(o.record for o in outcomes)
        scheduler.finish()
        assert len(scheduler.probes) == 2  # the end probe is not taken twice


def test_a_record_without_the_load_series_loads_as_before() -> None:
    from pytest_ormbench.results.record import CellRecord

    key = CellKey("sqlite3", "simple", "B", "warm", "default")
    old = {"arm": "sqlite3", "model": "simple", "op": "B", "mode": "warm", "table": "default", "rows": 50,
           "round_seconds": [0.1, 0.2], "loadavg_1min": 0.5, "verified": True}
    record = CellRecord.from_json(old)
    assert record.key == key and record.loadavg_1min == 0.5 and record.seconds == [0.1, 0.2]
    assert "loadavg_1min" not in record.measures


@pytest.mark.parametrize("scheduler", [{"modes": ("warm",), "rounds": 3},
                                       {"modes": ("warm",), "rounds": 3, "schedule": "back-to-back"}],
                         indirect=True, ids=["interleaved", "back-to-back"])
def test_the_progress_counts_the_plans_rounds_and_names_the_dropped_ones(scheduler: Scheduler,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan's rounds = done + dropped + to go: a cell of an arm whose package is missing and a cell whose
    starting state is unsupported leave the count with their reason, in a one-line note and in the lines."""
    from pytest_ormbench.arms.registry import ArmEntry
    from pytest_ormbench.scheduling.scheduler import CellProblem

    scheduler.arms["ghost"] = ArmEntry("ghost", "nowhere:Ghost", "ghost", ("surely_not_installed_pkg",), "ghost")
    scheduler.planned.append(CellKey("ghost", "simple", "B", "warm", "default"))
    unsupported = CellKey("sqlite3", "simple", "F", "warm", "default")
    real_build = scheduler._build

    def build(key: CellKey) -> None:
        if key == unsupported:
            raise CellProblem("unsupported", "not this one")
        real_build(key)

    monkeypatch.setattr(scheduler, "_build", build)
    lines: list[str] = []
    scheduler.say, scheduler.progress_interval = lines.append, 0.0
    scheduler.run_all()
    notes = [line for line in lines if " planned timed rounds dropped: " in line]
    assert notes[-1].startswith("pytest-ormbench: 6 of the 9 planned timed rounds dropped: ")
    assert notes[-1].endswith("; 3 run or to run")
    assert "1 cell unsupported (3)" in notes[-1] and "1 cell skipped: package missing (3)" in notes[-1]
    progress = [line for line in lines if line.startswith("pytest-ormbench: timed rounds: ")]
    assert progress[-1].startswith("pytest-ormbench: timed rounds: 3 of 9 done, 6 dropped (")
    assert scheduler.outcome(scheduler.planned[0]).record is not None


def test_the_run_accounts_for_its_wall_time_by_phase(scheduler: Scheduler) -> None:
    """Issue 33: every request's wall time is charged to a phase (the child's own, or the parent's process and
    messages), the rest of the run's to ``other``; the cells' records carry their child's phases; the terminal
    summary's table is built from the account."""
    from pytest_ormbench.results.report.tables.phases import phase_table
    from pytest_ormbench.workload.phases import PHASES

    outcomes = [scheduler.outcome(k) for k in scheduler.planned]
    assert all(o.problem is None for o in outcomes)
    for o in outcomes:
        phases = o.record.phases
        assert set(phases) <= set(PHASES) and phases["timed"] > 0 and phases["verify"] > 0
        assert o.record.to_json()["phases"].keys() == phases.keys()
        # the figure is made of the timed phase: its rounds' wall times sum to it
        assert abs(sum(o.record.seconds) - phases["timed"]) < 1e-3
    cold = next(o.record for o in outcomes if o.record.key.mode == "cold")
    assert "warmup" not in cold.phases and "restore" not in cold.phases  # a fresh process per round
    account = scheduler.run_facts()["phases"]
    units, total = account["units"], account["total"]
    assert set(units) == {"sqlite3"}
    assert abs(sum(total.values()) - account["run_seconds"]) < 1e-6  # everything is charged somewhere
    assert total["timed"] == pytest.approx(sum(o.record.phases["timed"] for o in outcomes))
    assert total["process"] > 0 and total["count"] > 0 and total["build"] > 0
    table = phase_table(account)
    assert table is not None and table.rows[-1][0] == "Total" and table.header[-1] == "÷ timed"


def _cold_records(run_kw: dict) -> tuple[list, dict, set[int]]:  # noqa: ANN001
    run = _config(modes=("cold",), **run_kw)
    s = Scheduler(run, all_arms(run.register), ROOT)
    s.planned = [CellKey("sqlite3", "simple", o, "cold", "default") for o in run.ops]
    try:
        outcomes = [s.outcome(k) for k in s.planned]
        facts = s.run_facts()
        preloaded = {w.pid for w in s.processes.preloaded.pool.values()}
    finally:
        s.close()
    assert all(o.problem is None for o in outcomes), [o.problem for o in outcomes]
    return [o.record for o in outcomes], facts, preloaded


def test_cold_rounds_fork_from_a_preloaded_worker_that_never_runs_an_op() -> None:
    """Issue 33: a cold round's process is a child of a worker that imported the arm's module; each round its
    own child, the preloaded worker none of them, the rounds verified, and the statements counted exactly as
    in fresh interpreters (a cold start must stay cold); the run's facts say how cold rounds started."""
    forked, facts, preloaded = _cold_records({"cold_start": "fork"})
    fresh, fresh_facts, none = _cold_records({"cold_start": "fresh"})
    assert facts["cold_start"] == {"how": "fork", "fresh": {}} and fresh_facts["cold_start"]["how"] == "fresh"
    assert len(preloaded) == 1 and not none
    for rec in forked:
        assert rec.verified and rec.rounds == 2 and len(set(rec.worker_pids)) == 2
        assert not preloaded & set(rec.worker_pids)
        assert "warmup" not in rec.phases  # a cold round: no warm-up in its process
    assert [r.statements for r in forked] == [r.statements for r in fresh]


def test_a_module_that_leaves_a_thread_running_is_not_forked(tmp_path: Path) -> None:
    """A fork copies the calling thread alone: an arm module whose import starts a thread is refused in the
    preloaded worker, its cold rounds then start fresh processes, and the pool says why."""
    from pytest_ormbench.scheduling.workers import Preloaded, Worker, child_env

    (tmp_path / "threaded_arm.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "class Arm:\n    pass\n")
    run = _config(modes=("cold",))
    s = Scheduler(run, all_arms(run.register), ROOT)
    cell = s._cell(CellKey("sqlite3", "simple", "B", "cold", "default"), 1, False).to_json()
    env = child_env([str(tmp_path), str(ROOT / "src")])
    pool = Preloaded()
    try:
        for target, forkable in (("threaded_arm:Arm", False), (cell["target"], True)):
            got = pool.get(target, target, lambda: Worker(env=env, cwd=str(ROOT)),
                           lambda w: w.request({"cmd": "preload", "cell": {**cell, "target": target}}))
            assert (got is not None) == forkable
        assert pool.refused == {"threaded_arm:Arm": "2 threads after the arm's import"}
        assert pool.get("threaded_arm:Arm", "threaded_arm:Arm", lambda: 1 / 0, lambda w: {}) is None  # asked once
    finally:
        for w in pool.pool.values():
            w.close()
        s.close()


@pytest.mark.parametrize("scheduler", [{"modes": ("warm",), "rounds": 3}], indirect=True)
def test_an_interleaved_warm_cell_keeps_its_session_between_rounds(scheduler: Scheduler) -> None:
    """Issue 33: the warm-up, the copy and the connection once per cell, not once per interleaved round; each
    round still restored first and verified; the worker holds no session once the cell's last round is done."""
    scheduler.run_all()
    assert scheduler.run_facts()["warm_start"] == "kept" and scheduler.run_facts()["warm_start_fresh"] == {}
    for key in scheduler.planned:
        rec = scheduler.outcome(key).record
        assert rec.verified and rec.rounds == 3 and len(set(rec.worker_pids)) == 1
        assert rec.phases["restore"] > 0 and rec.phases["timed"] > 0
    # the request's own phases: the first visit's copy and warm-up are charged once, not three times
    account = scheduler.run_facts()["phases"]["units"]["sqlite3"]
    fresh_run = _config(modes=("warm",), rounds=3, warm_start="fresh")
    fresh = Scheduler(fresh_run, all_arms(fresh_run.register), ROOT)
    fresh.planned = list(scheduler.planned)
    try:
        fresh.run_all()
        again = fresh.run_facts()["phases"]["units"]["sqlite3"]
        assert fresh.run_facts()["warm_start"] == "fresh"
        assert [fresh.outcome(k).record.statements for k in fresh.planned] == \
            [scheduler.outcome(k).record.statements for k in scheduler.planned]
    finally:
        fresh.close()
    assert account["warmup"] < again["warmup"]


def test_a_kept_session_is_closed_by_the_last_round_and_by_the_workers_end(tmp_path: Path) -> None:
    from pytest_ormbench.measuring import worker

    run = _config(modes=("warm",))
    s = Scheduler(run, all_arms(run.register), ROOT)
    try:
        key = CellKey("sqlite3", "simple", "F", "warm", "default")
        s._build(key)
        cell = s._cell(key, 1, True)
        first = worker.measure(cell, keep=True)
        assert len(worker._KEPT) == 1 and "warmup" in first.phases and "copy" in first.phases
        second = worker.measure(cell, keep=True)
        assert "warmup" not in second.phases and "copy" not in second.phases and second.phases["restore"] > 0
        assert second.verified
        worker.measure(cell, keep=False)
        assert not worker._KEPT and not list(cell.work_dir.glob("*.db*"))
        worker.measure(cell, keep=True)
        worker.close_kept()
        assert not worker._KEPT and not list(cell.work_dir.glob("*.db*"))
    finally:
        worker.close_kept()
        s.close()


@pytest.mark.parametrize("scheduler", [{"modes": ("warm",), "arms": ("sqlite3", "tortoise"), "ops": ("F",)}],
                         indirect=True)
def test_the_run_facts_name_the_arms_whose_warm_sessions_were_not_kept(scheduler: Scheduler) -> None:
    """A run that keeps warm sessions says which arms it could not keep them for, and why."""
    pytest.importorskip("tortoise")
    from pytest_ormbench.scheduling.scheduler import NOT_KEPT

    scheduler.run_all()
    assert all(scheduler.outcome(k).record.verified for k in scheduler.planned)
    facts = scheduler.run_facts()
    assert facts["warm_start"] == "kept" and facts["warm_start_fresh"] == {"tortoise": NOT_KEPT}


@pytest.mark.parametrize("arm", ["tortoise", "sqlalchemy_async", "ormar"])
def test_an_async_arm_keeps_its_session_only_if_it_declares_independent_sessions(tmp_path: Path, arm: str) -> None:
    """Tortoise ORM's connections are the process's (``Tortoise.init``): asked to keep, the worker closes its
    session all the same and the next round warms up again. SA ORM async holds its engine in the instance, on the
    process's one event loop, and ormar its own DatabaseConnection: their sessions are kept, and the next round
    runs in one without a warm-up, verified."""
    pytest.importorskip({"tortoise": "tortoise", "sqlalchemy_async": "aiosqlite", "ormar": "ormar"}[arm])
    from pytest_ormbench.measuring import worker

    run = _config(modes=("warm",), arms=("sqlite3", arm))
    s = Scheduler(run, all_arms(run.register), ROOT)
    try:
        key = CellKey(arm, "simple", "A", "warm", "default")
        s._build(key)
        cell = s._cell(key, 1, True)
        kept = arm != "tortoise"
        reply = worker.handle({"cmd": "run", "cell": cell.to_json(), "keep": True})
        assert reply["ok"] and reply["kept"] == kept  # what the scheduler's run facts list (warm_start_fresh)
        worker.close_kept()
        first = worker.measure(cell, keep=True)
        assert first.verified and "warmup" in first.phases and len(worker._KEPT) == kept
        second = worker.measure(cell, keep=True)
        assert second.verified and ("warmup" in second.phases) != kept and len(worker._KEPT) == kept
    finally:
        worker.close_kept()
        s.close()


SHARED = ("tests.shared_connection_arm:SharedConnectionArm", "tests.shared_connection_arm:MisdeclaredSharedConnectionArm")


@pytest.mark.parametrize("arm, kept", [("shared_connection", False), ("sqlite3", True)])
def test_only_an_arm_whose_instances_keep_apart_keeps_its_sessions(tmp_path: Path, arm: str, kept: bool) -> None:
    """Django's connection is the process's: while cells alternated in its worker, the next cell's open took a
    kept session's connection and that session's rounds ran on the other cell's database (its writes counted
    0 commits). An arm that does not declare ``independent_sessions`` closes its session after each request,
    warms up again and verifies; one that does keeps it."""
    from pytest_ormbench.measuring import worker

    run = _config(modes=("warm",), arms=(arm,), register=SHARED)
    s = Scheduler(run, all_arms(run.register), ROOT)
    try:
        cells = []
        for op in ("A", "G", "I"):
            key = CellKey(arm, "simple", op, "warm", "default")
            s._build(key)
            cells.append(s._cell(key, 1, True))
        for visit in range(3):
            for cell in cells:
                rec = worker.measure(cell, keep=True)
                assert rec.verified
                assert ("warmup" in rec.phases) == (visit == 0 or not kept), (visit, cell.op, rec.phases)
        assert len(worker._KEPT) == (3 if kept else 0)
    finally:
        worker.close_kept()
        s.close()


def test_an_arm_that_claims_independent_sessions_wrongly_fails_its_cell_in_one_line(tmp_path: Path) -> None:
    """Declared independent, a process-wide connection would have its kept session's rounds run on another
    cell's database: the worker finds the session's database without its connection and refuses."""
    from pytest_ormbench.measuring import worker

    arm = "misdeclared_shared_connection"
    run = _config(modes=("warm",), arms=(arm,), register=SHARED)
    s = Scheduler(run, all_arms(run.register), ROOT)
    try:
        cells = []
        for op in ("A", "F"):
            key = CellKey(arm, "simple", op, "warm", "default")
            s._build(key)
            cells.append(s._cell(key, 1, True))
        for cell in cells:
            assert worker.measure(cell, keep=True).verified
        with pytest.raises(RuntimeError, match="declares independent_sessions, but its kept session no longer holds"):
            worker.measure(cells[0], keep=True)
        assert len(worker._KEPT) == 1  # the refused session is closed; the other cell's is still kept
    finally:
        worker.close_kept()
        s.close()


def _independent_arms() -> list[str]:
    from pytest_ormbench.arms.registry import import_arm

    names = []
    for name, entry in all_arms().items():
        if entry.missing() or entry.control_for not in ("", "sqlite"):
            continue
        cls = import_arm(entry.target)
        if cls.independent_sessions and "sqlite" in cls.databases:
            names.append(name)
    return names


@pytest.mark.parametrize("arm", _independent_arms())
def test_every_arm_that_keeps_its_sessions_verifies_with_cells_alternating_in_its_worker(arm: str) -> None:
    """Each installed arm that declares ``independent_sessions``, run the way a timed run runs it: interleaved
    warm cells of two models, writes and reads, alternating in the arm's worker with their sessions kept."""
    run = _config(modes=("warm",), arms=(arm,), models=("simple", "fk"), ops=("A", "C", "F", "I"), rounds=2)
    s = Scheduler(run, all_arms(run.register), ROOT)
    s.planned = [CellKey(arm, m, o, "warm", "default") for m in run.models for o in run.ops]
    try:
        s.run_all()
        assert s.run_facts()["warm_start"] == "kept" and s.run_facts()["warm_start_fresh"] == {}
        outcomes = [s.outcome(k) for k in s.planned]
        problems = {str(o.key): o.problem and o.problem.message for o in outcomes
                    if o.record is None or not o.record.verified}
        assert not problems, problems
    finally:
        s.close()
