"""A table as data, and its two layouts: GitHub Markdown and plain text (the report's and the comparison's)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Sequence

from pytest_ormbench.results.report.format import md_cell


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    anchor: str = ""
    #: columns of text, aligned left (the first always is; the others default to figures, aligned right)
    text_columns: tuple[int, ...] = ()
    #: the report section the table opens or continues (a heading of its own: "PostgreSQL"); "" none
    section: str = ""
    #: what the renderer writes below the section's heading, when this table opens the section
    intro: str = ""


def markdown_table(t: Table, heading: str = "###") -> str:
    """A GitHub table: text columns aligned left, figures right; ``heading=""`` leaves the title out."""
    lines = [f"{heading} {t.title}", ""] if heading else []
    lines.append("| " + " | ".join(md_cell(h) for h in t.header) + " |")
    lines.append("| " + " | ".join("---" if i == 0 or i in t.text_columns else "---:"
                                   for i in range(len(t.header))) + " |")
    for row in t.rows:
        lines.append("| " + " | ".join(md_cell(c) for c in row) + " |")
    if t.notes:
        lines.append("")
        lines.extend(f"{n}  " if i < len(t.notes) - 1 else n for i, n in enumerate(t.notes))
    return "\n".join(lines)


def text_table(t: Table, width: int | None = None) -> str:
    """Aligned plain text. With ``width`` (a terminal's columns) nothing is wider: the title and notes are
    folded, and a table too wide for it is cut into column blocks, each led by the first column (the
    Operation or Arm), and a text column still too wide is wrapped within its cell."""
    widths = [max(len(str(r[i])) for r in [t.header, *t.rows]) for i in range(len(t.header))]
    if width is None or sum(widths) + 2 * (len(widths) - 1) <= width:
        out = [*_fold([t.title], width), _block(t, list(range(len(t.header))), widths)]
        return "\n".join([*out, *_fold(t.notes, width)])
    # a first column wider than half the width (a long file path in the Runs table) wraps within its cell, so
    # that every block keeps room for at least one more column
    widths[0] = min(widths[0], max(width // 2, 12))
    room = max(width - widths[0] - 2, 12)
    blocks: list[list[int]] = []
    for i in range(1, len(t.header)):
        need = min(widths[i], room) + 2
        if blocks and sum(min(widths[j], room) + 2 for j in blocks[-1]) + need <= room + 2:
            blocks[-1].append(i)
        else:
            blocks.append([i])
    widths = [widths[0], *(min(w, room) for w in widths[1:])]
    out = _fold([t.title], width)
    for n, cols in enumerate(blocks):
        if n:
            out.append("")
        out.append(_block(t, [0, *cols], widths))
    return "\n".join([*out, *_fold(t.notes, width)])


def _fold(lines: Sequence[str], width: int | None) -> list[str]:
    if width is None:
        return list(lines)
    return [folded for line in lines for folded in (textwrap.wrap(line, width, subsequent_indent="  ",
                                                                  break_on_hyphens=False) or [""])]


def _block(t: Table, cols: list[int], widths: list[int]) -> str:
    """The table's header, rule and rows in the columns ``cols``; a cell longer than its width wraps."""

    def lines(r: Sequence[str]) -> list[str]:
        cells = [textwrap.wrap(str(r[i]), max(widths[i], 1), break_on_hyphens=False) or [""] if len(str(r[i])) > widths[i]
                 else [str(r[i])] for i in cols]
        height = max(len(c) for c in cells)
        return ["  ".join((c[k] if k < len(c) else "").ljust(widths[i]) if i == 0 or i in t.text_columns
                          else (c[k] if k < len(c) else "").rjust(widths[i])
                          for i, c in zip(cols, cells)).rstrip() for k in range(height)]

    out = [*lines(t.header), "  ".join("-" * widths[i] for i in cols)]
    for r in t.rows:
        out += lines(r)
    return "\n".join(out)
