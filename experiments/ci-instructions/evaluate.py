"""What the comparison flags, by instructions and by time: the tables of results/ci-instructions/README.md.

    python experiments/ci-instructions/evaluate.py [instructions|time|both] [--data DIR]

Reads the runs ``run.sh`` made (DIR, default results/ci-instructions, where its data is). For each slowdown (+2, +5, +10 %) the delayed run is compared with each
of the six same-code baselines, and the delayed arm's cells flagged as regressions are counted; every
pair of baselines (15) is compared once: any cell flagged (regression or improvement) is a false alarm.
Instructions are judged with the comparison's defaults (2 % threshold, 0.2 % floor); time with its
defaults (10 % threshold, Mann-Whitney with Holm, drift correction by the control arm).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

from pytest_ormbench.results.compare import (IMPROVEMENT, REGRESSION, Thresholds, compare, default_threshold_pct,
    load_side)

ROOT = Path(__file__).resolve().parents[2]
#: where run.sh wrote the runs (the data stays in results/, the scripts moved to experiments/)
DATA = ROOT / "results" / "ci-instructions"


def judge(data: Path, base: str, new: str, measure: str) -> tuple[int, int, int, int]:
    """(delayed cells, regressions, improvements, statement changes) of one comparison."""
    cmp = compare(load_side(str(data / base)), load_side(str(data / new)),
                  Thresholds.parse([], default_pct=default_threshold_pct(measure)), measure=measure)
    cells = [c for c in cmp.cells if c.key.arm == "delayed"]
    return (len(cells), sum(c.category == REGRESSION for c in cells), sum(c.category == IMPROVEMENT for c in cells),
            len(cmp.statement_changes))


def table(data: Path, prefix: str, measure: str) -> list[str]:
    bases = [f"{prefix}-base-{i}.json" for i in range(1, 7) if (data / f"{prefix}-base-{i}.json").exists()]
    out = [f"### By {'instructions' if measure == 'instructions' else 'time'} ({len(bases)} baselines)", "",
           "| new run | comparisons | delayed cells | flagged as regressions | share |", "| --- | ---: | ---: | ---: | ---: |"]
    for pct in (2, 5, 10):
        new = f"{prefix}-delay-{pct}.json"
        if not (data / new).exists():
            continue
        results = [judge(data, b, new, measure) for b in bases]
        n, flagged = sum(r[0] for r in results), sum(r[1] for r in results)
        out.append(f"| +{pct} % | {len(results)} | {n} | {flagged} | {flagged / n:.0%} |")
    pairs = list(itertools.combinations(bases, 2))
    if pairs:
        results = [judge(data, a, b, measure) for a, b in pairs]
        n = sum(r[0] for r in results)
        alarms = sum(r[1] + r[2] for r in results)
        stmt = sum(r[3] for r in results)
        out.append(f"| same code | {len(pairs)} pairs | {n} | {alarms} false alarms (regressions or improvements); "
                   f"{stmt} statement changes | {alarms / n:.1%} |")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", nargs="?", choices=("instructions", "time", "both"), default="both")
    ap.add_argument("--data", type=Path, default=DATA,
                    help=f"the folder of run.sh's JSON (default: {DATA.relative_to(ROOT)})")
    a = ap.parse_args()
    lines: list[str] = []
    if a.what in ("instructions", "both"):
        lines += table(a.data, "instr", "instructions") + [""]
    if a.what in ("time", "both"):
        lines += table(a.data, "time", "wall_seconds") + [""]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
