"""Helpers for arms that know nothing of the engine underneath: no SQL, no ORM.

The op bodies of every arm repeat a few shapes that are the same whatever the ORM
or the database: putting an update's new values on an object, cutting a list into
slices of a given size. They live here once; ``sqlite_support`` builds on them for
SQLite (its bound-variable chunker is :func:`slices` with SQLite's limit).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence, TypeVar

T = TypeVar("T")


def assign(obj: Any, values: Mapping[str, Any]) -> Any:
    """Set each of ``values`` (canonical field name -> value) as an attribute of ``obj``; returns ``obj``.

    Update: Whole's assignment, done where the ORM tracks changes (so it runs inside the timed op).
    """
    for name, value in values.items():
        setattr(obj, name, value)
    return obj


def assign_all(objs: Sequence[Any], values: Sequence[Mapping[str, Any]]) -> None:
    """:func:`assign` ``values[i]`` to ``objs[i]`` for every object (for a unit of work that saves them later)."""
    for obj, new in zip(objs, values):
        for name, value in new.items():
            setattr(obj, name, value)


def slices(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size`` (at least 1) elements, in order."""
    size = max(1, size)
    for start in range(0, len(items), size):
        yield items[start : start + size]


__all__ = ["assign", "assign_all", "slices"]
