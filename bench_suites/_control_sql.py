"""What the server control arms share: the schema in hand-written DDL, and the SQL of every op.

The statements are written once with numbered placeholders; each arm renders them for its driver
(``%s`` for psycopg, mysqlclient and asyncmy, ``$n`` for asyncpg). Types are what each server's users
write by hand. PostgreSQL: ``serial`` ids, ``timestamp``, ``double precision``, ``numeric(10, 2)`` and
``jsonb``. MariaDB: ``INT AUTO_INCREMENT`` ids, ``DATETIME(6)`` (microseconds kept), ``DOUBLE``,
``DECIMAL(10, 2)`` and ``JSON`` (MariaDB's alias of ``LONGTEXT`` with a ``json_valid`` check), InnoDB tables.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any, Mapping, Sequence

from pytest_ormbench.workload.spec import WIDE_DEFAULTS, Field, ModelSpec
from pytest_ormbench.arms.sql import SqlTables, tables_for
from pytest_ormbench.arms.notes import load_notes

PG_TYPES = {
    "id": "serial PRIMARY KEY", "datetime": "timestamp", "int": "integer", "str": "varchar(255)",
    "fk": "integer", "float": "double precision", "smallint": "smallint", "bigint": "bigint",
    "char": "varchar(255)", "text": "text", "decimal": "numeric(10, 2)", "json": "jsonb",
}
MYSQL_TYPES = {
    "id": "INT AUTO_INCREMENT PRIMARY KEY", "datetime": "DATETIME(6)", "int": "INT", "str": "VARCHAR(255)",
    "fk": "INT", "float": "DOUBLE", "smallint": "SMALLINT", "bigint": "BIGINT", "char": "VARCHAR(255)",
    "text": "TEXT", "decimal": "DECIMAL(10, 2)", "json": "JSON",
}


def _literal(value: Any, dialect: str = "postgresql") -> str:
    if isinstance(value, (dict, list)):
        text = "'" + json.dumps(value).replace("'", "''") + "'"
        return text + "::jsonb" if dialect == "postgresql" else text
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, Decimal):
        return str(value)
    return repr(value)


class ControlSql:
    """The SQL of one model, with ``$n`` placeholders (``for_psycopg`` turns them into ``%s``).

    ``dialect`` is ``postgresql`` or ``mysql``; on MariaDB inserts return no ids (the driver's ``lastrowid``).
    """

    def __init__(self, model: ModelSpec, dialect: str = "postgresql") -> None:
        self.model = model
        self.dialect = dialect
        self.table = t = f"journal_{model.name}"
        names = model.field_names
        self.names = names
        self.cols = ", ".join(names)
        self.select = f"SELECT {self.cols} FROM {t}"
        self.by_level = self.select + " WHERE level = $1"
        self.page = self.select + " WHERE level = $1 ORDER BY id LIMIT $2 OFFSET $3"
        self.by_id = self.select + " WHERE id = $1"
        self.all = self.select + " ORDER BY id"
        rest = [n for n in names if n != "id"]
        self.rest = rest
        self.update_whole = (f"UPDATE {t} SET {', '.join(f'{n} = ${i + 1}' for i, n in enumerate(rest))} "
                             f"WHERE id = ${len(rest) + 1}")
        self.update_level = f"UPDATE {t} SET level = $1 WHERE id = $2"
        self.delete = f"DELETE FROM {t} WHERE id = $1"
        self.insert_link = f"INSERT INTO {t}_links (from_id, to_id) VALUES ($1, $2)"

        self._inserts: dict[tuple[Any, ...], str] = {}

    def tables(self) -> SqlTables:
        return tables_for(self.model, self.table)

    def insert_for(self, obj: Mapping[str, Any], returning: bool = True, psycopg: bool = False) -> str:
        """The INSERT for the columns this row gives (the wide model leaves sets 3 and 4 to the schema)."""
        cols = tuple(k for k in obj if k != "id" or obj["id"] is not None)
        key = (cols, returning, psycopg)
        sql = self._inserts.get(key)
        if sql is None:
            marks = ", ".join(["%s"] * len(cols) if psycopg else [f"${i + 1}" for i in range(len(cols))])
            returns = returning and self.dialect == "postgresql"
            sql = f"INSERT INTO {self.table} ({', '.join(cols)}) VALUES ({marks})" + (" RETURNING id" if returns else "")
            self._inserts[key] = sql
        return sql

    @staticmethod
    def values(obj: Mapping[str, Any]) -> list[Any]:
        """The row's values in :meth:`insert_for`'s column order."""
        return [v for k, v in obj.items() if k != "id" or v is not None]

    def ddl(self) -> list[str]:
        if self.dialect == "mysql":
            return self._mysql_ddl()
        t = self.table
        cols = [self._column(f) for f in self.model.fields]
        stmts = [f"CREATE TABLE {t} ({', '.join(cols)})",
                 f"CREATE INDEX {t}_level ON {t}(level)", f"CREATE INDEX {t}_text ON {t}(text)"]
        if self.model.relations:
            stmts += [
                f"CREATE INDEX {t}_parent ON {t}(parent_id)",
                f"CREATE TABLE {t}_links (id serial PRIMARY KEY, "
                f"from_id integer NOT NULL REFERENCES {t}(id) ON DELETE CASCADE, "
                f"to_id integer NOT NULL REFERENCES {t}(id) ON DELETE CASCADE)",
                f"CREATE INDEX {t}_links_from ON {t}_links(from_id)",
                f"CREATE INDEX {t}_links_to ON {t}_links(to_id)",
            ]
        return stmts

    def _mysql_ddl(self) -> list[str]:
        t = self.table
        cols = [self._column(f) for f in self.model.fields]
        cols += [f"INDEX {t}_level (level)", f"INDEX {t}_text (text)"]
        if self.model.relations:
            cols += [f"INDEX {t}_parent (parent_id)",
                     f"FOREIGN KEY (parent_id) REFERENCES {t}(id) ON DELETE SET NULL"]
        stmts = [f"CREATE TABLE {t} ({', '.join(cols)}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"]
        if self.model.relations:
            stmts.append(
                f"CREATE TABLE {t}_links (id INT AUTO_INCREMENT PRIMARY KEY, from_id INT NOT NULL, to_id INT NOT NULL, "
                f"INDEX {t}_links_from (from_id), INDEX {t}_links_to (to_id), "
                f"FOREIGN KEY (from_id) REFERENCES {t}(id) ON DELETE CASCADE, "
                f"FOREIGN KEY (to_id) REFERENCES {t}(id) ON DELETE CASCADE) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
        return stmts

    def _column(self, f: Field) -> str:
        mysql = self.dialect == "mysql"
        ddl = f"{f.name} {(MYSQL_TYPES if mysql else PG_TYPES)[f.kind]}"
        if f.kind == "fk" and not mysql:  # MariaDB ignores an inline REFERENCES: its FOREIGN KEY is a table clause
            ddl += f" REFERENCES {self.table}(id) ON DELETE SET NULL"
        elif f.kind != "id" and not f.nullable:
            ddl += " NOT NULL"
        if f.has_default:
            ddl += f" DEFAULT {_literal(WIDE_DEFAULTS[f.kind], self.dialect)}"
        return ddl


_PLACEHOLDER = re.compile(r"\$\d+")


def for_psycopg(sql: str) -> str:
    """``$n`` placeholders as psycopg's ``%s`` (the statements hold no other ``%``)."""
    return _PLACEHOLDER.sub("%s", sql)


class ControlRows:
    """Rows in as dicts and out as tuples or records: the shapes the server control arms hand the harness."""

    model: ModelSpec

    def build(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [dict(r) for r in rows]

    def id_of(self, obj: Any) -> int | None:
        return obj.get("id") if isinstance(obj, dict) else obj[0]

    def fields_of(self, obj: Any) -> dict[str, Any]:
        return dict(obj) if isinstance(obj, dict) else dict(zip(self.model.field_names, obj))


def encode_json(value: Any) -> Any:
    """MariaDB's JSON columns take text: dicts and lists go in as ``json.dumps``."""
    return json.dumps(value) if isinstance(value, (dict, list)) else value


NOTES = load_notes("pytest_ormbench.suites", "control_sql")


MULTI_ROWS = 1000
"""Statements per multi-statement query of the MariaDB controls' I, J and K (a few MB of SQL at most on the wide
model, under MariaDB's 16 MB ``max_allowed_packet``)."""


def multi_statements(sql: str, rows: Sequence[Sequence[Any]]) -> list[tuple[str, list[Any]]]:
    """``sql`` once per row as multi-statement queries of up to :data:`MULTI_ROWS` statements: ``(text, args)``.

    Both MariaDB drivers quote parameters on the client and connect with ``CLIENT.MULTI_STATEMENTS``, so
    the fastest they send one UPDATE or DELETE per row is many of them, ``;``-separated, in one query: one
    round trip per chunk instead of one per row (their ``executemany`` rewrites only an INSERT; for any
    other statement it is ``execute`` per row). The server still runs, and counts, one statement per row.
    """
    out = []
    for i in range(0, len(rows), MULTI_ROWS):
        chunk = rows[i:i + MULTI_ROWS]
        out.append((";".join([sql] * len(chunk)), [a for r in chunk for a in r]))
    return out


class MysqlControl(ControlRows):
    """What the two MariaDB control arms share: where they run, their SQL and how a row's values go in."""

    databases = ("mysql",)
    bulk_sets_ids = False
    deviations = NOTES.deviations

    def __init__(self, model: ModelSpec, settings: Any) -> None:
        super().__init__(model, settings)  # type: ignore[call-arg]
        self.sql = ControlSql(model, "mysql")

    def tables(self) -> SqlTables:
        return self.sql.tables()

    def _insert_sql(self, obj: Mapping[str, Any]) -> str:
        """The INSERT for the row's columns, ``%s`` placeholders, no RETURNING (the id is ``lastrowid``)."""
        return self.sql.insert_for(obj, False, psycopg=True)

    def _values(self, obj: Mapping[str, Any]) -> list[Any]:
        return [encode_json(v) for v in self.sql.values(obj)]

