"""One cell's result as one typed record: the data model every part of the plugin shares.

The measuring child builds a :class:`CellRecord` from what it verified and measured and sends it
as JSON; the parent merges the records of a cell's rounds, adds where each round ran, and stores
:meth:`CellRecord.to_json` in pytest-benchmark's ``extra_info``; the terminal summary, ``ormbench
report`` and ``ormbench compare`` read it back with :meth:`CellRecord.from_json`, and every rows/s
figure comes from :attr:`CellRecord.rows_per_s`. Imports no ORM, no pytest.

A round's figures are *measures*: named per-round series (``wall_seconds``, ``instructions``,
``gc_collections``). A new measure is a new name in :attr:`CellRecord.measures`, not a new key
beside the others. Statements are counted by kind in untimed repetitions of the round
(:attr:`CellRecord.statements`): counting them costs a Python call per statement, so they are
never counted in a timed round.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from pytest_ormbench.workload.spec import ALL_MODELS, OPS_BY_LETTER, OPS_BY_NAME, Op
from pytest_ormbench.results.stats import median, rows_per_second

from pytest_ormbench.workload.cells import CellKey, DEFAULT_DB, RecordError, SERVER_DBS, format_rtt
from pytest_ormbench.workload.measures import COMPARABLE, GC_COLLECTIONS, INSTRUCTIONS, WALL


@dataclass
class Environment:
    """What the measuring process ran: the arm's declarations and the versions it found."""

    arm_label: str
    driver: str | None = None
    is_async: bool | None = None
    versions: dict[str, str] = field(default_factory=dict)
    python: str | None = None
    sqlite_version: str | None = None
    #: the database backend the arm stored in (``Database.name``)
    database: str | None = None
    #: op name -> reason, as the arm declares them
    unsupported: dict[str, str] = field(default_factory=dict)
    #: whatever the arm's ``describe()`` returned
    arm_info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Facts:
    """What the last verified round established about the database, besides the op's result."""

    pragmas: dict[str, str] | None = None
    connections: int | None = None
    commits: int | None = None
    #: insert_bulk only: whether the objects got their ids
    bulk_ids_set: bool | None = None
    memory_peak_bytes: int | None = None
    #: facts the arm measured itself (``Arm.op_facts()``)
    arm_facts: dict[str, Any] = field(default_factory=dict)

    _NAMED = ("pragmas", "connections", "commits", "bulk_ids_set", "memory_peak_bytes")

    @classmethod
    def from_round(cls, facts: Mapping[str, Any]) -> Facts:
        """From the dict ``runner.run_round`` returns: the named ones, the rest are the arm's."""
        return cls(**{k: facts.get(k) for k in cls._NAMED},
                   arm_facts={k: v for k, v in facts.items() if k not in cls._NAMED})


@dataclass
class CellRecord:
    """One cell: key, sizes, settings, environment, verified facts and every round's measures."""

    key: CellKey
    rows: int
    start_rows: int
    iterations: int
    batch: int
    settings: dict[str, Any]
    env: Environment
    facts: Facts
    #: measure name -> one value per round, in the order the rounds ran
    measures: dict[str, list[float]]
    #: the deviations the arm declares that apply to this cell (key: "*", op name, model name)
    deviations: dict[str, str] = field(default_factory=dict)
    #: each round's place in the run's order (0 = the first round the parent timed); None: unknown
    slots: list[int | None] = field(default_factory=list)
    worker_pids: list[int] = field(default_factory=list)
    schedule: str | None = None
    #: seconds the measuring processes spent per phase on the cell (``workload.phases``), summed over requests
    phases: dict[str, float] = field(default_factory=dict)
    loadavg_1min: float | None = None
    verified: bool = True
    #: statements by kind (``workload.statements.KINDS``), one dict per counted repetition of the op
    statements: list[dict[str, int]] = field(default_factory=list)
    #: why statements were not counted (an engine without SQL), if they were asked for
    statements_note: str | None = None
    #: a latency-sweep cell whose statements were counted once on the direct connection, for every RTT of the
    #: sweep (what an op sends does not depend on the round trip; counting through a 25 ms proxy cost minutes)
    statements_direct: bool = False
    #: "callgrind" when the rounds ran under valgrind: their wall times are not the op's speed
    instrumented: str | None = None

    # -- figures ------------------------------------------------------------------------------------
    @property
    def seconds(self) -> list[float]:
        return self.measures.get(WALL, [])

    @property
    def rounds(self) -> int:
        return len(self.seconds)

    @property
    def rows_per_s(self) -> float:
        """The figure every table shows: rows credited to one round over the median round time."""
        return rows_per_second(self.rows, self.seconds)

    @property
    def timed(self) -> bool:
        """Whether its wall times are the op's speed (not rounds slowed down by an instrument)."""
        return self.instrumented is None and bool(self.seconds)

    @property
    def collected_before_clock(self) -> bool:
        """Whether its rounds were timed under the old discipline: a full collection right before the clock.

        Every round timed since the freeze discipline (issue 17) also counts the collector's runs inside the
        timed region (``gc_collections``); a timed record without that measure was written before it. The
        collection evicted the CPU caches, so those figures read slow, the fastest arms' most."""
        return self.timed and GC_COLLECTIONS not in self.measures

    @property
    def instructions(self) -> list[float]:
        return self.measures.get(INSTRUCTIONS, [])

    @property
    def instructions_per_row(self) -> float | None:
        """The median round's instructions over the rows it credits (None: not counted)."""
        return median(self.instructions) / self.rows if self.instructions and self.rows else None

    @property
    def statements_per_op(self) -> dict[str, int] | None:
        """The statements by kind of the last counted repetition (None: not counted)."""
        return dict(self.statements[-1]) if self.statements else None

    @property
    def id(self) -> str:
        return self.key.id

    # -- building -----------------------------------------------------------------------------------
    def merged(self, later: CellRecord) -> CellRecord:
        """This cell's rounds followed by a later reply's (interleaved or cold rounds come one at a time).

        The facts and environment are the later ones: the last verified round speaks for the cell.
        """
        if later.key != self.key:
            raise RecordError(f"cannot merge {later.key.id} into {self.key.id}")
        measures = {name: [*self.measures.get(name, []), *later.measures.get(name, [])]
                    for name in dict.fromkeys([*self.measures, *later.measures])}
        phases = {p: self.phases.get(p, 0.0) + later.phases.get(p, 0.0) for p in dict.fromkeys([*self.phases,
                                                                                             *later.phases])}
        return replace(later, measures=measures, slots=[*self.slots, *later.slots], phases=phases,
                       worker_pids=[*self.worker_pids, *later.worker_pids],
                       statements=[*self.statements, *later.statements],
                       statements_note=later.statements_note or self.statements_note,
                       statements_direct=later.statements_direct or self.statements_direct,
                       instrumented=later.instrumented or self.instrumented)

    def with_statements(self, counted: CellRecord) -> CellRecord:
        """This record with the statements of an untimed counting repetition (its times are dropped).

        ``counted`` is the cell's own, or (a latency-sweep cell) its twin's on the direct connection: the same
        cell but for the RTT, which the record then says (``statements_direct``)."""
        direct = counted.key != self.key
        if direct and (self.key.rtt_ms is None or counted.key != replace(self.key, rtt_ms=None)):
            raise RecordError(f"cannot take {counted.key.id}'s statements into {self.key.id}")
        return replace(self, statements=[*self.statements, *counted.statements],
                       statements_note=counted.statements_note or self.statements_note,
                       statements_direct=direct or self.statements_direct)

    # -- JSON ---------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The flat ``extra_info`` pytest-benchmark stores (the keys earlier results have, plus ``measures``)."""
        op = self.key.operation
        out: dict[str, Any] = {
            "arm": self.key.arm,
            "arm_label": self.env.arm_label,
            "driver": self.env.driver,
            "is_async": self.env.is_async,
            "model": self.key.model,
            "test": ALL_MODELS[self.key.model].test,
            "op": op.letter,
            "op_name": op.name,
            "op_title": op.title,
            "object_op": op.object_op,
            "mode": self.key.mode,
            "table": self.key.table,
            "db": self.key.db,
            "rtt_ms": self.key.rtt_ms,
            "rows": self.rows,
            "start_rows": self.start_rows,
            "rounds": self.rounds,
            "median_seconds": median(self.seconds) if self.seconds else None,
            "rows_per_s": self.rows_per_s if self.timed else None,
            "measures": {name: list(values) for name, values in self.measures.items()},
            "verified": self.verified,
            "iterations": self.iterations,
            "batch": self.batch,
            "versions": dict(self.env.versions),
            "python": self.env.python,
            "sqlite_version": self.env.sqlite_version,
            "database": self.env.database,
            "settings": dict(self.settings),
            "pragmas": self.facts.pragmas,
            "connections": self.facts.connections,
            "commits": self.facts.commits,
            "deviations": dict(self.deviations),
            "unsupported": dict(self.env.unsupported),
            "arm_info": dict(self.env.arm_info),
            "worker_pids": list(self.worker_pids),
            "schedule": self.schedule,
            "round_slots": list(self.slots),
            "loadavg_1min": self.loadavg_1min,
        }
        if self.key.strategy is not None:
            out["strategy"] = self.key.strategy
        if self.phases:
            out["phases"] = {k: round(v, 6) for k, v in self.phases.items()}
        if self.facts.arm_facts:
            out["arm_facts"] = dict(self.facts.arm_facts)
        if self.facts.memory_peak_bytes is not None:
            out["memory_peak_bytes"] = self.facts.memory_peak_bytes
        if self.facts.bulk_ids_set is not None:
            out["bulk_ids_set"] = self.facts.bulk_ids_set
        if self.statements:
            out["statements"] = [dict(s) for s in self.statements]
        if self.statements_note:
            out["statements_note"] = self.statements_note
        if self.statements_direct:
            out["statements_counted_direct"] = True
        if self.instrumented:
            out["instrumented"] = self.instrumented
        if self.instructions and self.rows:
            out["instructions_per_row"] = self.instructions_per_row
        return out

    @classmethod
    def from_json(cls, info: Mapping[str, Any], round_seconds: Sequence[float] | None = None) -> CellRecord:
        """Read an ``extra_info`` back, from this version or an earlier one (before ``measures``).

        ``round_seconds``: the times pytest-benchmark kept in ``stats.data``, which win over the copy in
        ``extra_info`` (they are what pytest-benchmark's own tools show).
        """
        try:
            key = CellKey.from_info(info)
            measures = {str(k): [float(x) for x in v] for k, v in (info.get("measures") or {}).items()}
            wall = round_seconds if round_seconds else (measures.get(WALL) or info.get("round_seconds") or [])
            measures[WALL] = [float(x) for x in wall]
            return cls(
                key=key,
                rows=int(info["rows"]),
                start_rows=int(info.get("start_rows") or 0),
                iterations=int(info.get("iterations") or 0),
                batch=int(info.get("batch") or 0),
                settings=dict(info.get("settings") or {}),
                env=Environment(
                    arm_label=str(info.get("arm_label") or key.arm), driver=info.get("driver"),
                    is_async=info.get("is_async"), versions=dict(info.get("versions") or {}),
                    python=info.get("python"), sqlite_version=info.get("sqlite_version"),
                    database=info.get("database"), unsupported=dict(info.get("unsupported") or {}),
                    arm_info=dict(info.get("arm_info") or {}),
                ),
                facts=Facts(
                    pragmas=info.get("pragmas"), connections=info.get("connections"), commits=info.get("commits"),
                    bulk_ids_set=info.get("bulk_ids_set"), memory_peak_bytes=info.get("memory_peak_bytes"),
                    arm_facts=dict(info.get("arm_facts") or {}),
                ),
                measures=measures,
                deviations=dict(info.get("deviations") or {}),
                slots=list(info.get("round_slots") or []),
                worker_pids=list(info.get("worker_pids") or []),
                schedule=info.get("schedule"),
                phases={str(k): float(v) for k, v in (info.get("phases") or {}).items()},
                loadavg_1min=info.get("loadavg_1min"),
                verified=info.get("verified") is True,
                statements=[{str(k): int(v) for k, v in d.items()} for d in info.get("statements") or []],
                statements_note=info.get("statements_note"),
                statements_direct=info.get("statements_counted_direct") is True,
                instrumented=info.get("instrumented"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, RecordError):
                raise
            raise RecordError(f"not a pytest-ormbench cell ({type(exc).__name__}: {exc})") from None


#: the ``extra_info`` keys that describe the measuring process rather than the cell: the same for every cell of
#: an arm at one place in a run, so a saved run stores each distinct set once (``fold_environments``)
ENVIRONMENT_KEYS = ("arm_label", "driver", "is_async", "versions", "python", "sqlite_version", "database",
                    "unsupported", "arm_info")


def fold_environments(infos: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Move each cell's environment out of its ``extra_info`` into one table, in place.

    Every ``info`` that holds the environment keys loses them and gains ``"environment": NAME``; the table maps
    NAME (``arm@place``, e.g. ``peewee@postgresql@5ms``; ``#2``, ``#3`` … should one arm's cells at one place
    have found different environments) to the keys. What a run stores per arm and database, it stores once.
    """
    table: dict[str, dict[str, Any]] = {}
    for info in infos:
        if any(k not in info for k in ENVIRONMENT_KEYS) or isinstance(info.get("environment"), str):
            continue
        try:
            base = f"{info['arm']}@{CellKey.from_info(info).place}"
        except (RecordError, KeyError):
            continue  # not a cell of ours
        env = {k: info.pop(k) for k in ENVIRONMENT_KEYS}
        name, n = base, 1
        while name in table and table[name] != env:
            n += 1
            name = f"{base}#{n}"
        table[name] = env
        info["environment"] = name
    return table


def unfold_environment(info: Mapping[str, Any], table: Mapping[str, Any]) -> Mapping[str, Any]:
    """An ``extra_info`` with its environment back in place (files written before the table had it inline)."""
    name = info.get("environment")
    if not isinstance(name, str):
        return info
    env = table.get(name) if isinstance(table, Mapping) else None
    if not isinstance(env, Mapping):
        raise RecordError(f"its environment {name!r} is not in the file's ormbench.environments")
    return {**env, **{k: v for k, v in info.items() if k != "environment"}}


def applicable_deviations(declared: Mapping[str, str], key: CellKey) -> dict[str, str]:
    """The declared deviations that concern this cell: for every cell, its op, its model, or both."""
    op = key.operation.name
    scopes: tuple[str, ...] = ("*", op, key.model, f"{key.model}:{op}")
    # a database scopes them too: "postgresql", "postgresql:wide", "postgresql:insert_bulk"
    scopes += (key.db, f"{key.db}:{key.model}", f"{key.db}:{op}")
    return {k: v for k, v in declared.items() if k in scopes}
