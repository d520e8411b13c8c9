"""The plugin loads in every pytest session where it is installed: one that collects no cell must not notice it.

No signal handler, no ``pytest-ormbench-*`` directory, no ORM imported, and none of the machinery that runs
cells (the scheduler, the measuring child's modules, the servers). Each run is a fresh interpreter
(``runpytest_subprocess``): this process has imported all of that already.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

ORMS = ("django", "sqlalchemy", "peewee", "tortoise", "piccolo", "ormar", "sqlobject", "objectbox", "sqlmodel",
        "aiosqlite")
MACHINERY = ("pytest_ormbench.scheduling.scheduler", "pytest_ormbench.scheduling.workers",
             "pytest_ormbench.scheduling.processes",
             "pytest_ormbench.measuring.runner", "pytest_ormbench.measuring.worker",
             "pytest_ormbench.provision.servers")

#: records SIGTERM's handler before any plugin's pytest_configure, and after every plugin's pytest_unconfigure
CONFTEST = textwrap.dedent(
    """
    import signal

    import pytest

    BEFORE = []


    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(config):
        BEFORE.append(signal.getsignal(signal.SIGTERM))


    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(config):
        assert signal.getsignal(signal.SIGTERM) == BEFORE[0]
    """
)

UNRELATED = textwrap.dedent(
    f"""
    import os
    import signal
    import sys
    from pathlib import Path

    from conftest import BEFORE


    def test_an_unrelated_test(request):
        assert "pytest_ormbench.plugin.hooks" in sys.modules  # the plugin is loaded...
        assert request.config.pluginmanager.has_plugin("ormbench-control-arm")
        # ...and has done nothing
        assert signal.getsignal(signal.SIGTERM) == BEFORE[0], signal.getsignal(signal.SIGTERM)
        assert not list(Path(os.environ["TMPDIR"]).glob("pytest-ormbench-*"))
        imported = [m for m in sys.modules if m.split(".")[0] in {ORMS!r}]
        assert not imported, imported
        machinery = [m for m in {MACHINERY!r} if m in sys.modules]
        assert not machinery, machinery
    """
)


@pytest.mark.parametrize("args", [(), ("--ormbench-arms=sqlite3", "--ormbench-modes=warm", "--ormbench-probe")],
                         ids=["no options", "ormbench options"])
def test_a_session_without_cells_is_left_alone(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path, args: tuple[str, ...]) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_unrelated=UNRELATED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    assert "pytest-ormbench" not in result.stdout.str()  # no plan line, no summary
    assert not list(tmpdir.glob("pytest-ormbench-*")), list(tmpdir.iterdir())


def test_collect_only_starts_nothing(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                     tmp_path: Path) -> None:
    """Cells collected but none run: the plan is said, and nothing is made for a run that does not happen."""
    from conftest import BENCH_MODULE

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    pytester.makepyfile(test_bench=BENCH_MODULE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q",
                                           "--ormbench-arms=sqlite3", "--ormbench-ops=A")
    result.stdout.fnmatch_lines(["pytest-ormbench: preset full*: 6 cells of 1 arm(s)*", "6 tests collected*"])
    assert not list(tmpdir.glob("pytest-ormbench-*"))
