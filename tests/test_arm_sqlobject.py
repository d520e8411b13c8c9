"""The SQLObject arm's behaviour: one connection, the requested pragmas, real relations.

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

if importlib.util.find_spec("sqlobject") is None:
    pytest.skip("SQLObject is not installed", allow_module_level=True)


BEHAVIOUR = textwrap.dedent(
    """
    import shutil
    import sys
    from pathlib import Path
    from pytest_ormbench.contract import MODELS, Settings
    from pytest_ormbench.plan import State
    from pytest_ormbench.sqlite_support import expected_pragmas, open_handles
    from bench_suites.sqlobject_arm import SQLObjectArm

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
