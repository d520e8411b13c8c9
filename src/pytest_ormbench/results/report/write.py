"""Writing a report: the Markdown or text tables, and the charts beside them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pytest_ormbench.results.report.load import Runs
from pytest_ormbench.results.report.render import render


def charts_dir_for(out: Path) -> Path:
    """The charts' folder of a report at ``out``: beside it and named after it (``reads.md`` -> ``reads-charts/``),
    so that two reports in one folder never draw over each other's charts."""
    return out.with_name(f"{out.stem}-charts")


def write_report(runs: Runs, out: Path | None, fmt: str, charts_dir: Path | None, *, err=None) -> str:  # noqa: ANN001
    """Render (and write) a report; charts are skipped with one line when matplotlib is missing."""
    err = err or sys.stderr
    chart_links: list[str] = []
    if charts_dir is not None:
        from pytest_ormbench.results.report.charts import ChartsUnavailable, write_charts

        try:
            written = write_charts(runs, charts_dir)
        except ChartsUnavailable as exc:
            print(f"ormbench: {exc}", file=err)
        else:
            base = out.parent if out else Path.cwd()
            chart_links = [os.path.relpath(p, base) for p in written if p.suffix == ".png"]
    text = render(runs, fmt, chart_links)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    return text
