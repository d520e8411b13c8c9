"""The sync control arm on PostgreSQL: hand-written SQL on psycopg 3, the driver's plain API.

It prices sync ORM overhead on a server: an ORM's figure over this one is what the ORM costs above
the driver and the round trips. Rows go in as dicts and come out as tuples, as on the sqlite3 control
arm. psycopg runs in autocommit mode, and each op that writes opens its one transaction with
``conn.transaction()`` (``BEGIN`` ... ``COMMIT``); psycopg prepares a statement on the server after
its fifth execution (its default ``prepare_threshold``; ``executemany`` prepares at once).

It is the floor, so every op that writes sends its statements the fastest way psycopg allows, without
changing what the op is (one statement per row, docs/operations.md): inside ``conn.pipeline()``
(libpq's pipeline mode, psycopg >= 3.1), where ``BEGIN``, the rows' statements and ``COMMIT`` go out
without waiting for one another and the ``COMMIT`` waits for them all (one round trip per transaction
instead of one per statement), and with ``cursor.executemany`` where one statement runs over many rows
(B through ``returning=True``, which gives each row's id). The statements the server runs, and so
their counts, are the same as one by one; only the waits between them are gone. Reads stay one query
after another.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import psycopg
from psycopg.types.json import Jsonb

from pytest_ormbench.suites._control_sql import ControlRows, ControlSql, for_psycopg
from pytest_ormbench.arms.sql import SqliteArm as SqlArm
from pytest_ormbench.arms.sql import SqlTables
from pytest_ormbench.arms.notes import load_notes


def _encode(value: Any) -> Any:
    return Jsonb(value) if isinstance(value, (dict, list)) else value


NOTES = load_notes("pytest_ormbench.suites", "raw_psycopg")


class RawPsycopgArm(ControlRows, SqlArm):
    name = "psycopg"
    label = "raw psycopg"
    driver = "psycopg"
    packages = ("psycopg",)
    databases = ("postgresql",)
    database_notes = NOTES.database_notes
    bulk_sets_ids = False
    deviations = NOTES.deviations

    conn: psycopg.Connection | None = None

    def __init__(self, model: Any, settings: Any) -> None:
        super().__init__(model, settings)
        self.sql = ControlSql(model)

    def tables(self) -> SqlTables:
        return self.sql.tables()

    # -- connection -----------------------------------------------------------
    def open(self, path: Any) -> None:
        self.path = path
        self.conn = psycopg.connect(path.conninfo(), autocommit=True)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def raw_connection(self) -> psycopg.Connection:
        assert self.conn is not None
        return self.conn

    def create_schema(self) -> None:
        with self.raw_connection().transaction():
            for stmt in self.sql.ddl():
                self.raw_connection().execute(stmt)

    def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        c = self.raw_connection()
        with c.transaction(), c.cursor() as cur:
            cur.executemany(for_psycopg(self.sql.insert_link), links)

    def describe(self) -> dict[str, Any]:
        return {"psycopg": psycopg.__version__, "libpq": psycopg.pq.version()}

    # -- objects ----------------------------------------------------------------
    def load_all(self) -> list[dict[str, Any]]:
        names = self.model.field_names
        return [dict(zip(names, r)) for r in self.raw_connection().execute(self.sql.all)]

    def _insert_sql(self, obj: Mapping[str, Any], returning: bool = True) -> str:
        return self.sql.insert_for(obj, returning, psycopg=True)

    def _values(self, obj: Mapping[str, Any]) -> list[Any]:
        return [_encode(v) for v in self.sql.values(obj)]

    # -- operations -----------------------------------------------------------
    def insert_single(self, objs: list[dict[str, Any]]) -> None:
        """Each row in its own transaction, committed before the next row starts: ``BEGIN``, ``INSERT``
        and ``COMMIT`` go out together and the ``COMMIT``'s sync brings the id back."""
        c = self.raw_connection()
        sql = self._insert_sql(objs[0])
        with c.pipeline(), c.cursor() as cur:
            for obj in objs:
                with c.transaction():
                    cur.execute(sql, self._values(obj))
                obj["id"] = cur.fetchone()[0]  # type: ignore[index]

    def insert_batch(self, objs: list[dict[str, Any]]) -> None:
        c = self.raw_connection()
        with c.cursor() as cur:
            with c.pipeline(), c.transaction():
                cur.executemany(self._insert_sql(objs[0]), [self._values(o) for o in objs], returning=True)
            for obj, _ in zip(objs, cur.results()):
                obj["id"] = cur.fetchone()[0]  # type: ignore[index]

    def insert_bulk(self, objs: list[dict[str, Any]]) -> None:
        self._write_many(self._insert_sql(objs[0], returning=False), [self._values(o) for o in objs])

    def filter_large(self, levels: Sequence[int]) -> list[tuple]:
        c, sql, out = self.raw_connection(), for_psycopg(self.sql.by_level), []
        for lv in levels:
            out.extend(c.execute(sql, (lv,)).fetchall())
        return out

    filter_tuples = filter_large

    def filter_dicts(self, levels: Sequence[int]) -> list[dict[str, Any]]:
        c, sql, names, out = self.raw_connection(), for_psycopg(self.sql.by_level), self.model.field_names, []
        for lv in levels:
            out.extend(dict(zip(names, r)) for r in c.execute(sql, (lv,)))
        return out

    def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[tuple]:
        c, sql, out = self.raw_connection(), for_psycopg(self.sql.page), []
        for lv, offset in pages:
            out.extend(c.execute(sql, (lv, limit, offset)).fetchall())
        return out

    def get(self, ids: Sequence[int]) -> list[tuple]:
        c, sql = self.raw_connection(), for_psycopg(self.sql.by_id)
        return [c.execute(sql, (i,)).fetchone() for i in ids]  # type: ignore[misc]

    def _write_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One transaction, ``sql`` once per row, all of it in one pipeline: one round trip."""
        c = self.raw_connection()
        with c.pipeline(), c.transaction(), c.cursor() as cur:
            cur.executemany(sql, rows)

    def update_whole(self, objs: list[dict[str, Any]], values: Sequence[Mapping[str, Any]]) -> None:
        rest = self.sql.rest
        for obj, new in zip(objs, values):
            obj.update(new)
        self._write_many(for_psycopg(self.sql.update_whole), [[_encode(o[n]) for n in rest] + [o["id"]] for o in objs])

    def update_partial(self, objs: list[dict[str, Any]], levels: Sequence[int]) -> None:
        for obj, lv in zip(objs, levels):
            obj["level"] = lv
        self._write_many(for_psycopg(self.sql.update_level), [(o["level"], o["id"]) for o in objs])

    def delete(self, objs: list[dict[str, Any]]) -> None:
        self._write_many(for_psycopg(self.sql.delete), [(o["id"],) for o in objs])
