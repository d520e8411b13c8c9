"""MariaDB on the database axis: options, the throwaway server, the seam's copy and restore, counts, every arm's types."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_ormbench.results.record import unfold_environment

from conftest import TINY
import server_helpers

mysql_server = pytest.importorskip("pytest_ormbench.provision.mysql")
pymysql = pytest.importorskip("pymysql")
needs_server = pytest.mark.skipif(mysql_server.find_binaries() is None, reason="no MariaDB server binaries here")


# -- options ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("option, message", [
    ("--ormbench-mysql-settings=sync_binlog=0", "--ormbench-mysql-url and --ormbench-mysql-settings need*"),
    ("--ormbench-db=mysql --ormbench-mysql-settings=innodb_buffer_pool_size=1G",
     "--ormbench-mysql-settings: unknown setting 'innodb_buffer_pool_size'; valid: innodb_flush_log_at_trx_commit*"),
    ("--ormbench-db=mysql --ormbench-mysql-settings=log_bin=maybe", "--ormbench-mysql-settings: log_bin is ON or OFF*"),
    ("--ormbench-db=mysql --ormbench-mysql-settings=sync_binlog=x", "--ormbench-mysql-settings: sync_binlog takes a number*"),
])
def test_bad_mysql_options_are_usage_errors(bench: pytest.Pytester, option: str, message: str) -> None:
    result = bench.runpytest(*option.split())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_an_unreachable_url_is_one_line_and_a_usage_error(bench: pytest.Pytester) -> None:
    result = bench.runpytest("--ormbench-db=mariadb", "--ormbench-mysql-url=mysql://who:secret@127.0.0.1:1/x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    lines = [line for line in err.splitlines() if line.startswith("ERROR: --ormbench-mysql-url:")]
    assert len(lines) == 1 and "cannot connect to mysql://who:***@127.0.0.1:1/x" in lines[0], err
    assert "secret" not in err and "Traceback" not in err + result.stdout.str()
    result = bench.runpytest("--ormbench-db=mysql", "--ormbench-mysql-url=postgresql://u@h/d")
    result.stderr.fnmatch_lines(["ERROR: --ormbench-mysql-url: postgresql://u@h/d: not a MySQL/MariaDB URL*"])


def test_mariadb_is_the_mysql_axis_and_only_supported_arms_run_there(bench: pytest.Pytester) -> None:
    result = bench.runpytest("--collect-only", "-q", "--ormbench-db=mariadb", "--ormbench-models=simple",
                             "--ormbench-ops=B", "--ormbench-mode=warm")
    ids = [line.split("[")[1].rstrip("]") for line in result.stdout.lines if "test_orm[" in line]
    assert "mysqlclient-simple-insert_batch-warm-default-mysql" in ids, ids
    assert "asyncmy-simple-insert_batch-warm-default-mysql" in ids, ids
    assert not any(i.startswith(("psycopg-", "asyncpg-", "sqlite3-")) for i in ids), ids
    # Piccolo and ObjectBox are cells too: reported unsupported, with their reason, never dropped
    assert "piccolo-simple-insert_batch-warm-default-mysql" in ids, ids
    assert "objectbox-simple-insert_batch-warm-default-mysql" in ids, ids


def test_missing_server_binaries_fail_the_run_in_one_line_with_the_package_to_install(
        bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "nobin"
    empty.mkdir()
    monkeypatch.setenv("ORMBENCH_MYSQL_BINDIR", str(empty))
    result = bench.runpytest("--ormbench-db=mysql", "--ormbench-arms=asyncmy", "--ormbench-control=off",
                             "--ormbench-models=simple", "--ormbench-ops=B", "--ormbench-mode=warm",
                             "--ormbench-verify-only", "-rs", *TINY)
    # the user asked for this database: the run fails before measuring anything, in one line (issue 34)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-ormbench: *apt-get install mariadb-server*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


# -- the server ------------------------------------------------------------------------------------

@needs_server
def test_a_server_starts_with_the_durable_settings_and_leaves_nothing_when_stopped(short_tmpdir: Path) -> None:
    with mysql_server.start_server() as srv:
        info, directory, pid = srv.info, Path(srv.directory), srv.server_pid
        assert info.managed and info.host == "127.0.0.1" and "MariaDB" in info.version
        assert {k: info.settings[k] for k in ("innodb_flush_log_at_trx_commit", "innodb_doublewrite", "log_bin",
                                              "performance_schema")} == {
            "innodb_flush_log_at_trx_commit": "1", "innodb_doublewrite": "ON", "log_bin": "OFF",
            "performance_schema": "ON"}
        conn = pymysql.connect(host=info.host, port=info.port, user=info.user)
        conn.close()
        assert directory.is_dir() and os.path.exists(f"/proc/{pid}")
    assert not directory.exists() and not os.path.exists(f"/proc/{pid}")


@needs_server
def test_a_server_that_fails_to_start_is_one_line_and_leaves_nothing(short_tmpdir: Path) -> None:
    with pytest.raises(mysql_server.ServerUnavailable) as info:
        mysql_server.start_server({"innodb_no_such_option": "1"})
    message = str(info.value)
    assert "\n" not in message and message.startswith("mariadbd failed to start"), message
    assert "innodb_no_such_option" in message, message
    assert not list(short_tmpdir.iterdir())  # the fixture also checks, after the second start
    with pytest.raises(mysql_server.ServerUnavailable, match="set by pytest-ormbench"):
        mysql_server.start_server({"datadir": "/elsewhere"})


@needs_server
def test_the_server_dies_with_a_killed_parent(tmp_path: Path) -> None:
    script = ("import sys, time\n"
              "from pytest_ormbench.provision.mysql import start_server\n"
              "s = start_server()\n"
              "print(s.directory, s.server_pid, flush=True)\n"
              "time.sleep(60)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    directory, pid = proc.stdout.readline().split()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while (Path(directory).exists() or os.path.exists(f"/proc/{pid}")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(directory).exists() and not os.path.exists(f"/proc/{pid}")


# -- the seam on a live server ---------------------------------------------------------------------

#: ``server``, one throwaway server for the module; ``database``, a new backend on it for each test
server, database = server_helpers.server_and_database("mysql")


def _connect(loc, **kw):  # noqa: ANN001, ANN202
    return pymysql.connect(**loc.connect_args(), autocommit=True, **kw)


def _one(conn, sql: str):  # noqa: ANN001, ANN202
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def test_after_a_read_only_the_statistics_are_redone(database, tmp_path: Path) -> None:  # noqa: ANN001
    tmpl = database.location(tmp_path / "templates", "t", template=True)
    database.create_empty(tmpl)
    with _connect(tmpl) as conn:
        _one(conn, "CREATE TABLE j (id INT AUTO_INCREMENT PRIMARY KEY, level INT NOT NULL) ENGINE=InnoDB")
        _one(conn, "INSERT INTO j (level) VALUES (1), (2), (3)")
    database.finish_template(tmpl)
    dst = database.location(tmp_path / "work", "w")
    database.copy(tmpl, dst)
    with _connect(dst) as conn:
        _one(conn, "INSERT INTO j (level) VALUES (4)")
        # what a server does between a read's rounds: statistics and a flush, no refill (the row stays)
        assert database.refresh_unchanged(dst) is True
        assert [r[0] for r in _one(conn, "SELECT level FROM j ORDER BY id")] == [1, 2, 3, 4]


def test_a_restore_is_exact_and_resets_auto_increment(database, tmp_path: Path) -> None:  # noqa: ANN001
    tmpl = database.location(tmp_path / "templates", "t", template=True)
    database.create_empty(tmpl)
    with _connect(tmpl) as conn:
        _one(conn, "CREATE TABLE j (id INT AUTO_INCREMENT PRIMARY KEY, level INT NOT NULL, doc JSON, "
                   "at DATETIME(6)) ENGINE=InnoDB")
        _one(conn, "CREATE TABLE k (id INT AUTO_INCREMENT PRIMARY KEY, j_id INT, "
                   "FOREIGN KEY (j_id) REFERENCES j(id) ON DELETE CASCADE) ENGINE=InnoDB")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO j (id, level, doc, at) VALUES (%s, %s, %s, %s)",
                            [(i, i % 5, json.dumps({"n": i}), dt.datetime(2026, 1, 1, 0, 0, i, 123456))
                             for i in range(1, 51)])
            cur.executemany("INSERT INTO k (j_id) VALUES (%s)", [(i,) for i in range(1, 11)])
    database.finish_template(tmpl)
    dst = database.location(tmp_path / "work", "w")
    database.copy(tmpl, dst)
    types = database.column_types(dst)
    assert types["j.doc"] == "longtext (json)" and types["j.at"] == "datetime(6)", types
    with _connect(dst) as conn:
        _one(conn, "INSERT INTO j (level) VALUES (1)")
        assert _one(conn, "SELECT LAST_INSERT_ID()")[0][0] == 51
        _one(conn, "INSERT INTO j (level) VALUES (2)")
        _one(conn, "DELETE FROM j WHERE id <= 10")  # cascades to k
        _one(conn, "UPDATE j SET level = 99, doc = NULL WHERE id = 20")
        database.restore(dst)  # while the arm's connection stays open
        assert [r[0] for r in _one(conn, "SELECT id FROM j ORDER BY id")] == list(range(1, 51))
        assert len(_one(conn, "SELECT id FROM k")) == 10
        level, doc, at = _one(conn, "SELECT level, doc, at FROM j WHERE id = 20")[0]
        assert (level, json.loads(doc), at) == (0, {"n": 20}, dt.datetime(2026, 1, 1, 0, 0, 20, 123456))
        _one(conn, "INSERT INTO j (level) VALUES (1)")
        assert _one(conn, "SELECT LAST_INSERT_ID()")[0][0] == 51


def test_a_restore_refuses_to_wait_forever_on_an_open_transaction(database, tmp_path: Path,  # noqa: ANN001
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    tmpl = database.location(tmp_path / "templates", "t", template=True)
    database.create_empty(tmpl)
    with _connect(tmpl) as conn:
        _one(conn, "CREATE TABLE j (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB")
    database.finish_template(tmpl)
    dst = database.location(tmp_path / "work", "w")
    database.copy(tmpl, dst)
    monkeypatch.setattr(type(database), "restore_lock_timeout", 1)
    database.close_connections()  # the harness's next connection takes the shorter timeout
    conn = pymysql.connect(**dst.connect_args(), autocommit=False)  # the SELECT leaves a transaction open
    try:
        _one(conn, "SELECT count(*) FROM j")
        assert database.open_transactions(dst) == 1
        with pytest.raises(RuntimeError, match="holds a transaction open"):
            database.restore(dst)
    finally:
        conn.close()


def test_commits_and_connections_are_counted_by_the_server(database, tmp_path: Path) -> None:  # noqa: ANN001
    loc = database.location(tmp_path / "work", "w")
    database.create_empty(loc)
    with _connect(loc) as conn:
        _one(conn, "CREATE TABLE j (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB")
        assert database.connections(loc) == 1
        before = database.commits(loc)
        _one(conn, "SELECT count(*) FROM j")  # a read is no read-write transaction
        conn.begin()
        _one(conn, "INSERT INTO j VALUES ()")
        _one(conn, "INSERT INTO j VALUES ()")
        conn.commit()
        _one(conn, "INSERT INTO j VALUES ()")
        assert database.commits(loc) - before == 2
        assert database.open_transactions(loc) == 0
        with _connect(loc):
            assert database.connections(loc) == 2


# -- every arm on MariaDB --------------------------------------------------------------------------

def _mysql_arms() -> list[str]:
    from pytest_ormbench.arms.registry import BUILTIN_ARMS, import_arm

    out = []
    for entry in BUILTIN_ARMS:
        if entry.missing("mysql") is None and "mysql" in getattr(import_arm(entry.target), "databases", ()):
            out.append(entry.name)
    return out


@needs_server
@pytest.mark.parametrize("arm", _mysql_arms())
def test_every_arm_keeps_microseconds_doubles_and_decimals_on_mariadb(database, tmp_path: Path, arm: str) -> None:  # noqa: ANN001
    """Exact verification needs the same data everywhere: no arm may store a 4-byte FLOAT or a DATETIME
    without fractions (the MySQL defaults of several ORMs), and decimals stay DECIMAL(10,2)."""
    from pytest_ormbench.workload.spec import MODELS, Settings
    from pytest_ormbench.arms.registry import BUILTIN_ARMS, import_arm
    from pytest_ormbench.measuring.timing import drive

    entry = next(e for e in BUILTIN_ARMS if e.name == arm)
    loc = database.location(tmp_path / "templates", f"{arm}-wide", template=True)
    database.create_empty(loc)
    instance = import_arm(entry.target)(MODELS["wide"], Settings())
    drive(instance.open(loc))
    try:
        drive(instance.create_schema())
    finally:
        drive(instance.close())
    types = {k.split(".", 1)[1]: v for k, v in database.column_types(loc).items() if k.startswith("journal_wide.")}
    assert types["timestamp"] == "datetime(6)", types
    assert {types[f"col_float_{i}"] for i in range(1, 5)} == {"double"}, types
    assert {types[f"col_decimal_{i}"] for i in range(1, 5)} == {"decimal(10,2)"}, types


@needs_server
def test_a_cell_through_the_latency_proxy_verifies_and_records_its_rtt(bench: pytest.Pytester, tmp_path: Path) -> None:
    out = tmp_path / "rtt.json"
    # asyncmy, a wheel: the test checks the proxy, and mysqlclient (a C build) is not everywhere
    result = bench.runpytest("--ormbench-db=mysql", "--ormbench-arms=asyncmy", "--ormbench-control=off",
                             "--ormbench-models=simple", "--ormbench-ops=F", "--ormbench-mode=warm",
                             "--ormbench-rtt=2", *TINY, f"--benchmark-json={out}")
    result.assert_outcomes(passed=1)
    doc = json.loads(out.read_text())
    info = unfold_environment(doc["benchmarks"][0]["extra_info"], doc["ormbench"]["environments"])
    assert (info["db"], info["rtt_ms"], info["arm_info"]["latency_proxy_rtt_ms"]) == ("mysql", 2.0, "2")
    assert info["arm_info"]["mysql_version"].startswith("10.")
    # what the server ran with at start is recorded beside the per-round durability read-back
    assert "innodb_buffer_pool_size=" in info["arm_info"]["server_settings"]
    assert "innodb_flush_log_at_trx_commit=1" in info["arm_info"]["server_settings"]
    # 10 gets, each at least one 2 ms round trip: the proxy really stood between the arm and the server
    assert min(info["measures"]["wall_seconds"]) >= 10 * 0.002


@needs_server
def test_the_binary_log_switches_on_and_a_url_server_is_read_back() -> None:
    with mysql_server.start_server({"log_bin": "ON"}) as srv:
        assert srv.info.settings["log_bin"] == "ON" and srv.info.settings["sync_binlog"] == "1"
        info = mysql_server.connect_url(f"mysql://root@127.0.0.1:{srv.info.port}/")
        assert not info.managed and info.settings["log_bin"] == "ON" and "MariaDB" in info.version
    from pytest_ormbench.backends.mysql import durable_expectation

    # with the binary log off, sync_binlog has no effect: a stock server's 0 is accepted
    assert durable_expectation({"log_bin": "OFF", "sync_binlog": "0"}, {})["sync_binlog"] == "0"
    assert durable_expectation({"log_bin": "ON", "sync_binlog": "0"}, {})["sync_binlog"] == "1"
