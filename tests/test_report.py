"""The reporter: golden tables from hand-written JSON, the arithmetic, and every bad input."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from pytest_ormbench.cli import main
from pytest_ormbench.report.load import load
from pytest_ormbench.stats import geometric_mean, rows_per_second

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
    assert "57,163 (×1.25)" in text  # warm / cold of the hand-written figures


def test_same_cell_in_two_files_uses_the_later_run() -> None:
    runs = load([DATA / "cold.json", DATA / "rerun.json"])
    cell = runs.cells[("peewee", "simple", "D", "cold", "default")]
    assert cell.source.endswith("rerun.json")
    assert cell.rows_per_s == pytest.approx(500_000)
    assert any("the later run" in n and "peewee-simple-D-cold-default" in n for n in runs.notes)
    # order of the files does not matter
    runs = load([DATA / "rerun.json", DATA / "cold.json"])
    assert runs.cells[("peewee", "simple", "D", "cold", "default")].source.endswith("rerun.json")


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
    charts = sorted(p.name for p in (tmp_path / "charts").iterdir())
    assert "summary-default.png" in charts and "detail-simple-cold-default.svg" in charts
    assert "](charts/summary-default.png)" in out.read_text()


def test_reporter_imports_no_orm() -> None:
    import subprocess

    code = ("import sys, pytest_ormbench.cli, pytest_ormbench.report.render;"
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
    row = next(line for line in out.splitlines() if line.startswith(str(path)))
    assert row.split()[-5:] == ["interleaved", "7.3%", "(2", "probes)", "104"]  # median of the probes
    assert main(["report", str(DATA / "cold.json"), "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "over each run (see Runs)" not in out  # files from before the probe: no header line, a dash in Runs
    assert next(line for line in out.splitlines() if line.startswith("tests/data/cold.json")).split()[-3:] == ["—", "—", "—"]


def test_runs_table_says_which_file_supplies_which_cells() -> None:
    from pytest_ormbench.report.tables import runs_table

    table = runs_table(load([DATA / "cold.json", DATA / "rerun.json"]))
    rows = {row[0]: row for row in table.rows}
    assert rows["tests/data/rerun.json"][2:5] == ["peewee", "default", "1"]  # the later run supplies its one cell
    assert rows["tests/data/cold.json"][4] == "31"  # 32 cells, one superseded
    assert rows["tests/data/cold.json"][1] == "2026-11-01 10:00"


def test_best_names_the_fastest_arm_other_than_the_control(tmp_path: Path) -> None:
    from pytest_ormbench.report.tables import detail

    doc = json.loads((DATA / "cold.json").read_text())
    for bench in doc["benchmarks"]:  # SQLObject's Delete becomes faster than peewee's, slower than raw sqlite3
        info = bench["extra_info"]
        if (info["arm"], info["model"], info["op"]) == ("sqlobject", "simple", "K"):
            bench["stats"]["data"] = [x / 4 for x in bench["stats"]["data"]]
    path = tmp_path / "cold.json"
    path.write_text(json.dumps(doc))
    table = detail(load([path]), "simple", "cold", "default")
    rows = {row[0]: row for row in table.rows}
    assert rows["K Delete"][1:] == ["50,000", "25,000", "40,000", "SQLObject"]
    assert rows["A Insert: Single"][-1] == "peewee"
    assert "Best: the fastest arm other than the raw sqlite3 control arm." in table.notes

    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["extra_info"]["arm"] == "sqlite3"]
    path.write_text(json.dumps(doc))
    alone = detail(load([path]), "simple", "cold", "default")
    assert "Best" not in alone.header and not any(n.startswith("Best:") for n in alone.notes)


def test_a_table_holds_only_what_applies(tmp_path: Path) -> None:
    """One ORM beside the control: nothing to rank, so no Best column; no legend for a dash that is not there."""
    from pytest_ormbench.report.tables import detail, footnotes

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
