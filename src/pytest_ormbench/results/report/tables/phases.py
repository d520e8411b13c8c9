"""The account of a run's wall time: seconds per phase, per arm at its place (``workload.phases``)."""

from __future__ import annotations

from typing import Any, Mapping

from pytest_ormbench.results.report.table import Table
from pytest_ormbench.workload.phases import PHASES


def _s(seconds: float) -> str:
    return f"{seconds:,.0f}" if seconds >= 100 else f"{seconds:,.1f}" if seconds >= 0.05 else "0"


def phase_table(account: Mapping[str, Any] | None, title: str = "Where the run's wall time went") -> Table | None:
    """The account as a table: a row per unit (``arm@place``; ``probe``) and the total, a column per phase that
    took any time, the row's wall time and its wall time over its timed work. None without an account."""
    if not account or not account.get("units"):
        return None
    units: Mapping[str, Mapping[str, float]] = account["units"]
    total: Mapping[str, float] = account.get("total") or {}
    phases = [p for p in PHASES if total.get(p, 0.0) >= 0.05 or any(u.get(p, 0.0) >= 0.05 for u in units.values())]
    header = ["Arm", *phases, "wall", "÷ timed"]

    def row(name: str, seconds: Mapping[str, float]) -> list[str]:
        wall = sum(seconds.values())
        timed = seconds.get("timed", 0.0)
        return [name, *(_s(seconds.get(p, 0.0)) for p in phases), _s(wall),
                f"{wall / timed:.1f}×" if timed > 0 else "—"]

    rows = [row(name, seconds) for name, seconds in units.items()]
    rows.append(row("Total", total))
    share = {p: total.get(p, 0.0) / max(sum(total.values()), 1e-9) for p in phases}
    notes = ["Seconds per phase (docs/methodology.md, \"Where a run's time goes\"); share of the total: "
             + ", ".join(f"{p} {share[p]:.0%}" for p in phases if share[p] >= 0.005) + ".",
             "÷ timed: wall time over the timed work it bought (1.0×: nothing but the measurement)."]
    return Table(title, header, rows, notes, anchor="phases")
