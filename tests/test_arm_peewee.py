"""The peewee arm passes the self-check at tiny sizes, and its relations are real peewee relations.

On SQLite and, when the server binaries are here, on PostgreSQL.

Everything runs in a subprocess: importing peewee registers sqlite3 adapters process-wide
(Decimal, date, time), which must not leak into the other tests.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from conftest import run_isolated
import server_helpers

if importlib.util.find_spec("peewee") is None:
    pytest.skip("peewee is not installed", allow_module_level=True)

TARGET = "pytest_ormbench.suites.peewee_arm:PeeweeArm"




RELATIONS = textwrap.dedent(
    """
    import datetime as dt, sys
    from pathlib import Path
    from pytest_ormbench.arms.contract import MODELS, Settings
    from pytest_ormbench.arms.sql import expected_pragmas, open_handles
    from pytest_ormbench.suites.peewee_arm import PeeweeArm

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


ON_POSTGRESQL = textwrap.dedent(
    """
    import datetime as dt, sys
    from pathlib import Path
    from pytest_ormbench.arms.contract import MODELS, Settings
    from pytest_ormbench.suites.peewee_arm import PeeweeArm
    from server_helpers import new_template, on_server, wait_closed, work_copy

    tmp = Path(sys.argv[1])
    settings = Settings()
    with on_server("postgresql", tmp) as (db, _):
        # Test 3's types as peewee maps them on PostgreSQL
        wide = new_template(db, tmp, "wide")
        arm = PeeweeArm(MODELS["wide"], settings)
        arm.open(wide)
        try:
            arm.create_schema()
        finally:
            arm.close()
        types = db.column_types(wide)
        assert types["journal_wide.col_float_1"] == "double precision", types  # DoubleField, not REAL
        assert types["journal_wide.col_json_4"] == "jsonb", types
        assert types["journal_wide.col_decimal_2"] == "numeric(10,2)", types
        assert types["journal_wide.timestamp"] == "timestamp without time zone", types
        indexes = [d for (d,) in db._conn(wide).execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'")]
        assert len(indexes) == 3 and not any("gin" in d.lower() for d in indexes), indexes  # pk, level, text

        # Test 2: real relations, one psycopg2 connection, the server's durability read back
        tmpl = new_template(db, tmp, "fk")
        arm = PeeweeArm(MODELS["fk"], settings)
        arm.open(tmpl)
        try:
            assert arm.on_server and type(arm.raw_connection()).__module__.startswith("psycopg2")
            assert arm.pragmas() == db.expected_durability(settings), arm.pragmas()
            arm.create_schema()
            t = dt.datetime(2026, 1, 1)
            rows = [{"id": i, "timestamp": t, "level": 10, "text": f"r{i}", "parent_id": 1 if i > 1 else None}
                    for i in (1, 2, 3)]
            arm.populate(rows, [(2, 1), (3, 1), (3, 2)])
            J = arm.Journal
            root = J.get_by_id(1)
            assert sorted(c.id for c in root.children) == [2, 3]
            assert J.get_by_id(2).parent.id == 1
            assert sorted(j.id for j in J.get_by_id(3).related()) == [1, 2]
            assert sorted(j.id for j in root.related_to()) == [2, 3]
            assert db.connections(tmpl) == 1
        finally:
            arm.close()
        wait_closed(db, tmpl)
        assert db.connections(tmpl) == 0
        work = work_copy(db, tmpl, tmp, "fk")
        arm = PeeweeArm(MODELS["fk"], settings)
        arm.open(work)
        try:
            conn = arm.raw_connection()
            with arm.db.atomic():
                arm.Journal.get_by_id(1).delete_instance()
            snap = arm.snapshot()
            assert snap.rows[2]["parent_id"] is None and snap.rows[3]["parent_id"] is None  # ON DELETE SET NULL
            assert snap.links == {(3, 2)}                                                    # ON DELETE CASCADE
            arm.db.begin()  # a stray transaction: before_restore ends it, or TRUNCATE would wait for it
            arm.Journal.get_by_id(2)
            arm.restore(None)
            assert arm.raw_connection() is conn and db.connections(work) == 1
            assert len(arm.snapshot().rows) == 3 and arm.snapshot().links == {(2, 1), (3, 1), (3, 2)}
            assert arm.Journal.create(timestamp=dt.datetime(2026, 1, 2), level=20, text="new").id == 4
        finally:
            arm.close()
    print("postgresql ok")
    """
)


def test_peewee_arm_on_postgresql(tmp_path: Path) -> None:
    server_helpers.skip_unless_runs("postgresql", "psycopg2")  # peewee's PostgreSQL driver
    proc = run_isolated("-c", ON_POSTGRESQL, str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "postgresql ok" in proc.stdout
