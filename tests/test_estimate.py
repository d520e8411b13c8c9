"""The estimate of the time left follows the load and weighs each kind of cell by its own cost (issue 34), and the
plan quotes a preset's measured time only for the databases it was measured on: synthetic rounds on a clock the
test moves, nothing timed for real."""

from __future__ import annotations

import pytest

from pytest_ormbench.scheduling.config import PRESETS, RunConfig
from pytest_ormbench.scheduling.progress import Kind, Progress, duration
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.workload.plan import Sizes
from pytest_ormbench.workload.spec import Settings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


#: ten kinds of cell on one arm, as different as a wide model's insert and a simple get (0.1 s to 5 s a round)
COSTS = {Kind("peewee", model, f"{op}-warm-default"): cost
         for (model, op), cost in zip([(m, o) for m in ("simple", "wide") for o in "BCDEF"],
                                      (0.1, 0.3, 0.2, 0.5, 0.4, 5.0, 2.0, 1.5, 3.0, 2.5))}


def _interleaved(rounds: int) -> tuple[Progress, Clock]:
    clock = Clock()
    return Progress.of("timed rounds", [k for k in COSTS for _ in range(rounds)], clock=clock), clock


def _round(p: Progress, clock: Clock, slowdown: float) -> None:
    for kind, cost in COSTS.items():
        clock.now += cost * slowdown
        p.finish(kind, cost * slowdown)


def test_a_slowdown_halfway_shows_in_the_estimate_within_a_few_rounds() -> None:
    rounds, per_round = 12, sum(COSTS.values())
    p, clock = _interleaved(rounds)
    for _ in range(6):
        _round(p, clock, 1.0)
    assert p.left() == pytest.approx(6 * per_round)
    assert p.speed == pytest.approx(1.0)
    # the machine gets twice as slow: after two slow rounds the estimate is what the slow rounds take now
    _round(p, clock, 2.0)
    _round(p, clock, 2.0)
    truth = 4 * 2 * per_round
    assert p.left() == pytest.approx(truth, rel=0.1)
    # the old estimate (each kind's mean so far, 1.25 times the first pace) would say 37% short
    trusting_the_past = sum(4 * p.spent[k] / p.finished[k] for k in COSTS)
    assert trusting_the_past < 0.7 * truth
    # the factor is against the kinds' means so far, which hold two slow rounds of eight already
    assert "x slower than their kinds so far" in p.line() and 1.4 < p.speed < 1.8
    # and back: the load goes away, the estimate shrinks again within a few rounds
    for _ in range(3):
        _round(p, clock, 1.0)
    assert p.left() == pytest.approx(per_round, rel=0.15)


def test_the_pace_moves_after_the_first_slow_round_not_on_one_slow_get() -> None:
    p, clock = _interleaved(10)
    _round(p, clock, 1.0)
    _round(p, clock, 1.0)
    first = p.left()
    # one 0.1 s get that took 1 s (a hiccup) barely moves the estimate: it weighs as the 0.1 s of work it was
    p.finish(next(iter(COSTS)), 1.0)
    assert p.left() < 1.05 * first
    # a whole round twice as slow (15.5 s of work, half the smoothing's 30 s) moves it about halfway
    _round(p, clock, 2.0)
    assert p.speed > 1.4


def test_a_wide_cell_costing_50_times_a_simple_one_is_weighted_so() -> None:
    simple, wide = Kind("ormar", "simple", "F-warm-default"), Kind("ormar", "wide", "B-warm-default")
    p = Progress.of("timed rounds", [simple] * 4 + [wide] * 4, clock=Clock())
    p.finish(simple, 0.2)
    p.finish(wide, 10.0)
    assert p.left() == pytest.approx(3 * 0.2 + 3 * 10.0)


def test_an_arm_not_yet_on_the_wide_model_borrows_its_cost_from_the_arms_that_were() -> None:
    """Under callgrind a wide model's rounds take minutes: an arm that ran only its simple cells so far is not
    taken to cost a simple cell's time on the wide ones, but what the wide ones cost on the other arms, scaled by
    how this arm compares with them on what both ran."""
    def kind(arm: str, model: str) -> Kind:
        return Kind(arm, model, "B-warm-default")

    p = Progress.of("timed rounds", [kind(a, m) for a in ("sqlite3", "ormar") for m in ("simple", "wide")],
                    clock=Clock())
    p.finish(kind("sqlite3", "simple"), 2.0)
    p.finish(kind("sqlite3", "wide"), 100.0)
    p.finish(kind("ormar", "simple"), 6.0)  # three times the control's pace
    assert p.expected(kind("ormar", "wide")) == pytest.approx(300.0)
    assert p.left() == pytest.approx(300.0)
    # alone, an arm's own mean on the model, then its mean
    q = Progress.of("timed rounds", [kind("ormar", "simple"), Kind("ormar", "wide", "D-warm-default"),
                                     kind("ormar", "wide")], clock=Clock())
    q.finish(kind("ormar", "simple"), 1.0)
    assert q.expected(kind("ormar", "wide")) == pytest.approx(1.0)
    q.finish(Kind("ormar", "wide", "D-warm-default"), 40.0)
    assert q.expected(kind("ormar", "wide")) == pytest.approx(40.0)


def test_a_counting_repetition_not_yet_measured_costs_what_its_round_does() -> None:
    round_, count = Kind("peewee", "fk", "C-cold-default"), Kind("peewee", "fk", "C-cold-default", "count")
    p = Progress.of("timed rounds", [round_] * 3, clock=Clock(), extra=[count])
    p.finish(round_, 4.0)
    assert p.expected(count) == pytest.approx(4.0)
    assert p.left() == pytest.approx(2 * 4.0 + 4.0) and p.total == 3
    # a first measurement of a kind says nothing of the pace
    p.finish(count, 40.0)
    assert p.speed == 1.0
    # another arm's counting repetition, once one arm has counted: that arm's count, scaled by the two arms' rounds
    other, other_count = Kind("pony", "fk", "C-cold-default"), Kind("pony", "fk", "C-cold-default", "count")
    q = Progress.of("timed rounds", [round_, other], clock=Clock(), extra=[count, other_count])
    for kind, seconds in ((round_, 4.0), (count, 12.0), (other, 2.0)):
        q.finish(kind, seconds)
    assert q.expected(other_count) == pytest.approx(6.0)


def test_dropped_rounds_are_counted_and_named() -> None:
    a, b = Kind("peewee", "simple", "B-warm-default"), Kind("pony", "wide", "C-warm-default")
    p = Progress.of("timed rounds", [a] * 3 + [b] * 3 * 6, clock=Clock())
    for n in range(6):
        p.drop("unsupported", {Kind("pony", "wide", "C-warm-default"): 3})
    p.finish(a, 1.0)
    assert p.done + sum(p.dropped.values()) + p.to_go == p.total == 21
    assert "18 dropped (6 cells unsupported)" in p.line()
    assert "18 of the 21 planned timed rounds dropped: 6 cells unsupported (18)" in p.dropped_note()


# -- the plan and the settings per database -------------------------------------------------------------

def _run(dbs: tuple[str, ...], **kw) -> RunConfig:  # noqa: ANN003
    base = dict(arms=("sqlite3", "peewee"), models=("simple",), ops=("B", "F"), modes=("warm",),
                tables=("default",), rounds=3, sizes=Sizes(20, 1000), settings=Settings(), verify_only=False,
                preset="quick", dbs=dbs)
    base.update(kw)
    return RunConfig(**base)


def _plan(run: RunConfig) -> str:
    from pytest_ormbench.plugin.hooks import _plan_line

    keys = [CellKey(a, m, o, md, t, db) for db in run.dbs for a in run.arms for m in run.models for o in run.ops
            for md in run.modes for t in run.tables]
    return _plan_line(run, keys)


def test_the_plan_quotes_the_sqlite_time_only_for_sqlite() -> None:
    sqlite_time = duration(PRESETS["quick"].measured_seconds)
    assert f"the whole quick matrix (13 arms) took {sqlite_time} on a 2-core machine" in _plan(_run(("sqlite",)))
    postgres = _plan(_run(("postgresql",)))
    assert sqlite_time not in postgres and "no measured time for this matrix" in postgres
    assert "12 timed rounds" in postgres
    mysql = _plan(_run(("mysql",), rtts=(0.0, 5.0)))
    assert sqlite_time not in mysql and "no measured time" in mysql
    both = _plan(_run(("sqlite", "postgresql")))
    assert f"matrix on SQLite (13 arms) took {sqlite_time}" in both
    assert both.endswith("no measured time for its PostgreSQL cells")


def test_the_settings_shown_are_those_of_the_databases_in_the_run() -> None:
    settings = Settings(postgresql=(("synchronous_commit", "off"),))
    assert _run(("sqlite",), settings=settings).durability() == {
        "journal_mode": "delete", "synchronous": "full", "foreign_keys": "on"}
    postgres = _run(("postgresql",), settings=settings).durability()
    assert postgres == {"postgresql.synchronous_commit": "off", "postgresql.fsync": "on",
                        "postgresql.full_page_writes": "on"}
    both = _run(("sqlite", "mysql")).durability()
    assert both["journal_mode"] == "delete" and both["mysql.innodb_flush_log_at_trx_commit"] == "1"
    assert not any(k.startswith("postgresql.") for k in both)


# -- the plan line's estimate from earlier runs' phase accounts (issue 33, item 1) ---------------------------

def _recorded_run(cells: dict[CellKey, dict[str, float]], units: dict[str, dict[str, float]], run_seconds: float,
                  when: str = "2026-12-05T10:00:00", rounds: int = 3, instrumented: bool = False) -> dict:
    benchmarks = []
    for key, phases in cells.items():
        info = {"arm": key.arm, "model": key.model, "op": key.op, "mode": key.mode, "table": key.table,
                "db": key.db, "rtt_ms": key.rtt_ms, "rounds": rounds, "phases": phases}
        if instrumented:
            info["instrumented"] = "callgrind"
        benchmarks.append({"name": key.id, "extra_info": info})
    return {"datetime": when, "benchmarks": benchmarks,
            "ormbench": {"phases": {"run_seconds": run_seconds, "units": units}}}


def test_a_recorded_cell_scales_its_rounds_and_carries_its_unit_and_run_shares() -> None:
    from pytest_ormbench.scheduling.estimate import read_run

    b, f = CellKey("peewee", "simple", "B", "warm", "default"), CellKey("peewee", "simple", "F", "warm", "default")
    cells = {b: {"timed": 3.0, "restore": 3.0, "template": 1.0}, f: {"timed": 1.0, "copy": 2.0}}
    # the unit's account holds its cells' phases and 4 s more (counting); the run 2 s more (the probe)
    data = _recorded_run(cells, {"peewee": {"timed": 4.0, "restore": 3.0, "template": 1.0, "copy": 2.0,
                                            "count": 4.0}, "probe": {"probe": 1.0}}, run_seconds=16.0)
    rec = read_run(data)
    # B: 6 s of round phases over 3 rounds, once: its template 1 s + half the unit's 4 s + half the run's 2 s
    assert rec[b.id].seconds(3) == pytest.approx(6.0 + 1.0 + 2.0 + 1.0)
    assert rec[b.id].seconds(6) == pytest.approx(12.0 + 4.0)  # twice the rounds: the round phases double
    assert rec[b.id].timed_seconds(6) == pytest.approx(6.0)
    assert rec[f.id].seconds(3) == pytest.approx(3.0 + 2.0 + 1.0)
    assert sum(r.seconds(3) for r in rec.values()) == pytest.approx(16.0)  # the whole run, accounted
    assert read_run(data, instructions=True) == {}  # a timed run's lengths say nothing of a callgrind run's


def test_the_plan_line_estimates_from_earlier_runs_and_says_how_much_it_guessed(tmp_path) -> None:  # noqa: ANN001
    import json

    run = _run(("sqlite",))
    keys = [CellKey(a, "simple", o, "warm", "default") for a in run.arms for o in run.ops]
    old = _recorded_run({k: {"timed": 30.0, "restore": 30.0} for k in keys[:3]}, {}, 0.0,
                        when="2026-12-01T00:00:00")
    new = _recorded_run({k: {"timed": 3.0, "restore": 3.0} for k in keys[:3]}, {}, 0.0)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "0001_old.json").write_text(json.dumps(old))
    (tmp_path / "a" / "0002_new.json").write_text(json.dumps(new))
    (tmp_path / "a" / "junk.json").write_text("{not json")
    from pytest_ormbench.plugin.hooks import _estimate, _plan_line

    line = _plan_line(run, keys, _estimate(run, keys, [tmp_path]))
    # the newest record of each cell: 3 cells x 6 s, the fourth estimated like its neighbours (another 6 s)
    assert "estimated 24 s of wall time, 12 s of it timed rounds, 2.0x" in line
    assert "the phase accounts of 3 of its 4 cells in 2 earlier run(s); 1 more estimated from their kind" in line
    assert "the whole quick matrix" not in line  # the estimate replaces the preset's measured time
    assert _estimate(run, keys, [tmp_path / "nothing-here"]) is None
    assert _estimate(_run(("sqlite",), verify_only=True), keys, [tmp_path]) is None
    guess = _estimate(run, keys, [tmp_path])
    assert guess.against({"run_seconds": 36.0, "total": {"timed": 10.0}}) == (
        "the plan estimated 24 s of wall time and 12 s timed; the run took 36 s (+50%), 10 s timed")
