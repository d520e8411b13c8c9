"""Finalize: what the published folder holds beside the pieces' JSON: ``report.md`` and ``charts/``
(``ormbench report``), ``index.html`` (``ormbench report --html``: the page to share), ``ratios-vs-reference.md``
and ``wall-times.md`` (from every log's last line)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from pathlib import Path
from typing import IO

from pytest_ormbench.commands.publish.errors import PublishError
from pytest_ormbench.commands.publish.runner import minsec


def wall_times(out: Path) -> str:
    """wall-times.md: every log's last ``wall_seconds=`` line, as finalize.sh tabled it."""
    rows = ["| run log | started (UTC) | wall time | exit |", "| --- | --- | ---: | ---: |"]
    for log in sorted(out.glob("*.log"), key=lambda p: p.name.encode()):
        lines = [ln for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if "wall_seconds=" in ln]
        line = lines[-1] if lines else ""
        secs = m.group(1) if (m := re.match(r".*wall_seconds=([0-9]*)", line)) else ""
        started = m.group(1).replace("T", " ")[:16] if (m := re.match(r".*started=([0-9T:-]*)", line)) else ""
        code = m.group(1) if (m := re.match(r"exit=([0-9]*)", line)) else ""
        if secs:
            rows.append(f"| {log.name} | {started or '?'} | {minsec(int(secs))} | {code} |")
        else:
            rows.append(f"| {log.name} | — | running or stopped | — |")
    return "\n".join(rows) + "\n"


def _base(out: Path) -> Path:
    """Where the report's source names start: the checkout around ``out`` (results/… as before), else its parent."""
    done = subprocess.run(["git", "-C", str(out), "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          check=False)
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else out.parent


def finalize(out: Path, charts: bool, say: IO[str]) -> None:
    from pytest_ormbench.results.reference import ratios_markdown
    from pytest_ormbench.results.report.html import write_html
    from pytest_ormbench.results.report.load import load
    from pytest_ormbench.results.report.write import write_report

    out = out.resolve()
    files = sorted(out.glob("*.json"))
    if not files:
        raise PublishError(f"{out}: no piece JSON to report on")
    base = _base(out)
    with contextlib.chdir(base):  # the report names its sources as given: relative to the checkout
        runs = load([os.path.relpath(f, base) for f in files])
        write_report(runs, out / "report.md", "markdown", out / "charts" if charts else None, err=say)
        write_html(runs, out / "index.html")
    (out / "ratios-vs-reference.md").write_text(ratios_markdown(runs), encoding="utf-8")
    (out / "wall-times.md").write_text(wall_times(out), encoding="utf-8")
    print(f"ormbench publish: wrote {out}/report.md{'' if not charts else ', charts/'}, index.html, ratios-vs-reference.md, "
          f"wall-times.md ({len(files)} JSON files)", file=say)
