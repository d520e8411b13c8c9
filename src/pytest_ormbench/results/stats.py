"""The numbers: medians, rows per second, geometric means. No I/O, no ORMs."""

from __future__ import annotations

import math
import statistics
from typing import Iterable, Mapping, Sequence


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


def geomean_by_arm(figures: Mapping[str, Mapping[str, float]], ops: Sequence[str]) -> dict[str, tuple[float | None, int]]:
    """arm -> (geometric mean over the given ops it ran, how many it ran)."""
    out = {}
    for arm, per_op in figures.items():
        vals = [per_op[o] for o in ops if o in per_op]
        out[arm] = (geometric_mean(vals), len(vals))
    return out


def drift_floor(figures: Sequence[float]) -> float | None:
    """The run's noise floor: the relative spread (max - min) / median of the drift probe's figures.

    A fixed workload should give the same figure all run long; whatever it varies by, the machine
    did. Differences between runs smaller than this are not evidence of anything.
    """
    vals = [f for f in figures if f is not None and f > 0 and math.isfinite(f)]
    if len(vals) < 2:
        return None
    return (max(vals) - min(vals)) / median(vals)
