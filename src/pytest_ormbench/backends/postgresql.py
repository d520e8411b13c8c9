"""PostgreSQL behind the database seam: one server database per starting state and per measuring process.

The server is started for the run by the parent (``provision.postgresql.start_server``: a throwaway cluster in a
temporary directory) or given by URL; the parent hands its :class:`~.server.ServerInfo` to every
worker in the environment variable :data:`SERVER_ENV`. Here, in the worker, the harness:

- names databases after the run and the stem (``ormbench_<run>_<t|w><digest>``), so that a URL server
  keeps nothing of ours after :meth:`PostgresDatabase.drop_run`;
- builds a template once, then finishes it (:meth:`PostgresDatabase.finish_template`): id sequences set
  past the ids the rows carry, autovacuum off on the arm's tables, statistics gathered, and a copy of
  every table in the schema :data:`RESTORE_SCHEMA`;
- copies a template with ``CREATE DATABASE ... TEMPLATE`` (a cold process, or a warm worker's first round)
  and restores a database in place between warm rounds (:meth:`PostgresDatabase.restore`: ``TRUNCATE``,
  ``INSERT ... SELECT`` from the kept copy, sequences set back), so that the arm's connection stays open;
- counts write transactions from the server's transaction-id counter, connections from
  ``pg_stat_activity``, and statements from ``pg_stat_statements`` (server side, so every driver and
  every thread is covered), never from the arm.

The harness's own connections (``application_name`` ``pytest-ormbench``) are left out of every count.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

from pytest_ormbench.workload.spec import Settings, Snapshot
from pytest_ormbench.workload.statements import StatementCounter
from pytest_ormbench.backends.server import ServerDatabase, ServerLocation, ServerNotConfigured, ServerStatements  # noqa: F401

#: the environment variable that carries the server's ServerInfo (JSON) from the parent to its workers
SERVER_ENV = "ORMBENCH_POSTGRESQL_SERVER"
#: the run's latency proxies in front of the server (JSON: RTT in ms as ids show it -> {host, port})
ARM_ADDRESS_ENV = "ORMBENCH_POSTGRESQL_ARM_ADDRESS"
#: the schema in every template that keeps the starting state's rows for in-place restore
RESTORE_SCHEMA = "ormbench_restore"
#: the durability settings every arm's live connection must report (read back with ``SHOW``)
DURABILITY = ("synchronous_commit", "fsync", "full_page_writes", "wal_sync_method")
#: the server's durable defaults (wal_sync_method: whatever the server uses, recorded)
DURABLE_DEFAULTS = {"synchronous_commit": "on", "fsync": "on", "full_page_writes": "on"}
#: one query that reads them all on any connection (DB-API or asyncpg)
SETTINGS_SQL = ("SELECT name, setting FROM pg_settings WHERE name IN "
                "('synchronous_commit', 'fsync', 'full_page_writes', 'wal_sync_method') ORDER BY name")
HARNESS_APP = "pytest-ormbench"


def is_constraint_check(query: str) -> bool:
    """Whether a statement is one the server ran for itself: a foreign-key check or action of its RI triggers.

    PostgreSQL writes them as ``SELECT 1 FROM ONLY ... OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x`` (and
    ``UPDATE ONLY`` / ``DELETE FROM ONLY`` for the actions); a deferred constraint runs them at COMMIT, where
    pg_stat_statements sees them as top-level. No arm sends them, so they are not the arm's statements.
    """
    return "OPERATOR(pg_catalog." in query and " ONLY " in query


def normalize_settings(rows: Sequence[Sequence[Any]]) -> dict[str, str]:
    """``SETTINGS_SQL``'s rows as the durability dict the harness compares."""
    return {str(name): str(value).lower() for name, value in rows}


def _idle(conn: Any) -> bool:
    """Whether a DB-API connection is outside a transaction (psycopg 3 and psycopg2 both call that status 0)."""
    info = getattr(conn, "info", None)
    status = getattr(info, "transaction_status", None)
    if status is None and hasattr(conn, "get_transaction_status"):
        status = conn.get_transaction_status()
    return status is not None and int(status) == 0


def read_settings(conn: Any) -> dict[str, str]:
    """The durability a live DB-API connection (psycopg, psycopg2) runs under.

    A connection outside autocommit begins a transaction for the read; it is rolled back if the connection
    was idle before, so the read leaves no transaction open (the next restore's TRUNCATE would wait for it).
    """
    was_idle = _idle(conn)
    cur = conn.cursor()
    try:
        cur.execute(SETTINGS_SQL)
        return normalize_settings(cur.fetchall())
    finally:
        cur.close()
        if was_idle and not getattr(conn, "autocommit", True) and not _idle(conn):
            conn.rollback()


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - the postgresql extra installs it
        raise ServerNotConfigured("PostgreSQL needs psycopg 3 for the harness: pip install 'pytest-ormbench[postgresql]'")
    return psycopg


def parents_first(names: Sequence[str], edges: Sequence[tuple[str, str]]) -> list[str]:
    """``names`` ordered so that every table comes after the tables it references ((child, parent) ``edges``),
    keeping the given order among tables free to go (a cycle keeps the given order for what is left)."""
    parents: dict[str, set[str]] = {n: set() for n in names}
    for child, parent in edges:
        if child in parents and parent in parents:
            parents[child].add(parent)
    out: list[str] = []
    left = list(names)
    while left:
        ready = next((n for n in left if parents[n] <= set(out)), left[0])
        out.append(ready)
        left.remove(ready)
    return out


class PostgresDatabase(ServerDatabase):
    """Databases on one PostgreSQL server; commits, connections and statements counted by the server."""

    name: ClassVar[str] = "postgresql"
    engine: ClassVar[str] = "PostgreSQL"
    server_env: ClassVar[str] = SERVER_ENV
    arm_address_env: ClassVar[str] = ARM_ADDRESS_ENV
    #: how long a restore waits for the arm's locks before it says the arm left a transaction open
    restore_lock_timeout: ClassVar[str] = "10s"

    settings_sql: ClassVar[str] = SETTINGS_SQL

    @staticmethod
    def settings_from_rows(rows: Sequence[Sequence[Any]]) -> dict[str, str]:
        return normalize_settings(rows)

    @staticmethod
    def read_settings(conn: Any) -> dict[str, str]:
        return read_settings(conn)

    def _connect(self, dbname: str) -> Any:
        return _psycopg().connect(self.info.conninfo(dbname), autocommit=True, application_name=HARNESS_APP)

    def exists(self, location: Any) -> bool:
        cur = self._admin_conn().execute("SELECT 1 FROM pg_database WHERE datname = %s", (location.dbname,))
        return cur.fetchone() is not None

    def copy(self, template: Any, dst: Any) -> None:
        self.remove(dst)
        self._forget(template.dbname)  # CREATE DATABASE ... TEMPLATE needs the template free of connections
        self._admin_conn().execute(f"CREATE DATABASE {_ident(dst.dbname)} TEMPLATE {_ident(template.dbname)}")
        self.current = dst
        self.checkpoint()

    def _forget_statements(self, dbname: str) -> None:
        """Drop a database's entries from pg_stat_statements (its table would otherwise fill up and evict)."""
        try:
            self._admin_conn().execute(
                "SELECT pg_stat_statements_reset(0, d.oid, 0) FROM pg_database d WHERE d.datname = %s", (dbname,))
        except _psycopg().Error:  # no extension (a URL server): nothing to forget
            pass

    def checkpoint(self) -> None:
        """Write every dirty page now, untimed: no checkpoint (and the same full-page writes) in every op."""
        try:
            self._admin_conn().execute("CHECKPOINT")
        except _psycopg().Error:  # a role without pg_checkpoint on a URL server: the server checkpoints on its own
            pass

    def remove(self, location: Any) -> None:
        self._forget(location.dbname)
        self._forget_statements(location.dbname)
        self._admin_conn().execute(f"DROP DATABASE IF EXISTS {_ident(location.dbname)} WITH (FORCE)")
        if self.current is not None and self.current.dbname == location.dbname:
            self.current = None

    def rename(self, src: Any, dst: Any) -> None:
        self._forget(src.dbname)
        self._forget(dst.dbname)
        self._admin_conn().execute(f"ALTER DATABASE {_ident(src.dbname)} RENAME TO {_ident(dst.dbname)}")

    def create_empty(self, location: ServerLocation) -> None:
        """A new empty database for an arm to build a starting state in (from ``template0``: nothing inherited)."""
        self.remove(location)
        self._admin_conn().execute(f"CREATE DATABASE {_ident(location.dbname)} TEMPLATE template0")
        self.current = location

    def drop_run(self, prefix: str) -> int:
        """Drop every database whose name starts with ``prefix`` (the run's own); returns how many."""
        rows = self._admin_conn().execute(
            "SELECT datname FROM pg_database WHERE starts_with(datname, %s)", (prefix,)).fetchall()
        for (name,) in rows:
            self._forget(name)
            self._forget_statements(name)
            self._admin_conn().execute(f"DROP DATABASE IF EXISTS {_ident(name)} WITH (FORCE)")
        return len(rows)

    # -- templates and restore ----------------------------------------------------------------------------
    def _tables(self, conn: Any) -> list[str]:
        """The arm's tables, parents before the tables that reference them (a restore refills them in this order,
        which the foreign keys check as it goes), by name otherwise."""
        names = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename").fetchall()]
        edges = conn.execute(
            "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c "
            "JOIN pg_namespace n ON n.oid = c.connamespace WHERE c.contype = 'f' AND n.nspname = 'public' "
            "AND c.conrelid <> c.confrelid").fetchall()
        return parents_first(names, [(str(child).strip('"'), str(parent).strip('"')) for child, parent in edges])

    def _sequences(self, conn: Any) -> list[tuple[str, str, str]]:
        """(table, column, sequence) for every column fed by a sequence (serial or identity) in public."""
        rows = conn.execute(
            "SELECT c.table_name, c.column_name, pg_get_serial_sequence(quote_ident(c.table_name), c.column_name) "
            "FROM information_schema.columns c WHERE c.table_schema = 'public' "
            "AND pg_get_serial_sequence(quote_ident(c.table_name), c.column_name) IS NOT NULL "
            "ORDER BY 1, 2").fetchall()
        return [(t, c, s) for t, c, s in rows]

    def finish_template(self, location: ServerLocation) -> None:
        """After the arm built and closed a starting state: make it a template that restores exactly.

        Rows were written with explicit ids, which PostgreSQL's sequences do not see; each sequence is set
        to its column's largest id, so the next insert gets max + 1, as SQLite's rowid does. Autovacuum is
        switched off on the arm's tables (a restore every round would otherwise wake it at random inside
        ops) and statistics gathered, so every copy and every restore plans alike.
        """
        conn = self._conn(location)
        with conn.transaction():
            for table, column, seq in self._sequences(conn):
                conn.execute(f"SELECT setval(%s, coalesce((SELECT max({_ident(column)}) FROM {_ident(table)}), 0) + 1, false)",
                             (seq,))
            conn.execute(f"CREATE SCHEMA {RESTORE_SCHEMA}")
            conn.execute(f"CREATE TABLE {RESTORE_SCHEMA}._sequences (name text PRIMARY KEY, last_value bigint, "
                         "is_called boolean)")
            for table, _column, seq in self._sequences(conn):
                conn.execute(f"INSERT INTO {RESTORE_SCHEMA}._sequences SELECT %s, last_value, is_called FROM {seq}",
                             (seq,))
            for table in self._tables(conn):
                conn.execute(f"ALTER TABLE {_ident(table)} SET (autovacuum_enabled = false)")
                conn.execute(f"CREATE TABLE {RESTORE_SCHEMA}.{_ident(table)} AS TABLE {_ident(table)}")
        conn.execute("ANALYZE")
        self._forget(location.dbname)

    def restore(self, location: ServerLocation) -> None:
        """Put the database back to its template's state in place, sequences included (the arm stays connected).

        One transaction: every table of the arm emptied by one ``TRUNCATE``, refilled from the template's kept
        copy in the first column's order (the physical order the template had), each sequence set back; then
        ``ANALYZE``, so the planner sees what it saw in the template. An arm that left a transaction open
        holds a lock ``TRUNCATE`` waits for: that fails after ``lock_timeout`` with the reason.
        """
        conn = self._conn(location)
        tables = self._tables(conn)
        try:
            with conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = '{self.restore_lock_timeout}'")
                if tables:
                    conn.execute("TRUNCATE " + ", ".join(_ident(t) for t in tables))
                for table in tables:
                    conn.execute(f"INSERT INTO {_ident(table)} OVERRIDING SYSTEM VALUE "
                                 f"SELECT * FROM {RESTORE_SCHEMA}.{_ident(table)} ORDER BY 1")
                conn.execute(f"SELECT setval(name::regclass, last_value, is_called) FROM {RESTORE_SCHEMA}._sequences")
        except _psycopg().errors.LockNotAvailable:
            raise RuntimeError(f"restore of {location.dbname}: the arm's connection holds a transaction open "
                               f"after its op (TRUNCATE waited {self.restore_lock_timeout} for its lock)") from None
        conn.execute("ANALYZE " + ", ".join(_ident(t) for t in tables) if tables else "SELECT 1")
        self.checkpoint()

    def refresh_unchanged(self, location: ServerLocation) -> bool:  # type: ignore[override]
        """After a read: the restore's ``ANALYZE`` and checkpoint without its refill (the rows are unchanged)."""
        tables = self._tables(self._conn(location))
        if tables:
            self._conn(location).execute("ANALYZE " + ", ".join(_ident(t) for t in tables))
        self.checkpoint()
        return True

    def read_snapshot(self, location: ServerLocation, main: str, columns: Sequence[str], field_names: Sequence[str],
                      link: tuple[str, str, str] | None) -> Snapshot:
        """Every row (and link) through the harness's own connection: what is committed, not what an ORM cached."""
        conn = self._conn(location)
        cols = ", ".join(_ident(c) for c in columns)
        rows: dict[int, dict[str, Any]] = {}
        for rec in conn.execute(f"SELECT {cols} FROM {_ident(main)}"):
            row = dict(zip(field_names, rec))
            rows[int(row["id"])] = row
        links: set[tuple[int, int]] = set()
        if link is not None:
            table, a, b = link
            links = {(int(x), int(y)) for x, y in conn.execute(f"SELECT {_ident(a)}, {_ident(b)} FROM {_ident(table)}")}
        return Snapshot(rows, links)

    def read_tables(self, location: ServerLocation, tables: Any) -> dict[str, list[tuple[Any, ...]]]:
        conn = self._conn(location)
        return {t: [tuple(r) for r in conn.execute(f"SELECT {', '.join(_ident(c) for c in cols)} FROM {_ident(t)}")]
                for t, cols in tables.items()}

    def fill_tables(self, location: ServerLocation, rows: Any) -> None:
        """COPY each table's rows in (one transaction), then each id sequence set past the highest id."""
        conn = self._conn(location)
        with conn.transaction():
            for table, (cols, data) in rows.items():
                with conn.cursor().copy(f"COPY {_ident(table)} ({', '.join(_ident(c) for c in cols)}) FROM STDIN") as copy:
                    for row in data:
                        copy.write_row(row)
            for table, (cols, _data) in rows.items():
                if "id" in cols:
                    conn.execute(f"SELECT setval(s, (SELECT coalesce(max(id), 0) + 1 FROM {_ident(table)}), false) "
                                 f"FROM pg_get_serial_sequence(%s, 'id') AS s WHERE s IS NOT NULL", (table,))

    def column_types(self, location: ServerLocation) -> dict[str, str]:
        """``table.column`` -> the SQL type the arm's ORM created (recorded: how each ORM maps JSON and decimals)."""
        rows = self._conn(location).execute(
            "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
            "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped "
            "ORDER BY c.relname, a.attnum").fetchall()
        return {f"{t}.{c}": d for t, c, d in rows}

    # -- what the harness asks of every backend ------------------------------------------------------------
    def expected_durability(self, settings: Settings) -> dict[str, str]:
        expected = dict(DURABLE_DEFAULTS)
        expected["wal_sync_method"] = str(self.info.settings.get("wal_sync_method", "")).lower()
        expected.update({k: str(v).lower() for k, v in settings.postgresql})
        return expected

    def commits(self, location: Any) -> int | None:
        """Transaction ids handed out so far: PostgreSQL gives one to every transaction that writes, and none to one
        that only reads, so the difference around an op is its write transactions (a savepoint that writes takes
        one of its own). Server-wide: exact on the run's own server, where nothing else writes."""
        row = self._admin_conn().execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone()
        return int(row[0])

    def open_transactions(self, location: Any) -> int:
        """The arm's connections on the database that are inside a transaction (none may be after an op:
        a write transaction left open would be neither committed nor counted)."""
        row = self._admin_conn().execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend' "
            "AND application_name IS DISTINCT FROM %s AND (state LIKE 'idle in transaction%%' "
            "OR backend_xid IS NOT NULL)", (location.dbname, HARNESS_APP)).fetchone()
        return int(row[0])

    def connections(self, location: Any) -> int | None:
        row = self._admin_conn().execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend' "
            "AND application_name IS DISTINCT FROM %s", (location.dbname, HARNESS_APP)).fetchone()
        return int(row[0])

    def statement_calls(self) -> dict[str, int]:
        """Calls per statement text in the current work database, from ``pg_stat_statements``."""
        if self.current is None:
            return {}
        rows = self._admin_conn().execute(
            "SELECT s.query, sum(s.calls)::bigint FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
            "WHERE d.datname = %s GROUP BY s.query", (self.current.dbname,)).fetchall()
        return {q: int(n) for q, n in rows if not is_constraint_check(q)}

    def trace_statements(self, counter: StatementCounter) -> str | None:
        try:
            row = self._admin_conn().execute(
                "SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'").fetchone()
        except Exception as exc:  # noqa: BLE001 - the reason is what the record keeps
            return f"postgresql: cannot read pg_stat_statements ({type(exc).__name__}: {exc})"
        if row is None:
            return ("postgresql: the server has no pg_stat_statements extension (the run's own server loads it; "
                    "on a server given by URL: shared_preload_libraries and CREATE EXTENSION pg_stat_statements)")
        counter.add_source(ServerStatements(self))
        return None
