"""The Tortoise ORM arm: its
Test 2 relations, the pragmas it undoes, and re-opening on another path after close()."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("tortoise")
pytest.importorskip("aiosqlite")

from pytest_ormbench.contract import MODELS, Settings  # noqa: E402
from pytest_ormbench.runner import drive  # noqa: E402
from pytest_ormbench.sqlite_support import expected_pragmas  # noqa: E402



def _rows(n: int) -> list[dict]:
    t = dt.datetime(2026, 1, 1)
    return [{"id": i, "timestamp": t, "level": 10, "text": f"r{i}", "parent_id": 1 if i > 1 else None}
            for i in range(1, n + 1)]


def test_relations_are_real_and_directed(tmp_path: Path) -> None:
    from bench_suites.tortoise_arm import TortoiseArm

    arm = TortoiseArm(MODELS["fk"], Settings())
    drive(arm.open(tmp_path / "fk.db"))
    try:
        drive(arm.create_schema())
        drive(arm.populate(_rows(4), [(2, 1), (3, 1), (3, 2)]))
        J = arm.cls

        async def check() -> None:
            root, three = await J.get(id=1), await J.get(id=3)
            assert sorted(c.id for c in await root.children.all()) == [2, 3, 4]
            assert (await (await J.get(id=2)).parent).id == 1
            # directed many-to-many: 3 -> {1, 2}, and 1 <- {2, 3}
            assert sorted(x.id for x in await three.links.all()) == [1, 2]
            assert sorted(x.id for x in await root.linked_from.all()) == [2, 3]
            assert await root.links.all() == []
            # the ORM's own add() writes (from_id, to_id) as insert_links does
            await (await J.get(id=4)).links.add(three)

        drive(check())
        assert arm.snapshot().links == {(2, 1), (3, 1), (3, 2), (4, 3)}
        drive(arm.delete(drive(arm.load_all())[:1]))  # ON DELETE SET NULL on children, CASCADE on links
        snap = arm.snapshot()
        assert all(snap.rows[i]["parent_id"] is None for i in (2, 3, 4))
        assert snap.links == {(3, 2), (4, 3)}
    finally:
        drive(arm.close())
    with sqlite3.connect(tmp_path / "fk.db") as conn:
        indexed = {(r[0], r[1]) for r in conn.execute(
            "SELECT m.tbl_name, i.name FROM sqlite_master m, pragma_index_info(m.name) i WHERE m.type = 'index'")}
    assert {("journal_fk", "parent_id"), ("journal_fk_links", "from_id"), ("journal_fk_links", "to_id")} <= indexed


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_pragmas_read_back_and_reopen(tmp_path: Path, journal: str) -> None:
    """Tortoise's own defaults (WAL, journal_size_limit) are undone; open() works again after close()."""
    from bench_suites.tortoise_arm import TortoiseArm

    settings = Settings(journal_mode=journal, synchronous="normal")
    for name in ("one", "two"):
        arm = TortoiseArm(MODELS["simple"], settings)
        drive(arm.open(tmp_path / f"{name}.db"))
        try:
            assert drive(arm.pragmas()) == expected_pragmas(settings)
            drive(arm.create_schema())
            drive(arm.insert_batch(arm.build([{"timestamp": dt.datetime(2026, 1, 1), "level": 10, "text": "x"}])))
            assert drive(arm.client.execute_query("PRAGMA journal_size_limit"))[1][0][0] == -1
        finally:
            drive(arm.close())
        assert set(arm.snapshot().rows) == {1}
