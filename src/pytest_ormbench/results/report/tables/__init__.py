"""The report's tables as data, one module per kind: ``rates`` (overall, detail), ``instructions``,
``statements``, ``overhead``, ``memory``, ``latency`` (the sweep), ``provenance`` (footnotes, environment,
runs); ``scope`` is what they share (which cells one database's tables show, the arms' order, labels and
yardsticks). Figures are formatted by ``report.format``; a table is a ``report.table.Table``.

Everything is re-exported here, so ``from pytest_ormbench.results.report import tables as T`` reads any of it.
"""

from __future__ import annotations

from pytest_ormbench.workload.spec import OPS_BY_LETTER  # noqa: F401  (scripts under results/ read it as T.OPS_BY_LETTER)
from pytest_ormbench.results.report.format import (DB_TITLES, KIND_LETTERS, NO_FIGURE, db_title, fmt_count,  # noqa: F401
                                                   fmt_rate, fmt_ratio, fmt_spread, fmt_statements, machine_text)
from pytest_ormbench.results.report.table import Table  # noqa: F401
from pytest_ormbench.results.report.tables.scope import (ASYNC_CONTROLS, OBJECT_OPS, all_arm_order,  # noqa: F401
                                                         arm_order, control_arms, control_label, controls_named,
                                                         db_of, figures, geomeans, groups, instruction_figures,
                                                         is_async, labels, per_arm, present_controls, scoped,
                                                         shown_cells, timed_groups, whole, yardstick)
from pytest_ormbench.results.report.tables.noise import (BUSY_ADVICE, CONTESTED, Figure, busy_line,  # noqa: F401
                                                         busy_runs, figure_grid, instructions_figure,
                                                         leader, mean_figure, object_means, rate_figure, stands)
from pytest_ormbench.results.report.tables.rates import (CONTESTED_NOTE, OLD_DISCIPLINE, SPREAD_NOTE,  # noqa: F401
                                                         UNTIMED, detail, old_discipline, ops_table, overall)
from pytest_ormbench.results.report.tables.instructions import (DISAGREE_INSTRUCTIONS_MARGIN,  # noqa: F401
                                                                DISAGREE_MARGIN, DISAGREE_PAIRS, disagreements,
                                                                instructions)
from pytest_ormbench.results.report.tables.statements import STATEMENTS_FLAG, STATEMENTS_LEGEND, statements  # noqa: F401
from pytest_ormbench.results.report.tables.overhead import arm_overhead, overhead  # noqa: F401
from pytest_ormbench.results.report.tables.memory import memory  # noqa: F401
from pytest_ormbench.results.report.tables.latency import latency, sweep_figures, sweep_groups  # noqa: F401
from pytest_ormbench.results.report.tables.provenance import (OLD_DISCIPLINE_FOOTNOTE, environment,  # noqa: F401
                                                              footnotes, probe_level, runs_table)
from pytest_ormbench.results.report.tables.relational import latency_strategies, relational_tables  # noqa: F401
