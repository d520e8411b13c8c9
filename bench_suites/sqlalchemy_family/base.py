"""State and untimed parts of every SQLAlchemy-family arm (:class:`SyncOps` and :class:`AsyncOps` build on it)."""

from __future__ import annotations

import sqlite3
from typing import Any, ClassVar, Mapping, Sequence

from pytest_ormbench.suites.sqlalchemy_family.engine import SERVER_DRIVER_MODULES, _driver_version
from pytest_ormbench.suites.sqlalchemy_family.models import Flavor, models_for
from pytest_ormbench.arms.notes import load_notes
from pytest_ormbench.arms.sql import SqliteArm, SqlTables

#: the family's notes (bench_suites/notes/sqlalchemy_family.toml): deviations, and the texts describe() records
NOTES = load_notes("pytest_ormbench.suites", "sqlalchemy_family")


def _as_dict(obj: Any, names: Sequence[str]) -> dict[str, Any]:
    d = obj.__dict__
    return {n: d[n] for n in names if n in d}


# --------------------------------------------------------------------------
# The arm bases
# --------------------------------------------------------------------------

class _SABase(SqliteArm):
    """State and untimed parts common to the sync and async arms."""

    flavor: ClassVar[Flavor]
    #: "bulk_save_objects" (chosen: fastest, with insert_dicts within noise) or "insert_dicts":
    #: ``session.execute(insert(Model), [dicts])``, the 2.0 ORM bulk INSERT (see the notes' arm_info)
    bulk_path: ClassVar[str] = "bulk_save_objects"
    bulk_sets_ids = False
    deviations = NOTES.deviations

    engine: Any = None
    session: Any = None  # the session load_all loaded objects in (update/delete)

    def _setup_models(self) -> None:
        ms = models_for(self.flavor.name, self.model)
        self.ms = ms
        self.M = ms.cls
        self._names = self.model.field_names
        self._columns = [getattr(self.M, n) for n in self._names]

    def tables(self) -> SqlTables:
        return self.ms.sql_tables

    def build(self, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        M = self.M
        return [M(**r) for r in rows]

    # statement shapes (built per call, as an application would; SQLAlchemy caches the compiled form)
    def _by_level(self, lv: int) -> Any:
        M = self.M
        return self.flavor.select(M).where(M.level == lv).execution_options(populate_existing=True)

    def _page(self, lv: int, offset: int, limit: int) -> Any:
        M = self.M
        return (self.flavor.select(M).where(M.level == lv).order_by(M.id).offset(offset).limit(limit)
                .execution_options(populate_existing=True))

    def _cols_by_level(self, lv: int) -> Any:
        return self.flavor.select(*self._columns).where(self.M.level == lv)

    def _all_ordered(self) -> Any:
        return self.flavor.select(self.M).order_by(self.M.id)

    def _bulk_rows(self, objs: list[Any]) -> list[dict[str, Any]]:
        """The objects' set attributes as dicts (an unset id is left to SQLite)."""
        names = self._names if objs and objs[0].id is not None else self._names[1:]
        return [_as_dict(o, names) for o in objs]

    def _link_rows(self, links: Sequence[tuple[int, int]]) -> list[dict[str, int]]:
        return [{"from_id": a, "to_id": b} for a, b in links]

    # attribute assignment is where the ORM tracks changes: timed, inside I (assign_all) and J
    @staticmethod
    def _assign_levels(objs: list[Any], levels: Sequence[int]) -> None:
        for obj, lv in zip(objs, levels):
            obj.level = lv

    def describe(self) -> dict[str, Any]:
        drivers = {f"{db}_driver": _driver_version(SERVER_DRIVER_MODULES[(db, bool(self.is_async))])
                   for db in ("postgresql", "mysql")}
        return {"sqlite_version": sqlite3.sqlite_version, **drivers, "bulk_path": self.bulk_path, **NOTES.arm_info}
