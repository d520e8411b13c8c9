"""The Django arm on MariaDB: the types Django creates there, real relations, one mysqlclient connection.

Django's arm is otherwise covered by the selfcheck matrix (tests/test_arms.py). This runs in a subprocess:
``settings.configure()`` is process-wide, and the arm configures Django itself.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from conftest import run_isolated
import server_helpers

if importlib.util.find_spec("django") is None:
    pytest.skip("django is not installed", allow_module_level=True)


ON_MARIADB = textwrap.dedent(
    """
    import datetime as dt, sys
    from decimal import Decimal
    from pathlib import Path
    from pytest_ormbench.arms.contract import MODELS, Settings
    from pytest_ormbench.backends.mysql import MysqlDatabase
    from pytest_ormbench.suites.django_arm import DjangoArm
    from server_helpers import new_template, on_server, wait_closed, work_copy

    tmp = Path(sys.argv[1])
    settings = Settings()
    # the instance in DATABASES: the one the arm's restore goes through (it remembers the copies)
    with on_server("mysql", tmp, shared=True) as (db, _):
        assert isinstance(db, MysqlDatabase)
        # Test 3's types as Django maps them on MariaDB: all exact without overrides
        wide = new_template(db, tmp, "wide")
        arm = DjangoArm(MODELS["wide"], settings)
        arm.open(wide)
        try:
            arm.create_schema()
            assert arm.bulk_sets_ids  # MariaDB >= 10.5: INSERT ... RETURNING
            info = arm.describe()
            assert info["mysql_driver"].startswith("mysqlclient "), info
            assert info["mysql_isolation_level"] == "read committed", info
            assert info["bulk_create_returning"] is True, info
            objs = arm.build([{"timestamp": dt.datetime(2026, 1, 1, 12, 0, 0, 123456), "level": 1, "text": "w"}])
            arm.insert_bulk(objs)
            assert objs[0].id == 1
            row = arm.snapshot().rows[1]
            assert row["timestamp"] == dt.datetime(2026, 1, 1, 12, 0, 0, 123456), row  # microseconds kept
            got = type(objs[0]).objects.get(id=1)
            assert got.col_decimal_1 == objs[0].col_decimal_1 and got.col_json_3 == objs[0].col_json_3
        finally:
            arm.close()
        types = db.column_types(wide)
        assert types["journal_wide.id"] == "bigint(20)", types
        assert types["journal_wide.timestamp"] == "datetime(6)", types
        assert types["journal_wide.col_float_1"] == "double", types
        assert types["journal_wide.col_decimal_2"] == "decimal(10,2)", types
        assert types["journal_wide.col_json_4"] == "longtext (json)", types
        assert types["journal_wide.text"] == "varchar(255)", types

        # Test 2: real relations, one connection, Django's isolation level, the server's durability
        tmpl = new_template(db, tmp, "fk")
        arm = DjangoArm(MODELS["fk"], settings)
        arm.open(tmpl)
        try:
            conn = arm.raw_connection()
            assert arm.on_server and type(conn).__module__.startswith("MySQLdb")
            assert arm.pragmas() == db.expected_durability(settings), arm.pragmas()
            with conn.cursor() as cur:
                cur.execute("SELECT @@session.tx_isolation, @@autocommit")
                assert cur.fetchone() == ("READ-COMMITTED", 1)
            arm.create_schema()
            t = dt.datetime(2026, 1, 1)
            rows = [{"id": i, "timestamp": t, "level": 10, "text": f"r{i}", "parent_id": 1 if i > 1 else None}
                    for i in (1, 2, 3)]
            arm.populate(rows, [(2, 1), (3, 1), (3, 2)])
            J = arm.Model
            root = J.objects.get(id=1)
            assert sorted(c.id for c in root.children.all()) == [2, 3]          # reverse FK
            assert J.objects.get(id=2).parent.id == 1                           # self FK
            assert sorted(j.id for j in J.objects.get(id=3).links.all()) == [1, 2]  # directed m2m
            assert sorted(j.id for j in root.linked_from.all()) == [2, 3]       # and reverse
            assert db.connections(tmpl) == 1 and db.open_transactions(tmpl) == 0
        finally:
            arm.close()
        wait_closed(db, tmpl)
        assert db.connections(tmpl) == 0
        work = work_copy(db, tmpl, tmp, "fk")
        arm = DjangoArm(MODELS["fk"], settings)
        arm.open(work)
        try:
            conn = arm.raw_connection()
            arm.delete([arm.Model.objects.get(id=1)])  # SET NULL and the links: Django's collector
            snap = arm.snapshot()
            assert snap.rows[2]["parent_id"] is None and snap.rows[3]["parent_id"] is None
            assert snap.links == {(3, 2)}
            assert db.open_transactions(work) == 0
            arm.restore(None)
            assert arm.raw_connection() is conn and db.connections(work) == 1
            assert len(arm.snapshot().rows) == 3 and arm.snapshot().links == {(2, 1), (3, 1), (3, 2)}
            new = arm.Model(timestamp=dt.datetime(2026, 1, 2), level=20, text="new")
            new.save()
            assert new.id == 4  # AUTO_INCREMENT set back by the restore
        finally:
            arm.close()
    print("mariadb ok")
    """
)


def test_django_arm_on_mariadb(tmp_path: Path) -> None:
    server_helpers.skip_unless_runs("mysql", "MySQLdb")  # mysqlclient: Django's MySQL driver
    proc = run_isolated("-c", ON_MARIADB, str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "mariadb ok" in proc.stdout
