"""A table as data, and its two layouts: GitHub Markdown and plain text (the report's and the comparison's)."""

from __future__ import annotations

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


def text_table(t: Table) -> str:
    widths = [max(len(str(r[i])) for r in [t.header, *t.rows]) for i in range(len(t.header))]

    def line(r: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) if i == 0 or i in t.text_columns else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    out = [t.title, line(t.header), "  ".join("-" * w for w in widths), *(line(r) for r in t.rows)]
    out.extend(t.notes)
    return "\n".join(out)
