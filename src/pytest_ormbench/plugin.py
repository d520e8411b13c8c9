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


def pytest_configure(config: pytest.Config) -> None:
    run = _options.parse(config, _known_arms)
    set_extra_targets(run.register)
    config.stash[SESSION_KEY] = OrmbenchSession(run, all_arms(run.register), Path(str(config.rootpath)))
    config.addinivalue_line("markers", "ormbench: a pytest-ormbench cell (arm x model x op x mode x table)")


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
    if session.not_run:
        tr.write_sep("-", "pytest-ormbench: cells without a number")
        tr.write_line(render_not_run(session.not_run))
    if session.run.report and session.records:
        tr.write_line(_write_report(session, config))


def _write_report(session: OrmbenchSession, config: pytest.Config) -> str:
    """--ormbench-report: the same report ``ormbench report`` makes from the JSON."""
    import datetime as dt
    import io

    from .cli import write_report
    from .report.load import runs_from_records

    out = Path(session.run.report)
    if not out.is_absolute():
        out = Path(str(config.invocation_params.dir)) / out
    machine = {}
    bs = getattr(config, "_benchmarksession", None)
    if bs is not None:
        try:
            machine = dict(bs.get_machine_info() or {})
        except Exception:  # machine info is decoration; the report stands without it
            machine = {}
    runs = runs_from_records(session.records, machine, dt.datetime.now(dt.timezone.utc).isoformat())
    err = io.StringIO()
    write_report(runs, out, "markdown", out.parent / "charts", err=err)
    return (err.getvalue() + f"pytest-ormbench: report written to {out}").strip()
