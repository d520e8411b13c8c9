"""What restoring a PostgreSQL starting state costs, by method (docs/postgresql.md, "Restore").

    python experiments/pg_restore_cost.py [--repeats 15]

Starts a throwaway server (as the plugin does), builds the raw psycopg control arm's starting states
(Test 1 and Test 3 at the default table's 300 rows, Test 1 at the large table's 20,100 rows), and times
each way of getting an exact copy back, median of the repeats:

- ``template``: ``DROP DATABASE`` + ``CREATE DATABASE ... TEMPLATE`` (PostgreSQL 15's default WAL_LOG
  strategy), plus the arm's reconnect that a new database forces;
- ``template file_copy``: the same with ``STRATEGY FILE_COPY`` (a checkpoint per copy);
- ``in place``: what the plugin does between warm rounds: ``TRUNCATE``, ``INSERT ... SELECT`` from the
  template's kept copy, sequences set back, ``ANALYZE``; the arm's connection stays open;
- ``in place, no ANALYZE``: the same without the statistics.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from _timing import median_ms as _ms  # puts the repository on sys.path

import psycopg  # noqa: E402

from pytest_ormbench.workload.spec import Settings  # noqa: E402
from pytest_ormbench.provision import postgresql as pg_server  # noqa: E402
from pytest_ormbench.backends.postgresql import SERVER_ENV, PostgresDatabase  # noqa: E402
from pytest_ormbench.workload.plan import Sizes, make_plan  # noqa: E402
from pytest_ormbench.arms.registry import import_arm  # noqa: E402
from pytest_ormbench.measuring.runner import ensure_template  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=15)
    a = p.parse_args()
    arm = import_arm("bench_suites.raw_psycopg:RawPsycopgArm")
    with pg_server.start_server() as server, tempfile.TemporaryDirectory(prefix="ormbench-restore-") as scratch:
        os.environ[SERVER_ENV] = json.dumps(server.info.to_json())
        db = PostgresDatabase()
        tmp = Path(scratch)  # removed at the end, like the server
        print(f"PostgreSQL {server.info.version}, settings {server.info.settings}")
        print("| starting state | rows | template | template file_copy | in place | in place, no ANALYZE |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for model, table in (("simple", "default"), ("wide", "default"), ("simple", "large")):
            plan = make_plan(model, "I", table, Sizes())
            tmpl = ensure_template(arm, plan.state, Settings(), tmp / "templates", "postgresql")
            work = db.location(tmp / "work", f"{model}-{table}")
            db.copy(tmpl, work)

            def by_template(strategy: str = "") -> None:
                conn = psycopg.connect(work.conninfo(), autocommit=True)  # the arm's reconnect
                conn.close()
                db._admin_conn().execute(f'DROP DATABASE "{work.dbname}"')
                db._admin_conn().execute(f'CREATE DATABASE "{work.dbname}" TEMPLATE "{tmpl.dbname}"{strategy}')

            def no_analyze() -> None:
                conn = db._conn(work)
                tables = db._tables(conn)
                with conn.transaction():
                    conn.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables))
                    for t in tables:
                        conn.execute(f'INSERT INTO "{t}" OVERRIDING SYSTEM VALUE SELECT * FROM ormbench_restore."{t}" '
                                     "ORDER BY 1")
                    conn.execute("SELECT setval(name::regclass, last_value, is_called) FROM ormbench_restore._sequences")

            t_tmpl = _ms(by_template, a.repeats)
            t_copy = _ms(lambda: by_template(" STRATEGY FILE_COPY"), a.repeats)
            t_place = _ms(lambda: db.restore(work), a.repeats)
            t_plain = _ms(no_analyze, a.repeats)
            print(f"| Test {plan.model.test}, {table} table | {plan.state.count:,} | {t_tmpl:.1f} ms | {t_copy:.1f} ms "
                  f"| {t_place:.1f} ms | {t_plain:.1f} ms |")
        db.close_connections()
    return 0


if __name__ == "__main__":
    sys.exit(main())
