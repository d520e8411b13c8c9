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
from typing import TYPE_CHECKING

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

    def missing(self) -> str | None:
        """Why the arm cannot run here, or None."""
        for mod in self.requires:
            try:
                found = importlib.util.find_spec(mod) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                hint = f" (pip install 'pytest-ormbench[{self.extra}]')" if self.extra else ""
                return f"package {mod!r} is not installed{hint}"
        return None


#: the raw sqlite3 control arm: the yardstick in the report, the drift probe, and the compare drift correction
CONTROL_ARM = "sqlite3"
#: every control arm -> the database it is the yardstick for (hand-written SQL on the raw driver)
CONTROL_ARMS = {CONTROL_ARM: "sqlite", "psycopg": "postgresql", "asyncpg": "postgresql", "mysqlclient": "mysql",
                "asyncmy": "mysql"}

BUILTIN_ARMS: tuple[ArmEntry, ...] = (
    ArmEntry(CONTROL_ARM, "pytest_ormbench.suites.raw_sqlite3:RawSqlite3Arm", "raw sqlite3", control_for="sqlite"),
    ArmEntry("psycopg", "pytest_ormbench.suites.raw_psycopg:RawPsycopgArm", "raw psycopg", ("psycopg",), "postgresql",
             control_for="postgresql"),
    ArmEntry("asyncpg", "pytest_ormbench.suites.raw_asyncpg:RawAsyncpgArm", "raw asyncpg", ("asyncpg",), "postgresql",
             control_for="postgresql"),
    ArmEntry("mysqlclient", "pytest_ormbench.suites.raw_mysqlclient:RawMysqlclientArm", "raw mysqlclient", ("MySQLdb",),
             "mysql", control_for="mysql"),
    ArmEntry("asyncmy", "pytest_ormbench.suites.raw_asyncmy:RawAsyncmyArm", "raw asyncmy", ("asyncmy",), "mysql",
             control_for="mysql"),
    ArmEntry("django", "pytest_ormbench.suites.django_arm:DjangoArm", "Django", ("django",), "django"),
    ArmEntry("peewee", "pytest_ormbench.suites.peewee_arm:PeeweeArm", "peewee", ("peewee",), "peewee"),
    ArmEntry("sqlalchemy", "pytest_ormbench.suites.sqlalchemy_arm:SQLAlchemyArm", "SA ORM", ("sqlalchemy",), "sqlalchemy"),
    ArmEntry("sqlalchemy_async", "pytest_ormbench.suites.sqlalchemy_async_arm:SQLAlchemyAsyncArm", "SA ORM async",
             ("sqlalchemy", "aiosqlite", "greenlet"), "sqlalchemy"),
    ArmEntry("sqlobject", "pytest_ormbench.suites.sqlobject_arm:SQLObjectArm", "SQLObject", ("sqlobject",), "sqlobject"),
    ArmEntry("tortoise", "pytest_ormbench.suites.tortoise_arm:TortoiseArm", "Tortoise ORM", ("tortoise", "aiosqlite"),
             "tortoise"),
    ArmEntry("piccolo", "pytest_ormbench.suites.piccolo_arm:PiccoloArm", "Piccolo", ("piccolo", "aiosqlite"), "piccolo"),
    ArmEntry("ormar", "pytest_ormbench.suites.ormar_arm:OrmarArm", "ormar", ("ormar", "aiosqlite"), "ormar"),
    ArmEntry("sqlmodel", "pytest_ormbench.suites.sqlmodel_arm:SQLModelArm", "SQLModel", ("sqlmodel",), "sqlmodel"),
    ArmEntry("sqlmodel_async", "pytest_ormbench.suites.sqlmodel_async_arm:SQLModelAsyncArm", "SQLModel async",
             ("sqlmodel", "aiosqlite", "greenlet"), "sqlmodel"),
    ArmEntry("objectbox", "pytest_ormbench.suites.objectbox_arm:ObjectBoxArm", "ObjectBox", ("objectbox",), "objectbox"),
    ArmEntry("objectbox_nocodegen", "pytest_ormbench.suites.objectbox_arm:ObjectBoxNoCodegenArm", "ObjectBox (no codegen)",
             ("objectbox",), "objectbox"),
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
