"""What the comparison flags, by instructions and by time: the tables of results/ci-instructions/README.md.

    python results/ci-instructions/evaluate.py [instructions|time|both]

Reads the runs ``run.sh`` made. For each slowdown (+2, +5, +10 %) the delayed run is compared with each
of the six same-code baselines, and the delayed arm's cells flagged as regressions are counted; every
pair of baselines (15) is compared once: any cell flagged (regression or improvement) is a false alarm.
Instructions are judged with the comparison's defaults (2 % threshold, 0.2 % floor); time with its
defaults (10 % threshold, Mann-Whitney with Holm, drift correction by the control arm).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from pytest_ormbench.results.compare import (IMPROVEMENT, REGRESSION, Thresholds, compare, default_threshold_pct,
    load_side)

HERE = Path(__file__).resolve().parent


def judge(base: str, new: str, measure: str) -> tuple[int, int, int, int]:
    """(delayed cells, regressions, improvements, statement changes) of one comparison."""
    cmp = compare(load_side(str(HERE / base)), load_side(str(HERE / new)),
                  Thresholds.parse([], default_pct=default_threshold_pct(measure)), measure=measure)
    cells = [c for c in cmp.cells if c.key[0] == "delayed"]
    return (len(cells), sum(c.category == REGRESSION for c in cells), sum(c.category == IMPROVEMENT for c in cells),
            len(cmp.statement_changes))


def table(prefix: str, measure: str) -> list[str]:
    bases = [f"{prefix}-base-{i}.json" for i in range(1, 7) if (HERE / f"{prefix}-base-{i}.json").exists()]
    out = [f"### By {'instructions' if measure == 'instructions' else 'time'} ({len(bases)} baselines)", "",
           "| new run | comparisons | delayed cells | flagged as regressions | share |", "| --- | ---: | ---: | ---: | ---: |"]
    for pct in (2, 5, 10):
        new = f"{prefix}-delay-{pct}.json"
        if not (HERE / new).exists():
            continue
        results = [judge(b, new, measure) for b in bases]
        n, flagged = sum(r[0] for r in results), sum(r[1] for r in results)
        out.append(f"| +{pct} % | {len(results)} | {n} | {flagged} | {flagged / n:.0%} |")
    pairs = list(itertools.combinations(bases, 2))
    if pairs:
        results = [judge(a, b, measure) for a, b in pairs]
        n = sum(r[0] for r in results)
        alarms = sum(r[1] + r[2] for r in results)
        stmt = sum(r[3] for r in results)
        out.append(f"| same code | {len(pairs)} pairs | {n} | {alarms} false alarms (regressions or improvements); "
                   f"{stmt} statement changes | {alarms / n:.1%} |")
    return out


def main() -> int:
    what = sys.argv[1] if len(sys.argv) > 1 else "both"
    lines: list[str] = []
    if what in ("instructions", "both"):
        lines += table("instr", "instructions") + [""]
    if what in ("time", "both"):
        lines += table("time", "wall_seconds") + [""]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
