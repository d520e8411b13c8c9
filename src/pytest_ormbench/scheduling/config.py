"""One run's validated settings, as plain data (the pytest layer parses them in ``options.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_ormbench.workload.relational import SHAPES
from pytest_ormbench.workload.spec import Settings
from pytest_ormbench.workload.plan import Sizes

SCHEDULES = ("interleaved", "back-to-back")


@dataclass(frozen=True)
class Preset:
    """A named choice of modes, tables, rounds and sizes; options the user sets still win."""

    name: str
    values: dict[str, str]
    #: what it is for, and how long the whole matrix took on the project's machine (2 cores)
    about: str
    #: seconds the whole matrix (every arm, Tests 1-3, A-K) took there, when measured
    measured_seconds: float | None = None
    #: the databases that measured matrix ran on (its time says nothing of another database's cells)
    measured_on: tuple[str, ...] = ("sqlite",)
    #: the arms it had
    measured_arms: int = 13

    def describe(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.values.items())

    def measured_note(self, dbs: tuple[str, ...], rtts: tuple[float | None, ...] = ()) -> str:
        """What the plan says of the preset's measured time for a run on ``dbs``: the time, only for the databases
        it was measured on; for the others, that there is none (a server's cells take another time)."""
        if not self.measured_seconds:
            return ""
        from pytest_ormbench.scheduling.progress import duration

        names = {"sqlite": "SQLite", "postgresql": "PostgreSQL", "mysql": "MariaDB"}
        on = [db for db in dbs if db in self.measured_on]
        others = [names.get(db, db) for db in dbs if db not in self.measured_on]
        sweep = " and latency sweep" if rtts and others else ""
        where = " and ".join(names.get(db, db) for db in self.measured_on)
        if not on:
            return f"no measured time for this matrix (the {self.name} preset's was measured on {where} only)"
        text = (f"the whole {self.name} matrix ({self.measured_arms} arms) took {duration(self.measured_seconds)} "
                "on a 2-core machine")
        if others:
            text = (f"the whole {self.name} matrix on {where} ({self.measured_arms} arms) took "
                    f"{duration(self.measured_seconds)} on a 2-core machine; no measured time for its "
                    f"{' and '.join(others)}{sweep} cells")
        return text


#: "full" is what the plugin does with no preset at all (its options' own defaults)
#: (quick: 356 s on 2026-12-01 with the statement-counting repetition, Python 3.11; full and publication: the
#: 2026-11-30 runs, before statements were counted, which add one untimed repetition per cell; relational: the
#: published run of 2026-12-05 on SQLite, 13 pieces of one arm each beside the control, tree 70e7f1a)
PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("quick", {"mode": "warm", "table": "default", "rounds": "3", "iterations": "20", "batch": "1000"},
           "the first look: every arm, warm, small sizes; an overall table in minutes", 356),
    Preset("full", {"mode": "cold,warm", "table": "default", "rounds": "5", "iterations": "100", "batch": "10000"},
           "the published default table: cold and warm at the reference suite's sizes", 7471),
    Preset("publication", {"mode": "cold,warm", "table": "default,large", "rounds": "5", "iterations": "100",
                           "batch": "10000"},
           "the whole published matrix: the default and the large table", 41849),
    Preset("relational", {"models": "relational", "mode": "warm", "table": "default", "rounds": "5",
                          "iterations": "100", "batch": "10000"},
           "Test 4 (relations, loading strategies, aggregates, pagination, streaming, writes): every arm, warm, "
           "seed 002's sizes", 1174),
)}
DEFAULT_PRESET = "full"


@dataclass
class RunConfig:
    arms: tuple[str, ...]
    models: tuple[str, ...]
    ops: tuple[str, ...]  # letters
    modes: tuple[str, ...]
    tables: tuple[str, ...]
    rounds: int
    sizes: Sizes
    settings: Settings
    verify_only: bool
    #: verify-only because pytest-benchmark's ``--benchmark-disable`` said so
    benchmark_disabled: bool = False
    register: tuple[str, ...] = field(default_factory=tuple)
    memory: bool = False
    report: str = ""
    schedule: str = "interleaved"
    compare: str = ""
    compare_markdown: str = ""
    thresholds: tuple[str, ...] = ()
    alpha: float = 0.05
    correction: str = "holm"
    drift: str = "control"
    probe: bool = True
    preset: str = DEFAULT_PRESET
    #: run the control arms' cells beside any selection (``--ormbench-control``)
    control: bool = True
    #: print pytest-benchmark's own table too
    benchmark_table: bool = False
    #: count each round's instructions under callgrind (``--ormbench-instructions``)
    instructions: bool = False
    #: the measure ``--ormbench-compare`` judges by
    compare_measure: str = "wall_seconds"
    #: the database axis (``--ormbench-dbs``): ``sqlite``, ``postgresql`` and/or ``mysql``
    dbs: tuple[str, ...] = ("sqlite",)
    #: an existing PostgreSQL server (``--ormbench-postgresql-url``); empty: the plugin starts one
    postgresql_url: str = ""
    #: an existing MariaDB/MySQL server (``--ormbench-mysql-url``); empty: the plugin starts one
    mysql_url: str = ""
    #: a latency sweep (``--ormbench-rtts``): the server cells run once per RTT (ms), through the proxy
    rtts: tuple[float | None, ...] = ()
    #: Test 4's shapes (``--ormbench-shapes``, names), when ``relational`` is among the models
    shapes: tuple[str, ...] = tuple(shape.name for shape in SHAPES)
    #: Test 4's strategies (``--ormbench-strategies``: names or kinds); empty: every strategy each arm declares
    strategies: tuple[str, ...] = ()
    #: ``--ormbench-shard``: this run is shard (K, N) of the matrix; None: the whole matrix
    shard: tuple[int, int] | None = None
    #: ``--ormbench-shard-durations``: the earlier run's JSON the split is balanced by ("": estimated)
    shard_durations: str = ""
    #: ``--ormbench-estimate-from``: the earlier runs (absolute paths) the plan line's estimate reads; empty: the
    #: shard durations' file, else pytest-benchmark's storage folder
    estimate_from: tuple[str, ...] = ()
    #: ``--ormbench-cold-start``: a cold round's process forked from a preloaded worker ("fork") or a new
    #: interpreter ("fresh")
    cold_start: str = "fresh"
    #: ``--ormbench-warm-start``: an interleaved warm cell's session kept between its rounds ("kept"), or
    #: opened and warmed up again for each ("fresh")
    warm_start: str = "kept"

    @property
    def timed(self) -> bool:
        return not self.verify_only

    def durability(self) -> dict[str, str]:
        """The durability in force for the databases this run uses, as a person reads it: SQLite's pragmas when
        SQLite runs (``journal_mode=delete``), each server's settings when it runs (its durable defaults with
        what ``--ormbench-postgresql-settings`` / ``--ormbench-mysql-settings`` changed, ``postgresql.fsync=on``).
        MariaDB's ``log_bin`` is the server's own, read back per cell, so it is not shown here."""
        from pytest_ormbench.backends import mysql, postgresql

        out: dict[str, str] = {}
        if "sqlite" in self.dbs:
            out.update({k: v for k, v in self.settings.describe().items() if "." not in k})
        for db, defaults, changed in (("postgresql", postgresql.DURABLE_DEFAULTS, self.settings.postgresql),
                                      ("mysql", mysql.DURABLE_DEFAULTS, self.settings.mysql)):
            if db in self.dbs:
                out.update({f"{db}.{k}": v for k, v in {**defaults, **dict(changed)}.items()})
        return out

    @property
    def schedule_name(self) -> str:
        """What the results record as the schedule: the chosen one, or verify-only when nothing is timed."""
        return self.schedule if self.timed else "verify-only"
