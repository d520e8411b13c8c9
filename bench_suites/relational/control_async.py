"""Test 4 by hand on an async driver: the algorithms of ``control_sql.SyncControl`` as coroutines.

The SQL is ``control_sql``'s (written with ``?``); :class:`AsyncControl` renders it for the driver (``$1 .. $n``
for asyncpg, ``%s`` for asyncmy) and runs every strategy exactly as the sync controls do: ``lazy`` one query per
parent, ``join`` one statement that joins the relation in, ``batched`` one more query per relation level with the
parents' keys in ``IN (...)``. A control arm gives the driver's primitives: :meth:`AsyncControl.q` (a query's
rows), :meth:`~AsyncControl.execute`, :meth:`~AsyncControl.executemany`,
:meth:`~AsyncControl.insert_returning_id`, :meth:`~AsyncControl.transaction` and
:meth:`~AsyncControl.stream_comments`.
"""

from __future__ import annotations

import re
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Mapping, Sequence

from pytest_ormbench.suites.relational.control_sql import (
    COMMENTS_OF_POST, COMMENTS_OF_POSTS, COUNT_FILTER, DASHBOARD, DELETE_CASCADE, BULK_UPDATE, INCREMENT, INSERT_LINK,
    INSERT_POST, INSERT_USER, ORG_BY_ID, ORG_STATS, ORGS_BY_ID, PAGE_KEYSET, PAGE_OFFSET, POST_BY_ID, POSTS_AUTHORS_JOIN,
    POSTS_OF_USER, POSTS_OF_USERS, POSTS_PAGE, POSTS_TAGS_JOIN, TAGS_OF_POST, TAGS_OF_POSTS, UPSERT, USER_BY_ID,
    USER_DEEP_JOIN, USER_WITH_ORG_ID, USERS_FILTER, USERS_PAGE, USERS_POST_COUNT, USERS_POSTS_COMMENTS_JOIN,
    USERS_POSTS_JOIN, USERS_WITH_ORG_ID, _group, dashboard_result, in_list, nest_join)

_MARK = re.compile(r"\?")


class AsyncControl:
    """The shapes on one async connection. ``paramstyle`` is ``numeric`` (``$n``) or ``format`` (``%s``)."""

    db = "postgresql"
    paramstyle = "numeric"

    # -- the driver's primitives --------------------------------------------------------------------------
    async def q(self, text: str, params: Sequence[Any] = ()) -> Sequence[Sequence[Any]]:
        """The rows of one query (``text`` with ``?`` placeholders)."""
        raise NotImplementedError

    async def execute(self, text: str, params: Sequence[Any] = ()) -> None:
        raise NotImplementedError

    async def executemany(self, text: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    async def insert_returning_id(self, text: str, params: Sequence[Any]) -> int:
        raise NotImplementedError

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        raise NotImplementedError
        yield  # pragma: no cover

    async def stream_comments(self, batch: int) -> Any:
        raise NotImplementedError

    # -- rendering ------------------------------------------------------------------------------------
    _rendered: dict[str, str]

    def render(self, text: str) -> str:
        """``text`` for the driver's paramstyle (cached: the same statements come back every call)."""
        cache = self.__dict__.setdefault("_rendered", {})
        out = cache.get(text)
        if out is None:
            if self.paramstyle == "numeric":
                n = iter(range(1, text.count("?") + 1))
                out = _MARK.sub(lambda _m: f"${next(n)}", text)
            else:
                out = text.replace("?", "%s")
            cache[text] = out
        return out

    async def q_in(self, text: str, keys: Sequence[Any]) -> Sequence[Sequence[Any]]:
        return await self.q(in_list(text, len(keys)), keys) if keys else []

    # -- nested reads ---------------------------------------------------------------------------------
    async def _users_nested(self, strategy: str, offset: int, limit: int, depth: int) -> list[dict[str, Any]]:
        if strategy == "join":
            return nest_join(await self.q(USERS_POSTS_JOIN if depth == 2 else USERS_POSTS_COMMENTS_JOIN,
                                          (limit, offset)), depth)
        users = await self.q(USERS_PAGE, (limit, offset))
        return await self._with_posts(strategy, users, depth)

    async def _with_posts(self, strategy: str, users: Sequence[Sequence[Any]], depth: int) -> list[dict[str, Any]]:
        if strategy == "lazy":
            out = []
            for u in users:
                posts = []
                for p in await self.q(POSTS_OF_USER, (u[0],)):
                    post = {"id": p[0], "title": p[1], "views": p[2]}
                    if depth == 3:
                        post["comments"] = [{"id": c[0], "body": c[1]}
                                            for c in await self.q(COMMENTS_OF_POST, (p[0],))]
                    posts.append(post)
                out.append({"id": u[0], "name": u[1], "posts": posts})
            return out
        posts_of = _group(await self.q_in(POSTS_OF_USERS, [u[0] for u in users]))
        comments_of: dict[Any, list[Sequence[Any]]] = {}
        if depth == 3:
            comments_of = _group(await self.q_in(COMMENTS_OF_POSTS, [p[1] for ps in posts_of.values() for p in ps]))
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

    async def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        return [await self._users_nested(strategy, o, limit, 2) for o in offsets]

    async def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        return [await self._users_nested(strategy, o, limit, 3) for o in offsets]

    async def user_deep(self, strategy: str, user_ids: Sequence[int]) -> Any:
        out = []
        for uid in user_ids:
            if strategy == "join":
                out.extend(nest_join(await self.q(USER_DEEP_JOIN, (uid,)), 3))
            else:
                out.extend(await self._with_posts(strategy, await self.q(USER_BY_ID, (uid,)), 3))
        return out

    async def posts_authors(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        out = []
        for o in offsets:
            if strategy == "join":
                out.append([{"id": r[0], "title": r[1], "author": {"id": r[2], "name": r[3],
                                                                   "organization": {"id": r[4], "name": r[5]}}}
                            for r in await self.q(POSTS_AUTHORS_JOIN, (limit, o))])
                continue
            posts = await self.q(POSTS_PAGE, (limit, o))
            if strategy == "lazy":
                page = []
                for p in posts:
                    u = (await self.q(USER_WITH_ORG_ID, (p[2],)))[0]
                    org = (await self.q(ORG_BY_ID, (u[2],)))[0]
                    page.append({"id": p[0], "title": p[1], "author": {"id": u[0], "name": u[1],
                                                                       "organization": {"id": org[0], "name": org[1]}}})
                out.append(page)
                continue
            users = {u[0]: u for u in await self.q_in(USERS_WITH_ORG_ID, sorted({p[2] for p in posts}))}
            orgs = {g[0]: g for g in await self.q_in(ORGS_BY_ID, sorted({u[2] for u in users.values()}))}
            page = []
            for p in posts:
                u = users[p[2]]
                org = orgs[u[2]]
                page.append({"id": p[0], "title": p[1], "author": {"id": u[0], "name": u[1],
                                                                   "organization": {"id": org[0], "name": org[1]}}})
            out.append(page)
        return out

    async def posts_tags(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        out = []
        for o in offsets:
            if strategy == "join":
                page: list[dict[str, Any]] = []
                for r in await self.q(POSTS_TAGS_JOIN, (limit, o)):
                    if not page or page[-1]["id"] != r[0]:
                        page.append({"id": r[0], "title": r[1], "tags": []})
                    if r[2] is not None:
                        page[-1]["tags"].append({"id": r[2], "name": r[3]})
                out.append(page)
                continue
            posts = await self.q(POSTS_PAGE, (limit, o))
            if strategy == "lazy":
                out.append([{"id": p[0], "title": p[1],
                             "tags": [{"id": t[0], "name": t[1]} for t in await self.q(TAGS_OF_POST, (p[0],))]}
                            for p in posts])
                continue
            tags_of = _group(await self.q_in(TAGS_OF_POSTS, [p[0] for p in posts]))
            out.append([{"id": p[0], "title": p[1], "tags": [{"id": t[1], "name": t[2]} for t in tags_of.get(p[0], ())]}
                        for p in posts])
        return out

    # -- flat reads -------------------------------------------------------------------------------------
    async def users_filter(self, views: int, offsets: Sequence[int], limit: int) -> Any:
        return [[{"id": r[0], "name": r[1]} for r in await self.q(USERS_FILTER, (views, limit, o))] for o in offsets]

    async def users_post_count(self, offsets: Sequence[int], limit: int) -> Any:
        return [[{"id": r[0], "name": r[1], "post_count": r[2]} for r in await self.q(USERS_POST_COUNT, (limit, o))]
                for o in offsets]

    async def org_stats(self, thresholds: Sequence[int]) -> Any:
        return [[{"id": r[0], "posts": r[1], "avg_views": float(r[2])} for r in await self.q(ORG_STATS, (t,))]
                for t in thresholds]

    async def count_filter(self, thresholds: Sequence[int]) -> Any:
        return [(await self.q(COUNT_FILTER, (t,)))[0][0] for t in thresholds]

    async def page_offset(self, offset: int, limit: int, repeats: int) -> Any:
        return [[{"id": r[0], "title": r[1], "views": r[2]} for r in await self.q(PAGE_OFFSET, (limit, offset))]
                for _ in range(repeats)]

    async def page_keyset(self, after_id: int, limit: int, repeats: int) -> Any:
        return [[{"id": r[0], "title": r[1], "views": r[2]} for r in await self.q(PAGE_KEYSET, (after_id, limit))]
                for _ in range(repeats)]

    async def hot_get(self, ids: Sequence[int]) -> Any:
        out = []
        for i in ids:
            r = (await self.q(POST_BY_ID, (i,)))[0]
            out.append({"id": r[0], "title": r[1], "views": r[2]})
        return out

    async def dashboard(self, strategy: str, repeats: int) -> Any:
        out = []
        for _ in range(repeats):
            async with self.transaction():
                answers = [await self.q(text) for text in DASHBOARD]
            out.append(dashboard_result(answers))
        return out

    # -- writes ---------------------------------------------------------------------------------------
    async def increment(self, post_ids: Sequence[int]) -> None:
        async with self.transaction():
            await self.executemany(INCREMENT, [(i,) for i in post_ids])

    async def upsert(self, rows: Sequence[Mapping[str, Any]]) -> None:
        async with self.transaction():
            await self.executemany(UPSERT[self.db], [(r["organization_id"], r["email"], r["name"]) for r in rows])

    async def nested_create(self, users: Sequence[Mapping[str, Any]]) -> None:
        async with self.transaction():
            links = []
            for u in users:
                uid = await self.insert_returning_id(INSERT_USER, (u["organization_id"], u["email"], u["name"]))
                for p in u["posts"]:
                    pid = await self.insert_returning_id(INSERT_POST, (uid, p["title"], False))
                    links.extend((pid, t) for t in p["tag_ids"])
            await self.executemany(INSERT_LINK, links)

    async def delete_cascade(self, user_ids: Sequence[int]) -> None:
        async with self.transaction():
            for text in DELETE_CASCADE:
                await self.execute(in_list(text, len(user_ids)), list(user_ids))

    async def bulk_update(self, views_below: int, likes: int) -> None:
        async with self.transaction():
            await self.execute(BULK_UPDATE, (likes, views_below))
