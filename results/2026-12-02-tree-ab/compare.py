"""The A/B's runs side by side: rows/s per cell in each run, and new/old (geometric means of each tree's runs).

    python results/2026-12-02-tree-ab/compare.py results/2026-12-02-tree-ab
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from against_published import gm, rates  # noqa: E402  (one reader of the files for both scripts)

MODEL, MODE = "simple", "cold"  # what tree_ab.sh ran here


def main() -> None:
    sides = {p.stem: rates(p, MODEL, MODE) for p in sorted(Path(sys.argv[1]).glob("*.json"))}
    names = sorted(sides)
    keys = sorted(set.intersection(*(set(v) for v in sides.values())))
    print("| arm | model | op | mode | " + " | ".join(names) + " | new/old |")
    print("| --- | --- | --- | --- | " + " | ".join("---:" for _ in names) + " | ---: |")
    per_arm: dict[str, list[float]] = {}
    for k in keys:
        ratio = (gm([sides[n][k] for n in names if n.startswith("new")])
                 / gm([sides[n][k] for n in names if n.startswith("old")]))
        per_arm.setdefault(k[0], []).append(ratio)
        print(f"| {k[0]} | {MODEL} | {k[1]} | {MODE} | " + " | ".join(f"{sides[n][k]:,.0f}" for n in names)
              + f" | {ratio:.3f} |")
    print()
    for arm, ratios in per_arm.items():
        print(arm, "GM new/old", round(gm(ratios), 3))


if __name__ == "__main__":
    main()
