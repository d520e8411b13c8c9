"""Figures and names as every table writes them, the report's and the comparison's alike.

Only formatting: a value in, its text out. No table is built here.
"""

from __future__ import annotations

import math
from typing import Any

#: the dash's meaning, under any table that has one
NO_FIGURE = "— : no verified figure (not supported by the arm, or not run; see footnotes)."
#: statement kinds (``workload.statements.KINDS``) as the statements table writes them, in a transaction's order
KIND_LETTERS = {"BEGIN": "B", "SELECT": "S", "INSERT": "I", "UPDATE": "U", "DELETE": "D", "COMMIT": "C", "other": "o"}
#: the databases as section headings and notes name them, in the report's order
DB_TITLES = {"sqlite": "SQLite", "postgresql": "PostgreSQL", "mysql": "MariaDB"}
_DB_ORDER = {db: i for i, db in enumerate(DB_TITLES)}


def fmt_rate(value: float | None) -> str:
    """A rows/s figure (or any figure of that size): ``12,345``, ``95.3``; ``—`` for none."""
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def fmt_count(value: float | None) -> str:
    """A large count in three significant figures: 950, 12.3 k, 1.05 M (instructions per row)."""
    if value is None:
        return "—"
    for scale, unit in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if value >= scale * 0.9995:
            break
    else:
        return f"{value:.0f}" if value >= 100 else f"{value:.3g}"
    scaled = value / scale
    text = f"{scaled:.2f}" if scaled < 9.995 else f"{scaled:.1f}" if scaled < 99.95 else f"{scaled:.0f}"
    return text + unit


def fmt_statements(counts: dict[str, int]) -> str:
    """Total statements, by kind when there is more than one: "1 S", "102 (1B 100I 1C)"."""
    present = [(KIND_LETTERS[k], counts[k]) for k in KIND_LETTERS if counts.get(k)]
    total = sum(counts.values())
    if len(present) == 1:
        return f"{total:,} {present[0][0]}"
    return f"{total:,}" + (f" ({' '.join(f'{n:,}{letter}' for letter, n in present)})" if present else "")


def fmt_ratio(value: float | None) -> str:
    return "—" if value is None else f"×{value:.2f}"


def fmt_pct(fraction: float | None, signed: bool = False) -> str:
    """A fraction as a percentage: ``10%``, ``0.2%``; ``signed``: ``+4.0%``, ``−∞`` for an infinite change."""
    if fraction is None:
        return "—"
    if math.isinf(fraction):
        return "+∞" if fraction > 0 else "−∞"
    return f"{fraction * 100:+.1f}%" if signed else f"{fraction * 100:.3g}%"


def fmt_spread(fraction: float | None) -> str:
    """The ± beside a figure: ``±3%``, ``±0.4%``; "" for none (one round)."""
    if fraction is None:
        return ""
    pct = fraction * 100
    return f"±{pct:.1f}%" if pct < 0.95 else f"±{pct:.0f}%"


def md_cell(text: object) -> str:
    """Text safe inside a Markdown table's cell."""
    return str(text).replace("|", "\\|")


def db_title(db: str) -> str:
    return DB_TITLES.get(db, db)


def db_rank(db: str) -> int:
    """A database's place in the report's order (SQLite, PostgreSQL, MariaDB, then any other)."""
    return _DB_ORDER.get(db, len(_DB_ORDER))


def machine_text(info: dict[str, Any]) -> str:
    """pytest-benchmark's ``machine_info`` in one line: CPU, cores, system."""
    cpu = info.get("cpu") or {}
    brand = cpu.get("brand_raw") or info.get("processor") or info.get("machine") or "unknown CPU"
    count = cpu.get("count")
    system = " ".join(str(x) for x in (info.get("system"), info.get("release")) if x)
    return f"{brand}{f', {count} cores' if count else ''}{f', {system}' if system else ''}"
