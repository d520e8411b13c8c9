"""The timed region of one call: the process's event loop, the clock, the collector held in its discipline,
and the counters (statements, instructions, memory) read around the op and nothing else.

Apart from the runner so that what is inside the clock can be read in one place (docs/methodology.md,
"What is timed").
"""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from pytest_ormbench.arms.contract import Arm
from pytest_ormbench.measuring.callgrind import Callgrind
from pytest_ormbench.workload.phases import PhaseClock
from pytest_ormbench.workload.statements import StatementCounter

#: the clock: monotonic, the highest resolution the platform offers
clock: Callable[[], float] = time.perf_counter

_loop: asyncio.AbstractEventLoop | None = None


def event_loop() -> asyncio.AbstractEventLoop:
    """One loop per process, created before any timer starts."""
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = asyncio.new_event_loop()
    # set it again every time: some ORMs call asyncio.run() in constructors, which unsets it
    asyncio.set_event_loop(_loop)
    return _loop


def drive(value: Any) -> Any:
    """Run a coroutine to completion on the process loop; pass other values through."""
    if asyncio.iscoroutine(value):
        return event_loop().run_until_complete(value)
    return value


#: how the garbage collector is held while the op runs (see docs/methodology.md, "What is timed").
#: ``freeze``: everything alive is frozen just before the clock (out of the collector's reach, so
#: preparation's garbage is never walked inside the op), the collector stays on for what the op allocates;
#: ``disable``: the same, and the collector off while timed (what timeit does);
#: ``prep-collect``: ``freeze`` after a full collection before preparation;
#: ``collect``: the old discipline, a full collection and a freeze right before the clock;
#: ``none``: nothing at all (the bare loop of experiments/fidelity.py).
GC_DISCIPLINES = ("freeze", "disable", "prep-collect", "collect", "none")
GC_DISCIPLINE = "freeze"


@dataclass
class Counters:
    """What a round counts around its op besides the clock (each optional)."""

    statements: StatementCounter | None = None
    #: why statements are not counted for this arm (no SQL), when they were asked for
    statements_not_applicable: str | None = None
    callgrind: Callgrind | None = None
    #: and the seconds this process spent per phase on the cell (``workload.phases``: the run's account)
    phases: PhaseClock = field(default_factory=PhaseClock)


class _GcWatch:
    """Counts the collector's runs inside the timed region (a gc callback costs nothing until one runs)."""

    def __init__(self) -> None:
        self.collections = 0

    def __call__(self, phase: str, info: Mapping[str, Any]) -> None:
        if phase == "start":
            self.collections += 1


def _held_gc(discipline: str) -> Callable[[], None]:
    """Put the collector in the discipline's state just before the clock; returns the undo."""
    if discipline == "none":
        return lambda: None
    if discipline == "collect":
        gc.collect()
    gc.freeze()
    if discipline == "disable":
        was_enabled = gc.isenabled()
        gc.disable()

        def undo() -> None:
            if was_enabled:
                gc.enable()
            gc.unfreeze()
        return undo
    return gc.unfreeze


@dataclass
class Timed:
    """What one call of an op under the clock gave: its time, its result and what the counters counted."""

    seconds: float
    result: Any
    statements: dict[str, int] | None = None
    instructions: int | None = None
    memory_peak: int | None = None
    gc_collections: int = 0


def timed_call(arm: Arm, method: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any] | None = None,
               memory: bool = False, counters: Counters | None = None, discipline: str | None = None) -> Timed:
    """``method(*args, **kwargs)`` between two clock reads (driven on the process loop for an async arm), with
    the collector held in ``discipline`` and the counters around it. With ``memory`` it runs under tracemalloc
    instead (slower: never a timed round) and the peak it allocated comes back."""
    discipline = discipline or GC_DISCIPLINE
    counters = counters or Counters()
    kwargs = kwargs or {}
    statements, callgrind = counters.statements, counters.callgrind
    peak = instructions = counted = None
    watch = _GcWatch()
    undo = _held_gc("none" if memory else discipline)
    gc.callbacks.append(watch)
    try:
        coro = method(*args, **kwargs) if arm.is_async else None
        if memory:
            tracemalloc.start()
        if statements is not None:
            statements.start()
        if callgrind is not None:
            callgrind.start()
        if coro is not None:
            loop = event_loop()
            t0 = clock()
            result = loop.run_until_complete(coro)
            t1 = clock()
        else:
            t0 = clock()
            result = method(*args, **kwargs)
            t1 = clock()
        if callgrind is not None:
            instructions = callgrind.stop()
        if statements is not None:
            counted = statements.stop()
        if memory:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    finally:
        gc.callbacks.remove(watch)
        undo()
    return Timed(t1 - t0, result, counted, instructions, peak, watch.collections)
