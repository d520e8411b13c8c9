"""Test 4's mapped classes for the SQLAlchemy family: SQLAlchemy 2.x declarative (here) and SQLModel table
models (:mod:`.sa_family_rel_sqlmodel`, imported only by the SQLModel arms), and :class:`RelModels`, what the
shared shape bodies (:mod:`.sa_family_rel`, :mod:`.sa_family_rel_async`) need to know of either.

The schema is ``workload.relational.TABLES``: every foreign key indexed, ``rel_user.email`` and ``rel_tag.name``
unique, ``rel_post_tag`` keyed by ``(post_id, tag_id)`` (SQLAlchemy's association table; SQLModel's
``link_model``). Relationships order their collections with ``relationship(order_by=...)``, so that every
loading strategy (lazy included) hands posts, comments and tags back by id.

Deleting (``delete_cascade``): SQLAlchemy's "Using foreign key ON DELETE cascade with ORM relationships":
``ForeignKey(..., ondelete="CASCADE")`` on the children, ``cascade="all, delete"`` with ``passive_deletes=True``
on the parent's collection: ``session.delete(user)`` sends one DELETE for the user and the database removes its
posts, their comments and tag links (the ORM does not load the collections to delete them one by one).
SQLModel spells the same ``Field(ondelete="CASCADE")`` and ``Relationship(cascade_delete=True,
passive_deletes=True)``.

Both flavours mix in :class:`sqlalchemy.ext.asyncio.AsyncAttrs` (``obj.awaitable_attrs.posts``: the lazy load
an asyncio application awaits, as SQLAlchemy's asyncio documentation shows); it adds one attribute and
imports no async driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List

import sqlalchemy
from sqlalchemy import Boolean, Column, ForeignKey, Integer, String, Table, Text
from sqlalchemy.ext.asyncio import AsyncAttrs
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


@dataclass(frozen=True)
class RelModels:
    """One flavour's mapped classes and how its session runs a statement."""

    flavor: str
    Org: Any
    User: Any
    Post: Any
    Comment: Any
    Tag: Any
    #: the ``rel_post_tag`` table
    post_tag: Table
    #: the flavour's ``select`` (SQLModel's returns objects from ``exec`` for one entity)
    select: Callable[..., Any]
    #: session method returning ORM objects for ``select(Entity)``: ``scalars`` / SQLModel's ``exec``
    objects_method: str
    #: session method returning rows (and running DML): ``execute`` / SQLModel's ``exec``
    rows_method: str

    @property
    def tables(self) -> list[Table]:
        return [m.__table__ for m in (self.Org, self.User, self.Post, self.Comment, self.Tag)] + [self.post_tag]


# --------------------------------------------------------------------------
# SQLAlchemy 2.x declarative
# --------------------------------------------------------------------------

class RelBase(AsyncAttrs, DeclarativeBase):
    pass


rel_post_tag = Table(
    "rel_post_tag", RelBase.metadata,
    Column("post_id", ForeignKey("rel_post.id", ondelete="CASCADE"), primary_key=True),
    Column("tag_id", ForeignKey("rel_tag.id", ondelete="CASCADE"), primary_key=True, index=True),
)


class Org(RelBase):
    __tablename__ = "rel_org"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100))


class User(RelBase):
    __tablename__ = "rel_user"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    organization_id: Mapped[int] = mapped_column(ForeignKey("rel_org.id"), index=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    name: Mapped[str] = mapped_column(String(100))

    organization: Mapped[Org] = relationship()
    posts: Mapped[List["Post"]] = relationship(back_populates="author", order_by=lambda: Post.id,
                                               cascade="all, delete", passive_deletes=True)


class Post(RelBase):
    __tablename__ = "rel_post"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("rel_user.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(200))
    published: Mapped[bool] = mapped_column(Boolean)
    views: Mapped[int] = mapped_column(Integer)
    likes: Mapped[int] = mapped_column(Integer)

    author: Mapped[User] = relationship(back_populates="posts")
    comments: Mapped[List["Comment"]] = relationship(order_by=lambda: Comment.id, cascade="all, delete",
                                                     passive_deletes=True)
    tags: Mapped[List["Tag"]] = relationship(secondary=rel_post_tag, order_by=lambda: Tag.id, passive_deletes=True)


class Comment(RelBase):
    __tablename__ = "rel_comment"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("rel_post.id", ondelete="CASCADE"), index=True)
    body: Mapped[str] = mapped_column(Text)


class Tag(RelBase):
    __tablename__ = "rel_tag"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(50), unique=True)


SA_MODELS = RelModels("sqlalchemy", Org, User, Post, Comment, Tag, rel_post_tag, sqlalchemy.select,
                      "scalars", "execute")


def sqlmodel_models() -> RelModels:
    """SQLModel's table models (imported on first use: the SQLAlchemy arms never import SQLModel)."""
    from pytest_ormbench.suites.relational import sa_family_rel_sqlmodel as m

    return m.SQLMODEL_MODELS


def models_of(flavor: str) -> RelModels:
    return SA_MODELS if flavor == "sqlalchemy" else sqlmodel_models()
