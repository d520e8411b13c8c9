"""The interface a database backend gives the harness (see docs/adding-an-arm.md, "Databases")."""

from __future__ import annotations

import abc
import os
import shutil
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from pytest_ormbench.workload.spec import Settings
from pytest_ormbench.workload.statements import StatementCounter


class Database(abc.ABC):
    """Where an arm keeps its data, as far as the harness must know it.

    The harness never touches an ORM; it needs only this from the storage under one:

    - :meth:`location`, :meth:`copy`, :meth:`remove`: a throwaway database per starting state and
      per measuring process, made from a verified template and removed after the run;
    - :meth:`leftovers`: files that would make a closed template not self-contained;
    - :meth:`expected_durability`: what the arm's live connection must report for the requested
      :class:`~pytest_ormbench.arms.contract.Settings` (the arm reads it back in ``Arm.pragmas()``);
    - :meth:`commits` and :meth:`connections`: counted from the storage itself, never asked of the
      arm, so that an arm cannot claim one transaction or one connection it did not keep to;
    - :meth:`trace_statements`: every statement the driver starts, fed to a counter, so that a read
      answered from a cache shows (counted at the driver, never from the ORM's own logging).

    Exact restore and the independent read-back (``Arm.restore``, ``Arm.snapshot``) need the arm's
    live connection, so they stay arm methods; each backend module offers the helpers that do them
    (for SQLite: :func:`.sqlite.backup_into`, :func:`.sqlite.read_snapshot`).
    """

    #: the backend's name, recorded per cell
    name: ClassVar[str]
    #: :meth:`commits` counts every committed write transaction of every connection, exactly (SQLite's file
    #: change counter, which it returns in rollback-journal modes only): a read after which it is unchanged
    #: left every row as the restore made it, and is not read back (``measuring.verify.needs_read_back``)
    counts_every_write: ClassVar[bool] = False

    def location(self, directory: Path, stem: str, *, template: bool = False) -> Path:
        """A path for a new, empty database named after ``stem`` in ``directory``; ``template``: a starting
        state's template (built once, copied per process) rather than a measuring process's work database."""
        return directory / f"{stem}.db"

    def copy(self, template: Path, dst: Path) -> None:
        """Make ``dst`` an exact copy of the template (a file, or a directory for stores that keep one)."""
        self.remove(dst)
        if template.is_dir():
            shutil.copytree(template, dst)
        else:
            shutil.copyfile(template, dst)

    def remove(self, location: Path) -> None:
        """Delete a database and whatever files belong to it; a missing one is fine."""
        if location.is_dir():
            shutil.rmtree(location, ignore_errors=True)
        elif location.exists():
            location.unlink()

    def exists(self, location: Path) -> bool:
        """Whether a database is there (a built template is kept for the run)."""
        return location.exists()

    def rename(self, src: Path, dst: Path) -> None:
        """Give a finished template its final name (atomically where the storage can)."""
        os.replace(src, dst)

    def create_empty(self, location: Path) -> None:
        """Make room for a new, empty database the arm will build a starting state in (a file: nothing to do)."""

    def finish_template(self, location: Path) -> None:
        """After the arm built a starting state there and closed it: make it ready to be copied and restored."""

    def leftovers(self, location: Path) -> list[Path]:
        """Non-empty side files a closed database still has (a template must not need them)."""
        return []

    @abc.abstractmethod
    def expected_durability(self, settings: Settings) -> Mapping[str, str]:
        """What the live connection must report for ``settings``, key by key."""

    def commits(self, location: Path) -> int | None:
        """Write transactions committed to the database so far, read from the storage (None: cannot tell)."""
        return None

    def connections(self, location: Path) -> int | None:
        """Connections the arm holds on the database now (None: cannot tell)."""
        return None

    def trace_statements(self, counter: StatementCounter) -> str | None:
        """Feed ``counter`` every statement of every connection opened in this process from now on.

        Returns None when it will, else the reason statements cannot be counted (the engine has no SQL).
        """
        return f"{self.name}: counting statements is not implemented for this database"

    def open_transactions(self, location: Path) -> int:
        """The arm's connections still inside a transaction after the op (0: none, or cannot tell)."""
        return 0

    def column_types(self, location: Path) -> dict[str, str] | None:
        """``table.column`` -> the type the ORM created, where the engine says (None: not recorded)."""
        return None

    def refresh_unchanged(self, location: Path) -> bool:
        """Between two rounds of a read-only op (the data is as the template left it): do what a restore does
        besides putting the rows back, and say True; False (the default, SQLite's) asks for the full restore.

        A server's restore refills every table (hundreds of ms on Test 4's 60,000 rows) and then gathers
        statistics; after a read only the statistics are worth redoing, so that each round's prepared
        statements re-plan once as after a restore."""
        return False

    def settle(self, location: Path, arm_connections: int | None) -> None:
        """Called after the harness's own read-back: forget what that read-back left open."""

    def describe(self) -> dict[str, str]:
        """Facts about the engine worth recording per cell (its version, say)."""
        return {}

    # -- whole tables, through the harness's own connection (Test 4: the same rows for every arm) ----------
    def read_tables(self, location: Path, tables: Mapping[str, Sequence[str]]) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of each table (its columns in the order given), read past the arm: what is committed."""
        raise NotImplementedError(f"{self.name}: reading tables through the harness is not implemented")

    def fill_tables(self, location: Path, rows: Mapping[str, tuple[Sequence[str], Sequence[Sequence[Any]]]]) -> None:
        """Write each table's rows (table -> (columns, rows), in the order given, parents first) into the empty
        tables an arm created, in one transaction, and set each id sequence past the highest id written."""
        raise NotImplementedError(f"{self.name}: filling tables through the harness is not implemented")
