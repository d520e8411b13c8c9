"""Test 4's SQLModel table models (the same schema and relationships as the declarative classes of
:mod:`.sa_family_rel_models`, written the way SQLModel's tutorial writes them: ``Field``, ``Relationship``,
``link_model`` for the many-to-many, ``ondelete="CASCADE"`` with ``cascade_delete`` and ``passive_deletes``).

No ``from __future__ import annotations`` here: SQLModel reads the annotations to build columns and
relationships.
"""

from typing import List, Optional

import sqlmodel
from sqlalchemy import Text
from sqlalchemy.ext.asyncio import AsyncAttrs
from sqlmodel import Field, Relationship, SQLModel

from pytest_ormbench.suites.relational.sa_family_rel_models import RelModels


class SMRelPostTag(SQLModel, table=True):
    __tablename__ = "rel_post_tag"
    post_id: int = Field(foreign_key="rel_post.id", primary_key=True, ondelete="CASCADE")
    tag_id: int = Field(foreign_key="rel_tag.id", primary_key=True, ondelete="CASCADE", index=True)


class SMRelOrg(AsyncAttrs, SQLModel, table=True):
    __tablename__ = "rel_org"
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(max_length=100)


class SMRelUser(AsyncAttrs, SQLModel, table=True):
    __tablename__ = "rel_user"
    id: Optional[int] = Field(default=None, primary_key=True)
    organization_id: int = Field(foreign_key="rel_org.id", index=True)
    email: str = Field(max_length=254, unique=True)
    name: str = Field(max_length=100)

    organization: Optional[SMRelOrg] = Relationship()
    posts: List["SMRelPost"] = Relationship(back_populates="author", cascade_delete=True, passive_deletes=True,
                                            sa_relationship_kwargs={"order_by": "SMRelPost.id"})


class SMRelPost(AsyncAttrs, SQLModel, table=True):
    __tablename__ = "rel_post"
    id: Optional[int] = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="rel_user.id", ondelete="CASCADE", index=True)
    title: str = Field(max_length=200)
    published: bool
    views: int
    likes: int

    author: Optional[SMRelUser] = Relationship(back_populates="posts")
    comments: List["SMRelComment"] = Relationship(cascade_delete=True, passive_deletes=True,
                                                  sa_relationship_kwargs={"order_by": "SMRelComment.id"})
    tags: List["SMRelTag"] = Relationship(link_model=SMRelPostTag, passive_deletes=True,
                                          sa_relationship_kwargs={"order_by": "SMRelTag.id"})


class SMRelComment(AsyncAttrs, SQLModel, table=True):
    __tablename__ = "rel_comment"
    id: Optional[int] = Field(default=None, primary_key=True)
    post_id: int = Field(foreign_key="rel_post.id", ondelete="CASCADE", index=True)
    body: str = Field(sa_type=Text)


class SMRelTag(AsyncAttrs, SQLModel, table=True):
    __tablename__ = "rel_tag"
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(max_length=50, unique=True)


SQLMODEL_MODELS = RelModels("sqlmodel", SMRelOrg, SMRelUser, SMRelPost, SMRelComment, SMRelTag,
                            SMRelPostTag.__table__, sqlmodel.select, "exec", "exec")  # type: ignore[attr-defined]
