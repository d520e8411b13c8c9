"""Test 4 by hand: the SQL of every shape, and the control arms' work on a synchronous DB-API connection.

The controls are each strategy's floor: ``lazy`` is the N+1 written by hand (one query per parent), ``join``
one statement that joins the relation in, ``batched`` one more query per relation level with the parents'
keys in ``IN (...)``. Statements are written once with ``?`` placeholders; :class:`SyncControl` renders them
for its driver's paramstyle (``%s`` for psycopg and mysqlclient). Rows come back as tuples and are turned
into the canonical dicts inside the timed region, as every arm does.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, Sequence

from pytest_ormbench.arms.relational import StreamTotals

# -- the schema, as its users write it by hand on each database ------------------------------------------

_TYPES = {
    "sqlite": {"pk": "INTEGER PRIMARY KEY", "bool": "BOOLEAN", "int": "INTEGER", "text": "TEXT", "suffix": ""},
    "postgresql": {"pk": "serial PRIMARY KEY", "bool": "boolean", "int": "integer", "text": "text", "suffix": ""},
    "mysql": {"pk": "INT AUTO_INCREMENT PRIMARY KEY", "bool": "BOOLEAN", "int": "INT", "text": "TEXT",
              "suffix": " ENGINE=InnoDB"},
}


def schema(db: str) -> list[str]:
    """The six tables with every foreign key indexed and the two unique keys (PostgreSQL and MariaDB index a
    unique key; MariaDB's InnoDB also indexes each foreign key itself, so the explicit index is its one)."""
    t = _TYPES[db]
    pk, bool_, int_, text, end = t["pk"], t["bool"], t["int"], t["text"], t["suffix"]
    return [
        f"CREATE TABLE rel_org (id {pk}, name VARCHAR(100) NOT NULL){end}",
        f"CREATE TABLE rel_user (id {pk}, organization_id {int_} NOT NULL REFERENCES rel_org (id), "
        f"email VARCHAR(254) NOT NULL UNIQUE, name VARCHAR(100) NOT NULL){end}",
        "CREATE INDEX rel_user_organization_id ON rel_user (organization_id)",
        f"CREATE TABLE rel_post (id {pk}, user_id {int_} NOT NULL REFERENCES rel_user (id), "
        f"title VARCHAR(200) NOT NULL, published {bool_} NOT NULL, views {int_} NOT NULL, likes {int_} NOT NULL){end}",
        "CREATE INDEX rel_post_user_id ON rel_post (user_id)",
        f"CREATE TABLE rel_comment (id {pk}, post_id {int_} NOT NULL REFERENCES rel_post (id), body {text} NOT NULL){end}",
        "CREATE INDEX rel_comment_post_id ON rel_comment (post_id)",
        f"CREATE TABLE rel_tag (id {pk}, name VARCHAR(50) NOT NULL UNIQUE){end}",
        f"CREATE TABLE rel_post_tag (post_id {int_} NOT NULL REFERENCES rel_post (id), "
        f"tag_id {int_} NOT NULL REFERENCES rel_tag (id), PRIMARY KEY (post_id, tag_id)){end}",
        "CREATE INDEX rel_post_tag_tag_id ON rel_post_tag (tag_id)",
    ]


# -- the statements -------------------------------------------------------------------------------------

USERS_PAGE = "SELECT id, name FROM rel_user ORDER BY id LIMIT ? OFFSET ?"
USER_BY_ID = "SELECT id, name FROM rel_user WHERE id = ?"
POSTS_OF_USER = "SELECT id, title, views FROM rel_post WHERE user_id = ? ORDER BY id"
POSTS_OF_USERS = "SELECT user_id, id, title, views FROM rel_post WHERE user_id IN ({}) ORDER BY id"
COMMENTS_OF_POST = "SELECT id, body FROM rel_comment WHERE post_id = ? ORDER BY id"
COMMENTS_OF_POSTS = "SELECT post_id, id, body FROM rel_comment WHERE post_id IN ({}) ORDER BY id"
USERS_POSTS_JOIN = ("SELECT u.id, u.name, p.id, p.title, p.views FROM (SELECT id, name FROM rel_user ORDER BY id "
                    "LIMIT ? OFFSET ?) u LEFT JOIN rel_post p ON p.user_id = u.id ORDER BY u.id, p.id")
USERS_POSTS_COMMENTS_JOIN = (
    "SELECT u.id, u.name, p.id, p.title, p.views, c.id, c.body FROM (SELECT id, name FROM rel_user ORDER BY id "
    "LIMIT ? OFFSET ?) u LEFT JOIN rel_post p ON p.user_id = u.id LEFT JOIN rel_comment c ON c.post_id = p.id "
    "ORDER BY u.id, p.id, c.id")
USER_DEEP_JOIN = ("SELECT u.id, u.name, p.id, p.title, p.views, c.id, c.body FROM rel_user u "
                  "LEFT JOIN rel_post p ON p.user_id = u.id LEFT JOIN rel_comment c ON c.post_id = p.id "
                  "WHERE u.id = ? ORDER BY p.id, c.id")
POSTS_PAGE = "SELECT id, title, user_id FROM rel_post ORDER BY id LIMIT ? OFFSET ?"
USER_WITH_ORG_ID = "SELECT id, name, organization_id FROM rel_user WHERE id = ?"
USERS_WITH_ORG_ID = "SELECT id, name, organization_id FROM rel_user WHERE id IN ({})"
ORG_BY_ID = "SELECT id, name FROM rel_org WHERE id = ?"
ORGS_BY_ID = "SELECT id, name FROM rel_org WHERE id IN ({})"
POSTS_AUTHORS_JOIN = ("SELECT p.id, p.title, u.id, u.name, o.id, o.name FROM rel_post p "
                      "JOIN rel_user u ON u.id = p.user_id JOIN rel_org o ON o.id = u.organization_id "
                      "ORDER BY p.id LIMIT ? OFFSET ?")
TAGS_OF_POST = ("SELECT t.id, t.name FROM rel_tag t JOIN rel_post_tag pt ON pt.tag_id = t.id WHERE pt.post_id = ? "
                "ORDER BY t.id")
TAGS_OF_POSTS = ("SELECT pt.post_id, t.id, t.name FROM rel_post_tag pt JOIN rel_tag t ON t.id = pt.tag_id "
                 "WHERE pt.post_id IN ({}) ORDER BY t.id")
POSTS_TAGS_JOIN = ("SELECT p.id, p.title, t.id, t.name FROM (SELECT id, title FROM rel_post ORDER BY id LIMIT ? "
                   "OFFSET ?) p LEFT JOIN rel_post_tag pt ON pt.post_id = p.id LEFT JOIN rel_tag t ON t.id = pt.tag_id "
                   "ORDER BY p.id, t.id")
USERS_FILTER = ("SELECT u.id, u.name FROM rel_user u WHERE EXISTS (SELECT 1 FROM rel_post p WHERE p.user_id = u.id "
                "AND p.published AND p.views > ?) ORDER BY u.id LIMIT ? OFFSET ?")
USERS_POST_COUNT = ("SELECT u.id, u.name, (SELECT count(*) FROM rel_post p WHERE p.user_id = u.id) FROM rel_user u "
                    "ORDER BY u.id LIMIT ? OFFSET ?")
ORG_STATS = ("SELECT u.organization_id, count(*), avg(p.views) FROM rel_post p JOIN rel_user u ON u.id = p.user_id "
             "WHERE p.views >= ? GROUP BY u.organization_id ORDER BY u.organization_id")
COUNT_FILTER = "SELECT count(*) FROM rel_post WHERE published AND views > ?"
PAGE_OFFSET = "SELECT id, title, views FROM rel_post ORDER BY id LIMIT ? OFFSET ?"
PAGE_KEYSET = "SELECT id, title, views FROM rel_post WHERE id > ? ORDER BY id LIMIT ?"
STREAM = "SELECT id, body FROM rel_comment"
POST_BY_ID = "SELECT id, title, views FROM rel_post WHERE id = ?"
DASHBOARD = (
    "SELECT count(*) FROM rel_user",
    "SELECT count(*) FROM rel_post WHERE published",
    "SELECT id, title FROM rel_post ORDER BY id DESC LIMIT 10",
    "SELECT id, views FROM rel_post ORDER BY views DESC, id LIMIT 5",
    "SELECT organization_id, count(*) FROM rel_user GROUP BY organization_id ORDER BY organization_id",
)
INCREMENT = "UPDATE rel_post SET likes = likes + 1 WHERE id = ?"
UPSERT = {
    "sqlite": "INSERT INTO rel_user (organization_id, email, name) VALUES (?, ?, ?) "
              "ON CONFLICT (email) DO UPDATE SET name = excluded.name",
    "postgresql": "INSERT INTO rel_user (organization_id, email, name) VALUES (?, ?, ?) "
                  "ON CONFLICT (email) DO UPDATE SET name = excluded.name",
    "mysql": "INSERT INTO rel_user (organization_id, email, name) VALUES (?, ?, ?) "
             "ON DUPLICATE KEY UPDATE name = VALUES(name)",
}
INSERT_USER = "INSERT INTO rel_user (organization_id, email, name) VALUES (?, ?, ?)"
INSERT_POST = "INSERT INTO rel_post (user_id, title, published, views, likes) VALUES (?, ?, ?, 0, 0)"
INSERT_LINK = "INSERT INTO rel_post_tag (post_id, tag_id) VALUES (?, ?)"
DELETE_CASCADE = (
    "DELETE FROM rel_comment WHERE post_id IN (SELECT id FROM rel_post WHERE user_id IN ({}))",
    "DELETE FROM rel_post_tag WHERE post_id IN (SELECT id FROM rel_post WHERE user_id IN ({}))",
    "DELETE FROM rel_post WHERE user_id IN ({})",
    "DELETE FROM rel_user WHERE id IN ({})",
)
BULK_UPDATE = "UPDATE rel_post SET likes = ? WHERE views < ?"

#: the strategies the controls run on every strategy shape (the dashboard: sequential everywhere)
READ_STRATEGIES = {"lazy": "lazy", "join": "join", "batched": "batched"}


def in_list(sql: str, n: int) -> str:
    """``sql`` with its ``IN ({})`` holding ``n`` placeholders."""
    return sql.replace("{}", ", ".join("?" * n))


def _group(rows: Sequence[Sequence[Any]]) -> dict[Any, list[Sequence[Any]]]:
    out: dict[Any, list[Sequence[Any]]] = {}
    for r in rows:
        out.setdefault(r[0], []).append(r)
    return out


def nest_join(rows: Sequence[Sequence[Any]], depth: int) -> list[dict[str, Any]]:
    """Users (and posts, and comments at ``depth`` 3) from a LEFT JOIN's flat rows ordered by their ids."""
    users: list[dict[str, Any]] = []
    user = post = None
    for r in rows:
        if user is None or user["id"] != r[0]:
            user = {"id": r[0], "name": r[1], "posts": []}
            users.append(user)
            post = None
        if r[2] is None:
            continue
        if post is None or post["id"] != r[2]:
            post = {"id": r[2], "title": r[3], "views": r[4]}
            if depth == 3:
                post["comments"] = []
            user["posts"].append(post)
        if depth == 3 and r[5] is not None:
            post["comments"].append({"id": r[5], "body": r[6]})
    return users


class SyncControl:
    """The shapes on one synchronous DB-API connection. A control arm sets :attr:`db` and gives
    :meth:`connection`; statements are rendered for ``paramstyle`` (``qmark`` or ``format``)."""

    db = "sqlite"
    paramstyle = "qmark"

    def connection(self) -> Any:
        raise NotImplementedError

    def begin(self) -> None:
        """Open a transaction (sqlite3 in autocommit mode needs BEGIN; a driver that begins implicitly: nothing)."""
        self.connection().execute("BEGIN")

    def commit(self) -> None:
        self.connection().commit()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction around a write or the dashboard: :meth:`begin` ... :meth:`commit` (a driver with a
        transaction block of its own overrides this)."""
        self.begin()
        yield
        self.commit()

    def render(self, text: str) -> str:
        """``text`` for the driver's paramstyle."""
        return text if self.paramstyle == "qmark" else text.replace("?", "%s")

    #: the name :meth:`render` had (a Tests 1-3 control keeps its ``ControlSql`` as ``self.sql``, which hides it)
    sql = render

    def q(self, text: str, params: Sequence[Any] = ()) -> list[Sequence[Any]]:
        cur = self.connection().cursor()
        cur.execute(self.render(text), params)
        rows = cur.fetchall()
        cur.close()
        return rows

    def q_in(self, text: str, keys: Sequence[Any]) -> list[Sequence[Any]]:
        return self.q(in_list(text, len(keys)), keys) if keys else []

    # -- nested reads ---------------------------------------------------------------------------------
    def _users_nested(self, strategy: str, offset: int, limit: int, depth: int) -> list[dict[str, Any]]:
        if strategy == "join":
            return nest_join(self.q(USERS_POSTS_JOIN if depth == 2 else USERS_POSTS_COMMENTS_JOIN, (limit, offset)),
                             depth)
        users = self.q(USERS_PAGE, (limit, offset))
        return self._with_posts(strategy, users, depth)

    def _with_posts(self, strategy: str, users: Sequence[Sequence[Any]], depth: int) -> list[dict[str, Any]]:
        if strategy == "lazy":
            out = []
            for u in users:
                posts = []
                for p in self.q(POSTS_OF_USER, (u[0],)):
                    post = {"id": p[0], "title": p[1], "views": p[2]}
                    if depth == 3:
                        post["comments"] = [{"id": c[0], "body": c[1]} for c in self.q(COMMENTS_OF_POST, (p[0],))]
                    posts.append(post)
                out.append({"id": u[0], "name": u[1], "posts": posts})
            return out
        posts_of = _group(self.q_in(POSTS_OF_USERS, [u[0] for u in users]))
        comments_of: dict[Any, list[Sequence[Any]]] = {}
        if depth == 3:
            comments_of = _group(self.q_in(COMMENTS_OF_POSTS, [p[1] for ps in posts_of.values() for p in ps]))
        out = []
        for u in users:
            posts = []
            for p in posts_of.get(u[0], ()):
                post = {"id": p[1], "title": p[2], "views": p[3]}
                if depth == 3:
                    post["comments"] = [{"id": c[1], "body": c[2]} for c in comments_of.get(p[1], ())]
                posts.append(post)
            out.append({"id": u[0], "name": u[1], "posts": posts})
        return out

    def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        return [self._users_nested(strategy, o, limit, 2) for o in offsets]

    def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        return [self._users_nested(strategy, o, limit, 3) for o in offsets]

    def user_deep(self, strategy: str, user_ids: Sequence[int]) -> Any:
        out = []
        for uid in user_ids:
            if strategy == "join":
                out.extend(nest_join(self.q(USER_DEEP_JOIN, (uid,)), 3))
            else:
                out.extend(self._with_posts(strategy, self.q(USER_BY_ID, (uid,)), 3))
        return out

    def posts_authors(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        out = []
        for o in offsets:
            if strategy == "join":
                out.append([{"id": r[0], "title": r[1], "author": {"id": r[2], "name": r[3],
                                                                   "organization": {"id": r[4], "name": r[5]}}}
                            for r in self.q(POSTS_AUTHORS_JOIN, (limit, o))])
                continue
            posts = self.q(POSTS_PAGE, (limit, o))
            if strategy == "lazy":
                page = []
                for p in posts:
                    u = self.q(USER_WITH_ORG_ID, (p[2],))[0]
                    org = self.q(ORG_BY_ID, (u[2],))[0]
                    page.append({"id": p[0], "title": p[1], "author": {"id": u[0], "name": u[1],
                                                                       "organization": {"id": org[0], "name": org[1]}}})
                out.append(page)
                continue
            users = {u[0]: u for u in self.q_in(USERS_WITH_ORG_ID, sorted({p[2] for p in posts}))}
            orgs = {g[0]: g for g in self.q_in(ORGS_BY_ID, sorted({u[2] for u in users.values()}))}
            page = []
            for p in posts:
                u = users[p[2]]
                org = orgs[u[2]]
                page.append({"id": p[0], "title": p[1], "author": {"id": u[0], "name": u[1],
                                                                   "organization": {"id": org[0], "name": org[1]}}})
            out.append(page)
        return out

    def posts_tags(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        out = []
        for o in offsets:
            if strategy == "join":
                page: list[dict[str, Any]] = []
                for r in self.q(POSTS_TAGS_JOIN, (limit, o)):
                    if not page or page[-1]["id"] != r[0]:
                        page.append({"id": r[0], "title": r[1], "tags": []})
                    if r[2] is not None:
                        page[-1]["tags"].append({"id": r[2], "name": r[3]})
                out.append(page)
                continue
            posts = self.q(POSTS_PAGE, (limit, o))
            if strategy == "lazy":
                out.append([{"id": p[0], "title": p[1],
                             "tags": [{"id": t[0], "name": t[1]} for t in self.q(TAGS_OF_POST, (p[0],))]}
                            for p in posts])
                continue
            tags_of = _group(self.q_in(TAGS_OF_POSTS, [p[0] for p in posts]))
            out.append([{"id": p[0], "title": p[1], "tags": [{"id": t[1], "name": t[2]} for t in tags_of.get(p[0], ())]}
                        for p in posts])
        return out

    # -- flat reads -------------------------------------------------------------------------------------
    def users_filter(self, views: int, offsets: Sequence[int], limit: int) -> Any:
        return [[{"id": r[0], "name": r[1]} for r in self.q(USERS_FILTER, (views, limit, o))] for o in offsets]

    def users_post_count(self, offsets: Sequence[int], limit: int) -> Any:
        return [[{"id": r[0], "name": r[1], "post_count": r[2]} for r in self.q(USERS_POST_COUNT, (limit, o))]
                for o in offsets]

    def org_stats(self, thresholds: Sequence[int]) -> Any:
        return [[{"id": r[0], "posts": r[1], "avg_views": float(r[2])} for r in self.q(ORG_STATS, (t,))]
                for t in thresholds]

    def count_filter(self, thresholds: Sequence[int]) -> Any:
        return [self.q(COUNT_FILTER, (t,))[0][0] for t in thresholds]

    def page_offset(self, offset: int, limit: int, repeats: int) -> Any:
        return [[{"id": r[0], "title": r[1], "views": r[2]} for r in self.q(PAGE_OFFSET, (limit, offset))]
                for _ in range(repeats)]

    def page_keyset(self, after_id: int, limit: int, repeats: int) -> Any:
        return [[{"id": r[0], "title": r[1], "views": r[2]} for r in self.q(PAGE_KEYSET, (after_id, limit))]
                for _ in range(repeats)]

    def stream_cursor(self) -> Any:
        """A cursor that streams (a server-side one where the driver has it)."""
        return self.connection().cursor()

    def stream_comments(self, batch: int) -> Any:
        cur = self.stream_cursor()
        cur.execute(STREAM)
        result = drain(cur, batch)
        cur.close()
        self.after_stream()
        return result

    def after_stream(self) -> None:
        """End what streaming opened (a server-side cursor's transaction)."""

    def hot_get(self, ids: Sequence[int]) -> Any:
        out = []
        for i in ids:
            r = self.q(POST_BY_ID, (i,))[0]
            out.append({"id": r[0], "title": r[1], "views": r[2]})
        return out

    def dashboard(self, strategy: str, repeats: int) -> Any:
        out = []
        for _ in range(repeats):
            with self.transaction():
                answers = [self.q(text) for text in DASHBOARD]
            out.append(dashboard_result(answers))
        return out

    # -- writes ---------------------------------------------------------------------------------------
    def executemany(self, text: str, rows: Sequence[Sequence[Any]]) -> None:
        cur = self.connection().cursor()
        cur.executemany(self.render(text), rows)
        cur.close()

    def execute(self, text: str, params: Sequence[Any] = ()) -> Any:
        cur = self.connection().cursor()
        cur.execute(self.render(text), params)
        last = getattr(cur, "lastrowid", None)  # psycopg 3's cursor has none (its inserts say RETURNING id)
        cur.close()
        return last

    def write_transaction(self) -> Any:
        """The transaction of one write shape (:meth:`transaction`; psycopg's control pipelines it)."""
        return self.transaction()

    def increment(self, post_ids: Sequence[int]) -> None:
        with self.write_transaction():
            self.executemany(INCREMENT, [(i,) for i in post_ids])

    def upsert(self, rows: Sequence[Mapping[str, Any]]) -> None:
        with self.write_transaction():
            self.executemany(UPSERT[self.db], [(r["organization_id"], r["email"], r["name"]) for r in rows])

    def insert_returning_id(self, text: str, params: Sequence[Any]) -> int:
        """An insert's new id (the cursor's lastrowid; PostgreSQL's control appends RETURNING id)."""
        return self.execute(text, params)

    def nested_create(self, users: Sequence[Mapping[str, Any]]) -> None:
        with self.write_transaction():
            links = []
            for u in users:
                uid = self.insert_returning_id(INSERT_USER, (u["organization_id"], u["email"], u["name"]))
                for p in u["posts"]:
                    pid = self.insert_returning_id(INSERT_POST, (uid, p["title"], False))
                    links.extend((pid, t) for t in p["tag_ids"])
            self.executemany(INSERT_LINK, links)

    def delete_cascade(self, user_ids: Sequence[int]) -> None:
        with self.write_transaction():
            for text in DELETE_CASCADE:
                self.execute(in_list(text, len(user_ids)), list(user_ids))

    def bulk_update(self, views_below: int, likes: int) -> None:
        with self.write_transaction():
            self.execute(BULK_UPDATE, (likes, views_below))


def drain(cur: Any, batch: int) -> dict[str, int]:
    """Every row of an executed streaming cursor, ``fetchmany(batch)`` at a time, into :class:`StreamTotals`."""
    totals = StreamTotals()
    while True:
        rows = cur.fetchmany(batch)
        if not rows:
            break
        for r in rows:
            totals.add(r[0], r[1])
    return totals.result()


def dashboard_result(answers: Sequence[Sequence[Sequence[Any]]]) -> dict[str, Any]:
    """The dashboard's canonical answer from its five queries' rows."""
    users, published, latest, top, per_org = answers
    return {"users": users[0][0], "published": published[0][0],
            "latest": [{"id": r[0], "title": r[1]} for r in latest],
            "top": [{"id": r[0], "views": r[1]} for r in top],
            "per_org": [{"id": r[0], "users": r[1]} for r in per_org]}


Query = Callable[[str, Sequence[Any]], list[Sequence[Any]]]
