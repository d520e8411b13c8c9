"""ObjectBox arms: an embedded object database with its own storage engine (no SQL).

Two arms share this module and differ only in how the Python binding marshals
objects to and from FlatBuffers:

* ``objectbox``: the experimental code generation, switched on with
  ``objectbox.experimental.enable_flatbuffers_codegen()`` (ObjectBox 5.0.0; the
  5.0.0b1 beta had it on unless ``OBX_CODEGEN=0``, 5.0.0 has it off by default and
  no environment variable);
* ``objectbox_nocodegen``: the default marshalling (``flatbuffers.Builder`` for
  writes, ``flatbuffers.Table`` for reads), both experimental builders switched off.

The switch is process-global in the binding: each arm sets it in ``open()`` and
after every restore, and ``pragmas()`` (checked by the harness after every round)
reports the path that was active, so a change in between fails the round.

The "database" is a directory (``data.mdb`` and ``lock.mdb``); the model JSON
file lives inside it, so it is a temporary file that travels with every copy of
the store. The UIDs of entities, properties and indexes are pinned in code (a
stable hash of their names), so any process syncs the same IDs into the JSON:
there is no committed ``objectbox-model.json`` next to this source.

Durability (verified with strace on ObjectBox 5.0.0 / library 5.3.2, Linux):
every write transaction commits by writing its new pages, ``fdatasync`` of
``data.mdb``, then writing the meta page through a second descriptor opened with
``O_DSYNC``: two synchronous waits per commit, like LMDB's default. Pages are
copy-on-write (MVCC), so there is no journal and no WAL, and a crash leaves the
previous commit. There is no option to relax this for a file store (the C
library's ``obx_opt_wal`` is for in-memory stores and is not exposed in Python),
so the arm refuses settings it cannot match (``synchronous`` other than FULL).
Each committed write transaction increments the meta page's transaction id,
which :func:`committed_txns` reads (the ObjectBox counterpart of SQLite's file
change counter; empty write transactions do not commit).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import objectbox
from objectbox import (Date, Entity, Float64, Id, Index, Int16, Int32, Int64, Model, Relation, Store,
                       String, experimental)

from pytest_ormbench.arms.helpers import assign, slices
from pytest_ormbench.workload.spec import MODELS, Field, ModelSpec, Settings, Snapshot, Unsupported
from pytest_ormbench.arms.contract import Arm
from pytest_ormbench.backends import Database
from pytest_ormbench.arms.notes import load_notes

MODEL_JSON = "objectbox-model.json"
_MODEL_NAME = "pytest_ormbench"  # @Entity(model=...): keeps these entities out of the "default" model

#: what pragmas() reports: ObjectBox's own durability, under the keys the harness compares
JOURNAL = "none (copy-on-write pages, MVCC)"
SYNCHRONOUS = "full (fdatasync + O_DSYNC meta page per commit)"
FOREIGN_KEYS = "to-one relations reset to 0 when the target is removed; not checked on put"


# --------------------------------------------------------------------------
# Entities, built from the canonical models
# --------------------------------------------------------------------------

def _uid(*parts: str) -> int:
    """A stable, non-zero 63-bit UID for a model element (what a committed model JSON would pin)."""
    digest = hashlib.sha256(":".join(("pytest-ormbench", *parts)).encode()).digest()
    return (int.from_bytes(digest[:8], "big") >> 1) or 1


_SCALARS = {
    "int": Int32, "str": String, "float": Float64, "smallint": Int16, "bigint": Int64,
    "char": String, "text": String, "decimal": String, "json": String,
}


def _property(entity: str, f: Field) -> Any:
    uid = _uid(entity, f.name)
    if f.kind == "id":
        return Id(uid=uid)
    if f.kind == "datetime":
        return Date(dt.datetime, uid=uid)  # milliseconds since the epoch
    if f.kind == "fk":
        return _relation(entity, entity, f.name)
    kwargs = {"index": Index(uid=_uid(entity, f.name, "index"))} if f.indexed else {}
    return _SCALARS[f.kind](uid=uid, **kwargs)


def _relation(entity: str, target: str, name: str) -> Relation:
    rel = Relation(target, uid=_uid(entity, name))
    rel.index = Index(uid=_uid(entity, name, "index"))  # Relation makes its own index; pin its UID too
    return rel


def _entity(name: str, props: Mapping[str, Any]) -> Any:
    cls = type(name, (), dict(props))
    return Entity(uid=_uid(name), model=_MODEL_NAME)(cls)


def _main_entity(spec: ModelSpec, name: str) -> Any:
    return _entity(name, {f.name: _property(name, f) for f in spec.fields})


JournalSimple = _main_entity(MODELS["simple"], "JournalSimple")
JournalFk = _main_entity(MODELS["fk"], "JournalFk")
#: Test 2's many-to-many: a link entity with two to-one relations (the binding has no ToMany)
JournalLink = _entity("JournalLink", {
    "id": Id(uid=_uid("JournalLink", "id")),
    "from_id": _relation("JournalLink", "JournalFk", "from_id"),
    "to_id": _relation("JournalLink", "JournalFk", "to_id"),
})
JournalWide = _main_entity(MODELS["wide"], "JournalWide")

_ENTITIES = {"simple": (JournalSimple,), "fk": (JournalFk, JournalLink), "wide": (JournalWide,)}


def _make_model(entities: Sequence[Any]) -> Model:
    model = Model()
    for e in entities:
        model.entity(e)
    return model


#: one Model per canonical model, shared by both arms (entities carry their synced IDs)
OBX_MODELS = {name: _make_model(ents) for name, ents in _ENTITIES.items()}


# --------------------------------------------------------------------------
# Reading the store's commit counter (LMDB-format meta pages)
# --------------------------------------------------------------------------

_META_MAGIC = 0xBEEFC0DE
_PAGE_HEADER = 16  # the meta struct follows the page header
_META_PSIZE_OFFSET = 24  # mm_dbs[0].md_pad holds the page size
_META_TXNID_OFFSET = 128  # mm_txnid, the last field of the meta struct


def committed_txns(store_dir: Path) -> int | None:
    """Write transactions committed to the store so far (the newest meta page's txn id), or None."""
    try:
        with open(Path(store_dir) / "data.mdb", "rb") as fh:
            head = fh.read(_PAGE_HEADER + _META_TXNID_OFFSET + 8)
            if len(head) < _PAGE_HEADER + _META_TXNID_OFFSET + 8:
                return None
            magic = struct.unpack_from("<I", head, _PAGE_HEADER)[0]
            psize = struct.unpack_from("<I", head, _PAGE_HEADER + _META_PSIZE_OFFSET)[0]
            if magic != _META_MAGIC or not 512 <= psize <= 65536:
                return None
            fh.seek(psize)
            second = fh.read(_PAGE_HEADER + _META_TXNID_OFFSET + 8)
    except OSError:
        return None
    ids = []
    for page in (head, second):  # two meta pages, written alternately: the newer one has the higher txn id
        if len(page) == len(head) and struct.unpack_from("<I", page, _PAGE_HEADER)[0] == _META_MAGIC:
            ids.append(struct.unpack_from("<Q", page, _PAGE_HEADER + _META_TXNID_OFFSET)[0])
    return max(ids) if ids else None


class ObjectBoxStore(Database):
    """ObjectBox's storage, for the harness: a store directory, its commits counted from the meta pages.

    ``copy``/``remove`` are the base class's (a directory is copied and removed whole). The store holds
    no file descriptor the harness could count per connection, so :meth:`connections` cannot tell.
    """

    name: ClassVar[str] = "objectbox"

    def expected_durability(self, settings: Settings) -> dict[str, str]:
        """What ObjectBox reports when it commits as durably as ``settings`` ask; refuses what it cannot match."""
        sync = settings.synchronous
        if sync != "full":
            raise Unsupported(f"ObjectBox syncs every commit; it has no setting like synchronous={sync}")
        if not settings.foreign_keys:
            raise Unsupported("ObjectBox always resets to-one relations of removed objects (foreign_keys=OFF "
                              "cannot be matched)")
        return {"journal_mode": JOURNAL, "synchronous": SYNCHRONOUS, "foreign_keys": FOREIGN_KEYS}

    def commits(self, location: Path) -> int | None:
        """The meta page's transaction id: one per committed write transaction."""
        return committed_txns(location)

    def connections(self, location: Path) -> int | None:
        return None

    def trace_statements(self, counter: Any) -> str | None:
        return ("ObjectBox has no SQL: its queries and puts run inside its C core, which reports no "
                "statements; commits are counted from the store instead")


# --------------------------------------------------------------------------
# Values: canonical rows <-> ObjectBox attributes
# --------------------------------------------------------------------------

def _to_obx(kind: str, value: Any) -> Any:
    """A canonical value as the entity attribute holds it (None stays None: a null)."""
    if value is None:
        return None
    if kind == "datetime":
        # canonical timestamps are naive UTC; the binding reads a naive datetime as local time
        return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value
    if kind == "decimal":
        return str(value)
    if kind == "json":
        return json.dumps(value)
    return value


def _from_obx(kind: str, value: Any) -> Any:
    """An attribute value in canonical form (decimal as Decimal, JSON parsed, timestamp naive UTC)."""
    if kind == "datetime":
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
    if kind == "fk":
        return value or None  # 0 is "no target"
    if kind == "decimal":
        return Decimal(value) if value != "" else None
    if kind == "json":
        return json.loads(value) if value != "" else None
    return value


#: the most objects one put may create (ObjectBox reserves their ids in one call)
PUT_LIMIT = 10_000


NOTES = load_notes("pytest_ormbench.suites", "objectbox")


class ObjectBoxArm(Arm):
    name = "objectbox"
    label = "ObjectBox"
    packages = ("objectbox",)
    driver = "embedded"
    bulk_sets_ids = True  # box.put(list) sets the new ids on the objects
    independent_sessions = True  # a Store per instance
    #: marshalling the arm runs with: "codegen" or "generic"
    marshalling: ClassVar[str] = "codegen"
    unsupported = NOTES.unsupported
    deviations = NOTES.deviations

    database = ObjectBoxStore()
    database_notes = NOTES.database_notes

    _store: Store | None = None
    path: Path | None = None

    def __init__(self, model: ModelSpec, settings: Settings) -> None:
        super().__init__(model, settings)
        ents = _ENTITIES[model.name]
        self._entity = ents[0]
        self._link_entity = ents[1] if len(ents) > 1 else None
        self._obx_model = OBX_MODELS[model.name]
        self._kinds = {f.name: f.kind for f in model.fields}
        self._nullable = [f for f in model.fields if f.nullable and f.kind != "fk"]
        self._reset_handles()

    def _reset_handles(self) -> None:
        self._box = self._link_box = None
        self._level_query = self._page_query = self._links_query = None

    # -- connection ---------------------------------------------------------
    def _check_settings(self) -> None:
        self.database.expected_durability(self.settings)  # raises Unsupported for what ObjectBox cannot match

    def _apply_marshalling(self) -> None:
        if self.marshalling == "codegen":
            experimental.enable_flatbuffers_codegen(True)
        else:
            experimental.enable_flatbuffers_codegen(False)
            experimental.enable_fast_flatbuffers_builder(False)

    @staticmethod
    def active_marshalling() -> str:
        """The marshalling the binding uses now (read from the switch every put and read consults)."""
        if experimental.is_flatbuffers_codegen_enabled():
            return "codegen"
        if experimental.is_fast_flatbuffers_builder_enabled():
            return "fast builder"
        return "generic"

    def open(self, path: Path) -> None:
        self._check_settings()
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._apply_marshalling()
        self._open_store()

    def _open_store(self) -> None:
        assert self.path is not None
        self._store = Store(model=self._obx_model, directory=str(self.path),
                            model_json_file=str(self.path / MODEL_JSON))
        self._box = self._store.box(self._entity)
        if self._link_entity is not None:
            self._link_box = self._store.box(self._link_entity)

    def _close_store(self) -> None:
        if self._store is not None:
            self._store.close()  # also closes the store's queries
            self._store = None
        self._reset_handles()

    def close(self) -> None:
        self._close_store()

    def pragmas(self) -> dict[str, str]:
        assert self._store is not None and not self._store.is_closed(), "open() first"
        assert self.path is not None and committed_txns(self.path) is not None, "no ObjectBox data file"
        return {"journal_mode": JOURNAL, "synchronous": SYNCHRONOUS, "foreign_keys": FOREIGN_KEYS,
                "marshalling": self.active_marshalling()}

    def expected_settings(self) -> dict[str, str]:
        """The store's durability, plus the marshalling this arm must have run with."""
        return {**self.database.expected_durability(self.settings), "marshalling": self.marshalling}

    def create_schema(self) -> None:
        """Nothing to do: the store creates its schema from the model when it opens."""

    def restore(self, template: Path) -> None:
        """Close the store, copy the template directory over it, reopen: rows and id sequences exact.

        Entities, model and compiled codegen stay (the model JSON path is the same, so the
        model is not synced again); queries that were built are built again.
        """
        assert self.path is not None
        built = (self._level_query is not None, self._page_query is not None, self._links_query is not None)
        self._close_store()
        self.database.copy(template, self.path)
        self._apply_marshalling()
        self._open_store()
        if built[0]:
            self._build_level_query()
        if built[1]:
            self._build_page_query()
        if built[2]:
            self._build_links_query()

    def describe(self) -> dict[str, Any]:
        return {"objectbox": str(objectbox.version), "objectbox_core": str(objectbox.version_core),
                "marshalling": self.marshalling}

    # -- queries (built once, reused with a parameter per call) ---------------
    def _build_level_query(self) -> Any:
        e = self._entity
        self._level_query = self._box.query(e.level.equals(0)).build()
        return self._level_query

    def _build_page_query(self) -> Any:
        e = self._entity
        self._page_query = self._box.query(e.level.equals(0)).order(e.id).build()
        return self._page_query

    def _build_links_query(self) -> Any:
        """Two queries, one per relation: each uses its relation's index. One query with an OR of both
        conditions scans every link (measured: 1.4 ms against 23 µs per object with 20,000 links)."""
        link = self._link_entity
        self._links_query = (self._link_box.query(link.from_id.equals(0).alias("from")).build(),
                             self._link_box.query(link.to_id.equals(0).alias("to")).build())
        return self._links_query

    def children_of(self, parent_id: int) -> list[Any]:
        """Test 2's reverse relation: the objects whose parent is ``parent_id`` (a query on the relation)."""
        e = self._entity
        with self._box.query(e.parent_id.equals(parent_id)).build() as q:
            return q.find()

    # -- building states and reading them back ------------------------------
    def build(self, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        make, out = self._entity, []
        for row in rows:
            values: dict[str, Any] = {}
            for f in self.model.fields:
                if f.name in row:
                    value = row[f.name]
                elif f.has_default:
                    value = f.default
                else:
                    value = None
                if f.kind == "id":
                    value = value or 0  # 0: a new object
                elif f.kind == "fk":
                    value = value or 0  # 0: no target
                values[f.name] = _to_obx(f.kind, value)
            out.append(make(**values))
        return out

    def populate(self, rows: Sequence[Mapping[str, Any]], links: Sequence[tuple[int, int]]) -> None:
        """One put of all objects: a new store hands out ids 1..N in order (ids are not assignable)."""
        objs = self.build([{k: v for k, v in r.items() if k != "id"} for r in rows])
        ids = self._put_many(self._box, objs)
        want = [r["id"] for r in rows]
        if ids != want:
            raise RuntimeError(f"populate: ObjectBox assigned ids {ids[:3]}..., expected {want[:3]}...")
        if links:
            self.insert_links(links)

    def insert_links(self, links: Sequence[tuple[int, int]]) -> None:
        make = self._link_entity
        self._put_many(self._link_box, [make(from_id=a, to_id=b) for a, b in links])

    def _put_many(self, box: Any, objs: list[Any]) -> list[int]:
        """``box.put(list)``, in slices of at most PUT_LIMIT objects inside one write transaction.

        ObjectBox reserves the new ids of one put in a single call that refuses more than 10,000
        ("Limit for getting IDs is 10,000"); the SQL arms chunk for SQLite's variable limit the same way.
        """
        if len(objs) <= PUT_LIMIT:
            return box.put(objs)
        ids: list[int] = []
        with self._store.write_tx():
            for part in slices(objs, PUT_LIMIT):
                ids.extend(box.put(part))
        return ids

    def load_all(self) -> list[Any]:
        """All objects in id order; nulls set back to None (ObjectBox reads a null as the default)."""
        objs = self._box.get_all()
        if self._nullable:
            by_id = {obj.id: obj for obj in objs}
            for name, ids in self._null_ids().items():
                for i in ids:
                    setattr(by_id[i], name, None)
        return objs

    def _null_ids(self) -> dict[str, list[int]]:
        """Per nullable property, the ids of the objects holding a null there (an is_null() query each)."""
        out = {}
        for f in self._nullable:
            with self._box.query(getattr(self._entity, f.name).is_null()).build() as q:
                out[f.name] = q.find_ids()
        return out

    def id_of(self, obj: Any) -> int | None:
        value = getattr(obj, "id", 0)
        return value if isinstance(value, int) and value else None

    def fields_of(self, obj: Any) -> dict[str, Any]:
        kinds, out = self._kinds, {}
        for name, kind in kinds.items():
            out[name] = _from_obx(kind, getattr(obj, name))
        for f in self._nullable:  # a null reads back as the type's default
            if out[f.name] in (0, 0.0, "", None):
                out[f.name] = None
        return out

    def snapshot(self) -> Snapshot:
        """Every object read back with the reference unmarshalling (flatbuffers.Table, not the codegen
        under test), nulls found with is_null() queries, links as (from_id, to_id)."""
        assert self._store is not None
        codegen = experimental.is_flatbuffers_codegen_enabled()
        fast = experimental.is_fast_flatbuffers_builder_enabled()
        experimental.enable_flatbuffers_codegen(False)
        experimental.enable_fast_flatbuffers_builder(False)
        try:
            kinds = self._kinds
            rows = {}
            for obj in self._box.get_all():
                rows[obj.id] = {name: _from_obx(kind, getattr(obj, name)) for name, kind in kinds.items()}
            for name, ids in self._null_ids().items():
                for i in ids:
                    rows[i][name] = None
            links: set[tuple[int, int]] = set()
            if self._link_box is not None:
                links = {(lk.from_id, lk.to_id) for lk in self._link_box.get_all()}
            return Snapshot(rows, links)
        finally:
            if codegen:
                experimental.enable_flatbuffers_codegen(True)
            elif fast:
                experimental.enable_fast_flatbuffers_builder(True)

    # -- the operations (A-K) ----------------------------------------------
    def insert_single(self, objs: list[Any]) -> None:
        box = self._box
        for obj in objs:
            box.put(obj)  # its own write transaction

    def insert_batch(self, objs: list[Any]) -> None:
        box = self._box
        with self._store.write_tx():
            for obj in objs:
                box.put(obj)

    def insert_bulk(self, objs: list[Any]) -> None:
        self._put_many(self._box, objs)  # one transaction

    def filter_large(self, levels: Sequence[int]) -> list[Any]:
        q = self._level_query or self._build_level_query()
        level, out = self._entity.level, []
        for lv in levels:
            out.extend(q.set_parameter(level, lv).find())
        return out

    def filter_small(self, pages: Sequence[tuple[int, int]], limit: int) -> list[Any]:
        q = self._page_query or self._build_page_query()
        level, out = self._entity.level, []
        for lv, offset in pages:
            out.extend(q.set_parameter(level, lv).offset(offset).limit(limit).find())
        return out

    def get(self, ids: Sequence[int]) -> list[Any]:
        box = self._box
        return [box.get(i) for i in ids]

    def update_whole(self, objs: list[Any], values: Sequence[Mapping[str, Any]]) -> None:
        box = self._box
        with self._store.write_tx():
            for obj, new in zip(objs, values):
                assign(obj, new)
                box.put(obj)

    def update_partial(self, objs: list[Any], levels: Sequence[int]) -> None:
        box = self._box
        with self._store.write_tx():
            for obj, lv in zip(objs, levels):
                obj.level = lv
                box.put(obj)  # the whole object: no partial update

    def delete(self, objs: list[Any]) -> None:
        box = self._box
        if self._link_box is None:
            with self._store.write_tx():
                for obj in objs:
                    box.remove(obj.id)
            return
        from_q, to_q = self._links_query or self._build_links_query()
        with self._store.write_tx():
            for obj in objs:
                from_q.set_parameter_alias("from", obj.id).remove()
                to_q.set_parameter_alias("to", obj.id).remove()
                box.remove(obj.id)  # resets children's parent_id to 0


class ObjectBoxNoCodegenArm(ObjectBoxArm):
    name = "objectbox_nocodegen"
    label = "ObjectBox (no codegen)"
    marshalling = "generic"
