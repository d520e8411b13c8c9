"""Start a new arm from a module that already passes the selfcheck.

    python -m pytest_ormbench.commands.scaffold NAME [--dir bench_suites] [--label LABEL] [--async]

writes ``<dir>/<NAME>_arm.py``: a class with every method of the contract, in the order the
harness calls them, each saying in a comment what the ORM's version does there. Until it is
edited, every method hands its work to the control arm (``bench_suites.raw_sqlite3``), so the
module is green from the start::

    python -m pytest_ormbench.commands.selfcheck NAME --register <module>:<Class>

The placeholder is one visible object, ``self._control``, rather than a base class or a copy of
the control arm's SQL: the class already has the base it will keep (``SqliteArm``, or
``AiosqliteArm`` with ``--async``), no placeholder can survive unseen (``grep _control``), and no
second adapter is written out that could drift from the control arm. The async template runs the
control arm's methods in aiosqlite's thread, on the one connection aiosqlite holds.

Refuses (one line on stderr, exit status 2) a NAME that is not a lowercase identifier, that an
arm already has, or whose module would shadow an importable one, and an existing file.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import keyword
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from string import Template

from pytest_ormbench.arms.registry import BUILTIN_ARMS, all_arms

#: an arm name: a lowercase Python identifier (it is a test-id prefix, a module stem and a pip extra)
NAME_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
WIDTH = 108


class ScaffoldError(Exception):
    """A refusal: printed as one line, exit status 2."""


# --------------------------------------------------------------------------
# The methods after the connection ones: one entry each, rendered for both templates
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Method:
    name: str
    #: parameters after ``self``, as written, and the names they are passed on as
    params: str
    args: str
    returns: str
    #: what the harness hands the method and holds it to (the docstring)
    doc: str
    #: what the ORM's version does there: an example from peewee_arm.py / tortoise_arm.py
    sync_orm: str
    async_orm: str
    #: the harness drives it (``runner.drive``): a coroutine in the async template
    driven: bool = True
    #: a body other than the call to the control arm
    body: str | None = None


_METHODS: tuple[_Method, ...] = (
    _Method(
        "tables", "", "", "SqlTables",
        "Where the rows live, for snapshot()'s independent read-back after every round: the main "
        "table and, for Test 2, the link table.",
        '`return tables_for(self.model, "<the model\'s table>")`; the link table defaults to <table>_links\n'
        "with from_id, to_id; SqlTables(..., columns=...) where a column is not named as its canonical field",
        '`return tables_for(self.model, "<the model\'s table>")` (as in tortoise_arm.py)',
        driven=False,
    ),
    _Method(
        "create_schema", "", "", "None",
        "Tables and indexes for self.model, on the empty database of a starting state (untimed). "
        "Test 2: parent_id nullable, indexed, ON DELETE SET NULL; the link table ON DELETE CASCADE.",
        "`self.db.create_tables([Journal, JournalLink])` (peewee)",
        "`await Tortoise.generate_schemas(safe=False)` (Tortoise)",
    ),
    _Method(
        "before_restore", "", "", "None",
        "Between warm rounds, before restore() copies the template's pages into the live "
        "connection: end any open transaction or session (the copy fails under one).",
        "end its session or transaction (SQLAlchemy closes the session load_all opened; peewee rolls\n"
        "back a stray transaction); an ORM that holds neither: delete this method",
        "end its session or transaction (SQLAlchemy closes the session load_all opened); may be\n"
        "`async def`; an ORM that holds neither: delete this method",
        driven=False, body="",
    ),
    _Method(
        "after_restore", "", "", "None",
        "After the pages were replaced: drop everything the ORM remembers about the old rows, "
        "identity maps and query/result caches alike, so that no round is answered from memory.",
        "clear its caches (SQLObject: `self.so_conn.expireAll(); self.so_conn.cache.clear()`);\n"
        "an ORM that caches nothing: delete this method; a session cache that can be neither turned\n"
        "off nor bypassed by a fresh query object: a fresh session per query (per get in F), declared\n"
        "in deviations",
        "clear its identity map and result caches; may be `async def`; an ORM that caches nothing:\n"
        "delete this method; a cache neither off nor bypassed: a fresh session per query, declared",
        driven=False, body="",
    ),
    _Method(
        "populate", "rows: Sequence[Mapping[str, Any]], links: Sequence[tuple[int, int]]", "rows, links", "Any",
        "Write a starting state (untimed): rows carry explicit ids 1..N. The default is "
        "insert_bulk(build(rows)), then insert_links(links) for Test 2.",
        "keep the default, or override it where the bulk path cannot write explicit ids\n"
        "(peewee_arm.py), or the ORM inserts when an object is created (sqlobject_arm.py) or its\n"
        "objects exist only inside a session (Pony's db_session): create them in one transaction",
        "keep the default (it chains the coroutines), or override it as for a sync arm",
        driven=False, body="return super().populate(rows, links)",
    ),
    _Method(
        "insert_links", "links: Sequence[tuple[int, int]]", "links", "None",
        "Test 2's many-to-many links (from_id, to_id), written by populate (untimed).",
        "`with self.db.atomic(): JournalLink.insert_many(links, fields=[...]).execute()` (peewee)",
        "one executemany into the relation's through table, in one transaction (Tortoise)",
    ),
    _Method(
        "build", "rows: Sequence[Mapping[str, Any]]", "rows", "list[Any]",
        "Unsaved objects for rows (dicts keyed by the canonical field names; 'id' only in populate's "
        "rows), built right before an insert, untimed.",
        "`return [Journal(**row) for row in rows]` (peewee); an ORM that inserts when an object is\n"
        "created, or whose objects exist only inside a session (Pony's db_session), returns the row\n"
        "values only, the op creates the objects (sqlobject_arm.py), and deviations says so",
        "`return [Journal(**row) for row in rows]` (Tortoise); never a coroutine",
        driven=False,
    ),
    _Method(
        "load_all", "", "", "list[Any]",
        "Every object, ordered by id (untimed); the harness checks the ids are 1..N and hands the list "
        "straight to update_whole, update_partial or delete, so a session opened here is still open there.",
        "`return list(Journal.select().order_by(Journal.id))` (peewee)",
        '`return await Journal.all().order_by("id")` (Tortoise)',
    ),
    _Method(
        "id_of", "obj: Any", "obj", "int | None",
        "An object's id; after an insert the harness reads it from each element of the list the op "
        "received (an op may replace the elements, never the list).",
        "delete this method if the objects carry `id` (the default reads it); an arm whose\n"
        "build() returns row values reads both those and the objects the op created",
        "delete this method if the objects carry `id` (the default reads it)",
        driven=False,
    ),
    _Method(
        "fields_of", "obj: Any", "obj", "dict[str, Any]",
        "Canonical field values of a fetched object, for verification; runs after the op returns, "
        "untimed, so the op must return objects already loaded.",
        "delete this method if the attributes carry the canonical names (the default reads\n"
        "getattr(obj, name) for every field); never query here",
        "delete this method if the attributes carry the canonical names; never a coroutine",
        driven=False,
    ),
    _Method(
        "insert_single", "objs: list[Any]", "objs", "None",
        "A (timed): save each object in its own transaction, one commit each; afterwards every "
        "element of objs carries its new id.",
        "`for obj in objs:` / `with self.db.atomic(): obj.save()` (peewee)",
        "`for obj in objs:` / `async with in_transaction(): await obj.save()` (Tortoise)",
    ),
    _Method(
        "insert_batch", "objs: list[Any]", "objs", "None",
        "B (timed): save the objects one by one inside one transaction (one commit); each gets its id.",
        "`with self.db.atomic():` / `for obj in objs: obj.save()` (peewee)",
        "`async with in_transaction():` / `for obj in objs: await obj.save()` (Tortoise)",
    ),
    _Method(
        "insert_bulk", "objs: list[Any]", "objs", "None",
        "C (timed): the ORM's fastest bulk insert, one transaction, chunked where SQLite limits a "
        "statement; set bulk_sets_ids = True only if the objects get their ids (checked either way).",
        "`with self.db.atomic(): Journal.bulk_create(objs, batch_size=n)`, n from\n"
        "rows_per_statement() (peewee)",
        "`async with in_transaction(): await Journal.bulk_create(objs)` (Tortoise)",
    ),
    _Method(
        "filter_large", "levels: Sequence[int]", "levels", "list[Any]",
        "D (timed): for each level (the five levels, ten times over), every object with that level; "
        "one flat list of objects.",
        "`for lv in levels: out.extend(Journal.select().where(Journal.level == lv))` (peewee)",
        "`for lv in levels: out.extend(await Journal.filter(level=lv))` (Tortoise)",
    ),
    _Method(
        "filter_small", "pages: Sequence[tuple[int, int]], limit: int", "pages, limit", "list[Any]",
        "E (timed): for each (level, offset), the objects with that level ordered by id, at that offset, "
        "at most limit of them; one flat list, pages in order.",
        "`for lv, o in pages:` / `out.extend(J.select().where(J.level == lv).order_by(J.id)\n"
        ".offset(o).limit(limit))` (peewee)",
        "`for lv, o in pages:` / `out.extend(await J.filter(level=lv).order_by(\"id\")\n"
        ".offset(o).limit(limit))` (Tortoise)",
    ),
    _Method(
        "get", "ids: Sequence[int]", "ids", "list[Any]",
        "F (timed): one get by primary key per id (ids repeat), the objects in the order of ids.",
        "`return [Journal.get_by_id(i) for i in ids]` (peewee)",
        "`return [await Journal.get(id=i) for i in ids]` (Tortoise)",
    ),
    _Method(
        "filter_dicts", "levels: Sequence[int]", "levels", "list[dict[str, Any]]",
        "G (timed): as D, rows as dicts keyed by the canonical field names; no such API: delete this "
        "method and declare it in unsupported.",
        "`out.extend(Journal.select(*columns).where(Journal.level == lv).dicts())` (peewee)",
        "`out.extend(await Journal.filter(level=lv).values(*self.model.field_names))` (Tortoise)",
    ),
    _Method(
        "filter_tuples", "levels: Sequence[int]", "levels", "list[tuple[Any, ...]]",
        "H (timed): as D, rows as tuples in canonical field order (self.model.field_names); no such "
        "API: delete this method and declare it in unsupported.",
        "`out.extend(Journal.select().where(Journal.level == lv).tuples())` (peewee)",
        "`out.extend(await Journal.filter(level=lv).values_list(*self.model.field_names))` (Tortoise)",
    ),
    _Method(
        "update_whole", "objs: list[Any], values: Sequence[Mapping[str, Any]]", "objs, values", "None",
        "I (timed): set values[i] (new level and text) on objs[i] and save each whole object; one "
        "transaction.",
        "`with self.db.atomic():` / `for obj, new in zip(objs, values):` /\n"
        "`assign(obj, new); obj.save()` (peewee)",
        "`async with in_transaction():` / `assign(obj, new); await obj.save()` per object (Tortoise)",
    ),
    _Method(
        "update_partial", "objs: list[Any], levels: Sequence[int]", "objs, levels", "None",
        "J (timed): set levels[i] as objs[i].level and write only that column; one transaction.",
        "`obj.level = lv; obj.save(only=[Journal.level])` per object, in one `db.atomic()`\n"
        "(peewee)",
        '`obj.level = lv; await obj.save(update_fields=["level"])` per object, in one\n'
        "transaction (Tortoise)",
    ),
    _Method(
        "delete", "objs: list[Any]", "objs", "None",
        "K (timed): delete each object, one by one, in one transaction (Test 2: the children's "
        "parent_id becomes NULL and the object's links go).",
        "`with self.db.atomic():` / `for obj in objs: obj.delete_instance()` (peewee)",
        "`async with in_transaction():` / `for obj in objs: await obj.delete()` (Tortoise)",
    ),
    _Method(
        "describe", "", "", "dict[str, Any]",
        "Facts worth recording with every cell (versions, options); called on a fresh instance that "
        "was never opened.",
        "`return {**super().describe(), \"returning_clause\": ...}` (super(): the SQLite\n"
        "library's version)",
        "`return {**super().describe(), ...}`; never a coroutine",
        driven=False, body="return super().describe()",
    ),
    _Method(
        "op_facts", "", "", "dict[str, Any]",
        "Facts the arm measured about the op just verified (recorded per cell), e.g. cache hits or "
        "connections it opened.",
        "e.g. the hits of a cache the arm cannot turn off; nothing to say: delete this method",
        "Piccolo counts the connections it opened; nothing to say: delete this method",
        driven=False, body="return {}",
    ),
)


def _wrap(text: str, indent: str, width: int = WIDTH) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False)


def _docstring(text: str, indent: str) -> list[str]:
    lines = _wrap(text, indent, width=WIDTH - 3)
    if len(lines) == 1 and len(lines[0]) + 6 <= WIDTH:
        return [f'{indent}"""{lines[0].strip()}"""']
    lines[0] = f'{indent}"""{lines[0].strip()}'
    return lines + [f'{indent}"""']


def _render(m: _Method, is_async: bool) -> str:
    indent = " " * 8
    coroutine = is_async and m.driven
    params = f"self, {m.params}" if m.params else "self"
    out = [f"    {'async ' if coroutine else ''}def {m.name}({params}) -> {m.returns}:"]
    out += _docstring(m.doc, indent)
    for i, line in enumerate((m.async_orm if is_async else m.sync_orm).split("\n")):
        out.append(indent + ("# your ORM: " if i == 0 else "#   ") + line)
    if m.body is not None:
        body = m.body
    elif coroutine:
        call = f"self._control.{m.name}" + (f", {m.args}" if m.args else "")
        body = f"await self._in_thread({call})"
    else:
        body = f"self._control.{m.name}({m.args})"
    if m.body is None and m.returns != "None":
        body = "return " + body
    if body:
        out.append(indent + body)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------
# The parts that differ: module docstring, imports, class attributes, connection
# --------------------------------------------------------------------------

_DOC = '''\
"""The $name arm: scaffolded by ``python -m pytest_ormbench.commands.scaffold``, not yet $label.

Every method hands its work to the control arm (``self._control``, plain $driver), so
the module passes the selfcheck as it stands. Replace each ``self._control`` call with the ORM's
own code; each method's comment says what goes there, with an example from $example. A workable
order, checking each step with the selfcheck narrowed to the ops written so far:

1. the ORM's models (``__init__``), ``open``, ``close``, $conn_method, ``tables``, ``create_schema``,
   ``build``, ``insert_single``: ``--ops A``
2. ``insert_bulk``, ``insert_links`` (and ``populate`` if the bulk path cannot write ids), ``insert_batch``:
   ``--ops ABC``
3. the reads ``filter_large`` to ``filter_tuples``, ``id_of``/``fields_of`` where needed, and
   ``after_restore`` for any cache the reads fill: ``--ops ABCDEFGH``
4. ``load_all``, ``update_whole``, ``update_partial``, ``delete``, ``before_restore``: every op
5. delete ``self._control``$cleanup and the control arm's import; declare ``packages``,
   ``unsupported`` and ``deviations``; ``grep _control`` finds nothing.
6. every op again with ``--journal wal --synchronous normal`` (required: delete and full are SQLite's
   own defaults, so under them a connection that skipped the pragmas still reports what was asked for).

    python -m pytest_ormbench.commands.selfcheck $name --register $target [--ops A]

What every round is held to, and every file an arm touches: docs/adding-an-arm.md.
"""
'''

#: the declarations and the constructor both templates share (placed by $shared_declarations)
_SHARED_DECLARATIONS = '''\
    #: True only if insert_bulk sets the ids on the objects (checked every round either way)
    bulk_sets_ids = False
    #: op name -> why the ORM has no API for it: reported as unsupported, never emulated
    unsupported: dict[str, str] = {}
    #: "*", an op name, a model name or "model:op" -> work that is not the same as the other arms'
    deviations = {"*": "scaffold: still the control arm's plain sqlite3 behind every method"}
    #: where the data lives: "sqlite", or a Database instance for another engine (objectbox_arm.py)
    database = "sqlite"

    def __init__(self, model: ModelSpec, settings: Settings) -> None:
        super().__init__(model, settings)
        # your ORM: its model classes for self.model (simple, fk or wide), built in a loop over
        # self.model.fields; build them once per process (a module-level dict: one worker makes many
        # instances of every model); never connect here (describe() runs on an unopened instance);
        # an ORM that ties its classes to one database file (Pony's Database binds once): build them
        # per instance, in open() (untimed)
        self._control = RawSqlite3Arm(model, settings)  # the placeholder; delete it with its last use
'''

_SYNC_HEAD = '''\
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Mapping, Sequence

from bench_suites.raw_sqlite3 import RawSqlite3Arm
from pytest_ormbench.arms.contract import ModelSpec, Settings
from pytest_ormbench.arms.sql import SqliteArm, SqlTables


class $cls(SqliteArm):
    #: the registry name: the test-id prefix, --ormbench-arms value and pip extra
    name = "$name"
    #: what the tables show
    label = $label_repr
    #: distributions whose versions are recorded with every cell, e.g. ("peewee",)
    packages = ()
    #: the driver under the ORM, for the tables
    driver = "sqlite3"
$shared_declarations
    def open(self, path: Path) -> None:
        """Point the arm at the database file path and connect now, under self.settings, on one connection."""
        # your ORM: `self.db.init(str(path), pragmas=pragma_pairs(self.settings)); self.db.connect()`
        #   (peewee); the pragmas go on every connection it opens (pragma_pairs, pragma_statements,
        #   apply_pragmas in a connect hook, pragma_connection_class); process-wide set-up once only
        self.path = path
        self._control.open(path)

    def close(self) -> None:
        """Release every connection and file handle (a closed template must need no side file)."""
        # your ORM: `self.db.close()` (peewee)
        self._control.close()

    def raw_connection(self) -> sqlite3.Connection:
        """The one live sqlite3 connection: SqliteArm reads the pragmas on it and restores into it."""
        # your ORM: `return self.db.connection()` (peewee); never a connection without the pragmas:
        #   an ORM that drops its connection (Pony, after creating tables) reopens it through its
        #   own connect hook, not sqlite3.connect
        return self._control.raw_connection()

'''

_ASYNC_HEAD = '''\
from __future__ import annotations

import sqlite3
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, AsyncIterator, Mapping, Sequence

import aiosqlite

from bench_suites.raw_sqlite3 import RawSqlite3Arm
from pytest_ormbench.arms.contract import ModelSpec, Settings
from pytest_ormbench.arms.sql import AiosqliteArm, SqlTables


class $cls(AiosqliteArm):
    #: the registry name: the test-id prefix, --ormbench-arms value and pip extra
    name = "$name"
    #: what the tables show
    label = $label_repr
    #: distributions whose versions are recorded with every cell, e.g. ("tortoise-orm", "aiosqlite")
    packages = ("aiosqlite",)
    #: the driver under the ORM, for the tables
    driver = "aiosqlite"
    #: the op methods are coroutines, driven on the process's one event loop
    is_async = True
$shared_declarations        self._aconn: aiosqlite.Connection | None = None

    async def open(self, path: Path) -> None:
        """Point the arm at the database file path and connect now, under self.settings, on one connection."""
        # your ORM: `await Tortoise.init(config)` with the pragmas in its connection settings, then
        #   connect; an ORM that keeps its state in context variables enters that context in a plain
        #   `def open` that returns this coroutine (tortoise_arm.py): each drive runs in a copy of the
        #   context, so a context entered inside a coroutine is gone when it returns
        self.path = path
        self._aconn = await aiosqlite.Connection(partial(self._open_control, path), 64)

    def _open_control(self, path: Path) -> sqlite3.Connection:
        """The placeholder's connection, opened in aiosqlite's thread by the control arm (pragmas applied)."""
        self._control.open(path)
        return self._control.raw_connection()

    async def close(self) -> None:
        """Release every connection and file handle (a closed template must need no side file)."""
        # your ORM: `await self._ctx.close_connections()` (Tortoise)
        if self._aconn is not None:
            await self._in_thread(self._control.close)
            await self._aconn.close()
            self._aconn = None

    @asynccontextmanager
    async def aiosqlite_connection(self) -> AsyncIterator[aiosqlite.Connection]:
        """The live aiosqlite connection: AiosqliteArm reads the pragmas and restores in its thread."""
        # your ORM: yield the aiosqlite.Connection it holds (Tortoise: `self.client._connection`),
        #   checked out of its pool first if that is the only way; never `async with` it (that closes it)
        assert self._aconn is not None, "open() first"
        yield self._aconn

    async def _in_thread(self, method: Any, *args: Any) -> Any:
        """The placeholder at work: a control-arm method, run on the one connection in aiosqlite's thread."""
        return await self.in_connection_thread(lambda _conn: method(*args))

'''


def class_name(name: str) -> str:
    """``my_orm`` -> ``MyOrmArm``."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) + "Arm"


def render(name: str, label: str, target: str, is_async: bool = False) -> str:
    """The module text for a new arm (``target``: its ``module:Class``, for the docstring's command)."""
    subs = {
        "name": name, "label": label, "label_repr": json.dumps(label), "cls": class_name(name), "target": target,
        "driver": "sqlite3 in aiosqlite's thread" if is_async else "sqlite3",
        "example": "tortoise_arm.py" if is_async else "peewee_arm.py",
        "conn_method": "``aiosqlite_connection``" if is_async else "``raw_connection``",
        "cleanup": ", ``_open_control``, ``_in_thread``" if is_async else "",
    }
    head = Template(_ASYNC_HEAD if is_async else _SYNC_HEAD).substitute(subs, shared_declarations=_SHARED_DECLARATIONS)
    methods = "\n".join(_render(m, is_async) for m in _METHODS)
    return Template(_DOC).substitute(subs) + "\n" + head + methods


# --------------------------------------------------------------------------
# Checks, writing, next steps
# --------------------------------------------------------------------------


def _known_arms() -> set[str]:
    try:
        return set(all_arms())
    except Exception:  # a broken third-party entry point must not stop a scaffold
        return {e.name for e in BUILTIN_ARMS}


def module_target(directory: Path, stem: str) -> tuple[str, Path]:
    """The dotted module name of ``<directory>/<stem>.py`` and the directory that must be on sys.path."""
    parts, root = [stem], directory.resolve()
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    return ".".join(parts), root


def check(name: str, directory: Path, label: str = "") -> Path:
    """The file to write for ``name`` in ``directory``; raises :class:`ScaffoldError` for a bad name or place."""
    if not label.isprintable() or '"""' in label or "\\" in label:
        raise ScaffoldError(f"--label {label!r}: one line of printable text, without backslashes or triple quotes")
    if not NAME_RE.match(name) or keyword.iskeyword(name):
        raise ScaffoldError(f"{name!r} is not a valid arm name: use a lowercase Python identifier "
                            "(letters, digits, underscores; a letter first), e.g. 'pony'")
    if name in _known_arms():
        raise ScaffoldError(f"an arm named {name!r} exists already; choose another name")
    if not directory.is_dir():
        raise ScaffoldError(f"{directory} is not a directory")
    path = directory / f"{name}_arm.py"
    if path.exists():
        raise ScaffoldError(f"{path} exists; not overwriting it")
    stem = path.stem
    try:
        spec = importlib.util.find_spec(stem)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        where = spec.origin or ", ".join(spec.submodule_search_locations or ()) or "?"
        raise ScaffoldError(f"a module named {stem!r} is importable already ({where}); {path.name} "
                            "would shadow it: choose another name")
    return path


def next_steps(name: str, path: Path, target: str, root: Path, label: str) -> str:
    cwd = Path.cwd().resolve()
    env = "" if root == cwd else f"PYTHONPATH={root} "
    try:
        shown = path.resolve().relative_to(cwd)
    except ValueError:
        shown = path
    return textwrap.dedent(f"""\
        wrote {shown}: {target.partition(':')[2]}, the control arm's plain sqlite3 behind every method
        next steps:
          1. it is green now: {env}python -m pytest_ormbench.commands.selfcheck {name} --register {target}
          2. replace each self._control call with the ORM's code, method by method, in the order the module
             docstring gives, re-running the selfcheck with --ops for the ops written so far
          3. the registry: add to BUILTIN_ARMS in src/pytest_ormbench/arms/registry.py, where the tables should show it:
               ArmEntry("{name}", "{target}", {json.dumps(label)}, ("<import name>",), "{name}"),
          4. pyproject.toml, [project.optional-dependencies]: an extra {name} = ["<distribution>>=<version>"],
             and the same requirement in the all extra
          5. docs/arms.md: its row in the Overview table, its column in "API per operation" and its
             "Recorded deviations" entry
          6. tests: tests/test_arms.py selfchecks every registered arm on its own; add tests/test_arm_{name}.py
             for what the selfcheck cannot see (caches cleared, relations, process-wide state)
        the guide: docs/adding-an-arm.md
        """)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pytest_ormbench.commands.scaffold",
                                description="Write <dir>/<NAME>_arm.py, a new arm that already passes the selfcheck.")
    p.add_argument("name", metavar="NAME", help="the arm's registry name, e.g. pony")
    p.add_argument("--dir", default="bench_suites", help="where to write the module (default: bench_suites)")
    p.add_argument("--label", default=None, help="the label the tables show (default: NAME)")
    p.add_argument("--async", dest="is_async", action="store_true",
                   help="an async arm on aiosqlite (AiosqliteArm) instead of a sync one on sqlite3")
    a = p.parse_args(argv)
    label = a.label or a.name
    directory = Path(a.dir)
    try:
        path = check(a.name, directory, label)
        module, root = module_target(directory, path.stem)
        target = f"{module}:{class_name(a.name)}"
        text = render(a.name, label, target, a.is_async)
        with open(path, "x", encoding="utf-8") as fh:  # "x": never overwrite, even in a race
            fh.write(text)
    except ScaffoldError as exc:
        print(f"scaffold: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"scaffold: cannot write {directory / f'{a.name}_arm.py'}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(next_steps(a.name, path, target, root, label), end="")
    if a.is_async and importlib.util.find_spec("aiosqlite") is None:
        print("note: aiosqlite is not installed here; the async template needs it (pip install aiosqlite)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["ScaffoldError", "check", "class_name", "main", "module_target", "render"]
