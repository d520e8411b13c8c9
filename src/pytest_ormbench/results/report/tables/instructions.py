"""The instructions tables: instructions per row, ops x arms, and where their order and the rows/s' disagree."""

from __future__ import annotations

from itertools import combinations

from pytest_ormbench.workload.spec import MODELS, OPS
from pytest_ormbench.results.report.format import fmt_count
from pytest_ormbench.results.report.load import Runs
from pytest_ormbench.results.report.table import Table
from pytest_ormbench.results.report.tables.noise import figure_grid, instructions_figure, stands
from pytest_ormbench.results.report.tables.rates import ops_table
from pytest_ormbench.results.report.tables.scope import (arm_order, controls_named, figures, instruction_figures,
                                                         labels, present_controls)

#: two arms' rows/s must differ by more than this before their instructions may contradict them (noise)
DISAGREE_MARGIN = 0.10
#: and their instructions per row by more than this (closer, it is the same work: counts repeat to ~0.1 %)
DISAGREE_INSTRUCTIONS_MARGIN = 0.01
#: disagreeing pairs named per operation; the rest are counted
DISAGREE_PAIRS = 3


def instructions(runs: Runs, model: str, mode: str, table: str) -> Table | None:
    """Instructions per row, ops x arms like the rows/s table (None: no record of the group counted them)."""
    per_arm = figure_grid(runs, model, mode, table, instructions_figure)
    if not per_arm:
        return None
    names = labels(runs)
    best = (f"Best: the arm other than {controls_named(names, present_controls(runs, model, mode, table))} that "
            "executed the fewest instructions per row, where it leads the runner-up by more than the noise.")
    title = f"{MODELS[model].title} — {mode}, {table} table (instructions per row, lower is better)"
    legend = ("Instructions the operation executed, counted by valgrind's callgrind around the op only "
              "(--ormbench-instructions): the median round's count over the rows it handled; k thousand, M million. "
              "They do not depend on the machine's speed or load, and do not see the kernel's work or time spent "
              "waiting (system calls, I/O, fsync).")
    t = ops_table(runs, per_arm, fmt_count, min, title, best, anchor=f"instructions-{model}-{mode}-{table}")
    t.notes = [legend, *t.notes, *disagreements(runs, model, mode, table)]
    return t


def disagreements(runs: Runs, model: str, mode: str, table: str) -> list[str]:
    """One line per op where two arms' order by rows/s and by instructions per row differ.

    Only pairs whose rows/s differ by more than DISAGREE_MARGIN and by more than their noise (``noise.stands``:
    closer, the order by time may be noise) and whose instructions differ by more than
    DISAGREE_INSTRUCTIONS_MARGIN (closer, it is the same work).
    """
    rates, counts = figures(runs, model, mode, table), instruction_figures(runs, model, mode, table)
    timed = figure_grid(runs, model, mode, table)
    names = labels(runs)
    arms = [a for a in arm_order(runs) if a in rates and a in counts]
    lines = []
    for op in OPS:
        both = [a for a in arms if op.letter in rates[a] and op.letter in counts[a]]
        pairs = []
        for a, b in combinations(both, 2):
            fast, slow = (a, b) if rates[a][op.letter] >= rates[b][op.letter] else (b, a)
            ratio = rates[fast][op.letter] / rates[slow][op.letter]
            more = counts[fast][op.letter] / counts[slow][op.letter]
            if (ratio > 1 + DISAGREE_MARGIN and more > 1 + DISAGREE_INSTRUCTIONS_MARGIN
                    and stands(runs, timed[fast][op.letter], timed[slow][op.letter])):
                pairs.append((ratio, more, fast, slow))
        if not pairs:
            continue
        pairs.sort(key=lambda p: (-p[0], p[2], p[3]))
        (r, i, f, s), *others = pairs[:DISAGREE_PAIRS]
        line = (f"{op.letter} {op.title}: {names[f]} is faster than {names[s]} by wall time ({r:.2f}×) but executes "
                f"more instructions per row ({i:.2f}×)")
        if others:  # the same sentence again for each: the pairs, their two ratios
            line += "; likewise " + ", ".join(f"{names[f]} than {names[s]} ({r:.2f}×, {i:.2f}×)"
                                              for r, i, f, s in others)
        rest = len(pairs) - DISAGREE_PAIRS
        lines.append(line + (f"; and {rest} more pair(s)" if rest > 0 else "") + ".")
    if lines:
        lines.insert(0, f"Where wall time and instructions disagree (an arm more than {DISAGREE_MARGIN:.0%} faster by "
                        "rows/s, and by more than the noise, yet executing more instructions per row), the slower arm spends its extra time where "
                        "callgrind counts nothing: waiting on I/O and in system calls (fsync), waiting between threads "
                        "(an async arm's hand-off of each statement to its driver's thread and back), or stalled on "
                        "memory.")
    return lines
