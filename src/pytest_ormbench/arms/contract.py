"""The contract between the harness and an arm (one ORM or database).

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

from pytest_ormbench.workload.spec import (DECIMAL_DIGITS, DECIMAL_PLACES, EPOCH, Field, JOURNAL_MODES, LEVELS, MODELS, MODES, ModelSpec,
    NO_DEFAULT, OPS, OPS_BY_LETTER, OPS_BY_NAME, Op, PAGE_SIZE, SYNCHRONOUS, Settings, Snapshot, TABLES, TEXT_MAX,
    Unsupported, WIDE_DEFAULTS, WIDE_DEFAULT_SETS, WIDE_GIVEN_SETS, WIDE_KINDS, WIDE_SETS, wide_field_name)

# --------------------------------------------------------------------------
# The arm interface
# --------------------------------------------------------------------------

Row = Mapping[str, Any]


class Arm(abc.ABC):
    """One ORM (or database) driving one model on one database.

    Lifecycle, per process: ``Arm(model, settings)`` -> ``open(path)`` ->
    (``create_schema`` + ``populate`` when building a starting state) -> ops ->
    ``restore(template)`` between warm rounds -> ``close()``. ``open`` may be
    called again on another path after ``close``.

    Op methods receive everything prepared; only persisting happens inside them.
    Async arms (``is_async = True``) may write open, close, create_schema, populate,
    insert_links, load_all, pragmas, restore and the ops as coroutines (build, id_of,
    fields_of, snapshot, expected_settings, describe and op_facts are called plain,
    never driven); the harness drives them on the one
    event loop of the process (created before any timer; the op's coroutine
    object is created before the timer too, and only driven inside it).
    """

    #: registry name, e.g. "peewee"; also the test-id prefix
    name: ClassVar[str]
    #: human label for tables
    label: ClassVar[str] = ""
    #: distributions whose versions are recorded, e.g. ("peewee",)
    packages: ClassVar[tuple[str, ...]] = ()
    #: the driver, for the tables ("sqlite3", "aiosqlite", "embedded")
    driver: ClassVar[str] = "sqlite3"
    is_async: ClassVar[bool] = False
    #: op name -> reason, for ops this arm cannot do (reported, never emulated)
    unsupported: ClassVar[Mapping[str, str]] = {}
    #: "*" or op name or model name -> text: work that is not the same as the
    #: other arms' (recorded in the results and shown in the tables)
    deviations: ClassVar[Mapping[str, str]] = {}
    #: whether insert_bulk sets ids on the objects (verified either way)
    bulk_sets_ids: ClassVar[bool] = False
    #: whether two open instances in one process keep apart: each its own connection, engine and model
    #: binding. Then an interleaved warm cell's session stays open in the arm's worker between its rounds while
    #: the worker serves other cells (``--ormbench-warm-start=kept``). False (the default) for an arm whose
    #: connection or binding is the process's (Django's ``connections``, SQLObject's ``sqlhub``, a model class
    #: bound to one database, Tortoise ORM's ``Tortoise.init``), so that another cell's ``open`` would take it:
    #: its sessions close after each request. An async arm's kept session runs on the worker's one event loop;
    #: it may declare it when its instance holds its own engine (SA ORM async, ormar). Declaring it wrongly
    #: fails the run (a kept session whose database lost its connection) or its verification (writes counted on
    #: another database), never silently.
    independent_sessions: ClassVar[bool] = False
    #: where the data lives, for the harness: a name in ``pytest_ormbench.backends.DATABASES``,
    #: or a ``Database`` instance for an engine that comes with its arm. The harness counts
    #: commits and connections through it and copies and removes the arm's databases with it.
    database: ClassVar[Any] = "sqlite"
    #: the values of the database axis (``--ormbench-dbs``) the arm runs on: ``sqlite`` is the embedded
    #: side (SQLite, or the arm's own store), a server name means the arm connects to that server, and
    #: ``open()`` then receives a :class:`pytest_ormbench.backends.ServerLocation` instead of a path
    databases: ClassVar[tuple[str, ...]] = ("sqlite",)
    #: database axis value -> why the arm cannot run there (reported on its cells; others: "not ported")
    database_notes: ClassVar[Mapping[str, str]] = {}

    def __init__(self, model: ModelSpec, settings: Settings) -> None:
        self.model = model
        self.settings = settings

    # -- connection ---------------------------------------------------------
    @abc.abstractmethod
    def open(self, path: Path) -> None:
        """Point the arm at a database (it may connect lazily): a file path, or a server database's location."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release every connection and file handle."""

    @abc.abstractmethod
    def pragmas(self) -> dict[str, str]:
        """Read journal_mode, synchronous, foreign_keys from the live connection."""

    def expected_settings(self) -> Mapping[str, str] | None:
        """What ``pragmas()`` must report for ``self.settings``; the harness compares the two.

        None (the default): what the arm's database backend expects for the settings
        (``Database.expected_durability``). An arm whose engine reports more, or reports it
        differently, returns it here, and raises :class:`Unsupported` for settings it cannot match.
        """
        return None

    @abc.abstractmethod
    def create_schema(self) -> Any:
        """Create the tables (and indexes) for ``self.model``."""

    @abc.abstractmethod
    def restore(self, template: Path) -> Any:
        """Reset the open database to the template's exact state."""

    # -- building states and reading them back ------------------------------
    def populate(self, rows: Sequence[Row], links: Sequence[tuple[int, int]]) -> Any:
        """Write a starting state (rows carry explicit ids). Untimed.

        The default inserts ``build(rows)`` with ``insert_bulk`` (``insert_batch`` where
        bulk insert is unsupported), then the links.
        """
        insert = self.insert_batch if "insert_bulk" in self.unsupported else self.insert_bulk
        result = insert(self.build(rows))
        if asyncio.iscoroutine(result):
            return _chain(result, self.insert_links(links) if links else None)
        if links:
            return self.insert_links(links)
        return None

    def insert_links(self, links: Sequence[tuple[int, int]]) -> Any:
        """Write many-to-many links (from_id, to_id) for Test 2."""
        raise NotImplementedError

    @abc.abstractmethod
    def snapshot(self) -> Snapshot:
        """Read every row (and link) back, independently of the ORM's caches."""

    @abc.abstractmethod
    def build(self, rows: Sequence[Row]) -> list[Any]:
        """Unsaved objects for rows (with ``id`` only when a row has one)."""

    @abc.abstractmethod
    def load_all(self) -> Any:
        """All objects, ordered by id, for update and delete (untimed)."""

    def id_of(self, obj: Any) -> int | None:
        return getattr(obj, "id", None)

    def fields_of(self, obj: Any) -> dict[str, Any]:
        """Canonical field values of a fetched object (for verification)."""
        names = self.model.field_names
        return {name: getattr(obj, name) for name in names}

    # -- the operations (A-K) ----------------------------------------------
    def insert_single(self, objs: list[Any]) -> Any:
        """A: each object saved in its own transaction."""
        raise _not_implemented("insert_single")

    def insert_batch(self, objs: list[Any]) -> Any:
        """B: one transaction, one save per object."""
        raise _not_implemented("insert_batch")

    def insert_bulk(self, objs: list[Any]) -> Any:
        """C: the fastest bulk API, one transaction (chunked if needed)."""
        raise _not_implemented("insert_bulk")

    def filter_large(self, levels: Sequence[int]) -> Any:
        """D: for each level, all objects with that level; one flat list."""
        raise _not_implemented("filter_large")

    def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> Any:
        """E: for each (level, offset): level=L order by id, offset, limit."""
        raise _not_implemented("filter_small")

    def get(self, ids: Sequence[int]) -> Any:
        """F: one get by primary key per id; the objects in order."""
        raise _not_implemented("get")

    def filter_dicts(self, levels: Sequence[int]) -> Any:
        """G: as D, rows as dicts keyed by canonical field names."""
        raise _not_implemented("filter_dicts")

    def filter_tuples(self, levels: Sequence[int]) -> Any:
        """H: as D, rows as tuples in canonical field order."""
        raise _not_implemented("filter_tuples")

    def update_whole(self, objs: list[Any], values: Sequence[Mapping[str, Any]]) -> Any:
        """I: set ``values[i]`` on ``objs[i]`` and save whole objects; one transaction."""
        raise _not_implemented("update_whole")

    def update_partial(self, objs: list[Any], levels: Sequence[int]) -> Any:
        """J: set the new level and write only that column; one transaction."""
        raise _not_implemented("update_partial")

    def delete(self, objs: list[Any]) -> Any:
        """K: delete each object, one by one, in one transaction."""
        raise _not_implemented("delete")

    # -- reporting ------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """Anything else worth recording (e.g. the SQLite library the arm uses).

        Called on a fresh instance that has not been opened; recorded as ``arm_info``.
        """
        return {}

    def op_facts(self) -> dict[str, Any]:
        """Facts the arm measured about the last op (e.g. connections it opened), recorded per cell."""
        return {}


def _not_implemented(op: str) -> NotImplementedError:
    """An op an arm neither implements nor declares: a failure, never a silent "unsupported"."""
    return NotImplementedError(f"{op} is not implemented: implement it, or declare it in the arm's "
                               f"`unsupported` with the reason the ORM cannot do it")


async def _chain(first: Any, second: Any) -> None:
    await first
    if second is not None:
        await second

