"""Each arm's geometric mean as a ratio to peewee's, beside the reference suite's ratios.

The machines differ (the reference: Ryzen 9 5950X, NVMe, Python 3.14), so only ratios within a run
are compared. Usage: python ratios_vs_reference.py FILE.json... > ratios.md
"""

from __future__ import annotations

import sys

from pytest_ormbench.report import tables as T
from pytest_ormbench.report.load import load

#: the reference write-up's geometric means (rows/s), default table:
#: arm -> (T1 cold, T1 warm, T2 cold, T2 warm, T3 cold, T3 warm)
REFERENCE = {
    "objectbox": (63985, 79130, 61832, 76823, 27535, 33852),
    "django": (9887, 10986, 8450, 9101, 5395, 5772),
    "peewee": (19539, 21691, 18323, 20728, 8904, 9407),
    "sqlalchemy": (13955, 17136, 10486, 13072, 9648, 11645),
    "sqlalchemy_async": (2819, 2813, 2719, 2724, 2170, 2171),
    "sqlobject": (8364, 9168, 8133, 9065, 6174, 6744),
    "tortoise": (9203, 9359, 9080, 9324, 6290, 6481),
    "piccolo": (2302, 2324, 2294, 2240, 1509, 1534),
    "ormar": (1783, 1804, 1748, 1722, 976, 1004),
    "sqlmodel": (14372, 17180, 14170, 16834, 9318, 11156),
    "sqlmodel_async": (2751, 2728, 2635, 2752, 2013, 2056),
}
COLUMNS = [("simple", "cold"), ("simple", "warm"), ("fk", "cold"), ("fk", "warm"), ("wide", "cold"), ("wide", "warm")]


def main(paths: list[str]) -> None:
    runs = load(paths)
    names = T.labels(runs)
    gms = {c: T.geomeans(T.figures(runs, c[0], c[1], "default")) for c in COLUMNS}
    print("| arm | " + " | ".join(f"T{['simple', 'fk', 'wide'].index(m) + 1} {md}" for m, md in COLUMNS) + " |")
    print("|---|" + "---:|" * len(COLUMNS))
    for arm in T.arm_order(runs):
        cells = []
        for i, col in enumerate(COLUMNS):
            ours, base = gms[col].get(arm, (None, 0))[0], gms[col].get("peewee", (None, 0))[0]
            ref = REFERENCE.get(arm)
            ours_txt = f"{ours / base:.2f}" if ours and base else "—"
            ref_txt = f"{ref[i] / REFERENCE['peewee'][i]:.2f}" if ref else "—"
            cells.append(f"{ours_txt} ({ref_txt})")
        print(f"| {names[arm]} | " + " | ".join(cells) + " |")
    print()
    print("Each cell: this run's geometric mean / peewee's in the same test and mode (the reference's in "
          "parentheses).")
    print()
    print("| arm | " + " | ".join(f"T{['simple', 'fk', 'wide'].index(m) + 1} {md}" for m, md in COLUMNS) + " |")
    print("|---|" + "---:|" * len(COLUMNS))
    for arm in T.arm_order(runs):
        print(f"| {names[arm]} | " + " | ".join(T.fmt_rate(gms[c].get(arm, (None, 0))[0]) for c in COLUMNS) + " |")
    print()
    print("Geometric means over the object operations, rows/s, this machine.")


if __name__ == "__main__":
    main(sys.argv[1:])
