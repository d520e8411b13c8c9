"""Test 4 for the SQLAlchemy family: the statements every shape sends (:class:`RelQueries`, one source for the
four arms) and the shapes on a sync ``Session`` (:class:`SyncRelational`; the ``AsyncSession`` bodies are in
:mod:`.sa_family_rel_async`).

Loading strategies are SQLAlchemy's "Relationship Loading Techniques":

- ``lazy``: the relationship's default ``lazy="select"``, loaded when the attribute is touched (one SELECT per
  parent; a many-to-one already in the identity map is taken from it without SQL, as the ORM does);
- ``joined``: ``joinedload`` (a LIMIT on the parent with a collection is wrapped in a subquery by SQLAlchemy);
- ``selectin``: ``selectinload`` (one ``IN (...)`` SELECT per level);
- ``subquery``: ``subqueryload`` (one SELECT per level that re-runs the parent query as a subquery);
- ``contains_eager``: a join written in the statement, routed into the relationship with ``contains_eager``.
  Where the parent is a page (LIMIT/OFFSET) and the relation a collection, the page is a subquery and the
  parent an ``aliased(Entity, page)`` (SQLAlchemy's "Selecting Entities from Subqueries"), so that the LIMIT
  counts parents, not joined rows; the ORDER BY that relationship(order_by=...) gives the other strategies is
  written in the statement.

Each read opens a new session and closes it before it returns (nothing carried over between calls); inside
one call the session's identity map is SQLAlchemy's own business. Each write is one ``session.begin()``.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Mapping, Sequence

from sqlalchemy import and_, func, update
from sqlalchemy.orm import aliased, contains_eager, joinedload, selectinload, subqueryload

from pytest_ormbench.arms.relational import (StreamTotals, post_dict, posts_with_author, posts_with_tags,
    user_dict, users_with_posts, users_with_posts_comments)
from pytest_ormbench.suites.relational.sa_family_rel_models import RelModels, models_of

#: the eager loaders by the names SQLAlchemy's documentation gives the strategies
LOADERS = {"joined": joinedload, "selectin": selectinload, "subquery": subqueryload}

posts_of = attrgetter("posts")
comments_of = attrgetter("comments")
tags_of = attrgetter("tags")
author_of = attrgetter("author")
organization_of = attrgetter("organization")


def load_path(strategy: str, *path: Any) -> tuple[Any, ...]:
    """The loader option for ``path`` (``User.posts, Post.comments``) under ``strategy`` (none for lazy)."""
    if strategy == "lazy":
        return ()
    loader = LOADERS[strategy]
    option = loader(path[0])
    for attr in path[1:]:
        option = getattr(option, loader.__name__)(attr)
    return (option,)


def post_tag_dict(p: Any) -> dict[str, Any]:
    return {"id": p.id, "title": p.title}


def dashboard_result(users: int, published: int, latest: Sequence[Any], top: Sequence[Any],
                     per_org: Sequence[Any]) -> dict[str, Any]:
    return {"users": users, "published": published,
            "latest": [{"id": p.id, "title": p.title} for p in latest],
            "top": [{"id": p.id, "views": p.views} for p in top],
            "per_org": [{"id": r[0], "users": r[1]} for r in per_org]}


def org_stats_rows(rows: Sequence[Any]) -> list[dict[str, Any]]:
    return [{"id": r[0], "posts": r[1], "avg_views": float(r[2])} for r in rows]


class RelQueries:
    """Every statement of Test 4, built per call from one flavour's models (SQLAlchemy caches the compiled form).

    Strategy statements return ``(statement, unique)``: ``unique`` where a collection is joined in, so that the
    result is uniqued on the parent's identity (SQLAlchemy 2.0 requires ``Result.unique()`` there).
    """

    def __init__(self, m: RelModels) -> None:
        self.m = m
        self.select = m.select

    # -- strategy shapes ----------------------------------------------------------------------------------
    def users_nested(self, strategy: str, offset: int, limit: int, depth: int) -> tuple[Any, bool]:
        User, Post, Comment, select = self.m.User, self.m.Post, self.m.Comment, self.select
        if strategy == "contains_eager":
            page = select(User).order_by(User.id).limit(limit).offset(offset).subquery()
            u = aliased(User, page)
            stmt = select(u).outerjoin(u.posts)
            option = contains_eager(u.posts)
            order = [u.id, Post.id]
            if depth == 3:
                stmt = stmt.outerjoin(Post.comments)
                option = option.contains_eager(Post.comments)
                order.append(Comment.id)
            return stmt.options(option).order_by(*order), True
        path = (User.posts, Post.comments)[:depth - 1]
        stmt = select(User).order_by(User.id).limit(limit).offset(offset).options(*load_path(strategy, *path))
        return stmt, strategy == "joined"

    def user_deep_options(self, strategy: str) -> tuple[Any, ...]:
        return load_path(strategy, self.m.User.posts, self.m.Post.comments)

    def user_deep_eager(self, user_id: int) -> Any:
        """contains_eager: the user by id, its posts and their comments joined in (one row per comment)."""
        User, Post, Comment = self.m.User, self.m.Post, self.m.Comment
        return (self.select(User).outerjoin(User.posts).outerjoin(Post.comments).where(User.id == user_id)
                .options(contains_eager(User.posts).contains_eager(Post.comments)).order_by(Post.id, Comment.id))

    def posts_authors(self, strategy: str, offset: int, limit: int) -> tuple[Any, bool]:
        User, Post = self.m.User, self.m.Post
        stmt = self.select(Post)
        if strategy == "contains_eager":
            stmt = stmt.join(Post.author).join(User.organization).options(
                contains_eager(Post.author).contains_eager(User.organization))
        else:
            stmt = stmt.options(*load_path(strategy, Post.author, User.organization))
        return stmt.order_by(Post.id).limit(limit).offset(offset), False

    def posts_tags(self, strategy: str, offset: int, limit: int) -> tuple[Any, bool]:
        Post, Tag, select = self.m.Post, self.m.Tag, self.select
        if strategy == "contains_eager":
            page = select(Post).order_by(Post.id).limit(limit).offset(offset).subquery()
            p = aliased(Post, page)
            return select(p).outerjoin(p.tags).options(contains_eager(p.tags)).order_by(p.id, Tag.id), True
        stmt = select(Post).order_by(Post.id).limit(limit).offset(offset).options(*load_path(strategy, Post.tags))
        return stmt, strategy == "joined"

    # -- flat reads ---------------------------------------------------------------------------------------
    def users_filter(self, views: int, offset: int, limit: int) -> Any:
        User, Post = self.m.User, self.m.Post
        return (self.select(User).where(User.posts.any(and_(Post.published, Post.views > views)))
                .order_by(User.id).limit(limit).offset(offset))

    def users_post_count(self, offset: int, limit: int) -> Any:
        """Each user with a correlated scalar subquery counting its posts (rows: ``(User, count)``)."""
        User, Post = self.m.User, self.m.Post
        count = self.select(func.count(Post.id)).where(Post.user_id == User.id).scalar_subquery()
        return self.select(User, count.label("post_count")).order_by(User.id).limit(limit).offset(offset)

    def org_stats(self, threshold: int) -> Any:
        User, Post = self.m.User, self.m.Post
        return (self.select(User.organization_id, func.count(Post.id), func.avg(Post.views))
                .select_from(Post).join(Post.author).where(Post.views >= threshold)
                .group_by(User.organization_id).order_by(User.organization_id))

    def count_filter(self, threshold: int) -> Any:
        Post = self.m.Post
        return self.select(func.count()).select_from(Post).where(Post.published, Post.views > threshold)

    def page_offset(self, offset: int, limit: int) -> Any:
        Post = self.m.Post
        return self.select(Post).order_by(Post.id).limit(limit).offset(offset)

    def page_keyset(self, after_id: int, limit: int) -> Any:
        Post = self.m.Post
        return self.select(Post).where(Post.id > after_id).order_by(Post.id).limit(limit)

    def stream(self, batch: int) -> Any:
        """Every comment, fetched ``batch`` rows at a time (``yield_per``: a server-side cursor where the driver
        has one)."""
        return self.select(self.m.Comment).execution_options(yield_per=batch)

    def dashboard(self) -> tuple[Any, Any, Any, Any, Any]:
        """users, published posts, the 10 newest posts, the 5 most viewed, users per organization."""
        User, Post, select = self.m.User, self.m.Post, self.select
        return (select(func.count()).select_from(User),
                select(func.count()).select_from(Post).where(Post.published),
                select(Post).order_by(Post.id.desc()).limit(10),
                select(Post).order_by(Post.views.desc(), Post.id).limit(5),
                select(User.organization_id, func.count(User.id)).group_by(User.organization_id)
                .order_by(User.organization_id))

    # -- writes -------------------------------------------------------------------------------------------
    def increment(self, post_id: int) -> Any:
        Post = self.m.Post
        return update(Post).where(Post.id == post_id).values(likes=Post.likes + 1)

    def upsert(self, dialect: Any, rows: Sequence[Mapping[str, Any]]) -> Any:
        """The dialect's INSERT with its conflict clause, all rows in one statement (SQLAlchemy's "ORM upsert")."""
        User = self.m.User
        values = [{"organization_id": r["organization_id"], "email": r["email"], "name": r["name"]} for r in rows]
        if dialect.mysql_like:
            from sqlalchemy.dialects.mysql import insert as mysql_insert

            stmt = mysql_insert(User).values(values)
            return stmt.on_duplicate_key_update(name=stmt.inserted.name)
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert
        else:
            from sqlalchemy.dialects.sqlite import insert as pg_insert  # same on_conflict_do_update API
        stmt = pg_insert(User).values(values)
        return stmt.on_conflict_do_update(index_elements=[User.email], set_={"name": stmt.excluded.name})

    def tags_by_id(self, users: Sequence[Mapping[str, Any]]) -> Any:
        Tag = self.m.Tag
        ids = sorted({t for u in users for p in u["posts"] for t in p["tag_ids"]})
        return self.select(Tag).where(Tag.id.in_(ids))

    def new_users(self, users: Sequence[Mapping[str, Any]], tags: Mapping[int, Any]) -> list[Any]:
        """The users to add, each with its posts and their tags (existing ``Tag`` objects)."""
        User, Post = self.m.User, self.m.Post
        return [User(email=u["email"], name=u["name"], organization_id=u["organization_id"],
                     posts=[Post(title=p["title"], published=False, views=0, likes=0,
                                 tags=[tags[t] for t in p["tag_ids"]]) for p in u["posts"]])
                for u in users]

    def users_by_id(self, user_ids: Sequence[int]) -> Any:
        User = self.m.User
        return self.select(User).where(User.id.in_(list(user_ids)))

    def bulk_update(self, views_below: int, likes: int) -> Any:
        Post = self.m.Post
        return update(Post).where(Post.views < views_below).values(likes=likes)


class RelationalSetup:
    """What both the sync and async relational arms replace in the Tests 1-3 arm: the models (the relational
    spec has no fields of its own; the Tests 1-3 journal models are never built here)."""

    rm: RelModels
    rq: RelQueries

    def _setup_models(self) -> None:
        self.rm = models_of(self.flavor.name)  # type: ignore[attr-defined]
        self.rq = RelQueries(self.rm)

    def tables(self) -> Any:
        raise NotImplementedError("Test 4's tables are read back by the harness (workload.relational.TABLES)")


class SyncRelational(RelationalSetup):
    """The 19 shapes on a sync ``Session`` (SQLAlchemy's, or SQLModel's with ``exec``)."""

    Session: Any
    engine: Any

    def create_schema(self) -> None:
        tables = self.rm.tables
        tables[0].metadata.create_all(self.engine, tables=tables)

    def _objects(self, s: Any, stmt: Any, unique: bool = False) -> Any:
        result = getattr(s, self.rm.objects_method)(stmt)
        return result.unique() if unique else result

    def _rows(self, s: Any, stmt: Any) -> Any:
        return getattr(s, self.rm.rows_method)(stmt)

    # -- strategy shapes ----------------------------------------------------------------------------------
    def _users_nested(self, strategy: str, offsets: Sequence[int], limit: int, depth: int) -> Any:
        out = []
        with self.Session() as s:
            for o in offsets:
                stmt, unique = self.rq.users_nested(strategy, o, limit, depth)
                users = self._objects(s, stmt, unique).all()
                out.append(users_with_posts(users, posts_of) if depth == 2
                           else users_with_posts_comments(users, posts_of, comments_of))
        return out

    def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        return self._users_nested(strategy, offsets, limit, 2)

    def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        return self._users_nested(strategy, offsets, limit, 3)

    def user_deep(self, strategy: str, user_ids: Sequence[int]) -> Any:
        users = []
        with self.Session() as s:
            if strategy == "contains_eager":
                for uid in user_ids:
                    users.append(self._objects(s, self.rq.user_deep_eager(uid), True).one())
            else:
                options = self.rq.user_deep_options(strategy)
                User = self.rm.User
                for uid in user_ids:
                    users.append(s.get(User, uid, options=options))
            return users_with_posts_comments(users, posts_of, comments_of)

    def posts_authors(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        out = []
        with self.Session() as s:
            for o in offsets:
                stmt, unique = self.rq.posts_authors(strategy, o, limit)
                out.append(posts_with_author(self._objects(s, stmt, unique).all(), author_of, organization_of))
        return out

    def posts_tags(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        out = []
        with self.Session() as s:
            for o in offsets:
                stmt, unique = self.rq.posts_tags(strategy, o, limit)
                out.append(posts_with_tags(self._objects(s, stmt, unique).all(), tags_of))
        return out

    # -- flat reads ---------------------------------------------------------------------------------------
    def users_filter(self, views: int, offsets: Sequence[int], limit: int) -> Any:
        with self.Session() as s:
            return [[user_dict(u) for u in self._objects(s, self.rq.users_filter(views, o, limit))] for o in offsets]

    def users_post_count(self, offsets: Sequence[int], limit: int) -> Any:
        with self.Session() as s:
            return [[{"id": u.id, "name": u.name, "post_count": n}
                     for u, n in self._rows(s, self.rq.users_post_count(o, limit))] for o in offsets]

    def org_stats(self, thresholds: Sequence[int]) -> Any:
        with self.Session() as s:
            return [org_stats_rows(self._rows(s, self.rq.org_stats(t)).all()) for t in thresholds]

    def count_filter(self, thresholds: Sequence[int]) -> Any:
        with self.Session() as s:
            return [self._objects(s, self.rq.count_filter(t)).one() for t in thresholds]

    def page_offset(self, offset: int, limit: int, repeats: int) -> Any:
        with self.Session() as s:
            return [[post_dict(p) for p in self._objects(s, self.rq.page_offset(offset, limit))]
                    for _ in range(repeats)]

    def page_keyset(self, after_id: int, limit: int, repeats: int) -> Any:
        with self.Session() as s:
            return [[post_dict(p) for p in self._objects(s, self.rq.page_keyset(after_id, limit))]
                    for _ in range(repeats)]

    def stream_comments(self, batch: int) -> Any:
        totals = StreamTotals()
        add = totals.add
        with self.Session() as s, s.begin():  # one read transaction, committed (as the async arms do)
            for part in self._objects(s, self.rq.stream(batch)).partitions():
                for c in part:
                    add(c.id, c.body)
        return totals.result()

    def hot_get(self, ids: Sequence[int]) -> Any:
        Post = self.rm.Post
        with self.Session() as s:
            get = s.get
            return [post_dict(get(Post, i)) for i in ids]

    def dashboard(self, strategy: str, repeats: int) -> Any:
        out = []
        with self.Session() as s:
            for _ in range(repeats):
                users_q, published_q, latest_q, top_q, per_org_q = self.rq.dashboard()
                with s.begin():
                    users = self._objects(s, users_q).one()
                    published = self._objects(s, published_q).one()
                    latest = self._objects(s, latest_q).all()
                    top = self._objects(s, top_q).all()
                    per_org = self._rows(s, per_org_q).all()
                out.append(dashboard_result(users, published, latest, top, per_org))
        return out

    # -- writes -------------------------------------------------------------------------------------------
    def increment(self, post_ids: Sequence[int]) -> None:
        with self.Session() as s, s.begin():
            for pid in post_ids:
                self._rows(s, self.rq.increment(pid))

    def upsert(self, rows: Sequence[Mapping[str, Any]]) -> None:
        with self.Session() as s, s.begin():
            self._rows(s, self.rq.upsert(self.dialect, rows))  # type: ignore[attr-defined]

    def nested_create(self, users: Sequence[Mapping[str, Any]]) -> None:
        with self.Session() as s, s.begin():
            tags = {t.id: t for t in self._objects(s, self.rq.tags_by_id(users))}
            s.add_all(self.rq.new_users(users, tags))

    def delete_cascade(self, user_ids: Sequence[int]) -> None:
        with self.Session() as s, s.begin():
            for u in self._objects(s, self.rq.users_by_id(user_ids)).all():
                s.delete(u)

    def bulk_update(self, views_below: int, likes: int) -> None:
        with self.Session() as s, s.begin():
            self._rows(s, self.rq.bulk_update(views_below, likes))
