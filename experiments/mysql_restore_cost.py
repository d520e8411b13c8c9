"""What restoring a MariaDB starting state costs, by method (docs/mysql.md, "Restore").

    python experiments/mysql_restore_cost.py [--repeats 15]

Starts a throwaway MariaDB (as the plugin does), builds the raw mysqlclient control arm's starting states
(Test 1 and Test 3 at the default table's 300 rows, Test 1 at the large table's 20,100 rows; Test 2 for its
foreign keys), and times each way of getting an exact copy back, median of the repeats:

- ``copy``: a new database from the template (``SHOW CREATE TABLE`` per table, ``INSERT ... SELECT``), plus
  the arm's reconnect that a new database forces;
- ``truncate``: what the plugin does between warm rounds: ``TRUNCATE``, ``INSERT ... SELECT`` from the
  template, ``AUTO_INCREMENT`` set back, then ``ANALYZE TABLE`` and ``FLUSH TABLES ... FOR EXPORT``;
- ``delete``: the same with ``DELETE`` instead of ``TRUNCATE`` (leaves purge work to InnoDB's background);
- ``truncate, no settle``: ``truncate`` without the statistics and the flush.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from _timing import median_ms as _ms  # puts the repository on sys.path

import MySQLdb  # noqa: E402

from pytest_ormbench.workload.spec import Settings  # noqa: E402
from pytest_ormbench.provision import mysql as mysql_server  # noqa: E402
from pytest_ormbench.backends.mysql import SERVER_ENV, MysqlDatabase  # noqa: E402
from pytest_ormbench.workload.plan import Sizes, make_plan  # noqa: E402
from pytest_ormbench.arms.registry import import_arm  # noqa: E402
from pytest_ormbench.measuring.runner import ensure_template  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=15)
    a = p.parse_args()
    arm = import_arm("bench_suites.raw_mysqlclient:RawMysqlclientArm")
    with mysql_server.start_server() as server, tempfile.TemporaryDirectory(prefix="ormbench-restore-") as scratch:
        os.environ[SERVER_ENV] = json.dumps(server.info.to_json())
        db = MysqlDatabase()
        tmp = Path(scratch)  # removed at the end, like the server
        print(f"MariaDB {server.info.version}, settings {server.info.settings}")
        print("| starting state | rows | copy | truncate | delete | truncate, no settle |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for model, table in (("simple", "default"), ("fk", "default"), ("wide", "default"), ("simple", "large")):
            plan = make_plan(model, "I", table, Sizes())
            tmpl = ensure_template(arm, plan.state, Settings(), tmp / "templates", "mysql")
            work = db.location(tmp / "work", f"{model}-{table}")
            db.copy(tmpl, work)

            def by_copy() -> None:
                conn = MySQLdb.connect(host=work.host, port=work.port, user=work.user, database=work.dbname)
                conn.close()  # the arm's reconnect
                db.copy(tmpl, work)

            def method(name: str, settle: bool = True) -> None:
                original = type(db)._settle_tables
                type(db).restore_method = name  # type: ignore[misc]
                if not settle:
                    type(db)._settle_tables = lambda self, dbname, tables: None  # type: ignore[method-assign]
                try:
                    db.restore(work)
                finally:
                    type(db).restore_method = "truncate"  # type: ignore[misc]
                    type(db)._settle_tables = original  # type: ignore[method-assign]

            t_copy = _ms(by_copy, a.repeats)
            t_trunc = _ms(lambda: method("truncate"), a.repeats)
            t_delete = _ms(lambda: method("delete"), a.repeats)
            t_plain = _ms(lambda: method("truncate", settle=False), a.repeats)
            print(f"| Test {plan.model.test}, {table} table | {plan.state.count:,} | {t_copy:.1f} ms | {t_trunc:.1f} ms "
                  f"| {t_delete:.1f} ms | {t_plain:.1f} ms |")
        db.close_connections()
    return 0


if __name__ == "__main__":
    sys.exit(main())
