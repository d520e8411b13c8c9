"""Test 4 for the SQLAlchemy family on an ``AsyncSession`` (SQLAlchemy's, or SQLModel's with ``exec``): the
shapes of :class:`~.sa_family_rel.SyncRelational` awaited, with the same statements (:class:`~.sa_family_rel.
RelQueries`) and the same result builders.

Why a second set of bodies rather than the sync ones under ``AsyncSession.run_sync``: an asyncio application
awaits the session's methods, each of which enters SQLAlchemy's greenlet bridge (the family's Tests 1-3 arms do
the same; see ``sqlalchemy_family.async_``). The lazy strategy is the one SQLAlchemy's asyncio documentation
shows: ``AsyncAttrs`` on the models and ``await obj.awaitable_attrs.<relationship>`` per object (a plain
attribute access on an unloaded relationship raises ``MissingGreenlet`` under asyncio, so an eager strategy
that failed to load would fail here, not load silently). Streaming is ``AsyncSession.stream_scalars`` with
``yield_per`` (a server-side cursor on asyncpg and asyncmy; aiosqlite's cursor on SQLite).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pytest_ormbench.arms.relational import (StreamTotals, post_dict, posts_with_author, posts_with_author_async,
    posts_with_tags, posts_with_tags_async, user_dict, users_with_posts, users_with_posts_async,
    users_with_posts_comments, users_with_posts_comments_async)
from pytest_ormbench.suites.relational.sa_family_rel import (RelationalSetup, author_of, comments_of,
    dashboard_result, organization_of, org_stats_rows, posts_of, tags_of)


# the lazy loads, awaited (AsyncAttrs)
def _posts_awaited(u: Any) -> Any:
    return u.awaitable_attrs.posts


def _comments_awaited(p: Any) -> Any:
    return p.awaitable_attrs.comments


def _tags_awaited(p: Any) -> Any:
    return p.awaitable_attrs.tags


def _author_awaited(p: Any) -> Any:
    return p.awaitable_attrs.author


def _organization_awaited(u: Any) -> Any:
    return u.awaitable_attrs.organization


class AsyncRelational(RelationalSetup):
    """The 19 shapes on an ``AsyncSession``."""

    Session: Any
    engine: Any

    async def create_schema(self) -> None:
        tables = self.rm.tables
        metadata = tables[0].metadata
        async with self.engine.begin() as conn:
            await conn.run_sync(lambda c: metadata.create_all(c, tables=tables))

    async def _objects(self, s: Any, stmt: Any, unique: bool = False) -> Any:
        result = await getattr(s, self.rm.objects_method)(stmt)
        return result.unique() if unique else result

    async def _rows(self, s: Any, stmt: Any) -> Any:
        return await getattr(s, self.rm.rows_method)(stmt)

    # -- strategy shapes ----------------------------------------------------------------------------------
    async def _users_nested(self, strategy: str, offsets: Sequence[int], limit: int, depth: int) -> Any:
        out = []
        async with self.Session() as s:
            for o in offsets:
                stmt, unique = self.rq.users_nested(strategy, o, limit, depth)
                users = (await self._objects(s, stmt, unique)).all()
                if strategy == "lazy":
                    out.append(await users_with_posts_async(users, _posts_awaited) if depth == 2
                               else await users_with_posts_comments_async(users, _posts_awaited, _comments_awaited))
                else:
                    out.append(users_with_posts(users, posts_of) if depth == 2
                               else users_with_posts_comments(users, posts_of, comments_of))
        return out

    async def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        return await self._users_nested(strategy, offsets, limit, 2)

    async def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        return await self._users_nested(strategy, offsets, limit, 3)

    async def user_deep(self, strategy: str, user_ids: Sequence[int]) -> Any:
        users = []
        async with self.Session() as s:
            if strategy == "contains_eager":
                for uid in user_ids:
                    users.append((await self._objects(s, self.rq.user_deep_eager(uid), True)).one())
            else:
                options = self.rq.user_deep_options(strategy)
                User = self.rm.User
                for uid in user_ids:
                    users.append(await s.get(User, uid, options=options))
            if strategy == "lazy":
                return await users_with_posts_comments_async(users, _posts_awaited, _comments_awaited)
            return users_with_posts_comments(users, posts_of, comments_of)

    async def posts_authors(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        out = []
        async with self.Session() as s:
            for o in offsets:
                stmt, unique = self.rq.posts_authors(strategy, o, limit)
                posts = (await self._objects(s, stmt, unique)).all()
                out.append(await posts_with_author_async(posts, _author_awaited, _organization_awaited)
                           if strategy == "lazy" else posts_with_author(posts, author_of, organization_of))
        return out

    async def posts_tags(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        out = []
        async with self.Session() as s:
            for o in offsets:
                stmt, unique = self.rq.posts_tags(strategy, o, limit)
                posts = (await self._objects(s, stmt, unique)).all()
                out.append(await posts_with_tags_async(posts, _tags_awaited) if strategy == "lazy"
                           else posts_with_tags(posts, tags_of))
        return out

    # -- flat reads ---------------------------------------------------------------------------------------
    async def users_filter(self, views: int, offsets: Sequence[int], limit: int) -> Any:
        async with self.Session() as s:
            return [[user_dict(u) for u in await self._objects(s, self.rq.users_filter(views, o, limit))]
                    for o in offsets]

    async def users_post_count(self, offsets: Sequence[int], limit: int) -> Any:
        async with self.Session() as s:
            return [[{"id": u.id, "name": u.name, "post_count": n}
                     for u, n in await self._rows(s, self.rq.users_post_count(o, limit))] for o in offsets]

    async def org_stats(self, thresholds: Sequence[int]) -> Any:
        async with self.Session() as s:
            return [org_stats_rows((await self._rows(s, self.rq.org_stats(t))).all()) for t in thresholds]

    async def count_filter(self, thresholds: Sequence[int]) -> Any:
        async with self.Session() as s:
            return [(await self._objects(s, self.rq.count_filter(t))).one() for t in thresholds]

    async def page_offset(self, offset: int, limit: int, repeats: int) -> Any:
        async with self.Session() as s:
            return [[post_dict(p) for p in await self._objects(s, self.rq.page_offset(offset, limit))]
                    for _ in range(repeats)]

    async def page_keyset(self, after_id: int, limit: int, repeats: int) -> Any:
        async with self.Session() as s:
            return [[post_dict(p) for p in await self._objects(s, self.rq.page_keyset(after_id, limit))]
                    for _ in range(repeats)]

    async def stream_comments(self, batch: int) -> Any:
        totals = StreamTotals()
        add = totals.add
        # in a transaction that commits: PostgreSQL ends a server-side cursor's portal (and pg_stat_statements
        # records its SELECT) when the transaction commits; a session closed with the read open rolls it back
        async with self.Session() as s, s.begin():
            result = await s.stream_scalars(self.rq.stream(batch))
            async for part in result.partitions():
                for c in part:
                    add(c.id, c.body)
        return totals.result()

    async def hot_get(self, ids: Sequence[int]) -> Any:
        Post = self.rm.Post
        async with self.Session() as s:
            get = s.get
            return [post_dict(await get(Post, i)) for i in ids]

    async def dashboard(self, strategy: str, repeats: int) -> Any:
        out = []
        async with self.Session() as s:
            for _ in range(repeats):
                users_q, published_q, latest_q, top_q, per_org_q = self.rq.dashboard()
                async with s.begin():
                    users = (await self._objects(s, users_q)).one()
                    published = (await self._objects(s, published_q)).one()
                    latest = (await self._objects(s, latest_q)).all()
                    top = (await self._objects(s, top_q)).all()
                    per_org = (await self._rows(s, per_org_q)).all()
                out.append(dashboard_result(users, published, latest, top, per_org))
        return out

    # -- writes -------------------------------------------------------------------------------------------
    async def increment(self, post_ids: Sequence[int]) -> None:
        async with self.Session() as s, s.begin():
            for pid in post_ids:
                await self._rows(s, self.rq.increment(pid))

    async def upsert(self, rows: Sequence[Mapping[str, Any]]) -> None:
        async with self.Session() as s, s.begin():
            await self._rows(s, self.rq.upsert(self.dialect, rows))  # type: ignore[attr-defined]

    async def nested_create(self, users: Sequence[Mapping[str, Any]]) -> None:
        async with self.Session() as s, s.begin():
            tags = {t.id: t for t in await self._objects(s, self.rq.tags_by_id(users))}
            s.add_all(self.rq.new_users(users, tags))

    async def delete_cascade(self, user_ids: Sequence[int]) -> None:
        async with self.Session() as s, s.begin():
            for u in (await self._objects(s, self.rq.users_by_id(user_ids))).all():
                await s.delete(u)

    async def bulk_update(self, views_below: int, likes: int) -> None:
        async with self.Session() as s, s.begin():
            await self._rows(s, self.rq.bulk_update(views_below, likes))
