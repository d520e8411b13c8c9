"""The sync SQLAlchemy-family arms' op bodies (``Session``: pysqlite, psycopg 3, mysqlclient)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Mapping, Sequence

import sqlalchemy
from sqlalchemy import insert
from sqlalchemy.orm import sessionmaker
from sqlalchemy.pool import StaticPool

from pytest_ormbench.suites.sqlalchemy_family.base import _SABase
from pytest_ormbench.suites.sqlalchemy_family.engine import SERVER_POOL, OneConnection, server_url
from pytest_ormbench.arms.helpers import assign_all
from pytest_ormbench.arms.server import settings_from_rows, settings_sql


class SyncOps(_SABase):
    """The eleven ops on a sync ``Session`` over pysqlite."""

    packages = ("SQLAlchemy",)
    driver = "sqlite3"
    is_async = False
    independent_sessions = True  # an engine and session per instance; the mapped classes bind to no database

    def open_sqlite(self, path: Path) -> None:
        self._open(self.dialect.url(path, "sqlite"), poolclass=StaticPool)

    def open_postgresql(self, location: Any) -> None:
        self._open(server_url(location, False), **SERVER_POOL)  # psycopg 3

    def open_mysql(self, location: Any) -> None:
        self._open(server_url(location, False), **SERVER_POOL)  # mysqlclient, utf8mb4

    def _open(self, url: str, **pool: Any) -> None:
        """The engine on ``url``, held to one connection (``pool``: the database's pool of one)."""
        self._setup_models()
        self._conn = OneConnection(self.settings, server=self.dialect.server)
        self.engine = sqlalchemy.create_engine(url, **pool)
        self._conn.install(self.engine)
        self.Session = sessionmaker(self.engine, class_=self.session_class(), expire_on_commit=False)
        self.session = None

    @classmethod
    def session_class(cls) -> type:
        from sqlalchemy.orm import Session

        return Session

    def close(self) -> None:
        self._end_session()
        if self.engine is not None:
            self.engine.dispose()
            self.engine = None

    def raw_connection(self) -> sqlite3.Connection:
        if self._conn.dbapi is None:
            self.engine.raw_connection().close()  # connects (the connect listener keeps it)
        return self._conn.dbapi

    def server_settings(self) -> dict[str, str]:
        # through the engine, on its one pooled connection: closing the Connection rolls back the
        # transaction psycopg began for the read (a read on the bare DB-API connection would leave it open)
        with self.engine.connect() as c:
            return settings_from_rows(self.path, c.exec_driver_sql(settings_sql(self.path)).all())

    def _end_session(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def before_restore(self) -> None:
        self._end_session()

    def create_schema(self) -> None:
        self.ms.tables[0].metadata.create_all(self.engine, tables=list(self.ms.tables))

    def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        with self.Session() as s:
            getattr(s, self.flavor.rows_method)(insert(self.ms.link), params=self._link_rows(links))
            s.commit()

    def load_all(self) -> list[Any]:
        self._end_session()
        self.session = self.Session()
        return list(getattr(self.session, self.flavor.objects_method)(self._all_ordered()).all())

    # -- A, B, C ------------------------------------------------------------
    def insert_single(self, objs: list[Any]) -> None:
        with self.Session() as s:
            for obj in objs:
                s.add(obj)
                s.commit()

    def insert_batch(self, objs: list[Any]) -> None:
        with self.Session() as s:
            for obj in objs:
                s.add(obj)
            s.commit()

    def insert_bulk(self, objs: list[Any]) -> None:
        with self.Session() as s:
            if self.bulk_path == "bulk_save_objects":
                s.bulk_save_objects(objs)
            else:
                getattr(s, self.flavor.rows_method)(insert(self.M), params=self._bulk_rows(objs))
            s.commit()

    # -- D to H ----------------------------------------------------------------
    def filter_large(self, levels: Sequence[int]) -> list[Any]:
        out: list[Any] = []
        with self.Session() as s:
            fetch = getattr(s, self.flavor.objects_method)
            for lv in levels:
                out.extend(fetch(self._by_level(lv)).all())
        return out

    def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[Any]:
        out: list[Any] = []
        with self.Session() as s:
            fetch = getattr(s, self.flavor.objects_method)
            for lv, offset in pages:
                out.extend(fetch(self._page(lv, offset, limit)).all())
        return out

    def get(self, ids: Sequence[int]) -> list[Any]:
        M = self.M
        with self.Session() as s:
            get = s.get
            return [get(M, i, populate_existing=True) for i in ids]

    def filter_dicts(self, levels: Sequence[int]) -> list[Any]:
        out: list[Any] = []
        with self.Session() as s:
            run = getattr(s, self.flavor.rows_method)
            for lv in levels:
                out.extend(run(self._cols_by_level(lv)).mappings().all())
        return out

    def filter_tuples(self, levels: Sequence[int]) -> list[Any]:
        out: list[Any] = []
        with self.Session() as s:
            run = getattr(s, self.flavor.rows_method)
            for lv in levels:
                out.extend(run(self._cols_by_level(lv)).all())
        return out

    # -- I, J, K --------------------------------------------------------------
    def update_whole(self, objs: list[Any], values: Sequence[Mapping[str, Any]]) -> None:
        assign_all(objs, values)
        self.session.commit()
        self._end_session()

    def update_partial(self, objs: list[Any], levels: Sequence[int]) -> None:
        self._assign_levels(objs, levels)
        self.session.commit()
        self._end_session()

    def delete(self, objs: list[Any]) -> None:
        s = self.session
        for obj in objs:
            s.delete(obj)
        s.commit()
        self._end_session()
