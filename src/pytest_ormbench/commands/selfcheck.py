"""Check an arm quickly, in this process, without pytest: every model x op, verified.

    python -m pytest_ormbench.commands.selfcheck peewee [--models simple,fk] [--ops A,C] [--db postgresql] [-v]

Meant for writing an adapter: it runs the same runner the benchmark uses, at
small sizes, with a warm-up and two rounds (so restore is exercised too).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

from pytest_ormbench.workload.spec import MODELS, OPS, Settings, Unsupported
from pytest_ormbench.backends import close_server_connections
from pytest_ormbench.provision.servers import ServerProblem, Servers
from pytest_ormbench.workload.plan import Sizes
from pytest_ormbench.arms.registry import resolve
from pytest_ormbench.measuring.runner import Cell, run_cell


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pytest_ormbench.commands.selfcheck")
    p.add_argument("arm")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--ops", default="".join(op.letter for op in OPS))
    p.add_argument("--tables", default="default,large")
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--batch", type=int, default=200)
    p.add_argument("--journal", default="delete")
    p.add_argument("--synchronous", default="full")
    p.add_argument("--db", default="sqlite", help="sqlite (the embedded side), postgresql or mysql (a throwaway "
                   "server is started, or the one ORMBENCH_POSTGRESQL_URL / ORMBENCH_MYSQL_URL names)")
    p.add_argument("--register", action="append", default=[], help="module:Class of an unregistered arm")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args(argv)
    a.db = {"mariadb": "mysql", "postgres": "postgresql", "pg": "postgresql"}.get(a.db, a.db)
    letters = [x for x in a.ops.replace(",", "").upper()]
    try:
        a.target = resolve(a.arm, tuple(a.register)).target
    except Exception as exc:  # an unknown name, or a --register target that does not import
        print(f"selfcheck: {exc}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="ormbench-selfcheck-"))
    settings = Settings(journal_mode=a.journal, synchronous=a.synchronous)
    servers = Servers(settings, work, os.environ.get("ORMBENCH_POSTGRESQL_URL", ""), os.environ.get("ORMBENCH_MYSQL_URL", ""))
    try:
        try:
            os.environ.update(servers.env_for(a.db))
        except ServerProblem as exc:
            print(f"selfcheck: {exc}", file=sys.stderr)
            return 2
        failures = _check_all(a, letters, work, settings)
    finally:
        close_server_connections()
        servers.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{failures} failed")
    return 1 if failures else 0


def _check_all(a: argparse.Namespace, letters: list[str], work: Path, settings: Settings) -> int:
    failures = 0
    for model in a.models.split(","):
        for letter in letters:
            for table in a.tables.split(","):
                cell = Cell(a.arm, a.target, model, letter, table, "warm", Sizes(a.iterations, a.batch), settings,
                            work / "templates", work / "work", rounds=2, warmup=True, statements=True, db=a.db)
                label = f"{a.arm}-{model}-{letter}-{table}"
                t = time.perf_counter()
                try:
                    rounds, counters = run_cell(cell)
                except Unsupported as exc:
                    print(f"UNSUPPORTED {label}: {exc}")
                    continue
                except Exception as exc:  # report every failure, keep going
                    failures += 1
                    print(f"FAIL {label}: {type(exc).__name__}: {exc}")
                    if a.verbose:
                        traceback.print_exc()
                    continue
                ms = ", ".join(f"{r.seconds * 1000:.2f}" for r in rounds)
                facts = {k: v for k, v in rounds[-1].facts.items() if k in ("commits", "bulk_ids_set", "connections")}
                counted = rounds[-1].statements
                said = ({k: v for k, v in counted.items() if v} if counted is not None
                        else counters.statements_not_applicable)
                print(f"ok {label}: [{ms}] ms {facts} statements {said} ({time.perf_counter() - t:.2f}s)")
    return failures


if __name__ == "__main__":
    sys.exit(main())
