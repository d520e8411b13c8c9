"""Before the first cell: what the user asked for by name must be able to run, or the run fails in one line.

"Named" is ``--ormbench-arms`` on the command line or in the ini file; arms selected by default (``all``, the
control arms) and cells a ``-k`` keeps may be skipped, with their reasons, as before. A server database the
run asks for must start (or be reached) with the settings asked for.
"""

from __future__ import annotations

import pytest

from pytest_ormbench.plugin import options as _options
from pytest_ormbench.plugin.session import OrmbenchSession
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.arms.registry import all_arms, import_problems


def refuse_missing_arms(config: pytest.Config, run: _options.RunConfig, planned: list[CellKey]) -> None:
    """An arm the user named (``--ormbench-arms``, command line or ini) whose package is missing: one line, usage
    error. Arms selected by default (``all``, the control arms) and cells a ``-k`` keeps are skipped instead."""
    named = _options.explicit_arms(config, run)
    entries = all_arms(run.register)
    missing = {arm: why for arm in dict.fromkeys(k.arm for k in planned)
               if arm in named and (why := entries[arm].missing())}
    if missing:
        raise pytest.UsageError(cannot_run(missing))


def cannot_run(problems: dict[str, str]) -> str:
    return ("pytest-ormbench: --ormbench-arms names " + "; ".join(f"{arm}, which cannot run here: {why}"
                                                               for arm, why in problems.items())
            + " (leave it out of --ormbench-arms to run the others)")


def refuse_what_cannot_run(config: pytest.Config, ob: OrmbenchSession, planned: list[CellKey]) -> None:
    """Before the first cell: each named arm with third-party packages is imported in a process of its own, and
    every server database of the run is started (or reached); either failing is one line and a usage error."""
    from pytest_ormbench.provision.servers import ServerProblem

    scheduler = ob.scheduler
    assert scheduler is not None
    named = _options.explicit_arms(config, ob.run)
    entries = [scheduler.arms[arm] for arm in dict.fromkeys(k.arm for k in planned)
               if arm in named and scheduler.arms[arm].requires]
    problems = import_problems(entries, env=scheduler.env, cwd=str(scheduler.rootdir)) if entries else {}
    if problems:
        raise pytest.UsageError(cannot_run(problems))
    for db in dict.fromkeys(k.db for k in planned if k.db != "sqlite"):
        try:
            scheduler.servers.env_for(db, ob.run.rtts)
        except ServerProblem as exc:
            raise pytest.UsageError(server_refused(config, db, str(exc))) from None


def server_refused(config: pytest.Config, db: str, why: str) -> str:
    lines = [line.strip() for line in why.splitlines() if line.strip()]
    return (f"pytest-ormbench: {_options.spelled(config, 'dbs')} asks for {db}, and its server cannot be had: "
            + (lines[0] if lines else "no reason given") + (f" ({len(lines) - 1} more line(s) of its log "
                                                            "withheld)" if len(lines) > 1 else ""))


def asked_for(session: OrmbenchSession, key: CellKey, config: pytest.Config) -> bool:
    """Whether a skipped cell's skip hides work the user asked for: an arm named in ``--ormbench-arms``, or a server
    database (a skip there is a server that could not be had; the sqlite side's skips are missing packages)."""
    entry = all_arms(session.run.register).get(key.arm)
    missing = entry is not None and entry.missing(key.db) is not None
    return key.arm in _options.explicit_arms(config, session.run) if missing else key.db != "sqlite"
