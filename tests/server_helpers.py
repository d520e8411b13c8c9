"""The set-up and tear-down the tests on a throwaway PostgreSQL or MariaDB server share, in one place.

``db`` is the database axis' name: ``"postgresql"`` or ``"mysql"``. :func:`on_server` starts a server (or
takes one a module-scoped fixture started), hands its ServerInfo to the backend through the backend's
environment variable, and at the end drops every database the test made and closes the harness's
connections::

    with on_server("mysql", tmp_path, "asyncmy") as (database, server):
        ...

Under pytest a test is skipped where the server binaries or a driver are missing. Scripts a test runs with
``conftest.run_isolated`` import this module too (it puts tests/ on their path); the test checks
:func:`skip_unless_runs` before it starts one.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from pytest_ormbench.backends import DATABASES
from pytest_ormbench.provision import mysql as mysql_server, postgresql as pg_server

#: each server database's throwaway server, and the driver the harness's own connections use
_SERVERS = {"postgresql": pg_server, "mysql": mysql_server}
_HARNESS_DRIVERS = {"postgresql": "psycopg", "mysql": "pymysql"}


def missing(db: str, *drivers: str) -> str | None:
    """Why a test on a throwaway ``db`` server cannot run here (no binaries, a driver not installed), or None."""
    if _SERVERS[db].find_binaries() is None:
        return f"no {DATABASES[db].engine} server binaries here"
    for module in (_HARNESS_DRIVERS[db], *drivers):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (needed on {DATABASES[db].engine} here)"
    return None


def skip_unless_runs(db: str, *drivers: str) -> None:
    """Skip the calling test where :func:`missing` gives a reason."""
    reason = missing(db, *drivers)
    if reason is not None:
        import pytest

        pytest.skip(reason)


@contextlib.contextmanager
def started(db: str, *drivers: str) -> Iterator[Any]:
    """A throwaway ``db`` server for the block (the test skipped where it cannot run)."""
    skip_unless_runs(db, *drivers)
    with _SERVERS[db].start_server() as srv:
        yield srv


@contextlib.contextmanager
def on_server(db: str, tmp: Path, *drivers: str, server: Any = None,
              shared: bool = False) -> Iterator[tuple[Any, Any]]:
    """``(database, server)``: the harness's backend on a throwaway server; the run ``tmp`` names dropped after.

    ``server``: one already started (a module's fixture), else one is started for the block. ``shared``: the
    instance in ``DATABASES`` (the one an arm's restore goes through; MariaDB's remembers which template a
    database was copied from), else a new one.
    """
    if server is None:
        with started(db, *drivers) as srv, on_server(db, tmp, server=srv, shared=shared) as found:
            yield found
        return
    database = DATABASES[db] if shared else type(DATABASES[db])()
    env, before_env, before_info = database.server_env, os.environ.get(database.server_env), database._info
    os.environ[env] = json.dumps(server.info.to_json())
    database.close_connections()  # none left to a server an earlier test handed over
    database._info = None  # this server, not that one
    try:
        yield database, server
    finally:
        try:
            database.drop_run(database.run_prefix(tmp))
        finally:
            database.close_connections()
            database._info = before_info
            if before_env is None:
                os.environ.pop(env, None)
            else:
                os.environ[env] = before_env


@contextlib.contextmanager
def empty_database(db: str, tmp: Path, *drivers: str, server: Any = None,
                   shared: bool = False) -> Iterator[tuple[Any, Any]]:
    """``(database, location)``: :func:`on_server` and one empty work database on it."""
    with on_server(db, tmp, *drivers, server=server, shared=shared) as (database, _):
        location = database.location(tmp / "work", "w")
        database.create_empty(location)
        yield database, location


def new_template(database: Any, tmp: Path, stem: str) -> Any:
    """An empty template database under the run ``tmp`` (a cell's starting state is built in one)."""
    template = database.location(tmp / "templates", stem, template=True)
    database.create_empty(template)
    return template


def work_copy(database: Any, template: Any, tmp: Path, stem: str) -> Any:
    """A work database copied from ``template`` (finished as a template first), as a cell's round gets one."""
    database.finish_template(template)
    work = database.location(tmp / "work", stem)
    database.copy(template, work)
    return work


def wait_closed(database: Any, location: Any, timeout: float = 5.0) -> None:
    """Wait (up to ``timeout`` s) until no connection to ``location`` is left: the server ends a closed
    connection's thread or backend on its own time (a few ms). The caller asserts what it expects."""
    deadline = time.monotonic() + timeout
    while database.connections(location) and time.monotonic() < deadline:
        time.sleep(0.01)


def server_and_database(db: str, *drivers: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Two fixtures for a test module, to assign as ``server, database = server_and_database(db)``: ``server``,
    one throwaway server for the module, and ``database``, a new backend on it for each test."""
    import pytest

    @pytest.fixture(scope="module", name="server")
    def server_fixture() -> Iterator[Any]:
        with started(db, *drivers) as srv:
            yield srv

    @pytest.fixture(name="database")
    def database_fixture(server: Any, tmp_path: Path) -> Iterator[Any]:
        with on_server(db, tmp_path, server=server) as (database, _):
            yield database

    return server_fixture, database_fixture
