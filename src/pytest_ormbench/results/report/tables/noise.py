"""What the report may claim given the noise: each figure's rounds and runs, which arm leads by more than
the noise (``stats.clear_lead``, the one rule), and whether a run was too busy to rank its arms.

A figure here is a :class:`Figure`: the value a table shows, its values per round (for a geometric mean:
the means of the rounds' lows, figures and highs) and the runs it comes from, whose drift floors and probe
levels are the noise it is judged against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from pytest_ormbench.workload.spec import OPS_BY_LETTER
from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.results.stats import (INSTRUCTIONS_NOISE, adjacent_gaps, busy, clear_lead, geometric_mean,
                                           median)
from pytest_ormbench.results.report.format import fmt_pct
from pytest_ormbench.results.report.load import LoadedCell, Runs
from pytest_ormbench.results.report.tables.provenance import probe_level
from pytest_ormbench.results.report.tables.scope import (OBJECT_OPS, groups, shown_cells, timed_groups, whole)

#: what the Best column and a leader's place say when the lead is within the noise
CONTESTED = "contested"
#: the advice of a busy run's line
BUSY_ADVICE = ("re-run on an idle machine, with more rounds (--ormbench-rounds), or count instructions "
               "(--ormbench-instructions), which the machine's load does not move")


@dataclass(frozen=True)
class Figure:
    value: float
    #: the values per round, in the figure's unit (one value: no spread seen)
    rounds: tuple[float, ...]
    #: the files (runs) the figure's cells come from
    sources: frozenset[str]
    #: counted instructions (their own floor, no drift) rather than timed rows/s
    instructions: bool = False

    @property
    def spread(self) -> float | None:
        """Half the rounds' range over the figure: the ± the tables print (None: one round)."""
        if len(self.rounds) < 2 or self.value <= 0:
            return None
        return (max(self.rounds) - min(self.rounds)) / 2 / self.value


def rate_rounds(cell: LoadedCell) -> tuple[float, ...]:
    """A timed cell's rows/s of each round."""
    rows = cell.record.rows
    return tuple(rows / s for s in cell.seconds if s > 0)


def rate_figure(cell: LoadedCell) -> Figure | None:
    value = cell.rows_per_s
    if value is None:
        return None
    return Figure(value, rate_rounds(cell), frozenset({cell.source}))


def instructions_figure(cell: LoadedCell) -> Figure | None:
    rec = cell.instructions_record
    if rec is None or not rec.rows or cell.instructions_per_row is None:
        return None
    source = next(p.source for p in cell.parts if p.record is rec)
    return Figure(cell.instructions_per_row, tuple(c / rec.rows for c in rec.instructions), frozenset({source}),
                  instructions=True)


def figure_grid(runs: Runs, model: str, mode: str, table: str,
                make: Callable[[LoadedCell], Figure | None] = rate_figure) -> dict[str, dict[str, Figure]]:
    """arm -> op -> Figure of a group's shown cells (the rows/s ones by default)."""
    out: dict[str, dict[str, Figure]] = {}
    for k, cell in shown_cells(runs):
        if (k.model, k.mode, k.table) == (model, mode, table):
            fig = make(cell)
            if fig is not None:
                out.setdefault(k.arm, {})[k.op] = fig
    return out


def mean_figure(figs: Sequence[Figure]) -> Figure | None:
    """The geometric mean of figures, its rounds the means of their lows, figures and highs (any figure with one
    round: one value, no spread)."""
    value = geometric_mean(f.value for f in figs)
    if value is None:
        return None
    sources = frozenset().union(*(f.sources for f in figs))
    if any(len(f.rounds) < 2 for f in figs):
        return Figure(value, (value,), sources, figs[0].instructions)
    low = geometric_mean(min(f.rounds) for f in figs)
    high = geometric_mean(max(f.rounds) for f in figs)
    return Figure(value, (low or value, value, high or value), sources, figs[0].instructions)


def object_means(grid: dict[str, dict[str, Figure]]) -> dict[str, Figure]:
    """arm -> the geometric mean of its object operations' figures (arms with none left out)."""
    out = {}
    for arm, ops in grid.items():
        fig = mean_figure([f for op, f in ops.items() if op in OBJECT_OPS])
        if fig is not None:
            out[arm] = fig
    return out


def run_floors(runs: Runs, sources: Iterable[str]) -> list[float | None]:
    """The noise of figures from these runs: each one's drift floor and, across runs, the gap between their
    probe levels (how much faster the machine was during one than during another)."""
    facts = whole(runs).run_facts
    srcs = sorted(set(sources))
    floors: list[float | None] = [(facts.get(s) or {}).get("drift_floor") for s in srcs]
    levels = [lv for lv in (probe_level(facts.get(s) or {}) for s in srcs) if lv]
    if len(levels) > 1:
        floors.append(max(levels) / min(levels) - 1)
    return floors


def stands(runs: Runs, a: Figure, b: Figure) -> bool:
    """Whether the better of two figures leads by more than their noise (``stats.clear_lead``).

    Timed figures from two machines (two processors time the same code differently, and no probe corrects
    that) never stand: their lead says which machine was faster as much as which arm."""
    if a.instructions:
        return clear_lead(a.rounds, b.rounds, [INSTRUCTIONS_NOISE], min_rounds=1)
    if whole(runs).across_machines(a.sources | b.sources):
        return False
    return clear_lead(a.rounds, b.rounds, run_floors(runs, a.sources | b.sources))


def leader(runs: Runs, figs: dict[str, Figure], better: Callable[..., str] = max) -> tuple[str | None, bool]:
    """The best of the figures by ``better`` (max: rows/s; min: instructions) and whether its lead over the
    runner-up stands; (None, False) with no figure. A lone figure leads nobody, and stands. Timed figures from
    more than one machine lead nothing: being best among them would rank arms of two machines."""
    if not figs:
        return None, False
    order = sorted(figs, key=lambda a: figs[a].value, reverse=better is max)
    if len(order) == 1:
        return order[0], True
    timed = [f for f in figs.values() if not f.instructions]
    if timed and whole(runs).across_machines(s for f in timed for s in f.sources):
        return order[0], False
    return order[0], stands(runs, figs[order[0]], figs[order[1]])


# -- busy runs -------------------------------------------------------------------------------------------

def report_gaps(runs: Runs) -> list[float]:
    """The gaps between adjacent arms of every operation of every group (all databases), by rows/s; only
    between arms of one machine (a gap between two machines' figures is the machines' as much as the arms')."""
    gaps: list[float] = []
    for db in whole(runs).dbs() or [None]:
        scoped = whole(runs).at(db) if db else runs
        for g in timed_groups(scoped):
            grid = figure_grid(scoped, *g)
            for letter in OPS_BY_LETTER:
                for same in by_machine(runs, [ops[letter] for ops in grid.values() if letter in ops]):
                    gaps += adjacent_gaps([f.value for f in same])
    return gaps


def by_machine(runs: Runs, figs: list[Figure]) -> list[list[Figure]]:
    """The figures grouped by the machines their files ran on (one group when they are one machine's, or were
    normalised to be comparable)."""
    if not whole(runs).across_machines(s for f in figs for s in f.sources):
        return [figs]
    machines = whole(runs).machines
    out: dict[frozenset[str | None], list[Figure]] = {}
    for f in figs:
        out.setdefault(frozenset(machines.get(s) for s in f.sources), []).append(f)
    return list(out.values())


def busy_runs(runs: Runs) -> list[tuple[str, float]]:
    """(source, drift floor) of the runs too busy for their figures (``stats.busy``), worst first."""
    timed = {c.source for c in whole(runs).cells.values() if c.timed}
    gaps = report_gaps(runs)
    out = [(s, floor) for s in sorted(timed)
           if busy(floor := (whole(runs).run_facts.get(s) or {}).get("drift_floor"), gaps)]
    return sorted(out, key=lambda p: -p[1])


def contested_count(runs: Runs) -> tuple[int, int, int]:
    """(contested, ranked, apart) of the Best places of the rows/s tables (each operation's and each geometric
    mean's): apart, the places left unranked because their arms ran on different machines (not noise)."""
    contested = ranked = apart = 0
    for db in whole(runs).dbs() or [None]:
        scoped = whole(runs).at(db) if db else runs
        for g in groups(scoped):
            grid = figure_grid(scoped, *g)
            contenders = {a: ops for a, ops in grid.items() if a not in CONTROL_ARMS}
            if len(contenders) < 2:
                continue
            rows = [{a: ops[lt] for a, ops in contenders.items() if lt in ops} for lt in OPS_BY_LETTER]
            rows.append(object_means(contenders))
            for figs in rows:
                if len(figs) < 2:
                    continue
                if whole(runs).across_machines(s for f in figs.values() for s in f.sources):
                    apart += 1
                    continue
                ranked += 1
                contested += not leader(runs, figs)[1]
    return contested, ranked, apart


def busy_line(runs: Runs) -> str | None:
    """One line for a report (or a run) whose drift floor is beyond what its figures carry; None otherwise."""
    worst = busy_runs(runs)
    if not worst:
        return None
    gaps = report_gaps(runs)
    against = (f"the median gap between adjacent arms ({fmt_pct(median(gaps))})" if gaps
               else "10 % (nothing to rank)")
    timed = {c.source for c in whole(runs).cells.values() if c.timed}
    contested, ranked, apart = contested_count(runs)
    if len(timed) == 1:
        what = f"Busy run: its drift floor {worst[0][1]:.1%} is larger than {against}"
    else:
        what = (f"Busy runs: {len(worst)} of {len(timed)} runs have a drift floor larger than {against}, up to "
                f"{worst[0][1]:.1%} ({worst[0][0]})")
    if ranked:
        held = f"{contested} of {ranked} leads by rows/s are within the noise and read {CONTESTED}"
    elif apart:
        held = "no lead by rows/s is ranked here (every place with two arms mixes machines)"
    else:
        held = "most orderings here are noise"
    if ranked and apart:
        held += (f" ({apart} more name no leader because their arms ran on different machines, which a quieter "
                 "run would not change)")
    return f"{what}: {held}. To rank the arms, {BUSY_ADVICE}."

