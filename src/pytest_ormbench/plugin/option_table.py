"""What each ``--ormbench-*`` option is: its name, default, help, kind and the spelling it had before.

The table the parser (``options.py``) and the README's option table follow; a new option is one
:class:`Option` here and its parsing into ``RunConfig`` in ``options.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_ormbench.scheduling.config import DEFAULT_PRESET, PRESETS

PREFIX = "--ormbench-"
NEGATION = "--ormbench-no-"


@dataclass(frozen=True)
class Option:
    name: str  # without the --ormbench- prefix
    default: str
    help: str
    kind: str = "string"  # string | flag | linelist
    metavar: str = "VALUE"
    #: the name it had before (an old spelling that keeps working, with a deprecation warning)
    old: str = ""
    #: a flag that used to take on|off (``--ormbench-probe=off``): those spellings keep working too
    was_on_off: bool = False
    #: the preset's key for it, if a preset sets it
    preset_key: str = ""

    @property
    def flag(self) -> str:
        return PREFIX + self.name

    @property
    def negation(self) -> str:
        return NEGATION + self.name

    @property
    def ini(self) -> str:
        return ini_key(self.name)

    @property
    def dest(self) -> str:
        return self.ini


def ini_key(name: str) -> str:
    return "ormbench_" + name.replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option("preset", DEFAULT_PRESET, "a named choice of modes, tables, rounds and sizes: "
           + "; ".join(f"{p.name}, {p.about} ({p.describe()})" for p in PRESETS.values())
           + "; options given as well override it", metavar="NAME"),
    Option("arms", "all", "arms to run, comma-separated registry names, or 'all'"),
    Option("models", "simple,fk,wide", "models: simple, fk, wide (the reference's Tests 1, 2, 3) and relational "
           "(Test 4: organizations, users, posts, comments, tags), or 'all'", preset_key="models"),
    Option("ops", "all", "Tests 1-3's operations: letters A-K or names (insert_single, ...), comma-separated, or 'all'"),
    Option("shapes", "all", "Test 4's shapes: names (users_posts, ...) or codes R1-R19, comma-separated, or 'all'"),
    Option("strategies", "all", "Test 4's loading strategies: names as the arms call them (selectin, prefetch_related, "
           "...) or kinds (lazy, join, batched; the dashboard's sequential, pipelined), comma-separated, or 'all'"),
    Option("modes", "cold,warm", "cold (a fresh process per timed round) and/or warm (warm-up, restore, time)",
           old="mode", preset_key="mode"),
    Option("tables", "default", "default (~300 rows for D-K) and/or large (~20,100 rows for D-K)", old="table",
           preset_key="table"),
    Option("rounds", "5", "timed rounds per cell; the result is their median", preset_key="rounds"),
    Option("iterations", "100", "rows for insert_single; gets are 2x, filter_small passes are /10; Test 4: 10 users, "
           "100 posts and 500 comments per iteration (100: 1,000 users; never below 100 users)",
           preset_key="iterations"),
    Option("batch", "10000", "rows for insert_batch and insert_bulk", preset_key="batch"),
    Option("dbs", "sqlite", "databases, comma-separated: sqlite (the embedded side: SQLite, and ObjectBox's own "
           "store) and/or postgresql (a throwaway server the plugin starts from the machine's binaries, or the one "
           "--ormbench-postgresql-url names) and/or mysql (also: mariadb; a throwaway MariaDB, or the server "
           "--ormbench-mysql-url names)", old="db"),
    Option("postgresql-url", "", "an existing PostgreSQL server to run on instead of a throwaway one, "
           "postgresql://USER[:PASSWORD]@HOST[:PORT]/DB (a superuser or a role that may create databases); the "
           "plugin creates and drops only databases of its own there", metavar="URL"),
    Option("postgresql-settings", "", "PostgreSQL durability for every arm, changed from the server's durable "
           "defaults: comma-separated NAME=VALUE of synchronous_commit, fsync, full_page_writes, wal_sync_method "
           "(applied to the throwaway server; a URL server must already run with them)", metavar="NAME=VALUE,..."),
    Option("mysql-url", "", "an existing MariaDB server (10.5 or newer) to run on instead of a throwaway one, "
           "mysql://USER[:PASSWORD]@HOST[:PORT]/ (an account that may create databases); the plugin creates and "
           "drops only databases of its own there", metavar="URL"),
    Option("mysql-settings", "", "MariaDB durability for every arm, changed from the durable defaults: "
           "comma-separated NAME=VALUE of innodb_flush_log_at_trx_commit, sync_binlog, log_bin, innodb_doublewrite "
           "(applied to the throwaway server; a URL server must already run with them)", metavar="NAME=VALUE,..."),
    Option("shard", "", "run shard K of N of the matrix (K/N, 1-based): the cells split deterministically and balanced "
           "by duration, the control arms' cells in every shard; ormbench report merges the shards' JSON",
           metavar="K/N"),
    Option("shard-durations", "", "balance --ormbench-shard by the cells' durations in this earlier run's JSON "
           "(without it: estimated from each cell's kind)", metavar="FILE"),
    Option("cold-start", "", "how a cold round's process starts: fork (a child of a worker that has imported the "
           "arm's module and opened nothing, which makes its parent's pages its own before anything is timed; the "
           "default of a timed run) or fresh (a new interpreter per round; the default under --ormbench-instructions, "
           "where forked processes count up to 2.3 per cent differently); docs/methodology.md", metavar="fork|fresh"),
    Option("warm-start", "kept", "how an interleaved warm cell's later rounds start: kept (its connection and work "
           "database kept in the arm's worker between its rounds, warmed up once, restored before each round; "
           "SQLite, arms that declare independent_sessions) or fresh (each round's request copies, connects and "
           "warms up again)", metavar="kept|fresh"),
    Option("estimate-from", "", "earlier runs' JSON (comma-separated files or folders) whose phase accounts the plan "
           "line's estimate of this run's wall and timed time is read from (default: --ormbench-shard-durations's "
           "file, else pytest-benchmark's storage folder)", metavar="PATH,..."),
    Option("rtts", "", "a latency sweep on the server databases: comma-separated round-trip times in ms (e.g. "
           "0,1,5,25); each server cell runs once per RTT with the arm's connection through a loopback proxy that "
           "delays every chunk by RTT/2 each way (0 goes through the proxy too, to price it; 'direct' adds the "
           "cell without the proxy to the same run)", metavar="MS,...", old="rtt"),
    Option("sqlite-journal", "delete", "SQLite journal_mode for every arm: delete or wal"),
    Option("sqlite-synchronous", "full", "SQLite synchronous for every arm: full, normal or off"),
    Option("verify-only", "false", "run every cell once with verification, record no timings (works under xdist; "
           "--benchmark-disable does the same)", kind="flag"),
    Option("memory", "false", "also record each cell's peak allocation (tracemalloc, in an extra untimed "
           "repetition)", kind="flag"),
    Option("report", "", "write the Markdown report of this run to this path (charts beside it with "
           "pytest-ormbench[plot])", metavar="PATH"),
    Option("register", "", "extra arm as module:Class (repeatable), for arms not in the registry", kind="linelist",
           metavar="MODULE:CLASS"),
    Option("schedule", "interleaved", "interleaved (round r of every cell before round r+1, arm order rotated "
           "each round; with --ormbench-instructions back-to-back unless given) or back-to-back (all rounds of a cell "
           "together)"),
    Option("compare", "", "compare this run with a baseline: a pytest-benchmark JSON file or a run saved with "
           "--benchmark-save (number or name); exit status 1 on a regression", metavar="BASELINE"),
    Option("compare-markdown", "", "write the comparison as Markdown (for a pull-request comment) to this path",
           metavar="PATH"),
    Option("compare-threshold", "", "slowdown a cell may show before it counts as a regression, PATTERN=PERCENT "
           "(repeatable; PATTERN is an arm, model, op letter or name, or a glob on the cell id; the last match "
           "wins; default *=10)", kind="linelist", metavar="PATTERN=PCT", old="threshold"),
    Option("compare-alpha", "0.05", "significance level of the comparison's Mann-Whitney U test, for the whole "
           "comparison (see --ormbench-compare-correction)", old="alpha"),
    Option("compare-drift", "control", "control: divide the machine's drift between the runs, as the raw sqlite3 "
           "control arm's cells show it, out of the comparison and use their unevenness as the floor; off: "
           "compare raw times against the runs' probe floors", old="drift"),
    Option("compare-correction", "holm", "holm: adjust the cells' p-values so that alpha bounds the chance of any "
           "false alarm in the comparison; none: test each cell at alpha", old="correction"),
    Option("compare-measure", "wall_seconds", "what --ormbench-compare judges by: wall_seconds (time, with "
           "the drift correction) or instructions (needs both runs made with --ormbench-instructions); "
           "statement counts are always compared exactly where both runs have them"),
    Option("control", "true", "run the control arms' cells (raw sqlite3; raw psycopg and asyncpg on PostgreSQL; "
           "raw mysqlclient and asyncmy on MariaDB) beside any selection of arms or -k, for the same models, ops, "
           "modes and tables (the report's ORM overhead and the comparison's drift correction need them); "
           "--ormbench-no-control: only what was selected (default: on)", kind="flag", was_on_off=True),
    Option("probe", "true", "time the fixed sqlite3 drift probe at the start, after every interleaved round "
           "(back-to-back: middle and end) and record the run's drift floor; --ormbench-no-probe: no probe, no "
           "floor (default: on)", kind="flag", was_on_off=True),
    Option("benchmark-table", "false", "also print pytest-benchmark's own table of the cells (off by default: "
           "the plugin's summary shows the same rounds as rows/s; the JSON and --benchmark-compare are kept)",
           kind="flag"),
    Option("instructions", "false", "count each timed round's instructions under valgrind's callgrind, with "
           "counting on only for the op itself (needs valgrind and a C compiler; about 10-100x slower; the "
           "rounds' wall times are then not speeds and are not reported)", kind="flag"),
)

#: old spelling -> the option it is now (``--ormbench-mode`` -> ``--ormbench-modes``)
RENAMED: dict[str, str] = {opt.old: opt.name for opt in OPTIONS if opt.old}
