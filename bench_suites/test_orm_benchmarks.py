"""The benchmark matrix: one test, parametrized by pytest-ormbench over
arm x model x operation x mode x table x database (see the ``--ormbench-*`` options)."""

import math
import statistics
from collections.abc import Mapping

import pytest

from pytest_ormbench.workload.cells import CellKey


def test_orm(ormbench_cell, ormbench_run, request):
    """Report the cell: its rounds ran in worker processes, every round verified (a timed run's whole
    schedule runs before the first test; a verify-only cell runs here).

    Check the record the harness hands back: it must be this test's cell, marked verified, with
    one positive round time per round asked for and the rows/s figure computed from those times.
    A harness that lost a round, returned another cell's record or garbled a time fails here even
    when every round passed the database checks.
    """
    record = ormbench_cell()
    info = dict(record) if isinstance(record, Mapping) else record.to_json()
    cell = CellKey.from_info(info).id  # the one id format
    assert cell == request.node.callspec.id, f"the record is {cell}'s"
    assert info["verified"] is True
    # the rounds in force (the command line, the ini file or the preset), as the plugin parsed them
    asked = 1 if ormbench_run.verify_only else ormbench_run.rounds  # verify-only: every cell once, untimed
    seconds = info["measures"]["wall_seconds"]
    assert info["rounds"] == len(seconds) == asked, f"{len(seconds)} round times, {info['rounds']} rounds, {asked} asked"
    assert all(isinstance(s, (int, float)) and math.isfinite(s) and s > 0 for s in seconds), seconds
    assert isinstance(info["rows"], int) and info["rows"] > 0, info["rows"]
    if info.get("instrumented"):
        # rounds under callgrind: their times are no speed; every round has the op's instruction count
        counts = info["measures"]["instructions"]
        assert len(counts) == asked and all(c > 0 for c in counts), counts
        assert info["rows_per_s"] is None
    else:
        assert info["rows_per_s"] == pytest.approx(info["rows"] / statistics.median(seconds))
