"""The relational workload: a blog schema, its seeded data, the shapes read and written on it, and what each
shape must return.

Organizations have users, users write posts, posts have comments, and posts and tags meet through a link
table. Every shape is defined here once, as data and as the exact canonical result it must produce (plain
dicts and lists in a defined order), so that every arm is checked against the same answer. An arm builds that
canonical result itself, inside the timed region: that is how a lazy relation is forced to load while the
clock runs, and it costs every arm the same plain-Python work.

How rows spread over their parents: each post's author and each comment's post is drawn uniformly at
random (seeded), so a user has ten posts on average (from none to about twenty-five) and a post five
comments: pages of the same size cost about the same, some parents have no children (the empty case every
loader must handle), and no page is favoured the way a skew that follows the ids would favour it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Sequence

MODEL = "relational"
TEST_NUMBER = 4
TITLE = "Test 4: relations (organizations, users, posts, comments, tags)"

SEED = 20261204

#: table -> its columns in canonical order (every arm creates exactly these tables and columns)
TABLES: dict[str, tuple[str, ...]] = {
    "rel_org": ("id", "name"),
    "rel_user": ("id", "organization_id", "email", "name"),
    "rel_post": ("id", "user_id", "title", "published", "views", "likes"),
    "rel_comment": ("id", "post_id", "body"),
    "rel_tag": ("id", "name"),
    "rel_post_tag": ("post_id", "tag_id"),
}
#: the order a database is filled in (parents first) and emptied in (the reverse)
TABLE_ORDER: tuple[str, ...] = tuple(TABLES)
#: columns holding a boolean (SQLite and MariaDB hand back 0/1)
BOOLEAN_COLUMNS = {("rel_post", "published")}

# --------------------------------------------------------------------------
# Loading strategies
# --------------------------------------------------------------------------

#: what a strategy does, whatever the ORM calls it: one query per parent, one query with joins, or one more
#: query per relation level with the parents' keys (``IN (...)`` or a subquery)
STRATEGY_KINDS: dict[str, str] = {
    "lazy": "one query per parent object, issued when its relation is touched (the N+1)",
    "join": "one query that joins the relation in (or aggregates it into the row)",
    "batched": "one more query per relation level, for every parent at once (IN (...) or a subquery)",
}


# --------------------------------------------------------------------------
# Sizes
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RelationalSizes:
    """How big the data is. The default is seed 002's (5 organizations, 1,000 users, 10,000 posts, 50,000
    comments) plus 50 tags, three per post."""

    orgs: int = 5
    users: int = 1_000
    posts: int = 10_000
    comments: int = 50_000
    tags: int = 50
    tags_per_post: int = 3

    @classmethod
    def from_iterations(cls, iterations: int) -> "RelationalSizes":
        """The scale of ``--ormbench-iterations``: 100 (the default) gives the default sizes; smaller runs
        (the smoke, ``quick``) scale users, posts and comments down with it, never below 100 users."""
        users = max(100, 10 * iterations)
        return cls(orgs=5, users=users, posts=10 * users, comments=50 * users, tags=50, tags_per_post=3)

    @property
    def key(self) -> str:
        return f"o{self.orgs}-u{self.users}-p{self.posts}-c{self.comments}-t{self.tags}x{self.tags_per_post}"


# --------------------------------------------------------------------------
# The data
# --------------------------------------------------------------------------


def _rng(salt: int) -> random.Random:
    return random.Random(SEED * 7919 + salt)


@dataclass(frozen=True)
class RelationalData:
    """Every row of a starting state, as tuples in each table's column order (ids 1..n)."""

    sizes: RelationalSizes

    @cached_property
    def rows(self) -> dict[str, list[tuple[Any, ...]]]:
        s = self.sizes
        rng = _rng(1)
        orgs = [(i, f"Organization {i}") for i in range(1, s.orgs + 1)]
        users = [(i, 1 + (i - 1) % s.orgs, f"user{i}@example.com", f"User {i}") for i in range(1, s.users + 1)]
        posts = []
        for i in range(1, s.posts + 1):
            posts.append((i, rng.randint(1, s.users), f"Post {i}", rng.random() < 0.7, rng.randint(0, 9_999),
                          rng.randint(0, 50)))
        comments = [(i, rng.randint(1, s.posts), f"Comment {i} on a post, {rng.randrange(10**6):06d}")
                    for i in range(1, s.comments + 1)]
        tags = [(i, f"tag-{i:03d}") for i in range(1, s.tags + 1)]
        links = []
        for post_id in range(1, s.posts + 1):
            for tag_id in sorted(rng.sample(range(1, s.tags + 1), s.tags_per_post)):
                links.append((post_id, tag_id))
        return {"rel_org": orgs, "rel_user": users, "rel_post": posts, "rel_comment": comments, "rel_tag": tags,
                "rel_post_tag": links}

    # -- indexes the expectations use ---------------------------------------------------------------------
    @cached_property
    def posts_of_user(self) -> dict[int, list[tuple[Any, ...]]]:
        out: dict[int, list[tuple[Any, ...]]] = {u[0]: [] for u in self.rows["rel_user"]}
        for p in self.rows["rel_post"]:
            out[p[1]].append(p)
        return out

    @cached_property
    def comments_of_post(self) -> dict[int, list[tuple[Any, ...]]]:
        out: dict[int, list[tuple[Any, ...]]] = {p[0]: [] for p in self.rows["rel_post"]}
        for c in self.rows["rel_comment"]:
            out[c[1]].append(c)
        return out

    @cached_property
    def tags_of_post(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {p[0]: [] for p in self.rows["rel_post"]}
        for post_id, tag_id in self.rows["rel_post_tag"]:
            out[post_id].append(tag_id)
        return out

    def user(self, user_id: int) -> tuple[Any, ...]:
        return self.rows["rel_user"][user_id - 1]

    def post(self, post_id: int) -> tuple[Any, ...]:
        return self.rows["rel_post"][post_id - 1]


_DATA: dict[RelationalSizes, RelationalData] = {}


def data_for(sizes: RelationalSizes) -> RelationalData:
    """The one data set of these sizes (built once per process)."""
    if sizes not in _DATA:
        _DATA[sizes] = RelationalData(sizes)
    return _DATA[sizes]


# -- the canonical objects every arm returns ------------------------------------------------------------

def user_obj(u: tuple[Any, ...]) -> dict[str, Any]:
    return {"id": u[0], "name": u[3]}


def post_obj(p: tuple[Any, ...]) -> dict[str, Any]:
    return {"id": p[0], "title": p[2], "views": p[4]}


def comment_obj(c: tuple[Any, ...]) -> dict[str, Any]:
    return {"id": c[0], "body": c[2]}


def tag_obj(t: tuple[Any, ...]) -> dict[str, Any]:
    return {"id": t[0], "name": t[1]}


def org_obj(o: tuple[Any, ...]) -> dict[str, Any]:
    return {"id": o[0], "name": o[1]}


# --------------------------------------------------------------------------
# The shapes
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """One relational operation: what it reads or writes, and whether loading strategy is an axis of it."""

    name: str
    code: str  # short, unique: the op column of a record (A-K are Tests 1-3's)
    title: str
    kind: str  # "read" or "write"
    #: the strategy axis applies (nested, to-one and many-to-many reads)
    strategies: bool = False
    #: what one repetition is, for the tables' ops/s ("page", "user", "query", ...)
    unit: str = "query"
    #: the dashboard: its "strategies" are sequential or overlapped queries, not relation loading
    overlap: bool = False

    @property
    def read_only(self) -> bool:
        """It reads and leaves the data as it found it (a server then skips the between-round refill)."""
        return self.kind == "read"

    @property
    def letter(self) -> str:
        return self.code

    @property
    def object_op(self) -> bool:
        """Test 4's shapes are not in Tests 1-3's geometric means (they have their own)."""
        return False


SHAPES: tuple[Shape, ...] = (
    Shape("users_posts", "R1", "Nested, two levels: 50 users with their posts", "read", strategies=True, unit="page"),
    Shape("users_posts_comments", "R2", "Nested, three levels: 20 users, their posts, their comments", "read",
          strategies=True, unit="page"),
    Shape("user_deep", "R3", "One user by primary key with posts and their comments", "read", strategies=True,
          unit="user"),
    Shape("posts_authors", "R4", "To-one: 100 posts with author and the author's organization", "read",
          strategies=True, unit="page"),
    Shape("posts_tags", "R5", "Many-to-many: 100 posts with their tags", "read", strategies=True, unit="page"),
    Shape("users_filter", "R6", "Relation filter: users with a popular published post, a page of 50", "read",
          unit="page"),
    Shape("users_post_count", "R7", "Relation count: 50 users with their number of posts", "read", unit="page"),
    Shape("org_stats", "R8", "Group-by: per organization, posts and average views", "read", unit="query"),
    Shape("count_filter", "R9", "Count with a filter", "read", unit="query"),
    Shape("page_offset", "R10", "Pagination by offset: 20 posts at offset 9,000", "read", unit="page"),
    Shape("page_keyset", "R11", "Pagination by keyset: the same 20 posts after the last id", "read", unit="page"),
    Shape("stream_comments", "R12", "Streaming every comment in batches of 1,000", "read", unit="row"),
    Shape("hot_get", "R13", "Hot repeated shape: 500 posts by primary key", "read", unit="get"),
    Shape("dashboard", "R14", "Dashboard: five independent queries in one read transaction", "read",
          strategies=True, unit="dashboard", overlap=True),
    Shape("increment", "R15", "Atomic increment of a counter on 100 posts", "write", unit="post"),
    Shape("upsert", "R16", "Upsert of 100 users on their unique e-mail", "write", unit="row"),
    Shape("nested_create", "R17", "Nested create: 50 users, 5 posts each, 2 tags per post", "write", unit="user"),
    Shape("delete_cascade", "R18", "Delete 20 users with their posts and comments", "write", unit="user"),
    Shape("bulk_update", "R19", "Bulk update by a filter", "write", unit="query"),
)
SHAPES_BY_NAME = {s.name: s for s in SHAPES}
SHAPES_BY_CODE = {s.code: s for s in SHAPES}
#: the dashboard's two ways: one query after another, or overlapped (a pipeline) where the ORM offers it
DASHBOARD_STRATEGIES = {"sequential": "one query after another, each waiting for its answer",
                        "pipelined": "the five queries sent without waiting for each answer (a pipeline)"}

#: pagination repeats its page this often in a round: PostgreSQL plans a prepared statement anew for its
#: first five executions and may switch to a generic plan from the sixth (seed 002's loss)
PAGE_REPEATS = 8
STREAM_BATCH = 1_000
HOT_GETS = 500
POPULAR_VIEWS = 9_000


def _spread(n: int, total: int, start: int = 1) -> list[int]:
    """``n`` distinct ids in ``start..total``, spread evenly (deterministic)."""
    n = min(n, total - start + 1)
    step = (total - start + 1) / n
    return [start + int(i * step) for i in range(n)]


@dataclass(frozen=True)
class ShapePlan:
    """One shape's exact work on one data set: its inputs, and how to check what it returned or left."""

    shape: Shape
    sizes: RelationalSizes
    inputs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def data(self) -> RelationalData:
        return data_for(self.sizes)

    @property
    def repetitions(self) -> int:
        """How many units one round does (the tables' ops/s divide by this)."""
        i = self.inputs
        name = self.shape.name
        if name == "stream_comments":
            return self.sizes.comments
        for key in ("offsets", "user_ids", "thresholds", "post_ids", "ids"):
            if key in i:
                return len(i[key])
        if name in ("page_offset", "page_keyset", "dashboard"):
            return int(i["repeats"])
        if name in ("upsert",):
            return len(i["rows"])
        if name == "nested_create":
            return len(i["users"])
        return 1

    @property
    def min_selects(self) -> int:
        """The fewest SELECTs a verified read can have sent: one per repetition (a read answered from a cache
        carried over from an earlier round sends fewer)."""
        if self.shape.kind != "read":
            return 0
        if self.shape.name == "stream_comments":
            return 1
        if self.shape.name == "dashboard":
            return 5 * self.repetitions
        return self.repetitions


def make_shape_plan(shape_name: str, sizes: RelationalSizes) -> ShapePlan:
    """The inputs of ``shape_name`` on data of ``sizes`` (the same for every arm)."""
    shape = SHAPES_BY_NAME[shape_name]
    s = sizes
    d = data_for(sizes)
    pages = lambda per, total: [o for o in _spread(4, max(1, total - per + 1), start=0)]  # noqa: E731
    name = shape.name
    inputs: dict[str, Any]
    if name == "users_posts":
        inputs = {"offsets": pages(50, s.users), "limit": 50}
    elif name == "users_posts_comments":
        inputs = {"offsets": pages(20, s.users), "limit": 20}
    elif name == "user_deep":
        inputs = {"user_ids": _spread(20, s.users)}
    elif name in ("posts_authors", "posts_tags"):
        inputs = {"offsets": pages(100, s.posts), "limit": 100}
    elif name == "users_filter":
        matching = len(_popular_users(d))
        inputs = {"views": POPULAR_VIEWS, "offsets": pages(50, matching), "limit": 50}
    elif name == "users_post_count":
        inputs = {"offsets": pages(50, s.users), "limit": 50}
    elif name == "org_stats":
        inputs = {"thresholds": [0, 2_500, 5_000, 7_500]}
    elif name == "count_filter":
        inputs = {"thresholds": [1_000 * k for k in range(10)]}
    elif name in ("page_offset", "page_keyset"):
        # ids are 1..posts without gaps: the page at offset N is the page after id N
        offset = min(9_000, s.posts - 20) if s.posts >= 10_000 else int(s.posts * 0.9)
        where = {"offset": offset} if name == "page_offset" else {"after_id": offset}
        inputs = {**where, "limit": 20, "repeats": PAGE_REPEATS}
    elif name == "stream_comments":
        inputs = {"batch": STREAM_BATCH}
    elif name == "hot_get":
        ids = _spread(HOT_GETS, s.posts)
        random.Random(SEED).shuffle(ids)
        inputs = {"ids": ids}
    elif name == "dashboard":
        inputs = {"repeats": 4}
    elif name == "increment":
        inputs = {"post_ids": _spread(100, s.posts)}
    elif name == "upsert":
        existing = _spread(50, s.users)
        rows = [{"email": f"user{u}@example.com", "name": f"User {u} renamed", "organization_id": d.user(u)[1]}
                for u in existing]
        rows += [{"email": f"upserted{k}@example.com", "name": f"Upserted {k}", "organization_id": 1 + k % s.orgs}
                 for k in range(1, 51)]
        inputs = {"rows": rows}
    elif name == "nested_create":
        users = []
        for k in range(1, 51):
            posts = [{"title": f"New post {k}-{j}", "tag_ids": [1 + (k + j) % s.tags, 1 + (k + 2 * j + 7) % s.tags]}
                     for j in range(1, 6)]
            users.append({"email": f"new{k}@example.com", "name": f"New user {k}", "organization_id": 1 + k % s.orgs,
                          "posts": posts})
        inputs = {"users": users}
    elif name == "delete_cascade":
        inputs = {"user_ids": _spread(20, s.users)}
    elif name == "bulk_update":
        inputs = {"views_below": 1_000, "likes": 0}
    else:  # pragma: no cover - every shape has a branch
        raise KeyError(name)
    return ShapePlan(shape, sizes, inputs)


# --------------------------------------------------------------------------
# What each read must return
# --------------------------------------------------------------------------


def _popular_users(d: RelationalData, views: int = POPULAR_VIEWS) -> list[int]:
    return sorted({p[1] for p in d.rows["rel_post"] if p[3] and p[4] > views})


def expected_result(plan: ShapePlan) -> Any:
    """The canonical result of a read shape (writes return None and are checked on the database)."""
    d, i, name = plan.data, plan.inputs, plan.shape.name
    users = d.rows["rel_user"]
    posts = d.rows["rel_post"]
    if name == "users_posts":
        return [[{**user_obj(u), "posts": [post_obj(p) for p in d.posts_of_user[u[0]]]}
                 for u in users[o:o + i["limit"]]] for o in i["offsets"]]
    if name == "users_posts_comments":
        return [[{**user_obj(u), "posts": [{**post_obj(p), "comments": [comment_obj(c) for c in d.comments_of_post[p[0]]]}
                                           for p in d.posts_of_user[u[0]]]}
                 for u in users[o:o + i["limit"]]] for o in i["offsets"]]
    if name == "user_deep":
        return [{**user_obj(d.user(uid)),
                 "posts": [{**post_obj(p), "comments": [comment_obj(c) for c in d.comments_of_post[p[0]]]}
                           for p in d.posts_of_user[uid]]} for uid in i["user_ids"]]
    if name == "posts_authors":
        orgs = d.rows["rel_org"]
        return [[{"id": p[0], "title": p[2],
                  "author": {**user_obj(d.user(p[1])), "organization": org_obj(orgs[d.user(p[1])[1] - 1])}}
                 for p in posts[o:o + i["limit"]]] for o in i["offsets"]]
    if name == "posts_tags":
        tags = d.rows["rel_tag"]
        return [[{"id": p[0], "title": p[2], "tags": [tag_obj(tags[t - 1]) for t in d.tags_of_post[p[0]]]}
                 for p in posts[o:o + i["limit"]]] for o in i["offsets"]]
    if name == "users_filter":
        popular = _popular_users(d, i["views"])
        return [[user_obj(d.user(u)) for u in popular[o:o + i["limit"]]] for o in i["offsets"]]
    if name == "users_post_count":
        return [[{**user_obj(u), "post_count": len(d.posts_of_user[u[0]])} for u in users[o:o + i["limit"]]]
                for o in i["offsets"]]
    if name == "org_stats":
        out = []
        for t in i["thresholds"]:
            per: dict[int, list[int]] = {}
            for p in posts:
                if p[4] >= t:
                    per.setdefault(d.user(p[1])[1], []).append(p[4])
            out.append([{"id": org, "posts": len(v), "avg_views": sum(v) / len(v)} for org, v in sorted(per.items())])
        return out
    if name == "count_filter":
        return [sum(1 for p in posts if p[3] and p[4] > t) for t in i["thresholds"]]
    if name == "page_offset":
        page = [post_obj(p) for p in posts[i["offset"]:i["offset"] + i["limit"]]]
        return [page] * i["repeats"]
    if name == "page_keyset":
        page = [post_obj(p) for p in posts if p[0] > i["after_id"]][:i["limit"]]
        return [page] * i["repeats"]
    if name == "stream_comments":
        comments = d.rows["rel_comment"]
        return {"count": len(comments), "id_sum": sum(c[0] for c in comments),
                "body_chars": sum(len(c[2]) for c in comments)}
    if name == "hot_get":
        return [post_obj(d.post(pid)) for pid in i["ids"]]
    if name == "dashboard":
        return [dashboard_expected(d)] * i["repeats"]
    return None


def dashboard_expected(d: RelationalData) -> dict[str, Any]:
    """The dashboard's five answers: users, published posts, the 10 newest posts, the 5 most viewed posts
    (ties by id), users per organization."""
    posts = d.rows["rel_post"]
    per_org: dict[int, int] = {}
    for u in d.rows["rel_user"]:
        per_org[u[1]] = per_org.get(u[1], 0) + 1
    return {
        "users": len(d.rows["rel_user"]),
        "published": sum(1 for p in posts if p[3]),
        "latest": [{"id": p[0], "title": p[2]} for p in sorted(posts, key=lambda p: -p[0])[:10]],
        "top": [{"id": p[0], "views": p[4]} for p in sorted(posts, key=lambda p: (-p[4], p[0]))[:5]],
        "per_org": [{"id": o, "users": n} for o, n in sorted(per_org.items())],
    }


# --------------------------------------------------------------------------
# What each write must leave
# --------------------------------------------------------------------------


def expected_tables(plan: ShapePlan) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows after the shape ran, as sorted tuples in column order. Rows a write creates get ids
    the database chooses, so new rows are compared without their ids (see :func:`comparable`)."""
    d, i, name = plan.data, plan.inputs, plan.shape.name
    rows = {t: list(v) for t, v in d.rows.items()}
    if name == "increment":
        ids = set(i["post_ids"])
        rows["rel_post"] = [(*p[:5], p[5] + 1) if p[0] in ids else p for p in rows["rel_post"]]
    elif name == "upsert":
        by_email = {r["email"]: r for r in i["rows"]}
        kept = []
        for u in rows["rel_user"]:
            r = by_email.pop(u[2], None)
            kept.append((u[0], u[1], u[2], r["name"]) if r else u)
        rows["rel_user"] = kept + [(None, r["organization_id"], r["email"], r["name"]) for r in by_email.values()]
    elif name == "nested_create":
        for u in i["users"]:
            rows["rel_user"].append((None, u["organization_id"], u["email"], u["name"]))
            for p in u["posts"]:
                rows["rel_post"].append((None, ("user", u["email"]), p["title"], False, 0, 0))
                for t in p["tag_ids"]:
                    rows["rel_post_tag"].append((("post", p["title"]), t))
    elif name == "delete_cascade":
        gone_users = set(i["user_ids"])
        gone_posts = {p[0] for p in rows["rel_post"] if p[1] in gone_users}
        rows["rel_user"] = [u for u in rows["rel_user"] if u[0] not in gone_users]
        rows["rel_post"] = [p for p in rows["rel_post"] if p[0] not in gone_posts]
        rows["rel_comment"] = [c for c in rows["rel_comment"] if c[1] not in gone_posts]
        rows["rel_post_tag"] = [lk for lk in rows["rel_post_tag"] if lk[0] not in gone_posts]
    elif name == "bulk_update":
        rows["rel_post"] = [(*p[:5], i["likes"]) if p[4] < i["views_below"] else p for p in rows["rel_post"]]
    return rows


def start_tables(sizes: RelationalSizes) -> dict[str, list[tuple[Any, ...]]]:
    return {t: list(v) for t, v in data_for(sizes).rows.items()}


def canonical_value(table: str, column: str, value: Any) -> Any:
    """A stored value as the expectations hold it (SQLite and MariaDB give booleans as 0/1)."""
    if value is None:
        return None
    if (table, column) in BOOLEAN_COLUMNS:
        return bool(value)
    if isinstance(value, (int, str)):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def relabel_new(tables: Mapping[str, Sequence[Sequence[Any]]], sizes: RelationalSizes) -> dict[str, list[tuple[Any, ...]]]:
    """Rows read back, with the ids of rows a write created (above the data's own ids) replaced by what they
    are (``("user", email)``, ``("post", title)``) or None, so that they compare with :func:`expected_tables`."""
    new_user = {u[0]: u[2] for u in tables["rel_user"] if u[0] > sizes.users}
    new_post = {p[0]: p[2] for p in tables["rel_post"] if p[0] > sizes.posts}
    out = {t: [tuple(r) for r in v] for t, v in tables.items()}
    out["rel_user"] = [(None, *u[1:]) if u[0] in new_user else u for u in out["rel_user"]]
    out["rel_post"] = [(None if p[0] in new_post else p[0], ("user", new_user[p[1]]) if p[1] in new_user else p[1],
                        *p[2:]) for p in out["rel_post"]]
    out["rel_post_tag"] = [(("post", new_post[a]) if a in new_post else a, b) for a, b in out["rel_post_tag"]]
    return {t: sorted(v, key=repr) for t, v in out.items()}


def expected_comparable(plan: ShapePlan) -> dict[str, list[tuple[Any, ...]]]:
    return {t: sorted((tuple(r) for r in v), key=repr) for t, v in expected_tables(plan).items()}
