"""Test 4 on Django: its querysets, related managers, ``select_related`` and ``prefetch_related``.

The models are ``django_app.relational_models`` (the six canonical tables, ``PostTag`` the explicit through
model with a composite primary key). The connection is the Tests 1-3 arm's (:class:`DjangoArm`: one persistent
connection on sqlite3, psycopg 3 or mysqlclient, in autocommit). Django has no session or identity map: every
queryset is evaluated afresh, so nothing read in one call answers the next.

How each shape is written:

- relations are ordered where they are read: ``user.posts.order_by("id")`` (lazy: one query per parent, the
  related manager's N+1), ``Prefetch("posts", queryset=Post.objects.order_by("id"))`` (prefetch_related: one
  more query per level, ``WHERE user_id IN (...)``), ``select_related("user__organization")`` (one query with
  JOINs, to-one relations only);
- the relation filter is Django's documented multi-valued lookup in one ``filter()`` call (both conditions on
  the same post) with ``distinct()``; the relation count ``annotate(Count("posts"))``; the group-by
  ``values("user__organization_id").annotate(Count, Avg)``;
- the stream is ``QuerySet.iterator(chunk_size=batch)`` inside ``transaction.atomic()``: on PostgreSQL Django
  declares a server-side cursor (NO HOLD inside a transaction; in autocommit it would declare it WITH HOLD,
  which makes the server materialize the whole result first), on SQLite it reads with ``fetchmany`` in chunks;
  on MariaDB mysqlclient's default cursor holds the whole result on the client (Django has no server-side
  cursor there) and the iterator hands it out in chunks;
- writes run inside one ``transaction.atomic()``: ``filter(pk=...).update(likes=F("likes") + 1)`` per post,
  ``bulk_create(update_conflicts=True, ...)`` for the upsert, ``bulk_create`` per level for the nested create
  (ids come back by RETURNING), the queryset's ``delete()`` whose collector emulates ON DELETE CASCADE, and
  ``filter().update()`` for the bulk update.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pytest_ormbench.arms.relational import (RelationalArm, StreamTotals, declared, post_dict, posts_with_author,
    posts_with_tags, users_with_posts, users_with_posts_comments)
from pytest_ormbench.suites.django_arm import DjangoArm


def _models() -> Any:
    """The models and the query expressions the shapes use (imported once Django is set up)."""
    from types import SimpleNamespace

    from django.db.models import F, Avg, Count, Prefetch

    from pytest_ormbench.suites.django_app import relational_models as rm

    return SimpleNamespace(Org=rm.Org, User=rm.User, Post=rm.Post, Comment=rm.Comment, Tag=rm.Tag,
                           PostTag=rm.PostTag, RELATIONAL_MODELS=rm.RELATIONAL_MODELS, F=F, Avg=Avg, Count=Count,
                           Prefetch=Prefetch)


class DjangoRelational(RelationalArm, DjangoArm):
    name = "django"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)

    # -- the Tests 1-3 arm's model-specific parts ---------------------------------------------------------
    def _bind_model(self) -> None:
        # Test 4 has six models, not one: nothing to bind (self.Model stays None; the harness reads the
        # tables back itself)
        self.m = _models()

    def create_schema(self) -> None:
        conn = self._connection()
        with conn.schema_editor() as editor:
            for model in self.m.RELATIONAL_MODELS:
                editor.create_model(model)
        if self._pragmas_after_ddl:
            from pytest_ormbench.arms.sql import apply_pragmas

            # the SQLite schema editor switches foreign_keys off and back ON: reapply what was asked
            apply_pragmas(self.raw_connection(), self.settings)

    # -- the querysets of the nested reads ------------------------------------------------------------------
    def _posts_ordered(self) -> Any:
        return self.m.Post.objects.order_by("id")

    def _users(self, strategy: str, depth: int) -> Any:
        m = self.m
        users = m.User.objects.order_by("id")
        if strategy == "prefetch_related":
            if depth == 2:
                return users.prefetch_related(m.Prefetch("posts", queryset=self._posts_ordered()))
            return users.prefetch_related(
                m.Prefetch("posts", queryset=self._posts_ordered()),
                m.Prefetch("posts__comments", queryset=m.Comment.objects.order_by("id")))
        return users

    @staticmethod
    def _access(strategy: str) -> tuple[Any, Any]:
        """How a user's posts and a post's comments are reached: the prefetched ``.all()`` or, lazily, a query
        of the related manager per parent."""
        if strategy == "prefetch_related":
            return (lambda u: u.posts.all()), (lambda p: p.comments.all())
        return (lambda u: u.posts.order_by("id")), (lambda p: p.comments.order_by("id"))

    # -- nested reads --------------------------------------------------------------------------------------
    def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        users = self._users(strategy, 2)
        posts_of, _ = self._access(strategy)
        return [users_with_posts(users[o:o + limit], posts_of) for o in offsets]

    def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        users = self._users(strategy, 3)
        posts_of, comments_of = self._access(strategy)
        return [users_with_posts_comments(users[o:o + limit], posts_of, comments_of) for o in offsets]

    def user_deep(self, strategy: str, user_ids: Sequence[int]) -> Any:
        users = self._users(strategy, 3)
        posts_of, comments_of = self._access(strategy)
        out: list[Any] = []
        for uid in user_ids:
            # get() on a queryset with prefetch_related runs the prefetches for the one user
            out.extend(users_with_posts_comments([users.get(pk=uid)], posts_of, comments_of))
        return out

    def posts_authors(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        posts = self._posts_ordered()
        if strategy == "select_related":
            posts = posts.select_related("user__organization")
        elif strategy == "prefetch_related":
            posts = posts.prefetch_related("user__organization")
        # lazy: each post.user and user.organization is a query of its own on first access
        return [posts_with_author(posts[o:o + limit], lambda p: p.user, lambda u: u.organization) for o in offsets]

    def posts_tags(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        m = self.m
        posts = self._posts_ordered()
        if strategy == "prefetch_related":
            posts = posts.prefetch_related(m.Prefetch("tags", queryset=m.Tag.objects.order_by("id")))
            tags_of = lambda p: p.tags.all()  # noqa: E731
        else:
            tags_of = lambda p: p.tags.order_by("id")  # noqa: E731
        return [posts_with_tags(posts[o:o + limit], tags_of) for o in offsets]

    # -- flat reads ----------------------------------------------------------------------------------------
    def users_filter(self, views: int, offsets: Sequence[int], limit: int) -> Any:
        # conditions in one filter() call apply to the same related post (Django's "spanning multi-valued
        # relationships"); distinct() because the join repeats a user per matching post
        users = (self.m.User.objects.filter(posts__published=True, posts__views__gt=views)
                 .distinct().order_by("id"))
        return [[{"id": u.id, "name": u.name} for u in users[o:o + limit]] for o in offsets]

    def users_post_count(self, offsets: Sequence[int], limit: int) -> Any:
        users = self.m.User.objects.annotate(post_count=self.m.Count("posts")).order_by("id")
        return [[{"id": u.id, "name": u.name, "post_count": u.post_count} for u in users[o:o + limit]]
                for o in offsets]

    def org_stats(self, thresholds: Sequence[int]) -> Any:
        m = self.m
        out = []
        for t in thresholds:
            rows = (m.Post.objects.filter(views__gte=t).values("user__organization_id")
                    .annotate(posts=m.Count("id"), avg_views=m.Avg("views")).order_by("user__organization_id"))
            out.append([{"id": r["user__organization_id"], "posts": r["posts"], "avg_views": float(r["avg_views"])}
                        for r in rows])
        return out

    def count_filter(self, thresholds: Sequence[int]) -> Any:
        posts = self.m.Post.objects
        return [posts.filter(published=True, views__gt=t).count() for t in thresholds]

    def page_offset(self, offset: int, limit: int, repeats: int) -> Any:
        posts = self._posts_ordered()
        return [[post_dict(p) for p in posts[offset:offset + limit]] for _ in range(repeats)]

    def page_keyset(self, after_id: int, limit: int, repeats: int) -> Any:
        posts = self._posts_ordered()
        return [[post_dict(p) for p in posts.filter(id__gt=after_id)[:limit]] for _ in range(repeats)]

    def stream_comments(self, batch: int) -> Any:
        from django.db import transaction

        totals = StreamTotals()
        with transaction.atomic():
            for c in self.m.Comment.objects.iterator(chunk_size=batch):
                totals.add(c.id, c.body)
        return totals.result()

    def hot_get(self, ids: Sequence[int]) -> Any:
        get = self.m.Post.objects.get
        return [post_dict(get(pk=i)) for i in ids]

    def dashboard(self, strategy: str, repeats: int) -> Any:
        from django.db import transaction

        m = self.m
        out = []
        for _ in range(repeats):
            with transaction.atomic():
                users = m.User.objects.count()
                published = m.Post.objects.filter(published=True).count()
                latest = [{"id": p.id, "title": p.title} for p in m.Post.objects.order_by("-id")[:10]]
                top = [{"id": p.id, "views": p.views} for p in m.Post.objects.order_by("-views", "id")[:5]]
                per_org = [{"id": r["organization_id"], "users": r["users"]}
                           for r in m.User.objects.values("organization_id").annotate(users=m.Count("id"))
                           .order_by("organization_id")]
            out.append({"users": users, "published": published, "latest": latest, "top": top, "per_org": per_org})
        return out

    # -- writes --------------------------------------------------------------------------------------------
    def increment(self, post_ids: Sequence[int]) -> None:
        from django.db import transaction

        m = self.m
        with transaction.atomic():
            for i in post_ids:
                m.Post.objects.filter(pk=i).update(likes=m.F("likes") + 1)

    def upsert(self, rows: Sequence[Mapping[str, Any]]) -> None:
        from django.db import transaction

        User = self.m.User
        objs = [User(email=r["email"], name=r["name"], organization_id=r["organization_id"]) for r in rows]
        # MariaDB's ON DUPLICATE KEY UPDATE names no conflict target: Django refuses unique_fields there
        unique = {} if self._connection().features.supports_update_conflicts_with_target is False else {
            "unique_fields": ["email"]}
        with transaction.atomic():
            User.objects.bulk_create(objs, update_conflicts=True, update_fields=["name"], **unique)

    def nested_create(self, users: Sequence[Mapping[str, Any]]) -> None:
        from django.db import transaction

        m = self.m
        with transaction.atomic():
            new_users = [m.User(email=u["email"], name=u["name"], organization_id=u["organization_id"])
                         for u in users]
            self._create_all(m.User, new_users)
            posts, tag_ids = [], []
            for user, u in zip(new_users, users):
                for p in u["posts"]:
                    posts.append(m.Post(user=user, title=p["title"], published=False, views=0, likes=0))
                    tag_ids.append(p["tag_ids"])
            self._create_all(m.Post, posts)
            # the link rows through the explicit through model (what post.tags.add() would insert, without
            # its SELECT of the links already there)
            m.PostTag.objects.bulk_create([m.PostTag(post=p, tag_id=t) for p, ts in zip(posts, tag_ids) for t in ts])

    def _create_all(self, model: Any, objs: list[Any]) -> None:
        """New rows with their ids set: one bulk_create where the database returns the ids (RETURNING), else a
        save() per object."""
        if self.bulk_sets_ids:
            model.objects.bulk_create(objs)
        else:
            for obj in objs:
                obj.save(force_insert=True)

    def delete_cascade(self, user_ids: Sequence[int]) -> None:
        from django.db import transaction

        # the deletion collector follows on_delete=CASCADE: the users' posts (read, to cascade further), their
        # comments and tag links (deleted by post_id), the posts, the users
        with transaction.atomic():
            self.m.User.objects.filter(pk__in=list(user_ids)).delete()

    def bulk_update(self, views_below: int, likes: int) -> None:
        from django.db import transaction

        with transaction.atomic():
            self.m.Post.objects.filter(views__lt=views_below).update(likes=likes)
