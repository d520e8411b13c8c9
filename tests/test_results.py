"""The published report is what the reporter makes of the published JSON (issue 5's "regenerates exactly")."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pytest_ormbench.commands.main import main
from pytest_ormbench.results.reference import ratios_markdown
from pytest_ormbench.results.report.load import load

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
REGENERATE = "run `ormbench publish --finalize-only --out results` and commit what it writes"


def test_committed_report_is_what_the_json_gives(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(p.relative_to(ROOT) for p in RESULTS.glob("*.json"))
    if not files:
        pytest.skip("no published run in results/ yet")
    assert (RESULTS / "report.md").exists(), f"results/ has JSON but no report.md: {REGENERATE}"
    monkeypatch.chdir(ROOT)  # the report names its sources as given: results/…
    assert main(["report", *map(str, files), "--no-charts", "--format", "markdown"]) == 0
    made = capsys.readouterr().out
    committed = (RESULTS / "report.md").read_text()
    # the committed file also links its charts; everything else must match byte for byte
    assert re.sub(r"### Charts\n\n(?:!\[[^\]]*\]\([^)]*\)\n)+\n", "", committed) == made, \
        f"results/report.md is not what the JSON gives: {REGENERATE}"
    for link in (line[line.index("](") + 2:-1] for line in committed.splitlines() if line.startswith("![")):
        assert os.path.exists(RESULTS / link), f"results/report.md links a missing chart: {link}"


def test_committed_ratios_are_what_the_json_gives() -> None:
    """results/ratios-vs-reference.md is generated too; a hand edit or a stale copy must fail here."""
    files = sorted(str(p) for p in RESULTS.glob("*.json"))
    if not files:
        pytest.skip("no published run in results/ yet")
    assert (RESULTS / "ratios-vs-reference.md").read_text() == ratios_markdown(load(files)), \
        f"results/ratios-vs-reference.md is not what the JSON gives: {REGENERATE}"


def test_results_holds_no_scripts() -> None:
    """results/ is data (JSON, logs, Markdown tables, charts) and READMEs only: a script that made or reads the
    data belongs in experiments/ (one-off measurements, experiments/README.md) or in the package (`ormbench
    publish` makes the published runs), and reads the data from results/ by path."""
    scripts = sorted(str(p.relative_to(ROOT)) for p in RESULTS.rglob("*") if p.suffix in (".py", ".sh"))
    assert not scripts, f"scripts in results/ (move them to experiments/, see experiments/README.md): {scripts}"
