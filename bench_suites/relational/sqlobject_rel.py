"""Test 4 on SQLObject: ``ForeignKey`` attributes, ``MultipleJoin`` / ``RelatedJoin`` lists and their
``SQLMultipleJoin`` / ``SQLRelatedJoin`` counterparts, ``select()`` and, where SQLObject's classes cannot say
it, its ``sqlbuilder``.

The connection is the Tests 1-3 arm's (:class:`SQLObjectArm`: one SQLObject connection held to one DB-API
connection on sqlite3, psycopg 3 or mysqlclient, bound to the models through a ``ConnectionHub``). The models
are five SQLObject classes of their own (registry ``ormbench_sqlobject_rel``), the same on every database:
table names through ``sqlmeta.table``, column names through ``dbName``; each ``ForeignKey`` has a
``DatabaseIndex`` and ``cascade=True`` (SQLObject writes ``ON DELETE CASCADE`` into the DDL and
``destroySelf()`` deletes the dependent rows itself). ``rel_post_tag`` is the intermediate table of
``RelatedJoin("RelTag", intermediateTable="rel_post_tag", joinColumn="post_id", otherColumn="tag_id",
createRelatedTable=False)``: SQLObject's own join table has neither a key nor foreign keys nor an index, so
the arm creates it with SQLObject's column type (``INT NOT NULL``), the composite primary key, the two foreign
keys and the ``tag_id`` index in one hand-written ``CREATE TABLE`` (the only DDL not SQLObject's).

Loading: SQLObject loads relations lazily only (it has no eager or batched loader; ``sqlbuilder.Select`` with a
join returns tuples, not objects). Two lazy ways are run:

- ``lazy``: the attributes users reach first, ``user.posts`` (``MultipleJoin``: one SELECT of the children's
  ids per parent, then ``RelPost.get(id)`` per child, one SELECT each unless the connection's cache holds it,
  sorted by id in Python), ``post.tags`` (``RelatedJoin``: the same through ``rel_post_tag``) and
  ``post.user.organization`` (``ForeignKey``: ``get()`` of the target, from the cache when this call already
  fetched it);
- ``SQLMultipleJoin`` / ``SQLRelatedJoin``: the same relations declared as SQLObject's SelectResults joins
  (``user.posts_q``): one SELECT of the whole child rows per parent, ordered by id in SQL.

Caching: SQLObject caches objects per connection (``cacheValues`` on, its default). Nothing may answer a read
from an earlier call: the Tests 1-3 arm empties the connection's cache on every restore (``expireAll()`` and
``cache.clear()``); this arm does that too and empties it again at the start of every shape method (a new
"unit of work": an object fetched by an earlier call is never reused). Inside one call the cache is
SQLObject's business (a post's author fetched once is not fetched again). A transaction (``doInTransaction``)
has a cache of its own, new each time.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from sqlobject import (BoolCol, DatabaseIndex, ForeignKey, IntCol, MultipleJoin, RelatedJoin, SQLMultipleJoin,
                       SQLObject, SQLRelatedJoin, StringCol)
from sqlobject.dbconnection import ConnectionHub
from sqlobject.sqlbuilder import AND, DESC, Select, Update, func

from pytest_ormbench.arms.sql import SqliteArm
from pytest_ormbench.arms.relational import (RelationalArm, StreamTotals, declared, post_dict, posts_with_author,
    posts_with_tags, users_with_posts, users_with_posts_comments)
from pytest_ormbench.suites.sqlobject_arm import (MYSQL_DRIVER, PG_DRIVER, SQLObjectArm, _OneConnection,
    _OneMysqlConnection, _OnePgConnection, _driver_version)

_REGISTRY = "ormbench_sqlobject_rel"


def _meta(table: str) -> type:
    return type("sqlmeta", (), {"table": table, "idName": "id", "registry": _REGISTRY})


class _RelModels:
    """The five classes, bound to one hub (what ``SQLObjectArm._open_with`` binds a connection to)."""

    journal = None  # the Tests 1-3 arm's main class: none here

    def __init__(self) -> None:
        self.hub = hub = ConnectionHub()

        class RelOrg(SQLObject):
            _connection = hub
            sqlmeta = _meta("rel_org")
            name = StringCol(dbName="name", length=100, notNone=True)

        class RelUser(SQLObject):
            _connection = hub
            sqlmeta = _meta("rel_user")
            organization = ForeignKey("RelOrg", dbName="organization_id", notNone=True, cascade=True)
            email = StringCol(dbName="email", length=254, notNone=True, unique=True)
            name = StringCol(dbName="name", length=100, notNone=True)
            organization_index = DatabaseIndex("organization")
            posts = MultipleJoin("RelPost", joinColumn="user_id", orderBy="id")
            posts_q = SQLMultipleJoin("RelPost", joinColumn="user_id", orderBy="id")

        class RelTag(SQLObject):
            _connection = hub
            sqlmeta = _meta("rel_tag")
            name = StringCol(dbName="name", length=50, notNone=True, unique=True)

        class RelPost(SQLObject):
            _connection = hub
            sqlmeta = _meta("rel_post")
            user = ForeignKey("RelUser", dbName="user_id", notNone=True, cascade=True)
            title = StringCol(dbName="title", length=200, notNone=True)
            published = BoolCol(dbName="published", notNone=True)
            views = IntCol(dbName="views", notNone=True)
            likes = IntCol(dbName="likes", notNone=True)
            user_index = DatabaseIndex("user")
            comments = MultipleJoin("RelComment", joinColumn="post_id", orderBy="id")
            comments_q = SQLMultipleJoin("RelComment", joinColumn="post_id", orderBy="id")
            tags = RelatedJoin("RelTag", intermediateTable="rel_post_tag", joinColumn="post_id",
                               otherColumn="tag_id", orderBy="id", createRelatedTable=False)
            tags_q = SQLRelatedJoin("RelTag", intermediateTable="rel_post_tag", joinColumn="post_id",
                                    otherColumn="tag_id", orderBy=RelTag.q.id, createRelatedTable=False,
                                    addRemoveName="TagQ")  # ordered in SQL: qualified (the query joins)

        class RelComment(SQLObject):
            _connection = hub
            sqlmeta = _meta("rel_comment")
            post = ForeignKey("RelPost", dbName="post_id", notNone=True, cascade=True)
            body = StringCol(dbName="body", notNone=True)
            post_index = DatabaseIndex("post")

        self.Org, self.User, self.Post, self.Comment, self.Tag = RelOrg, RelUser, RelPost, RelComment, RelTag
        self.classes = (RelOrg, RelUser, RelPost, RelComment, RelTag)


_MODELS: _RelModels | None = None


def _rel_models() -> _RelModels:
    global _MODELS
    if _MODELS is None:
        _MODELS = _RelModels()
    return _MODELS


#: the intermediate table: SQLObject's column type for a join column (INT NOT NULL) plus the key, the foreign
#: keys (ON DELETE CASCADE like SQLObject's own) and the index SQLObject's join table lacks
_LINK_DDL = {
    "sqlite": ("CREATE TABLE rel_post_tag (post_id INT NOT NULL REFERENCES rel_post (id) ON DELETE CASCADE, "
               "tag_id INT NOT NULL REFERENCES rel_tag (id) ON DELETE CASCADE, PRIMARY KEY (post_id, tag_id))"),
    "server": ("CREATE TABLE rel_post_tag (post_id INT NOT NULL, tag_id INT NOT NULL, PRIMARY KEY (post_id, tag_id), "
               "FOREIGN KEY (post_id) REFERENCES rel_post (id) ON DELETE CASCADE, "
               "FOREIGN KEY (tag_id) REFERENCES rel_tag (id) ON DELETE CASCADE)"),
}
_LINK_INDEX = "CREATE INDEX rel_post_tag_tag_id ON rel_post_tag (tag_id)"

#: the two lazy ways: strategy -> (the to-many attribute suffix)
_JOIN_ATTR = {"lazy": "", "SQLMultipleJoin": "_q", "SQLRelatedJoin": "_q"}


class SQLObjectRelational(RelationalArm, SQLObjectArm):
    name = "sqlobject"
    strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)

    # -- the Tests 1-3 arm's model-specific parts -------------------------------------------------------------
    def __init__(self, model: Any, settings: Any) -> None:
        SqliteArm.__init__(self, model, settings)  # not SQLObjectArm's: it builds Tests 1-3's classes
        self.m = _rel_models()
        self.Journal = None

    def open_sqlite(self, path: Any) -> None:
        self._open_with(_rel_models(), lambda: _OneConnection(str(path), self.settings))

    def open_postgresql(self, location: Any) -> None:
        self._open_with(_rel_models(), lambda: _OnePgConnection.connectionFromURI(
            f"{location.url('postgres')}?driver={PG_DRIVER}"))

    def open_mysql(self, location: Any) -> None:
        self._open_with(_rel_models(), lambda: _OneMysqlConnection.connectionFromURI(
            f"{location.url('mysql')}?driver={MYSQL_DRIVER}"))

    def tables(self) -> Any:
        raise NotImplementedError("Test 4: the harness reads the tables itself")

    def describe(self) -> dict[str, Any]:
        return {"sqlobject_cache": "on (default), emptied on restore and at the start of every shape",
                "cacheValues": self.m.Post.sqlmeta.cacheValues, "lazyUpdate": self.m.Post.sqlmeta.lazyUpdate,
                "postgresql_driver": f"{PG_DRIVER} {_driver_version(PG_DRIVER)}",
                "mysql_driver": f"mysqlclient {_driver_version('mysqlclient')}"}

    def create_schema(self) -> None:
        m = self.m
        for cls in (m.Org, m.User, m.Post, m.Comment, m.Tag):  # parents first: the constraints reference them
            cls.createTable()
        conn = self.so_conn
        assert conn is not None
        conn.query(_LINK_DDL["sqlite" if isinstance(conn, _OneConnection) else "server"])
        conn.query(_LINK_INDEX)

    # -- helpers --------------------------------------------------------------------------------------------
    def _fresh(self) -> None:
        """A new unit of work: forget every object an earlier call left in the connection's cache."""
        conn = self.so_conn
        assert conn is not None
        conn.cache.clear()

    def _tx(self, work: Any) -> Any:
        return self.m.hub.doInTransaction(work)

    def _query_all(self, select: Any) -> list[Any]:
        """A sqlbuilder Select run on the hub's current connection (the transaction inside ``_tx``)."""
        conn = self.m.hub.getConnection()
        return conn.queryAll(conn.sqlrepr(select))

    def _users_page(self, offset: int, limit: int) -> list[Any]:
        User = self.m.User
        return list(User.select(orderBy=User.q.id)[offset:offset + limit])

    # -- nested reads ----------------------------------------------------------------------------------------
    def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        self._fresh()
        attr = "posts" + _JOIN_ATTR[strategy]
        return [users_with_posts(self._users_page(o, limit), lambda u: getattr(u, attr)) for o in offsets]

    def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        self._fresh()
        posts, comments = "posts" + _JOIN_ATTR[strategy], "comments" + _JOIN_ATTR[strategy]
        return [users_with_posts_comments(self._users_page(o, limit), lambda u: getattr(u, posts),
                                          lambda p: getattr(p, comments)) for o in offsets]

    def user_deep(self, strategy: str, user_ids: Sequence[int]) -> Any:
        self._fresh()
        posts, comments = "posts" + _JOIN_ATTR[strategy], "comments" + _JOIN_ATTR[strategy]
        get = self.m.User.get
        return users_with_posts_comments([get(uid) for uid in user_ids], lambda u: getattr(u, posts),
                                         lambda p: getattr(p, comments))

    def _posts_page(self, offset: int, limit: int) -> list[Any]:
        Post = self.m.Post
        return list(Post.select(orderBy=Post.q.id)[offset:offset + limit])

    def posts_authors(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        self._fresh()
        return [posts_with_author(self._posts_page(o, limit), lambda p: p.user, lambda u: u.organization)
                for o in offsets]

    def posts_tags(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        self._fresh()
        attr = "tags" + _JOIN_ATTR[strategy]
        return [posts_with_tags(self._posts_page(o, limit), lambda p: getattr(p, attr)) for o in offsets]

    # -- flat reads ------------------------------------------------------------------------------------------
    def users_filter(self, views: int, offsets: Sequence[int], limit: int) -> Any:
        self._fresh()
        User, Post = self.m.User, self.m.Post
        # a clause naming rel_post: SQLObject adds the table to FROM (an implicit join); distinct: each user once
        users = User.select(AND(Post.q.userID == User.q.id, Post.q.published == True,  # noqa: E712
                                Post.q.views > views), orderBy=User.q.id, distinct=True)
        return [[{"id": u.id, "name": u.name} for u in users[o:o + limit]] for o in offsets]

    def users_post_count(self, offsets: Sequence[int], limit: int) -> Any:
        self._fresh()
        User, Post = self.m.User, self.m.Post
        out = []
        for o in offsets:
            rows = self._query_all(Select(
                [User.q.id, User.q.name, func.COUNT(Post.q.id)],
                join=_left_join(User, Post, Post.q.userID == User.q.id),
                groupBy=[User.q.id, User.q.name], orderBy=User.q.id, start=o, end=o + limit))
            out.append([{"id": r[0], "name": r[1], "post_count": int(r[2])} for r in rows])
        return out

    def org_stats(self, thresholds: Sequence[int]) -> Any:
        self._fresh()
        User, Post = self.m.User, self.m.Post
        out = []
        for t in thresholds:
            rows = self._query_all(Select(
                [User.q.organizationID, func.COUNT(Post.q.id), func.AVG(Post.q.views)],
                where=AND(User.q.id == Post.q.userID, Post.q.views >= t),
                groupBy=User.q.organizationID, orderBy=User.q.organizationID))
            out.append([{"id": r[0], "posts": int(r[1]), "avg_views": float(r[2])} for r in rows])
        return out

    def count_filter(self, thresholds: Sequence[int]) -> Any:
        self._fresh()
        Post = self.m.Post
        return [Post.select(AND(Post.q.published == True, Post.q.views > t)).count()  # noqa: E712
                for t in thresholds]

    def page_offset(self, offset: int, limit: int, repeats: int) -> Any:
        self._fresh()
        Post = self.m.Post
        return [[post_dict(p) for p in Post.select(orderBy=Post.q.id)[offset:offset + limit]]
                for _ in range(repeats)]

    def page_keyset(self, after_id: int, limit: int, repeats: int) -> Any:
        self._fresh()
        Post = self.m.Post
        return [[post_dict(p) for p in Post.select(Post.q.id > after_id, orderBy=Post.q.id).limit(limit)]
                for _ in range(repeats)]

    def stream_comments(self, batch: int) -> Any:
        # select().lazyIter(): SQLObject's iterator over a cursor, one fetchone() per object; it has no batch
        # size and no server-side cursor (``batch`` cannot be passed on)
        self._fresh()
        Comment = self.m.Comment
        totals = StreamTotals()
        for c in Comment.select(orderBy=Comment.q.id).lazyIter():
            totals.add(c.id, c.body)
        return totals.result()

    def hot_get(self, ids: Sequence[int]) -> Any:
        self._fresh()
        get = self.m.Post.get
        return [post_dict(get(i)) for i in ids]

    def dashboard(self, strategy: str, repeats: int) -> Any:
        self._fresh()
        User, Post = self.m.User, self.m.Post

        def five() -> dict[str, Any]:
            return {
                "users": User.select().count(),
                "published": Post.select(Post.q.published == True).count(),  # noqa: E712
                "latest": [{"id": p.id, "title": p.title} for p in Post.select(orderBy=DESC(Post.q.id))[:10]],
                "top": [{"id": p.id, "views": p.views}
                        for p in Post.select(orderBy=[DESC(Post.q.views), Post.q.id])[:5]],
                "per_org": [{"id": r[0], "users": int(r[1])} for r in self._query_all(Select(
                    [User.q.organizationID, func.COUNT(User.q.id)], groupBy=User.q.organizationID,
                    orderBy=User.q.organizationID))],
            }

        return [self._tx(five) for _ in range(repeats)]

    # -- writes ----------------------------------------------------------------------------------------------
    def increment(self, post_ids: Sequence[int]) -> None:
        Post = self.m.Post
        table, likes, pid = Post.sqlmeta.table, Post.q.likes, Post.q.id

        def work() -> None:
            conn = self.m.hub.getConnection()
            for i in post_ids:
                conn.query(conn.sqlrepr(Update(table, {"likes": likes + 1}, where=pid == i)))

        self._tx(work)

    def nested_create(self, users: Sequence[Mapping[str, Any]]) -> None:
        User, Post = self.m.User, self.m.Post

        def work() -> None:
            for u in users:
                user = User(organization=u["organization_id"], email=u["email"], name=u["name"])
                for p in u["posts"]:
                    post = Post(user=user, title=p["title"], published=False, views=0, likes=0)
                    for t in p["tag_ids"]:
                        post.addRelTag(t)

        self._tx(work)

    def delete_cascade(self, user_ids: Sequence[int]) -> None:
        User = self.m.User

        def work() -> None:
            for uid in user_ids:
                User.get(uid).destroySelf()  # cascade=True: SQLObject deletes posts, their links and comments

        self._tx(work)

    def bulk_update(self, views_below: int, likes: int) -> None:
        Post = self.m.Post

        def work() -> None:
            conn = self.m.hub.getConnection()
            conn.query(conn.sqlrepr(Update(Post.sqlmeta.table, {"likes": likes}, where=Post.q.views < views_below)))

        self._tx(work)


def _left_join(left: Any, right: Any, on: Any) -> Any:
    from sqlobject.sqlbuilder import LEFTJOINOn

    return LEFTJOINOn(left, right, on)
