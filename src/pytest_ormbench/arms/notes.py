"""An arm's notes as data: a TOML file beside the arm's module, not prose inside its Python.

An arm class declares, for the harness to copy into every cell it touches, what its work does differently
(``deviations``), the ops it cannot do (``unsupported``) and why it does not run on a database
(``database_notes``). Those texts live in ``<package>/notes/<name>.toml``::

    arms = ["peewee"]                 # the registry names these notes are for (docs/arms.md)

    [deviations]                      # "*", op, model, "db", "db:model" or "db:op" -> text
    fk = "many-to-many is an explicit through model ..."

    [unsupported]                     # op -> why the ORM cannot do it
    [database_notes]                  # database axis value -> why the arm does not run there
    [arm_info]                        # fixed texts the arm's describe() records
    [doc]                             # the arm's rows and sections of docs/arms.md (never recorded)

and the class reads them back as the same attributes::

    NOTES = load_notes("pytest_ormbench.suites", "peewee")

    class PeeweeArm(SqliteArm):
        deviations = NOTES.deviations

Every table is optional (a missing one is empty). Texts are recorded byte for byte as the file decodes them:
a long text may be wrapped in a multi-line string whose lines end with a backslash (TOML drops the line break
and the next line's indentation).
"""

from __future__ import annotations

import functools
import importlib.resources
import tomllib
from dataclasses import dataclass, field
from typing import Any, Iterator

#: the tables of a notes file that arms record (each a mapping of text keys to texts)
RECORDED = ("deviations", "unsupported", "database_notes", "arm_info")


@dataclass(frozen=True)
class ArmNotes:
    """The notes of one arm module (fresh dicts on every access: an arm may not change another's)."""

    #: the file's stem, e.g. "peewee"
    name: str
    #: the registry names of the arms the notes are for
    arms: tuple[str, ...]
    data: dict[str, Any] = field(repr=False)

    def _table(self, key: str) -> dict[str, str]:
        return dict(self.data.get(key, {}))

    @property
    def deviations(self) -> dict[str, str]:
        return self._table("deviations")

    @property
    def unsupported(self) -> dict[str, str]:
        return self._table("unsupported")

    @property
    def database_notes(self) -> dict[str, str]:
        return self._table("database_notes")

    @property
    def arm_info(self) -> dict[str, str]:
        return self._table("arm_info")

    @property
    def doc(self) -> dict[str, Any]:
        return dict(self.data.get("doc", {}))


def parse_notes(name: str, text: str) -> ArmNotes:
    """Notes from the text of a notes file (checked: every recorded table maps strings to strings)."""
    data = tomllib.loads(text)
    for table in RECORDED:
        values = data.get(table, {})
        if not isinstance(values, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in values.items()):
            raise ValueError(f"notes {name!r}: [{table}] must map names to strings")
    arms = data.get("arms", [])
    if not isinstance(arms, list) or not all(isinstance(a, str) for a in arms):
        raise ValueError(f"notes {name!r}: `arms` must be a list of arm names")
    return ArmNotes(name, tuple(arms), data)


@functools.cache
def load_notes(package: str, name: str) -> ArmNotes:
    """The notes in ``<package>/notes/<name>.toml`` (read once per process)."""
    path = importlib.resources.files(package).joinpath("notes", f"{name}.toml")
    return parse_notes(name, path.read_text(encoding="utf-8"))


def all_notes(package: str) -> Iterator[ArmNotes]:
    """Every notes file of a package, by name."""
    folder = importlib.resources.files(package).joinpath("notes")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            yield load_notes(package, entry.name.removesuffix(".toml"))
