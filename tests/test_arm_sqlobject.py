"""The SQLObject arm's behaviour: one connection, the requested pragmas or durability, real relations.

On SQLite and, when the server binaries are here, on PostgreSQL.

Runs in a subprocess: SQLObject's SQLiteConnection replaces ``sqlite3.Binary`` (and adds
``sqlite3.encode``/``decode``) process-wide when the first connection is made, which must
not leak into the other tests.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from conftest import run_isolated
import server_helpers

if importlib.util.find_spec("sqlobject") is None:
    pytest.skip("SQLObject is not installed", allow_module_level=True)


BEHAVIOUR = textwrap.dedent(
    """
    import shutil
    import sys
    from pathlib import Path
    from pytest_ormbench.arms.contract import MODELS, Settings
    from pytest_ormbench.workload.plan import State
    from pytest_ormbench.arms.sql import expected_pragmas, open_handles
    from pytest_ormbench.suites.sqlobject_arm import SQLObjectArm

    settings = Settings(journal_mode="delete", synchronous="normal")
    db = Path(sys.argv[1])
    arm = SQLObjectArm(MODELS["fk"], settings)
    arm.open(db)
    try:
        arm.create_schema()
        state = State(MODELS["fk"], 30)
        arm.populate(state.rows(), state.links())
        template = db.with_name("template.db")
        shutil.copyfile(db, template)
        assert arm.pragmas() == expected_pragmas(settings), arm.pragmas()
        # reads, write transactions and relation walks all stay on the one connection
        seen = []
        arm.raw_connection().set_trace_callback(seen.append)
        got = arm.get([1, 2, 3, 2])
        arm.raw_connection().set_trace_callback(None)
        assert [o.id for o in got] == [1, 2, 3, 2]
        assert sum(q.lstrip().upper().startswith("SELECT") for q in seen) == 4, seen  # the repeat re-reads
        arm.update_partial(arm.load_all()[:3], [10, 20, 30])
        J = arm.Journal
        kids_of = {o.id: [c.id for c in o.children] for o in arm.load_all()}
        assert sorted(i for ks in kids_of.values() for i in ks) == [r["id"] for r in state.rows() if r["parent_id"]]
        assert {(o.id, t.id) for o in arm.load_all() for t in o.links} == set(state.links())
        assert open_handles(db) == 1, open_handles(db)
        # deleting a parent nulls its children's parent_id and drops its links, both ways
        parent = J.get(2)
        kids = [c.id for c in parent.children]
        assert kids
        arm.delete([parent])
        raw = arm.raw_connection()
        got = raw.execute(f"SELECT parent_id FROM journal_fk WHERE id IN ({','.join(map(str, kids))})").fetchall()
        assert all(p is None for (p,) in got), got
        assert raw.execute("SELECT COUNT(*) FROM journal_fk_links WHERE from_id = 2 OR to_id = 2").fetchone()[0] == 0
        # restore keeps the connection and forgets cached objects
        arm.restore(template)
        assert raw.execute("SELECT COUNT(*) FROM journal_fk").fetchone()[0] == 30
        assert not arm.so_conn.cache.caches[J.__name__].allIDs()
        assert open_handles(db) == 1
    finally:
        arm.close()
    assert open_handles(db) == 0, open_handles(db)
    print("OK")
    """
)


def test_sqlobject_behaviour(tmp_path: Path) -> None:
    proc = run_isolated("-c", BEHAVIOUR, str(tmp_path / "so.db"))
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), proc.stdout[-3000:] + proc.stderr[-3000:]


ON_POSTGRESQL = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pytest_ormbench.arms.contract import MODELS, Settings
    from pytest_ormbench.workload.plan import State
    from pytest_ormbench.suites.sqlobject_arm import SQLObjectArm
    from server_helpers import new_template, on_server, wait_closed, work_copy

    def assert_closed(db, loc):
        wait_closed(db, loc)
        if db.connections(loc):
            raise AssertionError(f"{db.connections(loc)} connection(s) still open")

    tmp = Path(sys.argv[1])
    settings = Settings()
    with on_server("postgresql", tmp) as (db, _):
        # Test 3's types: JsonbCol (jsonb); SQLObject writes None there as the JSON value null
        wide = new_template(db, tmp, "wide")
        arm = SQLObjectArm(MODELS["wide"], settings)
        arm.open(wide)
        try:
            arm.create_schema()
            arm.populate(State(MODELS["wide"], 3).rows(), [])
        finally:
            arm.close()
        types = db.column_types(wide)
        assert types["journal_wide.col_json_1"] == "jsonb", types
        assert types["journal_wide.col_float_2"] == "double precision", types
        assert types["journal_wide.col_decimal_1"] == "numeric(10,2)", types
        got = db._conn(wide).execute("SELECT col_json_4 IS NULL, jsonb_typeof(col_json_4), col_text_4 IS NULL "
                                     "FROM journal_wide").fetchall()
        assert got == [(False, "null", True)] * 3, got

        # Test 2 on one psycopg connection: relations, restore in place, the cache forgotten
        tmpl = new_template(db, tmp, "fk")
        arm = SQLObjectArm(MODELS["fk"], settings)
        arm.open(tmpl)
        state = State(MODELS["fk"], 30)
        try:
            arm.create_schema()
            arm.populate(state.rows(), state.links())
        finally:
            arm.close()
        assert_closed(db, tmpl)
        work = work_copy(db, tmpl, tmp, "fk")
        arm = SQLObjectArm(MODELS["fk"], settings)
        arm.open(work)
        try:
            raw = arm.raw_connection()
            assert type(raw).__module__.startswith("psycopg") and raw.autocommit
            assert arm.pragmas() == db.expected_durability(settings), arm.pragmas()
            before = db.statement_calls()
            got = arm.get([1, 2, 3, 2])
            after = db.statement_calls()
            assert [o.id for o in got] == [1, 2, 3, 2]
            selects = sum(n - before.get(q, 0) for q, n in after.items()
                          if q.lstrip().upper().startswith("SELECT"))
            assert selects == 4, (before, after)  # the repeat re-reads (obj.sync())
            arm.update_partial(arm.load_all()[:3], [10, 20, 30])
            J = arm.Journal
            kids_of = {o.id: [c.id for c in o.children] for o in arm.load_all()}
            with_parent = [r["id"] for r in state.rows() if r["parent_id"]]
            assert sorted(i for ks in kids_of.values() for i in ks) == with_parent
            assert {(o.id, t.id) for o in arm.load_all() for t in o.links} == set(state.links())
            assert db.connections(work) == 1
            parent = J.get(2)
            kids = [c.id for c in parent.children]
            assert kids
            arm.delete([parent])
            snap = arm.snapshot()
            assert 2 not in snap.rows and all(snap.rows[k]["parent_id"] is None for k in kids)
            assert not any(2 in link for link in snap.links)
            raw.execute("BEGIN")  # a transaction left open must be refused before the restore, not waited on
            try:
                arm.restore(None)
            except RuntimeError as exc:
                assert "still open" in str(exc), exc
            else:
                raise AssertionError("restore went on with a transaction open")
            raw.execute("ROLLBACK")
            arm.restore(None)
            assert arm.raw_connection() is raw and db.connections(work) == 1
            assert len(arm.snapshot().rows) == 30
            assert not arm.so_conn.cache.caches[J.__name__].allIDs()
        finally:
            arm.close()
        assert_closed(db, work)
    print("OK")
    """
)


def test_sqlobject_on_postgresql(tmp_path: Path) -> None:
    server_helpers.skip_unless_runs("postgresql")  # psycopg: the harness's driver, and SQLObject's here
    proc = run_isolated("-c", ON_POSTGRESQL, str(tmp_path))
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), proc.stdout[-3000:] + proc.stderr[-3000:]
