"""Test 4 on Piccolo: the relational workload through Piccolo's Table classes and query builder.

The six tables are Piccolo ``Table`` classes with the canonical names (``tablename=``); a ``ForeignKey``'s
column is named by ``db_column_name`` (``organization_id``, ``user_id``, ``post_id``, ``tag_id``) while the
attribute keeps Piccolo's usual name (``User.organization``, ``Post.user``, ...). Posts and tags meet through
Piccolo's ``M2M(LazyTableReference("PostTag"))``. Piccolo's joining table is a ``Table`` like any other, so it
has its own ``id`` primary key (Piccolo has no composite primary key) and each foreign key indexed;
``(post_id, tag_id)`` is not declared unique (Piccolo's ``Unique`` constraint is an ``ALTER TABLE ... ADD
CONSTRAINT``, which SQLite does not have). The harness fills post_id and tag_id; the id is the
database's.

Every foreign key is ``on_delete=OnDelete.cascade`` (Piccolo's default, written out): ``delete_cascade`` is one
``User.delete()`` and the database removes posts, comments and links.

The engine, the one connection and the restore are :class:`~pytest_ormbench.suites.piccolo_arm.PiccoloArm`'s:
on SQLite every read runs in one DEFERRED ``engine.transaction()`` (Piccolo opens a connection per transaction
and per query outside one), every write in one IMMEDIATE transaction; on PostgreSQL the pool's one asyncpg
connection serves reads outside a transaction and writes inside ``engine.transaction()``.

Loading. Piccolo has no relation attributes that load themselves: the "lazy" strategy is what Piccolo's docs
show for reaching related rows one object at a time (``get_related`` for a foreign key, ``get_m2m`` for the
M2M, a ``where(Post.user == id)`` query for the reverse side). Its eager forms are to-one only (``select`` of
``Post.user.organization.<column>`` with ``output(nested=True)``, or ``objects().prefetch(...)``, both one
query with joins) and the M2M select (``Post.tags(Tag.id, Tag.name)``). It has no reverse-foreign-key loading
(piccolo-orm/piccolo issue 378), so the to-many shapes run lazy only.
"""

from __future__ import annotations

import types
from typing import Any, Mapping, Sequence

from piccolo.columns import M2M, Boolean, ForeignKey, Integer, LazyTableReference, Text, Varchar
from piccolo.columns.base import OnDelete
from piccolo.engine.postgres import PostgresEngine
from piccolo.query.functions.aggregate import Avg, Count
from piccolo.table import Table

from pytest_ormbench.arms.relational import (RelationalArm, StreamTotals, declared, post_dict, posts_with_author,
    posts_with_author_async, posts_with_tags_async, users_with_posts_async,
    users_with_posts_comments_async)
from pytest_ormbench.arms.sql import AiosqliteArm, chunked, variable_limit
from pytest_ormbench.suites.piccolo_arm import PG_MAX_ARGS, PiccoloArm


def _table(class_name: str, tablename: str, columns: Mapping[str, Any]) -> type[Table]:
    cls = types.new_class(class_name, (Table,), {"tablename": tablename}, lambda ns: ns.update(columns))
    cls.__module__ = __name__
    return cls


def _fk(references: Any, column: str) -> ForeignKey:
    return ForeignKey(references, null=False, on_delete=OnDelete.cascade, index=True, db_column_name=column)


Organization = _table("Organization", "rel_org", {"name": Varchar(length=100)})

User = _table("User", "rel_user", {
    "organization": _fk(Organization, "organization_id"),
    "email": Varchar(length=254, unique=True),
    "name": Varchar(length=100),
})

Post = _table("Post", "rel_post", {
    "user": _fk(User, "user_id"),
    "title": Varchar(length=200),
    "published": Boolean(),
    "views": Integer(),
    "likes": Integer(),
    "tags": M2M(LazyTableReference("PostTag", module_path=__name__)),
})

Comment = _table("Comment", "rel_comment", {
    "post": _fk(Post, "post_id"),
    "body": Text(),
})

Tag = _table("Tag", "rel_tag", {"name": Varchar(length=50, unique=True)})


#: Piccolo's joining table, as its M2M docs write one: its own id (Piccolo has no composite primary key) and two
#: indexed foreign keys. No Unique([post, tag]): Piccolo emits it as ALTER TABLE ... ADD CONSTRAINT, which SQLite
#: rejects
PostTag = _table("PostTag", "rel_post_tag", {"post": _fk(Post, "post_id"), "tag": _fk(Tag, "tag_id")})

TABLES: tuple[type[Table], ...] = (Organization, User, Post, Comment, Tag, PostTag)


class PiccoloRelational(RelationalArm, PiccoloArm):
    name = "piccolo"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)

    def __init__(self, model: Any, settings: Any) -> None:
        # PiccoloArm.__init__ picks Tests 1-3's tables by model name; Test 4's are the six above
        AiosqliteArm.__init__(self, model, settings)
        self.table, self.link = Organization, None  # server_rows() reads through Table.raw
        self._max_vars = variable_limit()
        self._expected_settings = self._sqlite_expected_settings
        self._restore = self._sqlite_restore

    async def open_postgresql(self, location: Any) -> None:
        # as PiccoloArm.open_postgresql without its per-model tables: one pooled connection, min_size=max_size=1
        self.db = PostgresEngine(config={"host": location.host, "port": location.port, "user": location.user,
                                         "password": location.password, "database": location.dbname})
        await self.db.start_connection_pool(min_size=1, max_size=1)
        self._max_vars = PG_MAX_ARGS
        self._expected_settings, self._restore = self._server_expected_settings, self._server_restore
        self._attach_engine()

    def _attach_engine(self) -> None:
        for t in TABLES:
            t._meta.db = self.db

    def _read_transaction(self) -> Any:
        """A read transaction on every database (the dashboard's): DEFERRED on SQLite."""
        return self._engine().transaction()

    async def create_schema(self) -> None:
        async with self._write():
            for t in TABLES:
                await t.create_table()

    # -- nested reads: one to many (Piccolo loads a reverse foreign key only by a query per parent) -------------
    @staticmethod
    async def _posts_of(user: Any) -> list[Any]:
        return await Post.objects().where(Post.user == user.id).order_by(Post.id)

    @staticmethod
    async def _comments_of(post: Any) -> list[Any]:
        return await Comment.objects().where(Comment.post == post.id).order_by(Comment.id)

    def _users_page(self, offset: int, limit: int) -> Any:
        return User.objects().order_by(User.id).offset(offset).limit(limit)

    async def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        assert strategy == "lazy", strategy
        out = []
        async with self._read():
            for o in offsets:
                out.append(await users_with_posts_async(await self._users_page(o, limit), self._posts_of))
        return out

    async def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        assert strategy == "lazy", strategy
        out = []
        async with self._read():
            for o in offsets:
                out.append(await users_with_posts_comments_async(await self._users_page(o, limit), self._posts_of,
                                                                 self._comments_of))
        return out

    async def user_deep(self, strategy: str, user_ids: Sequence[int]) -> Any:
        assert strategy == "lazy", strategy
        out = []
        async with self._read():
            for uid in user_ids:
                user = await User.objects().get(User.id == uid)
                out.extend(await users_with_posts_comments_async([user], self._posts_of, self._comments_of))
        return out

    # -- to one --------------------------------------------------------------------------------------------
    async def posts_authors(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        out = []
        async with self._read():
            for o in offsets:
                if strategy == "nested":
                    rows = await (Post.select(Post.id, Post.title, Post.user.id, Post.user.name,
                                              Post.user.organization.id, Post.user.organization.name)
                                  .order_by(Post.id).offset(o).limit(limit).output(nested=True))
                    # nested output names each level by its foreign key's column (user_id, organization_id)
                    out.append([{"id": r["id"], "title": r["title"],
                                 "author": {"id": (a := r["user_id"])["id"], "name": a["name"],
                                            "organization": {"id": a["organization_id"]["id"],
                                                             "name": a["organization_id"]["name"]}}}
                                for r in rows])
                elif strategy == "prefetch":
                    posts = await (Post.objects().prefetch(Post.user.organization)
                                   .order_by(Post.id).offset(o).limit(limit))
                    out.append(posts_with_author(posts, lambda p: p.user, lambda u: u.organization))
                else:
                    assert strategy == "lazy", strategy
                    posts = await Post.objects().order_by(Post.id).offset(o).limit(limit)
                    out.append(await posts_with_author_async(posts, lambda p: p.get_related(Post.user),
                                                             lambda u: u.get_related(User.organization)))
        return out

    # -- many to many --------------------------------------------------------------------------------------
    @staticmethod
    async def _tags_of(post: Any) -> list[Any]:
        # get_m2m has no ordering: its rows come in the database's order, sorted here by id
        return sorted(await post.get_m2m(Post.tags), key=lambda t: t.id)

    async def posts_tags(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        out = []
        async with self._read():
            for o in offsets:
                if strategy == "m2m":
                    rows = await (Post.select(Post.id, Post.title, Post.tags(Tag.id, Tag.name, as_list=False))
                                  .order_by(Post.id).offset(o).limit(limit))
                    # the M2M subquery has no ORDER BY: the tags are sorted by id here
                    out.append([{"id": r["id"], "title": r["title"],
                                 "tags": [{"id": t["id"], "name": t["name"]}
                                          for t in sorted(r["tags"], key=lambda t: t["id"])]}
                                for r in rows])
                else:
                    assert strategy == "lazy", strategy
                    posts = await Post.objects().order_by(Post.id).offset(o).limit(limit)
                    out.append(await posts_with_tags_async(posts, self._tags_of))
        return out

    # -- flat reads ------------------------------------------------------------------------------------------
    async def users_filter(self, views: int, offsets: Sequence[int], limit: int) -> Any:
        popular = Post.select(Post.user).where((Post.published == True) & (Post.views > views))  # noqa: E712
        out = []
        async with self._read():
            for o in offsets:
                users = await (User.objects().where(User.id.is_in(popular)).order_by(User.id)
                               .offset(o).limit(limit))
                out.append([{"id": u.id, "name": u.name} for u in users])
        return out

    async def users_post_count(self, offsets: Sequence[int], limit: int) -> Any:
        out = []
        async with self._read():
            for o in offsets:
                users = await self._users_page(o, limit)
                counts = {r["user_id"]: r["count"] for r in await (
                    Post.select(Post.user, Count()).where(Post.user.is_in([u.id for u in users]))
                    .group_by(Post.user))} if users else {}
                out.append([{"id": u.id, "name": u.name, "post_count": counts.get(u.id, 0)} for u in users])
        return out

    async def org_stats(self, thresholds: Sequence[int]) -> Any:
        out = []
        org = Post.user.organization
        async with self._read():
            for t in thresholds:
                rows = await (Post.select(org.as_alias("org"), Count(alias="posts"), Avg(Post.views, alias="avg"))
                              .where(Post.views >= t).group_by(org).order_by(org))
                out.append([{"id": r["org"], "posts": r["posts"], "avg_views": float(r["avg"])} for r in rows])
        return out

    async def count_filter(self, thresholds: Sequence[int]) -> Any:
        async with self._read():
            return [await Post.count().where((Post.published == True) & (Post.views > t))  # noqa: E712
                    for t in thresholds]

    async def page_offset(self, offset: int, limit: int, repeats: int) -> Any:
        out = []
        async with self._read():
            for _ in range(repeats):
                out.append([post_dict(p) for p in await Post.objects().order_by(Post.id).offset(offset).limit(limit)])
        return out

    async def page_keyset(self, after_id: int, limit: int, repeats: int) -> Any:
        out = []
        async with self._read():
            for _ in range(repeats):
                out.append([post_dict(p) for p in await Post.objects().where(Post.id > after_id)
                            .order_by(Post.id).limit(limit)])
        return out

    async def stream_comments(self, batch: int) -> Any:
        # Piccolo's batch() takes a connection of its own (SQLite: a new aiosqlite connection; PostgreSQL: a new
        # asyncpg connection, not the pool's, with a server-side cursor in a transaction), closed on exit: so it
        # runs outside _read(), which would hold a second connection on SQLite
        totals = StreamTotals()
        async with await Comment.select(Comment.id, Comment.body).batch(batch_size=batch) as cursor:
            async for rows in cursor:
                for r in rows:
                    totals.add(r["id"], r["body"])
        return totals.result()

    async def hot_get(self, ids: Sequence[int]) -> Any:
        async with self._read():
            return [post_dict(await Post.objects().get(Post.id == i)) for i in ids]

    async def dashboard(self, strategy: str, repeats: int) -> Any:
        assert strategy == "sequential", strategy
        out = []
        for _ in range(repeats):
            async with self._read_transaction():
                users = await User.count()
                published = await Post.count().where(Post.published == True)  # noqa: E712
                latest = await Post.select(Post.id, Post.title).order_by(Post.id, ascending=False).limit(10)
                top = await (Post.select(Post.id, Post.views).order_by(Post.views, ascending=False)
                             .order_by(Post.id).limit(5))
                per_org = await (User.select(User.organization, Count()).group_by(User.organization)
                                 .order_by(User.organization))
            out.append({"users": users, "published": published,
                        "latest": [{"id": r["id"], "title": r["title"]} for r in latest],
                        "top": [{"id": r["id"], "views": r["views"]} for r in top],
                        "per_org": [{"id": r["organization_id"], "users": r["count"]} for r in per_org]})
        return out

    # -- writes ------------------------------------------------------------------------------------------
    async def increment(self, post_ids: Sequence[int]) -> None:
        async with self._write():
            for pid in post_ids:
                await Post.update({Post.likes: Post.likes + 1}).where(Post.id == pid)

    async def upsert(self, rows: Sequence[Mapping[str, Any]]) -> None:
        users = [User(email=r["email"], name=r["name"], organization=r["organization_id"]) for r in rows]
        async with self._write():
            for chunk in chunked(users, len(User._meta.columns), self._max_vars):
                await User.insert(*chunk).on_conflict(target=User.email, action="DO UPDATE", values=[User.name])

    async def nested_create(self, users: Sequence[Mapping[str, Any]]) -> None:
        new_users = [User(email=u["email"], name=u["name"], organization=u["organization_id"]) for u in users]
        async with self._write():
            # insert() sets each new row's id on its object (RETURNING), which the children then reference
            for chunk in chunked(new_users, len(User._meta.columns), self._max_vars):
                await User.insert(*chunk)
            posts, tag_ids = [], []
            for user, u in zip(new_users, users):
                for p in u["posts"]:
                    posts.append(Post(user=user.id, title=p["title"], published=False, views=0, likes=0))
                    tag_ids.append(p["tag_ids"])
            for chunk in chunked(posts, len(Post._meta.columns), self._max_vars):
                await Post.insert(*chunk)
            links = [PostTag(post=post.id, tag=t) for post, ts in zip(posts, tag_ids) for t in ts]
            for chunk in chunked(links, len(PostTag._meta.columns), self._max_vars):
                await PostTag.insert(*chunk)

    async def delete_cascade(self, user_ids: Sequence[int]) -> None:
        # the posts, their comments and tag links go by the schema's ON DELETE CASCADE
        async with self._write():
            await User.delete().where(User.id.is_in(list(user_ids)))

    async def bulk_update(self, views_below: int, likes: int) -> None:
        async with self._write():
            await Post.update({Post.likes: likes}).where(Post.views < views_below)


__all__ = ["PiccoloRelational", "Organization", "User", "Post", "Comment", "Tag", "PostTag"]
