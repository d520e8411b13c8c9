"""The plugin's state for one pytest run, and what every part of the pytest layer reads from the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ormbench.plugin import options as _options

if TYPE_CHECKING:  # pragma: no cover
    from pytest_ormbench.scheduling.estimate import Estimate
    from pytest_ormbench.scheduling.scheduler import Scheduler


@dataclass
class OrmbenchSession:
    """The plugin's state for one pytest run: the scheduler and what the terminal shows at the end."""

    run: _options.RunConfig
    #: made once collection is final and has cells (None: this session runs no cell)
    scheduler: Scheduler | None = None
    #: the whole schedule ran before the first test (a timed run): a test's duration is its cell's time
    ran_ahead: bool = False
    #: the schedule stopped on an error of the plugin's own (not a cell's): every cell reports it
    schedule_error: str = ""
    #: the end-of-run comparison with a baseline, rendered for the terminal
    comparison_text: str = ""
    #: lines said once the cells are known
    notes: list[str] = field(default_factory=list)
    #: what the plan line estimated of the run from earlier runs (the summary sets it beside what it took)
    estimate: Estimate | None = None
    #: failure message -> the first cell that failed with it (the others say "same error")
    failures: dict[str, str] = field(default_factory=dict)


SESSION_KEY = pytest.StashKey[OrmbenchSession]()


SIGTERM_KEY = pytest.StashKey[Any]()


#: a cell's own seconds in the schedule that ran before the tests, added to its test's duration
CELL_SECONDS_KEY = pytest.StashKey[float]()


BASELINE_KEY = pytest.StashKey[object]()


def machine_info(config: pytest.Config) -> dict:
    bs = getattr(config, "_benchmarksession", None)
    if bs is None:
        return {}
    try:
        return dict(bs.get_machine_info() or {})
    except Exception:  # machine info is decoration; the figures stand without it
        return {}


def progress(config: pytest.Config, line: str) -> None:
    """A progress line on the terminal, even from inside a test (output capture suspended)."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")
    if tr is None:
        return
    if capman is not None:
        with capman.global_and_fixture_disabled():
            tr.write_line(line)
            tr.flush()  # a log file or a pipe shows the line now, not at the end
    else:
        tr.write_line(line)
        tr.flush()
