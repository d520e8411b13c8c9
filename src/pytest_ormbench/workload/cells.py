"""Which cell: the key of one cell of the matrix, and its one id format."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from pytest_ormbench.workload.relational import SHAPES_BY_CODE, SHAPES_BY_NAME, Shape
from pytest_ormbench.workload.spec import ALL_MODELS, OPS_BY_LETTER, OPS_BY_NAME, RELATIONAL, Op


class RecordError(ValueError):
    """A cell id or an ``extra_info`` that is not a pytest-ormbench cell."""


#: the database axis: every value ``--ormbench-dbs`` takes, in the order tables show them (the one list;
#: the backends, the options and the report read it from here)
DATABASE_AXIS = ("sqlite", "postgresql", "mysql")
#: the database every cell ran on before the database axis existed (the embedded side: SQLite, or an arm's
#: own store such as ObjectBox's); its cells keep their ids
DEFAULT_DB = DATABASE_AXIS[0]
#: the server databases the axis knows besides SQLite (their name ends a cell id)
SERVER_DBS = DATABASE_AXIS[1:]


def format_rtt(rtt_ms: float) -> str:
    """An RTT as ids and tables show it: ``5``, ``0.5`` (milliseconds)."""
    return f"{rtt_ms:g}"


@dataclass(frozen=True, order=True)
class CellKey:
    """Which cell: arm x model x operation (x strategy) x mode x table x database (x RTT). ``op`` is the letter
    (A-K) of Tests 1-3, or the code (R1-R19) of a Test 4 shape; ``strategy`` is the loading strategy of a Test 4
    shape that has the axis (as the arm names it: ``selectin``, ``prefetch_related``, ``lazy``), else None."""

    arm: str
    model: str
    op: str
    mode: str
    table: str
    #: the database the arm stored in: ``sqlite`` (the default, and ObjectBox's own store) or a server
    db: str = DEFAULT_DB
    #: a server database reached through the latency proxy at this round-trip time (ms); None: directly
    rtt_ms: float | None = None
    strategy: str | None = None

    @property
    def operation(self) -> Op | Shape:
        return SHAPES_BY_CODE[self.op] if self.model == RELATIONAL.name else OPS_BY_LETTER[self.op]

    @property
    def relational(self) -> bool:
        """A Test 4 cell (a shape of the relational workload)."""
        return self.model == RELATIONAL.name

    @property
    def read_only(self) -> bool:
        """An op that only reads: Tests 1-3's D-H, Test 4's read shapes. On a server its rounds are not refilled
        between rounds (``Database.refresh_unchanged``), and its counted statements must hold no write."""
        return self.operation.read_only

    @property
    def op_id(self) -> str:
        """The operation as ids show it: ``get``; a shape with its strategy: ``users_posts.selectin``."""
        name = self.operation.name
        return f"{name}.{self.strategy}" if self.strategy else name

    @property
    def id(self) -> str:
        """The test id, e.g. ``peewee-simple-insert_single-cold-default`` (the one format, built here only).

        A server database adds its name (``...-cold-default-postgresql``), and a latency sweep the RTT
        (``...-postgresql-rtt5``); SQLite cells keep the ids they had before the database axis, so that
        earlier results and baselines still match.
        """
        base = f"{self.arm}-{self.model}-{self.op_id}-{self.mode}-{self.table}"
        if self.db != DEFAULT_DB:
            base += f"-{self.db}"
        if self.rtt_ms is not None:
            base += f"-rtt{format_rtt(self.rtt_ms)}"
        return base

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> CellKey:
        """The key an ``extra_info`` (a record's JSON) names: its ``arm``, ``model``, ``op``, ``mode``, ``table``,
        ``db`` (absent in files from before the database axis: SQLite) and ``rtt_ms``."""
        try:
            key = cls(str(info["arm"]), str(info["model"]), str(info["op"]), str(info["mode"]), str(info["table"]),
                      str(info.get("db") or DEFAULT_DB), None if info.get("rtt_ms") is None else float(info["rtt_ms"]),
                      None if info.get("strategy") is None else str(info["strategy"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordError(f"not a pytest-ormbench cell ({type(exc).__name__}: {exc})") from None
        ops = SHAPES_BY_CODE if key.model == RELATIONAL.name else OPS_BY_LETTER
        if key.op not in ops or key.model not in ALL_MODELS:
            raise RecordError(f"not a pytest-ormbench cell: op {key.op!r}, model {key.model!r}")
        return key

    @classmethod
    def parse(cls, cell_id: str) -> CellKey:
        """The key of a test id made by :attr:`id` (arm names may hold hyphens; nothing else does)."""
        db, rtt = DEFAULT_DB, None
        head, _, last = cell_id.rpartition("-")
        if last.startswith("rtt"):
            try:
                rtt = float(last[3:])
            except ValueError:
                raise RecordError(f"not a pytest-ormbench cell id: {cell_id!r}") from None
            cell_id = head
            head, _, last = cell_id.rpartition("-")
        if last in SERVER_DBS:
            cell_id, db = head, last
        parts = cell_id.rsplit("-", 4)
        if len(parts) != 5 or parts[1] not in ALL_MODELS:
            raise RecordError(f"not a pytest-ormbench cell id: {cell_id!r}")
        arm, model, op_name, mode, table = parts
        op_name, _, strategy = op_name.partition(".")
        ops = SHAPES_BY_NAME if model == RELATIONAL.name else OPS_BY_NAME
        if op_name not in ops or (strategy and model != RELATIONAL.name):
            raise RecordError(f"not a pytest-ormbench cell id: {cell_id!r}")
        return cls(arm, model, ops[op_name].letter, mode, table, db, rtt, strategy or None)

    @property
    def place(self) -> str:
        """Where the arm stored: ``sqlite``, ``postgresql``, ``postgresql@5ms`` (a column group of the tables)."""
        return self.db if self.rtt_ms is None else f"{self.db}@{format_rtt(self.rtt_ms)}ms"

    @property
    def unit(self) -> str:
        """What takes its turn in the interleaved order: an arm on one database (and RTT of a sweep)."""
        return self.arm if self.db == "sqlite" and self.rtt_ms is None else f"{self.arm}@{self.place}"

    def astuple(self) -> tuple[Any, ...]:
        """(arm, model, op, mode, table), and the database (and RTT) after them when it is not SQLite."""
        base: tuple[Any, ...] = (self.arm, self.model, self.op, self.mode, self.table)
        if self.db != DEFAULT_DB or self.rtt_ms is not None:
            base += (self.db,)
        if self.rtt_ms is not None:
            base += (self.rtt_ms,)
        if self.strategy is not None:
            base += (self.strategy,)
        return base

