"""Statements counted by kind, between two points the harness chooses.

A :class:`StatementCounter` is fed the SQL text of every statement the driver starts
(whatever thread runs it: aiosqlite runs its connection in a thread of its own) and counts
only while it is :attr:`~StatementCounter.active`. The database seam decides how statements
reach it (``Database.trace_statements``); the counter knows nothing of any driver.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

#: the kinds every count is split into; anything else (PRAGMA, SAVEPOINT, ROLLBACK, ...) is "other"
KINDS = ("SELECT", "INSERT", "UPDATE", "DELETE", "BEGIN", "COMMIT", "other")
_FIRST_WORDS = {"SELECT": "SELECT", "WITH": "SELECT", "VALUES": "SELECT", "INSERT": "INSERT",
                "REPLACE": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "BEGIN": "BEGIN",
                "COMMIT": "COMMIT", "END": "COMMIT"}

#: the kinds that change data
WRITE_KINDS = ("INSERT", "UPDATE", "DELETE")


def wrote(counts: Mapping[str, int]) -> str:
    """The writes in a count, as a message says them ("1 UPDATE, 2 DELETE"); "" when it holds none."""
    return ", ".join(f"{counts[k]} {k}" for k in WRITE_KINDS if counts.get(k))


def classify(sql: str) -> str:
    """The kind of one statement, from its first keyword (comments and parentheses skipped)."""
    text = sql.lstrip()
    while text.startswith(("--", "/*", "(")):
        if text.startswith("--"):
            text = text.split("\n", 1)[1] if "\n" in text else ""
        elif text.startswith("/*"):
            text = text.split("*/", 1)[1] if "*/" in text else ""
        else:
            text = text[1:]
        text = text.lstrip()
    if text[:30].upper().startswith("SELECT PG_ADVISORY_UNLOCK_ALL"):
        return "other"  # asyncpg's reset of a connection going back to its pool: the driver's, not a read
    word = text.split(None, 1)[0].upper().rstrip(";") if text else ""
    if word == "DECLARE" and " CURSOR " in f" {text[:200].upper()} ":
        # a server-side cursor (psycopg's named cursor, a driver's streaming read): the query it declares
        word = text.upper().split(" FOR ", 1)[1].split(None, 1)[0] if " FOR " in text.upper() else word
    kind = _FIRST_WORDS.get(word, "other")
    if kind == "SELECT" and word == "WITH":
        # a CTE in front of a write is that write
        body = text.upper()
        for write in ("INSERT", "UPDATE", "DELETE"):
            if f" {write} " in body and body.find(f" {write} ") > body.rfind(")"):
                return write
    return kind


@dataclass
class StatementCounter:
    """Counts statements by kind while active; the feed may come from any thread."""

    active: bool = False
    seen: list[str] = field(default_factory=list)
    #: counts that come from elsewhere than the feed: a server that counts what it executed
    #: (``begin()`` before the op, ``end()`` after it returns (statement text, executions) pairs)
    sources: list[Any] = field(default_factory=list)

    def feed(self, sql: str) -> None:
        if self.active:
            self.seen.append(sql)  # list.append is atomic under the GIL: safe from a driver's thread

    def add_source(self, source: Any) -> None:
        self.sources.append(source)

    def start(self) -> None:
        self.seen.clear()
        for source in self.sources:
            source.begin()
        self.active = True

    def stop(self) -> dict[str, int]:
        """Stop counting; the counts by kind (every kind present, zeros included)."""
        self.active = False
        counts = dict.fromkeys(KINDS, 0)
        for sql in self.seen:
            counts[classify(sql)] += 1
        self.seen.clear()
        for source in self.sources:
            for sql, calls in source.end():
                counts[classify(sql)] += calls
        return counts
