"""How each arm's figures moved between two runs of one table: the old GC discipline's and the new one's.

Usage: python experiments/discipline_shift.py --old OLD.json... --new NEW.json... [--table default] > shift.md

Ratios are new / old rows/s (above 1: faster now). Runs on different days ran on a machine of different
speed, so each ratio is also given divided by the ratio of the two files' probe levels (the median rows/s
of the fixed sqlite3 probe the plugin runs between rounds, the same workload in every run): that
"probe-adjusted" ratio is the move that the machine's speed does not explain. An arm's figure is the
geometric mean over the object operations (A-F, I-K) both runs verified, for each test and mode; the
per-operation table takes the geometric mean of an op's ratios over the tests and modes both runs have.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_ormbench.workload.spec import MODELS, OPS
from pytest_ormbench.results.report import tables as T
from pytest_ormbench.results.report.load import Runs, load
from pytest_ormbench.results.stats import geometric_mean

GROUPS = [(m, md) for m in MODELS for md in ("cold", "warm")]


def probe_levels(runs: Runs) -> dict[str, float]:
    """arm -> the probe level of the file its cells come from (one file per arm here)."""
    level: dict[str, float] = {}
    for cell in runs.cells.values():
        found = T.probe_level(runs.run_facts.get(cell.source) or {})
        if found is not None:
            level.setdefault(cell.record.key.arm, found)
    return level


def rates(runs: Runs, table: str) -> dict[tuple[str, str, str, str], float]:
    """(arm, model, mode, op) -> rows/s of the table's timed cells (the report's own figures)."""
    return {(arm, m, md, op): v for m, md in GROUPS for arm, ops in T.figures(runs, m, md, table).items()
            for op, v in ops.items()}


def fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", nargs="+", required=True, type=Path)
    ap.add_argument("--new", nargs="+", required=True, type=Path)
    ap.add_argument("--table", default="default")
    args = ap.parse_args(argv)
    old_runs, new_runs = load(args.old), load(args.new)
    old, new = rates(old_runs, args.table), rates(new_runs, args.table)
    old_probe, new_probe = probe_levels(old_runs), probe_levels(new_runs)
    names = {**T.labels(old_runs), **T.labels(new_runs)}
    arms = [a for a in T.arm_order(new_runs) if any(k[0] == a for k in old)]
    objects = [op.letter for op in OPS if op.object_op]
    letters = [op.letter for op in OPS]

    def ratio(arm: str, model: str, mode: str, op: str) -> float | None:
        k = (arm, model, mode, op)
        return new[k] / old[k] if k in new and k in old else None

    def drift(arm: str) -> float | None:
        return new_probe[arm] / old_probe[arm] if arm in new_probe and arm in old_probe else None

    out = [f"# Figures of the {args.table} table: new run against old, per arm", "",
           "New / old rows/s (above 1: faster now); adjusted: divided by the ratio of the two runs' probe levels.",
           "", "| arm | probe old | probe new | probe ratio | geometric mean ratio | adjusted |"
               + "".join(f" T{MODELS[m].test} {md} |" for m, md in GROUPS),
           "| --- | ---: | ---: | ---: | ---: | ---: |" + " ---: |" * len(GROUPS)]
    for arm in arms:
        per_group = []
        for m, md in GROUPS:
            rs = [r for op in objects if (r := ratio(arm, m, md, op)) is not None]
            per_group.append(geometric_mean(rs) if rs else None)
        overall = geometric_mean([g for g in per_group if g is not None])
        d = drift(arm)
        adj = (lambda x: None if x is None or d is None else x / d)
        out.append(f"| {names.get(arm, arm)} | {old_probe.get(arm, 0):,.0f} | {new_probe.get(arm, 0):,.0f} | "
                   f"{fmt(d)} | {fmt(overall)} | {fmt(adj(overall))} |"
                   + "".join(f" {fmt(adj(g))} |" for g in per_group))
    out += ["", "## Per operation (adjusted; geometric mean over tests and modes)", "",
            "| op |" + "".join(f" {names.get(a, a)} |" for a in arms), "| --- |" + " ---: |" * len(arms)]
    for op in letters:
        row = []
        for arm in arms:
            rs = [r for m, md in GROUPS if (r := ratio(arm, m, md, op)) is not None]
            g, d = (geometric_mean(rs) if rs else None), drift(arm)
            row.append(fmt(None if g is None or d is None else g / d))
        out.append(f"| {op} {T.OPS_BY_LETTER[op].title} |" + "".join(f" {x} |" for x in row))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
