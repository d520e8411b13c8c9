"""Comparing two runs cell by cell: did a change make anything slower than the noise allows?

A cell regresses only when three guards agree:

- the rounds differ *significantly*: a two-sided Mann–Whitney U test on the round times, exact for
  small samples without ties, otherwise the normal approximation with tie and continuity correction;
- the median round time grew by at least the cell's *threshold* (default 10 %);
- the change is larger than the *floor*: what the machine itself moved by between the two runs.

Drift correction: whole runs on a shared machine differ in speed (here by up to ×1.45 between two
runs of the same code), and fifteen rounds per side make such a shift "significant" in every cell.
The raw sqlite3 control arm runs in the same rounds as the ORMs and its code does not change, so
its cells tell how much the machine moved: the geometric mean of its cells' median ratios (per mode,
table and place) is divided out of the new run's times before anything else, and the largest deviation
of a control cell from that shift is the comparison's floor (how unevenly the machine moved). Each
database has its own control arms (``registry.CONTROL_ARMS``: sqlite3 on SQLite; psycopg and asyncpg
together on PostgreSQL, each latency-sweep RTT a place of its own), so a server's cells are corrected
by what the server's controls saw. A place without enough control cells of its own takes the sqlite3
control's correction of the same mode and table (what every cell had before the database axis); when
that is missing too, nothing is corrected and the floor is the larger of the two runs' recorded probe
floors.

Many cells, one family: a comparison tests every cell of the matrix at once, and at alpha 0.05 about
one cell in twenty is "significant" by chance. A pull request's check fails on any flagged cell, so
what must stay below alpha is the chance of *any* false alarm in the whole comparison: the p-values
are adjusted by Holm's step-down method (family-wise error at most alpha, under any dependence
between cells, and never less powerful than plain Bonferroni). ``correction="none"`` tests each
cell at alpha instead.

The price of exactness: with few rounds the smallest attainable p-value is large (2/20 = 0.1 for 3
against 3 rounds; 2/252 = 0.0079 for 5 against 5, which Holm over 44 cells needs below 0.0011), so
such cells can never be flagged; a warning says so and names the rounds that would do.

Judging by instructions (``measure="instructions"``, runs made with ``--ormbench-instructions``): an
instruction count does not depend on how busy the machine is, and the same code on the same data
repeats it to within a tenth of a per cent. So there is nothing to test for significance and no drift
to divide out: the verdict is the ratio of the median counts against the cell's threshold (2 % by
default, not 10 %), with the counts' own repeatability as the floor.

Statements per op are counted exactly, and the same code on the same data sends the same statements:
whichever measure is judged, any difference in a cell's counts is reported, kind by kind, and more
statements in total fail the comparison like a regression (an N+1 query shows at once).

Why Mann–Whitney: ``results.stats``, where the test and Holm's adjustment are.

The package, one concern a module: ``baseline`` (the two sides: a file, a run saved with
``--benchmark-save``, the live session), ``thresholds`` (the measure judged, per-cell thresholds),
``drift`` (the control arms' correction), ``judge`` (the verdicts: ``compare`` and its ``Comparison``),
``checks`` (what stops a comparison, and its warnings), ``model`` (a cell's verdict, a statement change,
``CompareError``) and ``render`` (text and Markdown). Every name the plugin, the commands and the tests use
is re-exported here: ``from pytest_ormbench.results.compare import compare, render_text``.

Imports no ORM and no pytest: the plugin and the ``ormbench compare`` command both call it.
"""

from __future__ import annotations

from pytest_ormbench.results.stats import EXACT_LIMIT, holm, mann_whitney, rounds_needed, smallest_p, spread
from pytest_ormbench.results.compare.model import (CATEGORIES, GONE, IMPROVEMENT, NEW, NOISE, REGRESSION, UNCHANGED,
                                                   CellResult, CompareError, StatementChange)
from pytest_ormbench.results.compare.thresholds import (DEFAULT_INSTRUCTIONS_THRESHOLD_PCT, DEFAULT_THRESHOLD_PCT,
                                                        Thresholds, check_measure, default_threshold_pct)
from pytest_ormbench.results.compare.baseline import Side, load_side, resolve_spec
from pytest_ormbench.results.compare.drift import (DRIFT_MODES, MIN_CONTROL_CELLS, Drift, control_drift, controls_of,
                                                   drift_for)
from pytest_ormbench.results.compare.checks import MIN_ROUNDS
from pytest_ormbench.results.compare.judge import (CORRECTIONS, DEFAULT_ALPHA, INSTRUCTIONS_FLOOR, Comparison,
                                                   classify, compare, statement_changes)
from pytest_ormbench.results.compare.render import (HEADER, INSTRUCTIONS_HEADER, STATEMENTS_HEADER, render_markdown,
                                                    render_text)

__all__ = [
    "CATEGORIES", "CORRECTIONS", "DEFAULT_ALPHA", "DEFAULT_INSTRUCTIONS_THRESHOLD_PCT", "DEFAULT_THRESHOLD_PCT",
    "DRIFT_MODES", "EXACT_LIMIT", "GONE", "HEADER", "IMPROVEMENT", "INSTRUCTIONS_FLOOR", "INSTRUCTIONS_HEADER",
    "MIN_CONTROL_CELLS", "MIN_ROUNDS", "NEW", "NOISE", "REGRESSION", "STATEMENTS_HEADER", "UNCHANGED", "CellResult",
    "CompareError", "Comparison", "Drift", "Side", "StatementChange", "Thresholds", "check_measure", "classify",
    "compare", "control_drift", "controls_of", "default_threshold_pct", "drift_for", "holm", "load_side",
    "mann_whitney", "render_markdown", "render_text", "resolve_spec", "rounds_needed", "smallest_p", "spread",
    "statement_changes",
]
