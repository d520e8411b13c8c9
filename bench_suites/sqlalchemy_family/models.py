"""The SQLAlchemy family's models: column types, the two flavours (SQLAlchemy declarative, SQLModel) and
the mapped class of each canonical model, built once per (flavour, model) per process."""

from __future__ import annotations

import datetime as dt
import types
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, List, Optional

import sqlalchemy
from sqlalchemy import (JSON, BigInteger, Column, DateTime, Float, ForeignKey, Integer, Numeric, SmallInteger, String,
    Table, Text)
from sqlalchemy.dialects import mysql as mysql_types
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from pytest_ormbench.arms.contract import DECIMAL_DIGITS, DECIMAL_PLACES
from pytest_ormbench.arms.sql import SqlTables, tables_for
from pytest_ormbench.workload.spec import TEXT_MAX, Field, ModelSpec

# --------------------------------------------------------------------------
# Column types
# --------------------------------------------------------------------------

#: SQLAlchemy type of each wide-column kind (one set for both databases: the model classes are built once
#: per process). On PostgreSQL Float renders FLOAT, which is double precision there; JSON is JSONB there
#: (the variant most PostgreSQL users choose, and what Django's JSONField and the control arms use).
#: On MariaDB Float would be FLOAT (4 bytes) and DateTime DATETIME (whole seconds): the MySQL variants are
#: what SQLAlchemy's MySQL documentation offers (``DOUBLE``, ``DATETIME(fsp=6)``).
_MYSQL = ("mysql", "mariadb")
TIMESTAMP_TYPE = DateTime().with_variant(mysql_types.DATETIME(fsp=6), *_MYSQL)
SA_TYPES: dict[str, Any] = {
    # asdecimal=False: MySQL's DOUBLE type returns Decimal by default; Float's Python type is float
    "float": Float().with_variant(mysql_types.DOUBLE(asdecimal=False), *_MYSQL),
    "smallint": SmallInteger,
    "int": Integer,
    "bigint": BigInteger,
    "char": String(TEXT_MAX),
    "text": Text,
    "decimal": Numeric(DECIMAL_DIGITS, DECIMAL_PLACES, asdecimal=True),
    "json": JSON().with_variant(JSONB(), "postgresql"),
}

#: Python type of each wide-column kind (SQLModel annotations)
PY_TYPES: dict[str, Any] = {
    "float": float, "smallint": int, "int": int, "bigint": int,
    "char": str, "text": str, "decimal": Decimal, "json": dict,
}


def table_name(spec: ModelSpec) -> str:
    return f"journal_{spec.name}"


@dataclass(frozen=True)
class ModelSet:
    """The mapped class of one canonical model and the tables it lives in."""

    cls: type
    tables: tuple[Table, ...]
    sql_tables: SqlTables
    link: Optional[Table] = None


# --------------------------------------------------------------------------
# Flavour 1: SQLAlchemy 2.x declarative (DeclarativeBase / mapped_column)
# --------------------------------------------------------------------------

class _JournalColumns:
    """Test 1's columns, shared by every SQLAlchemy model (a declarative mixin)."""

    # sort_order: these come first in the table, in canonical order, like the other arms
    id: Mapped[int] = mapped_column(Integer, primary_key=True, sort_order=-4)
    timestamp: Mapped[dt.datetime] = mapped_column(TIMESTAMP_TYPE, sort_order=-3)
    level: Mapped[int] = mapped_column(Integer, index=True, sort_order=-2)
    text: Mapped[str] = mapped_column(String(TEXT_MAX), index=True, sort_order=-1)


def _sa_wide_column(f: Field) -> Any:
    if f.has_default:
        return mapped_column(SA_TYPES[f.kind], nullable=False, default=f.default)
    return mapped_column(SA_TYPES[f.kind], nullable=True)


def _build_sa_models(spec: ModelSpec) -> ModelSet:
    class Base(DeclarativeBase):
        pass

    t = table_name(spec)
    cls_name = f"SaJournal{spec.name.capitalize()}"
    link: Optional[Table] = None
    if spec.relations:
        link = Table(
            f"{t}_links", Base.metadata,
            Column("id", Integer, primary_key=True),
            Column("from_id", ForeignKey(f"{t}.id", ondelete="CASCADE"), nullable=False, index=True),
            Column("to_id", ForeignKey(f"{t}.id", ondelete="CASCADE"), nullable=False, index=True),
        )

        class SaJournalFk(_JournalColumns, Base):
            __tablename__ = t
            # indexed, and ON DELETE SET NULL done by the database (passive_deletes on the reverse side)
            parent_id: Mapped[Optional[int]] = mapped_column(
                ForeignKey(f"{t}.id", ondelete="SET NULL"), index=True, nullable=True)
            parent: Mapped[Optional["SaJournalFk"]] = relationship(
                remote_side=lambda: [SaJournalFk.id], back_populates="children")
            children: Mapped[List["SaJournalFk"]] = relationship(
                back_populates="parent", passive_deletes=True)
            # directed many-to-many: from_id -> to_id; link rows are removed by ON DELETE CASCADE
            links_to: Mapped[List["SaJournalFk"]] = relationship(
                secondary=link,
                primaryjoin=lambda: SaJournalFk.id == link.c.from_id,
                secondaryjoin=lambda: SaJournalFk.id == link.c.to_id,
                back_populates="links_from", passive_deletes=True)
            links_from: Mapped[List["SaJournalFk"]] = relationship(
                secondary=link,
                primaryjoin=lambda: SaJournalFk.id == link.c.to_id,
                secondaryjoin=lambda: SaJournalFk.id == link.c.from_id,
                back_populates="links_to", passive_deletes=True)

        cls: type = SaJournalFk
    else:
        ns: dict[str, Any] = {"__tablename__": t}
        for f in spec.wide_fields:
            ns[f.name] = _sa_wide_column(f)
        cls = types.new_class(cls_name, (_JournalColumns, Base), {}, lambda body: body.update(ns))
    tables = tuple(Base.metadata.sorted_tables)
    return ModelSet(cls, tables, tables_for(spec, t), link)


# --------------------------------------------------------------------------
# Flavour 2: SQLModel table models (Field / Relationship / link_model)
# --------------------------------------------------------------------------

def _build_sqlmodel_models(spec: ModelSpec) -> ModelSet:
    from sqlmodel import Field as SMField
    from sqlmodel import Relationship, SQLModel

    t = table_name(spec)
    suffix = spec.name.capitalize()

    base_ns: dict[str, Any] = {
        "__annotations__": {"id": Optional[int], "timestamp": dt.datetime, "level": int, "text": str},
        "id": SMField(default=None, primary_key=True),
        # naive, like every other arm (recent SQLModel maps a bare datetime to a tz-aware type)
        "timestamp": SMField(sa_type=TIMESTAMP_TYPE),
        "level": SMField(index=True),
        "text": SMField(max_length=TEXT_MAX, index=True),
    }
    link_cls: Optional[type] = None
    if spec.relations:
        link_cls = types.new_class(
            f"SqlModelJournal{suffix}Link", (SQLModel,), {"table": True},
            lambda body: body.update({
                "__tablename__": f"{t}_links",
                "__annotations__": {"id": Optional[int], "from_id": int, "to_id": int},
                "id": SMField(default=None, primary_key=True),
                "from_id": SMField(foreign_key=f"{t}.id", ondelete="CASCADE", index=True),
                "to_id": SMField(foreign_key=f"{t}.id", ondelete="CASCADE", index=True),
            }),
        )
        name = f"SqlModelJournal{suffix}"
        lname = link_cls.__name__
        ns = dict(base_ns, __annotations__=dict(base_ns["__annotations__"]))
        ns["__annotations__"].update({
            "parent_id": Optional[int],
            "parent": Optional[name],
            "children": List[name],
            "links_to": List[name],
            "links_from": List[name],
        })
        ns.update({
            "parent_id": SMField(default=None, foreign_key=f"{t}.id", ondelete="SET NULL", index=True),
            "parent": Relationship(back_populates="children",
                                   sa_relationship_kwargs={"remote_side": f"{name}.id"}),
            "children": Relationship(back_populates="parent", passive_deletes=True),
            "links_to": Relationship(
                back_populates="links_from", link_model=link_cls, passive_deletes=True,
                sa_relationship_kwargs={"primaryjoin": f"{name}.id == {lname}.from_id",
                                        "secondaryjoin": f"{name}.id == {lname}.to_id"}),
            "links_from": Relationship(
                back_populates="links_to", link_model=link_cls, passive_deletes=True,
                sa_relationship_kwargs={"primaryjoin": f"{name}.id == {lname}.to_id",
                                        "secondaryjoin": f"{name}.id == {lname}.from_id"}),
        })
    else:
        ns = dict(base_ns, __annotations__=dict(base_ns["__annotations__"]))
        for f in spec.wide_fields:
            py = PY_TYPES[f.kind]
            kw: dict[str, Any] = {}
            if f.kind == "decimal":
                kw.update(max_digits=DECIMAL_DIGITS, decimal_places=DECIMAL_PLACES)
            elif f.kind == "char":
                kw.update(max_length=TEXT_MAX)
            else:
                kw.update(sa_type=SA_TYPES[f.kind])
            if f.has_default:
                ns["__annotations__"][f.name] = py
                ns[f.name] = SMField(default=f.default, nullable=False, **kw)
            else:
                ns["__annotations__"][f.name] = Optional[py]
                ns[f.name] = SMField(default=None, nullable=True, **kw)
    ns["__tablename__"] = t
    cls = types.new_class(f"SqlModelJournal{suffix}", (SQLModel,), {"table": True},
                          lambda body: body.update(ns))
    main = cls.__table__  # type: ignore[attr-defined]
    link = link_cls.__table__ if link_cls is not None else None  # type: ignore[attr-defined]
    tables = (main,) if link is None else (main, link)
    return ModelSet(cls, tables, tables_for(spec, t), link)


_MODEL_CACHE: dict[tuple[str, str], ModelSet] = {}


def models_for(flavor: str, spec: ModelSpec) -> ModelSet:
    """One mapped class per (flavour, model) per process, shared by the sync and async arm."""
    key = (flavor, spec.name)
    if key not in _MODEL_CACHE:
        build = _build_sa_models if flavor == "sqlalchemy" else _build_sqlmodel_models
        _MODEL_CACHE[key] = build(spec)
    return _MODEL_CACHE[key]


@dataclass(frozen=True)
class Flavor:
    """What differs between plain SQLAlchemy and SQLModel inside the op bodies."""

    name: str
    #: ``select`` to build statements with (SQLModel's returns objects from ``exec``)
    select: Callable[..., Any]
    #: session method returning ORM objects for ``select(Model)``
    objects_method: str
    #: session method returning rows for ``select(*columns)``
    rows_method: str


def sa_flavor() -> Flavor:
    return Flavor("sqlalchemy", sqlalchemy.select, "scalars", "execute")


def sqlmodel_flavor() -> Flavor:
    import sqlmodel

    return Flavor("sqlmodel", sqlmodel.select, "exec", "exec")
