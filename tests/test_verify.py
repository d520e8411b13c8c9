"""The verifier's shortcuts (repeated fetched rows) must not let a wrong value through."""

from __future__ import annotations

import pytest

from pytest_ormbench.workload.spec import MODELS
from pytest_ormbench.workload.plan import expected_row
from pytest_ormbench.measuring.verify import VerificationError, _check_values


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
