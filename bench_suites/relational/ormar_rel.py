"""Test 4 on ormar: the blog schema as ormar models, each shape through ormar's QuerySet API.

The connection, pragmas, durability read-back and restore are the Tests 1-3 arm's
(:class:`~pytest_ormbench.suites.ormar_arm.OrmarArm`: one ``ormar.DatabaseConnection`` whose SQLAlchemy
``AsyncEngine`` pool holds one connection, on aiosqlite, asyncpg or aiomysql); only the models differ: six
models on a fresh ``MetaData`` per ``open()`` (an ``OrmarConfig`` binds the connection).

Relations: ``Post.user`` and ``Comment.post`` are ``ormar.ForeignKey`` with ``ondelete="CASCADE"`` (the
schema's ON DELETE CASCADE does ``delete_cascade``'s work), reverse names ``posts`` and ``comments``;
``Post.tags`` is ``ormar.ManyToMany(Tag, through=PostTag)`` with ``through_relation_name="post_id"`` and
``through_reverse_relation_name="tag_id"`` (ormar would name them ``post`` and ``tag``; ormar itself declares
the link columns' foreign keys ON DELETE CASCADE). ormar has no composite primary key, so its through model
``PostTag`` has an ``id`` primary key of its own; (post_id, tag_id) is a unique key and tag_id is indexed
(both added to the through model's SQLAlchemy table once ormar has added the link columns). Every model orders by ``id`` (``OrmarConfig(order_by=["id"])``, ormar's default too),
and the many-to-many relation by the tag's id (``orders_by=["id"]``): lazy loads, joins and prefetches come
back in the canonical order.

Strategies (ormar's names): ``lazy`` (per object ``await user.posts.all()``, ``await post.user.load()``,
``await post.tags.all()``), ``select_related`` (one query with LEFT OUTER JOINs, also for to-many relations;
``limit``/``offset`` apply to the main model through a subquery), ``prefetch_related`` (one more query per
relation level with the parents' keys in ``IN (...)``).

What ormar has no API for is written with SQLAlchemy Core on the ormar models' own tables
(``Model.ormar_config.table``) and run through ormar's query executor on its one connection: relation counts
and GROUP BY (``users_post_count``, ``org_stats``, the dashboard's users per organization) and the in-database
increment (ormar's ``QuerySet.update`` takes values, it has no F-expression).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import ormar
import sqlalchemy

from pytest_ormbench.arms.relational import (RelationalArm, StreamTotals, declared, post_dict, posts_with_author,
    posts_with_author_async, posts_with_tags, posts_with_tags_async, user_dict, users_with_posts,
    users_with_posts_async, users_with_posts_comments, users_with_posts_comments_async)
from pytest_ormbench.arms.sql import SqlTables
from pytest_ormbench.suites.ormar_arm import OrmarArm


def build_relational_models(database: ormar.DatabaseConnection) -> tuple[dict[str, type], sqlalchemy.MetaData]:
    """The six models (Org, User, Post, Comment, Tag and the through model PostTag) on a fresh MetaData."""
    metadata = sqlalchemy.MetaData()

    def config(table: str, **kw: Any) -> ormar.OrmarConfig:
        return ormar.OrmarConfig(database=database, metadata=metadata, tablename=table, order_by=["id"], **kw)

    class Org(ormar.Model):
        ormar_config = config("rel_org")
        id: int = ormar.Integer(primary_key=True)
        name: str = ormar.String(max_length=100)

    class User(ormar.Model):
        ormar_config = config("rel_user")
        id: int = ormar.Integer(primary_key=True)
        organization: Optional[Org] = ormar.ForeignKey(Org, name="organization_id", related_name="users",
                                                       nullable=False, index=True)
        email: str = ormar.String(max_length=254, unique=True)
        name: str = ormar.String(max_length=100)

    class Tag(ormar.Model):
        ormar_config = config("rel_tag")
        id: int = ormar.Integer(primary_key=True)
        name: str = ormar.String(max_length=50, unique=True)

    class PostTag(ormar.Model):
        # ormar has no composite primary key: the through model has an id of its own
        ormar_config = config("rel_post_tag")
        id: int = ormar.Integer(primary_key=True)

    class Post(ormar.Model):
        ormar_config = config("rel_post")
        id: int = ormar.Integer(primary_key=True)
        user: Optional[User] = ormar.ForeignKey(User, name="user_id", related_name="posts", nullable=False,
                                                index=True, ondelete="CASCADE")
        title: str = ormar.String(max_length=200)
        published: bool = ormar.Boolean()
        views: int = ormar.Integer()
        likes: int = ormar.Integer()
        tags: Optional[list[Tag]] = ormar.ManyToMany(
            Tag, through=PostTag, related_name="posts", orders_by=["id"],
            through_relation_name="post_id", through_reverse_relation_name="tag_id",
            through_relation_nullable=False, through_reverse_relation_nullable=False)

    class Comment(ormar.Model):
        ormar_config = config("rel_comment")
        id: int = ormar.Integer(primary_key=True)
        post: Optional[Post] = ormar.ForeignKey(Post, name="post_id", related_name="comments", nullable=False,
                                                index=True, ondelete="CASCADE")
        body: str = ormar.Text()

    # the link columns exist once ManyToMany has added them: (post_id, tag_id) unique (ormar.UniqueColumns in
    # the through model's config is checked before they exist), tag_id indexed, on the SQLAlchemy table
    link = PostTag.ormar_config.table
    link.append_constraint(sqlalchemy.UniqueConstraint(link.c.post_id, link.c.tag_id, name="uq_rel_post_tag"))
    sqlalchemy.Index("ix_rel_post_tag_tag_id", link.c.tag_id)
    return {"Org": Org, "User": User, "Tag": Tag, "PostTag": PostTag, "Post": Post, "Comment": Comment}, metadata


class OrmarRelational(RelationalArm, OrmarArm):
    name = "ormar"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)

    def tables(self) -> SqlTables:
        return SqlTables("rel_user")

    async def _connect(self, url: str) -> None:
        """The Tests 1-3 arm's engine (a pool of one connection), with Test 4's models bound to it."""
        self.db = ormar.DatabaseConnection(url, pool_size=1, max_overflow=0)
        models, self.metadata = build_relational_models(self.db)
        for name, cls in models.items():
            setattr(self, name, cls)
        await self.db.connect()

    async def create_schema(self) -> None:
        assert self.db is not None
        async with self.db.engine.begin() as conn:
            await conn.run_sync(self.metadata.create_all)

    async def _core(self, statement: Any) -> list[Any]:
        """Rows of a SQLAlchemy Core statement on ormar's query executor (its one connection)."""
        async with self.db.get_query_executor() as executor:
            return [tuple(r.values()) for r in await executor.fetch_all(statement)]

    # -- nested reads -------------------------------------------------------------------------------------
    async def _users_page(self, strategy: str, qs: Any, depth: int) -> list[dict[str, Any]]:
        if strategy == "lazy":
            users = await qs.all()
            if depth == 2:
                return await users_with_posts_async(users, lambda u: u.posts.all())
            return await users_with_posts_comments_async(users, lambda u: u.posts.all(), lambda p: p.comments.all())
        rel = "posts" if depth == 2 else "posts__comments"
        qs = qs.select_related(rel) if strategy == "select_related" else qs.prefetch_related(rel)
        users = await qs.all()
        if depth == 2:
            return users_with_posts(users, lambda u: u.posts)
        return users_with_posts_comments(users, lambda u: u.posts, lambda p: p.comments)

    async def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        User = self.User
        return [await self._users_page(strategy, User.objects.order_by("id").offset(o).limit(limit), 2)
                for o in offsets]

    async def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        User = self.User
        return [await self._users_page(strategy, User.objects.order_by("id").offset(o).limit(limit), 3)
                for o in offsets]

    async def user_deep(self, strategy: str, user_ids: Sequence[int]) -> Any:
        User, out = self.User, []
        for uid in user_ids:
            out.extend(await self._users_page(strategy, User.objects.filter(id=uid), 3))
        return out

    async def posts_authors(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        Post, out = self.Post, []
        for o in offsets:
            qs = Post.objects.order_by("id").offset(o).limit(limit)
            if strategy == "lazy":
                posts = await qs.all()
                out.append(await posts_with_author_async(posts, lambda p: p.user.load(),
                                                         lambda u: u.organization.load()))
                continue
            qs = (qs.select_related("user__organization") if strategy == "select_related"
                  else qs.prefetch_related("user__organization"))
            out.append(posts_with_author(await qs.all(), lambda p: p.user, lambda u: u.organization))
        return out

    async def posts_tags(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        Post, out = self.Post, []
        for o in offsets:
            qs = Post.objects.order_by("id").offset(o).limit(limit)
            if strategy == "lazy":
                out.append(await posts_with_tags_async(await qs.all(), lambda p: p.tags.all()))
                continue
            qs = qs.select_related("tags") if strategy == "select_related" else qs.prefetch_related("tags")
            out.append(posts_with_tags(await qs.all(), lambda p: p.tags))
        return out

    # -- flat reads -----------------------------------------------------------------------------------------
    async def users_filter(self, views: int, offsets: Sequence[int], limit: int) -> Any:
        User = self.User
        out = []
        for o in offsets:
            users = await (User.objects.filter(posts__published=True, posts__views__gt=views)
                           .order_by("id").offset(o).limit(limit).all())
            out.append([user_dict(u) for u in users])
        return out

    async def users_post_count(self, offsets: Sequence[int], limit: int) -> Any:
        u, p = self.User.ormar_config.table, self.Post.ormar_config.table
        count = (sqlalchemy.select(sqlalchemy.func.count()).select_from(p).where(p.c.user_id == u.c.id)
                 .scalar_subquery())
        out = []
        for o in offsets:
            rows = await self._core(sqlalchemy.select(u.c.id, u.c.name, count).order_by(u.c.id)
                                    .limit(limit).offset(o))
            out.append([{"id": r[0], "name": r[1], "post_count": r[2]} for r in rows])
        return out

    async def org_stats(self, thresholds: Sequence[int]) -> Any:
        u, p = self.User.ormar_config.table, self.Post.ormar_config.table
        out = []
        for t in thresholds:
            rows = await self._core(
                sqlalchemy.select(u.c.organization_id, sqlalchemy.func.count(), sqlalchemy.func.avg(p.c.views))
                .select_from(p.join(u, u.c.id == p.c.user_id)).where(p.c.views >= t)
                .group_by(u.c.organization_id).order_by(u.c.organization_id))
            out.append([{"id": r[0], "posts": r[1], "avg_views": float(r[2])} for r in rows])
        return out

    async def count_filter(self, thresholds: Sequence[int]) -> Any:
        Post = self.Post
        return [await Post.objects.filter(published=True, views__gt=t).count() for t in thresholds]

    async def page_offset(self, offset: int, limit: int, repeats: int) -> Any:
        Post = self.Post
        return [[post_dict(p) for p in await Post.objects.order_by("id").offset(offset).limit(limit).all()]
                for _ in range(repeats)]

    async def page_keyset(self, after_id: int, limit: int, repeats: int) -> Any:
        Post = self.Post
        return [[post_dict(p) for p in await Post.objects.filter(id__gt=after_id).order_by("id").limit(limit).all()]
                for _ in range(repeats)]

    async def stream_comments(self, batch: int) -> Any:
        # QuerySet.iterate() has no batch size: it streams rows over SQLAlchemy's AsyncConnection.stream()
        # (a server-side cursor) in a transaction of its own and yields one model per row
        totals = StreamTotals()
        async for c in self.Comment.objects.iterate():
            totals.add(c.id, c.body)
        return totals.result()

    async def hot_get(self, ids: Sequence[int]) -> Any:
        Post = self.Post
        return [post_dict(await Post.objects.get(id=i)) for i in ids]

    async def dashboard(self, strategy: str, repeats: int) -> Any:
        User, Post = self.User, self.Post
        u = User.ormar_config.table
        per_org = (sqlalchemy.select(u.c.organization_id, sqlalchemy.func.count()).group_by(u.c.organization_id)
                   .order_by(u.c.organization_id))
        out = []
        for _ in range(repeats):
            async with self.db.transaction():
                users = await User.objects.count()
                published = await Post.objects.filter(published=True).count()
                latest = await Post.objects.order_by("-id").limit(10).all()
                top = await Post.objects.order_by(["-views", "id"]).limit(5).all()
                orgs = await self._core(per_org)
            out.append({"users": users, "published": published,
                        "latest": [{"id": p.id, "title": p.title} for p in latest],
                        "top": [{"id": p.id, "views": p.views} for p in top],
                        "per_org": [{"id": r[0], "users": r[1]} for r in orgs]})
        return out

    # -- writes ---------------------------------------------------------------------------------------------
    async def increment(self, post_ids: Sequence[int]) -> None:
        t = self.Post.ormar_config.table
        async with self.db.transaction():
            async with self.db.get_query_executor() as executor:
                for pid in post_ids:
                    await executor.execute(t.update().where(t.c.id == pid).values(likes=t.c.likes + 1))

    async def upsert(self, rows: Sequence[Mapping[str, Any]]) -> None:
        User = self.User
        async with self.db.transaction():
            for r in rows:
                user, created = await User.objects.get_or_create(
                    email=r["email"], _defaults={"name": r["name"], "organization": r["organization_id"]})
                if not created:
                    await user.update(_columns=["name"], name=r["name"])

    async def nested_create(self, users: Sequence[Mapping[str, Any]]) -> None:
        User, Post, Tag = self.User, self.Post, self.Tag
        async with self.db.transaction():
            wanted = sorted({t for u in users for p in u["posts"] for t in p["tag_ids"]})
            tags = {t.id: t for t in await Tag.objects.filter(id__in=wanted).all()}
            for u in users:
                user = await User.objects.create(email=u["email"], name=u["name"],
                                                 organization=u["organization_id"])
                for p in u["posts"]:
                    post = await Post.objects.create(user=user, title=p["title"], published=False, views=0, likes=0)
                    for t in p["tag_ids"]:
                        await post.tags.add(tags[t])

    async def delete_cascade(self, user_ids: Sequence[int]) -> None:
        # the posts, their comments and links go by the schema's ON DELETE CASCADE
        async with self.db.transaction():
            await self.User.objects.filter(id__in=list(user_ids)).delete()

    async def bulk_update(self, views_below: int, likes: int) -> None:
        async with self.db.transaction():
            await self.Post.objects.filter(views__lt=views_below).update(likes=likes)
