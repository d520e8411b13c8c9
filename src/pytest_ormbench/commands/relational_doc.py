"""docs/relational.md, written from the Test 4 declarations of the arms (``bench_suites/relational/<arm>.toml``).

    python -m pytest_ormbench.commands.relational_doc [--root .] [--check]

Per arm and shape: the loading strategies it runs (with their kind) and the reason for each kind it does not;
the shapes it does not run, or writes with a lower-level API than its ORM's own; who deletes in R18. The
declarations are what the plugin plans cells from and what the arm classes read, so the page cannot drift from
the code: ``--check`` writes nothing and exits 1 when docs/relational.md is not what this writes
(``tests/test_relational.py`` does the same).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from pytest_ormbench.arms.registry import BUILTIN_ARMS, ArmEntry
from pytest_ormbench.workload.relational import DASHBOARD_STRATEGIES, SHAPES, STRATEGY_KINDS

HEADER = """# Test 4: what each arm runs

Written by `python -m pytest_ormbench.commands.relational_doc` from each arm's declarations
(`bench_suites/relational/<arm>.toml`), which are also what the plugin plans Test 4's cells from: edit those,
then run the command (`tests/test_relational.py` fails while this page is out of date). The shapes and the
strategy kinds are defined in [operations.md](operations.md#test-4-the-relational-workload).

Kinds: """ + "; ".join(f"**{k}**: {v}" for k, v in {**STRATEGY_KINDS, **DASHBOARD_STRATEGIES}.items()) + "."


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _entries() -> list[ArmEntry]:
    return [e for e in BUILTIN_ARMS if e.relational]


def render() -> str:
    """The page."""
    entries = _entries()
    strategy_shapes = [s for s in SHAPES if s.strategies]
    lines = [HEADER, "", "## Strategies per shape", "",
             "Each cell: the strategies the arm runs, as its ORM names them, with their kind; — : none (see the reasons "
             "below).", "",
             "| Arm | " + " | ".join(f"{s.code} {s.name}" for s in strategy_shapes) + " |",
             "| --- | " + " | ".join("---" for _ in strategy_shapes) + " |"]
    for e in entries:
        d = e.relational_declarations()
        row = []
        for s in strategy_shapes:
            declared = d.strategies.get(s.name, {})
            row.append(", ".join(f"{name} ({kind})" if name != kind else name for name, kind in declared.items())
                       or "—")
        lines.append(f"| {e.label} (`{e.name}`) | " + " | ".join(_cell(c) for c in row) + " |")
    lines += ["", "## Not run, and why", "",
              "Every strategy kind an arm lacks on a shape, and every shape it does not run, with the reason its "
              "cells report.", "", "| Arm | Shape or strategy | Why not |", "| --- | --- | --- |"]
    for e in entries:
        for key, why in e.relational_declarations().strategy_notes.items():
            lines.append(f"| {e.label} | `{key}` | {_cell(why)} |")
    lines += ["", "## Written another way", "",
              "Shapes an arm writes with a lower-level API than its ORM's own (recorded with each cell as a "
              "deviation), and who deletes the children in R18 `delete_cascade` (`client`: the arm or its ORM "
              "issues the deletes; `database`: `ON DELETE CASCADE` in the schema the arm created).", "",
              "| Arm | R18 cascade | Shape notes |", "| --- | --- | --- |"]
    for e in entries:
        d = e.relational_declarations()
        notes = "; ".join(f"`{k}`: {v}" for k, v in d.shape_notes.items()) or "—"
        lines.append(f"| {e.label} | {d.cascade} | {_cell(notes)} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_ormbench.commands.relational_doc",
                                     description="write docs/relational.md from the arms' Test 4 declarations")
    parser.add_argument("--root", default=".", help="the repository (default: here)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the page is out of date")
    args = parser.parse_args(argv)
    path = Path(args.root) / "docs" / "relational.md"
    text = render()
    if args.check:
        current = path.read_text(encoding="utf-8") if path.is_file() else ""
        if current != text:
            print(f"{path} is out of date: python -m pytest_ormbench.commands.relational_doc", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
