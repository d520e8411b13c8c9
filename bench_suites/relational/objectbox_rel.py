"""Test 4 on ObjectBox: an embedded object database without SQL, through its Python binding (5.0.0).

The six tables are six entities of a model of their own (``rel_org``, ``rel_user``, ``rel_post``,
``rel_comment``, ``rel_tag``, ``rel_post_tag``; properties named as the canonical columns). Foreign keys are
``Relation`` properties (ObjectBox's to-one: the target's id, indexed); the unique keys are
``Unique()`` (indexed). The binding has no to-many or many-to-many relation (standalone ToMany is not supported
in Python), so ``rel_post_tag`` is an entity with two relations, ``post_id`` and ``tag_id``, and, as every
ObjectBox entity must, an id of its own (not part of the canonical table: :meth:`read_relational` leaves it
out).

The harness cannot write an ObjectBox store with SQL: :meth:`populate_relational` puts the rows in id order
into the new store, which hands out ids 1..n in that order (checked; ``Id(assignable=True)`` would take them
explicitly, but it changes how every put of a new object is checked, so the store keeps ObjectBox's own
ids as its users do), and :meth:`read_relational` reads every entity back for the checks.

Relations: ObjectBox stores a to-one relation as the target's id and loads nothing by itself; a query
returns objects of one entity (``link()`` / ``backlink()`` filter by related objects, they do not load them).
So the strategies are what its API can say:

- ``lazy``: per parent, one query (``rel_post.user_id == ?``, ordered by id; a built query with
  ``set_parameter``) or one ``get()`` of a to-one target; the tags of a post in one query on ``rel_tag`` with
  ``backlink(rel_post_tag.tag_id, rel_post_tag.post_id == ?)``;
- ``batched``: per relation level, one query with ``one_of(parent ids)`` on the relation (ordered by id,
  grouped in Python), or one ``get_many(ids)`` of the to-one targets;
- no ``join``: ObjectBox has no join (see the toml).

Nothing is carried over between calls: the binding keeps no object cache (every ``get``/``find`` reads the
store); built queries (the counterpart of prepared statements) are kept per open store and rebuilt after a
restore. Writes run in one ``store.write_tx()``; ObjectBox serializes write transactions (one writer at a
time), so a read-modify-write inside one cannot interleave with another writer.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable, Mapping, Sequence

from objectbox import Bool, Entity, Id, Index, Int32, Model, Relation, Store, String, Unique
from objectbox.query_builder import OrderFlags

from pytest_ormbench.arms.contract import Arm
from pytest_ormbench.arms.helpers import slices
from pytest_ormbench.arms.relational import (RelationalArm, StreamTotals, declared, post_dict, posts_with_author,
    posts_with_tags, users_with_posts, users_with_posts_comments)
from pytest_ormbench.suites.objectbox_arm import (MODEL_JSON, PUT_LIMIT, ObjectBoxArm, ObjectBoxNoCodegenArm,
    _uid)
from pytest_ormbench.workload.relational import TABLES

_MODEL_NAME = "pytest_ormbench_relational"


# --------------------------------------------------------------------------
# Entities
# --------------------------------------------------------------------------

def _entity(name: str, props: Mapping[str, Any]) -> Any:
    return Entity(uid=_uid(name), model=_MODEL_NAME)(type(name, (), {"id": Id(uid=_uid(name, "id")), **props}))


def _relation(entity: str, target: str, name: str) -> Relation:
    rel = Relation(target, uid=_uid(entity, name))
    rel.index = Index(uid=_uid(entity, name, "index"))  # pin the UID of the index Relation makes
    return rel


def _unique(entity: str, name: str) -> String:
    return String(uid=_uid(entity, name), unique=Unique(), index=Index(uid=_uid(entity, name, "index")))


RelOrg = _entity("rel_org", {"name": String(uid=_uid("rel_org", "name"))})
RelUser = _entity("rel_user", {
    "organization_id": _relation("rel_user", "rel_org", "organization_id"),
    "email": _unique("rel_user", "email"),
    "name": String(uid=_uid("rel_user", "name")),
})
RelPost = _entity("rel_post", {
    "user_id": _relation("rel_post", "rel_user", "user_id"),
    "title": String(uid=_uid("rel_post", "title")),
    "published": Bool(uid=_uid("rel_post", "published")),
    "views": Int32(uid=_uid("rel_post", "views")),
    "likes": Int32(uid=_uid("rel_post", "likes")),
})
RelComment = _entity("rel_comment", {
    "post_id": _relation("rel_comment", "rel_post", "post_id"),
    "body": String(uid=_uid("rel_comment", "body")),
})
RelTag = _entity("rel_tag", {"name": _unique("rel_tag", "name")})
#: the link entity: two to-one relations (and the id every ObjectBox entity has)
RelPostTag = _entity("rel_post_tag", {
    "post_id": _relation("rel_post_tag", "rel_post", "post_id"),
    "tag_id": _relation("rel_post_tag", "rel_tag", "tag_id"),
})

ENTITIES = {"rel_org": RelOrg, "rel_user": RelUser, "rel_post": RelPost, "rel_comment": RelComment,
            "rel_tag": RelTag, "rel_post_tag": RelPostTag}


def _make_model() -> Model:
    model = Model()
    for e in ENTITIES.values():
        model.entity(e)
    return model


REL_MODEL = _make_model()


def _group(objs: Sequence[Any], key: str) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for o in objs:
        out.setdefault(getattr(o, key), []).append(o)
    return out


# --------------------------------------------------------------------------
# The arm
# --------------------------------------------------------------------------


class ObjectBoxRelational(RelationalArm, ObjectBoxArm):
    name = "objectbox"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)

    def __init__(self, model: Any, settings: Any) -> None:
        Arm.__init__(self, model, settings)  # not ObjectBoxArm's: it binds Tests 1-3's entities
        self._obx_model = REL_MODEL
        self._reset_handles()

    # -- the store ------------------------------------------------------------------------------------------
    def _reset_handles(self) -> None:
        super()._reset_handles()
        self.b: Any = None
        self._queries: dict[str, Any] = {}

    def _open_store(self) -> None:
        assert self.path is not None
        self._store = store = Store(model=self._obx_model, directory=str(self.path),
                                    model_json_file=str(self.path / MODEL_JSON))
        self.b = SimpleNamespace(org=store.box(RelOrg), user=store.box(RelUser), post=store.box(RelPost),
                                 comment=store.box(RelComment), tag=store.box(RelTag), link=store.box(RelPostTag))
        self._queries = {}

    def _q(self, key: str, build: Callable[[], Any]) -> Any:
        """A query built once per open store (ObjectBox's prepared statement), reused with parameters."""
        q = self._queries.get(key)
        if q is None:
            q = self._queries[key] = build()
        return q

    def _boxes(self) -> dict[str, Any]:
        b = self.b
        return {"rel_org": b.org, "rel_user": b.user, "rel_post": b.post, "rel_comment": b.comment, "rel_tag": b.tag,
                "rel_post_tag": b.link}

    def populate_relational(self, data: Any) -> None:
        """Every table's rows put in id order into the new store, in one write transaction; ObjectBox hands out
        ids 1..n in that order (checked)."""
        assert self._store is not None
        boxes = self._boxes()
        with self._store.write_tx():
            for table, columns in TABLES.items():
                entity, rows = ENTITIES[table], data.rows[table]
                fields = [c for c in columns if c != "id"]
                at = [columns.index(c) for c in fields]
                objs = [entity(**{f: row[i] for f, i in zip(fields, at)}) for row in rows]
                ids: list[int] = []
                for part in slices(objs, PUT_LIMIT):
                    ids.extend(boxes[table].put(part))
                if "id" in columns and ids != [row[0] for row in rows]:
                    raise RuntimeError(f"populate: ObjectBox gave {table} ids {ids[:3]}..., expected "
                                       f"{[row[0] for row in rows][:3]}...")

    def read_relational(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every entity's objects as rows in TABLES' column order (rel_post_tag without its own id)."""
        assert self._store is not None
        boxes, out = self._boxes(), {}
        with self._store.read_tx():
            for table, columns in TABLES.items():
                out[table] = [tuple(getattr(o, c) for c in columns) for o in boxes[table].get_all()]
        return out

    # -- built queries --------------------------------------------------------------------------------------
    def _posts_of_user(self) -> Any:
        return self._q("posts_of_user", lambda: self.b.post.query(RelPost.user_id.equals(0)).order(RelPost.id).build())

    def _posts_of_users(self) -> Any:
        return self._q("posts_of_users",
                       lambda: self.b.post.query(RelPost.user_id.one_of([0])).order(RelPost.id).build())

    def _comments_of_post(self) -> Any:
        return self._q("comments_of_post",
                       lambda: self.b.comment.query(RelComment.post_id.equals(0)).order(RelComment.id).build())

    def _comments_of_posts(self) -> Any:
        return self._q("comments_of_posts",
                       lambda: self.b.comment.query(RelComment.post_id.one_of([0])).order(RelComment.id).build())

    def _users_page(self) -> Any:
        return self._q("users_page", lambda: self.b.user.query().order(RelUser.id).build())

    def _posts_page(self) -> Any:
        return self._q("posts_page", lambda: self.b.post.query().order(RelPost.id).build())

    @staticmethod
    def _page(q: Any, offset: int, limit: int) -> list[Any]:
        return q.offset(offset).limit(limit).find()

    # -- nested reads ----------------------------------------------------------------------------------------
    def _nested(self, strategy: str, users: list[Any], depth: int) -> list[dict[str, Any]]:
        if strategy == "lazy":
            posts_q, uid = self._posts_of_user(), RelPost.user_id
            posts_of = lambda u: posts_q.set_parameter(uid, u.id).find()  # noqa: E731
            if depth == 2:
                return users_with_posts(users, posts_of)
            comments_q, pid = self._comments_of_post(), RelComment.post_id
            return users_with_posts_comments(users, posts_of, lambda p: comments_q.set_parameter(pid, p.id).find())
        # batched: one query per level with the parents' ids
        posts = self._posts_of_users().set_parameter(RelPost.user_id, [u.id for u in users]).find() if users else []
        by_user = _group(posts, "user_id")
        if depth == 2:
            return users_with_posts(users, lambda u: by_user.get(u.id, ()))
        comments = (self._comments_of_posts().set_parameter(RelComment.post_id, [p.id for p in posts]).find()
                    if posts else [])
        by_post = _group(comments, "post_id")
        return users_with_posts_comments(users, lambda u: by_user.get(u.id, ()), lambda p: by_post.get(p.id, ()))

    def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        q = self._users_page()
        return [self._nested(strategy, self._page(q, o, limit), 2) for o in offsets]

    def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        q = self._users_page()
        return [self._nested(strategy, self._page(q, o, limit), 3) for o in offsets]

    def user_deep(self, strategy: str, user_ids: Sequence[int]) -> Any:
        get, out = self.b.user.get, []
        for uid in user_ids:
            out.extend(self._nested(strategy, [get(uid)], 3))
        return out

    def posts_authors(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        q, out = self._posts_page(), []
        users, orgs = self.b.user, self.b.org
        for o in offsets:
            posts = self._page(q, o, limit)
            if strategy == "lazy":
                out.append(posts_with_author(posts, lambda p: users.get(p.user_id),
                                             lambda u: orgs.get(u.organization_id)))
                continue
            user_ids = sorted({p.user_id for p in posts})
            by_id = dict(zip(user_ids, users.get_many(user_ids)))
            org_ids = sorted({u.organization_id for u in by_id.values()})
            org_by_id = dict(zip(org_ids, orgs.get_many(org_ids)))
            out.append(posts_with_author(posts, lambda p: by_id[p.user_id], lambda u: org_by_id[u.organization_id]))
        return out

    def posts_tags(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        q, out = self._posts_page(), []
        for o in offsets:
            posts = self._page(q, o, limit)
            if strategy == "lazy":
                tags_q = self._q("tags_of_post", self._build_tags_of_post)
                out.append(posts_with_tags(posts, lambda p: tags_q.set_parameter_alias("post", p.id).find()))
                continue
            links = (self._q("links_of_posts", lambda: self.b.link.query(RelPostTag.post_id.one_of([0])).build())
                     .set_parameter(RelPostTag.post_id, [p.id for p in posts]).find()) if posts else []
            tag_ids = sorted({lk.tag_id for lk in links})
            tag_by_id = dict(zip(tag_ids, self.b.tag.get_many(tag_ids)))
            tags_of: dict[int, list[Any]] = {}
            for lk in links:
                tags_of.setdefault(lk.post_id, []).append(tag_by_id[lk.tag_id])
            for tags in tags_of.values():
                tags.sort(key=lambda t: t.id)
            out.append(posts_with_tags(posts, lambda p: tags_of.get(p.id, ())))
        return out

    def _build_tags_of_post(self) -> Any:
        qb = self.b.tag.query()
        qb.backlink(RelPostTag.tag_id, RelPostTag.post_id.equals(0).alias("post"))
        return qb.order(RelTag.id).build()

    # -- flat reads ------------------------------------------------------------------------------------------
    def users_filter(self, views: int, offsets: Sequence[int], limit: int) -> Any:
        def build() -> Any:
            qb = self.b.user.query()
            qb.backlink(RelPost.user_id, RelPost.published.equals(True) & RelPost.views.greater_than(0).alias("views"))
            return qb.order(RelUser.id).build()

        q = self._q("users_filter", build).set_parameter_alias("views", views)
        return [[{"id": u.id, "name": u.name} for u in self._page(q, o, limit)] for o in offsets]

    def users_post_count(self, offsets: Sequence[int], limit: int) -> Any:
        users_q = self._users_page()
        count_q = self._q("count_posts_of_user", lambda: self.b.post.query(RelPost.user_id.equals(0)).build())
        uid = RelPost.user_id
        return [[{"id": u.id, "name": u.name, "post_count": count_q.set_parameter(uid, u.id).count()}
                 for u in self._page(users_q, o, limit)] for o in offsets]

    def org_stats(self, thresholds: Sequence[int]) -> Any:
        def build() -> Any:
            qb = self.b.post.query(RelPost.views.greater_or_equal(0).alias("views"))
            qb.link(RelPost.user_id, RelUser.organization_id.equals(0).alias("org"))
            return qb.build()

        q = self._q("org_stats", build)
        orgs = self.b.org.query().order(RelOrg.id).build().find_ids()
        out = []
        for t in thresholds:
            q.set_parameter_alias("views", t)
            rows = []
            for org in orgs:
                views = [p.views for p in q.set_parameter_alias("org", org).find()]
                if views:
                    rows.append({"id": org, "posts": len(views), "avg_views": sum(views) / len(views)})
            out.append(rows)
        return out

    def _published_count(self) -> Any:
        return self._q("published_views", lambda: self.b.post.query(
            RelPost.published.equals(True) & RelPost.views.greater_than(0)).build())

    def count_filter(self, thresholds: Sequence[int]) -> Any:
        q, views = self._published_count(), RelPost.views
        return [q.set_parameter(views, t).count() for t in thresholds]

    def page_offset(self, offset: int, limit: int, repeats: int) -> Any:
        q = self._posts_page()
        return [[post_dict(p) for p in self._page(q, offset, limit)] for _ in range(repeats)]

    def page_keyset(self, after_id: int, limit: int, repeats: int) -> Any:
        q = self._q("after_id", lambda: self.b.post.query(RelPost.id.greater_than(0)).order(RelPost.id).build())
        pid = RelPost.id
        return [[post_dict(p) for p in q.set_parameter(pid, after_id).offset(0).limit(limit).find()]
                for _ in range(repeats)]

    def stream_comments(self, batch: int) -> Any:
        # no cursor in the binding: keyset batches (id > last, by id, limit batch) inside one read transaction
        q = self._q("comments_after", lambda: self.b.comment.query(RelComment.id.greater_than(0))
                    .order(RelComment.id).build())
        cid, totals, last = RelComment.id, StreamTotals(), 0
        assert self._store is not None
        with self._store.read_tx():
            q.offset(0).limit(batch)
            while True:
                rows = q.set_parameter(cid, last).find()
                if not rows:
                    break
                for c in rows:
                    totals.add(c.id, c.body)
                last = rows[-1].id
        return totals.result()

    def hot_get(self, ids: Sequence[int]) -> Any:
        get = self.b.post.get
        return [post_dict(get(i)) for i in ids]

    def dashboard(self, strategy: str, repeats: int) -> Any:
        assert self._store is not None
        b = self.b
        published = self._q("published", lambda: b.post.query(RelPost.published.equals(True)).build())
        latest = self._q("latest", lambda: b.post.query().order(RelPost.id, OrderFlags.DESCENDING).build())
        top = self._q("top", lambda: b.post.query().order(RelPost.views, OrderFlags.DESCENDING)
                      .order(RelPost.id).build())
        per_org = self._q("users_of_org", lambda: b.user.query(RelUser.organization_id.equals(0)).build())
        orgs = self._q("org_ids", lambda: b.org.query().order(RelOrg.id).build())
        oid = RelUser.organization_id
        out = []
        for _ in range(repeats):
            with self._store.read_tx():
                counts = [(o, per_org.set_parameter(oid, o).count()) for o in orgs.find_ids()]
                out.append({
                    "users": b.user.count(),
                    "published": published.count(),
                    "latest": [{"id": p.id, "title": p.title} for p in latest.limit(10).find()],
                    "top": [{"id": p.id, "views": p.views} for p in top.limit(5).find()],
                    "per_org": [{"id": o, "users": n} for o, n in counts if n],
                })
        return out

    # -- writes ----------------------------------------------------------------------------------------------
    def increment(self, post_ids: Sequence[int]) -> None:
        assert self._store is not None
        box = self.b.post
        with self._store.write_tx():
            for i in post_ids:
                p = box.get(i)
                p.likes += 1
                box.put(p)

    def upsert(self, rows: Sequence[Mapping[str, Any]]) -> None:
        assert self._store is not None
        box = self.b.user
        q = self._q("user_by_email", lambda: box.query(RelUser.email.equals("")).build())
        email = RelUser.email
        with self._store.write_tx():
            for r in rows:
                u = q.set_parameter(email, r["email"]).find_first()
                if u is None:
                    u = RelUser(organization_id=r["organization_id"], email=r["email"], name=r["name"])
                else:
                    u.name = r["name"]
                box.put(u)

    def nested_create(self, users: Sequence[Mapping[str, Any]]) -> None:
        assert self._store is not None
        b = self.b
        with self._store.write_tx():
            for u in users:
                uid = b.user.put(RelUser(organization_id=u["organization_id"], email=u["email"], name=u["name"]))
                posts = [RelPost(user_id=uid, title=p["title"], published=False, views=0, likes=0) for p in u["posts"]]
                post_ids = b.post.put(posts)
                b.link.put([RelPostTag(post_id=pid, tag_id=t) for pid, p in zip(post_ids, u["posts"])
                            for t in p["tag_ids"]])

    def delete_cascade(self, user_ids: Sequence[int]) -> None:
        assert self._store is not None
        b = self.b
        ids = list(user_ids)
        with self._store.write_tx():
            post_ids = b.post.query(RelPost.user_id.one_of(ids)).build().find_ids()
            if post_ids:
                b.comment.query(RelComment.post_id.one_of(post_ids)).build().remove()
                b.link.query(RelPostTag.post_id.one_of(post_ids)).build().remove()
                b.post.remove_many(post_ids)
            b.user.remove_many(ids)

    def bulk_update(self, views_below: int, likes: int) -> None:
        assert self._store is not None
        box = self.b.post
        q = self._q("views_below", lambda: box.query(RelPost.views.less_than(0)).build())
        with self._store.write_tx():
            posts = q.set_parameter(RelPost.views, views_below).find()
            for p in posts:
                p.likes = likes
            if posts:
                box.put(posts)


class ObjectBoxNoCodegenRelational(ObjectBoxRelational, ObjectBoxNoCodegenArm):
    name = "objectbox_nocodegen"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)
