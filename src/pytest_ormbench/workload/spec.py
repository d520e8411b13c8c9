"""The workload: the reference suite's models, operations, modes, tables and durability settings.

An arm knows its ORM and this module, nothing of pytest. The harness knows this
module, nothing of any ORM. Everything an arm receives or returns is plain
Python: rows are dicts keyed by the canonical field names defined here.
"""

from __future__ import annotations

import abc
import asyncio
import datetime as dt
from functools import cached_property
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

# --------------------------------------------------------------------------
# Models (the reference suite's Tests 1, 2 and 3)
# --------------------------------------------------------------------------

LEVELS: tuple[int, ...] = (10, 20, 30, 40, 50)
PAGE_SIZE = 20
TEXT_MAX = 255
DECIMAL_DIGITS, DECIMAL_PLACES = 10, 2

NO_DEFAULT: Any = object()

WIDE_KINDS: tuple[str, ...] = ("float", "smallint", "int", "bigint", "char", "text", "decimal", "json")
WIDE_SETS: tuple[int, ...] = (1, 2, 3, 4)
#: Sets 1 and 3 have defaults, 2 and 4 are nullable (as in the reference).
WIDE_DEFAULT_SETS: tuple[int, ...] = (1, 3)
#: Rows the generator writes give values for sets 1 and 2 only, so that set 3
#: exercises column defaults and set 4 exercises NULLs.
WIDE_GIVEN_SETS: tuple[int, ...] = (1, 2)
WIDE_DEFAULTS: dict[str, Any] = {
    "float": 2.2,
    "smallint": 2,
    "int": 2_000_000,
    "bigint": 99_999_999_999,
    "char": "value1",
    "text": "long text",
    "decimal": Decimal("2.20"),
    "json": {"a": 1, "b": "b"},
}


@dataclass(frozen=True)
class Field:
    """One canonical column. ``kind`` is one of: id, datetime, int, str, fk,
    float, smallint, bigint, char, text, decimal, json."""

    name: str
    kind: str
    nullable: bool = False
    default: Any = NO_DEFAULT
    indexed: bool = False

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT


def wide_field_name(kind: str, set_no: int) -> str:
    return f"col_{kind}_{set_no}"


def _wide_fields() -> tuple[Field, ...]:
    out = []
    for s in WIDE_SETS:
        for kind in WIDE_KINDS:
            if s in WIDE_DEFAULT_SETS:
                out.append(Field(wide_field_name(kind, s), kind, default=WIDE_DEFAULTS[kind]))
            else:
                out.append(Field(wide_field_name(kind, s), kind, nullable=True))
    return tuple(out)


_BASE = (
    Field("id", "id"),
    Field("timestamp", "datetime"),
    Field("level", "int", indexed=True),
    Field("text", "str", indexed=True),
)


@dataclass(frozen=True)
class ModelSpec:
    """A test model: its canonical fields and whether it has Test 2's relations."""

    name: str
    test: int
    title: str
    fields: tuple[Field, ...]
    relations: bool = False

    @cached_property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @cached_property
    def wide_fields(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.name.startswith("col_"))

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


MODELS: dict[str, ModelSpec] = {
    "simple": ModelSpec("simple", 1, "Test 1: simple model", _BASE),
    "fk": ModelSpec(
        "fk",
        2,
        "Test 2: relations",
        _BASE + (Field("parent_id", "fk", nullable=True, indexed=True),),
        relations=True,
    ),
    "wide": ModelSpec("wide", 3, "Test 3: wide model", _BASE + _wide_fields()),
}

#: Test 4, the relational workload (``workload.relational``): six tables instead of one model's fields, and its
#: own operations (the shapes). Not in :data:`MODELS`, which holds the reference suite's Tests 1-3 that every
#: Tests 1-3 arm builds a table for; :data:`ALL_MODELS` holds the four.
RELATIONAL = ModelSpec("relational", 4, "Test 4: relations (organizations, users, posts, comments, tags)", (),
                       relations=True)
ALL_MODELS: dict[str, ModelSpec] = {**MODELS, RELATIONAL.name: RELATIONAL}

# --------------------------------------------------------------------------
# Operations
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    letter: str
    name: str
    title: str
    #: object operations count in the geometric mean; dict/tuple fetches do not
    object_op: bool = True
    #: it reads and leaves the table as it found it (a server then skips the between-round refill)
    read_only: bool = False


OPS: tuple[Op, ...] = (
    Op("A", "insert_single", "Insert: Single"),
    Op("B", "insert_batch", "Insert: Batch"),
    Op("C", "insert_bulk", "Insert: Bulk"),
    Op("D", "filter_large", "Filter: Large", read_only=True),
    Op("E", "filter_small", "Filter: Small", read_only=True),
    Op("F", "get", "Get", read_only=True),
    Op("G", "filter_dicts", "Filter: Dicts", object_op=False, read_only=True),
    Op("H", "filter_tuples", "Filter: Tuples", object_op=False, read_only=True),
    Op("I", "update_whole", "Update: Whole"),
    Op("J", "update_partial", "Update: Partial"),
    Op("K", "delete", "Delete"),
)
OPS_BY_LETTER = {op.letter: op for op in OPS}
OPS_BY_NAME = {op.name: op for op in OPS}

MODES = ("cold", "warm")
TABLES = ("default", "large")
JOURNAL_MODES = ("delete", "wal")
SYNCHRONOUS = {"off": 0, "normal": 1, "full": 2}


@dataclass(frozen=True)
class Settings:
    """The durability every arm must run under; read back from the live connection.

    Each database backend maps these to its own settings (SQLite: pragmas, in
    ``backends/sqlite.py``) and says what the live connection must report.
    """

    journal_mode: str = "delete"
    synchronous: str = "full"
    foreign_keys: bool = True
    #: PostgreSQL: durability settings changed from the server's durable defaults for every arm, as
    #: (name, value) pairs of ``synchronous_commit``, ``fsync``, ``full_page_writes``, ``wal_sync_method``
    postgresql: tuple[tuple[str, str], ...] = ()
    #: MariaDB/MySQL: durability settings changed from the durable defaults for every arm, as (name, value)
    #: pairs of ``innodb_flush_log_at_trx_commit``, ``sync_binlog``, ``log_bin``, ``innodb_doublewrite``
    mysql: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"journal_mode": self.journal_mode, "synchronous": self.synchronous,
                               "foreign_keys": self.foreign_keys}
        if self.postgresql:
            out["postgresql"] = dict(self.postgresql)
        if self.mysql:
            out["mysql"] = dict(self.mysql)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Settings":
        return cls(journal_mode=d.get("journal_mode", "delete"), synchronous=d.get("synchronous", "full"),
                   foreign_keys=bool(d.get("foreign_keys", True)),
                   postgresql=tuple(sorted((str(k), str(v)) for k, v in (d.get("postgresql") or {}).items())),
                   mysql=tuple(sorted((str(k), str(v)) for k, v in (d.get("mysql") or {}).items())))

    def describe(self) -> dict[str, str]:
        """The settings as a person reads them (``foreign_keys=on``)."""
        out = {"journal_mode": self.journal_mode, "synchronous": self.synchronous,
               "foreign_keys": "on" if self.foreign_keys else "off"}
        out.update({f"postgresql.{k}": v for k, v in self.postgresql})
        out.update({f"mysql.{k}": v for k, v in self.mysql})
        return out


class Unsupported(Exception):
    """Raised (or declared in ``Arm.unsupported``) for an op an arm cannot do."""


@dataclass
class Snapshot:
    """What the database holds, in canonical form, read independently of the op."""

    rows: dict[int, dict[str, Any]]
    links: set[tuple[int, int]] = field(default_factory=set)


# --------------------------------------------------------------------------
# Value helpers shared by arms and the verifier
# --------------------------------------------------------------------------

EPOCH = dt.datetime(2026, 1, 1, 0, 0, 0)
