"""The largest difference of a cell's instruction count between two runs of run.sh.

    python results/instructions-repeatability/diff.py A B    (stems: A-warm.json, A-cold.json, ...)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def counts(stem: str) -> dict[str, float]:
    out = {}
    for mode in ("warm", "cold"):
        path = HERE / f"{stem}-{mode}.json"
        if not path.exists():
            continue
        for b in json.loads(path.read_text())["benchmarks"]:
            values = b["extra_info"]["measures"].get("instructions")
            if values:
                out[b["name"].split("[", 1)[1].rstrip("]")] = statistics.median(values)
    return out


def main() -> int:
    a, b = counts(sys.argv[1]), counts(sys.argv[2])
    common = sorted(a.keys() & b.keys())
    diffs = sorted(((abs(a[k] - b[k]) / min(a[k], b[k]), k) for k in common), reverse=True)
    by_arm: dict[str, float] = {}
    for d, k in diffs:
        arm = k.rsplit("-", 4)[0]
        by_arm[arm] = max(by_arm.get(arm, 0.0), d)
    print(f"{sys.argv[1]} vs {sys.argv[2]}: {len(common)} cells in both "
          f"({len(a) - len(common)} only in {sys.argv[1]}, {len(b) - len(common)} only in {sys.argv[2]})")
    print(f"largest difference: {diffs[0][0]:.4%} ({diffs[0][1]}); cells above 0.1 %: "
          f"{sum(d > 0.001 for d, _ in diffs)}; median difference {statistics.median(d for d, _ in diffs):.5%}")
    print("largest per arm: " + ", ".join(f"{arm} {d:.4%}" for arm, d in sorted(by_arm.items())))
    for d, k in diffs[:8]:
        print(f"  {d:.4%}  {k}  {a[k]:.0f} vs {b[k]:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
