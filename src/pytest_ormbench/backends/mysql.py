"""MariaDB (and MySQL) behind the database seam: one database per starting state and per measuring process.

The server is started for the run by the parent (``provision.mysql.start_server``) or given by URL, and handed
to workers as on PostgreSQL (:mod:`.server`). Here, in the worker, the harness:

- builds a template once and finishes it (:meth:`MysqlDatabase.finish_template`): statistics gathered
  (persistent statistics, recalculated only when the harness says so);
- copies a template table by table (``SHOW CREATE TABLE``, which keeps foreign keys and ``AUTO_INCREMENT``,
  then ``INSERT ... SELECT``): MariaDB has no ``CREATE DATABASE ... TEMPLATE``;
- restores a database in place between warm rounds (:meth:`MysqlDatabase.restore`): ``TRUNCATE``, a refill
  from the template ``ORDER BY`` the primary key, ``AUTO_INCREMENT`` set back, ``ANALYZE TABLE``, so that
  the arm's connection stays open; the other candidates are measured in ``experiments/mysql_restore_cost.py``;
- writes every dirty page of the copied or restored tables before the op (``FLUSH TABLES ... FOR
  EXPORT``), as PostgreSQL's ``CHECKPOINT`` does;
- counts write transactions from InnoDB's ``trx_rw_commits`` counter, connections from
  ``information_schema.PROCESSLIST``, open transactions from ``information_schema.INNODB_TRX``, and
  statements from ``performance_schema``'s digest summary, never from the arm.

The harness talks to the server with PyMySQL; its own connections are left out of the connection and
transaction counts by id, and its statements out of the statement counts by the time they run (never
inside an op's window).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar, Sequence

from pytest_ormbench.workload.spec import Settings, Snapshot
from pytest_ormbench.workload.statements import StatementCounter
from pytest_ormbench.backends.server import ServerDatabase, ServerLocation, ServerNotConfigured, ServerStatements

SERVER_ENV = "ORMBENCH_MYSQL_SERVER"
ARM_ADDRESS_ENV = "ORMBENCH_MYSQL_ARM_ADDRESS"
#: the durability settings every arm's live connection must report
DURABILITY = ("innodb_flush_log_at_trx_commit", "sync_binlog", "log_bin", "innodb_doublewrite")
#: the durable settings (log_bin: whatever the server runs with, recorded; sync_binlog matters only with it on)
DURABLE_DEFAULTS = {"innodb_flush_log_at_trx_commit": "1", "sync_binlog": "1", "innodb_doublewrite": "ON"}


def durable_expectation(server_settings: dict[str, str], requested: dict[str, str]) -> dict[str, str]:
    """What every arm's connection must report: the durable settings, the server's binlog state, and what was
    asked for; with the binary log off, sync_binlog has no effect and is expected as the server has it."""
    expected = dict(DURABLE_DEFAULTS)
    expected["log_bin"] = str(server_settings.get("log_bin", "OFF")).upper()
    expected.update({k: (str(v).upper() if k in _BOOLEAN else str(v)) for k, v in requested.items()})
    if expected["log_bin"] == "OFF" and "sync_binlog" not in requested:
        expected["sync_binlog"] = str(server_settings.get("sync_binlog", expected["sync_binlog"]))
    return expected
#: one query that reads them on any connection (DB-API or async)
SETTINGS_SQL = "SELECT " + ", ".join(f"@@{name}" for name in DURABILITY)
_BOOLEAN = frozenset({"log_bin", "innodb_doublewrite"})


def normalize_settings(row: Sequence[Any]) -> dict[str, str]:
    """``SETTINGS_SQL``'s one row as the durability dict the harness compares (booleans as ON/OFF)."""
    out = {}
    for name, value in zip(DURABILITY, row):
        text = value.decode() if isinstance(value, bytes) else str(value)
        out[name] = {"1": "ON", "0": "OFF"}.get(text, text.upper()) if name in _BOOLEAN else text
    return out


def read_settings(conn: Any) -> dict[str, str]:
    """The durability a live DB-API connection (mysqlclient, PyMySQL) runs under.

    A connection outside autocommit begins nothing for this read (no table is touched, so InnoDB starts no
    transaction), so it leaves nothing open.
    """
    cur = conn.cursor()
    try:
        cur.execute(SETTINGS_SQL)
        return normalize_settings(cur.fetchone())
    finally:
        cur.close()


def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _pymysql() -> Any:
    try:
        import pymysql
    except ImportError:  # pragma: no cover - the mysql extra installs it
        raise ServerNotConfigured("MariaDB needs PyMySQL for the harness: pip install 'pytest-ormbench[mysql]'")
    return pymysql


class MysqlDatabase(ServerDatabase):
    """Databases on one MariaDB (or MySQL) server; commits, connections and statements counted by the server."""

    name: ClassVar[str] = "mysql"
    engine: ClassVar[str] = "MariaDB"
    server_env: ClassVar[str] = SERVER_ENV
    arm_address_env: ClassVar[str] = ARM_ADDRESS_ENV
    #: how long a restore waits for the arm's metadata locks before it says the arm left a transaction open
    restore_lock_timeout: ClassVar[int] = 10
    #: how a warm round restores (``truncate``: TRUNCATE and refill; ``delete``: DELETE and refill; ``copy``:
    #: a new copy of the template): the choice is measured in experiments/mysql_restore_cost.py
    restore_method: ClassVar[str] = "truncate"

    settings_sql: ClassVar[str] = SETTINGS_SQL

    @staticmethod
    def settings_from_rows(rows: Sequence[Sequence[Any]]) -> dict[str, str]:
        return normalize_settings(rows[0])

    @staticmethod
    def read_settings(conn: Any) -> dict[str, str]:
        return read_settings(conn)

    def __init__(self) -> None:
        super().__init__()
        #: connection ids of the harness's own connections (left out of every count)
        self._harness_ids: set[int] = set()
        #: work database -> the template it was copied from (a warm restore refills from it)
        self._template_of: dict[str, str] = {}
        #: template -> {table: AUTO_INCREMENT}
        self._auto_increments: dict[str, dict[str, int]] = {}

    # -- connections -------------------------------------------------------------------------------------
    def _connect(self, dbname: str) -> Any:
        pymysql = _pymysql()
        info = self.info
        conn = pymysql.connect(host=info.host, port=info.port, user=info.user, password=info.password or "",
                               database=dbname or None, autocommit=True, charset="utf8mb4",
                               program_name="pytest-ormbench")
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            self._harness_ids.add(int(cur.fetchone()[0]))
            cur.execute(f"SET SESSION lock_wait_timeout = {int(self.restore_lock_timeout)}, FOREIGN_KEY_CHECKS = 0")
        return conn

    @staticmethod
    def _closed(conn: Any) -> bool:
        return not conn.open

    def _forget(self, dbname: str) -> None:
        conn = self._conns.get(dbname)
        if conn is not None and conn.open:
            self._harness_ids.discard(conn.thread_id())
        super()._forget(dbname)

    def close_connections(self) -> None:
        if self._admin is not None and self._admin.open:
            self._harness_ids.discard(self._admin.thread_id())
        super().close_connections()

    def _run(self, sql: str, args: Any = None, conn: Any = None) -> list[tuple[Any, ...]]:
        with (conn or self._admin_conn()).cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall()) if cur.description else []

    def _not_harness(self) -> str:
        ids = sorted(self._harness_ids) or [0]
        return "(" + ", ".join(str(i) for i in ids) + ")"

    # -- databases ---------------------------------------------------------------------------------------
    def exists(self, location: Any) -> bool:
        return bool(self._run("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (location.dbname,)))

    def _tables(self, dbname: str) -> list[str]:
        rows = self._run("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                         "AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME", (dbname,))
        return [str(r[0]) for r in rows]

    def _create(self, dbname: str) -> None:
        self._run(f"CREATE DATABASE {_ident(dbname)} CHARACTER SET utf8mb4")

    def create_empty(self, location: ServerLocation) -> None:
        self.remove(location)
        self._create(location.dbname)
        self.current = location

    def copy(self, template: Any, dst: Any) -> None:
        """A new database with the template's tables (foreign keys and AUTO_INCREMENT kept) and rows."""
        self.remove(dst)
        self._forget_statements()
        self._create(dst.dbname)
        # the DDL runs on the harness's connection to the copy: unqualified foreign keys then name its tables
        conn = self._conn(dst)
        tables = self._tables(template.dbname)
        for table in tables:
            self._run(self._run(f"SHOW CREATE TABLE {_ident(template.dbname)}.{_ident(table)}")[0][1], conn=conn)
        for table in tables:
            self._run(f"INSERT INTO {_ident(dst.dbname)}.{_ident(table)} SELECT * FROM "
                      f"{_ident(template.dbname)}.{_ident(table)} ORDER BY 1")
        self._template_of[dst.dbname] = template.dbname
        self._settle_tables(dst.dbname, tables)
        self.current = dst

    def _forget_statements(self) -> Exception | None:
        """Empty the digest summary (between ops only: one cell measures at a time). It never evicts: once its
        rows are used, new statements would be booked to a row without text and the counts would come up short.
        Returns the error when it cannot (no performance_schema, or no right to it on a URL server), which
        trace_statements turns into the reason nothing is counted."""
        try:
            self._run("TRUNCATE performance_schema.events_statements_summary_by_digest")
        except _pymysql().Error as exc:
            return exc
        return None

    def _end_sessions(self, dbname: str) -> None:
        """End the connections on a database that are not the harness's (a leaked arm connection would make
        DROP DATABASE wait for its locks)."""
        rows = self._run("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = %s AND COMMAND <> 'Daemon' "
                         f"AND ID NOT IN {self._not_harness()}", (dbname,))
        for (thread,) in rows:
            try:
                self._run(f"KILL {int(thread)}")
            except _pymysql().Error:  # gone meanwhile
                pass

    def remove(self, location: Any) -> None:
        self._forget(location.dbname)
        self._template_of.pop(location.dbname, None)
        self._end_sessions(location.dbname)
        self._run(f"DROP DATABASE IF EXISTS {_ident(location.dbname)}")
        if self.current is not None and self.current.dbname == location.dbname:
            self.current = None

    def rename(self, src: Any, dst: Any) -> None:
        """MariaDB cannot rename a database: its tables move into a new one (RENAME TABLE across schemas)."""
        self._forget(src.dbname)
        self._forget(dst.dbname)
        self.remove(dst)
        self._create(dst.dbname)
        tables = self._tables(src.dbname)
        if tables:
            self._run("RENAME TABLE " + ", ".join(f"{_ident(src.dbname)}.{_ident(t)} TO {_ident(dst.dbname)}.{_ident(t)}"
                                                  for t in tables))
        self._run(f"DROP DATABASE IF EXISTS {_ident(src.dbname)}")
        self._auto_increments.pop(dst.dbname, None)

    def drop_run(self, prefix: str) -> int:
        rows = self._run("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE LEFT(SCHEMA_NAME, %s) = %s",
                         (len(prefix), prefix))
        for (name,) in rows:
            self._forget(str(name))
            self._end_sessions(str(name))
            self._run(f"DROP DATABASE IF EXISTS {_ident(str(name))}")
        return len(rows)

    # -- templates and restore ------------------------------------------------------------------------------
    def finish_template(self, location: ServerLocation) -> None:
        """After the arm built and closed a starting state: no statistics recalculated behind the harness's back
        (per table, so a server given by URL keeps to it too; copies inherit it), then statistics gathered, so
        every copy plans alike. InnoDB's background recalculation would write its statistics tables in
        transactions of its own, at random moments inside ops, and be counted as the op's commits."""
        tables = self._tables(location.dbname)
        for table in tables:
            self._run(f"ALTER TABLE {_ident(location.dbname)}.{_ident(table)} STATS_AUTO_RECALC = 0")
        self._settle_tables(location.dbname, tables)
        self._forget(location.dbname)

    def _settle_tables(self, dbname: str, tables: Sequence[str]) -> None:
        """Statistics gathered and every dirty page written, untimed: no flush lands inside the op."""
        if not tables:
            return
        names = ", ".join(f"{_ident(dbname)}.{_ident(t)}" for t in tables)
        self._run(f"ANALYZE TABLE {names}")
        conn = self._admin_conn()
        try:
            self._run(f"FLUSH TABLES {names} FOR EXPORT", conn=conn)
        except _pymysql().Error:  # no RELOAD/LOCK TABLES right on a URL server: the page cleaner flushes on its own
            return
        self._run("UNLOCK TABLES", conn=conn)

    def _template_auto_increments(self, template: str) -> dict[str, int]:
        known = self._auto_increments.get(template)
        if known is None:
            rows = self._run("SELECT TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                             "AND AUTO_INCREMENT IS NOT NULL", (template,))
            known = self._auto_increments[template] = {str(t): int(n) for t, n in rows}
        return known

    def restore(self, location: ServerLocation) -> None:
        """Put the database back to its template's state in place, AUTO_INCREMENT included (the arm stays connected).

        Every table emptied (``TRUNCATE``, foreign-key checks off for the harness's session), refilled from the
        template in primary-key order, its AUTO_INCREMENT set back to the template's; then statistics and a
        flush. An arm that left a transaction open holds a metadata lock TRUNCATE waits for: that fails after
        ``lock_wait_timeout`` with the reason.
        """
        template = self._template_of.get(location.dbname)
        if template is None:
            raise RuntimeError(f"restore of {location.dbname}: this process did not copy it from a template")
        if self.restore_method == "copy":
            from dataclasses import replace

            self.copy(replace(location, dbname=template), location)
            return
        pymysql = _pymysql()
        conn = self._conn(location)
        db, tables = _ident(location.dbname), self._tables(location.dbname)
        try:
            for table in tables:
                if self.restore_method == "delete":
                    self._run(f"DELETE FROM {db}.{_ident(table)}", conn=conn)
                else:
                    self._run(f"TRUNCATE TABLE {db}.{_ident(table)}", conn=conn)
            for table in tables:
                self._run(f"INSERT INTO {db}.{_ident(table)} SELECT * FROM {_ident(template)}.{_ident(table)} "
                          "ORDER BY 1", conn=conn)
            for table, value in self._template_auto_increments(template).items():
                self._run(f"ALTER TABLE {db}.{_ident(table)} AUTO_INCREMENT = {int(value)}", conn=conn)
        except pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] == 1205:
                raise RuntimeError(f"restore of {location.dbname}: the arm's connection holds a transaction open "
                                   f"after its op ({exc.args[1]} after {self.restore_lock_timeout} s)") from None
            raise
        self._settle_tables(location.dbname, tables)

    def refresh_unchanged(self, location: ServerLocation) -> bool:  # type: ignore[override]
        """After a read: the restore's statistics and flush without its refill (the rows are unchanged)."""
        self._settle_tables(location.dbname, self._tables(location.dbname))
        return True

    def read_snapshot(self, location: ServerLocation, main: str, columns: Sequence[str], field_names: Sequence[str],
                      link: tuple[str, str, str] | None) -> Snapshot:
        """Every row (and link) through the harness's own connection: what is committed, not what an ORM cached."""
        conn = self._conn(location)
        cols = ", ".join(_ident(c) for c in columns)
        rows: dict[int, dict[str, Any]] = {}
        for rec in self._run(f"SELECT {cols} FROM {_ident(main)}", conn=conn):
            row = dict(zip(field_names, rec))
            rows[int(row["id"])] = row
        links: set[tuple[int, int]] = set()
        if link is not None:
            table, a, b = link
            links = {(int(x), int(y)) for x, y in self._run(f"SELECT {_ident(a)}, {_ident(b)} FROM {_ident(table)}",
                                                            conn=conn)}
        return Snapshot(rows, links)

    def read_tables(self, location: ServerLocation, tables: Any) -> dict[str, list[tuple[Any, ...]]]:
        conn = self._conn(location)
        return {t: [tuple(r) for r in self._run(f"SELECT {', '.join(_ident(c) for c in cols)} FROM {_ident(t)}",
                                                conn=conn)]
                for t, cols in tables.items()}

    def fill_tables(self, location: ServerLocation, rows: Any) -> None:
        """Multi-row INSERTs of each table's rows in one transaction (InnoDB moves AUTO_INCREMENT past them)."""
        conn = self._conn(location)
        conn.begin()
        try:
            with conn.cursor() as cur:
                for table, (cols, data) in rows.items():
                    marks = ", ".join("%s" for _ in cols)
                    cur.executemany(f"INSERT INTO {_ident(table)} ({', '.join(_ident(c) for c in cols)}) "
                                    f"VALUES ({marks})", list(data))
            conn.commit()
        except BaseException:
            conn.rollback()
            raise

    def column_types(self, location: ServerLocation) -> dict[str, str]:
        """``table.column`` -> the SQL type the arm's ORM created (MariaDB's JSON is LONGTEXT with a json_valid check)."""
        rows = self._run("SELECT c.TABLE_NAME, c.COLUMN_NAME, c.COLUMN_TYPE, "
                         "EXISTS (SELECT 1 FROM information_schema.CHECK_CONSTRAINTS k WHERE "
                         "k.CONSTRAINT_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME AND "
                         "k.CHECK_CLAUSE LIKE CONCAT('%%json_valid(`', c.COLUMN_NAME, '`)%%')) "
                         "FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = %s "
                         "ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION", (location.dbname,))
        return {f"{t}.{c}": (f"{d} (json)" if j else str(d)) for t, c, d, j in rows}

    # -- what the harness asks of every backend ------------------------------------------------------------
    def expected_durability(self, settings: Settings) -> dict[str, str]:
        return durable_expectation(self.info.settings, dict(settings.mysql))

    def commits(self, location: Any) -> int | None:
        """Read-write transactions InnoDB committed so far (``trx_rw_commits``): a transaction that only reads
        is not one. Server-wide: exact on the run's own server, where nothing else writes; None where the
        counter is off (a URL server without ``innodb_monitor_enable=trx_rw_commits``)."""
        rows = self._run("SELECT COUNT, ENABLED FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rw_commits'")
        if not rows or not int(rows[0][1]):
            return None
        return int(rows[0][0])

    def open_transactions(self, location: Any) -> int:
        """The arm's connections on the database inside an InnoDB transaction (none may be after an op)."""
        rows = self._run("SELECT COUNT(*) FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p "
                         f"ON p.ID = t.trx_mysql_thread_id WHERE p.DB = %s AND p.ID NOT IN {self._not_harness()}",
                         (location.dbname,))
        return int(rows[0][0])

    def connections(self, location: Any) -> int | None:
        rows = self._run("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = %s AND COMMAND <> 'Daemon' "
                         f"AND ID NOT IN {self._not_harness()}", (location.dbname,))
        return int(rows[0][0])

    def settled_statement_calls(self) -> dict[str, int]:
        """The server answers a statement before it adds it to the digest summary: wait until the arm's
        connections are idle, then until two reads agree."""
        self.wait_idle()
        calls = self.statement_calls()
        for _ in range(50):
            time.sleep(0.002)
            again = self.statement_calls()
            if again == calls:
                break
            calls = again
        return calls

    def wait_idle(self, timeout: float = 2.0) -> None:
        """Until no connection of the arm's on the current work database is still running a statement."""
        if self.current is None:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = self._run("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = %s AND COMMAND <> 'Sleep' "
                             f"AND ID NOT IN {self._not_harness()}", (self.current.dbname,))
            if not int(rows[0][0]):
                return
            time.sleep(0.001)

    def statement_calls(self) -> dict[str, int]:
        """Calls per statement digest in the current work database, from ``performance_schema``."""
        if self.current is None:
            return {}
        rows = self._run("SELECT DIGEST_TEXT, SUM(COUNT_STAR) FROM performance_schema.events_statements_summary_by_digest "
                         "WHERE SCHEMA_NAME = %s GROUP BY DIGEST_TEXT", (self.current.dbname,))
        return {str(q): int(n) for q, n in rows if q is not None}

    def trace_statements(self, counter: StatementCounter) -> str | None:
        try:
            rows = self._run("SELECT @@performance_schema")
        except Exception as exc:  # noqa: BLE001 - the reason is what the record keeps
            return f"mysql: cannot read performance_schema ({type(exc).__name__}: {exc})"
        if not rows or not int(rows[0][0]):
            return ("mysql: the server runs without performance_schema (the run's own server turns it on; on a "
                    "server given by URL: performance_schema=ON in its options)")
        exc = self._forget_statements()  # emptied before each copy too, or counts would come up short
        if exc is not None:
            return ("mysql: cannot empty performance_schema's digest summary, so counts could come up short once "
                    f"it is full (the account needs DROP on performance_schema; {type(exc).__name__}: {exc})")
        counter.add_source(ServerStatements(self))
        return None
