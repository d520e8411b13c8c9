"""``ormbench publish``: pieces from a frozen tree, resume, a stopped or failed piece redone, the tables, bad input.

Every publish here is the raw sqlite3 control arm on one cell (Test 1, A, 5 rows, 1 round): a few seconds.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_ormbench.commands.main import main
from pytest_ormbench.commands.publish import last_end_line, wall_times

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--preset", "quick", "--ormbench-arms=sqlite3", "--ormbench-models=simple", "--ormbench-ops=A",
        "--ormbench-iterations=5", "--ormbench-batch=50", "--ormbench-rounds=1", "--no-charts", "--repo", str(ROOT)]

# its module-scoped fixture built once, on one worker (tests/conftest.py, pytest_collection_modifyitems)
pytestmark = [pytest.mark.skipif(not (ROOT / ".git").exists(), reason="publish freezes a git checkout's tree"),
              pytest.mark.xdist_group("test_publish")]


def publish(out: Path, *extra: str) -> int:
    # under pytest -n the pieces would inherit PYTEST_XDIST_WORKER, and pytest-benchmark in them would take itself
    # for an xdist worker and time nothing (no JSON): a piece is a pytest run of its own
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PYTEST_XDIST_WORKER", raising=False)
        return main(["publish", "--out", str(out), *TINY, *extra])


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("published")
    assert publish(out) == 0
    return out


def test_a_publish_writes_the_piece_and_the_tables(done: Path) -> None:
    assert sorted(p.name for p in done.iterdir()) == [
        "index.html", "publish-manifest.jsonl", "quick-sqlite3.json", "quick-sqlite3.log", "ratios-vs-reference.md", "report.md",
        "wall-times.md"]
    doc = json.loads((done / "quick-sqlite3.json").read_text())
    assert [b["name"] for b in doc["benchmarks"]][0].startswith("test_orm[sqlite3-simple-insert_single-warm-default")
    # the frozen copy has no checkout, yet the JSON names the commit it ran (not "unversioned")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert doc["commit_info"]["id"] == head and doc["commit_info"]["frozen_tree"] is True
    log = (done / "quick-sqlite3.log").read_text().splitlines()
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert log[0].startswith(f"ormbench publish: piece quick-sqlite3: tree {sha} ")
    assert re.search(r"--ormbench-arms=sqlite3 --ormbench-dbs?=sqlite --ormbench-models=simple", log[1])
    end = last_end_line(done / "quick-sqlite3.log")
    assert end is not None and end[0] == 0 and log[-1].startswith("exit=0 wall_seconds=")
    assert "| quick-sqlite3.log |" in (done / "wall-times.md").read_text()
    assert "raw sqlite3" in (done / "report.md").read_text()
    manifest = [json.loads(line) for line in (done / "publish-manifest.jsonl").read_text().splitlines()]
    assert manifest[0]["commit"] == sha and manifest[0]["pieces"] == ["quick-sqlite3"]
    assert manifest[1]["status"] == "ok" and manifest[1]["exit"] == 0


def test_a_second_publish_skips_the_done_piece(done: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (done / "quick-sqlite3.json").stat().st_mtime_ns
    (done / "report.md").unlink()
    assert publish(done) == 0
    err = capsys.readouterr().err
    assert "[1/1] quick-sqlite3: done before (exit=0" in err and "skipped" in err
    assert (done / "quick-sqlite3.json").stat().st_mtime_ns == before
    assert (done / "report.md").exists()  # the tables are written again


def test_a_failed_or_stopped_piece_is_redone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "quick-sqlite3.log").write_text("collected 1 item\n")  # killed: no end line, no JSON
    assert publish(tmp_path, "--no-finalize") == 0
    assert "quick-sqlite3: running" in capsys.readouterr().err
    assert (tmp_path / "quick-sqlite3.log.prev").read_text() == "collected 1 item\n"
    # a JSON whose log does not end with exit=0 is not done either
    log = tmp_path / "quick-sqlite3.log"
    log.write_text(log.read_text() + "exit=1 wall_seconds=3 started=2026-12-04T10:00:00Z\n")
    assert publish(tmp_path, "--no-finalize") == 0
    assert "quick-sqlite3: running" in capsys.readouterr().err
    assert last_end_line(log)[0] == 0  # type: ignore[index]


def test_sigterm_stops_the_piece_and_leaves_no_json(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "pytest_ormbench.commands.main", "publish", "--out", str(tmp_path), *TINY]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    log = tmp_path / "quick-sqlite3.log"
    deadline = time.monotonic() + 30
    while not (log.exists() and "--benchmark-json" in log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM" in err and "Run the same command again to resume" in err
    # killed before pytest set up its handler (143), or pytest's own "interrupted" (2): not 0, so redone next time
    assert last_end_line(log)[0] in (2, 128 + signal.SIGTERM)  # type: ignore[index]
    assert not [*tmp_path.glob("*.json"), *tmp_path.glob("*.partial")] and not (tmp_path / ".publish.lock").exists()


def test_one_publish_per_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import fcntl

    with open(tmp_path / ".publish.lock", "w") as fh:
        fh.write("12345\n")
        fh.flush()
        fcntl.flock(fh, fcntl.LOCK_EX)
        assert publish(tmp_path) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ormbench publish: error: {tmp_path} is being published by another process (pid 12345); "
                   "one publish per folder"]


@pytest.mark.parametrize("args, message", [
    ([], "--out DIR is required"),
    (["--out", "{out}", "--preset", "huge"], "--preset: unknown value 'huge'; valid: quick, full, publication"),
    (["--out", "{out}", "--ormbench-db=oracle"], "--ormbench-db: unknown value 'oracle'"),
    (["--out", "{out}", "--benchmark-json=x.json"], "--benchmark-json: publish names each piece's output itself"),
    (["--out", "{out}", "--template", "{name}-{model}"], "--template: unknown placeholder {model}"),
    (["--out", "{out}", "--template", "{name}"], "--template must contain {arm}"),
    (["--out", "{out}", "--python", "/nonexistent/python"], "--python /nonexistent/python: not an executable file"),
    (["--out", "{out}", "--commit", "no-such-rev", "--repo", str(ROOT)], "--commit no-such-rev: not a commit in"),
    (["--out", "{out}", "--repo", str(ROOT), "--ormbench-arms=nosuch"], "--ormbench-arms: unknown arm 'nosuch'"),
    (["--out", "{out}", *TINY, "--ormbench-rounds=0"], "pytest refused the options: --ormbench-rounds"),
    (["--out", "{out}", "--finalize-only"], "no piece JSON to report on"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                          message: str) -> None:
    assert main(["publish", *[a.replace("{out}", str(tmp_path)) for a in args]]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("ormbench publish: error:")]
    assert len(err) == 1 and message in err[0], err


def test_wall_times_reads_the_published_logs_as_finalize_sh_did(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("x\nexit=0 wall_seconds=3725 started=2026-12-02T10:11:12Z\n")
    (tmp_path / "b.log").write_text("stopped without an end line\n")
    (tmp_path / "c.log").write_text("exit=1 wall_seconds=61 started=2026-12-02T10:11:12Z\n"
                                    "exit=0 wall_seconds=5 started=2026-12-03T01:02:03Z\n")
    assert wall_times(tmp_path) == (
        "| run log | started (UTC) | wall time | exit |\n| --- | --- | ---: | ---: |\n"
        "| a.log | 2026-12-02 10:11 | 62 min 05 s | 0 |\n"
        "| b.log | — | running or stopped | — |\n"
        "| c.log | 2026-12-03 01:02 | 0 min 05 s | 0 |\n")


def test_the_committed_wall_times_are_what_the_logs_give() -> None:
    results = ROOT / "results"
    if not (results / "wall-times.md").exists():
        pytest.skip("no published run")
    assert wall_times(results) == (results / "wall-times.md").read_text()


def test_scaffold_and_selfcheck_are_subcommands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scaffold", "pony", "--dir", str(tmp_path)]) == 0
    assert (tmp_path / "pony_arm.py").exists()
    assert main(["selfcheck", "nosuch"]) == 2
    assert "unknown arm 'nosuch'" in capsys.readouterr().err
