"""Test 4 on Tortoise ORM: the relational shapes through Tortoise's own models, querysets and relations.

The arm is the Tests 1-3 :class:`~pytest_ormbench.suites.tortoise_arm.TortoiseArm` (its ``TortoiseContext``,
its one connection per database: aiosqlite, asyncpg and asyncmy with pools of one, its pragmas and restore)
with the five relational models registered instead of a ``journal_*`` model: ``_init`` is overridden to hand
``Tortoise.init`` this module's ``__models__`` under the same app label.

The schema is Tortoise's ``generate_schemas``: ``IntField(primary_key=True)`` ids (auto-increment), foreign keys
with ``db_index=True`` and ``on_delete=CASCADE`` (``ForeignKeyField``; Tortoise writes it into the schema as
``REFERENCES ... ON DELETE CASCADE`` and its ``delete()`` sends one DELETE, so the database does the cascade),
``unique=True`` e-mail and tag name, and ``Post.tags``, a ``ManyToManyField`` whose ``through="rel_post_tag"``
names the link table and ``backward_key="post_id"`` / ``forward_key="tag_id"`` its two columns. Tortoise has no
through model: its generated link table has no primary key but a UNIQUE index on (post_id, tag_id), which is
the link's key; it does not index the forward column alone, so :meth:`create_schema` adds the index on
``tag_id`` (as the Tests 1-3 arm does for its link table).

Tortoise keeps no identity map and no query cache: every query of a read goes to the database, so a read
needs no fresh session. Strategies: ``lazy`` awaits each object's relation (``user.posts.all().order_by("id")``,
``await post.author``, ``post.tags.all().order_by("id")``), one query per parent; ``prefetch_related`` (one
more query per relation level, ``IN (...)``; the to-many relations ordered through ``Prefetch`` querysets);
``select_related`` (one query joining the foreign keys; Tortoise follows only to-one relations with it).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pypika_tortoise import functions as sql_functions
from pypika_tortoise.terms import Parameter, Values
from tortoise import Tortoise, fields
from tortoise.expressions import Aggregate, F
from tortoise.functions import Count
from tortoise.models import Model
from tortoise.query_utils import Prefetch
from tortoise.transactions import in_transaction

from pytest_ormbench.arms.relational import (RelationalArm, StreamTotals, declared, post_dict, posts_with_author,
    posts_with_author_async, posts_with_tags, posts_with_tags_async, user_dict, users_with_posts,
    users_with_posts_async, users_with_posts_comments, users_with_posts_comments_async)
from pytest_ormbench.arms.sql import AiosqliteArm
from pytest_ormbench.suites.tortoise_arm import APP, TortoiseArm
from pytest_ormbench.workload.spec import ModelSpec, Settings


# --------------------------------------------------------------------------
# The models (registered under the Tests 1-3 arm's app label)
# --------------------------------------------------------------------------

class Organization(Model):
    id = fields.IntField(primary_key=True)
    name = fields.CharField(max_length=100)

    class Meta:
        table = "rel_org"
        app = APP


class User(Model):
    id = fields.IntField(primary_key=True)
    # nothing in the workload deletes an organization: RESTRICT rather than Tortoise's default CASCADE
    organization: fields.ForeignKeyRelation[Organization] = fields.ForeignKeyField(
        f"{APP}.Organization", related_name="users", on_delete=fields.RESTRICT, db_index=True)
    email = fields.CharField(max_length=254, unique=True)
    name = fields.CharField(max_length=100)

    class Meta:
        table = "rel_user"
        app = APP


class Post(Model):
    id = fields.IntField(primary_key=True)
    # attribute ``author`` (``author_id``), column ``user_id``
    author: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        f"{APP}.User", related_name="posts", source_field="user_id", on_delete=fields.CASCADE, db_index=True)
    title = fields.CharField(max_length=200)
    published = fields.BooleanField()
    views = fields.IntField()
    likes = fields.IntField()
    tags: fields.ManyToManyRelation[Tag] = fields.ManyToManyField(
        f"{APP}.Tag", related_name="posts", through="rel_post_tag", backward_key="post_id", forward_key="tag_id",
        on_delete=fields.CASCADE)

    class Meta:
        table = "rel_post"
        app = APP


class Comment(Model):
    id = fields.IntField(primary_key=True)
    post: fields.ForeignKeyRelation[Post] = fields.ForeignKeyField(
        f"{APP}.Post", related_name="comments", on_delete=fields.CASCADE, db_index=True)
    body = fields.TextField()

    class Meta:
        table = "rel_comment"
        app = APP


class Tag(Model):
    id = fields.IntField(primary_key=True)
    name = fields.CharField(max_length=50, unique=True)

    class Meta:
        table = "rel_tag"
        app = APP


__models__ = [Organization, User, Post, Comment, Tag]


class FloatAvg(Aggregate):
    """``AVG`` as its value comes back: Tortoise's own ``Avg`` sets ``populate_field_object``, so an average of an
    IntField is handed back through ``IntField.to_python_value`` and truncated to an int. A custom aggregate
    (Tortoise's documented way: an ``Aggregate`` subclass naming the pypika function) without it."""

    database_func = sql_functions.Avg


def _posts_ordered() -> Prefetch:
    return Prefetch("posts", queryset=Post.all().order_by("id"))


def _posts_with_comments_ordered() -> Prefetch:
    return Prefetch("posts", queryset=Post.all().order_by("id").prefetch_related(
        Prefetch("comments", queryset=Comment.all().order_by("id"))))


# --------------------------------------------------------------------------
# The arm
# --------------------------------------------------------------------------

class TortoiseRelational(RelationalArm, TortoiseArm):
    name = "tortoise"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)

    def __init__(self, model: ModelSpec, settings: Settings) -> None:
        # TortoiseArm.__init__ looks up a journal_* model class by the model's name: the relational model has none
        AiosqliteArm.__init__(self, model, settings)
        self.cls = None
        self.names = ()
        self.client = None
        self.paramstyle = "qmark"

    async def _init(self, name: str, connection: Any) -> None:
        """``Tortoise.init`` with the one connection ``name`` and the relational models (this module)."""
        config = {
            "connections": {name: connection},
            "apps": {APP: {"models": [__name__], "default_connection": name}},
            "use_tz": False,
        }
        await Tortoise.init(config=config)
        self.client = Tortoise.get_connection(name)
        await self.client.create_connection(with_db=True)

    async def create_schema(self) -> None:
        await Tortoise.generate_schemas(safe=False)
        # the generated link table is keyed by UNIQUE(post_id, tag_id) only: tag_id alone gets its own index
        q = self._quote
        await self.client.execute_script(
            f"CREATE INDEX {q('idx_rel_post_tag_tag_id')} ON {q('rel_post_tag')} ({q('tag_id')})")

    # -- nested reads -------------------------------------------------------------------------------------
    async def _users_page(self, strategy: str, offset: int, limit: int, depth: int) -> list[dict[str, Any]]:
        qs = User.all().order_by("id").offset(offset).limit(limit)
        if strategy == "lazy":
            users = await qs
            if depth == 2:
                return await users_with_posts_async(users, lambda u: u.posts.all().order_by("id"))
            return await users_with_posts_comments_async(users, lambda u: u.posts.all().order_by("id"),
                                                         lambda p: p.comments.all().order_by("id"))
        if strategy == "prefetch_related":
            if depth == 2:
                return users_with_posts(await qs.prefetch_related(_posts_ordered()), lambda u: u.posts)
            return users_with_posts_comments(await qs.prefetch_related(_posts_with_comments_ordered()),
                                             lambda u: u.posts, lambda p: p.comments)
        raise ValueError(strategy)

    async def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        return [await self._users_page(strategy, o, limit, 2) for o in offsets]

    async def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        return [await self._users_page(strategy, o, limit, 3) for o in offsets]

    async def user_deep(self, strategy: str, user_ids: Sequence[int]) -> Any:
        out = []
        for uid in user_ids:
            if strategy == "lazy":
                user = await User.get(id=uid)
                out.extend(await users_with_posts_comments_async(
                    [user], lambda u: u.posts.all().order_by("id"), lambda p: p.comments.all().order_by("id")))
            elif strategy == "prefetch_related":
                user = await User.get(id=uid).prefetch_related(_posts_with_comments_ordered())
                out.extend(users_with_posts_comments([user], lambda u: u.posts, lambda p: p.comments))
            else:
                raise ValueError(strategy)
        return out

    async def posts_authors(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        out = []
        for o in offsets:
            qs = Post.all().order_by("id").offset(o).limit(limit)
            if strategy == "lazy":
                # an unloaded foreign key is an awaitable query (``await post.author``)
                out.append(await posts_with_author_async(await qs, lambda p: p.author, lambda a: a.organization))
            elif strategy == "select_related":
                out.append(posts_with_author(await qs.select_related("author__organization"),
                                             lambda p: p.author, lambda a: a.organization))
            elif strategy == "prefetch_related":
                out.append(posts_with_author(await qs.prefetch_related("author__organization"),
                                             lambda p: p.author, lambda a: a.organization))
            else:
                raise ValueError(strategy)
        return out

    async def posts_tags(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        out = []
        for o in offsets:
            qs = Post.all().order_by("id").offset(o).limit(limit)
            if strategy == "lazy":
                out.append(await posts_with_tags_async(await qs, lambda p: p.tags.all().order_by("id")))
            elif strategy == "prefetch_related":
                posts = await qs.prefetch_related(Prefetch("tags", queryset=Tag.all().order_by("id")))
                out.append(posts_with_tags(posts, lambda p: p.tags))
            else:
                raise ValueError(strategy)
        return out

    # -- flat reads ---------------------------------------------------------------------------------------
    async def users_filter(self, views: int, offsets: Sequence[int], limit: int) -> Any:
        out = []
        for o in offsets:
            users = await (User.filter(posts__published=True, posts__views__gt=views).distinct()
                           .order_by("id").offset(o).limit(limit))
            out.append([user_dict(u) for u in users])
        return out

    async def users_post_count(self, offsets: Sequence[int], limit: int) -> Any:
        out = []
        for o in offsets:
            users = await User.annotate(post_count=Count("posts")).order_by("id").offset(o).limit(limit)
            out.append([{"id": u.id, "name": u.name, "post_count": u.post_count} for u in users])
        return out

    async def org_stats(self, thresholds: Sequence[int]) -> Any:
        out = []
        for t in thresholds:
            rows = await (Post.filter(views__gte=t).annotate(n=Count("id"), avg_views=FloatAvg("views"))
                          .group_by("author__organization_id").order_by("author__organization_id")
                          .values("author__organization_id", "n", "avg_views"))
            out.append([{"id": r["author__organization_id"], "posts": r["n"], "avg_views": float(r["avg_views"])}
                        for r in rows])
        return out

    async def count_filter(self, thresholds: Sequence[int]) -> Any:
        return [await Post.filter(published=True, views__gt=t).count() for t in thresholds]

    async def page_offset(self, offset: int, limit: int, repeats: int) -> Any:
        return [[post_dict(p) for p in await Post.all().order_by("id").offset(offset).limit(limit)]
                for _ in range(repeats)]

    async def page_keyset(self, after_id: int, limit: int, repeats: int) -> Any:
        return [[post_dict(p) for p in await Post.filter(id__gt=after_id).order_by("id").limit(limit)]
                for _ in range(repeats)]

    async def stream_comments(self, batch: int) -> Any:
        # Tortoise has no server-side cursor (a queryset's ``async for`` fetches the whole result first): keyset
        # chunks of ``batch`` model objects
        totals, last = StreamTotals(), 0
        while True:
            chunk = await Comment.filter(id__gt=last).order_by("id").limit(batch)
            for c in chunk:
                totals.add(c.id, c.body)
            if len(chunk) < batch:
                break
            last = chunk[-1].id
        return totals.result()

    async def hot_get(self, ids: Sequence[int]) -> Any:
        return [post_dict(await Post.get(id=i)) for i in ids]

    async def dashboard(self, strategy: str, repeats: int) -> Any:
        if strategy != "sequential":
            raise ValueError(strategy)
        out = []
        for _ in range(repeats):
            async with in_transaction():
                users = await User.all().count()
                published = await Post.filter(published=True).count()
                latest = await Post.all().order_by("-id").limit(10)
                top = await Post.all().order_by("-views", "id").limit(5)
                per_org = await (User.annotate(n=Count("id")).group_by("organization_id")
                                 .order_by("organization_id").values("organization_id", "n"))
            out.append({"users": users, "published": published,
                        "latest": [{"id": p.id, "title": p.title} for p in latest],
                        "top": [{"id": p.id, "views": p.views} for p in top],
                        "per_org": [{"id": r["organization_id"], "users": r["n"]} for r in per_org]})
        return out

    # -- writes ---------------------------------------------------------------------------------------------
    async def increment(self, post_ids: Sequence[int]) -> None:
        async with in_transaction():
            for pid in post_ids:
                await Post.filter(id=pid).update(likes=F("likes") + 1)

    async def upsert(self, rows: Sequence[Mapping[str, Any]]) -> None:
        if self.dialect.mysql_like:
            await self._upsert_mariadb(rows)
            return
        users = [User(email=r["email"], name=r["name"], organization_id=r["organization_id"]) for r in rows]
        async with in_transaction():
            # one executemany of INSERT ... ON CONFLICT (email) DO UPDATE SET name = EXCLUDED.name
            await User.bulk_create(users, on_conflict=["email"], update_fields=["name"])

    async def _upsert_mariadb(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """MariaDB: Tortoise's ``bulk_create(on_conflict=..., update_fields=...)`` renders MySQL 8.0.19's row alias
        (``INSERT ... VALUES (...) AS new_rel_user ON DUPLICATE KEY UPDATE name = new_rel_user.name``), which
        MariaDB rejects (a syntax error; tortoise-orm issues #1077, #1422). The same statement in MariaDB's form,
        ``ON DUPLICATE KEY UPDATE name = VALUES(name)``, is built with Tortoise's own query builder (pypika_tortoise,
        the client's ``query_class``) and sent as one executemany, as ``bulk_create`` sends its own."""
        columns = ("organization_id", "email", "name")
        insert = (self.client.query_class.into(User._meta.basetable).columns(*columns)
                  .insert(*(Parameter("%s") for _ in columns)).on_conflict().do_update("name", Values("name")))
        values = [[r["organization_id"], r["email"], r["name"]] for r in rows]
        async with in_transaction() as conn:
            await conn.execute_many(insert.get_sql(), values)

    async def nested_create(self, users: Sequence[Mapping[str, Any]]) -> None:
        async with in_transaction():
            wanted = sorted({t for u in users for p in u["posts"] for t in p["tag_ids"]})
            tags = {t.id: t for t in await Tag.filter(id__in=wanted)}
            for u in users:
                user = await User.create(email=u["email"], name=u["name"], organization_id=u["organization_id"])
                for p in u["posts"]:
                    post = await Post.create(author=user, title=p["title"], published=False, views=0, likes=0)
                    await post.tags.add(*(tags[t] for t in p["tag_ids"]))

    async def delete_cascade(self, user_ids: Sequence[int]) -> None:
        # one DELETE of the users: the schema's ON DELETE CASCADE removes their posts, comments and links
        async with in_transaction():
            await User.filter(id__in=list(user_ids)).delete()

    async def bulk_update(self, views_below: int, likes: int) -> None:
        async with in_transaction():
            await Post.filter(views__lt=views_below).update(likes=likes)

