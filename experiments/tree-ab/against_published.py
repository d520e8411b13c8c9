"""The A/B's cells against the two published runs of the same cells (Test 1, cold, default table).

    python experiments/tree-ab/against_published.py --old-run DIR --new-run DIR [--ab DIR]

DIR holds default-ARM.json: --old-run the 2026-11-30 run (old tree, old GC discipline), --new-run the
re-run (new tree); --ab the A/B's runs old-1, old-2, new-1, new-2 (default results/2026-12-02-tree-ab). Each figure is rows/s; the A/B's are the geometric means of its two runs per tree. The
last column, published old / today's old tree, is the move of the same code between the two days.
"""
import argparse
import json
import math
import statistics as st
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: where the A/B's runs are (the data stays in results/, the scripts moved to experiments/)
DATA = ROOT / "results" / "2026-12-02-tree-ab"


def rates(path: Path, model: str = "simple", mode: str = "cold") -> dict[tuple[str, str], float]:
    out = {}
    for b in json.loads(path.read_text())["benchmarks"]:
        e = b["extra_info"]
        if e.get("model") == model and e.get("mode") == mode and e.get("rows_per_s"):
            out[(e["arm"], e["op"])] = e["rows_per_s"]
    return out


def gm(xs: list[float]) -> float:
    return math.exp(st.mean(map(math.log, xs)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-run", type=Path, required=True)
    ap.add_argument("--new-run", type=Path, required=True)
    ap.add_argument("--ab", type=Path, default=DATA, help=f"the A/B's runs (default: {DATA.relative_to(ROOT)})")
    a = ap.parse_args()
    ab = {n: rates(a.ab / f"{n}.json") for n in ("old-1", "old-2", "new-1", "new-2")}
    print("| arm | op | published 2026-11-30 (old tree) | today, old tree | today, new tree | re-run 2026-12-02 "
          "(new tree) | published old / today's old |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for arm in ("tortoise", "sqlalchemy", "peewee"):
        pub, rerun = rates(a.old_run / f"default-{arm}.json"), rates(a.new_run / f"default-{arm}.json")
        ratios = []
        for op in "ABCDEFIJK":
            k = (arm, op)
            old, new = gm([ab["old-1"][k], ab["old-2"][k]]), gm([ab["new-1"][k], ab["new-2"][k]])
            ratios.append((pub[k] / old, new / old, rerun[k] / old))
            print(f"| {arm} | {op} | {pub[k]:,.0f} | {old:,.0f} | {new:,.0f} | {rerun[k]:,.0f} | {pub[k] / old:.2f} |")
        print(f"| {arm} | geometric mean, against today's old tree | {gm([r[0] for r in ratios]):.3f} | 1 | "
              f"{gm([r[1] for r in ratios]):.3f} | {gm([r[2] for r in ratios]):.3f} | |")


if __name__ == "__main__":
    main()
