"""The README's two commands on a machine with only python3 (issue 34).

tox installs no C build by default (mysqlclient only with ORMBENCH_TOX_EXTRAS=mysql), ``tox -e bench`` adds the
options after ``--`` to its defaults (the last of a repeated option wins, so a user's own paths win), and a skip
for want of a system package is listed once at the end of a run of tests/ with the command that installs it, or
fails under ORMBENCH_REQUIRE_ALL=1 (CI).
"""

from __future__ import annotations

import configparser
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFTEST = Path(__file__).resolve().parent / "conftest.py"


def _tox() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "tox.ini", encoding="utf-8")
    return parser


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_no_tox_environment_needs_a_c_build_by_default() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]
    assert not any(d.startswith("mysqlclient") for d in extras["all"]), extras["all"]
    # every other MariaDB driver is a wheel and comes with `all`: the MariaDB cells of the other drivers run
    assert {d for d in extras["mysql"] if not d.startswith("mysqlclient")} <= set(extras["all"])
    tox = _tox()
    for section in tox.sections():
        if section == "testenv" or section.startswith("testenv:"):
            listed = _lines(tox[section].get("extras", ""))
            assert "mysql" not in listed, (section, listed)
    assert "{env:ORMBENCH_TOX_EXTRAS:}" in _lines(tox["testenv"]["extras"])
    assert "ORMBENCH_REQUIRE_ALL" in _lines(tox["testenv"]["passenv"])


def test_the_bench_environment_adds_the_options_after_its_defaults() -> None:
    (command,) = _lines(_tox()["testenv:bench"]["commands"])
    assert command.endswith(" {posargs}") and command.count("{posargs}") == 1, command
    assert "--benchmark-json=.ormbench/bench.json" in command and "--ormbench-report=.ormbench/report.md" in command


def test_a_repeated_option_takes_its_last_value(pytester: pytest.Pytester) -> None:
    """What lets the options after ``tox -e bench --`` win over the env's defaults."""
    config = pytester.parseconfig("--ormbench-preset=quick", "--benchmark-json=a.json",
                                  "--ormbench-report=a.md", "--ormbench-preset=full", "--benchmark-json",
                                  "b.json", "--ormbench-report=b.md")
    assert config.getoption("benchmark_json") == Path("b.json")
    assert [config.getoption(o.dest) for o in _options("report", "preset")] == ["b.md", "full"]


def _options(*names: str) -> list:
    from pytest_ormbench.plugin.options import OPTIONS

    by_name = {o.name: o for o in OPTIONS}
    return [by_name[n] for n in names]


INNER_CONFTEST = f"""
import importlib.util

spec = importlib.util.spec_from_file_location("ormbench_tests_conftest", {str(CONFTEST)!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
pytest_runtest_makereport = module.pytest_runtest_makereport
pytest_make_collect_report = module.pytest_make_collect_report
pytest_terminal_summary = module.pytest_terminal_summary
"""

INNER_TESTS = """
import pytest

@pytest.mark.parametrize("n", [1, 2])
def test_on_postgresql(n):
    pytest.skip("no PostgreSQL server binaries here")

def test_other():
    pytest.skip("no published run")

def test_passes():
    pass
"""


@pytest.fixture
def no_postgresql(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("ORMBENCH_PG_BINDIR", str(pytester.path / "no-such-bindir"))
    monkeypatch.delenv("ORMBENCH_REQUIRE_ALL", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(test_inner=INNER_TESTS)
    return pytester


def test_skips_for_want_of_a_system_package_are_listed_once(no_postgresql: pytest.Pytester) -> None:
    no_postgresql.makeconftest(INNER_CONFTEST)
    result = no_postgresql.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=3)
    out = result.stdout.str()
    wanted = [line for line in out.splitlines() if line.startswith("skipped for want of system packages:")]
    assert wanted == ["skipped for want of system packages: PostgreSQL server (apt-get install postgresql): "
                      "2 skipped"], out
    assert "skipped (1): no published run" in out


def test_require_all_makes_such_a_skip_a_failure(no_postgresql: pytest.Pytester,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    no_postgresql.makeconftest(INNER_CONFTEST)
    monkeypatch.setenv("ORMBENCH_REQUIRE_ALL", "1")
    result = no_postgresql.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=1, failed=2)  # the skip for another reason stays a skip
    result.stdout.fnmatch_lines(["*ORMBENCH_REQUIRE_ALL=1: skipped for want of PostgreSQL server*"])


def test_require_all_stops_a_session_on_a_machine_without_the_packages(no_postgresql: pytest.Pytester,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    no_postgresql.makeconftest(INNER_CONFTEST + "pytest_sessionstart = module.pytest_sessionstart\n")
    monkeypatch.setenv("ORMBENCH_REQUIRE_ALL", "1")
    result = no_postgresql.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ORMBENCH_REQUIRE_ALL=1, but this machine lacks: *PostgreSQL server "
                                 "(apt-get install postgresql)*"])
