"""docs/arms.md, written from the arms' notes, the registry and pyproject.toml's extras.

    python -m pytest_ormbench.commands.arms_doc [--root .] [--check]

Per-arm data lives in the notes beside the arms (``bench_suites/notes/<arm>.toml``, read by
:mod:`pytest_ormbench.arms.notes`): what is recorded with every cell (``[deviations]``, ``[unsupported]``) and,
under ``[doc]``, the arm's rows of the tables and its "Recorded deviations" entry. The registry gives the
order, the names and the labels; the extras of pyproject.toml give each arm's version floors. Prose that
belongs to no arm is the template ``templates/arms.md.tmpl`` beside this module. ``--check`` writes nothing
and exits 1 when docs/arms.md is not what this writes (``tests/test_arms_doc.py`` does the same).
"""

from __future__ import annotations

import argparse
import importlib.resources
import re
import sys
import tomllib
from pathlib import Path
from string import Template
from typing import Iterable, Sequence

from pytest_ormbench.arms.notes import ArmNotes, all_notes
from pytest_ormbench.arms.registry import BUILTIN_ARMS, ArmEntry

#: the package whose ``notes/`` folder holds the built-in arms' notes
NOTES_PACKAGE = "pytest_ormbench.suites"
#: the ops in table order (the API and statements tables)
OPS = "ABCDEFGHIJK"


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _ordered(notes: Iterable[ArmNotes], entries: Sequence[ArmEntry]) -> list[ArmNotes]:
    """The notes that name registered arms, in the registry's order of their first arm."""
    index = {e.name: i for i, e in enumerate(entries)}
    found = [n for n in notes if any(a in index for a in n.arms)]
    return sorted(found, key=lambda n: min(index[a] for a in n.arms if a in index))


def extras(pyproject: Path) -> dict[str, list[str]]:
    """pyproject.toml's optional dependencies: extra -> requirements."""
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return dict(data["project"].get("optional-dependencies", {}))


def floors(entry: ArmEntry, extra_reqs: dict[str, list[str]]) -> str:
    """The requirements of an arm's extra, as the floors the arm is known to run on: ``django>=5.2``."""
    if not entry.extra:
        return "standard library"
    reqs = extra_reqs.get(entry.extra)
    if reqs is None:
        raise KeyError(f"arm {entry.name!r}: pyproject.toml has no extra {entry.extra!r}")
    return ", ".join(re.sub(r"\[[^]]*\]", "", r).replace(" ", "") for r in reqs)


def _overview(notes: list[ArmNotes], entries: Sequence[ArmEntry], extra_reqs: dict[str, list[str]]) -> str:
    rows = []
    for entry in entries:
        for n in notes:
            cells = n.doc.get("overview", {}).get(entry.name)
            if entry.name in n.arms and cells is not None:
                extra = f"`[{entry.extra}]`: " if entry.extra else ""
                rows.append(_row([f"`{entry.name}`", entry.label, extra + floors(entry, extra_reqs), *cells]))
    return "\n".join(rows)


def _rows(notes: list[ArmNotes], table: str) -> str:
    """The rows every arm gives a table (a list of rows, each a list of cells, under ``[doc]``)."""
    return "\n".join(_row(cells) for n in notes for cells in n.doc.get(table, []))


def _api(notes: list[ArmNotes], labels: dict[str, str]) -> str:
    cols = [n for n in notes if "api" in n.doc]
    for n in cols:
        if len(n.doc["api"]) != len(OPS):
            raise ValueError(f"notes {n.name!r}: [doc] api needs one cell per op {OPS}")
    lines = [_row(["op", *(labels[n.arms[0]] for n in cols)]), _row(["---"] * (len(cols) + 1))]
    lines += [_row([op, *(n.doc["api"][i] for n in cols)]) for i, op in enumerate(OPS)]
    return "\n".join(lines)


def _recorded(notes: list[ArmNotes], labels: dict[str, str]) -> str:
    blocks = []
    for n in notes:
        text = n.doc.get("recorded")
        if text is not None:
            title = ", ".join(labels[a] for a in n.arms if a in labels)
            blocks.append(f"**{title}**{text.rstrip()}")
    return "\n\n".join(blocks)


def render(root: Path, notes: Iterable[ArmNotes] | None = None, entries: Sequence[ArmEntry] = BUILTIN_ARMS) -> str:
    """The text of docs/arms.md (``root``: the checkout, for pyproject.toml)."""
    ordered = _ordered(all_notes(NOTES_PACKAGE) if notes is None else notes, entries)
    labels = {e.name: e.label for e in entries}
    tmpl = importlib.resources.files("pytest_ormbench.commands").joinpath("templates", "arms.md.tmpl")
    return Template(tmpl.read_text(encoding="utf-8")).substitute(
        overview=_overview(ordered, entries, extras(root / "pyproject.toml")),
        settings=_rows(ordered, "settings"),
        postgresql=_rows(ordered, "postgresql"),
        mysql=_rows(ordered, "mysql"),
        api=_api(ordered, labels),
        statements=_rows(ordered, "statements"),
        recorded=_recorded(ordered, labels),
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pytest_ormbench.commands.arms_doc",
                                description="Write docs/arms.md from the arms' notes, the registry and pyproject.toml.")
    p.add_argument("--root", default=".", help="the checkout (holds pyproject.toml and docs/; default: .)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if docs/arms.md is out of date")
    a = p.parse_args(argv)
    root = Path(a.root)
    path = root / "docs" / "arms.md"
    text = render(root)
    if a.check:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            print(f"{path} is out of date: python -m pytest_ormbench.commands.arms_doc --root {root}", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
