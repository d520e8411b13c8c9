"""Asked-for work that cannot run fails the run before anything is measured, and a finished run is never lost
to an output that cannot be written (issue 34); where an arm's packages came from is recorded."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TINY, register

#: one cell of the named arm, and nothing of the control's
ONE_CELL = ("--ormbench-models=simple", "--ormbench-ops=B", "--ormbench-modes=warm", "--ormbench-no-control")

#: what a run says once it starts measuring (nothing of it may appear when the run is refused)
MEASURING = "building and verifying the starting states"


def _one_error_line(result: pytest.RunResult, start: str) -> str:
    """The run was refused with pytest's usage-error status and one line, nothing measured, no traceback."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    errors = [line for line in result.stderr.lines if line.startswith("ERROR: ")]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR: {start}"), result.stderr.str()
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and MEASURING not in out
    return errors[0]


# -- arms ---------------------------------------------------------------------------------------------------

def test_a_named_arm_that_is_not_installed_fails_the_run_in_one_line(bench: pytest.Pytester) -> None:
    out = bench.path / "out.json"
    result = bench.runpytest(*TINY, *register("MissingArm"), "--ormbench-arms=missing", *ONE_CELL,
                             f"--benchmark-json={out}")
    line = _one_error_line(result, "pytest-ormbench: --ormbench-arms names missing, which cannot run here: ")
    assert "package 'surely_not_an_installed_package' is not installed" in line
    assert not out.exists()
    # named in the ini file: the same
    bench.makeini("[pytest]\normbench_arms = missing\n")
    _one_error_line(bench.runpytest(*TINY, *register("MissingArm"), *ONE_CELL),
                    "pytest-ormbench: --ormbench-arms names missing")


def test_an_arm_selected_by_default_or_by_k_that_is_not_installed_is_skipped(bench: pytest.Pytester) -> None:
    result = bench.runpytest(*TINY, *register("MissingArm"), *ONE_CELL, "-k", "missing", "-rs")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*missing: package 'surely_not_an_installed_package' is not installed*"])


BROKEN_ARM = """
from pytest_ormbench.suites.raw_sqlite3 import RawSqlite3Arm


class BrokenArm(RawSqlite3Arm):
    name = "broken"
    label = "broken"
    requires = ("broken_orm",)  # installed, and fails on import
"""


def test_a_named_arm_whose_package_fails_to_import_fails_the_run_in_one_line(bench: pytest.Pytester) -> None:
    bench.makepyfile(broken_arm=BROKEN_ARM, broken_orm="raise ImportError('broken_orm needs libfoo.so.3')\n")
    result = bench.runpytest(*TINY, "--ormbench-register=broken_arm:BrokenArm", "--ormbench-arms=broken", *ONE_CELL)
    line = _one_error_line(result, "pytest-ormbench: --ormbench-arms names broken, which cannot run here: ")
    assert line.endswith("it does not import: ImportError: broken_orm needs libfoo.so.3 (leave it out of "
                         "--ormbench-arms to run the others)"), line


def test_under_xdist_a_named_arm_stops_the_run_and_a_server_that_cannot_be_had_fails_its_cells(
        bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    result = bench.runpytest_subprocess(*TINY, "-n", "2", *register("MissingArm"), "--ormbench-arms=missing",
                                        *ONE_CELL, "--ormbench-verify-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "package 'surely_not_an_installed_package' is not installed" in result.stdout.str() + result.stderr.str()
    # the servers start in the workers: each cell fails (a worker's usage error would be an xdist crash)
    monkeypatch.setenv("ORMBENCH_PG_BINDIR", str(tmp_path))
    pytest.importorskip("psycopg")
    pytest.importorskip("asyncpg")
    result = bench.runpytest_subprocess(*TINY, "-n", "2", "--ormbench-dbs=sqlite,postgresql", "--ormbench-arms=sqlite3",
                                        "--ormbench-models=simple", "--ormbench-ops=A,B", "--ormbench-verify-only",
                                        "--ormbench-modes=warm")
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out
    result.assert_outcomes(passed=2, failed=4)  # sqlite3's cells run; the control arms' on PostgreSQL fail
    assert "asked for, and cannot run: " in out and "apt-get install postgresql" in out


# -- outputs ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--benchmark-json", "--ormbench-report", "--ormbench-compare-markdown"])
def test_an_output_whose_folder_cannot_be_made_is_a_usage_error_before_measuring(bench: pytest.Pytester,
                                                                                  flag: str) -> None:
    blocker = bench.path / "a-file"
    blocker.write_text("not a folder")
    target = blocker / "sub" / "out.txt"
    extra = [f"--ormbench-compare={bench.path / 'base.json'}"] if flag == "--ormbench-compare-markdown" else []
    if extra:
        _baseline(bench)
    result = bench.runpytest(*TINY, "--ormbench-arms=sqlite3", *ONE_CELL, f"{flag}={target}", *extra)
    line = _one_error_line(result, f"{flag}={target}: its folder cannot be made: ")
    assert "Not a directory" in line or "File exists" in line, line


def _baseline(bench: pytest.Pytester) -> None:
    """A baseline of the one cell the tests run (for --ormbench-compare-markdown)."""
    result = bench.runpytest(*TINY, "--ormbench-arms=sqlite3", *ONE_CELL, f"--benchmark-json={bench.path / 'base.json'}")
    assert result.ret == pytest.ExitCode.OK


def test_a_missing_output_folder_is_made_before_measuring(bench: pytest.Pytester) -> None:
    target = bench.path / "new" / "deeper" / "out.json"
    result = bench.runpytest(*TINY, "--ormbench-arms=sqlite3", *ONE_CELL, f"--benchmark-json={target}")
    assert result.ret == pytest.ExitCode.OK
    assert json.loads(target.read_text())["benchmarks"]


#: a conftest that takes an output's folder away while the cells run: the write at the end fails
VANISHING_FOLDER = """
import os
import shutil


def pytest_runtest_teardown(item):
    folder = os.environ["ORMBENCH_VANISH"]
    if os.path.isdir(folder):
        shutil.rmtree(folder)
        with open(folder, "w") as fh:  # a file where the folder was: it cannot be made again either
            fh.write("in the way")
"""


@pytest.mark.parametrize("flag", ["--benchmark-json", "--ormbench-report"])
def test_an_output_that_cannot_be_written_at_the_end_keeps_the_runs_json(bench: pytest.Pytester,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         flag: str) -> None:
    folder = bench.path / "gone"
    monkeypatch.setenv("ORMBENCH_VANISH", str(folder))
    bench.makeconftest(VANISHING_FOLDER)
    target = folder / "out.file"
    result = bench.runpytest(*TINY, "--ormbench-arms=sqlite3", *ONE_CELL, f"{flag}={target}")
    out = result.stdout.str()
    assert "Traceback" not in out + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    result.assert_outcomes(passed=1)
    lines = [line for line in result.stdout.lines if line.startswith(f"pytest-ormbench: could not write {flag}=")]
    assert len(lines) == 1, out
    kept = Path(lines[0].split("the run's JSON is kept in ")[1])
    assert kept.parent == bench.path and kept.name.startswith("ormbench-run-")
    data = json.loads(kept.read_text())
    assert [b["extra_info"]["arm"] for b in data["benchmarks"]] == ["sqlite3"] and "ormbench" in data


# -- servers ------------------------------------------------------------------------------------------------

def _postgresql_binaries() -> bool:
    try:
        from pytest_ormbench.provision import postgresql
    except ImportError:
        return False
    return postgresql.find_binaries() is not None


@pytest.mark.skipif(not _postgresql_binaries(), reason="no PostgreSQL server binaries here")
def test_a_server_setting_the_server_refuses_fails_the_run_in_one_line(bench: pytest.Pytester) -> None:
    pytest.importorskip("psycopg")
    result = bench.runpytest(*TINY, "--ormbench-dbs=postgresql", "--ormbench-postgresql-settings=fsync=banana",
                             "--ormbench-arms=psycopg", *ONE_CELL)
    line = _one_error_line(result, "pytest-ormbench: --ormbench-dbs asks for postgresql, and its server cannot be "
                                   "had: ")
    assert "fsync" in line, line


@pytest.mark.parametrize("db, driver, arm, env, package", [
    ("postgresql", "psycopg", "psycopg", "ORMBENCH_PG_BINDIR", "apt-get install postgresql"),
    ("mysql", "MySQLdb", "mysqlclient", "ORMBENCH_MYSQL_BINDIR", "apt-get install mariadb-server"),
])
def test_a_server_without_its_binaries_fails_the_run_with_the_package_to_install(
        bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, db: str, driver: str, arm: str,
        env: str, package: str) -> None:
    """(Before issue 34 its cells were skipped and the run passed, having measured nothing on the server.)"""
    pytest.importorskip(driver)
    empty = tmp_path / "nobin"
    empty.mkdir()
    monkeypatch.setenv(env, str(empty))
    result = bench.runpytest(f"--ormbench-db={db}", f"--ormbench-arms={arm}", *ONE_CELL, "--ormbench-verify-only",
                             *TINY)
    line = _one_error_line(result, f"pytest-ormbench: --ormbench-db asks for {db}, and its server cannot be had: ")
    assert package in line, line


# -- where an arm's packages came from ----------------------------------------------------------------------

def _fake_distribution(site: Path, name: str, version: str, direct_url: dict | None) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_an_editable_install_from_a_checkout_records_its_path_and_commit(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_ormbench.arms.registry import describe_origin, origin

    if shutil.which("git") is None:
        pytest.skip("no git here")
    checkout = tmp_path / "fakeorm checkout"
    checkout.mkdir()
    (checkout / "fakeorm.py").write_text("x = 1\n")
    _git(checkout, "init", "-q")
    _git(checkout, "add", "fakeorm.py")
    _git(checkout, "commit", "-q", "-m", "one")
    head = _git(checkout, "rev-parse", "HEAD")
    site = tmp_path / "site"
    _fake_distribution(site, "fakeorm", "1.2.dev0", {"url": checkout.as_uri(), "dir_info": {"editable": True}})
    _fake_distribution(site, "fakevcs", "2.0", {"url": "https://example.org/fakevcs.git",
                                                "vcs_info": {"vcs": "git", "commit_id": "ab" * 20,
                                                             "requested_revision": "main"}})
    _fake_distribution(site, "fakeindex", "3.0", None)
    monkeypatch.syspath_prepend(str(site))
    where = origin("fakeorm")
    assert where == {"path": str(checkout), "editable": True, "vcs": "git", "commit": head}
    assert describe_origin("fakeorm", "1.2.dev0", where) == (f"fakeorm 1.2.dev0 from {checkout} "
                                                            f"(editable, git {head[:12]})")
    (checkout / "fakeorm.py").write_text("x = 2\n")  # a change not committed: said so
    assert origin("fakeorm")["uncommitted_changes"] is True
    assert origin("fakevcs") == {"url": "https://example.org/fakevcs.git", "vcs": "git", "commit": "ab" * 20,
                                 "requested_revision": "main"}
    assert origin("fakeindex") == {} and origin("surely-not-installed") == {}


def test_a_version_outside_the_tested_range_is_one_line() -> None:
    from pytest_ormbench.arms.registry import tested_ranges, untested_version

    requirements = ['peewee>=3.17; extra == "peewee"', 'SQLAlchemy[asyncio]>=2.0.4; extra == "sqlalchemy"',
                    'SQLAlchemy[asyncio]>=2.0.4; extra == "sqlmodel"', "pytest>=8.1.1"]
    assert tested_ranges("sqlalchemy", requirements) == [">=2.0.4"]
    assert untested_version("peewee", "3.17.9", requirements) is None
    assert untested_version("peewee", "3.18.0.dev0", requirements) is None  # a checkout ahead of a release
    assert untested_version("peewee", "3.16.3", requirements) == (
        "peewee 3.16.3 is outside the range this arm was tested with (peewee>=3.17): its figures may not hold "
        "for this version")
    assert untested_version("objectbox", "0.1", requirements) is None  # no range known: nothing said


def test_the_worker_records_origins_and_untested_versions_in_arm_info(tmp_path: Path) -> None:
    """In a fresh interpreter (the measuring process's view): a fake old peewee from a local folder."""
    site = tmp_path / "site"
    _fake_distribution(site, "peewee", "3.10.0", {"url": (tmp_path / "pw").as_uri(), "dir_info": {}})
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); "
              "from pytest_ormbench.measuring.worker import _provenance; "
              "print(json.dumps(_provenance((('peewee', '3.10.0'),))))")
    done = subprocess.run([sys.executable, "-c", script, str(site)], capture_output=True, text=True, check=True)
    info = json.loads(done.stdout)
    assert info["origins"] == {"peewee": {"path": str(tmp_path / "pw"), "editable": False}}
    assert info["untested_versions"] == ["peewee 3.10.0 is outside the range this arm was tested with "
                                         "(peewee>=3.17): its figures may not hold for this version"]
