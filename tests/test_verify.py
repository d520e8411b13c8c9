"""The verifier's shortcuts (repeated fetched rows, read-backs identical to one already verified, no read-back
after a read the storage shows wrote nothing) must not let a wrong value through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_ormbench.workload.spec import MODELS, Settings, Snapshot
from pytest_ormbench.workload.plan import Sizes, expected_row
from pytest_ormbench.measuring.runner import Cell, CellSession
from pytest_ormbench.measuring.verify import (VerificationError, VerifiedStates, _check_values, check_state,
                                              needs_read_back)
from pytest_ormbench.workload.plan import make_plan
from tests.tamper_arm import ReadBackCountingSqlite3Arm


@pytest.mark.parametrize("model", ["simple", "wide"])
def test_repeated_identical_rows_pass(model: str) -> None:
    spec = MODELS[model]
    row = expected_row(spec, 7)
    _check_values(spec, [row, row, dict(row), expected_row(spec, 8)], "filter")


@pytest.mark.parametrize("model", ["simple", "wide"])
def test_a_wrong_copy_of_a_checked_row_fails(model: str) -> None:
    spec = MODELS[model]
    good = expected_row(spec, 7)
    bad = dict(good, text=good["text"] + "!")
    with pytest.raises(VerificationError, match="fetched row 7: text"):
        _check_values(spec, [good, good, bad], "filter")


def test_a_type_change_is_not_taken_for_a_checked_copy() -> None:
    spec = MODELS["wide"]
    good = expected_row(spec, 7)
    json_field = next(f.name for f in spec.fields if f.kind == "json")
    bad = dict(good, **{json_field: {k: tuple(v) if isinstance(v, list) else v for k, v in good[json_field].items()}})
    with pytest.raises(VerificationError, match=json_field):
        _check_values(spec, [good, bad], "filter")


def test_expected_row_hands_out_copies() -> None:
    spec = MODELS["simple"]
    expected_row(spec, 3)["level"] = -1
    assert expected_row(spec, 3)["level"] != -1


@pytest.mark.parametrize("model", ["simple", "fk", "wide"])
def test_given_level_is_the_level_of_given_row(model: str) -> None:
    from pytest_ormbench.workload.plan import given_level, given_row

    spec = MODELS[model]
    assert [given_level(spec, n) for n in range(1, 500)] == [given_row(spec, n)["level"] for n in range(1, 500)]


def test_a_row_with_a_value_that_cannot_be_hashed_is_still_compared() -> None:
    spec = MODELS["simple"]
    good = expected_row(spec, 7)
    bad = dict(good, text=("nested", ["list"]))  # a tuple holding a list: hashing it fails
    with pytest.raises(VerificationError, match="fetched row 7: text"):
        _check_values(spec, [good, bad, bad], "filter")


# -- read-backs already verified (VerifiedStates) ------------------------------------------------------------------

def _snapshot(expected: dict[int, dict[str, Any]], links: set[tuple[int, int]] | None = None) -> Snapshot:
    return Snapshot({rid: dict(row) for rid, row in expected.items()}, set(links or ()))


def _expected(model: str, n: int = 30) -> dict[int, dict[str, Any]]:
    return {rid: expected_row(MODELS[model], rid) for rid in range(1, n + 1)}


def test_an_identical_read_back_passes_by_identity_a_changed_one_is_compared_and_fails(tmp_path: Path) -> None:
    spec, expected = MODELS["simple"], _expected("simple")
    memo = VerifiedStates("cell", tmp_path)
    check_state(spec, _snapshot(expected), expected, [], "update", memo)
    assert (memo.compared, memo.identical) == (1, 0)
    check_state(spec, _snapshot(expected), expected, [], "update", memo)
    assert (memo.compared, memo.identical) == (1, 1)
    bad = _snapshot(expected)
    bad.rows[7]["text"] += "!"
    for _ in range(2):  # a read-back that failed is not remembered: it fails again
        with pytest.raises(VerificationError, match="row 7: text"):
            check_state(spec, bad, expected, [], "update", memo)
    assert (memo.compared, memo.identical) == (1, 1)


def test_equal_values_of_another_type_are_compared_in_full(tmp_path: Path) -> None:
    spec, expected = MODELS["simple"], _expected("simple")
    memo = VerifiedStates("cell", tmp_path)
    check_state(spec, _snapshot(expected), expected, [], "update", memo)
    other = _snapshot(expected)
    other.rows[3]["level"] = float(other.rows[3]["level"])  # 5.0 == 5, but not the read-back that was verified
    check_state(spec, other, expected, [], "update", memo)
    assert (memo.compared, memo.identical) == (2, 0)


def test_links_are_part_of_a_verified_read_back(tmp_path: Path) -> None:
    spec, expected = MODELS["fk"], _expected("fk")
    links = {(2, 1), (3, 1)}
    memo = VerifiedStates("cell", tmp_path)
    check_state(spec, _snapshot(expected, links), expected, links, "update", memo)
    with pytest.raises(VerificationError, match="links"):
        check_state(spec, _snapshot(expected, {(2, 1)}), expected, links, "update", memo)


def test_another_process_of_the_same_cell_finds_what_was_verified_and_no_other_cell_does(tmp_path: Path) -> None:
    spec, expected = MODELS["simple"], _expected("simple")
    check_state(spec, _snapshot(expected), expected, [], "update", VerifiedStates("cell", tmp_path))
    same, other, nowhere = VerifiedStates("cell", tmp_path), VerifiedStates("other", tmp_path), VerifiedStates("cell")
    for memo in (same, other, nowhere):
        check_state(spec, _snapshot(expected), expected, [], "update", memo)
    assert [(m.compared, m.identical) for m in (same, other, nowhere)] == [(0, 1), (1, 0), (1, 0)]


def _session_cell(tmp_path: Path, mode: str, target: str = "pytest_ormbench.suites.raw_sqlite3:RawSqlite3Arm",
                  rounds: int = 3, op: str = "J", settings: Settings = Settings()) -> Cell:
    return Cell("sqlite3", target, "simple", op, "default", mode, Sizes(5, 50), settings, tmp_path / "templates",
                tmp_path / "work", rounds=rounds, warmup=mode == "warm")


def _run_session(cell: Cell) -> CellSession:
    session = CellSession(cell)
    try:
        session.run(cell)
    finally:
        session.close()
    return session


def test_a_warm_cell_compares_its_first_read_back_and_a_cold_round_finds_it(tmp_path: Path) -> None:
    warm = _run_session(_session_cell(tmp_path, "warm"))
    assert warm.verified is not None and (warm.verified.compared, warm.verified.identical) == (1, 3)
    cold = _run_session(_session_cell(tmp_path, "cold", rounds=1))  # a cold round's process, the same cell
    assert cold.verified is not None and (cold.verified.compared, cold.verified.identical) == (0, 1)


def test_a_wrong_round_after_rounds_that_passed_still_fails(tmp_path: Path) -> None:
    # warm-up and two rounds pass; the third update writes one wrong level
    with pytest.raises(VerificationError, match="row 1: level"):
        _run_session(_session_cell(tmp_path, "warm", target="tests.tamper_arm:TamperingSqlite3Arm"))


@pytest.mark.parametrize("op, counted, reads_back", [
    ("D", 0, False), ("G", 0, False), ("H", 0, False),   # a state-checked read that the storage shows wrote nothing
    ("D", 1, True), ("D", None, True),                    # ... that wrote, or where the storage cannot tell
    ("E", None, False), ("F", 0, False),                  # Get and Filter: Small check what they fetched
    ("A", 0, True), ("J", 1, True), ("K", None, True),    # every write
])
def test_which_rounds_are_read_back(op: str, counted: int | None, reads_back: bool) -> None:
    plan = make_plan("simple", op, "default", Sizes(5, 50))
    assert needs_read_back(plan, counted, counts_every_write=True) is reads_back
    # a storage that does not count every write: every state-checked read is read back
    assert needs_read_back(plan, counted, counts_every_write=False) is (reads_back or op in "DGH")


def _read_backs(tmp_path: Path, settings: Settings, op: str = "D") -> int:
    """The read-backs of a warm cell's session (its warm-up and two rounds; the template's own is another arm's)."""
    session = _run_session(_session_cell(tmp_path, "warm", target="tests.tamper_arm:ReadBackCountingSqlite3Arm",
                                         rounds=2, op=op, settings=settings))
    assert isinstance(session.arm, ReadBackCountingSqlite3Arm)
    return session.arm.read_backs


def test_a_read_that_wrote_nothing_is_not_read_back_where_the_file_counts_commits(tmp_path: Path) -> None:
    assert _read_backs(tmp_path / "delete", Settings()) == 0        # the warm-up and two rounds: the file's counter
    assert _read_backs(tmp_path / "wal", Settings(journal_mode="wal")) == 3   # WAL: no counter, read back each time
    assert _read_backs(tmp_path / "write", Settings(), op="I") == 3            # a write: read back each time


def test_a_read_that_writes_still_fails_without_its_read_back(tmp_path: Path) -> None:
    # the warm-up's read passes without a read-back; the first timed round's read commits a write
    with pytest.raises(VerificationError, match="row 1: level"):  # its commit calls for the read-back
        _run_session(_session_cell(tmp_path, "warm", target="tests.tamper_arm:WritingReadSqlite3Arm", op="D"))
    with pytest.raises(VerificationError, match="row 1: level"):  # WAL: no counter, so the read-back finds it
        _run_session(_session_cell(tmp_path / "wal", "warm", target="tests.tamper_arm:WritingReadSqlite3Arm",
                                   op="D", settings=Settings(journal_mode="wal")))
