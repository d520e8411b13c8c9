"""The parent's servers for one run: started when a cell first needs one, stopped when the run ends.

A server database of the axis is either a throwaway server this run starts (``provision.postgresql.start_server``,
in a keeper process that also stops it if the run is killed) or one given by URL, where the run drops
the databases it created, and only those, at the end. Workers learn the server through one environment
variable per engine (``postgresql.SERVER_ENV``, ``mysql.SERVER_ENV``). Nothing here imports an ORM or pytest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ormbench.workload.spec import Settings
from pytest_ormbench.backends.mysql import MysqlDatabase
from pytest_ormbench.backends.postgresql import PostgresDatabase
from pytest_ormbench.backends.server import ServerDatabase

#: the server engines of the axis: the backend class, and the module that starts a server or checks a URL
ENGINES: dict[str, tuple[type[ServerDatabase], str]] = {
    "postgresql": (PostgresDatabase, "postgresql"),
    "mysql": (MysqlDatabase, "mysql"),
}


class ServerProblem(Exception):
    """A server database of the run cannot be had: its cells are skipped with this one line."""


@dataclass
class Servers:
    settings: Settings
    #: the scheduler's temporary directory: every database the run creates is named after it
    tmp: Path
    postgresql_url: str = ""
    mysql_url: str = ""
    _managed: dict[str, Any] = field(default_factory=dict)
    #: (db, rtt_ms) -> the latency proxy in front of that server, one per RTT of the sweep
    _proxies: dict[tuple[str, float], Any] = field(default_factory=dict)
    _info: dict[str, Any] = field(default_factory=dict)
    _problems: dict[str, str] = field(default_factory=dict)

    def env_for(self, db: str, rtts: tuple[float | None, ...] = ()) -> dict[str, str]:
        """The environment variables a worker on ``db`` needs (none for the embedded side).

        With ``rtts`` (the run's latency sweep) every RTT gets a latency proxy in front of the server, in a
        process of its own, and the worker a map of them: a cell's arm connects through the one of its RTT,
        the harness always to the server directly.
        """
        if db == "sqlite":
            return {}
        if db in self._problems:
            raise ServerProblem(self._problems[db])
        if db not in self._info:
            try:
                self._info[db] = self._start(db)
            except ServerProblem as exc:
                self._problems[db] = str(exc)
                raise
        info = self._info[db]
        backend = ENGINES[db][0]
        env = {backend.server_env: json.dumps(info.to_json())}
        proxies = {}
        for rtt_ms in (r for r in rtts if r is not None):
            proxy = self._proxies.get((db, rtt_ms))
            if proxy is None:
                from pytest_ormbench.provision.latency_proxy import ProxyError, start_proxy

                try:
                    proxy = self._proxies[(db, rtt_ms)] = start_proxy(info.host, info.port, rtt_ms)
                except (ProxyError, OSError) as exc:
                    raise ServerProblem(f"the latency proxy for {rtt_ms:g} ms did not start: {exc}") from None
            proxies[f"{rtt_ms:g}"] = {"host": proxy.host, "port": proxy.port}
        if proxies:
            env[backend.arm_address_env] = json.dumps(proxies)
        return env

    def _start(self, db: str) -> Any:
        if db not in ENGINES:
            raise ServerProblem(f"{db}: no server support in this version")
        import importlib

        module = importlib.import_module(f".{ENGINES[db][1]}", __package__)
        url = self.postgresql_url if db == "postgresql" else self.mysql_url
        requested = dict(self.settings.postgresql if db == "postgresql" else self.settings.mysql)
        try:
            if url:
                info = module.connect_url(url)
                _check_url_durability(db, info, requested)
                return info
            server = module.start_server(requested)
        except module.ServerUnavailable as exc:
            raise ServerProblem(str(exc)) from None
        self._managed[db] = server
        return server.info

    def info(self, db: str) -> Any:
        return self._info.get(db)

    def close(self) -> None:
        """Drop the run's databases on a URL server; stop the servers the run started (idempotent)."""
        import os

        for db, info in self._info.items():
            if info.managed:
                continue
            database = ENGINES[db][0]()
            env = database.server_env
            old = os.environ.get(env)
            os.environ[env] = json.dumps(info.to_json())
            try:
                database.drop_run(database.run_prefix(self.tmp))
            except Exception:  # noqa: BLE001 - the server went away: nothing of ours is left to drop there
                pass
            finally:
                database.close_connections()
                if old is None:
                    os.environ.pop(env, None)
                else:
                    os.environ[env] = old
        for proxy in self._proxies.values():
            proxy.stop()
        self._proxies.clear()
        for server in self._managed.values():
            server.stop()
        self._managed.clear()
        self._info.clear()


def _check_url_durability(db: str, info: Any, requested: dict[str, str]) -> None:
    """A URL server must already run under the requested durability (the run cannot change it there)."""
    if db == "postgresql":
        wanted = {"synchronous_commit": "on", "fsync": "on", "full_page_writes": "on"}
        option = "--ormbench-postgresql-settings"
    else:
        from pytest_ormbench.backends.mysql import durable_expectation

        wanted = {k: v.lower() for k, v in durable_expectation(info.settings, {}).items()}
        option = "--ormbench-mysql-settings"
    wanted.update({k: v.lower() for k, v in requested.items()})
    wrong = {k: (v, str(info.settings.get(k, "?")).lower()) for k, v in wanted.items()
             if str(info.settings.get(k, "?")).lower() != v}
    if wrong:
        said = ", ".join(f"{k}={have} (wanted {want})" for k, (want, have) in wrong.items())
        raise ServerProblem(f"the server at {info.host}:{info.port} runs with {said}; set them there, or ask for "
                            f"its settings with {option}, or let the plugin start a server")
