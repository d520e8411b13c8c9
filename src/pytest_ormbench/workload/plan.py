"""Seeded data and the exact work of every cell, the same for every arm.

Row ``n`` of a model is a pure function of (seed, model, n): a starting state of
N rows is rows 1..N, and an insert on top of N rows writes rows N+1.., so the
states are what the reference suite's A, B and C leave behind.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pytest_ormbench.workload.spec import (EPOCH, LEVELS, MODELS, OPS_BY_LETTER, PAGE_SIZE, WIDE_DEFAULTS,
    WIDE_GIVEN_SETS, ModelSpec, Op)

SEED = 20261130
_MODEL_SALT = {"simple": 1, "fk": 2, "wide": 3}


@dataclass(frozen=True)
class Sizes:
    iterations: int = 100
    batch: int = 10_000

    @property
    def small_passes(self) -> int:
        return max(1, self.iterations // 10)


def _rng(model: ModelSpec, n: int, salt: int = 0) -> random.Random:
    return random.Random(SEED * 1_000_003 + _MODEL_SALT[model.name] * 7919 + n * 31 + salt)


def given_level(model: ModelSpec, n: int) -> int:
    """Row ``n``'s level alone: the first draw of its generator, as in ``given_row``."""
    return _rng(model, n).choice(LEVELS)


def given_row(model: ModelSpec, n: int) -> dict[str, Any]:
    """The values the benchmark writes for row ``n`` (no id; wide sets 3, 4 left out)."""
    rng = _rng(model, n)
    row: dict[str, Any] = {
        "timestamp": EPOCH + dt.timedelta(minutes=n),
        "level": rng.choice(LEVELS),
        "text": f"Journal entry {n} {rng.randrange(10**6):06d}",
    }
    if model.relations:
        row["parent_id"] = rng.randint(1, n - 1) if n > 1 else None
    for f in model.wide_fields:
        set_no = int(f.name.rsplit("_", 1)[1])
        if set_no in WIDE_GIVEN_SETS:
            row[f.name] = _wide_value(f.kind, rng, n)
    return row


def _wide_value(kind: str, rng: random.Random, n: int) -> Any:
    if kind == "float":
        return round(rng.uniform(-1000, 1000), 3)
    if kind == "smallint":
        return rng.randint(-32000, 32000)
    if kind == "int":
        return rng.randint(-(2**31) + 1, 2**31 - 1)
    if kind == "bigint":
        return rng.randint(-(2**62), 2**62)
    if kind == "char":
        return f"char {n} {rng.randrange(10**4)}"
    if kind == "text":
        return f"text {n} " + "x" * rng.randint(0, 40)
    if kind == "decimal":
        return Decimal(rng.randint(-10**7, 10**7)) / 100
    if kind == "json":
        return {"n": n, "tags": [rng.randrange(100), rng.randrange(100)], "ok": True}
    raise ValueError(kind)


#: expected rows already computed, per (model, n): the large table's checks ask for the same
#: 20,100 rows after every round, and deriving each from its seed dominated verification time.
_EXPECTED: dict[tuple[str, int], dict[str, Any]] = {}


def expected_row(model: ModelSpec, n: int) -> dict[str, Any]:
    """What the database holds for row ``n`` after it was written: defaults and NULLs filled in.

    Returns a fresh dict each call (callers edit it for updates).
    """
    key = (model.name, n)
    row = _EXPECTED.get(key)
    if row is None:
        row = {"id": n, **given_row(model, n)}
        for f in model.fields:
            if f.name not in row:
                row[f.name] = WIDE_DEFAULTS[f.kind] if f.has_default else None
        _EXPECTED[key] = row
    return dict(row)


def link_of(model: ModelSpec, n: int) -> tuple[int, int] | None:
    """Row n's one many-to-many link in a starting state (none for row 1)."""
    if not model.relations or n < 2:
        return None
    return (n, _rng(model, n, salt=1).randint(1, n - 1))


# --------------------------------------------------------------------------
# Starting states
# --------------------------------------------------------------------------


def start_count(op: Op, table: str, sizes: Sizes) -> int:
    """Rows present before the op: what A, B, C leave (large table: without the trims)."""
    if op.letter == "A":
        return 0
    if op.letter == "B":
        return 100
    if op.letter == "C":
        return 200 if table == "default" else 100 + sizes.batch
    return 300 if table == "default" else 100 + 2 * sizes.batch


#: the links of a starting state, per (model, row count): asked for after every round, like the rows
_LINKS: dict[tuple[str, int], tuple[tuple[int, int], ...]] = {}


@dataclass
class State:
    model: ModelSpec
    count: int

    @property
    def key(self) -> str:
        return f"{self.model.name}-{self.count}"

    def rows(self) -> list[dict[str, Any]]:
        return [{"id": n, **given_row(self.model, n)} for n in range(1, self.count + 1)]

    def links(self) -> list[tuple[int, int]]:
        """The state's many-to-many links (none for a model without relations), derived once per state."""
        if not self.model.relations:
            return []
        key = (self.model.name, self.count)
        pairs = _LINKS.get(key)
        if pairs is None:
            pairs = _LINKS[key] = tuple(pair for n in range(1, self.count + 1) if (pair := link_of(self.model, n)))
        return list(pairs)

    def expected_rows(self) -> dict[int, dict[str, Any]]:
        return {n: expected_row(self.model, n) for n in range(1, self.count + 1)}


# --------------------------------------------------------------------------
# The work of one cell
# --------------------------------------------------------------------------


@dataclass
class CellPlan:
    """Everything an op is given, and how many rows it is credited with."""

    model: ModelSpec
    op: Op
    table: str
    sizes: Sizes
    state: State
    inputs: dict[str, Any] = field(default_factory=dict)
    rows: int = 0

    @property
    def new_rows(self) -> list[dict[str, Any]]:
        return self.inputs.get("new_rows", [])


def _by_level(state: State) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {lv: [] for lv in LEVELS}
    for n in range(1, state.count + 1):
        out[given_level(state.model, n)].append(n)
    return out


def _new_level(model: ModelSpec, n: int, rng: random.Random) -> int:
    """A level that differs from row n's, so that ORMs which skip unchanged values still write every row."""
    old = given_level(model, n)
    return rng.choice([lv for lv in LEVELS if lv != old])


def make_plan(model_name: str, letter: str, table: str, sizes: Sizes) -> CellPlan:
    model = MODELS[model_name]
    op = OPS_BY_LETTER[letter]
    state = State(model, start_count(op, table, sizes))
    plan = CellPlan(model, op, table, sizes, state)
    rng = random.Random(f"{SEED}-{model.name}-{op.letter}-{table}")
    n0 = state.count
    if op.name in ("insert_single", "insert_batch", "insert_bulk"):
        count = sizes.iterations if op.name == "insert_single" else sizes.batch
        plan.inputs["new_rows"] = [given_row(model, n) for n in range(n0 + 1, n0 + count + 1)]
        plan.rows = count
    elif op.name in ("filter_large", "filter_dicts", "filter_tuples"):
        levels = list(LEVELS) * 10
        plan.inputs["levels"] = levels
        by_level = _by_level(state)
        plan.inputs["expected_ids"] = Counter(i for lv in levels for i in by_level[lv])
        plan.rows = sum(len(by_level[lv]) for lv in levels)
    elif op.name == "filter_small":
        by_level = _by_level(state)
        pages, expected = [], []
        for _ in range(sizes.small_passes):
            for lv in LEVELS:
                ids = by_level[lv]
                if len(ids) < PAGE_SIZE:
                    raise ValueError(f"level {lv} has {len(ids)} rows, fewer than a page")
                offset = rng.randint(0, len(ids) - PAGE_SIZE)
                pages.append((lv, offset))
                expected.extend(ids[offset : offset + PAGE_SIZE])
        plan.inputs.update(pages=pages, limit=PAGE_SIZE, expected_ids=expected)
        plan.rows = len(expected)
    elif op.name == "get":
        ids = [rng.randint(1, n0) for _ in range(2 * sizes.iterations)]
        plan.inputs["ids"] = ids
        plan.rows = len(ids)
    elif op.name == "update_whole":
        plan.inputs["values"] = [
            {"level": _new_level(model, n, rng), "text": f"Updated entry {n} {rng.randrange(10**6):06d}"}
            for n in range(1, n0 + 1)
        ]
        plan.rows = n0
    elif op.name == "update_partial":
        plan.inputs["levels"] = [_new_level(model, n, rng) for n in range(1, n0 + 1)]
        plan.rows = n0
    elif op.name == "delete":
        plan.rows = n0
    else:  # pragma: no cover - OPS is closed
        raise ValueError(op.name)
    return plan


def expected_commits(plan: CellPlan) -> int:
    """Write transactions the op must commit (checked in rollback-journal modes)."""
    name = plan.op.name
    if name == "insert_single":
        return plan.rows
    if name in ("insert_batch", "insert_bulk", "update_whole", "update_partial", "delete"):
        return 1
    return 0
