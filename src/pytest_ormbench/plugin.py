"""pytest-ormbench: options and hooks only (the work lives in the other modules)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

import pytest

from . import options as _options
from .contract import OPS
from .fixture import CellSpec, OrmbenchSession
from .registry import all_arms, set_extra_targets
from .summary import render, render_not_run

SESSION_KEY = pytest.StashKey[OrmbenchSession]()


def pytest_addoption(parser: pytest.Parser) -> None:
    _options.add_options(parser)


def _known_arms(register: tuple[str, ...]) -> list[str]:
    return list(all_arms(register))


BASELINE_KEY = pytest.StashKey[object]()


def pytest_configure(config: pytest.Config) -> None:
    run = _options.parse(config, _known_arms)
    set_extra_targets(run.register)
    session = OrmbenchSession(run, all_arms(run.register), Path(str(config.rootpath)))
    session.progress = functools.partial(_progress, config)
    config.stash[SESSION_KEY] = session
    config.addinivalue_line("markers", "ormbench: a pytest-ormbench cell (arm x model x op x mode x table)")
    if run.compare or run.thresholds:
        _load_baseline(config, run)


def _benchmark_storage(config: pytest.Config) -> Path:
    storage = str(config.getoption("benchmark_storage", None) or ".benchmarks")
    if storage.startswith("file://"):
        storage = storage[len("file://"):]
    path = Path(storage)
    return path if path.is_absolute() else Path(str(config.invocation_params.dir)) / path


def _load_baseline(config: pytest.Config, run: _options.RunConfig) -> None:
    """Check the baseline and the thresholds before anything runs: a bad one is a usage error."""
    from .compare import CompareError, Thresholds, load_side

    try:
        thresholds = Thresholds.parse(list(run.thresholds))
    except CompareError as exc:
        raise pytest.UsageError(f"--ormbench-threshold: {exc}") from None
    if not run.compare:
        return
    try:
        spec = run.compare
        if not Path(spec).is_absolute() and (Path(str(config.invocation_params.dir)) / spec).exists():
            spec = str(Path(str(config.invocation_params.dir)) / spec)
        baseline = load_side(spec, _benchmark_storage(config))
    except CompareError as exc:
        raise pytest.UsageError(f"--ormbench-compare: {exc}") from None
    config.stash[BASELINE_KEY] = (baseline, thresholds)


def _progress(config: pytest.Config, line: str) -> None:
    """A progress line on the terminal, even from inside a test (output capture suspended)."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")
    if tr is None:
        return
    if capman is not None:
        with capman.global_and_fixture_disabled():
            tr.write_line(line)
    else:
        tr.write_line(line)


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION_KEY, None)
    if session is not None:
        session.close()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ormbench_cell" not in metafunc.fixturenames:
        return
    run = metafunc.config.stash[SESSION_KEY].run
    specs = [
        CellSpec(arm, model, op, mode, table)
        for arm in run.arms for model in run.models for op in run.ops
        for mode in run.modes for table in run.tables
    ]
    metafunc.parametrize("ormbench_cell", specs, ids=[s.id for s in specs], indirect=True)


XDIST_MESSAGE = ("pytest-ormbench: timings under pytest-xdist would be spoiled by parallel runs; "
                 "use --ormbench-verify-only with -n, or run without -n")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "ormbench_cell" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ormbench)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The final list of cells this process runs: the interleaved schedule is built from it."""
    ob = session.config.stash[SESSION_KEY]
    ob.planned = [item.callspec.params["ormbench_cell"] for item in session.items
                  if hasattr(item, "callspec") and "ormbench_cell" in item.callspec.params]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int):  # noqa: ANN201
    """Outermost, so it runs before pytest-benchmark's wrapper saves the JSON."""
    _finish(session)
    return (yield)


def _finish(session: pytest.Session) -> None:
    """The last drift probe, then the comparison with the baseline."""
    ob = session.config.stash.get(SESSION_KEY, None)
    if ob is None:
        return
    ob.finish()
    loaded = session.config.stash.get(BASELINE_KEY, None)
    if loaded is None or not ob.records:
        return
    from .compare import CompareError, Side, compare, render_markdown, render_text

    baseline, thresholds = loaded
    machine = _machine_info(session.config)
    new = Side.from_records(ob.records, machine, ob.run_facts()["drift_floor"], schedule=ob.run.schedule)
    try:
        result = compare(baseline, new, thresholds, ob.run.alpha, ob.run.correction, ob.run.drift)
    except CompareError as exc:
        ob.comparison_text = f"pytest-ormbench: cannot compare with the baseline: {exc}"
        if session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    ob.comparison_text = render_text(result)
    if ob.run.compare_markdown:
        out = Path(ob.run.compare_markdown)
        if not out.is_absolute():
            out = Path(str(session.config.invocation_params.dir)) / out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render_markdown(result), encoding="utf-8")
        ob.comparison_text += f"\npytest-ormbench: comparison written to {out}"
    if result.exit_code and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _machine_info(config: pytest.Config) -> dict:
    bs = getattr(config, "_benchmarksession", None)
    if bs is None:
        return {}
    try:
        return dict(bs.get_machine_info() or {})
    except Exception:  # machine info is decoration; the figures stand without it
        return {}


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config: pytest.Config, benchmarks, output_json: dict) -> None:  # noqa: ANN001
    """Run-level facts beside pytest-benchmark's: the schedule, the drift probe and its floor."""
    ob = config.stash.get(SESSION_KEY, None)
    if ob is not None and ob.records:
        output_json["ormbench"] = ob.run_facts()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids: list[str]) -> None:  # noqa: ANN001
    """On the xdist controller: stop a timing run as soon as a worker collected cells."""
    config = node.config
    run = config.stash[SESSION_KEY].run
    if run.verify_only:
        return
    if any(i.endswith("]") and _is_cell_id(run, i[i.rfind("[") + 1:-1]) for i in ids):
        pytest.exit(XDIST_MESSAGE, returncode=pytest.ExitCode.USAGE_ERROR)


def _is_cell_id(run, param_id: str) -> bool:  # noqa: ANN001
    parts = param_id.rsplit("-", 4)
    return len(parts) == 5 and parts[0] in run.arms and parts[1] in run.models


@pytest.fixture
def ormbench_cell(request: pytest.FixtureRequest, benchmark) -> Callable[[], dict]:  # noqa: ANN001
    """Call it to run the cell (all its rounds, verified) and feed its times to ``benchmark``.

    Running in the test body (not in fixture setup) makes a failed check a test failure.
    """
    spec: CellSpec = request.param
    session = request.config.stash[SESSION_KEY]
    return functools.partial(session.execute, spec, benchmark)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # noqa: ANN001
    session = config.stash.get(SESSION_KEY, None)
    if session is None or (not session.records and not session.not_run):
        return
    tr = terminalreporter
    if session.records:
        tr.write_sep("=", "pytest-ormbench: rows per second (median of rounds, higher is better)")
        tr.write_line(f"settings: {session.run.settings.to_json()}, rounds={session.run.rounds}, "
                      f"iterations={session.run.sizes.iterations}, batch={session.run.sizes.batch}; "
                      f"geometric mean over the object operations ({', '.join(o.letter for o in OPS if o.object_op)})")
        tr.write_line(render(session.records, list(session.arms)))
        facts = session.run_facts()
        floor = facts["drift_floor"]
        figures = ", ".join(f"{p['rows_per_s']:,.0f}" for p in facts["probes"])
        tr.write_line(f"schedule: {facts['schedule']}; drift floor "
                      f"{'unknown' if floor is None else f'{floor:.1%}'} (sqlite3 probe, rows/s: {figures or 'none'})")
        for note in facts["notes"]:
            tr.write_line(note)
    if session.not_run:
        tr.write_sep("-", "pytest-ormbench: cells without a number")
        tr.write_line(render_not_run(session.not_run))
    if session.run.report and session.records:
        tr.write_line(_write_report(session, config))
    if session.comparison_text:
        tr.write_sep("=", "pytest-ormbench: comparison with the baseline")
        tr.write_line(session.comparison_text)


def _write_report(session: OrmbenchSession, config: pytest.Config) -> str:
    """--ormbench-report: the same report ``ormbench report`` makes from the JSON."""
    import datetime as dt
    import io

    from .cli import write_report
    from .report.load import runs_from_records

    out = Path(session.run.report)
    if not out.is_absolute():
        out = Path(str(config.invocation_params.dir)) / out
    runs = runs_from_records(session.records, _machine_info(config), dt.datetime.now(dt.timezone.utc).isoformat(),
                             session.run_facts())
    err = io.StringIO()
    write_report(runs, out, "markdown", out.parent / "charts", err=err)
    return (err.getvalue() + f"pytest-ormbench: report written to {out}").strip()
