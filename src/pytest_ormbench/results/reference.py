"""Each arm's geometric mean as a ratio to peewee's, beside the reference suite's ratios.

The machines differ (the reference: Ryzen 9 5950X, NVMe, Python 3.14), so only ratios within a run
are compared; where this run's own files come from several machines, each ratio goes through the control arm
timed beside each arm (peewee's ORM overhead over the arm's). One section per table size present in the
input (default, then large). Written by ``ormbench publish`` as ``ratios-vs-reference.md`` beside the
report; reads JSON only.
"""

from __future__ import annotations

from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.results.report import tables as T
from pytest_ormbench.results.report.load import Runs

#: the reference write-up's geometric means (rows/s) per table size:
#: arm -> (T1 cold, T1 warm, T2 cold, T2 warm, T3 cold, T3 warm)
REFERENCE = {
    "default": {
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
    },
    "large": {
        "objectbox": (98011, 108306, 90446, 102911, 37444, 40854),
        "django": (14215, 14610, 11044, 11444, 6770, 6826),
        "peewee": (26396, 27487, 24323, 25777, 10556, 10698),
        "sqlalchemy": (30336, 31570, 14433, 15863, 16556, 17525),
        "sqlalchemy_async": (8211, 8311, 5861, 5917, 5468, 5641),
        "sqlobject": (19346, 19650, 17513, 17894, 12799, 13217),
        "tortoise": (18188, 19637, 12974, 13627, 12289, 11396),
        "piccolo": (5802, 5795, 4565, 4581, 3249, 3272),
        "ormar": (3802, 3845, 3366, 3439, 1809, 1842),
        "sqlmodel": (29435, 30833, 28911, 30608, 15634, 16378),
        "sqlmodel_async": (7807, 8006, 7745, 7761, 5364, 5540),
    },
}
COLUMNS = [("simple", "cold"), ("simple", "warm"), ("fk", "cold"), ("fk", "warm"), ("wide", "cold"), ("wide", "warm")]
TITLES = {"default": "Default table (~300 rows for D–K)", "large": "Large table (~20,100 rows for D–K)"}


def _header() -> str:
    return ("| arm | " + " | ".join(f"T{['simple', 'fk', 'wide'].index(m) + 1} {md}" for m, md in COLUMNS) + " |\n"
            + "|---|" + "---:|" * len(COLUMNS))


def _section(runs: Runs, table: str) -> list[str]:
    names = T.labels(runs)
    ref_all = REFERENCE[table]
    gms = {c: T.geomeans(T.figures(runs, c[0], c[1], table)) for c in COLUMNS}
    arms = [a for a in T.arm_order(runs) if any(a in gms[c] for c in COLUMNS)]
    # files from several machines: rows/s of two machines do not divide; each arm's time over the control timed
    # beside it does (peewee's overhead over the arm's is the ratio of their rows/s on one machine)
    sources = {c.source for k, c in T.shown_cells(runs) if k.table == table and c.timed}
    through = T.whole(runs).across_machines(sources)

    def ratio(arm: str, col: tuple[str, str]) -> float | None:
        if not through:
            ours, base = gms[col].get(arm, (None, 0))[0], gms[col].get("peewee", (None, 0))[0]
            return ours / base if ours and base else None
        group = (*col, table)
        mine = 1.0 if arm in CONTROL_ARMS else T.arm_overhead(runs, arm, group)[0]
        base = T.arm_overhead(runs, "peewee", group)[0]
        return base / mine if mine and base else None

    out = [f"## {TITLES[table]}\n", _header()]  # one line each, as print() wrote them
    for arm in arms:
        cells = []
        for i, col in enumerate(COLUMNS):
            ref = ref_all.get(arm)
            ours = ratio(arm, col)
            ours_txt = f"{ours:.2f}" if ours else "—"
            ref_txt = f"{ref[i] / ref_all['peewee'][i]:.2f}" if ref else "—"
            cells.append(f"{ours_txt} ({ref_txt})")
        out.append(f"| {names[arm]} | " + " | ".join(cells) + " |")
    out += ["", "Each cell: this run's geometric mean / peewee's in the same test and mode (the reference's in "
                "parentheses; — where peewee or the arm has not run)."]
    if through:
        out += ["", "These arms ran on more than one machine (the report's Runs table), whose rows/s do not divide: "
                    "each ratio here is peewee's ORM overhead over the arm's (each against the raw sqlite3 control "
                    "timed beside it, on its own machine), which removes the machines' overall speed. The rows/s "
                    "below are each arm's own machine's."]
    out += ["", _header()]
    for arm in arms:
        out.append(f"| {names[arm]} | " + " | ".join(T.fmt_rate(gms[c].get(arm, (None, 0))[0]) for c in COLUMNS)
                   + " |")
    out += ["", "Geometric means over the object operations, rows/s, "
                + ("each on its arm's machine." if through else "this machine."), ""]
    return out


def ratios_markdown(runs: Runs) -> str:
    """The whole ratios-vs-reference.md for these runs (their SQLite cells: the reference ran SQLite only)."""
    runs = runs.at("sqlite")
    present = {t for (_m, _md, t) in T.groups(runs)}
    out = ["# Geometric means as ratios to peewee's, beside the reference's\n",
           "Generated by `ormbench publish` (its finalize step, `ormbench publish --finalize-only`).\n"]
    for table in ("default", "large"):
        if table in present:
            out += _section(runs, table)
    return "".join(line + "\n" for line in out)


__all__ = ["REFERENCE", "ratios_markdown"]
