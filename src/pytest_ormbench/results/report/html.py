"""The report as one self-contained HTML page: ``ormbench report FILE... --html OUT.html``.

The page needs no network when it is read: its style, its script and its data are inline, and its charts are
SVG drawn by its own script (no library, no CDN). It is built from the loaded cells (``load.Runs``) and the
report's public functions, never from the Markdown: the figures are the same ones (``format.fmt_rate``, the
tables' geometric means and notes), kept as numbers so that the page can sort, filter and chart them.

- ``data(runs)``: the page's data, one JSON document: places (SQLite and each server reached directly), arms
  with their labels and colours, operations, models, and per (place, model, mode, table) group each arm's
  cell per operation (rows/s with the min–max of its rounds, instructions per row, statements per operation,
  its deviations) and its geometric mean, which arm leads each column (``best``: op letter or "gm" -> arm) and
  which columns are ``contested`` (the lead within the noise: bold nobody), both decided by the Markdown's own
  ``tables.leader`` over all the group's arms, and the group's notes as the Markdown tables write them;
- ``render_html(runs)``: the page (deterministic: the same JSON gives the same bytes); a busy run's line
  (``tables.busy_line``) in its header, as the Markdown's; the environment, the footnotes and the tables the page
  does not rebuild (ORM overhead, peak memory, the latency sweeps, the runs) are written as static HTML from the
  report's ``Table`` objects;
- ``write_html(runs, out)``.

The template, style and script are plain files in ``html/`` beside this module.
"""

from __future__ import annotations

import json
import math
import re
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

from pytest_ormbench.workload.spec import MODELS, OPS
from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.results.stats import geometric_mean
from pytest_ormbench.results.report import tables as T
from pytest_ormbench.results.report.charts import CONTROL_COLOUR, VARIANT_SUFFIXES
from pytest_ormbench.results.report.format import db_title, fmt_count, fmt_rate, fmt_statements
from pytest_ormbench.results.report.load import LoadedCell, Runs
from pytest_ormbench.results.report.table import Table

__all__ = ["data", "leads", "render_html", "write_html"]

#: matplotlib's tab10 without its grey (the control arms' colour), as the PNG/SVG charts colour the families
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf"]
ASSETS = "html"
#: a cell's fields, in the order the page's data lists them (the script reads them back into objects)
CELL_FIELDS = ("arm", "op", "rate", "text", "lo", "hi", "rounds", "instr", "instrText", "stmts", "stmtsTotal", "dev",
               "src")


def _num(value: float | None) -> float | None:
    """A figure for sorting and charting: six significant digits are plenty, and keep the page small."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.6g}")


def _spread(cell: LoadedCell) -> tuple[float | None, float | None]:
    """Rows/s of the slowest and the fastest round (the figure is the median round's)."""
    if not cell.timed or not cell.seconds:
        return None, None
    rows = cell.record.rows
    slow, fast = max(cell.seconds), min(cell.seconds)
    return (rows / slow if slow > 0 else None), (rows / fast if fast > 0 else None)


def _arms(runs: Runs) -> list[dict[str, Any]]:
    names = T.labels(runs)
    families: dict[str, int] = {}
    out = []
    for arm in T.all_arm_order(runs):
        base = next((arm[: -len(sfx)] for sfx in VARIANT_SUFFIXES if arm.endswith(sfx)), arm)
        control = arm in CONTROL_ARMS
        if control:
            colour, variant = CONTROL_COLOUR, bool(T.ASYNC_CONTROLS.get(arm))
        else:
            colour, variant = PALETTE[families.setdefault(base, len(families)) % len(PALETTE)], base != arm
        out.append({"id": arm, "label": names[arm], "control": control, "colour": colour, "hatched": variant})
    return out


class _Notes:
    """Note texts once each (many groups share a legend); a group names them by index."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def refs(self, texts: Sequence[str]) -> list[int]:
        out = []
        for text in texts:
            if text not in self._index:
                self._index[text] = len(self.texts)
                self.texts.append(text)
            if self._index[text] not in out:
                out.append(self._index[text])
        return out


#: the page's gloss of its leaders: the filters do not move them (the rule's own words are ``T.CONTESTED_NOTE``)
LEADERS_NOTE = ("Leaders are decided over all arms of the run, whichever arms the filter shows: with the leading arm "
                "unchecked, its column bolds nobody.")
#: the column id of a group's geometric mean (the others are operation letters)
MEAN_COLUMN = "gm"


def leads(runs: Runs, model: str, mode: str, table: str) -> tuple[dict[str, str], list[str]]:
    """Per column of a group's rows/s table (each operation's letter, and ``MEAN_COLUMN``): the arm the Markdown's
    Best names (``tables.leader`` among the arms other than the controls, the figures ``tables.figure_grid`` and
    ``tables.object_means`` give), and the columns whose Best reads contested. As ``tables.ops_table``: with fewer
    than two such arms there is no Best, so no column leads and none is contested."""
    grid = T.figure_grid(runs, model, mode, table)
    contenders = {arm: ops for arm, ops in grid.items() if arm not in CONTROL_ARMS}
    if len(contenders) < 2:
        return {}, []
    columns: dict[str, dict[str, T.Figure]] = {
        op.letter: {arm: ops[op.letter] for arm, ops in contenders.items() if op.letter in ops} for op in OPS}
    columns[MEAN_COLUMN] = T.object_means(contenders)
    best: dict[str, str] = {}
    contested: list[str] = []
    for column, figs in columns.items():
        arm, clear = T.leader(runs, figs)
        if arm is not None and clear:
            best[column] = arm
        elif arm is not None:
            contested.append(column)
    return best, contested


def _group(runs: Runs, place: str, model: str, mode: str, table: str, arm_index: dict[str, int],
           notes: _Notes, deviations: _Notes, sources: dict[str, int]) -> dict[str, Any]:
    """One group's cells, geometric means and notes."""
    shown = [(key, cell) for key, cell in T.shown_cells(runs) if (key.model, key.mode, key.table) == (model, mode, table)]
    # a deviation every cell of an arm in the group records is the arm's (marked on its name), the rest the cell's
    texts: dict[str, list[set[str]]] = {}
    for key, cell in shown:
        texts.setdefault(key.arm, []).append(set(cell.record.deviations.values()))
    arm_wide = {arm: set.intersection(*sets) for arm, sets in texts.items()}
    cells = []
    for key, cell in shown:
        lo, hi = _spread(cell)
        counts, why = cell.statements_per_op, cell.statements_note
        instr = cell.instructions_per_row
        cells.append({
            "arm": arm_index[key.arm], "op": key.op,
            "rate": _num(cell.rows_per_s), "text": fmt_rate(cell.rows_per_s) if cell.rows_per_s is not None else None,
            "lo": _num(lo), "hi": _num(hi), "rounds": len(cell.seconds) if cell.timed else 0,
            "instr": _num(instr), "instrText": fmt_count(instr) if instr is not None else None,
            "stmts": fmt_statements(counts) if counts is not None else ("n/a" if why else None),
            "stmtsTotal": sum(counts.values()) if counts is not None else None,
            "dev": deviations.refs(sorted(set(cell.record.deviations.values()) - arm_wide[key.arm])),
            "src": sources[cell.source],
        })
    cells.sort(key=lambda c: (c["arm"], c["op"]))
    cells = [[c[f] for f in CELL_FIELDS] for c in cells]  # rows of a table, not objects: a third of the bytes
    rates = T.figures(runs, model, mode, table)
    lows = T.per_arm(runs, model, mode, table, lambda c: _spread(c)[0])
    highs = T.per_arm(runs, model, mode, table, lambda c: _spread(c)[1])
    gm = T.geomeans(rates)
    gm_instr = T.geomeans(T.instruction_figures(runs, model, mode, table))
    most = max((n for _, n in gm.values()), default=0)
    means = []
    for arm in sorted(set(gm) | set(gm_instr), key=arm_index.__getitem__):
        value, n = gm.get(arm, (None, 0))
        ops = [op for op in rates.get(arm, {}) if op in T.OBJECT_OPS]  # the ops the mean is over
        instr = gm_instr.get(arm, (None, 0))[0]
        means.append({
            "arm": arm_index[arm], "rate": _num(value), "text": fmt_rate(value) if value is not None else None,
            "lo": _num(geometric_mean([lows[arm][op] for op in ops if op in lows.get(arm, {})])) if value else None,
            "hi": _num(geometric_mean([highs[arm][op] for op in ops if op in highs.get(arm, {})])) if value else None,
            "n": n, "partial": value is not None and n < most,
            "instr": _num(instr), "instrText": fmt_count(instr) if instr is not None else None,
        })
    below: list[str] = []
    if (model, mode, table) in T.timed_groups(runs):
        below += T.detail(runs, model, mode, table).notes
    for extra in (T.instructions(runs, model, mode, table), T.statements(runs, model, mode, table)):
        if extra:
            below += extra.notes
    best, contested = leads(runs, model, mode, table)
    return {"place": place, "model": model, "mode": mode, "table": table, "cells": cells, "means": means,
            "best": {column: arm_index[arm] for column, arm in best.items()}, "contested": contested,
            "armDev": [[arm_index[arm], deviations.refs(sorted(arm_wide[arm]))]
                       for arm in sorted(arm_wide, key=arm_index.__getitem__) if arm_wide[arm]],
            "notes": notes.refs(below)}


def data(runs: Runs) -> dict[str, Any]:
    """Everything the page's script draws, as one JSON-able document."""
    places = [p for p in runs.places() if "@" not in p]  # a latency sweep's cells are the sweep tables' (static)
    arms = _arms(runs)
    arm_index = {a["id"]: i for i, a in enumerate(arms)}
    notes, deviations = _Notes(), _Notes()
    sources = {s: i for i, s in enumerate(runs.sources)}
    for cell in runs.cells.values():  # a record superseded or folded in names a file not in sources only if odd
        sources.setdefault(cell.source, len(sources))
    groups = []
    for place in places:
        scoped = runs.at(place)
        for model, mode, table in T.groups(scoped):
            groups.append(_group(scoped, place, model, mode, table, arm_index, notes, deviations, sources))
    return {
        "places": [{"id": p, "title": db_title(p)} for p in places],
        "arms": arms,
        "ops": [{"letter": op.letter, "title": op.title, "object": op.object_op} for op in OPS],
        "models": [{"id": m, "test": spec.test, "title": spec.title} for m, spec in MODELS.items()],
        "cellFields": list(CELL_FIELDS),
        "groups": groups,
        "notes": notes.texts,
        "deviations": deviations.texts,
        "sources": list(sources),
    }


def _table_html(t: Table, db: str, kind: str) -> str:
    """A report Table as a static, sortable HTML table (figures right-aligned, as in the Markdown)."""
    head = "".join(f'<th scope="col" class="{"text" if i == 0 or i in t.text_columns else "num"}">{escape(h)}</th>'
                   for i, h in enumerate(t.header))
    body = "".join("<tr>" + "".join(f'<td class="{"text" if i == 0 or i in t.text_columns else "num"}">'
                                    f"{escape(str(c))}</td>" for i, c in enumerate(row)) + "</tr>"
                   for row in t.rows)
    notes = "".join(f"<li>{escape(n)}</li>" for n in t.notes)
    anchor = escape(t.anchor or kind, quote=True)
    return (f'<section class="static-table" id="{anchor}" data-db="{escape(db, quote=True)}" data-kind="{kind}">'
            f"<h3>{escape(t.title)}</h3><div class=\"scroll\"><table class=\"sortable\"><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>" + (f'<ul class="notes">{notes}</ul>' if notes else "")
            + "</section>")


def _static_tables(runs: Runs) -> str:
    """The tables the page shows as the report builds them: ORM overhead, peak memory, latency sweeps, Test 4's
    tables, runs."""
    parts = []
    several = len(runs.dbs()) > 1  # the titles name the database
    for db in runs.dbs():
        everything = runs.at(db)
        scoped = everything.of_models(MODELS)
        suffix = f" — {db_title(db)}" if several else ""
        if scoped.cells:
            ov = T.overhead(scoped)
            if ov:
                ov.title += suffix
                parts.append(_table_html(ov, db, "overhead"))
            for mem in T.memory(scoped):
                mem.title += suffix
                parts.append(_table_html(mem, db, "memory"))
        for sweep in T.latency(runs, db):
            sweep.title += suffix
            parts.append(_table_html(sweep, db, "latency"))
        # Test 4 (the relational workload) as the report builds it: its own section, apart from Tests 1-3
        for t in [*T.relational_tables(everything), *T.latency_strategies(runs, db)]:
            t.title += suffix
            parts.append(_table_html(t, db, "relational"))
    parts.append(_table_html(T.runs_table(runs), "", "runs"))
    return "\n".join(parts)


def _asset(name: str) -> str:
    return resources.files("pytest_ormbench.results.report").joinpath(ASSETS, name).read_text(encoding="utf-8")


def _script_json(doc: Any) -> str:
    """JSON safe inside a <script> element: no "</", no "<!--", no line separators that end a JS string."""
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _contested_legend() -> str:
    """The Markdown's contested note word for word (its floor is each table's own note), its first word drawn as the
    marker the columns carry."""
    note = T.CONTESTED_NOTE.format(floor="")
    assert note.startswith(T.CONTESTED)
    return f'<span class="contested-mark">{escape(T.CONTESTED)}</span>{escape(note[len(T.CONTESTED):])}'


def render_html(runs: Runs) -> str:
    """The whole page; the same runs give the same bytes."""
    env = "".join(f"<li>{escape(line)}</li>" for line in T.environment(runs))
    foot = "".join(f'<li id="fn-{i}">{escape(n)}</li>' for i, n in enumerate(T.footnotes(runs)))
    untimed = not any(c.timed for c in runs.cells.values())
    lead = (T.UNTIMED if untimed else
            "Figures are rows per second (higher is better): rows one round handled over the median round time; "
            "the small figures under each are the slowest and the fastest round (the bars' whiskers). Every figure "
            "passed verification.")
    busy = T.busy_line(runs)  # the Markdown header's quoted line, word for word
    fill = {"STYLE": _asset("style.css"), "SCRIPT": _asset("app.js"), "DATA": _script_json(data(runs)),
            "LEAD": escape(lead), "BUSY": f'<p class="busy" id="busy"><strong>{escape(busy)}</strong></p>' if busy
            else "",
            "CONTESTED": _contested_legend(), "LEADERS": escape(LEADERS_NOTE),
            "ENVIRONMENT": env, "TABLES": _static_tables(runs), "FOOTNOTES": foot or "<li>None.</li>"}
    # one pass: nothing filled in is searched for markers again
    return re.sub(r"\{\{(%s)\}\}" % "|".join(fill), lambda m: fill[m.group(1)], _asset("page.html"))


def write_html(runs: Runs, out: Path) -> str:
    text = render_html(runs)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return text
