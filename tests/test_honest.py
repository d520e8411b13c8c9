"""Noise is not ignored (issue 34): a lead within the run's noise names nobody, figures carry their spread, a busy
run says so, each report keeps its own charts, and the terminal's tables fit 100 columns. Synthetic records
only: no assertion here rests on a real timing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.workload.measures import GC_COLLECTIONS, WALL
from pytest_ormbench.results.record import CellRecord, Environment, Facts
from pytest_ormbench.results.report.load import load, runs_from_records
from pytest_ormbench.results.stats import busy, clear_lead

LABELS = {"sqlite3": "raw sqlite3", "peewee": "peewee", "django": "Django", "sqlobject": "SQLObject",
          "sqlalchemy": "SA ORM", "tortoise": "Tortoise ORM", "piccolo": "Piccolo", "ormar": "ormar",
          "sqlmodel": "SQLModel", "sqlalchemy_async": "SA ORM async", "sqlmodel_async": "SQLModel async",
          "objectbox": "ObjectBox", "objectbox_nocodegen": "ObjectBox no codegen"}
QUIET = {"schedule": "interleaved", "drift_floor": 0.02,
         "probes": [{"when": "start", "rows_per_s": 100_000.0}, {"when": "after round 1", "rows_per_s": 102_000.0}]}


def _record(arm: str, op: str, rounds: list[float], model: str = "simple") -> CellRecord:
    """A timed cell of 100 rows a round, its round times as given."""
    return CellRecord(key=CellKey(arm, model, op, "warm", "default"), rows=100, start_rows=0, iterations=100,
                      batch=1000, settings={}, env=Environment(arm_label=LABELS[arm]), facts=Facts(),
                      measures={WALL: rounds, GC_COLLECTIONS: [0.0] * len(rounds)})


def _runs(records: list[CellRecord], floor: float | None):
    facts = None if floor is None else {**QUIET, "drift_floor": floor}
    return runs_from_records(records, {"machine": "x86_64"}, "2026-12-04T10:00:00", facts)


def _tight(seconds: float) -> list[float]:
    return [seconds * 0.99, seconds, seconds * 1.01]


def test_the_rule_needs_a_lead_beyond_the_floor_and_both_spreads() -> None:
    assert clear_lead([200, 202, 198], [100, 101, 99], [0.05])  # ×2 on tight rounds, a quiet run
    assert not clear_lead([110, 111, 109], [100, 101, 99], [0.20])  # 10 % inside a 20 % drift floor
    assert not clear_lead([110, 140, 90], [100, 101, 99], [0.01])  # 10 % inside the leader's own 45 % range
    assert not clear_lead([200], [100], [0.01])  # one round: no spread seen, nothing stands
    assert clear_lead([1.005e4], [1e4], [0.002], min_rounds=1)  # instructions: 0.5 % beyond their 0.2 %
    assert not clear_lead([1.001e4], [1e4], [0.002], min_rounds=1)
    assert busy(0.98, [0.05, 0.3, 1.0]) and not busy(0.1, [0.05, 0.3, 1.0]) and not busy(None, [0.1])
    assert busy(0.15, []) and not busy(0.05, [])  # nothing to rank: the 10 % threshold


def test_a_lead_inside_the_drift_floor_is_contested_and_names_nobody() -> None:
    from pytest_ormbench.results.report.tables import CONTESTED, detail

    # SQLObject 411 and Django 337 rows/s against the control's 171, on a run whose probe moved by 98 %
    records = [_record("sqlite3", "A", _tight(100 / 171)), _record("sqlobject", "A", _tight(100 / 411)),
               _record("django", "A", _tight(100 / 337)), _record("peewee", "A", _tight(100 / 300))]
    table = detail(_runs(records, 0.98), "simple", "warm", "default")
    rows = {r[0]: r for r in table.rows}
    assert rows["A Insert: Single"][-1] == CONTESTED and rows["Geometric Mean"][-1] == CONTESTED
    assert "SQLObject" not in rows["A Insert: Single"][-1]
    assert any(n.startswith("contested:") and "up to 98%" in n for n in table.notes)
    # the same figures on a quiet run: the 22 % lead over Django stands
    quiet = {r[0]: r for r in detail(_runs(records, 0.02), "simple", "warm", "default").rows}
    assert quiet["A Insert: Single"][-1] == "SQLObject"


def test_a_lead_of_two_with_three_tight_rounds_on_a_quiet_run_is_named() -> None:
    from pytest_ormbench.results.report.tables import detail

    records = [_record("sqlite3", op, _tight(0.001)) for op in "AD"]
    records += [_record("peewee", op, _tight(0.002)) for op in "AD"]
    records += [_record("django", op, _tight(0.004)) for op in "AD"]
    table = detail(_runs(records, 0.05), "simple", "warm", "default")
    rows = {r[0]: r for r in table.rows}
    assert rows["A Insert: Single"][-1] == "peewee" and rows["Geometric Mean"][-1] == "peewee"
    assert rows["A Insert: Single"][table.header.index("peewee")] == "50,000 ±1%"  # the spread beside the figure
    assert not any(n.startswith("contested:") for n in table.notes)


def test_a_busy_run_says_so_in_the_header_and_the_summary() -> None:
    from pytest_ormbench.results.report.render import render
    from pytest_ormbench.results.report.tables import busy_line

    # adjacent arms 10-25 % apart, a drift floor of 98 %: the run cannot carry its orders
    paces = {"sqlite3": 0.001, "peewee": 0.0025, "django": 0.0028, "sqlobject": 0.0031}
    records = [_record(arm, op, _tight(s)) for op in "ABD" for arm, s in paces.items()]
    runs = _runs(records, 0.98)
    line = busy_line(runs)
    assert line is not None and line.startswith("Busy run: its drift floor 98.0% is larger than the median gap")
    assert "--ormbench-instructions" in line and "idle machine" in line and "more rounds" in line
    assert f"> **{line}**" in render(runs)
    text = render(runs, "text")
    assert " ".join(line.split()) in " ".join(text.split())
    assert busy_line(_runs(records, 0.01)) is None and "Busy" not in render(_runs(records, 0.01))


def test_a_report_written_to_two_paths_keeps_two_chart_folders(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from pytest_ormbench.results.report.write import charts_dir_for, write_report

    runs = _runs([_record(arm, "A", _tight(s)) for arm, s in (("sqlite3", 0.001), ("peewee", 0.002))], 0.05)
    texts = {}
    for name in ("ormbench-report.md", "reads.md"):
        out = tmp_path / name
        assert charts_dir_for(out) == tmp_path / f"{out.stem}-charts"
        texts[name] = write_report(runs, out, "markdown", charts_dir_for(out))
    assert "](ormbench-report-charts/summary-default.png)" in texts["ormbench-report.md"]
    assert "](reads-charts/summary-default.png)" in texts["reads.md"]
    for folder in ("ormbench-report-charts", "reads-charts"):
        assert (tmp_path / folder / "summary-default.png").exists()
    assert not (tmp_path / "charts").exists()


def test_terminal_tables_fit_a_hundred_columns() -> None:
    from pytest_ormbench.results.report.render import render, render_summary

    arms = list(LABELS)  # thirteen arms: the Markdown keeps every column, the terminal folds them
    records = [_record(arm, op, _tight(0.001 * (1 + i / 3)), model)
               for model in ("simple", "fk") for op in "ABCDEFGHIJK" for i, arm in enumerate(arms)]
    runs = _runs(records, 0.05)
    for text in (render_summary(runs), render(runs, "text")):
        assert max(len(line) for line in text.splitlines()) <= 100
        assert all(LABELS[a] in text for a in arms)
    widest = max(len(line) for line in render(runs).splitlines() if line.startswith("| Operation"))
    assert widest > 100


def test_the_report_of_a_file_gives_each_figure_its_spread(tmp_path: Path) -> None:
    """Through the JSON: the figures carry their ±, the drift floor of the file is the one judged against."""
    from pytest_ormbench.results.report.tables import CONTESTED, detail

    records = [_record("sqlite3", "A", _tight(0.001)), _record("peewee", "A", _tight(0.002)),
               _record("django", "A", _tight(0.0022))]
    doc = {"datetime": "2026-12-04T10:00:00", "machine_info": {"machine": "x86_64"}, "ormbench": {**QUIET},
           "benchmarks": [{"name": r.id, "stats": {"data": r.seconds}, "extra_info": r.to_json()} for r in records]}
    path = tmp_path / "run.json"
    for floor, best in ((0.02, "peewee"), (0.3, CONTESTED)):  # a 10 % lead: beyond 2 %, within 30 %
        doc["ormbench"]["drift_floor"] = floor
        path.write_text(json.dumps(doc))
        rows = {r[0]: r for r in detail(load([path]), "simple", "warm", "default").rows}
        assert rows["A Insert: Single"][-1] == best and all(c.endswith("±1%") for c in rows["A Insert: Single"][1:-1])


def test_a_first_column_wider_than_the_terminal_wraps_instead_of_failing() -> None:
    """A Runs table names its source files by path, and a path can be longer than the whole width."""
    from pytest_ormbench.results.report.table import Table, text_table

    long = "/dev/shm/ormbench-ci.XXXXXX/pytest-of-root/pytest-0/popen-gw1/" + "a-long-test-folder-name/" * 3 + "f.json"
    t = Table("Runs", ["Run", "Cells", "Drift floor", "Probe"], [[long, "12", "7.3%", "100 / 107"]], notes=[])
    out = text_table(t, 100)
    assert all(len(line) <= 100 for line in out.splitlines()), out
    assert "f.json" in out and "7.3%" in out
