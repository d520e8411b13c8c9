"""The end-of-run terminal summary: rows/s per op and arm, geometric means.

Reads the same records that go into ``extra_info``; imports no ORM.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

from .contract import MODELS, OPS, OPS_BY_LETTER
from .stats import geomean_by_arm


def fmt(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def render(records: Iterable[Mapping[str, Any]], arm_order: Sequence[str] = ()) -> str:
    """One table per (model, mode, table): ops down, arms across, a geometric mean row."""
    groups: dict[tuple[str, str, str], dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    labels: dict[str, str] = {}
    for rec in records:
        key = (rec["model"], rec["mode"], rec["table"])
        groups[key][rec["arm"]][rec["op"]] = rec["rows_per_s"]
        labels[rec["arm"]] = rec.get("arm_label", rec["arm"])
    out: list[str] = []
    model_order = list(MODELS)
    for (model, mode, table) in sorted(groups, key=lambda k: (model_order.index(k[0]), k[1], k[2])):
        figures = groups[(model, mode, table)]
        arms = [a for a in arm_order if a in figures] + sorted(a for a in figures if a not in arm_order)
        letters = [op.letter for op in OPS if any(op.letter in figures[a] for a in arms)]
        header = ["rows/s", *(labels[a] for a in arms)]
        rows = []
        for letter in letters:
            op = OPS_BY_LETTER[letter]
            rows.append([f"{letter} {op.title}", *(fmt(figures[a].get(letter)) for a in arms)])
        object_ops = [op.letter for op in OPS if op.object_op]
        gm = geomean_by_arm(figures, object_ops)
        most = max((n for _, n in gm.values()), default=0)
        rows.append(["Geometric mean", *(
            (fmt(gm[a][0]) + ("*" if gm[a][1] < most else "")) for a in arms)])
        out.append(f"{MODELS[model].title} — {mode}, {table} table")
        out.extend(_table(header, rows))
        if any(gm[a][1] < most for a in arms):
            out.append(f"* over fewer object operations than the others ({most} at most)")
        out.append("")
    return "\n".join(out)


def render_not_run(entries: Iterable[tuple[str, str, str]]) -> str:
    """Cells that produced no number, grouped by reason: (cell id, outcome, reason)."""
    by_reason: dict[tuple[str, str], list[str]] = defaultdict(list)
    for cell_id, outcome, reason in entries:
        by_reason[(outcome, reason)].append(cell_id)
    lines = []
    for (outcome, reason), ids in sorted(by_reason.items()):
        shown = ", ".join(ids[:4]) + (f" and {len(ids) - 4} more" if len(ids) > 4 else "")
        lines.append(f"{outcome}: {reason} — {len(ids)} cell(s): {shown}")
    return "\n".join(lines)
