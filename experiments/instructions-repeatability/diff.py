"""The largest difference of a cell's instruction count between two runs of run.sh.

    python experiments/instructions-repeatability/diff.py A B [--data DIR]   (stems: A-warm.json, A-cold.json, ...)

DIR is where run.sh wrote the runs: results/instructions-repeatability by default.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: where run.sh wrote the runs (the data stays in results/, the scripts moved to experiments/)
DATA = ROOT / "results" / "instructions-repeatability"


def counts(data: Path, stem: str) -> dict[str, float]:
    out = {}
    for mode in ("warm", "cold"):
        path = data / f"{stem}-{mode}.json"
        if not path.exists():
            continue
        for b in json.loads(path.read_text())["benchmarks"]:
            values = b["extra_info"]["measures"].get("instructions")
            if values:
                out[b["name"].split("[", 1)[1].rstrip("]")] = statistics.median(values)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", help="the first run's name (its files: A-warm.json, A-cold.json)")
    ap.add_argument("b", help="the second run's name")
    ap.add_argument("--data", type=Path, default=DATA, help=f"the runs' folder (default: {DATA.relative_to(ROOT)})")
    args = ap.parse_args()
    a, b = counts(args.data, args.a), counts(args.data, args.b)
    common = sorted(a.keys() & b.keys())
    diffs = sorted(((abs(a[k] - b[k]) / min(a[k], b[k]), k) for k in common), reverse=True)
    by_arm: dict[str, float] = {}
    for d, k in diffs:
        arm = k.rsplit("-", 4)[0]
        by_arm[arm] = max(by_arm.get(arm, 0.0), d)
    print(f"{args.a} vs {args.b}: {len(common)} cells in both "
          f"({len(a) - len(common)} only in {args.a}, {len(b) - len(common)} only in {args.b})")
    print(f"largest difference: {diffs[0][0]:.4%} ({diffs[0][1]}); cells above 0.1 %: "
          f"{sum(d > 0.001 for d, _ in diffs)}; median difference {statistics.median(d for d, _ in diffs):.5%}")
    print("largest per arm: " + ", ".join(f"{arm} {d:.4%}" for arm, d in sorted(by_arm.items())))
    for d, k in diffs[:8]:
        print(f"  {d:.4%}  {k}  {a[k]:.0f} vs {b[k]:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
