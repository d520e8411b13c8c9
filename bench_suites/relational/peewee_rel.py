"""Test 4 on peewee: the blog schema as peewee models, each shape through peewee's own query API.

The class subclasses the Tests 1-3 arm (:class:`~pytest_ormbench.suites.peewee_arm.PeeweeArm`) for its
connections (stdlib sqlite3 with the suite's pragmas, psycopg2, PyMySQL: peewee opens each in autocommit mode
and sends ``BEGIN``/``COMMIT`` itself inside ``db.atomic()``), its pragma read-back and its restore; only the
models differ: ``_bind`` builds the six relational models on the deferred database instead of the journal.

On PostgreSQL the models are bound to ``playhouse.postgres_ext.PostgresqlExtDatabase`` (peewee's PostgreSQL
database with the extensions, the same psycopg2 adapter and connection settings) because its server-side cursor
helper ``ServerSide`` needs that class: it is what ``stream_comments`` uses there.

Loading, as peewee's documentation ("Relationships and Joins") prescribes it:

* ``lazy``: attribute access per object. A foreign key (``post.user``) issues a SELECT on first access; a
  back-reference (``user.posts``) is a pre-filtered query, ordered here with ``.order_by(Post.id)``; the
  many-to-many goes through ``ManyToManyField`` (``post.tags``), with the explicit through model ``PostTag``.
* ``prefetch``: :func:`peewee.prefetch`, one query per model, each restricted to the parents by a subquery
  (``IN (SELECT ...)``, peewee's default ``PREFETCH_TYPE.WHERE``); the to-one prefetch fills ``post.user`` and
  ``user.organization``; the many-to-many prefetches the through rows (``post.post_tags``) and their tags.
* ``join``: ``select(Post, User, Organization).join(User).join(Organization)``: peewee rebuilds the to-one graph
  from the joined row. For to-many relations peewee documents no join that groups the rows (``aggregate_rows``
  was removed in 3.0; 4.5 has none); its documentation sends the to-many direction to ``prefetch`` ("Deduplicating
  those rows in application code is awkward and error-prone"), so those cells are declared, not emulated.

Deletes: the foreign keys on the delete path are declared ``on_delete='CASCADE'`` and the users are deleted with
one ``User.delete().where(...)``; peewee's documentation warns that ``delete_instance(recursive=True)`` deletes in
Python-orchestrated batches and recommends the database's cascade (SQLite: ``foreign_keys=ON``, the suite's
setting).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import peewee as pw
from playhouse.postgres_ext import PostgresqlExtDatabase, ServerSide

from pytest_ormbench.arms.relational import (RelationalArm, StreamTotals, declared, posts_with_author,
    posts_with_tags, users_with_posts, users_with_posts_comments)
from pytest_ormbench.arms.sql import SqliteArm, SqlTables
from pytest_ormbench.suites.peewee_arm import PeeweeArm, _dist_version


class RelationalModels:
    """The six models bound to one database (built per database kind, as the Tests 1-3 arm builds its own)."""

    def __init__(self, db: pw.Database) -> None:
        class Base(pw.Model):
            class Meta:
                database = db

        class Organization(Base):
            name = pw.CharField(max_length=100)

            class Meta:
                table_name = "rel_org"

        class User(Base):
            organization = pw.ForeignKeyField(Organization, backref="users", column_name="organization_id")
            email = pw.CharField(max_length=254, unique=True)
            name = pw.CharField(max_length=100)

            class Meta:
                table_name = "rel_user"

        class Tag(Base):
            name = pw.CharField(max_length=50, unique=True)

            class Meta:
                table_name = "rel_tag"

        through = pw.DeferredThroughModel()

        class Post(Base):
            user = pw.ForeignKeyField(User, backref="posts", column_name="user_id", on_delete="CASCADE")
            title = pw.CharField(max_length=200)
            published = pw.BooleanField()
            views = pw.IntegerField()
            likes = pw.IntegerField()
            tags = pw.ManyToManyField(Tag, backref="posts", through_model=through)

            class Meta:
                table_name = "rel_post"

        class Comment(Base):
            post = pw.ForeignKeyField(Post, backref="comments", column_name="post_id", on_delete="CASCADE")
            body = pw.TextField()

            class Meta:
                table_name = "rel_comment"

        class PostTag(Base):
            """The explicit through model (peewee's recommended many-to-many), keyed by (post_id, tag_id)."""

            # the primary key (post_id, tag_id) indexes post_id already: no second index on it
            post = pw.ForeignKeyField(Post, backref="post_tags", column_name="post_id", on_delete="CASCADE",
                                      index=False)
            tag = pw.ForeignKeyField(Tag, backref="post_tags", column_name="tag_id")

            class Meta:
                table_name = "rel_post_tag"
                primary_key = pw.CompositeKey("post", "tag")

        through.set_model(PostTag)
        self.Organization, self.User, self.Post = Organization, User, Post
        self.Comment, self.Tag, self.PostTag = Comment, Tag, PostTag
        #: in dependency order (create_tables sorts them too)
        self.all = [Organization, User, Post, Comment, Tag, PostTag]


class PeeweeRelational(RelationalArm, PeeweeArm):
    name = "peewee"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)

    m: RelationalModels

    # -- the models on the arm's database ----------------------------------------------------------------
    def _bind(self, db: Any) -> None:
        self.db = db
        self.m = RelationalModels(db)

    def open_postgresql(self, location: Any) -> None:
        # ServerSide (stream_comments) needs the extensions' database class; same psycopg2 connection otherwise
        if not isinstance(self.db, PostgresqlExtDatabase):
            self._bind(PostgresqlExtDatabase(None))
        super().open_postgresql(location)

    def create_schema(self) -> None:
        self.db.create_tables(self.m.all)

    def tables(self) -> SqlTables:
        raise NotImplementedError("Test 4 reads its tables back through the harness")

    def describe(self) -> dict[str, Any]:
        return {
            **SqliteArm.describe(self),
            "postgresql_driver": f"psycopg2 {_dist_version('psycopg2', 'psycopg2-binary')} "
                                 "(playhouse.postgres_ext.PostgresqlExtDatabase, for ServerSide)",
            "mysql_driver": f"PyMySQL {_dist_version('PyMySQL')} (peewee MySQLDatabase's first adapter)",
            "prefetch_type": "PREFETCH_TYPE.WHERE (peewee's default: IN (subquery))",
        }

    # -- nested reads ------------------------------------------------------------------------------------
    def _users_page(self, offset: int, limit: int) -> pw.ModelSelect:
        User = self.m.User
        return User.select().order_by(User.id).limit(limit).offset(offset)

    def _posts_of(self) -> Any:
        Post = self.m.Post
        return lambda u: u.posts.order_by(Post.id)

    def _comments_of(self) -> Any:
        Comment = self.m.Comment
        return lambda p: p.comments.order_by(Comment.id)

    def _with_posts(self, strategy: str, users: pw.ModelSelect, depth: int) -> list[dict[str, Any]]:
        m = self.m
        if strategy == "lazy":
            if depth == 2:
                return users_with_posts(users, self._posts_of())
            return users_with_posts_comments(users, self._posts_of(), self._comments_of())
        if strategy == "prefetch":
            posts = m.Post.select().order_by(m.Post.id)
            if depth == 2:
                return users_with_posts(pw.prefetch(users, posts), lambda u: u.posts)
            comments = m.Comment.select().order_by(m.Comment.id)
            return users_with_posts_comments(pw.prefetch(users, posts, comments), lambda u: u.posts,
                                             lambda p: p.comments)
        raise ValueError(f"peewee: no strategy {strategy!r} for a to-many relation")

    def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        return [self._with_posts(strategy, self._users_page(o, limit), 2) for o in offsets]

    def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        return [self._with_posts(strategy, self._users_page(o, limit), 3) for o in offsets]

    def user_deep(self, strategy: str, user_ids: Sequence[int]) -> Any:
        User = self.m.User
        out = []
        for uid in user_ids:
            if strategy == "lazy":
                out.extend(users_with_posts_comments([User.get_by_id(uid)], self._posts_of(), self._comments_of()))
            else:
                out.extend(self._with_posts(strategy, User.select().where(User.id == uid), 3))
        return out

    def _posts_page(self, offset: int, limit: int) -> pw.ModelSelect:
        Post = self.m.Post
        return Post.select().order_by(Post.id).limit(limit).offset(offset)

    def posts_authors(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        m, out = self.m, []
        for o in offsets:
            if strategy == "lazy":
                posts: Any = self._posts_page(o, limit)
            elif strategy == "join":
                posts = (m.Post.select(m.Post, m.User, m.Organization)
                         .join(m.User).join(m.Organization)
                         .order_by(m.Post.id).limit(limit).offset(o))
            elif strategy == "prefetch":
                posts = pw.prefetch(self._posts_page(o, limit), m.User, m.Organization)
            else:
                raise ValueError(f"peewee: no strategy {strategy!r}")
            out.append(posts_with_author(posts, lambda p: p.user, lambda u: u.organization))
        return out

    def posts_tags(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        m, out = self.m, []
        for o in offsets:
            if strategy == "lazy":
                out.append(posts_with_tags(self._posts_page(o, limit), lambda p: p.tags.order_by(m.Tag.id)))
            elif strategy == "prefetch":
                # prefetch follows foreign keys: the through rows (ordered by tag id), then their tags
                posts = pw.prefetch(self._posts_page(o, limit), m.PostTag.select().order_by(m.PostTag.tag), m.Tag)
                out.append(posts_with_tags(posts, lambda p: [pt.tag for pt in p.post_tags]))
            else:
                raise ValueError(f"peewee: no strategy {strategy!r} for a many-to-many relation")
        return out

    # -- flat reads --------------------------------------------------------------------------------------
    def users_filter(self, views: int, offsets: Sequence[int], limit: int) -> Any:
        User, Post = self.m.User, self.m.Post
        popular = Post.select(Post.user).where((Post.published == True) & (Post.views > views))  # noqa: E712
        query = User.select().where(User.id.in_(popular)).order_by(User.id)
        return [[{"id": u.id, "name": u.name} for u in query.limit(limit).offset(o)] for o in offsets]

    def users_post_count(self, offsets: Sequence[int], limit: int) -> Any:
        User, Post = self.m.User, self.m.Post
        query = (User.select(User.id, User.name, pw.fn.COUNT(Post.id).alias("post_count"))
                 .join(Post, pw.JOIN.LEFT_OUTER)
                 .group_by(User.id, User.name)
                 .order_by(User.id))
        return [[{"id": u.id, "name": u.name, "post_count": u.post_count} for u in query.limit(limit).offset(o)]
                for o in offsets]

    def org_stats(self, thresholds: Sequence[int]) -> Any:
        User, Post = self.m.User, self.m.Post
        out = []
        for t in thresholds:
            query = (Post.select(User.organization, pw.fn.COUNT(Post.id), pw.fn.AVG(Post.views))
                     .join(User)
                     .where(Post.views >= t)
                     .group_by(User.organization)
                     .order_by(User.organization))
            out.append([{"id": org, "posts": n, "avg_views": float(avg)} for org, n, avg in query.tuples()])
        return out

    def count_filter(self, thresholds: Sequence[int]) -> Any:
        Post = self.m.Post
        return [Post.select().where((Post.published == True) & (Post.views > t)).count()  # noqa: E712
                for t in thresholds]

    def page_offset(self, offset: int, limit: int, repeats: int) -> Any:
        Post = self.m.Post
        return [[{"id": p.id, "title": p.title, "views": p.views}
                 for p in Post.select().order_by(Post.id).limit(limit).offset(offset)] for _ in range(repeats)]

    def page_keyset(self, after_id: int, limit: int, repeats: int) -> Any:
        Post = self.m.Post
        return [[{"id": p.id, "title": p.title, "views": p.views}
                 for p in Post.select().where(Post.id > after_id).order_by(Post.id).limit(limit)]
                for _ in range(repeats)]

    def stream_comments(self, batch: int) -> Any:
        totals = StreamTotals()
        query = self.m.Comment.select()
        if isinstance(self.db, PostgresqlExtDatabase):
            # a named (server-side) psycopg2 cursor, fetched ``batch`` rows at a time; it lives in a transaction
            with self.db.atomic():
                for c in ServerSide(query, array_size=batch):
                    totals.add(c.id, c.body)
        else:
            # sqlite3 steps the statement row by row; PyMySQL's cursor has read the whole result first
            for c in query.iterator():
                totals.add(c.id, c.body)
        return totals.result()

    def hot_get(self, ids: Sequence[int]) -> Any:
        Post = self.m.Post
        out = []
        for i in ids:
            p = Post.get_by_id(i)
            out.append({"id": p.id, "title": p.title, "views": p.views})
        return out

    def dashboard(self, strategy: str, repeats: int) -> Any:
        User, Post = self.m.User, self.m.Post
        out = []
        for _ in range(repeats):
            with self.db.atomic():
                users = User.select().count()
                published = Post.select().where(Post.published == True).count()  # noqa: E712
                latest = [{"id": p.id, "title": p.title}
                          for p in Post.select(Post.id, Post.title).order_by(Post.id.desc()).limit(10)]
                top = [{"id": p.id, "views": p.views}
                       for p in Post.select(Post.id, Post.views).order_by(Post.views.desc(), Post.id).limit(5)]
                per_org = [{"id": u.organization_id, "users": u.users}
                           for u in (User.select(User.organization, pw.fn.COUNT(User.id).alias("users"))
                                     .group_by(User.organization).order_by(User.organization))]
            out.append({"users": users, "published": published, "latest": latest, "top": top, "per_org": per_org})
        return out

    # -- writes ------------------------------------------------------------------------------------------
    def increment(self, post_ids: Sequence[int]) -> None:
        Post = self.m.Post
        with self.db.atomic():
            for pid in post_ids:
                Post.update(likes=Post.likes + 1).where(Post.id == pid).execute()

    def upsert(self, rows: Sequence[Mapping[str, Any]]) -> None:
        User = self.m.User
        data = [{User.organization: r["organization_id"], User.email: r["email"], User.name: r["name"]} for r in rows]
        # PostgreSQL and SQLite name the conflicting unique key; MySQL's ON DUPLICATE KEY UPDATE takes none
        target = {} if isinstance(self.db, pw.MySQLDatabase) else {"conflict_target": [User.email]}
        with self.db.atomic():
            User.insert_many(data).on_conflict(preserve=[User.name], **target).execute()

    def nested_create(self, users: Sequence[Mapping[str, Any]]) -> None:
        User, Post = self.m.User, self.m.Post
        with self.db.atomic():
            for u in users:
                user = User.create(organization=u["organization_id"], email=u["email"], name=u["name"])
                for p in u["posts"]:
                    post = Post.create(user=user, title=p["title"], published=False, views=0, likes=0)
                    post.tags.add(p["tag_ids"])

    def delete_cascade(self, user_ids: Sequence[int]) -> None:
        User = self.m.User
        with self.db.atomic():
            # ON DELETE CASCADE on rel_post.user_id, rel_comment.post_id and rel_post_tag.post_id does the rest
            User.delete().where(User.id.in_(list(user_ids))).execute()

    def bulk_update(self, views_below: int, likes: int) -> None:
        Post = self.m.Post
        with self.db.atomic():
            Post.update(likes=likes).where(Post.views < views_below).execute()
