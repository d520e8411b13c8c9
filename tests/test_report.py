"""The reporter: golden tables from hand-written JSON, the arithmetic, and every bad input."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from pytest_ormbench.commands.main import main
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.results.report.load import load
from pytest_ormbench.results.stats import geometric_mean, rows_per_second

ROOT = Path(__file__).resolve().parent.parent
DATA = Path("tests/data")
GOLDEN = ROOT / "tests" / "golden"


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # file names in the report are as given on the command line


def test_markdown_report_matches_golden(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(DATA / "cold.json"), str(DATA / "warm.json"), "--no-charts"]) == 0
    assert capsys.readouterr().out == (GOLDEN / "report.md").read_text()


def test_text_report_matches_golden(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(DATA / "cold.json"), str(DATA / "warm.json"), "--format", "text"]) == 0
    assert capsys.readouterr().out == (GOLDEN / "report.txt").read_text()


def test_geometric_mean_and_ratio_arithmetic() -> None:
    assert geometric_mean([1, 100]) == pytest.approx(10)
    assert geometric_mean([200, 1e5, 4e5, 5e5, 5e4]) == pytest.approx(45_730.5, rel=1e-4)
    assert geometric_mean([]) is None
    assert geometric_mean([0, -1, math.inf]) is None
    assert rows_per_second(300, [0.3, 0.1, 0.2]) == pytest.approx(1500)  # median, not mean
    text = (GOLDEN / "report.txt").read_text()
    assert "57,163 ±10% (×1.25)" in text  # warm / cold of the hand-written figures


def test_same_cell_in_two_files_uses_the_later_run() -> None:
    runs = load([DATA / "cold.json", DATA / "rerun.json"])
    cell = runs.cells[CellKey("peewee", "simple", "D", "cold", "default")]
    assert cell.source.endswith("rerun.json")
    assert cell.rows_per_s == pytest.approx(500_000)
    assert any("the later run" in n and "peewee-simple-filter_large-cold-default" in n for n in runs.notes)
    # order of the files does not matter
    runs = load([DATA / "rerun.json", DATA / "cold.json"])
    assert runs.cells[CellKey("peewee", "simple", "D", "cold", "default")].source.endswith("rerun.json")


def test_cells_missing_from_a_file_show_as_dashes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(DATA / "rerun.json"), "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "D Filter: Large" in out and "Insert: Single" not in out


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file"),
        ("{", "not valid JSON"),
        ("[1, 2]", "not pytest-benchmark JSON"),
        (b"\xff\xfe\x00", "not a text file"),
        ("foreign", "no pytest-ormbench cells in it (was it written without the plugin?)"),
    ],
)
def test_bad_input_gives_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        content: object, message: str) -> None:
    path = tmp_path / "in.json"
    if content == "foreign":
        path = DATA / "foreign.json"
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_foreign_benchmarks_beside_cells_are_noted(tmp_path: Path) -> None:
    doc = json.loads((DATA / "rerun.json").read_text())
    doc["benchmarks"].append({"name": "test_other", "stats": {"data": [1.0]}, "extra_info": {}})
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(doc))
    runs = load([path])
    assert len(runs.cells) == 1 and any("1 benchmark(s) that are not pytest-ormbench cells" in n for n in runs.notes)


def test_without_matplotlib_charts_are_skipped_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "report.md"
    assert main(["report", str(DATA / "cold.json"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "charts need matplotlib: pip install 'pytest-ormbench[plot]'" in err
    assert out.read_text().startswith("# pytest-ormbench results")


def test_charts_are_written_when_matplotlib_is_there(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "report.md"
    assert main(["report", str(DATA / "cold.json"), str(DATA / "warm.json"), "-o", str(out)]) == 0
    charts = sorted(p.name for p in (tmp_path / "report-charts").iterdir())  # beside the report, named after it
    assert "summary-default.png" in charts and "detail-simple-cold-default.svg" in charts
    assert "](report-charts/summary-default.png)" in out.read_text()
    assert not (tmp_path / "charts").exists()


def test_reporter_imports_no_orm() -> None:
    import subprocess

    code = ("import sys, pytest_ormbench.commands.main, pytest_ormbench.results.report.render;"
            "bad=[m for m in ('peewee','sqlalchemy','django','tortoise','piccolo','ormar','sqlobject','objectbox',"
            "'sqlmodel','pytest') if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_drift_floor_is_shown_in_the_header(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads((DATA / "cold.json").read_text())
    doc["ormbench"] = {"schedule": "interleaved", "drift_floor": 0.0734,
                       "probes": [{"when": "start", "rows_per_s": 100.0}, {"when": "after round 1", "rows_per_s": 107.34}]}
    path = tmp_path / "floor.json"
    path.write_text(json.dumps(doc))
    assert main(["report", str(path), "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "Drift floor: the spread of a fixed sqlite3 probe over each run (see Runs)" in out
    from pytest_ormbench.results.report.tables import runs_table

    assert runs_table(load([path])).rows[0][-3:] == ["interleaved", "7.3% (2 probes)", "104"]  # median of the probes
    assert main(["report", str(DATA / "cold.json"), "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "over each run (see Runs)" not in out  # files from before the probe: no header line, a dash in Runs
    assert runs_table(load([DATA / "cold.json"])).rows[0][-3:] == ["—", "—", "—"]


def test_runs_table_says_which_file_supplies_which_cells() -> None:
    from pytest_ormbench.results.report.tables import runs_table

    table = runs_table(load([DATA / "cold.json", DATA / "rerun.json"]))
    rows = {row[0]: row for row in table.rows}
    assert rows["tests/data/rerun.json"][2:5] == ["peewee", "default", "1"]  # the later run supplies its one cell
    assert rows["tests/data/cold.json"][4] == "31"  # 32 cells, one superseded
    assert rows["tests/data/cold.json"][1] == "2026-11-01 10:00"


def test_best_names_the_fastest_arm_other_than_the_control(tmp_path: Path) -> None:
    from pytest_ormbench.results.report.tables import detail

    doc = json.loads((DATA / "cold.json").read_text())
    for bench in doc["benchmarks"]:  # SQLObject's Delete becomes faster than peewee's, slower than raw sqlite3
        info = bench["extra_info"]
        if (info["arm"], info["model"], info["op"]) == ("sqlobject", "simple", "K"):
            bench["stats"]["data"] = [x / 4 for x in bench["stats"]["data"]]
    path = tmp_path / "cold.json"
    path.write_text(json.dumps(doc))
    table = detail(load([path]), "simple", "cold", "default")
    rows = {row[0]: row for row in table.rows}
    assert rows["K Delete"][1:] == ["50,000 ±10%", "25,000 ±10%", "40,000 ±10%", "SQLObject"]
    assert rows["A Insert: Single"][-1] == "peewee"
    assert ("Best: the fastest arm other than the raw sqlite3 control arm, where its lead over the runner-up is "
            "beyond the noise.") in table.notes

    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["extra_info"]["arm"] == "sqlite3"]
    path.write_text(json.dumps(doc))
    alone = detail(load([path]), "simple", "cold", "default")
    assert "Best" not in alone.header and not any(n.startswith("Best:") for n in alone.notes)


def test_a_table_holds_only_what_applies(tmp_path: Path) -> None:
    """One ORM beside the control: nothing to rank, so no Best column; no legend for a dash that is not there."""
    from pytest_ormbench.results.report.tables import detail, footnotes

    doc = json.loads((DATA / "cold.json").read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["extra_info"]["arm"] in ("sqlite3", "peewee")]
    path = tmp_path / "two.json"
    path.write_text(json.dumps(doc))
    runs = load([path])
    table = detail(runs, "simple", "cold", "default")
    assert table.header == ["Operation", "raw sqlite3", "peewee"]
    dashes = any("—" in c for row in table.rows for c in row[1:])
    assert any(n.startswith("— :") for n in table.notes) == dashes
    bulk = [n for n in footnotes(runs) if n.startswith("Insert: Bulk")]
    assert all("none" not in n for n in bulk), bulk


def test_cells_not_marked_verified_are_left_out_and_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads((DATA / "cold.json").read_text())
    doc["benchmarks"][0]["extra_info"]["verified"] = False
    path = tmp_path / "some.json"
    path.write_text(json.dumps(doc))
    runs = load([path])
    assert len(runs.cells) == len(doc["benchmarks"]) - 1
    assert f"{path}: 1 cell(s) not marked verified were left out" in runs.notes
    for bench in doc["benchmarks"]:
        bench["extra_info"]["verified"] = False
    path.write_text(json.dumps(doc))
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"none of its {len(doc['benchmarks'])} pytest-ormbench cells is marked verified")
    assert len(err.splitlines()) == 1


def test_the_order_of_the_files_does_not_change_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(DATA / "warm.json"), str(DATA / "cold.json"), "--no-charts"]) == 0
    assert capsys.readouterr().out == (GOLDEN / "report.md").read_text()


# -- instructions, statements and folding an instructions run into a timed one -------------------------

LABELS = {"sqlite3": "raw sqlite3", "peewee": "peewee", "django": "Django", "objectbox": "ObjectBox",
          "tortoise": "Tortoise ORM"}
NO_SQL = "objectbox: counting statements is not implemented for this database"


def _record(arm: str, op: str, *, seconds: float = 0.5, instructions: float | None = None,
            statements: dict[str, int] | None = None, note: str | None = None, mode: str = "warm") -> object:
    """A synthetic cell record: ``instructions`` makes it an instrumented (callgrind) one."""
    from pytest_ormbench.workload.measures import GC_COLLECTIONS, INSTRUCTIONS, WALL
    from pytest_ormbench.workload.cells import CellKey
    from pytest_ormbench.results.record import CellRecord, Environment, Facts

    measures = {WALL: [seconds * 0.9, seconds, seconds * 1.1], GC_COLLECTIONS: [0.0, 0.0, 0.0]}
    if instructions is not None:
        measures[WALL] = [x * 50 for x in measures[WALL]]  # valgrind's wall times: no speed at all
        measures[INSTRUCTIONS] = [instructions * 100] * 3
    return CellRecord(key=CellKey(arm, "simple", op, mode, "default"), rows=100, start_rows=0, iterations=100,
                      batch=10_000, settings={}, env=Environment(arm_label=LABELS[arm]), facts=Facts(),
                      measures=measures, statements=[statements] if statements else [], statements_note=note,
                      instrumented="callgrind" if instructions is not None else None)


def _write(path: Path, records: list, when: str) -> Path:
    """A pytest-benchmark document of the records, as the plugin writes one."""
    doc = {"datetime": when, "machine_info": {"machine": "x86_64"},
           "benchmarks": [{"name": r.id, "stats": {"data": r.seconds}, "extra_info": r.to_json()} for r in records]}
    path.write_text(json.dumps(doc))
    return path


def test_statements_table_counts_by_kind_with_n_a_for_an_engine_without_sql() -> None:
    from pytest_ormbench.results.report.load import runs_from_records
    from pytest_ormbench.workload.statements import KINDS
    from pytest_ormbench.results.report.tables import KIND_LETTERS, fmt_statements, statements

    assert set(KIND_LETTERS) == set(KINDS)  # every kind the counter reports has its letter
    assert fmt_statements({"SELECT": 1, "INSERT": 0}) == "1 S"
    assert fmt_statements({"BEGIN": 1, "INSERT": 100, "COMMIT": 1, "SELECT": 0}) == "102 (1B 100I 1C)"
    runs = runs_from_records([
        _record("sqlite3", "F", statements={"SELECT": 100}),
        _record("peewee", "F", statements={"SELECT": 200}),  # two queries a request: flagged
        _record("django", "F", statements={"SELECT": 100, "BEGIN": 1, "COMMIT": 1}),  # 1.02×: not flagged
        _record("objectbox", "F", note=NO_SQL),
        _record("sqlite3", "A", statements={"INSERT": 100, "COMMIT": 100}),
    ], {}, "2026-12-01T10:00:00")
    table = statements(runs, "simple", "warm", "default")
    assert table is not None
    assert table.header == ["Operation", "raw sqlite3", "Django", "peewee", "ObjectBox"]
    rows = {row[0]: row[1:] for row in table.rows}
    assert rows["F Get"] == ["100 S", "102 (1B 100S 1C)", "200 S", "n/a"]
    assert rows["A Insert: Single"] == ["200 (100I 100C)", "—", "—", "—"]
    assert f"n/a : not counted for ObjectBox ({NO_SQL})" in table.notes
    assert any(n.startswith("— :") for n in table.notes)  # the dashes have their legend
    assert any(n.startswith("Statements the operation sent") for n in table.notes)
    flags = [n for n in table.notes if "the statements of the raw sqlite3 control" in n]
    assert flags == ["F Get: more than 1.5× the statements of the raw sqlite3 control (100): peewee 200 (2.0×)."]
    # no counts at all in a group (files from before counting): no table
    assert statements(runs_from_records([_record("peewee", "F")], {}, "x"), "simple", "warm", "default") is None


def test_instructions_table_lowest_is_best_and_compact_figures() -> None:
    from pytest_ormbench.results.report.load import runs_from_records
    from pytest_ormbench.results.report.tables import fmt_count, instructions

    assert [fmt_count(v) for v in (None, 7.5, 950, 12_345, 123_456, 999_999, 1_054_000, 2.5e9)] == \
        ["—", "7.5", "950", "12.3 k", "123 k", "1.00 M", "1.05 M", "2.50 G"]
    runs = runs_from_records([
        _record("sqlite3", "A", instructions=5_000),
        _record("peewee", "A", instructions=40_000),
        _record("django", "A", instructions=90_000),
        _record("peewee", "D", instructions=20_000),
    ], {}, "2026-12-01T10:00:00")
    table = instructions(runs, "simple", "warm", "default")
    assert table is not None
    assert table.header == ["Operation", "raw sqlite3", "Django", "peewee", "Best"]
    rows = {row[0]: row[1:] for row in table.rows}
    assert rows["A Insert: Single"] == ["5.00 k", "90.0 k", "40.0 k", "peewee"]
    assert rows["D Filter: Large"] == ["—", "—", "20.0 k", "peewee"]
    assert rows["Geometric Mean"][-1] == "peewee"
    assert "lower is better" in table.title
    assert any("fewest instructions per row" in n for n in table.notes)


def test_a_timed_file_and_an_instructions_file_fold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """rows/s from the timed file, instructions from the instrumented one, whichever order or date."""
    from pytest_ormbench.results.report.tables import detail, instructions

    timed = _write(tmp_path / "timed.json", [
        _record("sqlite3", "A", seconds=0.01, statements={"INSERT": 100, "COMMIT": 100}),
        _record("peewee", "A", seconds=0.02, statements={"INSERT": 100, "COMMIT": 100}),
    ], "2026-12-01T10:00:00")
    counted = _write(tmp_path / "instr.json", [
        _record("sqlite3", "A", instructions=5_000, statements={"INSERT": 100, "COMMIT": 100}),
        _record("peewee", "A", instructions=40_000, statements={"INSERT": 100, "COMMIT": 100}),
    ], "2026-12-02T10:00:00")  # the later run: it must still not give the rows/s
    for order in ([timed, counted], [counted, timed]):
        runs = load(order)
        cell = runs.cells[CellKey("peewee", "simple", "A", "warm", "default")]
        assert cell.source == str(timed) and cell.rows_per_s == pytest.approx(100 / 0.02)
        assert cell.instructions_record is not None and cell.instructions_per_row == pytest.approx(40_000)
        assert cell.statements_per_op == {"INSERT": 100, "COMMIT": 100}
        assert f"{counted}: the instructions of 2 cell(s) whose rows/s come from the timed run {timed}" in runs.notes
        assert not any("is used" in n for n in runs.notes)  # folded, not replaced
        rows = {r[0]: r[1:] for r in detail(runs, "simple", "warm", "default").rows}
        assert rows["A Insert: Single"] == ["10,000 ±10%", "5,000 ±10%"]
        rows = {r[0]: r[1:] for r in instructions(runs, "simple", "warm", "default").rows}  # type: ignore[union-attr]
        assert rows["A Insert: Single"] == ["5.00 k", "40.0 k"]
    assert main(["report", str(timed), str(counted), "--no-charts", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "(rows/s, higher is better)" in out and "(instructions per row, lower is better)" in out
    assert "Statements per operation, by kind" in out
    assert "supplies those cells' instructions only" in out  # the Runs table's note
    # a later timed rerun replaces the timed record and keeps the instructions beside it
    rerun = _write(tmp_path / "rerun.json", [_record("peewee", "A", seconds=0.04)], "2026-12-03T10:00:00")
    cell = load([timed, counted, rerun]).cells[CellKey("peewee", "simple", "A", "warm", "default")]
    assert cell.source == str(rerun) and cell.instructions_per_row == pytest.approx(40_000)


def test_a_file_of_instrumented_cells_only_still_makes_a_report(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_ormbench.results.report.load import runs_from_records
    from pytest_ormbench.results.report.render import render_summary
    from pytest_ormbench.results.report.tables import UNTIMED

    records = [_record("sqlite3", "A", instructions=5_000, statements={"INSERT": 100, "COMMIT": 100}),
               _record("objectbox", "A", instructions=9_000, note=NO_SQL)]
    path = _write(tmp_path / "instr.json", records, "2026-12-02T10:00:00")
    for fmt in ("markdown", "text"):
        assert main(["report", str(path), "--no-charts", "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert UNTIMED in " ".join(out.split()) and "rows/s, higher is better" not in out and "Overall" not in out
        assert "instructions per row, lower is better" in out and "Statements per operation" in out
        assert "ORM overhead" not in out
    summary = render_summary(runs_from_records(records, {}, "2026-12-02T10:00:00"))
    assert " ".join(summary.split()).startswith(UNTIMED) and "instructions per row" in summary and "9.00 k" in summary
    assert "rows/s, higher" not in summary


def test_a_note_where_wall_time_and_instructions_rank_two_arms_differently() -> None:
    from pytest_ormbench.results.report.load import LoadedCell, Runs
    from pytest_ormbench.results.report.tables import disagreements, instructions

    def runs_with(django_seconds: float, django_count: float = 36_000) -> Runs:
        runs = Runs(sources=["t", "i"])
        for arm, seconds, count in (("peewee", 0.02, 30_000), ("django", django_seconds, django_count)):
            runs.add(LoadedCell(_record(arm, "A", seconds=seconds), "t", "2026-12-01", {}))
            runs.add(LoadedCell(_record(arm, "A", instructions=count), "i", "2026-12-02", {}))
        return runs

    # Django 1.3× faster by wall time, 1.2× more instructions: a note
    notes = disagreements(runs_with(0.02 / 1.3), "simple", "warm", "default")
    assert len(notes) == 2 and "callgrind counts nothing" in notes[0]
    assert notes[1] == ("A Insert: Single: Django is faster than peewee by wall time (1.30×) but executes more "
                        "instructions per row (1.20×).")
    table = instructions(runs_with(0.02 / 1.3), "simple", "warm", "default")
    assert table is not None and notes[1] in table.notes
    # within 10 % by wall time: noise, no note; the same order both ways: no note
    assert disagreements(runs_with(0.02 / 1.08), "simple", "warm", "default") == []
    assert disagreements(runs_with(0.03), "simple", "warm", "default") == []
    # instructions within 1 %: the same work, not a reversed order
    assert disagreements(runs_with(0.02 / 1.3, 30_100), "simple", "warm", "default") == []
    # many arms: one line for the op, three pairs named, the rest counted
    runs = Runs(sources=["t", "i"])
    for n, arm in enumerate(["sqlite3", "django", "peewee", "objectbox"]):
        runs.add(LoadedCell(_record(arm, "A", seconds=0.01 * (1 + n)), "t", "2026-12-01", {}))
        runs.add(LoadedCell(_record(arm, "A", instructions=1000 * (5 - n)), "i", "2026-12-02", {}))
    lines = disagreements(runs, "simple", "warm", "default")
    assert len(lines) == 2 and lines[1].count("×,") == 2 and lines[1].endswith("; and 3 more pair(s).")


# -- the database axis: SQLite, PostgreSQL and its latency sweep ---------------------------------------

DB_LABELS = {"sqlite3": "raw sqlite3", "psycopg": "raw psycopg", "asyncpg": "raw asyncpg", "peewee": "peewee",
             "django": "Django", "sqlalchemy_async": "SA ORM async"}
ASYNC_ARMS = {"asyncpg", "sqlalchemy_async"}


def _db_record(arm: str, op: str, seconds: float, db: str = "sqlite", rtt: float | None = None,
               statements: dict[str, int] | None = None, label: str | None = None, jitter: float = 0.1) -> object:
    """A synthetic timed record of Test 1, warm, default table, on ``db`` (through the proxy at ``rtt`` ms); its
    three rounds ``jitter`` below and above ``seconds``."""
    from pytest_ormbench.workload.measures import GC_COLLECTIONS, WALL
    from pytest_ormbench.workload.cells import CellKey
    from pytest_ormbench.results.record import CellRecord, Environment, Facts

    server = db != "sqlite"
    return CellRecord(key=CellKey(arm, "simple", op, "warm", "default", db, rtt), rows=100, start_rows=0,
                      iterations=100, batch=10_000, settings={},
                      env=Environment(arm_label=label or DB_LABELS[arm], is_async=arm in ASYNC_ARMS,
                                      arm_info={"postgresql_version": "17.2",
                                                "server_settings": "fsync=on, wal_sync_method=fdatasync"}
                                      if server else {}),
                      facts=Facts(pragmas={"fsync": "on"} if server else {"journal_mode": "wal"}),
                      measures={WALL: [seconds * (1 - jitter), seconds, seconds * (1 + jitter)],
                                GC_COLLECTIONS: [0.0, 0.0, 0.0]},
                      statements=[statements] if statements else [])


#: seconds per round (100 rows): the control arms fastest, the async ORM slowest
PACE = {"sqlite3": 0.001, "peewee": 0.003, "sqlalchemy_async": 0.008, "psycopg": 0.002, "asyncpg": 0.0016,
        "django": 0.004}


def _sqlite_records() -> list:
    return [_db_record(arm, op, PACE[arm]) for op in "ADF" for arm in ("sqlite3", "peewee", "sqlalchemy_async")]


def _postgresql_records(arms: tuple[str, ...] = ("psycopg", "asyncpg", "peewee", "sqlalchemy_async", "django")) -> list:
    """PostgreSQL cells: every arm 4x slower than on SQLite except the controls; Django sends 3 SELECTs a Get."""
    return [_db_record(arm, op, PACE[arm] * (1 if arm in ("psycopg", "asyncpg") else 4), "postgresql",
                       statements={"SELECT": 3 if arm == "django" and op == "F" else 1})
            for op in "ADF" for arm in arms]


def _sweep_records(jitter: float = 0.1) -> list:
    """Ops D and F through the proxy at 0, 1, 5 and 25 ms: peewee makes two round trips an op, SA ORM async one."""
    trips = {"psycopg": 1, "asyncpg": 1, "peewee": 2, "sqlalchemy_async": 1}
    return [_db_record(arm, op, PACE[arm] * 4 + trips[arm] * rtt / 1000, "postgresql", rtt, jitter=jitter)
            for op in "DF" for arm in trips for rtt in (0.0, 1.0, 5.0, 25.0)]


def _tables_of(markdown: str) -> dict[str, str]:
    """title -> the whole "### title" block of a Markdown report."""
    blocks = markdown.split("\n### ")[1:]
    return {b.split("\n", 1)[0]: b.split("\n## ", 1)[0].rstrip() for b in blocks}


def test_sqlite_cells_report_as_they_did_beside_postgresql_ones() -> None:
    """A report of SQLite cells has no section headings and no Databases column; beside PostgreSQL cells its
    tables are the same, under a SQLite heading."""
    from pytest_ormbench.results.report.load import runs_from_records
    from pytest_ormbench.results.report.render import render

    alone = render(runs_from_records(_sqlite_records(), {}, "2026-12-01T10:00:00"))
    assert "\n## " not in alone and "Databases" not in alone and "PostgreSQL" not in alone
    both = render(runs_from_records(_sqlite_records() + _postgresql_records(), {}, "2026-12-01T10:00:00"))
    assert both.index("\n## SQLite\n") < both.index("\n## PostgreSQL\n") < both.index("\n## Sources and notes\n")
    mixed = _tables_of(both)
    for title, block in _tables_of(alone).items():
        if title != "Runs":
            assert mixed[title] == block, title  # the SQLite tables, byte for byte


def test_postgresql_section_prices_sync_arms_against_psycopg_and_async_ones_against_asyncpg() -> None:
    from pytest_ormbench.results.report.load import runs_from_records
    from pytest_ormbench.results.report.render import render, sections

    runs = runs_from_records(_sqlite_records() + _postgresql_records(), {}, "2026-12-01T10:00:00")
    tables = {t.anchor: t for t in sections(runs)}
    pg = tables["detail-simple-warm-default-postgresql"]
    assert pg.section == "PostgreSQL" and pg.title.endswith("— PostgreSQL")
    assert pg.header == ["Operation", "raw psycopg", "raw asyncpg", "Django", "peewee", "SA ORM async", "Best"]
    assert ("Best: the fastest arm other than the raw psycopg and raw asyncpg control arms, where its lead over the "
            "runner-up is beyond the noise.") in pg.notes
    assert {r[0]: r[-1] for r in pg.rows}["Geometric Mean"] == "peewee"  # not the faster controls
    # the SQLite table of the same group has SQLite's arms only, and sqlite3 as its yardstick
    lite = tables["detail-simple-warm-default"]
    assert lite.header == ["Operation", "raw sqlite3", "peewee", "SA ORM async", "Best"]
    over = tables["overhead-postgresql"]
    assert over.title == "ORM overhead over the raw psycopg and raw asyncpg control arms — PostgreSQL"
    assert over.header == ["Arm", "Against", "Test 1 warm"]
    assert over.rows == [["Django", "raw psycopg", "8.00×"], ["peewee", "raw psycopg", "6.00×"],
                         ["SA ORM async", "raw asyncpg", "20.00×"]]
    assert any("sync arms against raw psycopg; async arms against raw asyncpg" in n for n in over.notes)
    assert tables["overhead"].rows == [["peewee", "3.00×"], ["SA ORM async", "8.00×"]]
    flags = [n for n in tables["statements-simple-warm-default-postgresql"].notes if "control (" in n]
    assert flags == ["F Get: more than 1.5× the statements of the raw psycopg control (1): Django 3 (3.0×)."]
    md = render(runs)
    assert "sync arms are priced against raw psycopg; async arms against raw asyncpg" in md
    assert ("- PostgreSQL: server 17.2; settings read back from each arm's connection: fsync=on; server settings "
            "read at start: fsync=on, wal_sync_method=fdatasync") in md
    assert "- SQLite settings read back from each arm's connection: journal_mode=wal" in md


def test_a_missing_postgresql_control_arm_is_noted_not_an_error() -> None:
    from pytest_ormbench.results.report.load import runs_from_records
    from pytest_ormbench.results.report.render import render, sections

    runs = runs_from_records(_postgresql_records(("psycopg", "peewee", "sqlalchemy_async")), {}, "2026-12-01")
    over = {t.anchor: t for t in sections(runs)}["overhead-postgresql"]
    assert over.rows == [["peewee", "raw psycopg", "6.00×"]]
    assert ("No raw asyncpg control arm in these results: no overhead figure for SA ORM async (run with "
            "--ormbench-arms including asyncpg to have one).") in over.notes
    md = render(runs)
    assert "No raw asyncpg control arm in the PostgreSQL results" in md
    assert "No sqlite3 control arm" not in md and "## SQLite" not in md  # no SQLite cells: nothing said of them
    # no control arm at all: no overhead table, a line in the header
    none = runs_from_records(_postgresql_records(("peewee", "django")), {}, "2026-12-01")
    assert not any(t.anchor.startswith("overhead") for t in sections(none))
    assert "No psycopg or asyncpg control arm in the PostgreSQL results" in render(none)


def test_latency_sweep_has_a_table_per_op_rows_against_rtt() -> None:
    from pytest_ormbench.results.report.load import runs_from_records
    from pytest_ormbench.results.report.render import render, sections

    runs = runs_from_records(_postgresql_records() + _sweep_records(), {}, "2026-12-01T10:00:00")
    tables = {t.anchor: t for t in sections(runs)}
    d = tables["latency-postgresql-simple-warm-default-D"]
    assert d.section == "PostgreSQL: latency sweep" and "rows/s against RTT" in d.title
    assert d.header == ["Arm", "direct", "0 ms", "1 ms", "5 ms", "25 ms", "25 ms / 0 ms"]
    rows = {r[0]: r[1:] for r in d.rows}
    assert list(rows) == ["raw psycopg", "raw asyncpg", "peewee", "SA ORM async"]
    assert rows["peewee"] == ["8,333", "8,333", "7,143", "4,545", "1,613", "×0.19"]  # 12 ms + 2 × RTT a round
    assert rows["SA ORM async"][-2:] == ["1,754", "×0.56"]
    # at 25 ms SA ORM async leads peewee by 9 %, inside its rounds' ±10 %: no sentence names a leader there
    assert not any(n.startswith("D Filter: Large: of the ORMs") for n in d.notes)
    tight = runs_from_records(_postgresql_records() + _sweep_records(jitter=0.01), {}, "2026-12-01T10:00:00")
    notes = next(t for t in sections(tight) if t.anchor == "latency-postgresql-simple-warm-default-D").notes
    assert ("D Filter: Large: of the ORMs, peewee leads at 0 ms (8,333 rows/s), SA ORM async at 25 ms "
            "(1,754 rows/s).") in notes  # rounds within ±1 %: the 9 % lead stands
    assert "latency-postgresql-simple-warm-default-F" in tables
    assert "latency-postgresql-simple-warm-default-A" not in tables  # no sweep of op A
    # the sweep's cells are not in the PostgreSQL section's tables (they are other cells)
    assert {r[0] for r in tables["detail-simple-warm-default-postgresql"].rows} == {
        "A Insert: Single", "D Filter: Large", "F Get", "Geometric Mean"}
    md = render(runs)
    assert md.index("\n## PostgreSQL\n") < md.index("\n## PostgreSQL: latency sweep\n")
    assert "latency sweep through the proxy at RTT 0, 1, 5, 25 ms (32 cells)" in md
    runs_row = next(line for line in md.splitlines() if line.startswith("| this run"))
    assert "| postgresql, postgresql @ RTT 0/1/5/25 ms |" in runs_row


def test_the_same_cell_on_sqlite_and_postgresql_is_two_cells(tmp_path: Path) -> None:
    """Same arm, model, op, mode and table on two databases: neither replaces the other, from one file or two."""
    from pytest_ormbench.results.report.tables import detail, runs_table

    lite = _write(tmp_path / "sqlite.json", _sqlite_records(), "2026-12-01T10:00:00")
    pg = _write(tmp_path / "pg.json", _postgresql_records(), "2026-12-02T10:00:00")  # the later run
    for paths in ([lite, pg], [pg, lite]):
        runs = load(paths)
        assert not any("is used" in n for n in runs.notes)
        assert runs.cells[CellKey("peewee", "simple", "D", "warm", "default")].rows_per_s == pytest.approx(100 / 0.003)
        assert runs.cells[CellKey("peewee", "simple", "D", "warm", "default", "postgresql")].rows_per_s == \
            pytest.approx(100 / 0.012)
        lite_rows = {r[0]: r for r in detail(runs.at("sqlite"), "simple", "warm", "default").rows}
        pg_rows = {r[0]: r for r in detail(runs.at("postgresql"), "simple", "warm", "default").rows}
        assert lite_rows["D Filter: Large"][2] == "33,333 ±10%" and pg_rows["D Filter: Large"][4] == "8,333 ±10%"
        # a caller that knows nothing of databases sees SQLite's figures only, never the two merged
        assert {r[0]: r[2] for r in detail(runs, "simple", "warm", "default").rows}["D Filter: Large"] == "33,333 ±10%"
        rows = {r[0]: r for r in runs_table(runs).rows}
        assert rows[str(lite)][2] == "sqlite" and rows[str(pg)][2] == "postgresql"
    # a rerun of a PostgreSQL cell replaces that cell only, and the note names it with its database
    rerun = _write(tmp_path / "rerun.json", [_db_record("peewee", "D", 0.006, "postgresql")], "2026-12-03T10:00:00")
    runs = load([lite, pg, rerun])
    assert any("cell peewee-simple-filter_large-warm-default-postgresql is in" in n for n in runs.notes)
    assert runs.cells[CellKey("peewee", "simple", "D", "warm", "default")].source == str(lite)


def test_a_latency_sweeps_own_direct_cell_does_not_replace_the_main_runs(tmp_path: Path) -> None:
    """A sweep file (later) has peewee's D direct and through the proxy; the main run (earlier) has D direct:
    the PostgreSQL tables keep the main run's figure, the latency table's direct column the sweep's own."""
    from pytest_ormbench.results.report.tables import detail, latency

    main = _write(tmp_path / "main.json", _postgresql_records(), "2026-12-01T10:00:00")
    sweep_direct = [_db_record(arm, op, 0.050, "postgresql") for op in "DF" for arm in ("peewee", "sqlalchemy_async")]
    sweep = _write(tmp_path / "sweep.json", sweep_direct + _sweep_records(), "2026-12-02T10:00:00")
    for paths in ([main, sweep], [sweep, main]):
        runs = load(paths)
        key = CellKey("peewee", "simple", "D", "warm", "default", "postgresql")
        assert runs.cells[key].source == str(main) and runs.cells[key].sweep_direct_cell.source == str(sweep)
        pg = {r[0]: r for r in detail(runs.at("postgresql"), "simple", "warm", "default").rows}
        assert pg["D Filter: Large"][4] == "8,333 ±10%"  # peewee: the main run's 12 ms, not the sweep's 50 ms
        d = {r[0]: r[1:] for r in latency(runs, "postgresql")[0].rows}
        assert d["peewee"][0] == "2,000" and d["raw psycopg"][0] == "50,000"  # the sweep's own; else the main run's
        assert not any("is used" in n for n in runs.notes)
        assert f"{sweep}: its 4 direct cell(s) (without the proxy) are the latency tables' \"direct\" column; " \
               f"the other tables keep {main}'s figures of those cells" in runs.notes
    # a second main run still replaces the first by time, and keeps the sweep's record beside it
    rerun = _write(tmp_path / "rerun.json", [_db_record("peewee", "D", 0.006, "postgresql")], "2026-12-03T10:00:00")
    runs = load([main, sweep, rerun])
    key = CellKey("peewee", "simple", "D", "warm", "default", "postgresql")
    assert runs.cells[key].source == str(rerun) and runs.cells[key].sweep_direct_cell.source == str(sweep)
    assert any("cell peewee-simple-filter_large-warm-default-postgresql is in" in n for n in runs.notes)


def test_an_arm_on_two_databases_has_one_label() -> None:
    from pytest_ormbench.results.report.load import runs_from_records
    from pytest_ormbench.results.report.tables import labels

    records = [_db_record("peewee", "D", 0.003), _db_record("peewee", "D", 0.012, "postgresql", label="peewee (pg)")]
    for order in (records, records[::-1]):
        runs = runs_from_records(order, {}, "2026-12-01")
        assert labels(runs)["peewee"] == labels(runs.at("postgresql"))["peewee"] == "peewee"


def test_latency_chart_is_written_beside_the_database_charts(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from pytest_ormbench.results.report.charts import write_charts
    from pytest_ormbench.results.report.load import runs_from_records

    runs = runs_from_records(_sqlite_records() + _postgresql_records() + _sweep_records(), {}, "2026-12-01")
    names = {p.name for p in write_charts(runs, tmp_path, formats=("png",))}
    assert names == {"detail-simple-warm-default.png", "summary-default.png",
                     "detail-simple-warm-default-postgresql.png", "summary-default-postgresql.png",
                     "latency-postgresql-simple-warm-default.png"}


def test_figures_timed_with_the_old_gc_discipline_are_marked(tmp_path: Path) -> None:
    """A timed record without gc_collections was written before the freeze discipline: its tables say so."""
    from dataclasses import replace

    from pytest_ormbench.workload.measures import GC_COLLECTIONS
    from pytest_ormbench.results.report.load import load
    from pytest_ormbench.results.report.tables import detail, footnotes, overall, runs_table

    new = [_record(arm, op) for arm in ("sqlite3", "peewee") for op in "AD"]
    old = [replace(r, measures={k: v for k, v in r.measures.items() if k != GC_COLLECTIONS}) for r in new]
    assert all(r.collected_before_clock for r in old) and not any(r.collected_before_clock for r in new)
    assert not _record("peewee", "A", instructions=5_000).collected_before_clock  # an instrumented record is not timed
    runs = load([_write(tmp_path / "new.json", new, "2026-12-02T10:00:00")])
    assert not any("old GC discipline" in n for n in detail(runs, "simple", "warm", "default").notes)
    assert not any(n.startswith("Old GC discipline:") for n in footnotes(runs))
    # the old file's peewee cells only: named; the new file's sqlite3 cells are not
    runs = load([_write(tmp_path / "new.json", new[:2], "2026-12-02T10:00:00"),
                 _write(tmp_path / "old.json", old[2:], "2026-11-30T10:00:00")])
    notes = [n for n in detail(runs, "simple", "warm", "default").notes if "old GC discipline" in n]
    assert notes == ["Timed with the old GC discipline (peewee): a full collection right before the clock (see the "
                     "footnotes)."]
    assert notes[0] in overall(runs, "default").notes
    assert any("old GC discipline" in n and "old.json" in n and "new.json" not in n for n in runs_table(runs).notes)
    assert sum(n.startswith("Old GC discipline:") for n in footnotes(runs)) == 1
    runs = load([_write(tmp_path / "old.json", old, "2026-11-30T10:00:00")])
    assert any(n.startswith("Timed with the old GC discipline (every arm)")
               for n in detail(runs, "simple", "warm", "default").notes)


def test_replaced_cells_get_one_note_per_pair_of_files_whatever_the_order(tmp_path: Path) -> None:
    """Each arm's run also runs the control arm (the default): its cells are in every file, one line a pair."""
    first = _write(tmp_path / "a.json", [_record("sqlite3", op) for op in "ABDF"], "2026-12-02T10:00:00")
    second = _write(tmp_path / "b.json", [*(_record("sqlite3", op) for op in "ABDF"), _record("peewee", "A")],
                    "2026-12-02T11:00:00")
    third = _write(tmp_path / "c.json", [_record("sqlite3", "A"), _record("django", "A")], "2026-12-02T12:00:00")
    notes = [n for n in load([first, second, third]).notes if "the later run" in n]
    assert notes == [
        f"cells sqlite3-simple-filter_large-warm-default, sqlite3-simple-get-warm-default, "
        f"sqlite3-simple-insert_batch-warm-default are in {first} and {second}; the later run ({second}) is used",
        f"cell sqlite3-simple-insert_single-warm-default is in {first} and {third}; the later run ({third}) is used",
        f"cell sqlite3-simple-insert_single-warm-default is in {second} and {third}; the later run ({third}) is used",
    ]
    for order in ([third, second, first], [second, first, third]):
        assert [n for n in load(order).notes if "the later run" in n] == notes
    many = _write(tmp_path / "d.json", [_record("sqlite3", op) for op in "ABCDEF"], "2026-12-02T13:00:00")
    assert (f"4 cells (arm sqlite3) are in {first} and {many}; the later run ({many}) is used"
            in load([first, many]).notes)


def test_overhead_prices_an_arm_against_the_control_timed_in_its_own_run(tmp_path: Path) -> None:
    """The tables show the latest run's control cells; the overhead of an arm whose run also timed the control
    uses that run's, so that the machine's speed between runs stays out of the ratio."""
    from pytest_ormbench.results.report.tables import overhead

    first = _write(tmp_path / "a.json", [*(_record("sqlite3", op, seconds=0.1) for op in "AF"),
                                         *(_record("peewee", op, seconds=0.3) for op in "AF")], "2026-12-02T10:00:00")
    second = _write(tmp_path / "b.json", [*(_record("sqlite3", op, seconds=0.2) for op in "AF"),
                                          *(_record("django", op, seconds=0.4) for op in "AF")], "2026-12-02T11:00:00")
    for order in ([first, second], [second, first]):
        table = overhead(load(order))
        assert table is not None
        assert table.rows == [["Django", "2.00×"], ["peewee", "3.00×"]]  # against the tables' control: 1.50×
        assert any(n.startswith("Each arm is priced against the control arm's cells timed in its own run")
                   and "; for peewee those are not the control figures the tables show" in n for n in table.notes)
    # an arm whose run did not time the control is priced against the tables' control figures, and said so
    alone = _write(tmp_path / "c.json", [_record("tortoise", op, seconds=0.8) for op in "AF"], "2026-12-02T09:00:00")
    table = overhead(load([first, second, alone]))
    assert table is not None
    assert ["Tortoise ORM", "4.00×"] in table.rows
    assert any("; for peewee those are not" in n for n in table.notes)  # Tortoise ORM: the tables' control



def test_arms_from_two_machines_are_told_apart_and_never_ranked_against_each_other(tmp_path: Path) -> None:
    """Two processors time the same code differently: the Runs table names each file's machine, a rows/s table
    whose rows come from two says which arm ran where, and no Best is named among arms of two machines, however
    large the lead (peewee leads Tortoise ORM on its own machine, and Django trails on another); the same files
    from one machine rank as before."""
    from pytest_ormbench.results.report.tables import CONTESTED, detail, overall, overhead, runs_table

    def both(machine_b: str) -> tuple[Path, Path]:
        a = _write(tmp_path / "a.json", [*(_record("sqlite3", op, seconds=0.1) for op in "AF"),
                                         *(_record("peewee", op, seconds=0.2) for op in "AF"),
                                         *(_record("tortoise", op, seconds=0.6) for op in "AF")], "2026-12-06T10:00:00")
        b = _write(tmp_path / "b.json", [*(_record("sqlite3", op, seconds=0.05) for op in "AF"),
                                         *(_record("django", op, seconds=2.0) for op in "AF")], "2026-12-07T10:00:00")
        doc = json.loads(b.read_text())
        doc["machine_info"] = {"machine": machine_b}
        b.write_text(json.dumps(doc))
        return a, b

    same = load(both("x86_64"))
    assert detail(same, "simple", "warm", "default").rows[-1][-1] == "peewee"  # 10x: a clear lead
    assert "Machine" not in runs_table(same).header
    assert not any("machines" in n for n in detail(same, "simple", "warm", "default").notes)

    two = load(both("aarch64"))
    table = detail(two, "simple", "warm", "default")
    assert [row[-1] for row in table.rows] == [CONTESTED] * 3  # A, F and the geometric mean
    note = next(n for n in table.notes if n.startswith("Rows from 2 machines"))
    assert "M1: peewee, Tortoise ORM; M2: raw sqlite3, Django" in note
    summary = overall(two, "default")
    assert summary is not None and any(n.startswith("Rows from 2 machines") for n in summary.notes)
    # the busy banner counts places left unranked across machines apart from those within the noise, and
    # measures gaps between arms of one machine only
    from pytest_ormbench.results.report.tables.noise import contested_count, report_gaps
    assert contested_count(same) == (0, 3, 0) and contested_count(two) == (0, 0, 3)
    assert len(report_gaps(same)) == 6 and len(report_gaps(two)) == 4  # A and F: 4 arms, or 2 + 2
    runs = runs_table(two)
    assert runs.header[-1] == "Machine" and [row[-1] for row in runs.rows] == ["M1", "M2"]
    assert any(n.startswith("Machine: M1 = x86_64") and "M2 = aarch64" in n for n in runs.notes)
    # the ratios to peewee go through each arm's own control: peewee 2x its control, Django 40x its own
    from pytest_ormbench.results.reference import ratios_markdown
    assert "| Django | — (0.51) | 0.10 (0.51) |" in ratios_markdown(same)  # Test 1 warm; one machine: the rows/s divide
    through = ratios_markdown(two)
    assert "| Django | — (0.51) | 0.05 (0.51) |" in through and "peewee's ORM overhead over the arm's" in through
    # the charts: a second title line, and each arm's machine in the legend
    from pytest_ormbench.results.report.charts import _label, _title
    from pytest_ormbench.results.report.tables import figure_grid
    grid = figure_grid(two, "simple", "warm", "default")
    sources = {s for ops in grid.values() for f in ops.values() for s in f.sources}
    assert "bars from several machines" in _title("t", {}, sources, two)
    assert _label(two, "Django", list(grid["django"].values()), True) == "Django [M2]"
    assert _title("t", {}, sources, same) == "t"
    assert _label(same, "Django", list(grid["django"].values()), False) == "Django"
    # an arm whose run timed no control, on a third machine: no ratio against another machine's control
    lone = _write(tmp_path / "c.json", [_record("objectbox", op, seconds=0.1) for op in "AF"], "2026-12-05T10:00:00")
    doc = json.loads(lone.read_text())
    doc["machine_info"] = {"machine": "riscv64"}
    lone.write_text(json.dumps(doc))
    table = overhead(load([*both("aarch64"), lone]))
    assert table is not None and ["Django", "40.00×"] in table.rows
    assert "ObjectBox" not in [row[0] for row in table.rows]
    assert any(n.startswith("— for ObjectBox: its run timed no control beside it") for n in table.notes)


def test_the_runs_table_names_arms_whose_warm_sessions_were_not_kept(tmp_path: Path) -> None:
    """A run that keeps warm sessions but timed an arm's warm cells fresh (its facts' warm_start_fresh) says so
    under the Runs table, for the arms the report shows; a kept run written before the fact existed says what
    such runs did; a fresh run, or a kept one that kept every arm, says nothing."""
    from pytest_ormbench.results.report.tables import runs_table

    path = _write(tmp_path / "a.json", [_record(a, "F") for a in ("sqlite3", "tortoise", "django")],
                  "2026-12-07T10:00:00")
    doc = json.loads(path.read_text())
    doc["ormbench"] = {"warm_start": "kept", "warm_start_fresh": {"tortoise": "why", "objectbox": "why"}}
    path.write_text(json.dumps(doc))
    note = [n for n in runs_table(load([path])).notes if n.startswith("Warm sessions:")]
    assert len(note) == 1 and f"except for Tortoise ORM ({path})" in note[0] and "ObjectBox" not in note[0]
    doc["ormbench"] = {"warm_start": "kept"}  # written before runs said: the line says what such runs did
    path.write_text(json.dumps(doc))
    note = [n for n in runs_table(load([path])).notes if n.startswith("Warm sessions")]
    assert len(note) == 1 and note[0].startswith(f"Warm sessions in {path}: kept") and "Django and SQLObject" in note[0]
    for facts in ({"warm_start": "fresh"}, {"warm_start": "kept", "warm_start_fresh": {}}):
        doc["ormbench"] = facts
        path.write_text(json.dumps(doc))
        assert not any(n.startswith("Warm sessions") for n in runs_table(load([path])).notes)


def test_test4_and_sweep_tables_say_which_arm_ran_on_which_machine(tmp_path: Path) -> None:
    """Test 4's tables and the sweep's name the machines their rows come from, and × control never divides by a
    control timed on another machine: Django's run on M2 timed no control beside it."""
    from pytest_ormbench.workload.measures import GC_COLLECTIONS, WALL
    from pytest_ormbench.results.record import CellRecord, Environment, Facts
    from pytest_ormbench.results.report.tables import latency_strategies, relational_tables

    def rec(arm: str, strategy: str, kind: str, seconds: float, rtt: float | None = None) -> object:
        return CellRecord(key=CellKey(arm, "relational", "R1", "warm", "default", "postgresql", rtt, strategy),
                          rows=4, start_rows=0, iterations=100, batch=10_000, settings={},
                          env=Environment(arm_label={"psycopg": "raw psycopg"}.get(arm, arm)),
                          facts=Facts(arm_facts={"strategy_kind": kind}),
                          measures={WALL: [seconds * 0.99, seconds, seconds * 1.01], GC_COLLECTIONS: [0.0] * 3},
                          statements=[{"SELECT": 8}])

    def swept(arm: str, seconds: float, rtt: float) -> object:  # a Tests 1-3 cell of the latency sweep
        return CellRecord(key=CellKey(arm, "simple", "F", "warm", "default", "postgresql", rtt), rows=100,
                          start_rows=0, iterations=100, batch=10_000, settings={}, env=Environment(arm_label=arm),
                          facts=Facts(), measures={WALL: [seconds] * 3, GC_COLLECTIONS: [0.0] * 3})

    def files(machine_b: str, control_b: bool = False) -> list[Path]:
        """a (M1): the controls, SA ORM and its sweep, and a SQLite cell; b (M2, later): Django, its sweep and,
        with ``control_b``, the controls again (twice as slow: M2's), which supersede a's."""
        a = _write(tmp_path / "a.json", [rec("psycopg", "lazy", "lazy", 0.1),
                                         rec("psycopg", "batched", "batched", 0.05), _record("sqlite3", "F"),
                                         *(swept("sqlalchemy", 0.1 + r / 10, r) for r in (0.0, 5.0)),
                                         rec("sqlalchemy", "lazy", "lazy", 0.2),
                                         rec("sqlalchemy", "selectin", "batched", 0.1),
                                         *(rec("sqlalchemy", s, k, 0.1 + r / 100, r) for s, k in
                                           (("lazy", "lazy"), ("selectin", "batched")) for r in (0.0, 5.0))],
                   "2026-12-06T10:00:00")
        controls = [rec("psycopg", "lazy", "lazy", 0.2), rec("psycopg", "batched", "batched", 0.1)] if control_b else []
        b = _write(tmp_path / "b.json", [*controls, rec("django", "lazy", "lazy", 0.4),
                                         rec("django", "prefetch", "batched", 0.2),
                                         *(swept("django", 0.2 + r / 10, r) for r in (0.0, 5.0)),
                                         *(rec("django", s, k, 0.3 + r / 100, r) for s, k in
                                           (("lazy", "lazy"), ("prefetch", "batched")) for r in (0.0, 5.0))],
                   "2026-12-07T10:00:00")
        doc = json.loads(b.read_text())
        doc["machine_info"] = {"machine": machine_b}
        b.write_text(json.dumps(doc))
        return [a, b]

    def over(tables: list, arm: str) -> list[str]:
        r1 = next(t for t in tables if t.title.startswith("R1 "))
        return [row[5] for row in r1.rows if row[0] == arm]

    same = load(files("x86_64")).at("postgresql")
    tables = relational_tables(same)
    assert not any("machines" in n for t in tables for n in t.notes)
    assert over(tables, "django") == ["×4.00", "×4.00"]  # one machine: the control need not be in its file

    two = load(files("aarch64")).at("postgresql")
    tables = relational_tables(two)
    assert over(tables, "django") == ["", ""] and over(tables, "sqlalchemy") == ["×2.00", "×2.00"]
    for title in ("Test 4 overall", "R1 "):
        t = next(t for t in tables if t.title.startswith(title))
        note = next(n for n in t.notes if n.startswith("Rows from 2 machines"))
        assert "M1: raw psycopg, sqlalchemy; M2: django" in note, note
    # M2 timed the controls too, later: Django is priced against M2's, SA ORM against M1's it superseded
    tables = relational_tables(load(files("aarch64", control_b=True)).at("postgresql"))
    assert over(tables, "django") == ["×2.00", "×2.00"] and over(tables, "sqlalchemy") == ["×2.00", "×2.00"]
    # the sweep tables get the whole runs (every database's arms, as the report passes them)
    from pytest_ormbench.results.report.tables.latency import latency
    for runs, across in ((load(files("aarch64")), True), (load(files("x86_64")), False)):
        for sweep in (latency(runs, "postgresql"), latency_strategies(runs, "postgresql")):
            assert sweep and any(n.startswith("Rows from 2 machines") for t in sweep for n in t.notes) == across


def _strategy_record(strategy: str, kind: str, rtt: float, seconds: float, jitter: float) -> object:
    """A synthetic Test 4 R1 cell of SA ORM on PostgreSQL through the proxy at ``rtt`` ms: 4 pages a round."""
    from pytest_ormbench.workload.measures import GC_COLLECTIONS, WALL
    from pytest_ormbench.results.record import CellRecord, Environment, Facts

    return CellRecord(key=CellKey("sqlalchemy", "relational", "R1", "warm", "default", "postgresql", rtt, strategy),
                      rows=4, start_rows=0, iterations=100, batch=10_000, settings={},
                      env=Environment(arm_label="SA ORM"), facts=Facts(arm_facts={"strategy_kind": kind}),
                      measures={WALL: [seconds * (1 - jitter), seconds, seconds * (1 + jitter)],
                                GC_COLLECTIONS: [0.0, 0.0, 0.0]},
                      statements=[{"SELECT": {"lazy": 204, "selectin": 8, "joined": 4}[strategy]}])


def _strategy_sweep(jitter: float) -> list:
    """lazy: 51 round trips a page; selectin 2 and the least work; joined 1 round trip, 10 % more work."""
    trips, work = {"lazy": 51, "selectin": 2, "joined": 1}, {"lazy": 1.5, "selectin": 1.0, "joined": 1.1}
    kinds = {"lazy": "lazy", "selectin": "batched", "joined": "join"}
    return [_strategy_record(s, kinds[s], rtt, 4 * (work[s] + trips[s] * rtt) / 1000, jitter)
            for s in trips for rtt in (0.0, 1.0, 5.0, 25.0)]


def test_the_strategy_latency_table_names_a_flip_only_between_leads_beyond_the_noise() -> None:
    from pytest_ormbench.results.report.load import runs_from_records
    from pytest_ormbench.results.report.render import sections

    tight = runs_from_records(_strategy_sweep(jitter=0.01), {}, "2026-12-05T10:00:00")
    table = next(t for t in sections(tight) if t.anchor == "relational-latency-users_posts-warm")
    assert table.header == ["Arm", "Strategy", "0 ms", "1 ms", "5 ms", "25 ms"]
    rows = {r[1]: r[2:] for r in table.rows}
    assert rows["selectin"][0] == "1*" and rows["joined"][1:] == ["2.1*", "6.1*", "26.1*"]
    assert rows["lazy"] == ["1.5", "52.5", "256", "1.28e+03"]
    assert "SA ORM: the fastest strategy flips: selectin at 0 ms → joined at 1 ms." in table.notes
    # rounds within ±10 %: selectin's 10 % lead at 0 ms is contested, so the change to joined is no flip
    loose = runs_from_records(_strategy_sweep(jitter=0.1), {}, "2026-12-05T10:00:00")
    table = next(t for t in sections(loose) if t.anchor == "relational-latency-users_posts-warm")
    assert {r[1]: r[2:] for r in table.rows}["selectin"][0] == "1~"
    assert not any("flips" in n for n in table.notes)
    assert any(n.startswith("SA ORM: the fastest strategy changes along the RTTs (selectin / joined / joined / "
                            "joined), but only through leads within the noise") for n in table.notes)
