"""The database axis and the PostgreSQL backend: ids, options, the seam's restore, skipped and refused servers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import TINY
import server_helpers
from pytest_ormbench.results.record import unfold_environment
from pytest_ormbench.workload.cells import CellKey

pg_server = pytest.importorskip("pytest_ormbench.provision.postgresql")
psycopg = pytest.importorskip("psycopg")
needs_server = pytest.mark.skipif(pg_server.find_binaries() is None, reason="no PostgreSQL server binaries here")


# -- the axis in ids -------------------------------------------------------------------------------

def test_sqlite_ids_are_unchanged_and_server_ids_end_in_the_database() -> None:
    sqlite = CellKey("peewee", "simple", "A", "warm", "default")
    assert sqlite.id == "peewee-simple-insert_single-warm-default"
    pg = CellKey("peewee", "simple", "A", "warm", "default", "postgresql")
    assert pg.id == "peewee-simple-insert_single-warm-default-postgresql"
    for key in (sqlite, pg, CellKey("objectbox_nocodegen", "fk", "K", "cold", "large")):
        assert CellKey.parse(key.id) == key
    assert sqlite.astuple() == ("peewee", "simple", "A", "warm", "default")
    assert pg.astuple()[-1] == "postgresql"


# -- options ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("option, message", [
    ("--ormbench-db=oracle", "--ormbench-db: unknown value 'oracle'; valid: sqlite, postgresql"),
    ("--ormbench-postgresql-settings=fsync=off", "--ormbench-postgresql-url and --ormbench-postgresql-settings need"),
])
def test_bad_database_options_are_usage_errors(bench: pytest.Pytester, option: str, message: str) -> None:
    result = bench.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}*"])


def test_an_unknown_durability_setting_is_a_usage_error(bench: pytest.Pytester) -> None:
    result = bench.runpytest("--ormbench-db=postgresql", "--ormbench-postgresql-settings=work_mem=1GB")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --ormbench-postgresql-settings: unknown setting 'work_mem'; valid: "
                                 "synchronous_commit, fsync, full_page_writes, wal_sync_method*"])


def test_an_unreachable_url_is_one_line_and_a_usage_error(bench: pytest.Pytester) -> None:
    result = bench.runpytest("--ormbench-db=postgresql", "--ormbench-postgresql-url=postgresql://who:secret@127.0.0.1:1/x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert [line for line in err.splitlines() if line.startswith("ERROR: --ormbench-postgresql-url:")], err
    assert "secret" not in err and "Traceback" not in err + result.stdout.str()


def test_missing_server_binaries_fail_the_run_in_one_line_with_the_package_to_install(
        bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "nobin"
    empty.mkdir()
    monkeypatch.setenv("ORMBENCH_PG_BINDIR", str(empty))
    result = bench.runpytest("--ormbench-db=postgresql", "--ormbench-arms=psycopg", "--ormbench-control=off",
                             "--ormbench-models=simple", "--ormbench-ops=B", "--ormbench-mode=warm",
                             "--ormbench-verify-only", "-rs", *TINY)
    # the user asked for this database: the run fails before measuring anything, in one line (issue 34)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-ormbench: *apt-get install postgresql*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_arms_not_on_the_database_are_reported_and_controls_stay_on_their_own(bench: pytest.Pytester) -> None:
    result = bench.runpytest("--collect-only", "-q", "--ormbench-db=sqlite,postgresql", "--ormbench-models=simple",
                             "--ormbench-ops=B", "--ormbench-mode=warm")
    ids = [line for line in result.stdout.lines if "test_orm[" in line]
    assert any(i.endswith("[sqlite3-simple-insert_batch-warm-default]") for i in ids), ids
    assert any(i.endswith("[psycopg-simple-insert_batch-warm-default-postgresql]") for i in ids), ids
    assert any(i.endswith("[asyncpg-simple-insert_batch-warm-default-postgresql]") for i in ids), ids
    # a control arm runs on its own database only; an ORM arm is a cell on every database asked for
    assert not any("sqlite3-simple-insert_batch-warm-default-postgresql" in i for i in ids), ids
    assert not any(i.endswith("[psycopg-simple-insert_batch-warm-default]") for i in ids), ids
    assert any(i.endswith("[objectbox-simple-insert_batch-warm-default-postgresql]") for i in ids), ids


# -- a live server ---------------------------------------------------------------------------------

#: ``server``, one throwaway server for the module; ``database``, a new backend on it for each test
server, database = server_helpers.server_and_database("postgresql")


def _ids(conn, table: str) -> list[int]:  # noqa: ANN001
    return [r[0] for r in conn.execute(f"SELECT id FROM {table} ORDER BY id")]


def test_a_restore_is_exact_and_resets_the_sequence(database, tmp_path: Path) -> None:  # noqa: ANN001
    templates, work = tmp_path / "templates", tmp_path / "work"
    tmpl = database.location(templates, "t", template=True)
    database.create_empty(tmpl)
    with psycopg.connect(tmpl.conninfo(), autocommit=True) as conn:
        conn.execute("CREATE TABLE j (id serial PRIMARY KEY, level integer NOT NULL, doc jsonb)")
        conn.execute("INSERT INTO j (id, level, doc) SELECT g, g % 5, jsonb_build_object('n', g) "
                     "FROM generate_series(1, 50) g")  # explicit ids: the sequence has not moved
    database.finish_template(tmpl)
    dst = database.location(work, "w")
    database.copy(tmpl, dst)
    assert database.column_types(dst) == {"j.id": "integer", "j.level": "integer", "j.doc": "jsonb"}
    with psycopg.connect(dst.conninfo(), autocommit=True) as conn:
        # the template's sequence was set past the ids the rows carry: the next insert gets 51
        assert conn.execute("INSERT INTO j (level) VALUES (1) RETURNING id").fetchone()[0] == 51
        conn.execute("INSERT INTO j (level) VALUES (2)")
        conn.execute("DELETE FROM j WHERE id <= 10")
        conn.execute("UPDATE j SET level = 99, doc = NULL WHERE id = 20")
        database.restore(dst)  # while the arm's connection stays open
        assert _ids(conn, "j") == list(range(1, 51))
        assert conn.execute("SELECT level, doc FROM j WHERE id = 20").fetchone() == (0, {"n": 20})
        assert conn.execute("INSERT INTO j (level) VALUES (1) RETURNING id").fetchone()[0] == 51


def test_after_a_read_only_the_statistics_are_redone(database, tmp_path: Path) -> None:  # noqa: ANN001
    tmpl = database.location(tmp_path / "templates", "t", template=True)
    database.create_empty(tmpl)
    with psycopg.connect(tmpl.conninfo(), autocommit=True) as conn:
        conn.execute("CREATE TABLE j (id serial PRIMARY KEY, level integer NOT NULL)")
        conn.execute("INSERT INTO j (id, level) SELECT g, g % 5 FROM generate_series(1, 50) g")
    database.finish_template(tmpl)
    dst = database.location(tmp_path / "work", "w")
    database.copy(tmpl, dst)
    with psycopg.connect(dst.conninfo(), autocommit=True) as conn:
        conn.execute("INSERT INTO j (level) SELECT 1 FROM generate_series(1, 950)")  # a write the stats have not seen
        assert conn.execute("SELECT reltuples FROM pg_class WHERE relname = 'j'").fetchone()[0] == 50
        # what a server does between a read's rounds: ANALYZE (and a checkpoint), no refill
        assert database.refresh_unchanged(dst) is True
        assert conn.execute("SELECT reltuples FROM pg_class WHERE relname = 'j'").fetchone()[0] == 1000
        assert conn.execute("SELECT count(*) FROM j").fetchone()[0] == 1000


def test_a_restore_refuses_to_wait_forever_on_an_open_transaction(database, tmp_path: Path,  # noqa: ANN001
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    tmpl = database.location(tmp_path / "templates", "t", template=True)
    database.create_empty(tmpl)
    with psycopg.connect(tmpl.conninfo(), autocommit=True) as conn:
        conn.execute("CREATE TABLE j (id serial PRIMARY KEY)")
    database.finish_template(tmpl)
    dst = database.location(tmp_path / "work", "w")
    database.copy(tmpl, dst)
    with psycopg.connect(dst.conninfo()) as conn:  # not autocommit: the SELECT leaves a transaction open
        conn.execute("SELECT count(*) FROM j").fetchone()
        monkeypatch.setattr(type(database), "restore_lock_timeout", "200ms")
        with pytest.raises(RuntimeError, match="holds a transaction open"):
            database.restore(dst)


def test_commits_and_connections_are_counted_by_the_server(database, tmp_path: Path) -> None:  # noqa: ANN001
    loc = database.location(tmp_path / "work", "w")
    database.create_empty(loc)
    with psycopg.connect(loc.conninfo(), autocommit=True) as conn:
        conn.execute("CREATE TABLE j (id serial PRIMARY KEY)")
        assert database.connections(loc) == 1
        before = database.commits(loc)
        conn.execute("SELECT count(*) FROM j")  # a read takes no transaction id
        with conn.transaction():
            conn.execute("INSERT INTO j DEFAULT VALUES")
            conn.execute("INSERT INTO j DEFAULT VALUES")
        conn.execute("INSERT INTO j DEFAULT VALUES")
        assert database.commits(loc) - before == 2
        with psycopg.connect(loc.conninfo()):
            assert database.connections(loc) == 2


def test_a_latency_sweep_multiplies_the_server_cells_and_direct_adds_the_unproxied_one(bench: pytest.Pytester) -> None:
    result = bench.runpytest("--collect-only", "-q", "--ormbench-db=sqlite,postgresql", "--ormbench-models=simple",
                             "--ormbench-ops=F", "--ormbench-mode=warm", "--ormbench-arms=peewee",
                             "--ormbench-control=off", "--ormbench-rtt=direct,0,2.5")
    ids = sorted(line.split("[")[1].rstrip("]") for line in result.stdout.lines if "test_orm[" in line)
    assert ids == ["peewee-simple-get-warm-default", "peewee-simple-get-warm-default-postgresql",
                   "peewee-simple-get-warm-default-postgresql-rtt0", "peewee-simple-get-warm-default-postgresql-rtt2.5"]
    bad = bench.runpytest("--ormbench-db=postgresql", "--ormbench-rtt=-1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: --ormbench-rtt: expected round-trip times in ms*"])
    bad = bench.runpytest("--ormbench-rtt=5")
    bad.stderr.fnmatch_lines(["ERROR: --ormbench-rtt sweeps a server's round trip: it needs --ormbench-db=postgresql*"])


def _psycopg_gets(bench: pytest.Pytester, tmp_path: Path, rtts: str) -> dict:
    """The raw psycopg arm's gets (Test 1, warm, tiny) at each of ``rtts``, every cell passed: the saved JSON."""
    out = tmp_path / "gets.json"
    result = bench.runpytest("--ormbench-db=postgresql", "--ormbench-arms=psycopg", "--ormbench-control=off",
                             "--ormbench-models=simple", "--ormbench-ops=F", "--ormbench-mode=warm",
                             f"--ormbench-rtt={rtts}", *TINY, f"--benchmark-json={out}")
    result.assert_outcomes(passed=len(rtts.split(",")))
    return json.loads(out.read_text())


@needs_server
def test_a_cell_through_the_latency_proxy_verifies_and_records_its_rtt(bench: pytest.Pytester, tmp_path: Path) -> None:
    doc = _psycopg_gets(bench, tmp_path, "2")
    info = unfold_environment(doc["benchmarks"][0]["extra_info"], doc["ormbench"]["environments"])
    assert (info["db"], info["rtt_ms"], info["arm_info"]["latency_proxy_rtt_ms"]) == ("postgresql", 2.0, "2")
    assert "synchronous_commit=on" in info["arm_info"]["server_settings"]
    # 10 gets, each at least one 2 ms round trip: the proxy really stood between the arm and the server
    assert min(info["measures"]["wall_seconds"]) >= 10 * 0.002


@needs_server
def test_a_sweep_counts_statements_once_on_the_direct_connection(bench: pytest.Pytester, tmp_path: Path) -> None:
    doc = _psycopg_gets(bench, tmp_path, "3,direct,1")
    infos = {b["extra_info"]["rtt_ms"]: b["extra_info"] for b in doc["benchmarks"]}
    assert sorted(infos, key=str) == sorted([None, 1.0, 3.0], key=str)
    assert infos[None]["statements"] == infos[1.0]["statements"] == infos[3.0]["statements"]
    assert infos[None]["statements"][-1]["SELECT"] >= 1
    assert "statements_counted_direct" not in infos[None]
    assert infos[1.0]["statements_counted_direct"] is infos[3.0]["statements_counted_direct"] is True
