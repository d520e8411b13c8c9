"""A matrix split across machines: which cells shard K of N runs (``--ormbench-shard=K/N``).

The split is deterministic (the same cells, options and durations give the same shards on every machine) and
balanced: the cells go, longest first, each to the shard with the least work so far (the longest-processing-
time rule), their lengths read from an earlier run's JSON (``--ormbench-shard-durations``: each cell's length
by the run's phase account, as the plan's estimate reads it, else its round times) or, without one, estimated from the cell's kind. The control arms' cells are in
every shard, so that each shard carries its own machine's yardstick; the report merges the shards
(``ormbench report``: machines kept apart, or normalised by each shard's control on request).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.scheduling.estimate import estimated_seconds, read_run  # noqa: F401  (estimated_seconds: shards' API)
from pytest_ormbench.workload.cells import CellKey


class ShardError(ValueError):
    """A shard option that cannot be used (its message is one line for the user)."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based, as ``--ormbench-shard=2/3`` and CI matrices count)."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        k, sep, n = text.strip().partition("/")
        try:
            shard = cls(int(k), int(n))
        except ValueError:
            raise ShardError(f"--ormbench-shard: {text!r} is not K/N (e.g. 2/3)") from None
        if not sep or shard.count < 1 or not 1 <= shard.index <= shard.count:
            raise ShardError(f"--ormbench-shard: {text!r} is not K/N with 1 <= K <= N (e.g. 2/3)")
        return shard

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def recorded_durations(path: Path) -> dict[str, float]:
    """Cell id -> the seconds it took in an earlier run: its length by the run's phase account
    (``estimate.read_run``: its processes' phases and its shares of its arm's and the run's other time), and in
    a file from before the account its rounds' wall times. Unreadable input is a :class:`ShardError`."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        benchmarks = data["benchmarks"]
        # a timed run's cells, or an instructions run's: a file holds one kind
        recorded = {cell: rec.seconds(rec.rounds) for counted in (False, True)
                    for cell, rec in read_run(data, counted).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ShardError(f"--ormbench-shard-durations: cannot read {path}: {exc}") from None
    out: dict[str, float] = {}
    for bench in benchmarks:
        info = bench.get("extra_info") or {}
        try:
            key = CellKey.from_info(info)
        except ValueError:
            continue
        seconds = recorded.get(key.id) or sum(float(x) for x in (info.get("measures") or {}).get("wall_seconds") or [])
        if seconds > 0:
            out[key.id] = seconds
    if not out:
        raise ShardError(f"--ormbench-shard-durations: {path} holds no pytest-ormbench cell with a duration")
    return out


def partition(keys: Iterable[CellKey], count: int, rounds: int = 1,
              durations: Mapping[str, float] | None = None) -> list[list[CellKey]]:
    """The cells of each of ``count`` shards (shard K is ``[K - 1]``): control arms' cells in every shard, the
    others each in one, balanced by their durations (recorded, else estimated), longest first; ties by id."""
    keys = list(dict.fromkeys(keys))
    controls = [k for k in keys if k.arm in CONTROL_ARMS]
    others = [k for k in keys if k.arm not in CONTROL_ARMS]
    known = durations or {}
    fallback = _scale(known, others, rounds)

    def length(k: CellKey) -> float:
        return known[k.id] if k.id in known else estimated_seconds(k, rounds) * fallback

    shards: list[list[CellKey]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for k in sorted(others, key=lambda k: (-length(k), k.id)):
        i = min(range(count), key=lambda j: (loads[j], j))
        shards[i].append(k)
        loads[i] += length(k)
    order = {k: n for n, k in enumerate(keys)}
    return [sorted(controls + s, key=order.__getitem__) for s in shards]


def _scale(known: Mapping[str, float], keys: list[CellKey], rounds: int) -> float:
    """Seconds per estimated unit, from the cells that have a recorded duration (1.0 without any), so that an
    estimated cell weighs like its recorded neighbours."""
    pairs = [(known[k.id], estimated_seconds(k, rounds)) for k in keys if k.id in known]
    if not pairs:
        return 1.0
    return sum(a for a, _ in pairs) / sum(b for _, b in pairs)


def shard_cells(keys: Iterable[CellKey], shard: Shard, rounds: int = 1,
                durations: Mapping[str, float] | None = None) -> set[CellKey]:
    """The cells shard ``shard`` runs."""
    return set(partition(keys, shard.count, rounds, durations)[shard.index - 1])
