"""The one cell record: its id, its JSON both ways, merging rounds, and reading the published results."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from pytest_ormbench.workload.spec import MODELS, OPS
from pytest_ormbench.workload.measures import WALL
from pytest_ormbench.workload.cells import CellKey, RecordError
from pytest_ormbench.results.record import (ENVIRONMENT_KEYS, CellRecord, Environment, Facts, applicable_deviations,
                                            fold_environments, unfold_environment)
from pytest_ormbench.arms.registry import BUILTIN_ARMS
from pytest_ormbench.results.stats import rows_per_second

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _record(seconds: list[float], **kw) -> CellRecord:  # noqa: ANN003
    key = kw.pop("key", CellKey("sqlalchemy_async", "fk", "C", "warm", "large"))
    return CellRecord(key=key, rows=50, start_rows=20_100, iterations=5, batch=50,
                      settings={"journal_mode": "delete", "synchronous": "full", "foreign_keys": True},
                      env=Environment("SA ORM async", versions={"SQLAlchemy": "2.1.9"}, database="sqlite"),
                      facts=Facts(pragmas={"journal_mode": "delete"}, commits=1, connections=1, bulk_ids_set=True,
                                  arm_facts={"statements": 3}),
                      measures={WALL: seconds}, **kw)


@pytest.mark.parametrize("arm", [e.name for e in BUILTIN_ARMS] + ["my-arm"])
def test_every_cell_id_parses_back_to_its_key(arm: str) -> None:
    for model in MODELS:
        for op in OPS:
            for mode, table in (("cold", "default"), ("warm", "large")):
                key = CellKey(arm, model, op.letter, mode, table)
                assert CellKey.parse(key.id) == key
    assert CellKey("peewee", "simple", "A", "cold", "default").id == "peewee-simple-insert_single-cold-default"


@pytest.mark.parametrize("bad", ["peewee", "peewee-simple-insert_single-cold", "peewee-huge-get-warm-default",
                                 "peewee-simple-fly-warm-default"])
def test_a_foreign_id_is_a_record_error(bad: str) -> None:
    with pytest.raises(RecordError):
        CellKey.parse(bad)


def test_json_round_trip_keeps_every_field() -> None:
    rec = _record([0.2, 0.1, 0.3], deviations={"fk": "text"}, slots=[0, 5, 9], worker_pids=[7], schedule="interleaved",
                  loadavg_1min=0.5)
    rec.measures["statements"] = [3, 3, 3]
    back = CellRecord.from_json(json.loads(json.dumps(rec.to_json())))
    assert back == rec
    info = rec.to_json()
    assert info["rows_per_s"] == rows_per_second(50, [0.2, 0.1, 0.3]) == rec.rows_per_s == 250
    assert "round_seconds" not in info and info["rounds"] == 3 and info["median_seconds"] == 0.2
    assert info["measures"] == {WALL: [0.2, 0.1, 0.3], "statements": [3, 3, 3]}
    assert info["op_name"] == "insert_bulk" and info["test"] == 2 and info["bulk_ids_set"] is True


def test_pytest_benchmarks_own_round_times_win() -> None:
    info = _record([0.2, 0.1, 0.3]).to_json()
    assert CellRecord.from_json(info, [1.0, 2.0]).seconds == [1.0, 2.0]


def test_merging_appends_rounds_and_keeps_the_last_facts() -> None:
    first = _record([0.1], slots=[0], worker_pids=[1])
    later = _record([0.3], slots=[4], worker_pids=[2])
    later.facts.commits = 2
    merged = first.merged(later)
    assert merged.seconds == [0.1, 0.3] and merged.slots == [0, 4] and merged.worker_pids == [1, 2]
    assert merged.facts.commits == 2 and first.seconds == [0.1]
    with pytest.raises(RecordError):
        first.merged(_record([0.2], key=CellKey("peewee", "fk", "C", "warm", "large")))


def test_a_sweep_cell_takes_its_direct_twins_statement_count_and_says_so() -> None:
    swept = CellKey("psycopg", "simple", "F", "warm", "default", "postgresql", 25.0)
    twin = CellKey("psycopg", "simple", "F", "warm", "default", "postgresql")
    counted = _record([0.5], key=twin, statements=[{"select": 10}])
    rec = _record([0.1, 0.2], key=swept).with_statements(counted)
    assert rec.statements == [{"select": 10}] and rec.statements_direct and rec.to_json()["statements_counted_direct"]
    assert CellRecord.from_json(json.loads(json.dumps(rec.to_json()))) == rec
    # its own count is not flagged; another cell's (or a direct cell taking a swept one's) is refused
    own = _record([0.1], key=twin).with_statements(counted)
    assert not own.statements_direct and "statements_counted_direct" not in own.to_json()
    for wrong, into in ((_record([0.5], key=CellKey("psycopg", "simple", "E", "warm", "default", "postgresql")), swept),
                        (_record([0.5], key=swept), twin)):
        with pytest.raises(RecordError):
            _record([0.1], key=into).with_statements(wrong)


def test_deviations_that_apply_to_a_cell() -> None:
    declared = {"*": "all", "get": "op", "fk": "model", "fk:get": "both", "wide": "other model", "delete": "other op"}
    assert applicable_deviations(declared, CellKey("x", "fk", "F", "warm", "default")) == {
        "*": "all", "get": "op", "fk": "model", "fk:get": "both"}


def test_facts_from_a_round_separate_the_arms_own() -> None:
    facts = Facts.from_round({"pragmas": {"a": "b"}, "commits": 1, "connections": 1, "statements": 40})
    assert facts.commits == 1 and facts.arm_facts == {"statements": 40} and facts.memory_peak_bytes is None


def test_every_published_cell_reads_back_unchanged() -> None:
    """Results written before the record existed load, and writing them again gives the same keys and values
    (round times once, in ``measures``)."""
    files = sorted(glob.glob(str(RESULTS / "*.json")))
    assert files, "results/ has no JSON"
    checked = 0
    for path in files:
        data = json.loads(Path(path).read_text())
        table = (data.get("ormbench") or {}).get("environments") or {}
        for bench in data["benchmarks"]:
            # a file that stores each environment once (its ormbench.environments) reads back as unfolded
            info = dict(unfold_environment(bench["extra_info"], table))
            rec = CellRecord.from_json(info, bench["stats"]["data"])
            again = rec.to_json()
            added = set(again) - set(info)
            assert added <= {"measures", "database", "db", "rtt_ms"}, added
            for k, v in info.items():
                if k == "round_seconds":  # kept once now: measures.wall_seconds (and pytest-benchmark's stats.data)
                    assert again["measures"]["wall_seconds"] == v == bench["stats"]["data"], (path, bench["name"])
                    continue
                assert again[k] == v, (path, bench["name"], k)
            assert bench["name"] == f"test_orm[{rec.id}]"
            checked += 1
    assert checked > 1000


def test_a_saved_run_stores_each_environment_once_and_reads_it_back() -> None:
    a, b = _record([0.1]).to_json(), _record([0.2]).to_json()
    c = _record([0.3]).to_json()
    c["versions"] = {"sqlite3": "other"}  # the same arm and place that found another environment
    originals = [dict(a), dict(b), dict(c)]
    table = fold_environments([a, b, c])
    assert list(table) == [a["environment"], c["environment"]] and a["environment"] == b["environment"]
    assert c["environment"] == a["environment"] + "#2"
    assert not set(ENVIRONMENT_KEYS) & set(a)
    assert [dict(unfold_environment(x, table)) for x in (a, b, c)] == originals
    assert unfold_environment(originals[0], {}) == originals[0]  # a file from before the table: as it is
    with pytest.raises(RecordError, match="not in the file's ormbench.environments"):
        unfold_environment(a, {})
