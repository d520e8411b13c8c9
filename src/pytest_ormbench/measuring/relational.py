"""Test 4 inside the measuring process: its starting state, one timed round of a shape, and the checks.

The clock and the collector's discipline are :mod:`.runner`'s; this module says what is prepared before the
clock (the shape's inputs, plain data), what runs inside it (the arm's shape method, which builds the
canonical result), and how the round is verified: reads compared in full with what the seeded data says,
writes read back table by table through the harness's own connection, SELECTs counted (a read answered
from a cache carried over from an earlier round sends fewer than one per repetition).
"""

from __future__ import annotations

import math
import uuid
from pathlib import Path
from typing import Any, Mapping

from pytest_ormbench.workload.statements import wrote
from pytest_ormbench.arms.contract import Arm
from pytest_ormbench.backends import Database, database_for
from pytest_ormbench.workload.relational import (TABLE_ORDER, TABLES, RelationalSizes, ShapePlan, canonical_value,
    data_for, expected_comparable, expected_result, relabel_new)
from pytest_ormbench.workload.spec import RELATIONAL, Settings
from pytest_ormbench.measuring.verify import VerificationError, check_pragmas


def _settings_tag(settings: Settings) -> str:
    tag = f"{settings.journal_mode}-{settings.synchronous}-fk{int(settings.foreign_keys)}"
    return tag + "".join(f"-{k}={v}" for k, v in (*settings.postgresql, *settings.mysql))


def read_tables(arm: Any, database: Database, location: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Every table, read past the arm (an arm on an engine without SQL reads its own: ``read_relational``)."""
    own = getattr(arm, "read_relational", None)
    raw = own() if own is not None else database.read_tables(location, TABLES)
    return {t: [tuple(canonical_value(t, c, v) for c, v in zip(TABLES[t], row)) for row in rows]
            for t, rows in raw.items()}


def check_tables(actual: Mapping[str, list[tuple[Any, ...]]], expected: Mapping[str, list[tuple[Any, ...]]],
                 where: str) -> None:
    """Table by table, the rows must be exactly the expected ones (order aside)."""
    for table in TABLE_ORDER:
        got, want = actual.get(table, []), expected[table]
        if got == want:
            continue
        missing = [r for r in want if r not in set(got)][:3]
        extra = [r for r in got if r not in set(want)][:3]
        raise VerificationError(f"{where}: {table} holds {len(got)} rows, expected {len(want)}; "
                                f"missing {missing}, unexpected {extra}")


def ensure_relational_template(arm_cls: type[Arm], sizes: RelationalSizes, settings: Settings, templates_dir: Path,
                               db: str, drive: Any, expected_durability: Any) -> Path:
    """Test 4's starting state for one arm and database, built once (untimed) and verified table by table."""
    database = database_for(arm_cls, db)
    templates_dir.mkdir(parents=True, exist_ok=True)
    path = database.location(templates_dir, f"{arm_cls.name}-{db}-relational-{sizes.key}-{_settings_tag(settings)}",
                             template=True)
    if database.exists(path):
        return path
    tmp = database.location(templates_dir, f".building-{uuid.uuid4().hex}", template=True)
    database.create_empty(tmp)
    data = data_for(sizes)
    arm = arm_cls(RELATIONAL, settings)
    drive(arm.open(tmp))
    try:
        drive(arm.create_schema())
        own = getattr(arm, "populate_relational", None)
        if own is not None:
            drive(own(data))
        else:
            drive(arm.close())
            database.fill_tables(tmp, {t: (TABLES[t], data.rows[t]) for t in TABLE_ORDER})
            drive(arm.open(tmp))
        expected = {t: sorted((tuple(r) for r in rows), key=repr) for t, rows in data.rows.items()}
        actual = {t: sorted(rows, key=repr) for t, rows in read_tables(arm, database, tmp).items()}
        check_tables(actual, expected, "starting state")
        check_pragmas(drive(arm.pragmas()), expected_durability(arm, database))
    finally:
        drive(arm.close())
    for leftover in database.leftovers(tmp):
        raise RuntimeError(f"{arm_cls.name}: close() left {leftover.name} behind; the template is not self-contained")
    database.finish_template(tmp)
    database.rename(tmp, path)
    return path


def call_args(plan: ShapePlan, strategy: str | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The shape method's arguments, prepared before the clock."""
    args: tuple[Any, ...] = (strategy,) if plan.shape.strategies else ()
    return args, dict(plan.inputs)


def same(expected: Any, actual: Any, where: str = "result") -> None:
    """``actual`` equals ``expected`` in full (floats to 1e-6 relative: MariaDB's AVG of integers is a DECIMAL
    with four places; ints for integral numbers; booleans as such); raises with the first difference's path."""
    if isinstance(expected, float):
        try:
            ok = math.isclose(float(actual), expected, rel_tol=1e-6, abs_tol=1e-9)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise VerificationError(f"{where} is {actual!r}, expected {expected!r}")
        return
    if isinstance(expected, dict):
        if not isinstance(actual, Mapping):
            raise VerificationError(f"{where} is a {type(actual).__name__}, expected a dict")
        if set(actual) != set(expected):
            raise VerificationError(f"{where} has keys {sorted(actual)}, expected {sorted(expected)}")
        for k, v in expected.items():
            same(v, actual[k], f"{where}.{k}")
        return
    if isinstance(expected, list):
        if not isinstance(actual, (list, tuple)):
            raise VerificationError(f"{where} is a {type(actual).__name__}, expected a list")
        if len(actual) != len(expected):
            ids = lambda seq: [x.get("id") if isinstance(x, Mapping) else x for x in seq][:12]  # noqa: E731
            raise VerificationError(f"{where} has {len(actual)} items, expected {len(expected)} "
                                    f"(ids {ids(actual)} against {ids(expected)})")
        for n, (e, a) in enumerate(zip(expected, actual)):
            same(e, a, f"{where}[{n}]")
        return
    if isinstance(expected, bool) or isinstance(actual, bool):
        if bool(actual) != expected or not isinstance(actual, (bool, int)):
            raise VerificationError(f"{where} is {actual!r}, expected {expected!r}")
        return
    if isinstance(expected, int) and not isinstance(actual, int):
        try:
            if int(actual) == expected and float(actual) == expected:
                return
        except (TypeError, ValueError):
            pass
    if actual != expected:
        raise VerificationError(f"{where} is {actual!r}, expected {expected!r}")


def verify_round(arm: Any, plan: ShapePlan, result: Any, database: Database, location: Any,
                 commits: int | None) -> dict[str, Any]:
    """The checks of one round; returns the facts recorded with it."""
    facts: dict[str, Any] = {"repetitions": plan.repetitions}
    if plan.shape.kind == "read":
        same(expected_result(plan), result, plan.shape.name)
        if commits:
            raise VerificationError(f"{plan.shape.name}: a read committed {commits} write transactions")
        facts["rows_checked"] = _count_rows(result)
        return facts
    if result is not None:
        raise VerificationError(f"{plan.shape.name}: a write returned {type(result).__name__}, expected None")
    actual = relabel_new(read_tables(arm, database, location), plan.sizes)
    check_tables(actual, expected_comparable(plan), plan.shape.name)
    if commits is not None and commits != 1:
        raise VerificationError(f"{plan.shape.name}: {commits} write transactions committed, expected 1")
    return facts


def _count_rows(result: Any) -> int:
    if isinstance(result, list):
        return sum(_count_rows(x) for x in result) if result and isinstance(result[0], (list, dict)) else len(result)
    if isinstance(result, dict):
        return 1 + sum(_count_rows(v) for v in result.values() if isinstance(v, list))
    return 1


def check_selects(plan: ShapePlan, counts: Mapping[str, int]) -> None:
    """Every round reached the database: a read sent at least one SELECT per repetition; a write wrote."""
    name = plan.shape.name
    total = sum(counts.values())
    if total == 0:
        raise VerificationError(f"{name}: no statement reached the database while the op ran")
    if plan.shape.kind == "read" and counts.get("SELECT", 0) < plan.min_selects:
        raise VerificationError(f"{name}: {counts.get('SELECT', 0)} SELECT statements for {plan.repetitions} "
                                f"repetitions: some reads were answered from a cache, not the database")
    writes = wrote(counts)
    if plan.shape.read_only and writes:
        # a read's rounds run without a refill in between on a server (Database.refresh_unchanged): one that writes
        # would leave the next round other data
        raise VerificationError(f"{name}: a read wrote ({writes})")
    if plan.shape.kind == "write" and not writes:
        raise VerificationError(f"{name}: no INSERT, UPDATE or DELETE reached the database")
