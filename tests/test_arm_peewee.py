"""The peewee arm passes the self-check at tiny sizes, and its relations are real peewee relations.

Everything runs in a subprocess: importing peewee registers sqlite3 adapters process-wide
(Decimal, date, time), which must not leak into the other tests.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from conftest import run_isolated

if importlib.util.find_spec("peewee") is None:
    pytest.skip("peewee is not installed", allow_module_level=True)

TARGET = "bench_suites.peewee_arm:PeeweeArm"




RELATIONS = textwrap.dedent(
    """
    import datetime as dt, sys
    from pathlib import Path
    from pytest_ormbench.contract import MODELS, Settings
    from pytest_ormbench.sqlite_support import expected_pragmas, open_handles
    from bench_suites.peewee_arm import PeeweeArm

    settings = Settings(journal_mode="delete", synchronous="normal")
    db = Path(sys.argv[1])
    arm = PeeweeArm(MODELS["fk"], settings)
    arm.open(db)
    try:
        assert arm.pragmas() == expected_pragmas(settings), arm.pragmas()
        arm.create_schema()
        t = dt.datetime(2026, 1, 1)
        rows = [{"id": i, "timestamp": t, "level": 10, "text": f"r{i}", "parent_id": 1 if i > 1 else None}
                for i in (1, 2, 3)]
        arm.populate(rows, [(2, 1), (3, 1), (3, 2)])
        J = arm.Journal
        root = J.get_by_id(1)
        assert sorted(c.id for c in root.children) == [2, 3]        # reverse FK
        assert J.get_by_id(2).parent.id == 1                         # self FK
        assert sorted(j.id for j in J.get_by_id(3).related()) == [1, 2]  # directed m2m, forward
        assert sorted(j.id for j in root.related_to()) == [2, 3]     # and reverse
        assert list(root.related()) == []
        assert sorted(link.to_id for link in J.get_by_id(3).links_out) == [1, 2]
        assert open_handles(db) in (None, 1)
        with arm.db.atomic():
            root.delete_instance()
        snap = arm.snapshot()
        assert snap.rows[2]["parent_id"] is None and snap.rows[3]["parent_id"] is None  # ON DELETE SET NULL
        assert snap.links == {(3, 2)}                                # ON DELETE CASCADE on the links
    finally:
        arm.close()
    print("relations ok")
    """
)


def test_peewee_arm_relations_and_pragmas(tmp_path: Path) -> None:
    proc = run_isolated("-c", RELATIONS, str(tmp_path / "rel.db"))  # -c: the repository root is on sys.path
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "relations ok" in proc.stdout
