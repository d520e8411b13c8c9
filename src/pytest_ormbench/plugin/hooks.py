"""pytest-ormbench: options and hooks only (the work lives in the other modules).

The ``plugin`` package is the pytest layer, the only one that imports pytest or touches pytest-benchmark's
internals (``benchmark._make_stats``, ``benchmark._mode``): this module's hooks and fixtures, ``options.py``
(the options into a ``RunConfig``), ``session.py`` (the run's state) and ``summary.py`` (baseline, comparison,
terminal summary, report). The run itself is ``scheduling.scheduler.Scheduler``; results are
``results.record.CellRecord``; tables come from ``results.report``.

The plugin loads in every pytest session of an environment it is installed in, so it stays out of the way
until a cell is collected: before that it parses its options and nothing else (no signal handler, no
temporary directory, no scheduler, no ORM). Once collection is final and has cells, it makes the
scheduler; a timed run's whole schedule runs in ``pytest_runtestloop`` before the first test, and each
cell's test then reports what its cell came to (its duration is the time its cell took).
"""

from __future__ import annotations

import functools
import json
import os
import signal
import threading
import traceback
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pytest

from pytest_ormbench.plugin import options as _options
from pytest_ormbench.plugin.session import (CELL_SECONDS_KEY, SESSION_KEY, SIGTERM_KEY, OrmbenchSession,
                                            progress)
from pytest_ormbench.plugin.outputs import (ENDING_KEY, ending, output_failed, try_benchmark_json, where_from)
from pytest_ormbench.plugin.preflight import asked_for, refuse_missing_arms, refuse_what_cannot_run
from pytest_ormbench.plugin.summary import finish, load_baseline, terminal_summary
from pytest_ormbench.workload.cells import CellKey, RecordError
from pytest_ormbench.results.record import CellRecord, fold_environments
from pytest_ormbench.arms.registry import CONTROL_ARMS, all_arms
from pytest_ormbench.scheduling.matrix import run_cells

if TYPE_CHECKING:  # pragma: no cover
    from pytest_ormbench.scheduling.estimate import Estimate

XDIST_BENCHMARK_WARNING = "Benchmarks are automatically disabled because xdist"


def pytest_addoption(parser: pytest.Parser) -> None:
    _options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """``--ormbench-probe off``: the old valued spelling with a space, read as ``--ormbench-probe=off``."""
    _options.rewrite_old_args(args)


def _known_arms(register: tuple[str, ...]) -> list[str]:
    return list(all_arms(register))


def _stop_on_sigterm() -> Any:
    """SIGTERM (a CI job cancelled, ``kill``) ends the run as Ctrl-C does, so that the workers are stopped and
    the run's databases removed; only where nobody else handles SIGTERM. Returns the handler to restore."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
    return signal.SIG_DFL


def pytest_configure(config: pytest.Config) -> None:
    """The options, checked (a bad one is a usage error in any session); nothing is started yet."""
    run = _options.parse(config, _known_arms)
    config.stash[SESSION_KEY] = OrmbenchSession(run)
    config.pluginmanager.register(ControlArm(), "ormbench-control-arm")
    if run.verify_only:  # nothing is timed, so pytest-benchmark's xdist warning concerns nothing
        config.addinivalue_line("filterwarnings", f"ignore:{XDIST_BENCHMARK_WARNING}")
        # pytest-benchmark warns at unconfigure, after pytest's own warning filters are gone
        warnings.filterwarnings("ignore", message=XDIST_BENCHMARK_WARNING)
    config.addinivalue_line("markers", "ormbench: a pytest-ormbench cell (arm x model x op x mode x table)")
    if run.compare or run.thresholds:
        load_baseline(config, run)


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION_KEY, None)
    if session is not None and session.scheduler is not None:
        session.scheduler.close()
    previous = config.stash.get(SIGTERM_KEY, None)
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ormbench_cell" not in metafunc.fixturenames:
        return
    run = metafunc.config.stash[SESSION_KEY].run
    keys = run_cells(run, all_arms(run.register))
    metafunc.parametrize("ormbench_cell", keys, ids=[k.id for k in keys], indirect=True)


XDIST_MESSAGE = ("pytest-ormbench: timings under pytest-xdist would be spoiled by parallel runs; "
                 "use --ormbench-verify-only with -n, or run without -n")


DESELECTED_KEY = pytest.StashKey[list]()


def _cell_of(item: pytest.Item) -> CellKey | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("ormbench_cell") if callspec is not None else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "ormbench_cell" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ormbench)


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Remember the deselected control-arm cells: a -k that names an ORM must not drop the yardstick."""
    if not items:
        return
    config = items[0].config
    kept = config.stash.setdefault(DESELECTED_KEY, [])
    kept.extend(item for item in items if (key := _cell_of(item)) is not None and key.arm in CONTROL_ARMS)


class ControlArm:
    """A second plugin object, so that its modifyitems can run last: after -k and -m have deselected."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        _put_back_the_control_arm(config, items)
        _keep_the_shard(config, items)


def _keep_the_shard(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--ormbench-shard=K/N: deselect the cells other shards run (after -k and -m, so that the selection is what
    is split); the control arms' cells stay in every shard."""
    session = config.stash.get(SESSION_KEY, None)
    if session is None or session.run.shard is None:
        return
    from pytest_ormbench.scheduling.shards import Shard, recorded_durations, shard_cells

    shard = Shard(*session.run.shard)
    keys = [k for k in map(_cell_of, items) if k is not None]
    durations = recorded_durations(Path(session.run.shard_durations)) if session.run.shard_durations else None
    mine = shard_cells(keys, shard, session.run.rounds, durations)
    gone = [item for item in items if (k := _cell_of(item)) is not None and k not in mine]
    if gone:
        items[:] = [item for item in items if item not in set(gone)]
        config.hook.pytest_deselected(items=gone)
    controls = sum(1 for k in mine if k.arm in CONTROL_ARMS)
    how = f"balanced by the durations in {session.run.shard_durations}" if durations else "balanced by estimates"
    session.notes.append(f"pytest-ormbench: shard {shard.label}: {len(mine)} of {len(keys)} cells "
                         f"({controls} of them the control arms', in every shard), {how}")


def _put_back_the_control_arm(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The control arm's deselected cells for the models, ops, modes and tables still selected."""
    session = config.stash.get(SESSION_KEY, None)
    dropped = config.stash.get(DESELECTED_KEY, [])
    if session is None or not session.run.control or not dropped:
        return
    wanted = {(k.model, k.op, k.mode, k.table, k.db, k.rtt_ms) for k in map(_cell_of, items) if k is not None}
    present = {k for k in map(_cell_of, items) if k is not None and k.arm in CONTROL_ARMS}
    back = [item for item in dropped
            if (k := _cell_of(item)) is not None and k not in present
            and (k.model, k.op, k.mode, k.table, k.db, k.rtt_ms) in wanted]
    if back:
        items[:0] = back
        dropped[:] = [item for item in dropped if item not in back]
        names = ", ".join(dict.fromkeys(k.arm for k in map(_cell_of, back) if k is not None))
        session.notes.append(f"pytest-ormbench: the control arm(s) {names}: {len(back)} cell(s) run beside the "
                             "selection (the ORM-overhead table and the comparison's drift correction need them; "
                             "--ormbench-no-control leaves them out)")


def pytest_collection_finish(session: pytest.Session) -> None:
    """The final list of cells this process runs: the scheduler is made for it (none: the plugin does nothing)."""
    config = session.config
    ob = config.stash[SESSION_KEY]
    planned = [key for item in session.items if (key := _cell_of(item)) is not None and not _skipped(item)]
    if not planned or ob.scheduler is not None:
        return
    bs = getattr(session.config, "_benchmarksession", None)
    if bs is not None and not ob.run.benchmark_table:
        bs.quiet = True  # pytest-benchmark's own table repeats the summary's figures in ms
    if not hasattr(config, "workerinput"):  # an xdist worker: the controller refuses (a worker's error is a crash)
        refuse_missing_arms(config, ob.run, planned)
    for note in ob.notes:
        progress(session.config, note)
    ob.estimate = _estimate(ob.run, planned, _estimate_sources(config, ob.run))
    progress(session.config, _plan_line(ob.run, planned, ob.estimate))
    if config.option.collectonly:
        return  # the plan said what would run; nothing runs
    if not hasattr(config, "workerinput"):
        refuse_disabled_benchmarks(ob.run, bs)
    for flag, path in _options.output_paths(config, ob.run):
        _options.check_output_path(flag, path)
    from pytest_ormbench.scheduling.scheduler import Scheduler

    # -q: at most a line a minute; otherwise every 30 s (and at the end of every phase)
    interval = 60.0 if config.get_verbosity() < 0 else 30.0
    ob.scheduler = Scheduler(ob.run, all_arms(ob.run.register), Path(str(config.rootpath)),
                             say=functools.partial(progress, config), progress_interval=interval)
    ob.scheduler.planned = planned
    if not hasattr(config, "workerinput"):  # an xdist worker: such cells fail instead (asked_for)
        refuse_what_cannot_run(config, ob, planned)
    _install_sigterm(config)


# -- asked-for work that cannot run fails the run before anything is measured ----------------------------------


def refuse_disabled_benchmarks(run: _options.RunConfig, bs: Any) -> None:
    """A timed run whose pytest-benchmark turned itself off would measure everything and record nothing.

    pytest-benchmark disables itself in any process that has ``PYTEST_XDIST_WORKER`` in its environment, so a
    pytest started from inside an xdist worker (a test, a script run under ``pytest -n``) inherits the switch.
    """
    if run.verify_only or bs is None or not bs.disabled:
        return
    why = (f"PYTEST_XDIST_WORKER={os.environ['PYTEST_XDIST_WORKER']} is set, so it takes this process for an "
           "xdist worker" if os.environ.get("PYTEST_XDIST_WORKER") else "it is disabled")
    raise pytest.UsageError(f"pytest-ormbench: pytest-benchmark would record no timings ({why}); unset it, "
                            "or pass --ormbench-verify-only")


def _install_sigterm(config: pytest.Config) -> None:
    if SIGTERM_KEY not in config.stash:
        config.stash[SIGTERM_KEY] = _stop_on_sigterm()


def _skipped(item: pytest.Item) -> bool:
    """Whether a skip mark (``--benchmark-skip``'s, a user's) skips the test before it runs: its cell is not run."""
    try:
        from _pytest.skipping import evaluate_skip_marks

        return evaluate_skip_marks(item) is not None
    except Exception:  # a bad skipif condition errors in the test itself; an older pytest: the plain mark
        return item.get_closest_marker("skip") is not None


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session):  # noqa: ANN201
    """A timed run's whole schedule, before the first test (each test then reports its cell)."""
    ob = session.config.stash.get(SESSION_KEY, None)
    if (ob is not None and ob.scheduler is not None and ob.scheduler.timed
            and not hasattr(session.config, "workerinput")  # an xdist worker runs only verify-only cells
            and not session.config.option.collectonly
            and not (session.testsfailed and not session.config.option.continue_on_collection_errors)):
        ob.ran_ahead = True
        try:
            ob.scheduler.run_all()
        except Exception:  # the plugin's own error, not a cell's: every cell's test reports it
            ob.schedule_error = traceback.format_exc()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # noqa: ANN201
    """A cell that ran before the tests: its time is its test's (``--durations``, junit), not the first test's."""
    report = yield
    if call.when == "call":
        report.duration += item.stash.get(CELL_SECONDS_KEY, 0.0)
    return report


def _estimate_sources(config: pytest.Config, run: _options.RunConfig) -> list[Path]:
    """Where the plan line's estimate reads earlier runs: --ormbench-estimate-from, else the shard durations'
    file, else pytest-benchmark's storage folder (its autosaved and --benchmark-save runs)."""
    from pytest_ormbench.plugin.summary import benchmark_storage

    if run.estimate_from:
        return [Path(p) for p in run.estimate_from]
    if run.shard_durations:
        return [Path(run.shard_durations)]
    return [benchmark_storage(config)]


def _estimate(run: _options.RunConfig, planned: list[CellKey], sources: list[Path]) -> Estimate | None:
    """The run's wall and timed time, from the earlier runs at ``sources`` (None: a verify-only run, or no
    earlier run recorded any of its cells)."""
    from pytest_ormbench.scheduling.estimate import estimate, read_runs

    if run.verify_only or not sources:
        return None
    records, files = read_runs(sources, run.instructions)
    return estimate(planned, run.rounds, records, files)


def _plan_line(run: _options.RunConfig, planned: list[CellKey], guess: Estimate | None = None) -> str:
    """What is about to run, in words (the settings in force, the preset's values or the options over them),
    and how long it should take: estimated from earlier runs' phase accounts (``scheduling.estimate``) where
    they recorded its cells, else how long the preset's whole matrix took on the project's machine: only for
    the databases it was measured on (SQLite's time says nothing of a PostgreSQL or MariaDB run)."""

    from pytest_ormbench.scheduling.config import PRESETS

    preset = PRESETS[run.preset]
    arms = len({k.arm for k in planned})
    in_force = {"mode": ",".join(run.modes), "table": ",".join(run.tables), "rounds": str(run.rounds),
                "iterations": str(run.sizes.iterations), "batch": str(run.sizes.batch)}
    changed = [k for k, v in in_force.items() if preset.values.get(k) != v]
    rounds = 1 if run.verify_only else run.rounds
    what = (("verified once each, nothing timed" + (" (--benchmark-disable)" if run.benchmark_disabled else ""))
            if run.verify_only else f"{len(planned) * rounds:,} timed rounds")
    settings = ", ".join(f"{k} {v}" for k, v in in_force.items() if not (run.verify_only and k == "rounds"))
    line = (f"pytest-ormbench: preset {preset.name}{' with ' + ', '.join(changed) + ' changed' if changed else ''} "
            f"({settings}): {len(planned):,} cells of {arms} arm(s), {what}")
    if run.instructions:
        line += "; instructions counted under callgrind (the rounds run 10-100x slower than timed ones)"
        return line + (f"; {guess.describe()}" if guess else "")
    if guess is not None:
        return f"{line}; {guess.describe()}"
    note = preset.measured_note(run.dbs, run.rtts) if not run.verify_only and not changed else ""
    return line + (f"; {note}" if note else "")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int):  # noqa: ANN201
    """Outermost, so it runs before pytest-benchmark's wrapper saves the JSON, and its end after the terminal
    summary: an output that could not be written makes the run fail (exit status 1), its JSON kept elsewhere."""
    try:
        finish(session)
    except OSError as exc:  # --ormbench-compare-markdown's file
        ob = session.config.stash[SESSION_KEY]
        output_failed(session.config, "--ormbench-compare-markdown", ob.run.compare_markdown, exc)
    result = yield
    if session.config.stash.get(ENDING_KEY, None) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return result


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config: pytest.Config, benchmarks, output_json: dict) -> None:  # noqa: ANN001
    """Run-level facts beside pytest-benchmark's: the schedule, the drift probe and its floor, and each arm's
    environment once per place (its cells name it: ``extra_info.environment``). First, --benchmark-json's file is
    tried (pytest-benchmark writes it next): one that cannot be written is replaced by a fallback file."""
    try_benchmark_json(config)
    ob = config.stash.get(SESSION_KEY, None)
    if ob is not None and ob.scheduler is not None and ob.scheduler.records:
        facts = ob.scheduler.run_facts()
        infos = []
        for bench in output_json.get("benchmarks", []):
            if isinstance(bench.get("extra_info"), dict):
                bench["extra_info"] = dict(bench["extra_info"])  # the saved copy; the run's own records stay whole
                infos.append(bench["extra_info"])
        environments = fold_environments(infos)
        if environments:
            facts["environments"] = environments
        output_json["ormbench"] = facts


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_generate_commit_info(config: pytest.Config) -> dict | None:
    """A run from a frozen copy of the tree (``ormbench publish``) has no checkout to read its commit from: it
    records the commit publish froze (the file ``ORMBENCH_COMMIT_INFO`` names), not "unversioned"."""
    path = os.environ.get("ORMBENCH_COMMIT_INFO")
    if not path:
        return None  # pytest-benchmark reads the checkout, as usual
    try:
        with open(path, encoding="utf-8") as fh:
            return dict(json.load(fh))
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"pytest-ormbench: ORMBENCH_COMMIT_INFO={path}: {exc}") from None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids: list[str]) -> None:  # noqa: ANN001
    """On the xdist controller: stop a timing run as soon as a worker collected cells."""
    config = node.config
    run = config.stash[SESSION_KEY].run
    if not any(i.endswith("]") and _is_cell_id(run, i[i.rfind("[") + 1:-1]) for i in ids):
        return
    if not run.verify_only:
        pytest.exit(XDIST_MESSAGE, returncode=pytest.ExitCode.USAGE_ERROR)
    cells = [key for i in ids if i.endswith("]") and (key := _cell_key(i[i.rfind("[") + 1:-1])) is not None]
    try:
        refuse_missing_arms(config, run, cells)
    except pytest.UsageError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
    _install_sigterm(config)  # SIGTERM stops the workers as Ctrl-C does


def _cell_key(param_id: str) -> CellKey | None:
    try:
        return CellKey.parse(param_id)
    except RecordError:
        return None


def _is_cell_id(run: _options.RunConfig, param_id: str) -> bool:
    key = _cell_key(param_id)
    return key is not None and key.arm in run.arms and key.model in run.models


@pytest.fixture
def ormbench_run(request: pytest.FixtureRequest) -> _options.RunConfig:
    """The run's settings as the plugin parsed them (options, ini keys and preset together)."""
    return request.config.stash[SESSION_KEY].run


@pytest.fixture
def ormbench_cell(request: pytest.FixtureRequest, benchmark) -> Callable[[], CellRecord]:  # noqa: ANN001
    """Call it to run the cell (all its rounds, verified) and feed its times to ``benchmark``.

    Running in the test body (not in fixture setup) makes a failed check a test failure.
    """
    key: CellKey = request.param
    session = request.config.stash[SESSION_KEY]
    return functools.partial(_execute, session, key, benchmark, request.node)


def _execute(session: OrmbenchSession, key: CellKey, benchmark, item: pytest.Item) -> CellRecord:  # noqa: ANN001
    """One cell as a test: skipped with its reason, failed with its check, or its rounds handed to pytest-benchmark."""
    benchmark._mode = "pytest-ormbench"  # we feed the fixture ourselves
    scheduler = session.scheduler
    if scheduler is None:  # not collected as a cell of this session (a test calling the fixture by hand)
        pytest.fail(f"{key.id}: pytest-ormbench planned no cell in this session", pytrace=False)
    if session.schedule_error:
        first = session.failures.setdefault(session.schedule_error, key.id)
        pytest.fail(f"{key.id}: the run's schedule stopped on an error"
                    + (f" (shown at {first})" if first != key.id else f":\n{session.schedule_error}"), pytrace=False)
    outcome = scheduler.outcome(key)
    if session.ran_ahead:
        item.stash[CELL_SECONDS_KEY] = outcome.seconds
    problem = outcome.problem
    if problem is not None:
        asked = problem.outcome == "skipped" and asked_for(session, key, item.config)
        if problem.outcome == "skipped" and not asked:
            pytest.skip(problem.message)
        if problem.outcome == "unsupported":
            pytest.skip(f"unsupported by {key.arm}: {problem.message}")
        # an arm or database the user asked for that cannot run is not a skip
        outcome = "asked for, and cannot run" if asked else problem.outcome
        # an ORM that fails to import fails every cell of its arm the same way: the traceback once
        same = f"{key.arm}: {outcome}: {problem.message}\n{problem.detail}"
        first = session.failures.setdefault(same, key.id)
        if first != key.id:
            pytest.fail(f"{key.id}: {outcome}: {problem.message.splitlines()[0] if problem.message else ''} "
                        f"(same error as {first}, shown there)", pytrace=False)
        pytest.fail(f"{key.id}: {outcome}: {problem.message}\n{problem.detail}".rstrip(), pytrace=False)
    record = outcome.record
    assert record is not None
    if scheduler.timed and not benchmark.disabled:
        stats = benchmark._make_stats(1)
        for seconds in record.seconds:
            stats.update(seconds)
        benchmark.extra_info.update(record.to_json())
        scheduler.keep(record)
    return record


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # noqa: ANN001
    try:
        terminal_summary(terminalreporter, config)
    except OSError as exc:  # the report's file (--ormbench-report) could not be written
        ob = config.stash[SESSION_KEY]
        output_failed(config, "--ormbench-report", ob.run.report, exc)
        if ob.comparison_text:  # the summary stopped before the comparison: show it here
            terminalreporter.write_sep("=", "pytest-ormbench: comparison with the baseline")
            terminalreporter.write_line(ob.comparison_text)
    for line in where_from(config) + ending(config):
        terminalreporter.write_line(line)
