"""The contract of a relational arm: one ORM (or a control) running Test 4's shapes (``workload.relational``).

A relational arm is a class of its own beside the ORM's Tests 1-3 arm, usually a subclass of it (so that
``open``, ``close``, ``pragmas`` and ``restore`` are shared) and of :class:`RelationalArm`. The registry names it
in ``ArmEntry.relational``. The harness:

1. builds a starting state once: ``open(empty)``, ``create_schema()`` (the six tables of
   ``workload.relational.TABLES``, with exactly those table and column names, every foreign key indexed, the
   unique keys on ``rel_user.email`` and ``rel_tag.name``, types as the ORM's users map them), ``close()``;
   then it fills the tables itself through its own connection (the same rows for every arm), unless the arm
   defines ``populate_relational`` (an engine the harness cannot write with SQL);
2. per round: calls the shape's method with the inputs the plan prepared (plain data) inside the timed
   region, compares the returned canonical result with the expected one in full (reads) or reads every
   table back through its own connection (writes), then ``restore(template)``.

Each shape method returns the canonical result itself (``workload.relational.expected_result`` says
exactly what), building it from the ORM's objects inside the method: touching every attribute is what makes
a lazy strategy load while the clock runs, and the plain dicts cost every arm the same. Reads start from
nothing an earlier round left (open a new session or unit of work inside the method where the ORM has one);
inside one call the ORM's identity map is its own business.

Strategy shapes (nested, to-one and many-to-many reads, and the dashboard) take the strategy's name first.
An arm declares the strategies it runs per shape in :attr:`RelationalArm.strategies` (name -> kind, one of
``workload.relational.STRATEGY_KINDS``; the dashboard's are ``sequential`` / ``pipelined``), and every
strategy it does not run, with the reason, in :attr:`RelationalArm.strategy_notes`.
"""

from __future__ import annotations

import importlib.resources
import tomllib
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

from pytest_ormbench.workload.relational import (DASHBOARD_STRATEGIES, SHAPES, SHAPES_BY_NAME, STRATEGY_KINDS,
    Shape)

#: the strategies the issue asks each arm family for, in the order tables show them
STRATEGY_ORDER = ("lazy", "join", "joined", "contains_eager", "select_related", "nested", "batched", "selectin",
                  "subquery", "prefetch", "prefetch_related", "m2m", "sequential", "pipelined")


class RelationalArm:
    """Mixin: what an arm declares and implements for Test 4. Combine it with the ORM's arm base."""

    #: shape name -> {strategy name as the ORM calls it: kind ("lazy", "join", "batched"; the dashboard:
    #: "sequential", "pipelined")}. Shapes without a strategy axis are not listed.
    strategies: ClassVar[Mapping[str, Mapping[str, str]]] = {}
    #: "shape" or "shape.strategy" -> why the arm does not run it (a shape: unsupported; a strategy: the ORM
    #: has no such way to load that relation). Shown in docs/relational.md and on the cells.
    strategy_notes: ClassVar[Mapping[str, str]] = {}
    #: shape -> how it is written where that is not the ORM's own high-level API (e.g. "a subquery through the
    #: query builder: the ORM has no relation count"), recorded on the cell and shown in the tables
    shape_notes: ClassVar[Mapping[str, str]] = {}
    #: who deletes a user's posts, comments and links in ``delete_cascade``: "client" (the arm, or its ORM, issues
    #: the deletes) or "database" (ON DELETE CASCADE in the schema the arm created)
    cascade: ClassVar[str] = "client"

    # -- the shapes (see workload.relational for each one's exact result) ---------------------------------
    def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        """R1: per offset, ``limit`` users by id with their posts by id: ``[[{id, name, posts: [{id, title,
        views}]}]]``."""
        raise _missing("users_posts")

    def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        """R2: as R1, each post with ``comments: [{id, body}]`` by id."""
        raise _missing("users_posts_comments")

    def user_deep(self, strategy: str, user_ids: Sequence[int]) -> Any:
        """R3: per id, the user by primary key with posts and comments: ``[{id, name, posts: [... comments]}]``."""
        raise _missing("user_deep")

    def posts_authors(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        """R4: per offset, ``limit`` posts by id: ``[[{id, title, author: {id, name, organization: {id, name}}}]]``."""
        raise _missing("posts_authors")

    def posts_tags(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        """R5: per offset, ``limit`` posts by id with their tags by id: ``[[{id, title, tags: [{id, name}]}]]``."""
        raise _missing("posts_tags")

    def users_filter(self, views: int, offsets: Sequence[int], limit: int) -> Any:
        """R6: per offset, the page of users (by id) having a published post with more than ``views`` views:
        ``[[{id, name}]]`` (each user once)."""
        raise _missing("users_filter")

    def users_post_count(self, offsets: Sequence[int], limit: int) -> Any:
        """R7: per offset, ``limit`` users by id with their number of posts: ``[[{id, name, post_count}]]``."""
        raise _missing("users_post_count")

    def org_stats(self, thresholds: Sequence[int]) -> Any:
        """R8: per threshold, per organization (by id) over posts with views >= threshold (through their author):
        ``[[{id, posts, avg_views}]]`` (organizations without such posts left out; avg_views a float)."""
        raise _missing("org_stats")

    def count_filter(self, thresholds: Sequence[int]) -> Any:
        """R9: per threshold, the number of published posts with more views: ``[int]``."""
        raise _missing("count_filter")

    def page_offset(self, offset: int, limit: int, repeats: int) -> Any:
        """R10: ``repeats`` times, posts by id LIMIT ``limit`` OFFSET ``offset``: ``[[{id, title, views}]]``."""
        raise _missing("page_offset")

    def page_keyset(self, after_id: int, limit: int, repeats: int) -> Any:
        """R11: ``repeats`` times, posts with id > ``after_id`` by id LIMIT ``limit``: as R10."""
        raise _missing("page_keyset")

    def stream_comments(self, batch: int) -> Any:
        """R12: every comment through the ORM's streaming or chunked API in batches of ``batch``:
        ``{count, id_sum, body_chars}`` (every row touched)."""
        raise _missing("stream_comments")

    def hot_get(self, ids: Sequence[int]) -> Any:
        """R13: one get by primary key per id: ``[{id, title, views}]``."""
        raise _missing("hot_get")

    def dashboard(self, strategy: str, repeats: int) -> Any:
        """R14: ``repeats`` times, five queries in one read transaction: ``{users, published, latest: [{id,
        title}] (10 newest by id), top: [{id, views}] (5 most viewed, ties by id), per_org: [{id, users}]}``."""
        raise _missing("dashboard")

    def increment(self, post_ids: Sequence[int]) -> Any:
        """R15: ``likes = likes + 1`` in the database for each post, one statement per post, one transaction."""
        raise _missing("increment")

    def upsert(self, rows: Sequence[Mapping[str, Any]]) -> Any:
        """R16: insert each ``{email, name, organization_id}`` or, where the e-mail exists, set its name; the
        ORM's upsert API, one transaction."""
        raise _missing("upsert")

    def nested_create(self, users: Sequence[Mapping[str, Any]]) -> Any:
        """R17: each ``{email, name, organization_id, posts: [{title, tag_ids}]}`` created with its posts
        (published false, views 0, likes 0) and their links to existing tags, one transaction."""
        raise _missing("nested_create")

    def delete_cascade(self, user_ids: Sequence[int]) -> Any:
        """R18: delete the users with their posts, the posts' comments and tag links, one transaction."""
        raise _missing("delete_cascade")

    def bulk_update(self, views_below: int, likes: int) -> Any:
        """R19: set ``likes`` on every post with fewer than ``views_below`` views, one statement (the ORM's
        update-by-filter)."""
        raise _missing("bulk_update")

    # -- the harness's questions ------------------------------------------------------------------------
    @classmethod
    def shape_strategies(cls, shape: Shape) -> Mapping[str, str]:
        """The strategies the arm runs for ``shape`` (empty for a shape without the axis)."""
        return dict(cls.strategies.get(shape.name, {})) if shape.strategies else {}

    @classmethod
    def unsupported_reason(cls, shape: Shape, strategy: str | None = None) -> str | None:
        """Why the arm does not run ``shape`` (with ``strategy``), or None."""
        reason = cls.strategy_notes.get(shape.name)
        if reason:
            return reason
        if strategy is not None and strategy not in cls.shape_strategies(shape):
            return cls.strategy_notes.get(f"{shape.name}.{strategy}") or "not a strategy of this arm"
        return None


@dataclass(frozen=True)
class Declarations:
    """What a relational arm declares, read from ``<arm name>.toml`` beside its module without importing it (the
    parent plans strategy cells from it; the arm class reads the same file)::

        cascade = "client"                               # or "database"
        [strategies]                                     # shape -> {strategy: kind}
        users_posts = { lazy = "lazy", selectin = "batched", joined = "join" }
        [strategy_notes]                                 # "shape" or "shape.strategy" -> why not
        "posts_authors.prefetch_related" = "..."
        [shape_notes]                                    # shape -> how it is written, where not the ORM's own API
    """

    strategies: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    strategy_notes: Mapping[str, str] = field(default_factory=dict)
    shape_notes: Mapping[str, str] = field(default_factory=dict)
    cascade: str = "client"

    def astuple(self) -> tuple[Any, ...]:
        """``strategies, strategy_notes, shape_notes, cascade`` for a class body to unpack."""
        return (dict(self.strategies), dict(self.strategy_notes), dict(self.shape_notes), self.cascade)


def declarations_file(module: str, arm: str) -> Any:
    """Where the declarations of ``arm``, whose relational class lives in ``module``, are: ``<arm>.toml`` in the
    module's package."""
    package = module.rpartition(".")[0] or module
    return importlib.resources.files(package).joinpath(f"{arm}.toml")


def load_declarations(module: str, arm: str) -> Declarations:
    """The declarations of ``arm`` (see :class:`Declarations`); a missing file declares nothing."""
    path = declarations_file(module, arm)
    if not path.is_file():
        return Declarations()
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    strategies = {str(k): {str(s): str(kind) for s, kind in v.items()} for k, v in data.get("strategies", {}).items()}
    return Declarations(strategies, {str(k): str(v) for k, v in data.get("strategy_notes", {}).items()},
                        {str(k): str(v) for k, v in data.get("shape_notes", {}).items()},
                        str(data.get("cascade", "client")))


def declared(module: str, arm: str) -> tuple[Any, ...]:
    """For a class body: ``strategies, strategy_notes, shape_notes, cascade = declared(__name__, name)``."""
    return load_declarations(module, arm).astuple()


def _missing(shape: str) -> NotImplementedError:
    return NotImplementedError(f"{shape} is not implemented: implement it, or name it in the arm's "
                               f"`strategy_notes` with the reason the ORM cannot do it")


def check_declarations(cls: type) -> list[str]:
    """What is wrong with an arm's declarations (empty: nothing): unknown shapes or kinds, strategy shapes
    without strategies or a reason, shapes neither implemented nor declared."""
    problems = []
    for name, strategies in cls.strategies.items():
        shape = SHAPES_BY_NAME.get(name)
        if shape is None or not shape.strategies:
            problems.append(f"strategies for {name!r}, which has no strategy axis")
            continue
        kinds = DASHBOARD_STRATEGIES if shape.overlap else STRATEGY_KINDS
        for strategy, kind in strategies.items():
            if kind not in kinds:
                problems.append(f"{name}.{strategy}: kind {kind!r} is not one of {', '.join(kinds)}")
    for key in cls.strategy_notes:
        if key.partition(".")[0] not in SHAPES_BY_NAME:
            problems.append(f"strategy_notes names {key!r}, not a shape")
    for shape in SHAPES:
        if shape.name in cls.strategy_notes:
            continue
        if shape.strategies and not cls.strategies.get(shape.name):
            problems.append(f"{shape.name}: no strategy and no reason")
        if getattr(cls, shape.name) is getattr(RelationalArm, shape.name):
            problems.append(f"{shape.name}: neither implemented nor declared unsupported")
    if cls.cascade not in ("client", "database"):
        problems.append(f"cascade is {cls.cascade!r}, not 'client' or 'database'")
    return problems


# --------------------------------------------------------------------------
# Building the canonical result from objects (shared, so that every arm does the same plain-Python work)
# --------------------------------------------------------------------------

def user_dict(u: Any) -> dict[str, Any]:
    return {"id": u.id, "name": u.name}


def post_dict(p: Any) -> dict[str, Any]:
    return {"id": p.id, "title": p.title, "views": p.views}


def comment_dict(c: Any) -> dict[str, Any]:
    return {"id": c.id, "body": c.body}


def tag_dict(t: Any) -> dict[str, Any]:
    return {"id": t.id, "name": t.name}


def org_dict(o: Any) -> dict[str, Any]:
    return {"id": o.id, "name": o.name}


def users_with_posts(users: Iterable[Any], posts_of: Callable[[Any], Iterable[Any]]) -> list[dict[str, Any]]:
    """``[{id, name, posts: [{id, title, views}]}]`` from user objects and how to reach a user's posts."""
    return [{"id": u.id, "name": u.name, "posts": [post_dict(p) for p in posts_of(u)]} for u in users]


def users_with_posts_comments(users: Iterable[Any], posts_of: Callable[[Any], Iterable[Any]],
                              comments_of: Callable[[Any], Iterable[Any]]) -> list[dict[str, Any]]:
    """As :func:`users_with_posts`, each post with ``comments: [{id, body}]``."""
    return [{"id": u.id, "name": u.name,
             "posts": [{"id": p.id, "title": p.title, "views": p.views,
                        "comments": [comment_dict(c) for c in comments_of(p)]} for p in posts_of(u)]}
            for u in users]


def posts_with_author(posts: Iterable[Any], author_of: Callable[[Any], Any],
                      org_of: Callable[[Any], Any]) -> list[dict[str, Any]]:
    """``[{id, title, author: {id, name, organization: {id, name}}}]``."""
    out = []
    for p in posts:
        a = author_of(p)
        o = org_of(a)
        out.append({"id": p.id, "title": p.title,
                    "author": {"id": a.id, "name": a.name, "organization": {"id": o.id, "name": o.name}}})
    return out


def posts_with_tags(posts: Iterable[Any], tags_of: Callable[[Any], Iterable[Any]]) -> list[dict[str, Any]]:
    """``[{id, title, tags: [{id, name}]}]``."""
    return [{"id": p.id, "title": p.title, "tags": [tag_dict(t) for t in tags_of(p)]} for p in posts]


async def users_with_posts_async(users: Iterable[Any], posts_of: Callable[[Any], Any]) -> list[dict[str, Any]]:
    """As :func:`users_with_posts`, where reaching a user's posts is awaited (an async ORM's lazy load)."""
    return [{"id": u.id, "name": u.name, "posts": [post_dict(p) for p in await posts_of(u)]} for u in users]


async def users_with_posts_comments_async(users: Iterable[Any], posts_of: Callable[[Any], Any],
                                          comments_of: Callable[[Any], Any]) -> list[dict[str, Any]]:
    out = []
    for u in users:
        posts = []
        for p in await posts_of(u):
            posts.append({"id": p.id, "title": p.title, "views": p.views,
                          "comments": [comment_dict(c) for c in await comments_of(p)]})
        out.append({"id": u.id, "name": u.name, "posts": posts})
    return out


async def posts_with_author_async(posts: Iterable[Any], author_of: Callable[[Any], Any],
                                  org_of: Callable[[Any], Any]) -> list[dict[str, Any]]:
    out = []
    for p in posts:
        a = await author_of(p)
        o = await org_of(a)
        out.append({"id": p.id, "title": p.title,
                    "author": {"id": a.id, "name": a.name, "organization": {"id": o.id, "name": o.name}}})
    return out


async def posts_with_tags_async(posts: Iterable[Any], tags_of: Callable[[Any], Any]) -> list[dict[str, Any]]:
    return [{"id": p.id, "title": p.title, "tags": [tag_dict(t) for t in await tags_of(p)]} for p in posts]


def stream_totals() -> "StreamTotals":
    return StreamTotals()


class StreamTotals:
    """What R12 returns, accumulated row by row: ``add(id, body)`` per comment, then :meth:`result`."""

    __slots__ = ("count", "id_sum", "body_chars")

    def __init__(self) -> None:
        self.count = self.id_sum = self.body_chars = 0

    def add(self, comment_id: int, body: str) -> None:
        self.count += 1
        self.id_sum += comment_id
        self.body_chars += len(body)

    def result(self) -> dict[str, int]:
        return {"count": self.count, "id_sum": self.id_sum, "body_chars": self.body_chars}
