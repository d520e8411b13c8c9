"""The per-run table of a published run's README: start, wall time, exit, drift floor, probe median.

    python results/run_table.py results/my-default-*.json

Reads each JSON's run facts (the drift floor and the sqlite3 probes between rounds) and the last line that
run-large-arms.sh / run-rtt-sweep.sh appended to the log beside it. Imports nothing of the plugin.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from datetime import datetime, timezone
from pathlib import Path


def row(path: Path) -> str:
    facts = json.loads(path.read_text(encoding="utf-8")).get("ormbench", {})
    floor = facts.get("drift_floor")
    probes = [p["rows_per_s"] for p in facts.get("probes", [])]
    log = path.with_suffix(".log")
    started = wall = code = "—"
    if log.exists():
        ends = re.findall(r"exit=(\d+) wall_seconds=(\d+) started=(\S+)", log.read_text(encoding="utf-8"))
        if ends:
            code, secs, stamp = ends[-1]
            when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
            started = when.strftime("%Y-%m-%d %H:%M")
            wall = f"{int(secs) // 60} min {int(secs) % 60} s"
    floor_text = f"{floor:.1%}".replace("%", " %") if isinstance(floor, (int, float)) else "—"
    probe_text = f"{statistics.median(probes):,.0f}" if probes else "—"
    return f"| {path.stem} | {started} | {wall} | {code} | {floor_text} | {probe_text} |"


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python results/run_table.py RUN.json [...]", file=sys.stderr)
        return 2
    missing = [a for a in argv if not Path(a).is_file()]
    if missing:
        print(f"run_table: no such file: {missing[0]}", file=sys.stderr)
        return 2
    print("| run | started (UTC) | wall time | exit | drift floor | probe median (rows/s) |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for arg in sorted(argv):
        print(row(Path(arg)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
