"""What stops a comparison (runs that cannot be compared) and what may make its verdicts misleading (warnings)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Iterable, Mapping

from pytest_ormbench.workload.cells import DEFAULT_DB, CellKey
from pytest_ormbench.workload.measures import WALL
from pytest_ormbench.results.stats import rounds_needed, smallest_p
from pytest_ormbench.results.report.format import db_title
from pytest_ormbench.results.compare.model import CompareError
from pytest_ormbench.results.compare.thresholds import Thresholds
from pytest_ormbench.results.compare.baseline import Side

#: rounds per side below which the usual 3-against-3 comparison cannot reach p < 0.05
MIN_ROUNDS = 4


def require_timed(side: Side, what: str) -> None:
    """A run made under callgrind has no speeds in it: judging its times would judge valgrind."""
    if side.cells and all(c.record.instrumented for c in side.cells.values()):
        raise CompareError(f"{what} with --ormbench-instructions: its times are not speeds; compare with "
                           "--ormbench-compare-measure=instructions (ormbench compare: --measure instructions)")


def require_instructions(side: Side, label: str, common: list[CellKey]) -> None:
    """Both runs must have counted every common cell's instructions: a cell left out would pass unseen."""
    lacking = [k for k in common if not side.cells[k].record.instructions]
    if not lacking:
        return
    if len(lacking) == len(common):
        raise CompareError(f"the {label} ({side.source}) has no instruction counts: it was not run with "
                           "--ormbench-instructions; run it with --ormbench-instructions to compare by instructions, "
                           "or compare by wall_seconds")
    raise CompareError(f"the {label} ({side.source}) has no instruction counts for {len(lacking)} of the "
                       f"{len(common)} cells in common (e.g. {side.cells[lacking[0]].record.id}): run it with "
                       "--ormbench-instructions")


def matrix_diff(base: Side, new: Side) -> str:
    """The dimensions (arms, models, ...) in which two matrices differ, with both sides' values."""
    parts = []
    for name, axis in (("arms", "arm"), ("models", "model"), ("ops", "op"), ("modes", "mode"), ("tables", "table")):
        b, n = sorted({getattr(k, axis) for k in base.cells}), sorted({getattr(k, axis) for k in new.cells})
        parts.append((b != n, f"{name}: baseline {', '.join(b)}, new {', '.join(n)}"))
    places = [sorted({k.place for k in side.cells}) for side in (base, new)]
    if places != [[DEFAULT_DB], [DEFAULT_DB]]:  # the database axis: named when a side has a server's cells
        parts.append((places[0] != places[1],
                      f"databases: baseline {', '.join(places[0])}, new {', '.join(places[1])}"))
    differing = [text for differs, text in parts if differs]
    return "; ".join(differing or [text for _, text in parts])


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def check_comparable(base: Side, new: Side, common: list[CellKey]) -> None:
    """Same cell, different work: no statistics can make those two numbers comparable."""
    bad = []
    for key in common:
        b, n = base.cells[key].record, new.cells[key].record
        sizes = {"iterations": (b.iterations, n.iterations), "batch": (b.batch, n.batch), "rows": (b.rows, n.rows)}
        diffs = [f"{f} {x} vs {y}" for f, (x, y) in sizes.items() if x != y]
        # an empty settings mapping is what an old file without them reads back as: not a difference
        for f, (x, y) in {"settings": (b.settings or None, n.settings or None),
                          "pragmas": (b.facts.pragmas, n.facts.pragmas)}.items():
            if x is not None and y is not None and _canon(x) != _canon(y):
                diffs.append(f"{db_title(b.key.db)} {f} {_canon(x)} vs {_canon(y)}")
                break
        if diffs:
            bad.append(f"{b.id} ({', '.join(diffs)})")
    if bad:
        more = f"; and {len(bad) - 3} more" if len(bad) > 3 else ""
        settings = "SQLite" if all(k.place == DEFAULT_DB for k in common) else "database"
        raise CompareError(f"not comparable: {len(bad)} cell(s) ran with different sizes or {settings} settings "
                           f"in the two runs: {'; '.join(bad[:3])}{more}")


def _host(machine: Mapping[str, Any]) -> tuple[str, str, str]:
    cpu = machine.get("cpu") or {}
    return (str(machine.get("node") or "?"), str(cpu.get("brand_raw") or machine.get("processor") or "?"),
            str(machine.get("machine") or cpu.get("arch_string_raw") or "?"))


def versions(side: Side, keys: Iterable[CellKey]) -> dict[str, set[str]]:
    """package -> versions, over the given cells, plus Python, SQLite, and a server cell's server and driver."""
    out: dict[str, set[str]] = defaultdict(set)
    for key in keys:
        rec = side.cells[key].record
        for dist, ver in rec.env.versions.items():
            out[dist].add(str(ver))
        python = rec.env.python or side.machine.get("python_version")
        if python:
            out["Python"].add(str(python))
        if rec.env.sqlite_version and rec.key.db == "sqlite":
            out["SQLite"].add(str(rec.env.sqlite_version))
        # a server cell: the server's version and the driver the arm used there
        info = rec.env.arm_info
        if rec.key.db != "sqlite":
            title = db_title(rec.key.db)
            if info.get(f"{rec.key.db}_version"):
                out[title].add(str(info[f"{rec.key.db}_version"]))
            if info.get(f"{rec.key.db}_driver"):
                out[f"{title} driver"].add(str(info[f"{rec.key.db}_driver"]))
    return out


def joined(values: set[str] | None) -> str:
    """Versions as one text: ``1.2/1.3``; ``none`` for none."""
    return "/".join(sorted(values)) if values else "none"


def run_warnings(base: Side, new: Side, common: list[CellKey], thresholds: Thresholds, alpha: float,
                 family: int = 1, measure: str = WALL) -> list[str]:
    """Everything that may make the verdicts misleading, one line each; none of it stops the comparison.

    Instruction counts do not depend on the machine's speed, so the floors, schedules and rounds that
    matter to time say nothing about them."""
    out = [*base.notes, *new.notes]
    if not base.machine or not new.machine:
        which = "baseline" if not base.machine else "new run"
        out.append(f"the {which} records no machine information: cannot check that both ran on the same machine")
    else:
        hb, hn = _host(base.machine), _host(new.machine)
        if hb[1:] != hn[1:]:
            out.append(f"different machines (baseline: {', '.join(hb)}; new: {', '.join(hn)}): part of every "
                       "difference may be the hardware's; compare runs from one machine type")
        elif hb[0] != hn[0]:
            out.append(f"different hosts ({hb[0]}, {hn[0]}) with the same CPU ({hb[1]}, {hb[2]}): hosts of one "
                       "type still differ by a few per cent, so small differences may be the host's")
    vb, vn = versions(base, common), versions(new, common)
    changed = [f"{d} {joined(vb.get(d))} → {joined(vn.get(d))}" for d in sorted(vb.keys() | vn.keys(),
               key=lambda d: (d not in ("Python", "SQLite"), d.lower())) if vb.get(d) != vn.get(d)]
    if changed:
        out.append(f"versions differ: {'; '.join(changed)}: a difference in these cells may come from them")
    timed = measure == WALL
    for label, side in (("baseline", base), ("new run", new)):
        if timed and side.floor is None:
            out.append(f"the {label} ({side.source}) records no drift floor (written before pytest-ormbench "
                       "measured one, or too few probes): taken as 0, so only the p-value and the thresholds "
                       "separate noise from change")
    if timed and base.schedule and new.schedule and base.schedule != new.schedule:
        out.append(f"the runs used different schedules (baseline {base.schedule}, new {new.schedule}): "
                   "drift lands on the arms differently")
    if timed:
        out.extend(_rounds_warnings(base, new, common, alpha, family))
    for pattern in thresholds.unused(c.record for c in [*base.cells.values(), *new.cells.values()]):
        out.append(f"threshold pattern {pattern!r} matches no cell (a typo?)")
    return out


def _rounds_warnings(base: Side, new: Side, common: list[CellKey], alpha: float, family: int = 1) -> list[str]:
    """Cells whose rounds are too few for the test to ever reach the level it needs.

    With Holm over ``family`` cells, the most significant cell must reach alpha / family.
    """
    groups: dict[tuple[int, int], int] = defaultdict(int)
    for key in common:
        groups[(len(base.cells[key].seconds), len(new.cells[key].seconds))] += 1
    need = alpha / max(1, family)
    level = f"alpha {alpha:g}" if family <= 1 else f"alpha {alpha:g} over {family} cells (Holm: {need:.2g} at best)"
    out = []
    for (nb, nn), count in sorted(groups.items()):
        floor_p = smallest_p(nb, nn)
        one_overlap = min(1.0, 2 * floor_p)  # U = 1: one baseline round slower than one new round
        if min(nb, nn) >= MIN_ROUNDS and one_overlap < need:
            continue
        what = (f"so at {level} none of them can ever be flagged" if floor_p >= need else
                "so only rounds that do not overlap at all can be flagged")
        n = rounds_needed(need)
        out.append(f"{count} cell(s) have {nb} round(s) in the baseline and {nn} in the new run: the smallest "
                   f"two-sided p-value Mann–Whitney can give for {nb} against {nn} is {floor_p:.3g}, {what}; "
                   f"use at least {n} rounds per side (--ormbench-rounds={n})")
    return out
