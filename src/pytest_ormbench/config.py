"""One run's validated settings, as plain data (the pytest layer parses them in ``options.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .contract import Settings
from .plan import Sizes

SCHEDULES = ("interleaved", "back-to-back")


@dataclass
class RunConfig:
    arms: tuple[str, ...]
    models: tuple[str, ...]
    ops: tuple[str, ...]  # letters
    modes: tuple[str, ...]
    tables: tuple[str, ...]
    rounds: int
    sizes: Sizes
    settings: Settings
    verify_only: bool
    register: tuple[str, ...] = field(default_factory=tuple)
    memory: bool = False
    report: str = ""
    schedule: str = "interleaved"
    compare: str = ""
    compare_markdown: str = ""
    thresholds: tuple[str, ...] = ()
    alpha: float = 0.05
    correction: str = "holm"
    drift: str = "control"
    probe: bool = True

    @property
    def timed(self) -> bool:
        return not self.verify_only

    @property
    def schedule_name(self) -> str:
        """What the results record as the schedule: the chosen one, or verify-only when nothing is timed."""
        return self.schedule if self.timed else "verify-only"
