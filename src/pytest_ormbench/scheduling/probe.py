"""The drift probe: a fixed raw-sqlite3 workload timed at points through the run (the scheduler decides when).

Whatever the probe's figure varies by over a run, the machine did: its spread is the run's drift floor
(``results.stats.drift_floor``), below which a difference between arms is not evidence. Also here: the
machine's 1-minute load, read by the parent beside every round and every probe.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from pytest_ormbench.arms.registry import CONTROL_ARM
from pytest_ormbench.results.record import CellRecord
from pytest_ormbench.results.stats import drift_floor, geometric_mean
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.workload.plan import Sizes
from pytest_ormbench.workload.spec import OPS_BY_LETTER

#: the drift probe: raw sqlite3, Test 1, one durable commit (B) and a read path (F), warm
PROBE_CELLS: tuple[tuple[str, str], ...] = (("simple", "B"), ("simple", "F"))
PROBE_ROUNDS = 5
#: the probe's own sizes, whatever the run's: a fixed workload (B writes 10,000 rows in one commit, F does
#: 2,000 gets), long enough (~0.1 s a round) that its own jitter stays below the drift it is there to see
PROBE_SIZES = Sizes(iterations=1000, batch=10000)


#: the per-round series of the machine's 1-minute load, beside the measures (read by the parent, not measured
#: by the child: nothing compares or reports it as a figure of the arm's)
LOADAVG = "loadavg_1min"


def loadavg() -> float | None:
    """The machine's 1-minute load now: a busy machine makes figures unreliable."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def probe_figure(cell: Callable[[CellKey, int, bool], Any], ask: Callable[[CellKey, dict[str, Any]], dict[str, Any]]
                 ) -> tuple[float, dict[str, list[float]]]:
    """One probe: each probe cell built, then timed over :data:`PROBE_ROUNDS` warm rounds in the probe's worker
    (``cell(key, rounds, warmup)`` makes the request, ``ask(key, payload)`` sends it). Returns the geometric
    mean of the cells' rows/s, and each cell's round times (seconds, in order: a dip in the figure can then be
    told from one slow round, a slow spell of the machine, from the probe's whole). Raises what ``ask`` raises
    for a cell that fails."""
    figures, rounds = [], {}
    for model, op in PROBE_CELLS:
        key = CellKey(CONTROL_ARM, model, op, "warm", "default")
        ask(key, {"cmd": "build", "cell": cell(key, 1, False).to_json()})
        reply = ask(key, {"cmd": "run", "cell": cell(key, PROBE_ROUNDS, True).to_json()})
        record = CellRecord.from_json(reply["record"])
        figures.append(record.rows_per_s)
        rounds[_probe_cell_name(model, op)] = [round(s, 6) for s in record.seconds]
    return geometric_mean(figures), rounds


def _probe_cell_name(model: str, op: str) -> str:
    return f"{model}-{OPS_BY_LETTER[op].name}-warm-default"


def probe_facts(schedule_name: str, probes: list[dict[str, Any]], notes: list[str]) -> dict[str, Any]:
    """Run-level facts for the JSON's top-level ``ormbench`` key: the schedule, the probes and the drift floor."""
    return {
        "schedule": schedule_name,
        "drift_floor": drift_floor([p["rows_per_s"] for p in probes]),
        "probes": probes,
        "probe": {"arm": CONTROL_ARM,
                  "cells": [_probe_cell_name(m, o) for m, o in PROBE_CELLS],
                  "rounds": PROBE_ROUNDS, "iterations": PROBE_SIZES.iterations, "batch": PROBE_SIZES.batch,
                  "figure": "geometric mean of the cells' median rows/s",
                  "round_seconds": "each probe's round times per cell, in the order they ran"},
        "notes": notes,
    }
