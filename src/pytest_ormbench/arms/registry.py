"""Which arms exist, where their code lives and what they need installed.

Adding an arm: a module in ``bench_suites/`` and an entry in ``BUILTIN_ARMS`` (with its pyproject
extras, its docs/arms.md section and its tests: docs/adding-an-arm.md has the whole list).
Third-party packages add arms through the ``pytest_ormbench.arms`` entry-point
group, each entry point naming an :class:`ArmEntry`. Nothing here imports an
ORM: availability is checked with ``importlib.util.find_spec``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pytest_ormbench.arms.contract import Arm

ENTRY_POINT_GROUP = "pytest_ormbench.arms"


@dataclass(frozen=True)
class ArmEntry:
    name: str
    #: "module:Class" of the Arm subclass
    target: str
    label: str
    #: importable modules the arm needs (checked without importing them)
    requires: tuple[str, ...] = ()
    #: the pip extra that installs them
    extra: str = ""
    #: for a control arm (raw driver, hand-written SQL): the one database it runs on and is the yardstick for
    control_for: str = ""
    #: what the arm needs besides ``requires`` on one database: (database, modules, the pip extra that installs
    #: them); e.g. Django on MariaDB needs mysqlclient (``MySQLdb``), a C build that is not in ``all``
    requires_on: tuple[tuple[str, tuple[str, ...], str], ...] = ()
    #: "module:Class" of the arm's Test 4 (relational) class; empty: the arm has none yet (its Test 4 cells are
    #: reported unsupported with that reason)
    relational: str = ""

    def target_for(self, model: str) -> str:
        """The class that runs ``model``'s cells ("" where the arm has none)."""
        return self.relational if model == "relational" else self.target

    def relational_declarations(self) -> Any:
        """The Test 4 declarations of the arm (strategies per shape, reasons), read without importing it."""
        from pytest_ormbench.arms.relational import Declarations, load_declarations
        if not self.relational:
            return Declarations()
        return load_declarations(self.relational.partition(":")[0], self.name)

    def missing(self, db: str | None = None) -> str | None:
        """Why the arm cannot run here (on ``db``, when given), or None."""
        needs = [(mod, self.extra) for mod in self.requires]
        needs += [(mod, extra) for on, mods, extra in self.requires_on if on == db for mod in mods]
        for mod, extra in needs:
            try:
                found = importlib.util.find_spec(mod) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                hint = f" (pip install 'pytest-ormbench[{extra}]')" if extra else ""
                return f"package {mod!r} is not installed{hint}" + (f", which it needs on {db}" if db and
                                                                    mod not in self.requires else "")
        return None


#: the raw sqlite3 control arm: the yardstick in the report, the drift probe, and the compare drift correction
CONTROL_ARM = "sqlite3"
#: every control arm -> the database it is the yardstick for (hand-written SQL on the raw driver)
CONTROL_ARMS = {CONTROL_ARM: "sqlite", "psycopg": "postgresql", "asyncpg": "postgresql", "mysqlclient": "mysql",
                "asyncmy": "mysql"}

#: the sync arms that use mysqlclient on MariaDB, as their ORMs document (its C build is the `mysql` extra)
MYSQLCLIENT = (("mysql", ("MySQLdb",), "mysql"),)

BUILTIN_ARMS: tuple[ArmEntry, ...] = (
    ArmEntry(CONTROL_ARM, "pytest_ormbench.suites.raw_sqlite3:RawSqlite3Arm", "raw sqlite3", control_for="sqlite",
             relational="pytest_ormbench.suites.relational.raw_sqlite3:RawSqlite3Relational"),
    ArmEntry("psycopg", "pytest_ormbench.suites.raw_psycopg:RawPsycopgArm", "raw psycopg", ("psycopg",), "postgresql",
             control_for="postgresql",
             relational="pytest_ormbench.suites.relational.raw_psycopg:RawPsycopgRelational"),
    ArmEntry("asyncpg", "pytest_ormbench.suites.raw_asyncpg:RawAsyncpgArm", "raw asyncpg", ("asyncpg",), "postgresql",
             control_for="postgresql",
             relational="pytest_ormbench.suites.relational.raw_asyncpg:RawAsyncpgRelational"),
    ArmEntry("mysqlclient", "pytest_ormbench.suites.raw_mysqlclient:RawMysqlclientArm", "raw mysqlclient", ("MySQLdb",),
             "mysql", control_for="mysql",
             relational="pytest_ormbench.suites.relational.raw_mysqlclient:RawMysqlclientRelational"),
    ArmEntry("asyncmy", "pytest_ormbench.suites.raw_asyncmy:RawAsyncmyArm", "raw asyncmy", ("asyncmy",), "mysql",
             control_for="mysql",
             relational="pytest_ormbench.suites.relational.raw_asyncmy:RawAsyncmyRelational"),
    ArmEntry("django", "pytest_ormbench.suites.django_arm:DjangoArm", "Django", ("django",), "django",
             requires_on=MYSQLCLIENT,
             relational="pytest_ormbench.suites.relational.django_rel:DjangoRelational"),
    ArmEntry("peewee", "pytest_ormbench.suites.peewee_arm:PeeweeArm", "peewee", ("peewee",), "peewee",
             relational="pytest_ormbench.suites.relational.peewee_rel:PeeweeRelational"),
    ArmEntry("sqlalchemy", "pytest_ormbench.suites.sqlalchemy_arm:SQLAlchemyArm", "SA ORM", ("sqlalchemy",), "sqlalchemy",
             requires_on=MYSQLCLIENT,
             relational="pytest_ormbench.suites.relational.sqlalchemy_rel:SQLAlchemyRelational"),
    ArmEntry("sqlalchemy_async", "pytest_ormbench.suites.sqlalchemy_async_arm:SQLAlchemyAsyncArm", "SA ORM async",
             ("sqlalchemy", "aiosqlite", "greenlet"), "sqlalchemy",
             relational="pytest_ormbench.suites.relational.sqlalchemy_async_rel:SQLAlchemyAsyncRelational"),
    ArmEntry("sqlobject", "pytest_ormbench.suites.sqlobject_arm:SQLObjectArm", "SQLObject", ("sqlobject",), "sqlobject",
             requires_on=MYSQLCLIENT,
             relational="pytest_ormbench.suites.relational.sqlobject_rel:SQLObjectRelational"),
    ArmEntry("tortoise", "pytest_ormbench.suites.tortoise_arm:TortoiseArm", "Tortoise ORM", ("tortoise", "aiosqlite"),
             "tortoise",
             relational="pytest_ormbench.suites.relational.tortoise_rel:TortoiseRelational"),
    ArmEntry("piccolo", "pytest_ormbench.suites.piccolo_arm:PiccoloArm", "Piccolo", ("piccolo", "aiosqlite"), "piccolo",
             relational="pytest_ormbench.suites.relational.piccolo_rel:PiccoloRelational"),
    ArmEntry("ormar", "pytest_ormbench.suites.ormar_arm:OrmarArm", "ormar", ("ormar", "aiosqlite"), "ormar",
             relational="pytest_ormbench.suites.relational.ormar_rel:OrmarRelational"),
    ArmEntry("sqlmodel", "pytest_ormbench.suites.sqlmodel_arm:SQLModelArm", "SQLModel", ("sqlmodel",), "sqlmodel",
             requires_on=MYSQLCLIENT,
             relational="pytest_ormbench.suites.relational.sqlmodel_rel:SQLModelRelational"),
    ArmEntry("sqlmodel_async", "pytest_ormbench.suites.sqlmodel_async_arm:SQLModelAsyncArm", "SQLModel async",
             ("sqlmodel", "aiosqlite", "greenlet"), "sqlmodel",
             relational="pytest_ormbench.suites.relational.sqlmodel_async_rel:SQLModelAsyncRelational"),
    ArmEntry("objectbox", "pytest_ormbench.suites.objectbox_arm:ObjectBoxArm", "ObjectBox", ("objectbox",), "objectbox",
             relational="pytest_ormbench.suites.relational.objectbox_rel:ObjectBoxRelational"),
    ArmEntry("objectbox_nocodegen", "pytest_ormbench.suites.objectbox_arm:ObjectBoxNoCodegenArm", "ObjectBox (no codegen)",
             ("objectbox",), "objectbox",
             relational="pytest_ormbench.suites.relational.objectbox_rel:ObjectBoxNoCodegenRelational"),
)


def entry_from_target(target: str) -> ArmEntry:
    """An ad-hoc arm given as "module:Class" (the class carries name and label)."""
    cls = _import(target)
    return ArmEntry(cls.name, target, cls.label or cls.name, tuple(getattr(cls, "requires", ())))


def all_arms(extra_targets: tuple[str, ...] = ()) -> dict[str, ArmEntry]:
    arms = {e.name: e for e in BUILTIN_ARMS}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        entry = ep.load()
        arms[entry.name] = entry
    for target in extra_targets:
        entry = entry_from_target(target)
        arms[entry.name] = entry
    return arms


def _import(target: str) -> type:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def import_arm(target: str) -> type["Arm"]:
    """The Arm class a "module:Class" target names (the measuring child is told the target, never a name)."""
    cls = _import(target)
    if not isinstance(cls, type):
        raise TypeError(f"{target} is not a class")
    return cls


def resolve(name: str, extra_targets: tuple[str, ...] = ()) -> ArmEntry:
    """The registry entry for an arm name (built-in, entry point or ``--ormbench-register``)."""
    arms = all_arms(extra_targets)
    if name not in arms:
        raise KeyError(f"unknown arm {name!r}; known: {', '.join(sorted(arms))}")
    return arms[name]


def import_problems(entries: list[ArmEntry], env: dict[str, str] | None = None, cwd: str | None = None,
                    timeout: float = 120.0) -> dict[str, str]:
    """Arm name -> why it cannot be imported (its module, then each module it requires), for arms whose packages
    are installed; each tried in a process of its own, all at once (an ORM's import may change process-wide
    state, so never in this one). An empty dict: every arm imports."""
    import subprocess
    import sys

    script = ("import importlib, sys\n"
              "from pytest_ormbench.arms.registry import import_arm\n"
              "try:\n"
              "    import_arm(sys.argv[1])\n"
              "    for mod in sys.argv[2:]:\n"
              "        importlib.import_module(mod)\n"
              "except BaseException as exc:\n"
              "    print(f'{type(exc).__name__}: {exc}'.splitlines()[0] if str(exc) else type(exc).__name__)\n"
              "    sys.exit(1)\n")
    procs = {e.name: subprocess.Popen([sys.executable, "-c", script, e.target, *e.requires], env=env, cwd=cwd,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for e in entries}
    problems: dict[str, str] = {}
    for name, proc in procs.items():
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            problems[name] = f"importing it took over {timeout:.0f} s"
            continue
        if proc.returncode:
            lines = [line for line in out.splitlines() if line.strip()]
            problems[name] = f"it does not import: {lines[-1] if lines else f'exit status {proc.returncode}'}"
    return problems


# -- where an arm's packages come from (recorded by the measuring process) ------------------------------------

#: the distribution whose extras name the versions each arm was tested with
SELF = "pytest-ormbench"


def tested_ranges(dist: str, requirements: list[str] | None = None) -> list[str]:
    """The version ranges this package's extras ask for ``dist`` (``peewee>=3.17`` -> ``[">=3.17"]``): the
    versions its arm was tested with. Empty: no extra names it, or pytest-ormbench is not installed."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    if requirements is None:
        try:
            requirements = importlib.metadata.requires(SELF) or []
        except importlib.metadata.PackageNotFoundError:
            return []
    ranges: list[str] = []
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == canonicalize_name(dist) and str(req.specifier):
            if str(req.specifier) not in ranges:
                ranges.append(str(req.specifier))
    return ranges


def untested_version(dist: str, version: str, requirements: list[str] | None = None) -> str | None:
    """One line when ``version`` of ``dist`` lies outside every range the arm was tested with, else None."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    ranges = tested_ranges(dist, requirements)
    if not ranges:
        return None
    try:
        v = Version(version)
    except InvalidVersion:
        return f"{dist} {version}: not a version the tested range ({' or '.join(ranges)}) can place"
    # a checkout's development version (3.18.0.dev0) counts as the release it leads to
    if any(SpecifierSet(r).contains(v, prereleases=True) for r in ranges):
        return None
    return (f"{dist} {version} is outside the range this arm was tested with ({dist}{' or '.join(ranges)}): "
            "its figures may not hold for this version")


def origin(dist: str) -> dict[str, Any]:
    """Where an installed distribution came from, from its PEP 610 ``direct_url.json``: for an install from a local
    folder its path, whether editable, and the folder's git commit (and whether it had uncommitted changes); for
    one from a VCS URL the URL and commit; for an archive its URL. Empty: installed from an index (its version
    says it all) or not installed."""
    import json
    from urllib.parse import unquote, urlparse

    try:
        text = importlib.metadata.distribution(dist).read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return {}
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {"direct_url": "unreadable"}
    url = str(data.get("url", ""))
    parsed = urlparse(url)
    out: dict[str, Any] = {"path": unquote(parsed.path)} if parsed.scheme == "file" else {"url": url}
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict):
        out.update({"vcs": vcs.get("vcs", ""), "commit": vcs.get("commit_id", "")})
        if vcs.get("requested_revision"):
            out["requested_revision"] = vcs["requested_revision"]
    elif isinstance(data.get("dir_info"), dict):
        out["editable"] = bool(data["dir_info"].get("editable", False))
        if "path" in out:
            out.update(_git_state(out["path"]))
    elif isinstance(data.get("archive_info"), dict) and data["archive_info"].get("hash"):
        out["hash"] = data["archive_info"]["hash"]
    return out


def _git_state(path: str) -> dict[str, Any]:
    """The commit a local folder's git checkout is at, and whether its tracked files differ from it."""
    import subprocess

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", path, *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return {}
    changes = git("status", "--porcelain", "--untracked-files=no")
    return {"vcs": "git", "commit": commit, **({"uncommitted_changes": True} if changes else {})}


def describe_origin(dist: str, version: str, where: dict[str, Any]) -> str:
    """``peewee 3.17.9 from /src/peewee (editable, git 1a2b3c4d5e6f, uncommitted changes)``, in one line."""
    if not where:
        return f"{dist} {version}"
    details = [d for d in ("editable" if where.get("editable") else "",
                           f"{where.get('vcs', 'vcs')} {str(where['commit'])[:12]}" if where.get("commit") else "",
                           "uncommitted changes" if where.get("uncommitted_changes") else "") if d]
    source = where.get("path") or where.get("url") or "?"
    return f"{dist} {version} from {source}" + (f" ({', '.join(details)})" if details else "")
