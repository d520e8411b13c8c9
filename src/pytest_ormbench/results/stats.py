"""The numbers: medians, rows per second, geometric means, spreads, and the comparison's test statistics
(Mann–Whitney U, Holm's adjustment). No I/O, no ORMs: the one statistics module.

Why Mann–Whitney and not a t-test or a bootstrap: it works on ranks, so one round disturbed by a
cron job moves it by one rank instead of dragging a mean; it assumes no normality (round times are
skewed to the right); and for the five rounds a cell usually has, its null distribution is counted
exactly (252 equally likely arrangements). A bootstrap of the median of five values can only ever
return one of those five values, so its intervals are coarse and their coverage poor.
"""

from __future__ import annotations

import math
import statistics
from functools import lru_cache
from typing import Iterable, Sequence

#: largest n*m for which the exact null distribution of U is counted (no ties)
EXACT_LIMIT = 400


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def rows_per_second(rows: int, round_seconds: Sequence[float]) -> float:
    """Rows credited to one round over the median round time."""
    m = median(round_seconds)
    return rows / m if m > 0 else math.inf


def geometric_mean(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def drift_floor(figures: Sequence[float]) -> float | None:
    """The run's noise floor: the relative spread (max - min) / median of the drift probe's figures.

    A fixed workload should give the same figure all run long; whatever it varies by, the machine
    did. Differences between runs smaller than this are not evidence of anything.
    """
    vals = [f for f in figures if f is not None and f > 0 and math.isfinite(f)]
    if len(vals) < 2:
        return None
    return (max(vals) - min(vals)) / median(vals)


def spread(values: Sequence[float]) -> float:
    """max / min - 1 of one side's rounds: how far this cell's counts moved within one run."""
    if not values:
        return 0.0
    low, high = min(values), max(values)
    if low <= 0:
        return 0.0 if high <= 0 else math.inf
    return high / low - 1


def relative_spread(values: Sequence[float]) -> float | None:
    """(max - min) / median of one cell's rounds: how far its figure moved within the run (None: fewer than
    two rounds, so no spread was seen)."""
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if len(vals) < 2:
        return None
    mid = median(vals)
    return (max(vals) - min(vals)) / mid if mid > 0 else math.inf


#: an instructions run's own floor: counts of the same code on the same data repeat to ~0.1 %, doubled for
#: margin (the comparison's ``INSTRUCTIONS_FLOOR``)
INSTRUCTIONS_NOISE = 0.002
#: with nothing to rank (no two arms side by side), a run is busy above this drift floor: the comparison's
#: default threshold, the smallest change the project acts on
BUSY_FALLBACK = 0.10


def clear_lead(leader: Sequence[float], runner_up: Sequence[float], floors: Iterable[float | None] = (),
               *, min_rounds: int = 2) -> bool:
    """THE rule for naming a winner: whether the better of two cells leads the other by more than the noise.

    ``leader`` and ``runner_up`` are the two cells' values per round (rows/s, or instructions per row; either
    direction: the lead is the larger median over the smaller, minus one). ``floors`` are the noise of the
    runs the figures come from (each run's drift floor, and the gap between two runs' probe levels; for
    instructions, :data:`INSTRUCTIONS_NOISE`). The lead stands when it is larger than the largest of those
    floors and of either cell's :func:`relative_spread`: the rounds' whole range, not half of it, because
    three rounds see less than the spread a cell really has. A cell with fewer than ``min_rounds`` rounds
    has no spread to go by: nothing it leads or trails stands (instructions pass ``min_rounds=1``: one count
    is as good as several).

    Not a rank test: with three rounds a side Mann-Whitney cannot reach p < 0.1, yet a ×2 lead on an idle
    machine is plain; and not the floor alone: a cell can be noisier than the probe.
    """
    if len(leader) < min_rounds or len(runner_up) < min_rounds or not leader or not runner_up:
        return False
    a, b = median(leader), median(runner_up)
    low, high = min(a, b), max(a, b)
    if low <= 0:
        return False
    noise = [f for f in (*floors, relative_spread(leader), relative_spread(runner_up)) if f is not None]
    return high / low - 1 > max(noise, default=0.0)


def adjacent_gaps(figures: Iterable[float]) -> list[float]:
    """The relative gaps (larger / smaller - 1) between neighbours of the figures sorted: how far apart the
    arms of one operation stand."""
    vals = sorted(v for v in figures if v is not None and v > 0 and math.isfinite(v))
    return [b / a - 1 for a, b in zip(vals, vals[1:])]


def busy(floor: float | None, gaps: Sequence[float]) -> bool:
    """Whether a run's drift floor is beyond what its figures can carry: larger than the median gap between
    adjacent arms (then most of its orderings are inside the noise), or, with no two arms to tell apart,
    larger than :data:`BUSY_FALLBACK`. A run without a probe (floor None) is not called busy."""
    if floor is None:
        return False
    return floor > (median(gaps) if gaps else BUSY_FALLBACK)


# -- the test of two samples ----------------------------------------------------------------------

@lru_cache(maxsize=64)
def _u_counts(n: int, m: int) -> tuple[int, ...]:
    """How many of the C(n+m, n) equally likely arrangements give U = 0, 1, ..., n*m (no ties).

    These are the coefficients of the Gaussian binomial [n+m choose n]_q, built as the product of
    (1 - q^(m+i)) / (1 - q^i) for i = 1..n; every partial product is itself a polynomial, so the
    arithmetic stays in exact integers.
    """
    size = n * m + 1
    poly = [0] * size
    poly[0] = 1
    for i in range(1, n + 1):
        for k in range(size - 1, m + i - 1, -1):  # multiply by (1 - q^(m+i))
            poly[k] -= poly[k - m - i]
        for k in range(i, size):  # divide by (1 - q^i)
            poly[k] += poly[k - i]
    return tuple(poly)


def _midranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Ranks 1..N with ties sharing their mean rank, and the sizes of the tied groups."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """U of ``x`` (pairs with x > y, ties counting one half) and the two-sided p-value.

    Exact when there are no ties and n*m <= EXACT_LIMIT; otherwise the normal approximation with
    the tie-corrected variance and a continuity correction of 1/2.
    """
    n, m = len(x), len(y)
    if not n or not m:
        raise ValueError("Mann-Whitney needs at least one value on each side")
    ranks, ties = _midranks([*x, *y])
    u = sum(ranks[:n]) - n * (n + 1) / 2
    if not ties and n * m <= EXACT_LIMIT:
        counts = _u_counts(n, m)
        tail = min(int(round(u)), n * m - int(round(u)))  # the distribution is symmetric
        return u, min(1.0, 2 * sum(counts[:tail + 1]) / math.comb(n + m, n))
    total = n + m
    tie_term = sum(t ** 3 - t for t in ties) / (total * (total - 1))
    variance = n * m / 12 * ((total + 1) - tie_term)
    if variance <= 0:  # every round of both sides took the same time
        return u, 1.0
    z = (abs(u - n * m / 2) - 0.5) / math.sqrt(variance)
    return u, 1.0 if z <= 0 else min(1.0, math.erfc(z / math.sqrt(2)))


def smallest_p(n: int, m: int) -> float:
    """The smallest two-sided p-value the exact test can give for n against m rounds."""
    return min(1.0, 2 / math.comb(n + m, n))


def rounds_needed(level: float) -> int:
    """The fewest rounds per side (at least 5) at which rounds that overlap a little can still reach
    ``level``: complete separation then gives a p-value five times smaller than the level."""
    n = 5
    while smallest_p(n, n) >= level / 5:
        n += 1
    return n


def holm(ps: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input's order.

    The k-th smallest of m p-values is multiplied by (m - k + 1) and the results are made
    non-decreasing; rejecting every adjusted p below alpha keeps the family-wise error at alpha.
    """
    m = len(ps)
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: ps[i])):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted
