"""The end of a run in the pytest layer: the baseline checked before anything runs, the comparison with it
after the last round, the terminal summary and the report (``--ormbench-report``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ormbench.plugin import options as _options
from pytest_ormbench.plugin.session import BASELINE_KEY, SESSION_KEY, OrmbenchSession, machine_info


def benchmark_storage(config: pytest.Config) -> Path:
    storage = str(config.getoption("benchmark_storage", None) or ".benchmarks")
    if storage.startswith("file://"):
        storage = storage[len("file://"):]
    path = Path(storage)
    return path if path.is_absolute() else Path(str(config.invocation_params.dir)) / path


def load_baseline(config: pytest.Config, run: _options.RunConfig) -> None:
    """Check the baseline and the thresholds before anything runs: a bad one is a usage error."""
    from pytest_ormbench.results.compare import CompareError, Thresholds, load_side

    try:
        thresholds = Thresholds.parse(list(run.thresholds))
    except CompareError as exc:
        raise pytest.UsageError(f"{_options.spelled(config, 'compare-threshold')}: {exc}") from None
    if not run.compare:
        return
    try:
        spec = run.compare
        if not Path(spec).is_absolute() and (Path(str(config.invocation_params.dir)) / spec).exists():
            spec = str(Path(str(config.invocation_params.dir)) / spec)
        baseline = load_side(spec, benchmark_storage(config))
    except CompareError as exc:
        raise pytest.UsageError(f"--ormbench-compare: {exc}") from None
    config.stash[BASELINE_KEY] = (baseline, thresholds)


def finish(session: pytest.Session) -> None:
    """The last drift probe, then the comparison with the baseline."""
    ob = session.config.stash.get(SESSION_KEY, None)
    if ob is None or ob.scheduler is None:
        return
    scheduler = ob.scheduler
    scheduler.finish()
    loaded = session.config.stash.get(BASELINE_KEY, None)
    if loaded is None or not scheduler.records:
        return
    from pytest_ormbench.results.compare import (CompareError, Side, compare, default_threshold_pct,
        render_markdown, render_text)

    baseline, thresholds = loaded
    measure = ob.run.compare_measure
    # parsed before the run over time's default; the user's patterns stay, the measure's default applies
    thresholds = thresholds.with_default_pct(default_threshold_pct(measure))
    machine = machine_info(session.config)
    new = Side.from_records(scheduler.records, machine, scheduler.run_facts()["drift_floor"],
                            schedule=ob.run.schedule)
    try:
        result = compare(baseline, new, thresholds, ob.run.alpha, ob.run.correction, ob.run.drift, measure=measure)
    except CompareError as exc:
        ob.comparison_text = f"pytest-ormbench: cannot compare with the baseline: {exc}"
        if session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    ob.comparison_text = render_text(result)
    # the verdict first: a Markdown copy that cannot be written must not hide a regression
    if result.exit_code and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if ob.run.compare_markdown:
        out = Path(ob.run.compare_markdown)
        if not out.is_absolute():
            out = Path(str(session.config.invocation_params.dir)) / out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render_markdown(result), encoding="utf-8")
        ob.comparison_text += f"\npytest-ormbench: comparison written to {out}"


def live_runs(session: OrmbenchSession, config: pytest.Config):  # noqa: ANN202
    """This run's records as the report reads files."""
    import datetime as dt

    from pytest_ormbench.results.report.load import runs_from_records

    return runs_from_records(session.scheduler.records, machine_info(config),
                             dt.datetime.now(dt.timezone.utc).isoformat(), session.scheduler.run_facts())


def write_report_now(session: OrmbenchSession, config: pytest.Config) -> str:
    """--ormbench-report: the same report ``ormbench report`` makes from the JSON."""
    import io

    from pytest_ormbench.results.report.write import charts_dir_for, write_report

    out = Path(session.run.report)
    if not out.is_absolute():
        out = Path(str(config.invocation_params.dir)) / out
    err = io.StringIO()
    write_report(live_runs(session, config), out, "markdown", charts_dir_for(out), err=err)
    return (err.getvalue() + f"pytest-ormbench: report written to {out}").strip()


def terminal_summary(terminalreporter, config: pytest.Config) -> None:  # noqa: ANN001
    """The end of the run on the terminal: the rows/s (or instructions) table, the drift floor, the cells without
    a number, the report written, the comparison, and last, for a busy run, one line saying so."""
    session = config.stash.get(SESSION_KEY, None)
    if session is None or session.scheduler is None:
        return
    scheduler = session.scheduler
    if not scheduler.records and not scheduler.not_run:
        return
    from pytest_ormbench.results.report.render import render_not_run, render_summary, text_table
    from pytest_ormbench.results.report.tables import busy_line
    from pytest_ormbench.results.report.tables.phases import phase_table

    tr = terminalreporter
    busy = None
    if scheduler.records:
        run = session.run
        tr.write_sep("=", "pytest-ormbench: instructions per row (median of rounds, lower is better)"
                     if run.instructions else "pytest-ormbench: rows per second (median of rounds, higher is better)")
        settings = ", ".join(f"{k}={v}" for k, v in run.durability().items())  # the databases run
        tr.write_line(f"settings: {settings}; {run.rounds} rounds per cell, iterations {run.sizes.iterations}, "
                      f"batch {run.sizes.batch}")
        runs = live_runs(session, config)
        tr.write_line(render_summary(runs))
        busy = None if run.instructions else busy_line(runs)
        facts = scheduler.run_facts()
        floor = facts["drift_floor"]
        figures = ", ".join(f"{p['rows_per_s']:,.0f}" for p in facts["probes"])
        tr.write_line(f"schedule: {facts['schedule']}; drift floor "
                      f"{'unknown' if floor is None else f'{floor:.1%}'} (sqlite3 probe, rows/s: {figures or 'none'})")
        for note in facts["notes"]:
            tr.write_line(note)
        account = phase_table(facts.get("phases"))
        if account is not None:
            tr.write_line("")
            tr.write_line(text_table(account, 100))
            if session.estimate is not None:
                tr.write_line(session.estimate.against(facts["phases"]))
    if scheduler.not_run:
        tr.write_sep("-", "pytest-ormbench: cells without a number")
        tr.write_line(render_not_run(scheduler.not_run))
    if session.run.report and scheduler.records:
        tr.write_line(write_report_now(session, config))
    if session.comparison_text:
        tr.write_sep("=", "pytest-ormbench: comparison with the baseline")
        tr.write_line(session.comparison_text)
    if busy:  # the last word of the run: its figures cannot carry the orders the tables show
        tr.write_line(f"pytest-ormbench: {busy}")
