"""The plugin end to end, through pytester: options, matrix, JSON, modes, checks."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from conftest import TINY, register


# -- options ------------------------------------------------------------------

@pytest.mark.parametrize(
    "option, message",
    [
        ("--ormbench-ops=Z", "--ormbench-ops: unknown value 'Z'; valid: A, B, C"),
        ("--ormbench-models=huge", "--ormbench-models: unknown value 'huge'; valid: simple, fk, wide"),
        ("--ormbench-mode=lukewarm", "--ormbench-mode: unknown value 'lukewarm'; valid: cold, warm"),
        ("--ormbench-table=medium", "--ormbench-table: unknown value 'medium'; valid: default, large"),
        ("--ormbench-arms=nosuch", "--ormbench-arms: unknown value 'nosuch'; valid: sqlite3"),
        ("--ormbench-rounds=0", "--ormbench-rounds: expected a positive whole number, got '0'"),
        ("--ormbench-iterations=ten", "--ormbench-iterations: expected a positive whole number, got 'ten'"),
        ("--ormbench-batch=-5", "--ormbench-batch: expected a positive whole number"),
        ("--ormbench-sqlite-journal=memory", "--ormbench-sqlite-journal: unknown value 'memory'; valid: delete, wal"),
        ("--ormbench-sqlite-synchronous=extra", "--ormbench-sqlite-synchronous: unknown value 'extra'; valid: off, normal, full"),
        ("--ormbench-register=nocolon", "--ormbench-register: expected module:Class"),
        ("--ormbench-register=no_such_module:X", "--ormbench-register: cannot load arm"),
        ("--ormbench-ops=", "--ormbench-ops: empty value"),
    ],
)
def test_bad_option_is_a_usage_error(bench: pytest.Pytester, option: str, message: str) -> None:
    result = bench.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_ini_keys_set_defaults_and_the_command_line_wins(bench: pytest.Pytester) -> None:
    bench.makeini("[pytest]\normbench_arms = sqlite3\normbench_ops = A,D\normbench_models = fk\normbench_mode = warm\n")
    result = bench.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*sqlite3-fk-insert_single-warm-default*", "*sqlite3-fk-filter_large-warm-default*",
                                 "2 tests collected*"])
    result = bench.runpytest("--collect-only", "-q", "--ormbench-ops=get")
    result.stdout.fnmatch_lines(["*sqlite3-fk-get-warm-default*", "1 test collected*"])
    bench.makeini("[pytest]\normbench_rounds = many\n")
    result = bench.runpytest("--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_matrix_ids_and_keyword_selection(bench: pytest.Pytester) -> None:
    result = bench.runpytest("--collect-only", "-q", "--ormbench-arms=sqlite3", "--ormbench-mode=cold,warm",
                             "--ormbench-table=default,large")
    # 1 arm x 3 models x 11 ops x 2 modes x 2 tables
    result.stdout.fnmatch_lines(["132 tests collected*"])
    result = bench.runpytest("--collect-only", "-q", "--ormbench-arms=sqlite3",
                             "-k", "sqlite3-simple-insert_single-cold-default")
    result.stdout.fnmatch_lines(["test_bench.py::test_orm[[]sqlite3-simple-insert_single-cold-default[]]",
                                 "1/66 tests collected (65 deselected)*"])
    result = bench.runpytest("--collect-only", "-q", "--ormbench-ops=insert_bulk,k", "--ormbench-models=3",
                             "--ormbench-mode=warm", "--ormbench-arms=sqlite3")
    result.stdout.fnmatch_lines(["*sqlite3-wide-insert_bulk-warm-default*", "*sqlite3-wide-delete-warm-default*"])


# -- results -----------------------------------------------------------------

def _run_json(bench: pytest.Pytester, *args: str, subprocess: bool = False) -> tuple[pytest.RunResult, dict]:
    out = bench.path / "out.json"
    out.unlink(missing_ok=True)
    run = bench.runpytest_subprocess if subprocess else bench.runpytest
    result = run(*TINY, f"--benchmark-json={out}", *args)
    data = json.loads(out.read_text()) if out.exists() else {"benchmarks": []}
    return result, data


def test_json_carries_the_cell_and_its_verified_facts(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=fk", "--ormbench-ops=C,F",
                             "--ormbench-mode=warm", "--ormbench-rounds=3")
    result.assert_outcomes(passed=2)
    by_op = {b["extra_info"]["op"]: b for b in data["benchmarks"]}
    bulk = by_op["C"]
    info = bulk["extra_info"]
    for key in ("arm", "model", "op", "op_name", "mode", "table", "rows", "verified", "versions",
                "sqlite_version", "pragmas", "deviations", "rows_per_s", "round_seconds"):
        assert key in info, key
    assert info["arm"] == "sqlite3" and info["model"] == "fk" and info["op_name"] == "insert_bulk"
    assert info["rows"] == 50 and info["verified"] is True and info["bulk_ids_set"] is False
    assert info["pragmas"] == {"journal_mode": "delete", "synchronous": "full", "foreign_keys": "on"}
    assert info["commits"] == 1 and info["connections"] == 1
    assert len(bulk["stats"]["data"]) == 3 == info["rounds"]
    assert info["rows_per_s"] == pytest.approx(50 / bulk["stats"]["median"])
    assert by_op["F"]["extra_info"]["rows"] == 10  # 2 x iterations
    result.stdout.fnmatch_lines(["*pytest-ormbench: rows per second*", "Test 2: relations — warm, default table",
                                 "*Geometric mean*"])


def test_cold_rounds_run_in_distinct_processes_warm_in_one(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=D",
                             "--ormbench-mode=cold,warm", "--ormbench-rounds=3")
    result.assert_outcomes(passed=2)
    pids = {b["extra_info"]["mode"]: b["extra_info"]["worker_pids"] for b in data["benchmarks"]}
    assert len(pids["cold"]) == 3 and len(set(pids["cold"])) == 3
    assert len(set(pids["warm"])) == 1  # one long-lived worker, visited once per interleaved round
    assert not set(pids["cold"]) & set(pids["warm"])


def test_gc_is_frozen_and_preparation_is_outside_the_timed_region(bench: pytest.Pytester, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "events.jsonl"
    monkeypatch.setenv("ORMBENCH_PROBE_LOG", str(log))
    result, _ = _run_json(bench, *register("ProbeArm"), "--ormbench-arms=probe", "--ormbench-models=simple",
                          "--ormbench-ops=B,J", "--ormbench-mode=cold")
    result.assert_outcomes(passed=2)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    timed = [e for e in events if e["event"] in ("build", "load_all", "clock", "op")]
    for pid in {e["pid"] for e in timed if e["event"] == "op"}:
        seq = [e for e in timed if e["pid"] == pid]
        kinds = [e["event"] for e in seq]
        i = kinds.index("op")
        # the op sits between the two clock readings, preparation before the first
        assert kinds[i - 1] == "clock" and kinds[i + 1] == "clock", kinds
        assert kinds[i - 2] in ("build", "load_all"), kinds
        assert seq[i]["frozen"] > 0, "gc was not frozen during the timed op"


def test_wrong_adapter_fails_verification_and_records_no_number(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, *register("LazyArm"), "--ormbench-arms=lazy,sqlite3", "--ormbench-models=simple",
                             "--ormbench-ops=B", "--ormbench-mode=warm")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*lazy-simple-insert_batch-warm-default: verification failed: insert_batch:*rows*",
                                 "*cells without a number*", "verification failed: *lazy-simple-insert_batch*"])
    assert [b["extra_info"]["arm"] for b in data["benchmarks"]] == ["sqlite3"]


def test_warm_restore_resets_id_sequences(bench: pytest.Pytester) -> None:
    args = (*register("AutoincrementArm", "NoRestoreArm"), "--ormbench-models=simple", "--ormbench-ops=B",
            "--ormbench-mode=warm", "--ormbench-rounds=3")
    result, data = _run_json(bench, "--ormbench-arms=autoinc", *args)
    result.assert_outcomes(passed=1)
    # the same cell with a restore that keeps the id sequence is caught
    result, data = _run_json(bench, "--ormbench-arms=norestore", *args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*insert_batch: objects got ids*expected*"])
    assert data["benchmarks"] == []


def test_unsupported_op_and_missing_package_are_reported_with_reasons(bench: pytest.Pytester) -> None:
    result, _ = _run_json(bench, *register("SlothArm", "MissingArm"), "--ormbench-arms=sloth,missing",
                          "--ormbench-models=simple", "--ormbench-ops=C", "--ormbench-mode=warm", "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines([
        "*unsupported by sloth: sloths do not bulk insert*",
        "*missing: package 'surely_not_an_installed_package' is not installed*",
    ])
    result.stdout.fnmatch_lines(["*cells without a number*"])


def test_timing_under_xdist_stops_verify_only_works(bench: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = bench.runpytest_subprocess(*TINY, "-n", "2", "--ormbench-arms=sqlite3", "--ormbench-ops=A")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*timings under pytest-xdist would be spoiled*--ormbench-verify-only*"])
    result = bench.runpytest_subprocess(*TINY, "-n", "2", "--ormbench-arms=sqlite3", "--ormbench-ops=A,K",
                                        "--ormbench-verify-only")
    result.assert_outcomes(passed=12)


def test_verify_only_records_nothing(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=A",
                             "--ormbench-verify-only", "--ormbench-rounds=5")
    result.assert_outcomes(passed=2)
    assert data["benchmarks"] == []


def test_wal_and_synchronous_settings_reach_the_live_connection(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=B",
                             "--ormbench-mode=warm", "--ormbench-sqlite-journal=wal",
                             "--ormbench-sqlite-synchronous=normal")
    result.assert_outcomes(passed=1)
    info = data["benchmarks"][0]["extra_info"]
    assert info["pragmas"] == {"journal_mode": "wal", "synchronous": "normal", "foreign_keys": "on"}
    assert info["commits"] is None  # SQLite keeps no change counter in WAL mode


def test_report_option_and_memory_peaks(bench: pytest.Pytester) -> None:
    report = bench.path / "out" / "report.md"
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=B,D",
                             "--ormbench-mode=warm", "--ormbench-memory", f"--ormbench-report={report}",
                             # charts import numpy; an inline run would drop it from sys.modules afterwards,
                             # and numpy refuses a second import in the same process
                             subprocess=True)
    result.assert_outcomes(passed=2)
    peaks = [b["extra_info"]["memory_peak_bytes"] for b in data["benchmarks"]]
    assert len(peaks) == 2 and all(p > 0 for p in peaks)
    text = report.read_text()
    assert "### Test 1: simple model — warm, default table" in text and "Peak memory allocated" in text
    result.stdout.fnmatch_lines([f"*report written to {report}*"])


# -- schedule and drift floor ------------------------------------------------

def _slots(data: dict) -> dict[str, list[int]]:
    return {b["extra_info"]["arm"]: b["extra_info"]["round_slots"] for b in data["benchmarks"]}


def test_interleaved_rounds_rotate_the_arm_order(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, *register("ProbeArm"), "--ormbench-arms=sqlite3,probe",
                             "--ormbench-models=simple", "--ormbench-ops=D", "--ormbench-mode=warm",
                             "--ormbench-rounds=3", "--ormbench-probe=on")
    result.assert_outcomes(passed=2)
    # round 1: sqlite3, probe; round 2: probe, sqlite3; round 3: sqlite3, probe
    assert _slots(data) == {"sqlite3": [0, 3, 4], "probe": [1, 2, 5]}
    facts = data["ormbench"]
    assert facts["schedule"] == "interleaved"
    assert [p["when"] for p in facts["probes"]] == ["start", "after round 1", "after round 2", "after round 3"]
    figures = [p["rows_per_s"] for p in facts["probes"]]
    assert len(figures) == 4 and all(f > 0 for f in figures)
    assert facts["drift_floor"] == pytest.approx((max(figures) - min(figures)) / statistics.median(figures))
    result.stdout.fnmatch_lines(["*building and verifying the starting states of 2 cells*",
                                 "*starting states ready after * s; interleaved schedule: 2 cells x 3 rounds*",
                                 "*round 2/3 done after * s (arm order: probe, sqlite3)*",
                                 "*schedule: interleaved; drift floor *% (sqlite3 probe, rows/s: *"])


def test_back_to_back_rounds_and_three_probes(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, *register("ProbeArm"), "--ormbench-arms=sqlite3,probe",
                             "--ormbench-models=simple", "--ormbench-ops=D,F", "--ormbench-mode=warm",
                             "--ormbench-rounds=2", "--ormbench-schedule=back-to-back",
                             "--ormbench-probe=on")
    result.assert_outcomes(passed=4)
    slots = sorted(b["extra_info"]["round_slots"] for b in data["benchmarks"])
    assert slots == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert [p["when"] for p in data["ormbench"]["probes"]] == ["start", "middle", "end"]
    assert data["ormbench"]["schedule"] == "back-to-back"


def test_a_failing_cell_leaves_the_interleaved_schedule_and_the_others_report(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, *register("LazyArm"), "--ormbench-arms=sqlite3,lazy",
                             "--ormbench-models=simple", "--ormbench-ops=B", "--ormbench-mode=warm",
                             "--ormbench-rounds=3")
    result.assert_outcomes(passed=1, failed=1)
    assert _slots(data)["sqlite3"] and len(_slots(data)["sqlite3"]) == 3
    result.stdout.fnmatch_lines(["*lazy-simple-insert_batch-warm-default: verification failed*"])


def test_probe_off_records_no_floor(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=D",
                             "--ormbench-mode=warm", "--ormbench-rounds=2")
    result.assert_outcomes(passed=1)
    assert data["ormbench"]["probes"] == [] and data["ormbench"]["drift_floor"] is None
    result.stdout.fnmatch_lines(["*drift floor unknown (sqlite3 probe, rows/s: none)*"])


def test_bad_schedule_and_alpha_are_usage_errors(bench: pytest.Pytester) -> None:
    for option, message in (("--ormbench-schedule=random", "*--ormbench-schedule: unknown value 'random'*"),
                            ("--ormbench-alpha=5", "*--ormbench-alpha: expected a number between 0 and 1*"),
                            ("--ormbench-probe=maybe", "*--ormbench-probe: unknown value 'maybe'*"),
                            ("--ormbench-correction=bonf", "*--ormbench-correction: unknown value 'bonf'*"),
                            ("--ormbench-drift=probe", "*--ormbench-drift: unknown value 'probe'*")):
        result = bench.runpytest(option)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([message])


# -- comparison with a baseline ----------------------------------------------

CMP_CELL = ("--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=D", "--ormbench-mode=warm",
            "--ormbench-rounds=5")


def test_compare_flags_a_cell_slower_than_its_baseline_and_exits_1(bench: pytest.Pytester) -> None:
    result, doc = _run_json(bench, *CMP_CELL, "--ormbench-probe=on")
    result.assert_outcomes(passed=1)
    assert doc["ormbench"]["drift_floor"] is not None
    assert doc["ormbench"]["probe"]["batch"] == 10000  # the probe's own sizes, not the run's
    # a baseline in which the same cell was ten times faster: this run must be a regression
    for b in doc["benchmarks"]:
        b["stats"]["data"] = [t / 10 for t in b["stats"]["data"]]
        b["extra_info"]["round_seconds"] = [t / 10 for t in b["extra_info"]["round_seconds"]]
    (bench.path / "baseline.json").write_text(json.dumps(doc))
    result = bench.runpytest(*TINY, *CMP_CELL, "--ormbench-compare=baseline.json",
                             "--ormbench-compare-markdown=out/compare.md")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*pytest-ormbench: comparison with the baseline*",
                                 "*sqlite3-simple-filter_large-warm-default*regression*"])
    assert "**1 regression**" in (bench.path / "out" / "compare.md").read_text()


def test_compare_with_itself_passes(bench: pytest.Pytester) -> None:
    result, doc = _run_json(bench, *CMP_CELL)
    (bench.path / "baseline.json").write_text(json.dumps(doc))
    # ten times slower baseline: this run is an improvement, never a failure
    for b in doc["benchmarks"]:
        b["stats"]["data"] = [t * 10 for t in b["stats"]["data"]]
        b["extra_info"]["round_seconds"] = [t * 10 for t in b["extra_info"]["round_seconds"]]
    (bench.path / "slow.json").write_text(json.dumps(doc))
    result = bench.runpytest(*TINY, *CMP_CELL, "--ormbench-compare=slow.json")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*No regressions, 1 improvement*"])


@pytest.mark.parametrize(("setup", "option", "message"), [
    (None, "--ormbench-compare=nothere.json", "*--ormbench-compare: nothere.json: no such file*"),
    ("not json", "--ormbench-compare=b.json", "*--ormbench-compare: *b.json: not valid JSON*"),
    ('{"benchmarks": []}', "--ormbench-compare=b.json", "*--ormbench-compare: *b.json: no pytest-ormbench cells*"),
    (None, "--ormbench-threshold=peewee", "*--ormbench-threshold: threshold 'peewee': expected PATTERN=PERCENT*"),
])
def test_bad_baselines_are_one_line_usage_errors(bench: pytest.Pytester, setup: str | None, option: str,
                                                  message: str) -> None:
    if setup is not None:
        (bench.path / "b.json").write_text(setup)
    result = bench.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
