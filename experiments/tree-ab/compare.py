"""The A/B's runs side by side: rows/s per cell in each run, and new/old (geometric means of each tree's runs).

    python experiments/tree-ab/compare.py [DIR]   # DIR: the runs' JSON, default results/2026-12-02-tree-ab
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from against_published import DATA, ROOT, gm, rates  # noqa: E402  (one reader of the files for both scripts)

MODEL, MODE = "simple", "cold"  # what tree_ab.sh ran here (`git show 0096451:results/tree_ab.sh`)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", type=Path, default=DATA,
                    help=f"the runs' JSON, old-N and new-N (default: {DATA.relative_to(ROOT)})")
    folder = ap.parse_args().folder
    sides = {p.stem: rates(p, MODEL, MODE) for p in sorted(folder.glob("*.json"))}
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
