"""The ormar arm's Test 2 relations are real and directed (the whole matrix is verified by the smoke
run and tests/test_arms.py)."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("ormar")
pytest.importorskip("aiosqlite")

from bench_suites.ormar_arm import OrmarArm  # noqa: E402
from pytest_ormbench.contract import MODELS, Settings  # noqa: E402



def test_relations_are_real_and_directed(tmp_path: Path) -> None:
    async def scenario() -> None:
        arm = OrmarArm(MODELS["fk"], Settings(journal_mode="wal"))
        await arm.open(tmp_path / "fk.db")
        try:
            await arm.create_schema()
            assert await arm.pragmas() == {"journal_mode": "wal", "synchronous": "full", "foreign_keys": "on"}
            t = dt.datetime(2026, 1, 1)
            a, b = arm.build([{"timestamp": t, "level": 10, "text": "a"}, {"timestamp": t, "level": 20, "text": "b"}])
            await arm.insert_batch([a])
            b.parent_id = a
            await arm.insert_batch([b])
            await b.links_to.add(a)  # directed: b -> a
            assert arm.snapshot().links == {(b.id, a.id)}
            parent = await arm.Journal.objects.select_related("children").get(id=a.id)
            assert [c.id for c in parent.children] == [b.id]
            linked = await arm.Journal.objects.select_related("links_from").get(id=a.id)
            assert [x.id for x in linked.links_from] == [b.id]
            await arm.delete([a])  # ON DELETE SET NULL on the parent, CASCADE on the links
            snap = arm.snapshot()
            assert snap.rows[b.id]["parent_id"] is None and snap.links == set()
        finally:
            await arm.close()

    asyncio.run(scenario())
    with sqlite3.connect(tmp_path / "fk.db") as conn:
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"ix_journal_fk_parent_id", "ix_journal_fk_links_from_id", "ix_journal_fk_links_to_id"} <= indexes
