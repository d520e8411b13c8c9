"""Does the plugin's timed region cost anything? The plugin's round against a bare perf_counter loop.

For each op of an arm (the raw sqlite3 control by default, ``--arm`` another; warm, default table, the
plugin's default sizes), rounds alternate between the plugin's timed region (``runner.run_round`` under a
GC discipline) and a bare loop around the same adapter method (``perf_counter`` before and after, nothing done to the garbage
collector), on the same arm, connection and starting state (restored before every round), the order
swapped every pair. Both kinds of round prepare their inputs the same way (``runner.prepare_inputs``) and are
followed by the same verification, so the only difference is what the plugin does around the clock.

Printed per op and discipline: the median over pairs of bare time / plugin time (1.000: the plugin's
region costs nothing; 0.95: the op reads 5 % slower through the plugin), and its spread. The target
is >= 0.99 on every op.

    python experiments/fidelity.py --pairs 21 --disciplines collect,freeze,disable > results/fidelity.md
"""

from __future__ import annotations

import argparse
import platform
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pytest_ormbench.measuring import runner, timing
from pytest_ormbench.workload.spec import MODELS, OPS, OPS_BY_LETTER, Settings
from pytest_ormbench.workload.plan import Sizes, make_plan
from pytest_ormbench.arms.registry import CONTROL_ARM, import_arm, resolve
from pytest_ormbench.measuring.verify import verify


def bare_round(arm, plan, db) -> float:
    """The same op timed by a bare loop: prepare, clock, call, clock; the collector left alone."""
    args, objs = runner.prepare_inputs(arm, plan)
    method = getattr(arm, plan.op.name)
    if arm.is_async:  # as the plugin times an async op: the coroutine made first, the loop run inside the clock
        coro, loop = method(*args), timing.event_loop()
        t0 = time.perf_counter()
        result = loop.run_until_complete(coro)
        t1 = time.perf_counter()
    else:
        t0 = time.perf_counter()
        result = method(*args)
        t1 = time.perf_counter()
    verify(arm, plan, result, objs, arm.snapshot(), None)
    return t1 - t0


def measure(arm_name: str, arm_cls: type, letter: str, disciplines: list[str], pairs: int, sizes: Sizes,
            work: Path) -> dict[str, list[float]]:
    settings = Settings("delete", "full")
    plan = make_plan("simple", letter, "default", sizes)
    timing.event_loop()
    template = runner.ensure_template(arm_cls, plan.state, settings, work / "templates")
    db = work / f"{arm_name}-{letter}.db"
    shutil.copyfile(template, db)
    arm = arm_cls(MODELS["simple"], settings)
    timing.drive(arm.open(db))
    ratios: dict[str, list[float]] = {d: [] for d in disciplines}
    try:
        runner.run_round(arm, plan, db, read_back_always=True)  # warm-up, as the plugin's warm mode does
        for i in range(pairs):
            for d in disciplines:
                times = {}
                for kind in (("plugin", "bare") if i % 2 == 0 else ("bare", "plugin")):
                    timing.drive(arm.restore(template))
                    # both kinds of round read the table back, as bare_round does
                    times[kind] = (runner.run_round(arm, plan, db, discipline=d, read_back_always=True).seconds
                                   if kind == "plugin" else bare_round(arm, plan, db))
                ratios[d].append(times["bare"] / times["plugin"])
    finally:
        timing.drive(arm.close())
    return ratios


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arm", default=CONTROL_ARM, help="the arm to time (default: the raw sqlite3 control)")
    ap.add_argument("--pairs", type=int, default=21)
    ap.add_argument("--ops", default="".join(op.letter for op in OPS))
    ap.add_argument("--disciplines", default=timing.GC_DISCIPLINE)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--batch", type=int, default=10000)
    a = ap.parse_args()
    disciplines = a.disciplines.split(",")
    bad = [d for d in disciplines if d not in timing.GC_DISCIPLINES]
    if bad:
        print(f"fidelity: unknown discipline {bad[0]!r}; known: {', '.join(timing.GC_DISCIPLINES)}", file=sys.stderr)
        return 2
    try:
        arm_cls = import_arm(resolve(a.arm).target)
    except Exception as exc:  # an unknown arm or a missing package: one line
        print(f"fidelity: cannot load arm {a.arm!r}: {exc}", file=sys.stderr)
        return 2
    ops = [letter for letter in a.ops if letter not in {op.letter for op in OPS if op.name in arm_cls.unsupported}]
    work = Path(tempfile.mkdtemp(prefix="ormbench-fidelity-"))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        rows = []
        for letter in ops:
            r = measure(a.arm, arm_cls, letter, disciplines, a.pairs, Sizes(a.iterations, a.batch), work)
            rows.append((OPS_BY_LETTER[letter].title, r))
            print(f"{letter} " + " ".join(f"{d} {statistics.median(v):.3f}" for d, v in r.items()),
                  file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"# Fidelity: the plugin's timed region against a bare loop\n\n"
          f"`python experiments/fidelity.py{'' if a.arm == CONTROL_ARM else ' --arm ' + a.arm} --pairs {a.pairs} "
          f"--disciplines {a.disciplines}{'' if a.ops == ''.join(op.letter for op in OPS) else ' --ops ' + a.ops}` "
          f"(started {started}; Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
          f"{platform.machine()}, sizes {a.iterations}/{a.batch}; arm {a.arm}, Test 1, warm, default table, "
          f"journal_mode=delete, synchronous=full).\n\n"
          f"Median over {a.pairs} alternating pairs of bare time / plugin time (1.000: no cost; below: the plugin "
          f"reads slower), with the pairs' interquartile range.\n")
    print("| op | " + " | ".join(disciplines) + " |")
    print("| --- | " + " | ".join("---:" for _ in disciplines) + " |")
    for title, r in rows:
        cells = []
        for d in disciplines:
            q = statistics.quantiles(r[d], n=4)
            cells.append(f"{statistics.median(r[d]):.3f} ({q[0]:.3f}–{q[2]:.3f})")
        print(f"| {title} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
