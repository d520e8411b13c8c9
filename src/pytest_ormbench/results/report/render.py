"""Putting the tables together as Markdown (default) or plain text for the terminal."""

from __future__ import annotations

import textwrap
from collections import defaultdict
from typing import Iterable, Sequence

from pytest_ormbench.workload.cells import DEFAULT_DB, format_rtt
from pytest_ormbench.workload.spec import MODELS
from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.results.report import tables as T
from pytest_ormbench.results.report.format import db_title
from pytest_ormbench.results.report.load import Runs
from pytest_ormbench.results.report.table import Table, markdown_table, text_table

__all__ = ["database_tables", "markdown_table", "render", "render_not_run", "render_summary", "sections",
           "text_table"]


def database_tables(runs: Runs) -> list[Table]:
    """One database's tables, in order: Tests 1-3's (each group's instructions and statements right below its
    rows/s), then Test 4's (the relational workload), which stand apart."""
    relational = T.relational_tables(runs)
    runs = runs.of_models(MODELS)
    out: list[Table] = []
    for table in ("default", "large"):
        t = T.overall(runs, table)
        if t:
            out.append(t)
    timed = set(T.timed_groups(runs))
    for g in T.groups(runs):
        if g in timed:
            out.append(T.detail(runs, *g))
        for extra in (T.instructions(runs, *g), T.statements(runs, *g)):
            if extra:
                out.append(extra)
    ov = T.overhead(runs)
    if ov:
        out.append(ov)
    out.extend(T.memory(runs))
    return out + relational


def _in_section(tables: list[Table], section: str, intro: str, suffix: str = "", anchor: str = "") -> list[Table]:
    """The tables under one section heading; a server's tables also carry its name in their titles and anchors
    (so that GitHub's heading anchors stay apart from SQLite's)."""
    for t in tables:
        t.section = section
        t.title += suffix
        t.anchor += anchor
    if tables:
        tables[0].intro = intro
    return tables


def _server_intro(runs: Runs, db: str) -> str:
    names = T.labels(runs)
    controls = [a for a, on in CONTROL_ARMS.items() if on == db]
    if not controls:
        return f"The cells that stored in {db_title(db)}, reached directly."
    sync = [T.control_label(names, c) for c in controls if not T.ASYNC_CONTROLS.get(c, False)]
    asyn = [T.control_label(names, c) for c in controls if T.ASYNC_CONTROLS.get(c, False)]
    how = "; ".join(p for p in (f"sync arms are priced against {' and '.join(sync)}" if sync else "",
                                f"async arms against {' and '.join(asyn)}" if asyn else "") if p)
    return (f"The cells that stored in {db_title(db)}, reached directly, with the arms that ran there. Its control "
            f"arms are hand-written SQL on the raw drivers, the yardsticks of ORM overhead here: {how}. Best leaves "
            "them out.")


def sections(runs: Runs) -> list[Table]:
    """The report's tables in order: SQLite's, then each server database's, its latency sweep, then the runs;
    when the shards' wall times were normalised, every table of wall-time figures says so in its title."""
    tables = _sections(runs)
    if runs.normalised:
        for t in tables:
            if not t.anchor.startswith(("statements", "instructions", "runs", "relational-statements",
                                        "relational-instructions")):
                t.title += " — normalised by each shard's control"
    return tables


def _sections(runs: Runs) -> list[Table]:
    """The report's tables in order: SQLite's, then each server database's, its latency sweep, then the runs.

    A report of SQLite cells only has no section headings (and is what it was before the database axis)."""
    dbs = runs.dbs()
    servers = [db for db in dbs if db != DEFAULT_DB]
    if not servers:
        return [*database_tables(runs), T.runs_table(runs)]
    out: list[Table] = []
    if DEFAULT_DB in dbs:
        out += _in_section(database_tables(runs.at(DEFAULT_DB)), "SQLite",
                           "The cells that stored in SQLite (ObjectBox: in its own store). ORM overhead is priced "
                           "against hand-written SQL on the standard library's sqlite3, the control arm.")
    for db in servers:
        title = db_title(db)
        out += _in_section(database_tables(runs.at(db)), title, _server_intro(runs, db), f" — {title}", f"-{db}")
        sweep = T.latency(runs.of_models(MODELS), db) + T.latency_strategies(runs, db)
        if sweep:
            rtts = sorted({c.record.key.rtt_ms for c in runs.at(db, sweep=True).cells.values()})
            out += _in_section(sweep, f"{title}: latency sweep",
                               f"The same cells with every round trip to {title} held by a latency proxy for "
                               f"{', '.join(format_rtt(r) for r in rtts)} ms (--ormbench-rtt): what each arm's "
                               "round trips cost as the server moves away. One table per operation.",
                               f" — {title}")
    return out + _in_section([T.runs_table(runs)], "Sources and notes", "")


#: a terminal's width: the text layout is never wider (the Markdown keeps every table whole)
TEXT_WIDTH = 100


def _text_body(body: Sequence[Table], sep: str = "\n") -> list[str]:
    """The tables as text, each section opened by an "== name ==" line (and its intro), TEXT_WIDTH wide."""
    out, section = [], ""
    for t in body:
        if t.section and t.section != section:
            section = t.section
            out.append("\n".join([f"== {section} ==", *([textwrap.fill(t.intro, TEXT_WIDTH)] if t.intro else [])])
                       + sep)
        out.append(text_table(t, TEXT_WIDTH) + sep)
    return out


def _wrapped(lines: Iterable[str], first: str = "", rest: str = "  ") -> list[str]:
    """Lines folded to TEXT_WIDTH, each started by ``first`` and continued indented by ``rest``."""
    return [w for line in lines for w in textwrap.wrap(line, TEXT_WIDTH, initial_indent=first, subsequent_indent=rest,
                                                       break_on_hyphens=False, break_long_words=False) or [""]]


def _untimed(runs: Runs) -> bool:
    """Whether no cell has a rows/s figure (every one ran under callgrind): the report says so in one line."""
    return not any(c.timed for c in runs.cells.values())


def render(runs: Runs, fmt: str = "markdown", charts: Sequence[str] = ()) -> str:
    """The whole report. ``charts`` are image paths (relative to the report) to link in Markdown."""
    body = sections(runs)
    env = T.environment(runs)
    notes = T.footnotes(runs)
    busy = T.busy_line(runs)
    if fmt == "text":
        parts = ["pytest-ormbench report", *_wrapped(env), ""]
        if busy:
            parts += [*_wrapped([busy]), ""]
        if _untimed(runs):
            parts += [*_wrapped([T.UNTIMED]), ""]
        parts += _text_body(body)
        if notes:
            parts += ["Footnotes:", *_wrapped(notes, "- ")]
        return "\n".join(parts).rstrip() + "\n"
    parts = ["# pytest-ormbench results", "", *(f"- {line}" for line in env), ""]
    if busy:
        parts += [f"> **{busy}**", ""]
    if _untimed(runs):
        parts += [T.UNTIMED + " Every figure passed verification.", ""]
    else:
        extra = any(t.anchor.startswith(("instructions-", "statements-")) for t in body)
        parts += ["Figures are rows per second (higher is better): rows one round handled over the median round "
                  "time. Every figure passed verification."
                  + (" Below a group's rows/s, where the files have them: its instructions per row (lower is "
                     "better) and its statements per operation." if extra else ""), ""]
    section = ""
    for t in body:
        if t.section and t.section != section:
            section = t.section
            parts += [f"## {section}", ""] + ([t.intro, ""] if t.intro else [])
        parts += [markdown_table(t), ""]
    if charts:
        parts += ["### Charts", ""] + [f"![{c}]({c})" for c in charts] + [""]
    if notes:
        parts += ["### Footnotes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(parts).rstrip() + "\n"


def render_summary(runs: Runs) -> str:
    """The terminal's end-of-run summary: the report's figures as text, without the run's bookkeeping.

    The same tables as the report (one builder, one formatter, one renderer), less the environment,
    the runs table, the statements tables and the footnotes, which the report and the JSON keep. An
    instructions run has no rows/s: its summary is one line saying so and the instructions tables.
    """
    body = [t for t in sections(runs) if t.anchor != "runs" and not t.anchor.startswith("statements-")]
    return "\n\n".join((["\n".join(_wrapped([T.UNTIMED]))] if _untimed(runs) else []) + _text_body(body, sep=""))


def render_not_run(entries: Iterable[tuple[str, str, str]], width: int = 100) -> str:
    """Cells that produced no number, grouped by reason: (cell id, outcome, reason)."""
    by_reason: dict[tuple[str, str], list[str]] = defaultdict(list)
    for cell_id, outcome, reason in entries:
        by_reason[(outcome, reason)].append(cell_id)
    lines = []
    for (outcome, reason), ids in sorted(by_reason.items()):
        shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        # each reason once, folded to fit a 100-column terminal (the JSON and the report keep it whole)
        lines.append(textwrap.fill(f"{outcome}: {reason}", width, subsequent_indent="    "))
        lines.append(textwrap.fill(f"{len(ids)} cell(s): {shown}", width, initial_indent="  ",
                                   subsequent_indent="    ", break_on_hyphens=False))
    return "\n".join(lines)
