"""The sync control arm on MariaDB: hand-written SQL on mysqlclient (MySQLdb), the driver's plain API.

It prices sync ORM overhead on MariaDB: mysqlclient is the driver Django, SQLAlchemy and SQLObject document
first. Rows go in as dicts and come out as tuples, as on the other control arms. The connection runs in
autocommit mode, and each op that writes opens its one transaction with ``begin()`` ... ``commit()``.
mysqlclient quotes parameters on the client (no server-side prepare), and ``executemany`` of an INSERT
sends one multi-row ``INSERT ... VALUES (...), (...)`` per packet-sized chunk. An insert's id is the
connection's ``insert_id()`` (MariaDB's ``LAST_INSERT_ID()``, carried in the OK packet: no extra round trip).

It is the floor, so I, J and K, one UPDATE or DELETE per row, go out as multi-statement queries of up to
1,000 statements (``_control_sql.multi_statements``: mysqlclient connects with ``CLIENT.MULTI_STATEMENTS``),
one round trip per chunk; the server runs and counts the same statements as one by one.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import MySQLdb

from pytest_ormbench.suites._control_sql import MysqlControl, for_psycopg, multi_statements
from pytest_ormbench.suites._control_sql import encode_json as encode
from pytest_ormbench.arms.sql import SqliteArm as SqlArm
from pytest_ormbench.arms.notes import load_notes


NOTES = load_notes("pytest_ormbench.suites", "raw_mysqlclient")


class RawMysqlclientArm(MysqlControl, SqlArm):
    name = "mysqlclient"
    label = "raw mysqlclient"
    driver = "mysqlclient"
    packages = ("MySQLdb",)
    database_notes = NOTES.database_notes

    conn: Any = None

    # -- connection -----------------------------------------------------------
    def open(self, path: Any) -> None:
        self.path = path
        self.conn = MySQLdb.connect(host=path.host, port=path.port, user=path.user, password=path.password or "",
                                    database=path.dbname, charset="utf8mb4", autocommit=True)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def raw_connection(self) -> Any:
        assert self.conn is not None
        return self.conn

    def create_schema(self) -> None:
        with self.raw_connection().cursor() as cur:
            for stmt in self.sql.ddl():
                cur.execute(stmt)

    def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        c = self.raw_connection()
        c.begin()
        with c.cursor() as cur:
            cur.executemany(for_psycopg(self.sql.insert_link), links)
        c.commit()

    def describe(self) -> dict[str, Any]:
        return {"mysqlclient": ".".join(map(str, MySQLdb.version_info[:3])),
                "client_library": MySQLdb._mysql.get_client_info()}

    # -- objects ----------------------------------------------------------------
    def load_all(self) -> list[dict[str, Any]]:
        names = self.model.field_names
        with self.raw_connection().cursor() as cur:
            cur.execute(self.sql.all)
            return [dict(zip(names, r)) for r in cur.fetchall()]

    def _select(self, cur: Any, sql: str, args: Sequence[Any]) -> list[tuple]:
        cur.execute(sql, args)
        return list(cur.fetchall())

    # -- operations -----------------------------------------------------------
    def insert_single(self, objs: list[dict[str, Any]]) -> None:
        c = self.raw_connection()
        sql = self._insert_sql(objs[0])
        with c.cursor() as cur:
            for obj in objs:
                c.begin()
                cur.execute(sql, self._values(obj))
                obj["id"] = cur.lastrowid
                c.commit()

    def insert_batch(self, objs: list[dict[str, Any]]) -> None:
        c = self.raw_connection()
        sql = self._insert_sql(objs[0])
        c.begin()
        with c.cursor() as cur:
            for obj in objs:
                cur.execute(sql, self._values(obj))
                obj["id"] = cur.lastrowid
        c.commit()

    def insert_bulk(self, objs: list[dict[str, Any]]) -> None:
        c = self.raw_connection()
        c.begin()
        with c.cursor() as cur:
            cur.executemany(self._insert_sql(objs[0]), [self._values(o) for o in objs])
        c.commit()

    def filter_large(self, levels: Sequence[int]) -> list[tuple]:
        sql, out = for_psycopg(self.sql.by_level), []
        with self.raw_connection().cursor() as cur:
            for lv in levels:
                out.extend(self._select(cur, sql, (lv,)))
        return out

    filter_tuples = filter_large

    def filter_dicts(self, levels: Sequence[int]) -> list[dict[str, Any]]:
        sql, names, out = for_psycopg(self.sql.by_level), self.model.field_names, []
        with self.raw_connection().cursor() as cur:
            for lv in levels:
                out.extend(dict(zip(names, r)) for r in self._select(cur, sql, (lv,)))
        return out

    def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[tuple]:
        sql, out = for_psycopg(self.sql.page), []
        with self.raw_connection().cursor() as cur:
            for lv, offset in pages:
                out.extend(self._select(cur, sql, (lv, limit, offset)))
        return out

    def get(self, ids: Sequence[int]) -> list[tuple]:
        sql, out = for_psycopg(self.sql.by_id), []
        with self.raw_connection().cursor() as cur:
            for i in ids:
                cur.execute(sql, (i,))
                out.append(cur.fetchone())
        return out

    def _write_each(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One transaction, one statement per row (an UPDATE or DELETE per object, as an ORM sends them),
        sent as multi-statement queries; every statement's result is read before the next query."""
        c = self.raw_connection()
        c.begin()
        with c.cursor() as cur:
            for text, args in multi_statements(sql, rows):
                cur.execute(text, args)
                while cur.nextset():
                    pass
        c.commit()

    def update_whole(self, objs: list[dict[str, Any]], values: Sequence[Mapping[str, Any]]) -> None:
        rest = self.sql.rest
        for obj, new in zip(objs, values):
            obj.update(new)
        self._write_each(for_psycopg(self.sql.update_whole), [[encode(o[n]) for n in rest] + [o["id"]] for o in objs])

    def update_partial(self, objs: list[dict[str, Any]], levels: Sequence[int]) -> None:
        for obj, lv in zip(objs, levels):
            obj["level"] = lv
        self._write_each(for_psycopg(self.sql.update_level), [(o["level"], o["id"]) for o in objs])

    def delete(self, objs: list[dict[str, Any]]) -> None:
        self._write_each(for_psycopg(self.sql.delete), [(o["id"],) for o in objs])
