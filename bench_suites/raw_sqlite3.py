"""The control arm: the same SQL the ORMs send, written by hand on sqlite3.

It prices ORM overhead: every ORM's figure divided by this one is what the ORM
costs over the driver. Objects are plain dicts in, tuples out (the cheapest
shapes sqlite3 offers); values are encoded for SQLite inside the timed region,
as an ORM's type layer would.

It is the floor, so where one statement runs over many rows (C, I, J, K) it goes through
``executemany``: one prepared statement stepped once per row inside the C module, without a Python
call, a statement-cache lookup and a cursor per row. The statements SQLite runs, and so the trace's
counts, are the same as one by one (the trace fires once per execution).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any, Mapping, Sequence

from pytest_ormbench.workload.spec import WIDE_DEFAULTS, Field
from pytest_ormbench.arms.sql import SqliteArm, SqlTables, apply_pragmas, tables_for
from pytest_ormbench.arms.notes import load_notes

_SQL_TYPES = {
    "id": "INTEGER PRIMARY KEY", "datetime": "DATETIME", "int": "INTEGER", "str": "VARCHAR(255)",
    "fk": "INTEGER", "float": "REAL", "smallint": "SMALLINT", "bigint": "BIGINT",
    "char": "VARCHAR(255)", "text": "TEXT", "decimal": "DECIMAL(10, 2)", "json": "JSON",
}


def _encode(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat(" ")
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return value


def _sql_literal(value: Any) -> str:
    value = _encode(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


NOTES = load_notes("pytest_ormbench.suites", "raw_sqlite3")


class RawSqlite3Arm(SqliteArm):
    name = "sqlite3"
    label = "raw sqlite3"
    driver = "sqlite3"
    packages = ()
    bulk_sets_ids = False
    independent_sessions = True  # a connection per instance
    deviations = NOTES.deviations

    conn: sqlite3.Connection | None = None

    @property
    def table(self) -> str:
        return f"journal_{self.model.name}"

    def tables(self) -> SqlTables:
        return tables_for(self.model, self.table)

    # -- connection -----------------------------------------------------------
    def open(self, path: Path) -> None:
        self.path = path
        self.conn = sqlite3.connect(str(path), isolation_level=None)
        apply_pragmas(self.conn, self.settings)
        names = self.model.field_names
        self._cols = ", ".join(names)
        self._select = f"SELECT {self._cols} FROM {self.table}"

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def raw_connection(self) -> sqlite3.Connection:
        assert self.conn is not None
        return self.conn

    def create_schema(self) -> None:
        cols = []
        for f in self.model.fields:
            cols.append(self._column_ddl(f))
        t = self.table
        stmts = [f"CREATE TABLE {t} ({', '.join(cols)})",
                 f"CREATE INDEX {t}_level ON {t}(level)", f"CREATE INDEX {t}_text ON {t}(text)"]
        if self.model.relations:
            stmts += [
                f"CREATE INDEX {t}_parent ON {t}(parent_id)",
                f"CREATE TABLE {t}_links (id INTEGER PRIMARY KEY, "
                f"from_id INTEGER NOT NULL REFERENCES {t}(id) ON DELETE CASCADE, "
                f"to_id INTEGER NOT NULL REFERENCES {t}(id) ON DELETE CASCADE)",
                f"CREATE INDEX {t}_links_from ON {t}_links(from_id)",
                f"CREATE INDEX {t}_links_to ON {t}_links(to_id)",
            ]
        for s in stmts:
            self.raw_connection().execute(s)

    def _column_ddl(self, f: Field) -> str:
        ddl = f"{f.name} {_SQL_TYPES[f.kind]}"
        if f.kind == "fk":
            ddl += f" REFERENCES {self.table}(id) ON DELETE SET NULL"
        elif f.kind != "id" and not f.nullable:
            ddl += " NOT NULL"
        if f.has_default:
            ddl += f" DEFAULT {_sql_literal(WIDE_DEFAULTS[f.kind])}"
        return ddl

    def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        c = self.raw_connection()
        c.execute("BEGIN")
        c.executemany(f"INSERT INTO {self.table}_links (from_id, to_id) VALUES (?, ?)", links)
        c.execute("COMMIT")

    # -- objects ----------------------------------------------------------------
    def build(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [dict(r) for r in rows]

    def load_all(self) -> list[dict[str, Any]]:
        names = self.model.field_names
        rows = self.raw_connection().execute(self._select + " ORDER BY id").fetchall()
        return [dict(zip(names, r)) for r in rows]

    def id_of(self, obj: Any) -> int | None:
        return obj.get("id") if isinstance(obj, dict) else obj[0]

    def fields_of(self, obj: Any) -> dict[str, Any]:
        return dict(obj) if isinstance(obj, dict) else dict(zip(self.model.field_names, obj))

    def _insert_sql(self, obj: Mapping[str, Any]) -> str:
        cols = [k for k in obj if k != "id"] if "id" not in obj or obj["id"] is None else list(obj)
        return f"INSERT INTO {self.table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"

    # -- operations -----------------------------------------------------------
    def insert_single(self, objs: list[dict[str, Any]]) -> None:
        c = self.raw_connection()
        sql = self._insert_sql(objs[0])
        for obj in objs:
            c.execute("BEGIN")
            obj["id"] = c.execute(sql, [_encode(v) for v in obj.values()]).lastrowid
            c.execute("COMMIT")

    def insert_batch(self, objs: list[dict[str, Any]]) -> None:
        c = self.raw_connection()
        sql = self._insert_sql(objs[0])
        c.execute("BEGIN")
        for obj in objs:
            obj["id"] = c.execute(sql, [_encode(v) for v in obj.values()]).lastrowid
        c.execute("COMMIT")

    def insert_bulk(self, objs: list[dict[str, Any]]) -> None:
        self._write_many(self._insert_sql(objs[0]), [[_encode(v) for v in o.values()] for o in objs])

    def filter_large(self, levels: Sequence[int]) -> list[tuple]:
        c, sql, out = self.raw_connection(), self._select + " WHERE level = ?", []
        for lv in levels:
            out.extend(c.execute(sql, (lv,)).fetchall())
        return out

    filter_tuples = filter_large

    def filter_dicts(self, levels: Sequence[int]) -> list[dict[str, Any]]:
        c, sql, names, out = self.raw_connection(), self._select + " WHERE level = ?", self.model.field_names, []
        for lv in levels:
            out.extend(dict(zip(names, r)) for r in c.execute(sql, (lv,)))
        return out

    def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[tuple]:
        c, out = self.raw_connection(), []
        sql = self._select + " WHERE level = ? ORDER BY id LIMIT ? OFFSET ?"
        for lv, offset in pages:
            out.extend(c.execute(sql, (lv, limit, offset)).fetchall())
        return out

    def get(self, ids: Sequence[int]) -> list[tuple]:
        c, sql = self.raw_connection(), self._select + " WHERE id = ?"
        return [c.execute(sql, (i,)).fetchone() for i in ids]

    def _write_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One transaction, ``sql`` once per row through ``executemany``."""
        c = self.raw_connection()
        c.execute("BEGIN")
        c.executemany(sql, rows)
        c.execute("COMMIT")

    def update_whole(self, objs: list[dict[str, Any]], values: Sequence[Mapping[str, Any]]) -> None:
        names = [n for n in self.model.field_names if n != "id"]
        for obj, new in zip(objs, values):
            obj.update(new)
        self._write_many(f"UPDATE {self.table} SET {', '.join(f'{n} = ?' for n in names)} WHERE id = ?",
                         [[_encode(o[n]) for n in names] + [o["id"]] for o in objs])

    def update_partial(self, objs: list[dict[str, Any]], levels: Sequence[int]) -> None:
        for obj, lv in zip(objs, levels):
            obj["level"] = lv
        self._write_many(f"UPDATE {self.table} SET level = ? WHERE id = ?", [(o["level"], o["id"]) for o in objs])

    def delete(self, objs: list[dict[str, Any]]) -> None:
        self._write_many(f"DELETE FROM {self.table} WHERE id = ?", [(o["id"],) for o in objs])
