"""The memory tables: peak memory the operation allocated, ops x arms (``--ormbench-memory``)."""

from __future__ import annotations

from collections import defaultdict

from pytest_ormbench.workload.spec import MODELS, OPS, OPS_BY_LETTER
from pytest_ormbench.results.report.load import Runs
from pytest_ormbench.results.report.table import Table
from pytest_ormbench.results.report.tables.scope import arm_order, groups, labels, shown_cells


def memory(runs: Runs) -> list[Table]:
    out = []
    for model, mode, table in groups(runs):
        per_arm: dict[str, dict[str, int]] = defaultdict(dict)
        for k, cell in shown_cells(runs):
            peak = cell.record.facts.memory_peak_bytes
            if (k.model, k.mode, k.table) == (model, mode, table) and peak is not None:
                per_arm[k.arm][k.op] = peak
        if not per_arm:
            continue
        arms = [a for a in arm_order(runs) if a in per_arm]
        names = labels(runs)
        letters = [op.letter for op in OPS if any(op.letter in per_arm[a] for a in arms)]
        rows = [[f"{lt} {OPS_BY_LETTER[lt].title}",
                 *(("—" if per_arm[a].get(lt) is None else f"{per_arm[a][lt] / 1024:,.0f}") for a in arms)]
                for lt in letters]
        out.append(Table(f"Peak memory allocated by the operation, KiB — {MODELS[model].title}, {mode}, {table} table",
                         ["Operation", *(names[a] for a in arms)], rows,
                         ["Measured with tracemalloc in a separate untimed repetition (--ormbench-memory)."],
                         anchor=f"memory-{model}-{mode}-{table}"))
    return out
