"""Merging a matrix's shards (``--ormbench-shard=K/N`` runs) in ``ormbench report``, and what machines the files
came from.

Statements and instruction counts merge as they are (they do not depend on the machine). Wall times do: shards
from one machine merge as they are; shards from several machines are refused, unless the user asks for their
figures to be normalised by each shard's own control arms (``--shards=normalise``): every figure of a shard is
then multiplied by the ratio of the reference shard's control figures to its own (per database, model, mode and
table, the geometric mean over the control arms' operations), and every table that shows them says so. Files
that are not shards but come from several machines are reported with one line that says they do.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import replace
from typing import Any, Iterable, Mapping

from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.results.report.format import machine_text
from pytest_ormbench.workload.measures import WALL

#: how ``ormbench report`` treats shards from several machines
SHARD_MODES = ("refuse", "normalise")
NORMALISED = "wall times normalised by each shard's own control arms"


class ShardMixError(ValueError):
    """Shards from several machines with no way asked for to compare them (a one-line message)."""


def shard_of(facts: Mapping[str, Any] | None) -> tuple[int, int] | None:
    shard = (facts or {}).get("shard")
    if isinstance(shard, Mapping) and isinstance(shard.get("index"), int) and isinstance(shard.get("count"), int):
        return shard["index"], shard["count"]
    return None


def machine_name(info: Mapping[str, Any]) -> str:
    """A machine as the report names it: its host name (two CI runners of one type are two machines) and what
    ``machine_text`` says of it."""
    node = info.get("node")
    return f"{node} ({machine_text(dict(info))})" if node else machine_text(dict(info))


def machines(files: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Machine (as the report names it) -> the files from it, in order."""
    out: dict[str, list[str]] = defaultdict(list)
    for source, machine in files.items():
        out[machine_name(machine)].append(source)
    return dict(out)


def check_machines(machine_of: Mapping[str, Mapping[str, Any]], facts: Mapping[str, Mapping[str, Any]],
                   mode: str) -> tuple[bool, list[str]]:
    """Whether the shards must be normalised, and the notes to show; raises :class:`ShardMixError` for shards
    from several machines without ``mode == "normalise"``."""
    shards = {s: shard_of(facts.get(s)) for s in machine_of}
    sharded = {s: machine_of[s] for s, sh in shards.items() if sh is not None}
    notes: list[str] = []
    by_machine = machines(machine_of)
    if sharded:
        shard_machines = machines(sharded)
        labels = "; ".join(f"{m}: shard{'s' if len(srcs) > 1 else ''} "
                           + ", ".join(f"{shards[s][0]}/{shards[s][1]}" for s in srcs)  # type: ignore[index]
                           for m, srcs in shard_machines.items())
        counts = {sh[1] for sh in shards.values() if sh is not None}
        seen = sorted(sh[0] for sh in shards.values() if sh is not None)
        if len(counts) == 1:
            n = counts.pop()
            missing = sorted(set(range(1, n + 1)) - set(seen))
            if missing:
                notes.append(f"Shards: {len(seen)} of {n} present; missing {', '.join(map(str, missing))}: the "
                             "matrix is incomplete")
        if len(shard_machines) > 1:
            if mode != "normalise":
                raise ShardMixError(f"shards ran on {len(shard_machines)} machines ({labels}): their wall times "
                                    "cannot share a table; report each machine's shards apart, or pass "
                                    "--shards=normalise to scale each shard by its own control arms")
            notes.append(f"Shards on {len(shard_machines)} machines ({labels}): {NORMALISED} (the reference: the "
                         "lowest shard's machine); statements and instruction counts as measured")
            return True, notes
        notes.append(f"Shards: {labels}")
    if len(by_machine) > 1 and len(machines(sharded)) <= 1:
        notes.append(f"These files come from {len(by_machine)} machines ({'; '.join(by_machine)}): wall times of "
                     "different machines are not comparable")
    return False, notes


def _group(key: Any) -> tuple[Any, ...]:
    return key.db, key.model, key.mode, key.table, key.rtt_ms


def _rate(cell: Any) -> float | None:
    return cell.rows_per_s


def normalise(cells_by_source: Mapping[str, list[Any]], order: Iterable[str],
              facts: Mapping[str, Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Each shard's cells scaled to the reference shard's machine (the lowest index): a cell's round times are
    divided by its shard's factor for its group, the geometric mean of (reference control rows/s / the shard's
    control rows/s) over the control arms' cells of that group both shards ran. The reference shard's cells,
    and every shard's control cells' own figures, are left as measured; a group with no common control cell
    cannot be normalised and its cells are dropped with a note (returned under the key "")."""
    sources = sorted(order, key=lambda s: (shard_of(facts.get(s)) or (0, 0))[0])
    ref = sources[0]
    ref_controls = {c.key: _rate(c) for c in cells_by_source[ref] if c.key.arm in CONTROL_ARMS}
    out: dict[str, list[Any]] = {ref: list(cells_by_source[ref])}
    dropped: list[str] = []
    for source in sources[1:]:
        ratios: dict[tuple[Any, ...], list[float]] = defaultdict(list)
        for c in cells_by_source[source]:
            if c.key.arm in CONTROL_ARMS and (mine := _rate(c)) and (theirs := ref_controls.get(c.key)):
                ratios[_group(c.key)].append(theirs / mine)
        factors = {g: math.exp(sum(map(math.log, r)) / len(r)) for g, r in ratios.items() if r}
        kept = []
        for c in cells_by_source[source]:
            if c.key.arm in CONTROL_ARMS:
                continue  # the reference shard's control cells are the tables' yardstick
            f = factors.get(_group(c.key))
            if f is None:
                dropped.append(c.key.id)
                continue
            rec = c.record
            measures = dict(rec.measures)
            measures[WALL] = [s / f for s in rec.measures.get(WALL, [])]
            note = {"shard normalised": f"{NORMALISED}: ×{f:.3f} (shard {source})"}
            kept.append(replace(c, record=replace(rec, measures=measures, deviations={**rec.deviations, **note})))
        out[source] = kept
    if dropped:
        out[""] = [f"{len(dropped)} cell(s) left out: their shard has no control cell in common with the reference "
                   f"shard to normalise by ({', '.join(dropped[:3])}{' …' if len(dropped) > 3 else ''})"]
    return out
