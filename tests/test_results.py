"""The published report is what the reporter makes of the published JSON (issue 5's "regenerates exactly")."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest

from pytest_ormbench.commands.main import main

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"


def test_committed_report_is_what_the_json_gives(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(p.relative_to(ROOT) for p in RESULTS.glob("*.json"))
    if not files:
        pytest.skip("no published run in results/ yet")
    assert (RESULTS / "report.md").exists(), "results/ has JSON but no report.md: run results/finalize.sh"
    monkeypatch.chdir(ROOT)  # the report names its sources as given: results/…
    assert main(["report", *map(str, files), "--no-charts", "--format", "markdown"]) == 0
    made = capsys.readouterr().out
    committed = (RESULTS / "report.md").read_text()
    # the committed file also links its charts; everything else must match byte for byte
    assert re.sub(r"### Charts\n\n(?:!\[[^\]]*\]\([^)]*\)\n)+\n", "", committed) == made, \
        "results/report.md is not what the JSON gives: run results/finalize.sh and commit what it writes"
    for link in (line[line.index("](") + 2:-1] for line in committed.splitlines() if line.startswith("![")):
        assert os.path.exists(RESULTS / link), f"results/report.md links a missing chart: {link}"


def test_committed_ratios_are_what_the_json_gives(capsys: pytest.CaptureFixture[str]) -> None:
    """results/ratios-vs-reference.md is generated too; a hand edit or a stale copy must fail here."""
    files = sorted(str(p) for p in RESULTS.glob("*.json"))
    if not files:
        pytest.skip("no published run in results/ yet")
    spec = importlib.util.spec_from_file_location("ratios_vs_reference", RESULTS / "ratios_vs_reference.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    script.main(files)
    assert (RESULTS / "ratios-vs-reference.md").read_text() == capsys.readouterr().out, \
        "results/ratios-vs-reference.md is not what the JSON gives: run results/finalize.sh and commit what it writes"
