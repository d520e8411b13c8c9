"""How long a run will take, before it starts: the plan line's estimate, read from earlier runs' phase accounts.

A cell's recorded length is what its measuring processes took (its record's ``phases``), plus its share of what
its unit spent beside them (starting processes, building starting states, counting statements: the unit's
account less its cells' phases, split evenly over its cells), plus its share of the run's own time (the drift
probe, the parent's bookkeeping). The rounds' phases scale with the rounds asked for; the shares do not. A cell
no earlier run recorded is estimated from its kind (``shards.estimated_seconds``), scaled by its recorded
neighbours. The timed part of the estimate is the recorded cells' timed seconds (scaled the same way), so the
plan line says the wall-over-timed ratio the run is heading for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from pytest_ormbench.workload.cells import CellKey, RecordError

#: the phases a cell's record carries that recur in every round (the rest are once per cell)
ROUND_PHASES = ("timed", "prepare", "verify", "restore", "warmup", "copy", "open")


@dataclass(frozen=True)
class Recorded:
    """One cell as an earlier run recorded it."""

    #: the seconds its rounds' phases took (they scale with the rounds)
    per_rounds: float
    #: the seconds it took once per cell (its other phases, its unit's and the run's shares)
    once: float
    #: the seconds of its timed regions
    timed: float
    rounds: int
    #: when that run was saved (pytest-benchmark's ``datetime``): the newest record of a cell wins
    when: str

    def seconds(self, rounds: int) -> float:
        return self.per_rounds * rounds / max(1, self.rounds) + self.once

    def timed_seconds(self, rounds: int) -> float:
        return self.timed * rounds / max(1, self.rounds)


def estimated_seconds(key: CellKey, rounds: int) -> float:
    """A cell's length without a recorded one: a cold round starts a process (about four warm rounds' worth),
    the large table's rounds are long."""
    per_round = 4.0 if key.mode == "cold" else 1.0
    if key.table == "large":
        per_round *= 5.0
    if key.rtt_ms:
        per_round *= 1.0 + key.rtt_ms / 5.0
    return per_round * max(1, rounds)


def read_run(data: Mapping[str, Any], instructions: bool = False) -> dict[str, Recorded]:
    """Cell id -> its record, from one run's JSON: its timed cells, or its cells counted under callgrind with
    ``instructions`` (the one kind's length says nothing of the other's); cells without a phase account are
    left out."""
    when = str(data.get("datetime") or "")
    cells: dict[str, tuple[CellKey, dict[str, float], int]] = {}
    for bench in data.get("benchmarks") or []:
        info = bench.get("extra_info") if isinstance(bench, dict) else None
        if not isinstance(info, dict) or not info.get("phases") or bool(info.get("instrumented")) != instructions:
            continue
        try:
            key = CellKey.from_info(info)
            phases = {str(p): float(s) for p, s in info["phases"].items()}
            rounds = int(info.get("rounds") or 1)
        except (RecordError, TypeError, ValueError, AttributeError):
            continue
        cells[key.id] = (key, phases, rounds)
    if not cells:
        return {}
    account = ((data.get("ormbench") or {}).get("phases") or {}) if isinstance(data.get("ormbench"), dict) else {}
    units = account.get("units") or {}
    inside: dict[str, float] = {}
    members: dict[str, int] = {}
    for key, phases, _ in cells.values():
        unit = key.unit
        inside[unit] = inside.get(unit, 0.0) + sum(phases.values())
        members[unit] = members.get(unit, 0) + 1
    unit_extra = {u: max(0.0, sum(float(s) for s in (units.get(u) or {}).values()) - inside[u]) for u in inside}
    accounted = sum(sum(float(s) for s in p.values()) for u, p in units.items() if u in inside) or sum(inside.values())
    run_extra = max(0.0, float(account.get("run_seconds") or 0.0) - accounted)
    out: dict[str, Recorded] = {}
    for cell_id, (key, phases, rounds) in cells.items():
        unit = key.unit
        per_rounds = sum(s for p, s in phases.items() if p in ROUND_PHASES)
        once = (sum(phases.values()) - per_rounds + unit_extra[unit] / members[unit] + run_extra / len(cells))
        out[cell_id] = Recorded(per_rounds, once, phases.get("timed", 0.0), rounds, when)
    return out


#: a folder stands for at most this many of its newest JSON files (a storage folder grows with every run)
FOLDER_FILES = 60


def json_files(paths: Iterable[Path]) -> list[Path]:
    """The JSON files named, a folder standing for the newest ``*.json`` under it (pytest-benchmark's storage
    nests them in a folder per machine)."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = [(f.stat().st_mtime, str(f), f) for f in path.rglob("*.json") if f.is_file()]
            out.extend(f for _, _, f in sorted(found, reverse=True)[:FOLDER_FILES])
        elif path.is_file():
            out.append(path)
    return out


def read_runs(paths: Iterable[Path], instructions: bool = False) -> tuple[dict[str, Recorded], int]:
    """Cell id -> its newest record over the runs at ``paths``, and how many files held any; unreadable files
    and files that are not runs are passed over (an estimate is a guide, not an input)."""
    newest: dict[str, Recorded] = {}
    used = 0
    for path in json_files(paths):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        cells = read_run(data, instructions)
        used += bool(cells)
        for cell_id, rec in cells.items():
            if cell_id not in newest or rec.when >= newest[cell_id].when:
                newest[cell_id] = rec
    return newest, used


@dataclass(frozen=True)
class Estimate:
    seconds: float
    timed: float
    #: cells of the plan an earlier run recorded, of ``cells``
    recorded: int
    cells: int
    files: int

    def describe(self) -> str:
        from pytest_ormbench.scheduling.progress import duration

        ratio = f", {self.seconds / self.timed:.1f}x" if self.timed > 0 else ""
        guessed = self.cells - self.recorded
        rest = f"; {guessed} more estimated from their kind" if guessed else ""
        return (f"estimated {duration(self.seconds)} of wall time, {duration(self.timed)} of it timed rounds"
                f"{ratio} (the phase accounts of {self.recorded} of its {self.cells} cells in {self.files} "
                f"earlier run(s){rest})")


    def against(self, account: Mapping[str, Any]) -> str:
        """The plan's estimate beside what the run took (its phase account), for the terminal summary."""
        from pytest_ormbench.scheduling.progress import duration

        wall = float(account.get("run_seconds") or 0.0)
        timed = float((account.get("total") or {}).get("timed") or 0.0)
        off = f" ({wall / self.seconds - 1:+.0%})" if self.seconds > 0 and wall > 0 else ""
        return (f"the plan estimated {duration(self.seconds)} of wall time and {duration(self.timed)} timed; "
                f"the run took {duration(wall)}{off}, {duration(timed)} timed")


def estimate(planned: Iterable[CellKey], rounds: int, records: Mapping[str, Recorded],
             files: int = 0) -> Estimate | None:
    """The run's wall and timed seconds from the records (None: no planned cell was recorded)."""
    keys = list(dict.fromkeys(planned))
    known = [k for k in keys if k.id in records]
    if not known:
        return None
    wall = sum(records[k.id].seconds(rounds) for k in known)
    timed = sum(records[k.id].timed_seconds(rounds) for k in known)
    per_unit = wall / sum(estimated_seconds(k, rounds) for k in known)
    timed_share = timed / wall if wall else 0.0
    guessed = sum(estimated_seconds(k, rounds) * per_unit for k in keys if k.id not in records)
    return Estimate(wall + guessed, timed + guessed * timed_share, len(known), len(keys), files)
