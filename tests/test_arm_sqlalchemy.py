"""The four SQLAlchemy-family arms: their Test 2 relations are real ORM relations
(self FK both ways, directed many-to-many both ways), SQLite does the ON DELETE
(SET NULL for children, CASCADE for links) with nothing related loaded, and the
pragmas read back from the one live connection are the asked ones.

(Their selfchecks run from tests/test_arms.py once they are in BUILTIN_ARMS.)
Everything runs in a subprocess, so that no other arm's process-wide state (sqlite3
adapters, event loops) leaks in or out.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from conftest import run_isolated


ARMS = {
    "sqlalchemy": ("bench_suites.sqlalchemy_arm:SQLAlchemyArm", ("sqlalchemy",)),
    "sqlalchemy_async": ("bench_suites.sqlalchemy_async_arm:SQLAlchemyAsyncArm",
                         ("sqlalchemy", "aiosqlite", "greenlet")),
    "sqlmodel": ("bench_suites.sqlmodel_arm:SQLModelArm", ("sqlmodel",)),
    "sqlmodel_async": ("bench_suites.sqlmodel_async_arm:SQLModelAsyncArm",
                       ("sqlmodel", "aiosqlite", "greenlet")),
}


def _needs(name: str) -> str:
    target, mods = ARMS[name]
    for mod in mods:
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed")
    return target




RELATIONS = textwrap.dedent(
    """
    import asyncio, datetime as dt, importlib, sys
    from pathlib import Path
    from pytest_ormbench.contract import MODELS, Settings
    from pytest_ormbench.runner import drive
    from pytest_ormbench.sqlite_support import expected_pragmas, open_handles

    target, db = sys.argv[1], Path(sys.argv[2])
    module, _, name = target.partition(":")
    Arm = getattr(importlib.import_module(module), name)
    settings = Settings(journal_mode="delete", synchronous="normal")
    arm = Arm(MODELS["fk"], settings)
    drive(arm.open(db))

    def check(s):
        M = arm.M
        root = s.get(M, 1)
        assert sorted(c.id for c in root.children) == [2, 3]          # reverse FK
        assert s.get(M, 2).parent is root                                # self FK
        assert sorted(j.id for j in s.get(M, 3).links_to) == [1, 2]     # directed m2m, forward
        assert sorted(j.id for j in root.links_from) == [2, 3]          # and reverse
        assert list(root.links_to) == []

    def kill(s):  # a fresh session: nothing related is loaded, SQLite must do ON DELETE
        s.delete(s.get(arm.M, 1))
        s.commit()

    try:
        drive(arm.create_schema())
        assert drive(arm.pragmas()) == expected_pragmas(settings), drive(arm.pragmas())
        t = dt.datetime(2026, 1, 1)
        rows = [{"id": i, "timestamp": t, "level": 10, "text": f"r{i}", "parent_id": 1 if i > 1 else None}
                for i in (1, 2, 3)]
        drive(arm.populate(rows, [(2, 1), (3, 1), (3, 2)]))
        if arm.is_async:
            async def run(fn):
                async with arm.Session() as s:
                    await s.run_sync(fn)
            drive(run(check))
            drive(run(kill))
        else:
            for fn in (check, kill):
                with arm.Session() as s:
                    fn(s)
        assert open_handles(db) in (None, 1)
        snap = arm.snapshot()
        assert snap.rows[2]["parent_id"] is None and snap.rows[3]["parent_id"] is None  # ON DELETE SET NULL
        assert snap.links == {(3, 2)}                                    # ON DELETE CASCADE on the links
        assert drive(arm.pragmas()) == expected_pragmas(settings)
    finally:
        drive(arm.close())
    print("relations ok")
    """
)


@pytest.mark.parametrize("name", list(ARMS))
def test_relations_and_pragmas(name: str, tmp_path: Path) -> None:
    target = _needs(name)
    proc = run_isolated("-c", RELATIONS, target, str(tmp_path / "rel.db"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "relations ok" in proc.stdout
