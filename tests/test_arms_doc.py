"""The arms' notes (bench_suites/notes/*.toml) and docs/arms.md, which is generated from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ormbench.arms.notes import all_notes, parse_notes
from pytest_ormbench.arms.registry import BUILTIN_ARMS
from pytest_ormbench.commands import arms_doc

ROOT = Path(__file__).resolve().parents[1]


def test_docs_arms_md_is_what_the_generator_writes() -> None:
    expected = arms_doc.render(ROOT)
    assert (ROOT / "docs" / "arms.md").read_text(encoding="utf-8") == expected, (
        "docs/arms.md is out of date: python -m pytest_ormbench.commands.arms_doc")
    assert arms_doc.main(["--root", str(ROOT), "--check"]) == 0


def test_every_builtin_arm_has_one_notes_file() -> None:
    owners: dict[str, list[str]] = {}
    for notes in all_notes("bench_suites"):
        for arm in notes.arms:
            owners.setdefault(arm, []).append(notes.name)
    assert {e.name: len(owners.get(e.name, [])) for e in BUILTIN_ARMS} == {e.name: 1 for e in BUILTIN_ARMS}


def test_notes_wrapped_texts_decode_to_one_line() -> None:
    notes = parse_notes("x", 'arms = ["x"]\n[deviations]\nfk = """\\\n    one \\\n    line"""\n')
    assert notes.deviations == {"fk": "one line"}
    assert notes.unsupported == {} and notes.database_notes == {}


@pytest.mark.parametrize("text", ['[deviations]\nfk = 1\n', 'arms = "x"\n'])
def test_notes_refuse_what_an_arm_cannot_record(text: str) -> None:
    with pytest.raises(ValueError):
        parse_notes("x", text)
