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
        ("--ormbench-ops=Z", "--ormbench-ops: unknown value 'Z'; valid: letters A-K or names insert_single, "
                            "insert_batch, *, delete, or 'all'"),
        ("--ormbench-models=huge", "--ormbench-models: unknown value 'huge'; valid: simple, fk, wide, relational (or 1, 2, 3, 4)"),
        ("--ormbench-modes=lukewarm", "--ormbench-modes: unknown value 'lukewarm'; valid: cold, warm"),
        ("--ormbench-tables=medium", "--ormbench-tables: unknown value 'medium'; valid: default, large"),
        # an old spelling still works, and its error names it as the user typed it
        ("--ormbench-mode=lukewarm", "--ormbench-mode: unknown value 'lukewarm'; valid: cold, warm"),
        ("--ormbench-dbs=oracle", "--ormbench-dbs: unknown value 'oracle'; valid: sqlite, postgresql, mysql (or "
                                 "postgres, pg, sqlite3, mariadb)"),
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
    bench.makeini("[pytest]\normbench_arms = sqlite3\normbench_ops = A,D\normbench_models = fk\normbench_modes = warm\n")
    result = bench.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*sqlite3-fk-insert_single-warm-default*", "*sqlite3-fk-filter_large-warm-default*",
                                 "2 tests collected*"])
    result = bench.runpytest("--collect-only", "-q", "--ormbench-ops=get")
    result.stdout.fnmatch_lines(["*sqlite3-fk-get-warm-default*", "1 test collected*"])
    bench.makeini("[pytest]\normbench_rounds = many\n")
    result = bench.runpytest("--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_matrix_ids_and_keyword_selection(bench: pytest.Pytester) -> None:
    result = bench.runpytest("--collect-only", "-q", "--ormbench-arms=sqlite3", "--ormbench-modes=cold,warm",
                             "--ormbench-tables=default,large")
    # 1 arm x 3 models x 11 ops x 2 modes x 2 tables
    result.stdout.fnmatch_lines(["132 tests collected*"])
    result = bench.runpytest("--collect-only", "-q", "--ormbench-arms=sqlite3",
                             "-k", "sqlite3-simple-insert_single-cold-default")
    result.stdout.fnmatch_lines(["test_bench.py::test_orm[[]sqlite3-simple-insert_single-cold-default[]]",
                                 "1/66 tests collected (65 deselected)*"])
    result = bench.runpytest("--collect-only", "-q", "--ormbench-ops=insert_bulk,k", "--ormbench-models=3",
                             "--ormbench-modes=warm", "--ormbench-arms=sqlite3")
    result.stdout.fnmatch_lines(["*sqlite3-wide-insert_bulk-warm-default*", "*sqlite3-wide-delete-warm-default*"])


# -- results -----------------------------------------------------------------

#: the plugin's terminal table, shown when (and only when) the run timed a cell
TIMED_SUMMARY = "pytest-ormbench: rows per second"


def _run_json(bench: pytest.Pytester, *args: str, subprocess: bool = False,
              timed: bool = True) -> tuple[pytest.RunResult, dict]:
    """Run with ``--benchmark-json`` and read the file back.

    ``timed=False``: the run is expected to time no cell. pytest-benchmark then writes nothing: before 5.3
    ``--benchmark-json`` is an ``argparse.FileType`` that creates the file empty when the options are parsed
    and leaves it so; from 5.3 on there is no file. Either reads as "no benchmarks", but only after the
    run's own output confirms that nothing was timed. A run that timed something must leave a JSON
    document: an empty, missing or corrupt file fails.
    """
    out = bench.path / "out.json"
    out.unlink(missing_ok=True)
    run = bench.runpytest_subprocess if subprocess else bench.runpytest
    result = run(*TINY, f"--benchmark-json={out}", *args)
    text = out.read_text() if out.exists() else None
    if timed:
        assert text, f"the run timed cells but --benchmark-json left {'an empty file' if text == '' else 'no file'}"
        return result, json.loads(text)
    assert TIMED_SUMMARY not in result.stdout.str(), "expected a run that times nothing"
    return result, json.loads(text) if text else {"benchmarks": []}


def test_json_carries_the_cell_and_its_verified_facts(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=fk", "--ormbench-ops=C,F",
                             "--ormbench-modes=warm", "--ormbench-rounds=3")
    result.assert_outcomes(passed=2)
    by_op = {b["extra_info"]["op"]: b for b in data["benchmarks"]}
    bulk = by_op["C"]
    info = bulk["extra_info"]
    for key in ("arm", "model", "op", "op_name", "mode", "table", "rows", "verified", "environment",
                "pragmas", "deviations", "rows_per_s", "measures"):
        assert key in info, key
    # the environment is stored once per arm and place, not per cell; round times once (measures.wall_seconds)
    assert "round_seconds" not in info and "versions" not in info
    env = data["ormbench"]["environments"][info["environment"]]
    assert info["environment"] == "sqlite3@sqlite" and env["sqlite_version"] and "versions" in env
    assert info["measures"]["wall_seconds"] == bulk["stats"]["data"]
    assert info["arm"] == "sqlite3" and info["model"] == "fk" and info["op_name"] == "insert_bulk"
    assert info["rows"] == 50 and info["verified"] is True and info["bulk_ids_set"] is False
    assert info["pragmas"] == {"journal_mode": "delete", "synchronous": "full", "foreign_keys": "on",
                               "locking_mode": "normal"}
    assert info["commits"] == 1 and info["connections"] == 1
    assert len(bulk["stats"]["data"]) == 3 == info["rounds"]
    assert info["rows_per_s"] == pytest.approx(50 / bulk["stats"]["median"])
    assert by_op["F"]["extra_info"]["rows"] == 10  # 2 x iterations
    result.stdout.fnmatch_lines(["*pytest-ormbench: rows per second*",
                                 "settings: journal_mode=delete, synchronous=full, foreign_keys=on; 3 rounds per cell, "
                                 "iterations 5, batch 50*",
                                 "Test 2: relations — warm, default table (rows/s, higher is better)",
                                 "*Geometric Mean*"])


#: a conftest that hands the bench module a damaged copy of the cell's record (ORMBENCH_DAMAGE says how)
DAMAGING_CONFTEST = """
import os
from collections.abc import Mapping

import pytest


@pytest.fixture
def ormbench_cell(ormbench_cell):
    def damaged():
        record = ormbench_cell()
        info = dict(record) if isinstance(record, Mapping) else record.to_json()
        how = os.environ["ORMBENCH_DAMAGE"]
        if how == "lost round":
            info["measures"]["wall_seconds"] = info["measures"]["wall_seconds"][:-1]
            info["rounds"] -= 1
        elif how == "other cell":
            info["op"], info["op_name"] = "C", "insert_bulk"  # another cell's record names its op both ways
        elif how == "zero time":
            info["measures"]["wall_seconds"] = [0.0, *info["measures"]["wall_seconds"][1:]]
        elif how == "figure":
            info["rows_per_s"] *= 2
        elif how == "unverified":
            info["verified"] = False
        return info
    return damaged
"""


@pytest.mark.parametrize("damage, message", [
    ("none", None),  # the record as the harness returned it passes
    ("lost round", "*AssertionError: 2 round times, 2 rounds, 3 asked*"),
    ("other cell", "*AssertionError: the record is sqlite3-simple-insert_bulk-warm-default's*"),
    ("zero time", "*AssertionError: [[]0.0, *"),
    ("figure", "*assert * == *"),
    ("unverified", "*assert False is True*"),
])
def test_the_bench_module_rejects_a_damaged_record(bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                   damage: str, message: str | None) -> None:
    bench.makeconftest(DAMAGING_CONFTEST)
    monkeypatch.setenv("ORMBENCH_DAMAGE", damage)
    result = bench.runpytest(*TINY, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=D",
                             "--ormbench-modes=warm", "--ormbench-rounds=3")
    if message is None:
        result.assert_outcomes(passed=1)
    else:
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([message])


def test_cold_rounds_run_in_distinct_processes_warm_in_one(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=D",
                             "--ormbench-modes=cold,warm", "--ormbench-rounds=3")
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
                          "--ormbench-ops=B,J", "--ormbench-modes=cold", "--ormbench-no-control")
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
                             "--ormbench-ops=B", "--ormbench-modes=warm")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*lazy-simple-insert_batch-warm-default: verification failed: insert_batch:*rows*",
                                 "*cells without a number*", "verification failed: insert_batch: *rows*",
                                 "*1 cell(s): lazy-simple-insert_batch-warm-default"])
    assert [b["extra_info"]["arm"] for b in data["benchmarks"]] == ["sqlite3"]


def test_warm_restore_resets_id_sequences(bench: pytest.Pytester) -> None:
    args = (*register("AutoincrementArm", "NoRestoreArm"), "--ormbench-models=simple", "--ormbench-ops=B",
            "--ormbench-modes=warm", "--ormbench-rounds=3", "--ormbench-no-control")
    result, data = _run_json(bench, "--ormbench-arms=autoinc", *args)
    result.assert_outcomes(passed=1)
    # the same cell with a restore that keeps the id sequence is caught
    result, data = _run_json(bench, "--ormbench-arms=norestore", *args, timed=False)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*insert_batch: objects got ids*expected*"])
    assert data["benchmarks"] == []


def test_unsupported_op_and_missing_package_are_reported_with_reasons(bench: pytest.Pytester) -> None:
    # the missing arm selected by default (all arms, -k): skipped with its reason (named, it fails the run:
    # test_fail_closed.py)
    result, data = _run_json(bench, *register("SlothArm", "MissingArm"), "-k", "sloth or missing",
                             "--ormbench-models=simple", "--ormbench-ops=C", "--ormbench-modes=warm", "-rs",
                             "--ormbench-no-control", timed=False)
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines([
        "*unsupported by sloth: sloths do not bulk insert*",
        "*missing: package 'surely_not_an_installed_package' is not installed*",
    ])
    result.stdout.fnmatch_lines(["*cells without a number*"])
    assert data["benchmarks"] == []


def test_timing_under_xdist_stops_verify_only_works(bench: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = bench.runpytest_subprocess(*TINY, "-n", "2", "--ormbench-arms=sqlite3", "--ormbench-ops=A")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*timings under pytest-xdist would be spoiled*--ormbench-verify-only*"])
    result = bench.runpytest_subprocess(*TINY, "-n", "2", "--ormbench-arms=sqlite3", "--ormbench-ops=A,K",
                                        "--ormbench-verify-only")
    result.assert_outcomes(passed=12)


@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_runs_unchanged_under_pytest_asyncio(bench: pytest.Pytester, mode: str) -> None:
    """A user's suite with pytest-asyncio installed, in either mode, runs the benchmark as it ships."""
    pytest.importorskip("pytest_asyncio")
    args = ("-o", f"asyncio_mode={mode}", "--ormbench-arms=sqlite3", "--ormbench-models=simple",
            "--ormbench-ops=B,D", "--ormbench-modes=warm")
    result, data = _run_json(bench, *args, "--ormbench-rounds=2")
    assert f"asyncio: mode=mode.{mode}" in result.stdout.str().lower()  # pytest-asyncio loaded, in that mode
    result.assert_outcomes(passed=2)
    assert sorted(b["extra_info"]["op"] for b in data["benchmarks"]) == ["B", "D"]
    result, _ = _run_json(bench, *args, "--ormbench-verify-only", timed=False)
    result.assert_outcomes(passed=2)


def test_verify_only_records_nothing(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=A",
                             "--ormbench-verify-only", "--ormbench-rounds=5", timed=False)
    result.assert_outcomes(passed=2)
    assert data["benchmarks"] == []


def test_wal_and_synchronous_settings_reach_the_live_connection(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=B",
                             "--ormbench-modes=warm", "--ormbench-sqlite-journal=wal",
                             "--ormbench-sqlite-synchronous=normal")
    result.assert_outcomes(passed=1)
    info = data["benchmarks"][0]["extra_info"]
    assert info["pragmas"] == {"journal_mode": "wal", "synchronous": "normal", "foreign_keys": "on",
                               "locking_mode": "normal"}
    assert info["commits"] is None  # SQLite keeps no change counter in WAL mode


def test_report_option_and_memory_peaks(bench: pytest.Pytester) -> None:
    report = bench.path / "out" / "report.md"
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=B,D",
                             "--ormbench-modes=warm", "--ormbench-memory", f"--ormbench-report={report}",
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
                             "--ormbench-models=simple", "--ormbench-ops=D", "--ormbench-modes=warm",
                             "--ormbench-rounds=3", "--ormbench-probe")
    result.assert_outcomes(passed=2)
    # round 1: sqlite3, probe; round 2: probe, sqlite3; round 3: sqlite3, probe
    assert _slots(data) == {"sqlite3": [0, 3, 4], "probe": [1, 2, 5]}
    facts = data["ormbench"]
    assert facts["schedule"] == "interleaved"
    assert facts["probe"]["batch"] == 10000  # the probe's own sizes, not the run's
    assert [p["when"] for p in facts["probes"]] == ["start", "after round 1", "after round 2", "after round 3"]
    figures = [p["rows_per_s"] for p in facts["probes"]]
    assert len(figures) == 4 and all(f > 0 for f in figures)
    # each probe's round times per cell, from which its figure is the geometric mean of the cells' medians
    for probe in facts["probes"]:
        times = probe["round_seconds"]
        assert sorted(times) == sorted(facts["probe"]["cells"]) and all(len(t) == 5 for t in times.values())
        medians = [statistics.median(times["simple-insert_batch-warm-default"]),
                   statistics.median(times["simple-get-warm-default"])]
        assert probe["rows_per_s"] == pytest.approx(statistics.geometric_mean(
            [facts["probe"]["batch"] / medians[0], 2 * facts["probe"]["iterations"] / medians[1]]), rel=1e-4)
    assert facts["drift_floor"] == pytest.approx((max(figures) - min(figures)) / statistics.median(figures))
    result.stdout.fnmatch_lines(["*building and verifying the starting states of 2 cells*",
                                 "*starting states ready after * s; interleaved schedule: 2 cells x 3 rounds*",
                                 "*round 2/3 done after * s (arm order: probe, sqlite3)*",
                                 "*schedule: interleaved; drift floor *% (sqlite3 probe, rows/s: *"])


def test_back_to_back_rounds_and_three_probes(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, *register("ProbeArm"), "--ormbench-arms=sqlite3,probe",
                             "--ormbench-models=simple", "--ormbench-ops=D,F", "--ormbench-modes=warm",
                             "--ormbench-rounds=2", "--ormbench-schedule=back-to-back",
                             "--ormbench-probe")
    result.assert_outcomes(passed=4)
    slots = sorted(b["extra_info"]["round_slots"] for b in data["benchmarks"])
    assert slots == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert [p["when"] for p in data["ormbench"]["probes"]] == ["start", "middle", "end"]
    assert data["ormbench"]["schedule"] == "back-to-back"


def test_a_failing_cell_leaves_the_interleaved_schedule_and_the_others_report(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, *register("LazyArm"), "--ormbench-arms=sqlite3,lazy",
                             "--ormbench-models=simple", "--ormbench-ops=B", "--ormbench-modes=warm",
                             "--ormbench-rounds=3")
    result.assert_outcomes(passed=1, failed=1)
    assert _slots(data)["sqlite3"] and len(_slots(data)["sqlite3"]) == 3
    result.stdout.fnmatch_lines(["*lazy-simple-insert_batch-warm-default: verification failed*"])


def test_probe_off_records_no_floor(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=D",
                             "--ormbench-modes=warm", "--ormbench-rounds=2")
    result.assert_outcomes(passed=1)
    assert data["ormbench"]["probes"] == [] and data["ormbench"]["drift_floor"] is None
    result.stdout.fnmatch_lines(["*drift floor unknown (sqlite3 probe, rows/s: none)*"])


def test_bad_schedule_and_alpha_are_usage_errors(bench: pytest.Pytester) -> None:
    for option, message in (("--ormbench-schedule=random", "*--ormbench-schedule: unknown value 'random'*"),
                            ("--ormbench-compare-alpha=5",
                             "*--ormbench-compare-alpha: expected a number between 0 and 1*"),
                            ("--ormbench-alpha=5", "*--ormbench-alpha: expected a number between 0 and 1*"),
                            # a flag takes no value (its old on|off spellings aside)
                            ("--ormbench-probe=maybe", "*--ormbench-probe*ignored explicit argument 'maybe'*"),
                            ("--ormbench-compare-correction=bonf",
                             "*--ormbench-compare-correction: unknown value 'bonf'*"),
                            ("--ormbench-compare-drift=probe", "*--ormbench-compare-drift: unknown value 'probe'*")):
        result = bench.runpytest(option)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([message])


# -- comparison with a baseline ----------------------------------------------

CMP_CELL = ("--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=D", "--ormbench-modes=warm",
            "--ormbench-rounds=5")


def _baseline(doc: dict, seconds: list[float], floor: float) -> dict:
    """``doc`` with every cell's round times replaced by ``seconds`` and its drift floor set to ``floor``.

    Synthetic times, not the measured ones scaled. A tenfold-faster copy of the first run's five
    sub-millisecond rounds lets the machine decide the verdict: one round of the first run preempted to
    ten times its length overlaps every round of the second run (Mann-Whitney p 0.14: within noise), and
    a first run slowed down with its drift probes scattered makes the recorded floor exceed the change.
    Round times no real round of the cell can reach (it reads 300 rows; 0.1 us is a few hundred
    instructions) or exceed (a thousand seconds), and a fixed floor, decide it before the run starts.
    """
    doc = json.loads(json.dumps(doc))
    for b in doc["benchmarks"]:
        b["stats"]["data"] = list(seconds)
        b["extra_info"]["measures"]["wall_seconds"] = list(seconds)
    doc["ormbench"]["drift_floor"] = floor
    return doc


def test_compare_flags_a_cell_slower_than_its_baseline_and_exits_1(bench: pytest.Pytester) -> None:
    result, doc = _run_json(bench, *CMP_CELL)
    result.assert_outcomes(passed=1)
    # a baseline in which every round of the cell took about 0.1 us: this run's rounds are all slower
    fast = [1e-7 * (1 + i / 10) for i in range(5)]
    (bench.path / "baseline.json").write_text(json.dumps(_baseline(doc, fast, floor=0.05)))
    result = bench.runpytest(*TINY, *CMP_CELL, "--ormbench-compare=baseline.json",
                             "--ormbench-compare-markdown=out/compare.md")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # every test passed: the comparison set the status
    result.stdout.fnmatch_lines(["*pytest-ormbench: comparison with the baseline*",
                                 "*sqlite3-simple-filter_large-warm-default*regression*",
                                 "1 regression (1 cell*)"])
    markdown = (bench.path / "out" / "compare.md").read_text()
    assert "**1 regression** (1 cell" in markdown and "#### Regressions" in markdown


def test_compare_improvement_passes(bench: pytest.Pytester) -> None:
    result, doc = _run_json(bench, *CMP_CELL)
    # a baseline in which every round took about a thousand seconds: this run is an improvement, never a failure
    slow = [1000.0 * (1 + i / 10) for i in range(5)]
    (bench.path / "slow.json").write_text(json.dumps(_baseline(doc, slow, floor=0.05)))
    result = bench.runpytest(*TINY, *CMP_CELL, "--ormbench-compare=slow.json")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["No regressions, 1 improvement (1 cell*)"])


def test_compare_with_itself_passes(bench: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_ormbench.commands.main import main

    result, _ = _run_json(bench, *CMP_CELL)
    result.assert_outcomes(passed=1)
    out = str(bench.path / "out.json")
    # the run's own JSON, unmodified, on both sides: the same round times, so nothing can differ
    assert main(["compare", out, out]) == 0
    text = capsys.readouterr().out
    assert "No regressions, 1 within noise (1 cell" in text
    assert "sqlite3-simple-filter_large-warm-default" in text and "×1.00" in text


@pytest.mark.parametrize(("setup", "option", "message"), [
    (None, "--ormbench-compare=nothere.json", "*--ormbench-compare: nothere.json: no such file*"),
    ("not json", "--ormbench-compare=b.json", "*--ormbench-compare: *b.json: not valid JSON*"),
    ('{"benchmarks": []}', "--ormbench-compare=b.json", "*--ormbench-compare: *b.json: no pytest-ormbench cells*"),
    (None, "--ormbench-compare-threshold=peewee",
     "*--ormbench-compare-threshold: threshold 'peewee': expected PATTERN=PERCENT*"),
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


def test_a_preset_sets_what_the_options_leave_and_names_it(bench: pytest.Pytester) -> None:
    """The README's main command: no --ormbench-rounds, so the preset's 3 rounds (the bench module checks them)."""
    out = bench.path / "preset.json"
    result = bench.runpytest("--ormbench-preset=quick", "--ormbench-iterations=5", "--ormbench-batch=50",
                             "--ormbench-no-probe", "-p", "no:cacheprovider", "--ormbench-arms=sqlite3",
                             "--ormbench-models=simple", "--ormbench-ops=D", f"--benchmark-json={out}")
    result.assert_outcomes(passed=1)  # quick is warm only: one cell
    (cell,) = json.loads(out.read_text())["benchmarks"]
    assert cell["extra_info"]["rounds"] == 3 and cell["extra_info"]["mode"] == "warm"
    result.stdout.fnmatch_lines(["pytest-ormbench: preset quick with iterations, batch changed (mode warm, table "
                                 "default, rounds 3, iterations 5, batch 50): 1 cells of 1 arm(s), 3 timed rounds"])


# -- one option style, the old spellings kept ---------------------------------

#: a module that prints the run's settings as the plugin parsed them (and collects no cell)
SHOW_RUN = """
def test_show(ormbench_run):
    r = ormbench_run
    print("RUN", r.modes, r.tables, r.dbs, r.control, r.probe, r.alpha, r.correction, r.drift, r.thresholds,
          r.verify_only, r.memory)
"""


def _shown_run(bench: pytest.Pytester, *args: str) -> tuple[str, pytest.RunResult]:
    bench.makepyfile(test_show=SHOW_RUN)
    result = bench.runpytest("-p", "no:cacheprovider", "-s", "test_show.py", *args)
    result.assert_outcomes(passed=1)
    (line,) = [line[line.index("RUN "):] for line in result.stdout.lines if "RUN (" in line]
    return line, result


def test_old_spellings_work_as_the_new_ones_with_a_deprecation_warning(bench: pytest.Pytester) -> None:
    new = ("--ormbench-modes=warm", "--ormbench-tables=large", "--ormbench-dbs=sqlite", "--ormbench-no-control",
           "--ormbench-no-probe", "--ormbench-compare-alpha=0.1", "--ormbench-compare-correction=none",
           "--ormbench-compare-drift=off", "--ormbench-compare-threshold=*=20", "--ormbench-memory")
    old = ("--ormbench-mode=warm", "--ormbench-table=large", "--ormbench-db=sqlite", "--ormbench-control=off",
           "--ormbench-probe", "off",  # the old valued flag with a space before its value
           "--ormbench-alpha=0.1", "--ormbench-correction=none", "--ormbench-drift=off", "--ormbench-threshold=*=20",
           "--ormbench-memory")
    want, result = _shown_run(bench, *new)
    assert want == "RUN ('warm',) ('large',) ('sqlite',) False False 0.1 none off ('*=20',) False True"
    assert "deprecated" not in result.stdout.str()
    got, result = _shown_run(bench, *old)
    assert got == want
    for spelled, now in (("--ormbench-mode", "--ormbench-modes"), ("--ormbench-table", "--ormbench-tables"),
                         ("--ormbench-db", "--ormbench-dbs"), ("--ormbench-control=off", "--ormbench-no-control"),
                         ("--ormbench-probe=off", "--ormbench-no-probe"), ("--ormbench-alpha", "--ormbench-compare-alpha"),
                         ("--ormbench-threshold", "--ormbench-compare-threshold")):
        result.stdout.fnmatch_lines([f"*PytestDeprecationWarning: pytest-ormbench: {spelled} is deprecated, use {now}"])
    # the on spellings, and a flag given after its negation wins
    on, _ = _shown_run(bench, "--ormbench-control=on", "--ormbench-probe", "ON", "--ormbench-no-memory")
    assert " True True " in on and on.endswith("False False")
    last, _ = _shown_run(bench, "--ormbench-no-probe", "--ormbench-probe")
    assert last.split()[5] == "True"


def test_old_ini_keys_work_with_a_deprecation_warning(bench: pytest.Pytester) -> None:
    bench.makeini("[pytest]\normbench_mode = warm\normbench_table = large\normbench_control = off\n"
                  "ormbench_probe = off\normbench_alpha = 0.2\n")
    line, result = _shown_run(bench)
    assert line.startswith("RUN ('warm',) ('large',) ('sqlite',) False False 0.2 ")
    result.stdout.fnmatch_lines(["*the ini key ormbench_mode is deprecated, use ormbench_modes*"])
    bench.makeini("[pytest]\normbench_modes = cold\normbench_control = false\normbench_probe = true\n")
    line, result = _shown_run(bench)
    assert line.startswith("RUN ('cold',) ('default',) ('sqlite',) False True ")
    assert "deprecated" not in result.stdout.str()


# -- pytest-benchmark's switches, durations, load ----------------------------

def test_benchmark_disable_verifies_every_cell_once_and_times_nothing(bench: pytest.Pytester) -> None:
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=B,D",
                             "--ormbench-modes=warm", "--ormbench-rounds=4", "--benchmark-disable", timed=False)
    result.assert_outcomes(passed=2)  # the bench module checks one round per cell, as for --ormbench-verify-only
    result.stdout.fnmatch_lines(["pytest-ormbench: preset full*: 2 cells of 1 arm(s), verified once each, nothing "
                                 "timed (--benchmark-disable)"])
    assert "timed rounds" not in result.stdout.str() and "interleaved schedule" not in result.stdout.str()
    assert data["benchmarks"] == []


def test_benchmark_skip_runs_no_cell(bench: pytest.Pytester) -> None:
    result = bench.runpytest(*TINY, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=D",
                             "--ormbench-modes=warm", "--benchmark-skip")
    result.assert_outcomes(skipped=1)
    assert "starting states" not in result.stdout.str()


def test_each_test_reports_its_own_cells_time_and_each_round_its_load(bench: pytest.Pytester) -> None:
    """The schedule runs before the tests: a test's duration is its own cell's time, not the whole schedule's."""
    import xml.etree.ElementTree as ET

    junit = bench.path / "junit.xml"
    result, data = _run_json(bench, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=B,C,D",
                             "--ormbench-modes=cold", "--ormbench-rounds=3", f"--junitxml={junit}")
    result.assert_outcomes(passed=3)
    times = [float(case.get("time")) for case in ET.parse(junit).iter("testcase")]
    assert len(times) == 3 and all(t > 0.05 for t in times), times  # three cold rounds each: processes started
    assert max(times) < 0.8 * sum(times), times  # not the first test holding the schedule
    result.stdout.fnmatch_lines(["*interleaved schedule: 3 cells x 3 rounds*", "*round 3/3 done*",
                                 "test_bench.py ...*"])
    for b in data["benchmarks"]:
        info = b["extra_info"]
        loads = info["measures"]["loadavg_1min"]
        assert len(loads) == 3 and all(x >= 0 for x in loads), loads
        assert info["loadavg_1min"] == max(loads)


def test_an_error_of_the_schedule_itself_fails_every_cell_once_in_full(bench: pytest.Pytester,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_ormbench.scheduling.scheduler import Scheduler

    def broken(self: Scheduler) -> None:
        raise RuntimeError("the scheduler broke")

    monkeypatch.setattr(Scheduler, "run_all", broken)
    result = bench.runpytest(*TINY, "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=B,D",
                             "--ormbench-modes=warm")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*sqlite3-simple-insert_batch-warm-default: the run's schedule stopped on an error:",
                                 "Traceback*", "RuntimeError: the scheduler broke",
                                 "*sqlite3-simple-filter_large-warm-default: the run's schedule stopped on an error "
                                 "(shown at sqlite3-simple-insert_batch-warm-default)"])
