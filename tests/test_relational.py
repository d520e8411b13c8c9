"""Test 4, the relational workload: its data, its ids, its checks (a wrong child or a read answered from a cache
kept across rounds fails the cell), its declarations, and its cells through the plugin."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Sequence

import pytest

from pytest_ormbench.arms.registry import BUILTIN_ARMS, import_arm
from pytest_ormbench.arms.relational import RelationalArm, check_declarations
from pytest_ormbench.measuring.relational import same
from pytest_ormbench.measuring.runner import Cell, run_cell
from pytest_ormbench.measuring.verify import VerificationError
from pytest_ormbench.scheduling.config import RunConfig
from pytest_ormbench.scheduling.matrix import run_cells
from pytest_ormbench.suites.relational.raw_sqlite3 import RawSqlite3Relational
from pytest_ormbench.workload.cells import CellKey, RecordError
from pytest_ormbench.workload.plan import Sizes
from pytest_ormbench.workload.relational import (SHAPES, SHAPES_BY_NAME, RelationalData, RelationalSizes, data_for,
    expected_result, make_shape_plan)
from pytest_ormbench.workload.spec import Settings

SMALL = RelationalSizes.from_iterations(10)
TARGET = "pytest_ormbench.suites.relational.raw_sqlite3:RawSqlite3Relational"


# -- the data and the shapes ---------------------------------------------------------------------------

def test_the_data_is_seeded_and_the_default_sizes_are_seed_002s() -> None:
    assert RelationalSizes.from_iterations(100) == RelationalSizes(5, 1_000, 10_000, 50_000, 50, 3)
    a, b = RelationalData(SMALL).rows, RelationalData(SMALL).rows
    assert a == b
    assert [len(a[t]) for t in ("rel_org", "rel_user", "rel_post", "rel_comment", "rel_tag")] == [5, 100, 1000, 5000, 50]
    assert len(a["rel_post_tag"]) == 3 * 1000 and len(set(a["rel_post_tag"])) == 3000


def test_every_shape_has_a_plan_and_reads_an_expected_result() -> None:
    for shape in SHAPES:
        plan = make_shape_plan(shape.name, SMALL)
        assert plan.repetitions >= 1, shape.name
        result = expected_result(plan)
        assert (result is None) == (shape.kind == "write"), shape.name


def test_a_nested_page_holds_every_post_of_its_users_in_order() -> None:
    d = data_for(SMALL)
    page = expected_result(make_shape_plan("users_posts", SMALL))[0]
    assert [u["id"] for u in page] == list(range(1, 51))
    for user in page:
        posts = [p["id"] for p in user["posts"]]
        assert posts == sorted(posts) == [p[0] for p in d.rows["rel_post"] if p[1] == user["id"]]
    assert any(not u["posts"] for u in expected_result(make_shape_plan("users_posts", SMALL))[0]) or True


# -- ids --------------------------------------------------------------------------------------------------

def test_a_strategy_is_part_of_the_id_and_comes_back() -> None:
    key = CellKey("django", "relational", "R1", "warm", "default", "postgresql", 5.0, "prefetch_related")
    assert key.id == "django-relational-users_posts.prefetch_related-warm-default-postgresql-rtt5"
    assert CellKey.parse(key.id) == key
    flat = CellKey("sqlite3", "relational", "R13", "cold", "default")
    assert flat.id == "sqlite3-relational-hot_get-cold-default" and CellKey.parse(flat.id) == flat
    assert CellKey.from_info({"arm": "x", "model": "relational", "op": "R1", "mode": "warm", "table": "default",
                              "strategy": "lazy"}).strategy == "lazy"
    with pytest.raises(RecordError):
        CellKey.parse("sqlite3-simple-get.lazy-warm-default")  # Tests 1-3 have no strategies
    with pytest.raises(RecordError):
        CellKey.from_info({"arm": "x", "model": "relational", "op": "A", "mode": "warm", "table": "default"})


def test_the_matrix_runs_each_declared_strategy_and_the_flat_shapes_once() -> None:
    entries = {e.name: e for e in BUILTIN_ARMS}
    run = RunConfig(arms=("sqlite3",), models=("relational",), ops=(), modes=("warm",), tables=("default", "large"),
                    rounds=1, sizes=Sizes(10, 100), settings=Settings(), verify_only=True)
    keys = run_cells(run, entries)
    ids = {k.id for k in keys}
    assert {"sqlite3-relational-users_posts.lazy-warm-default", "sqlite3-relational-users_posts.join-warm-default",
            "sqlite3-relational-users_posts.batched-warm-default", "sqlite3-relational-hot_get-warm-default"} <= ids
    assert all(k.table == "default" for k in keys)  # the large table is Tests 1-3's
    assert len(keys) == len(SHAPES) + 5 * 2 + 0  # five nested shapes with 3 strategies, the dashboard with 1
    only_join = run_cells(RunConfig(**{**run.__dict__, "strategies": ("join",), "shapes": ("users_posts", "hot_get")}),
                          entries)
    assert [k.id for k in only_join] == ["sqlite3-relational-users_posts.join-warm-default",
                                         "sqlite3-relational-hot_get-warm-default"]


# -- verification ---------------------------------------------------------------------------------------

def _cell(tmp_path: Path, shape: str, strategy: str | None, target: str = TARGET, **kw: Any) -> Cell:
    code = SHAPES_BY_NAME[shape].code
    return Cell("sqlite3", target, "relational", code, "default", "warm", Sizes(10, 100), Settings(),
                tmp_path / "templates", tmp_path / "work", db="sqlite", strategy=strategy, **kw)


class MissingComment(RawSqlite3Relational):
    """Drops the last comment of one post from its nested result."""

    def users_posts_comments(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        result = super().users_posts_comments(strategy, offsets, limit)
        for user in result[0]:
            for post in user["posts"]:
                if post["comments"]:
                    post["comments"].pop()
                    return result
        return result


class PostUnderWrongUser(RawSqlite3Relational):
    """Moves one post to the next user of the page."""

    def users_posts(self, strategy: str, offsets: Sequence[int], limit: int) -> Any:
        result = copy.deepcopy(super().users_posts(strategy, offsets, limit))
        page = result[1]
        donor = next(i for i, u in enumerate(page[:-1]) if u["posts"])
        page[donor + 1]["posts"].insert(0, page[donor]["posts"].pop())
        return result


class CachedAcrossRounds(RawSqlite3Relational):
    """Keeps the first half of hot_get's rows in a cache on the class, so that a later round reads only the other
    half: right rows, half the reads."""

    kept: dict[int, Any] = {}

    def hot_get(self, ids: Sequence[int]) -> Any:
        kept = CachedAcrossRounds.kept
        rows = super().hot_get([i for i in ids if i not in kept])
        fetched = iter(rows)
        out = [kept[i] if i in kept else next(fetched) for i in ids]
        kept.update((r["id"], r) for r in out[:len(ids) // 2])
        return out


@pytest.mark.parametrize("arm, shape, strategy, message", [
    (MissingComment, "users_posts_comments", "batched", r"users_posts_comments\[0\]\[\d+\]\.posts\[\d+\]\.comments"),
    (MissingComment, "users_posts_comments", "lazy", r"comments has \d+ items, expected"),
    (PostUnderWrongUser, "users_posts", "join", r"users_posts\[1\]\[\d+\]\.posts"),
])
def test_a_wrong_child_in_a_nested_result_fails_the_cell(tmp_path: Path, arm: type, shape: str, strategy: str,
                                                          message: str) -> None:
    target = f"{__name__}:{arm.__name__}"
    with pytest.raises(VerificationError, match=message):
        run_cell(_cell(tmp_path, shape, strategy, target))


def test_the_control_passes_where_the_planted_arms_fail(tmp_path: Path) -> None:
    rounds, _ = run_cell(_cell(tmp_path, "users_posts_comments", "batched", rounds=2))
    assert len(rounds) == 2 and rounds[-1].facts["repetitions"] == 4


def test_a_read_answered_from_state_kept_across_rounds_fails_the_read_through_check(tmp_path: Path) -> None:
    CachedAcrossRounds.kept.clear()
    target = f"{__name__}:CachedAcrossRounds"
    # the counting repetition of a timed run: a warm-up round, then the counted one (as the scheduler asks)
    with pytest.raises(VerificationError, match="250 SELECT statements for 500 repetitions"):
        run_cell(_cell(tmp_path, "hot_get", None, target, rounds=1, warmup=True, statements=True))
    CachedAcrossRounds.kept.clear()
    # its values are right: without the count, the first round alone passes (the check is the count)
    run_cell(_cell(tmp_path, "hot_get", None, target, rounds=1))


class WritesWhileReading(RawSqlite3Relational):
    """Right answers, but its read also touches a row (an ORM that saved on load would): a server skips the refill
    between a read's rounds, so a read must not write."""

    def count_filter(self, thresholds: Sequence[int]) -> Any:
        self.execute("UPDATE rel_post SET views = views WHERE id = 1")
        return super().count_filter(thresholds)


def test_a_read_that_writes_fails_the_count(tmp_path: Path) -> None:
    target = f"{__name__}:WritesWhileReading"
    with pytest.raises(VerificationError, match=r"count_filter: a read wrote \(1 UPDATE\)"):
        run_cell(_cell(tmp_path, "count_filter", None, target, rounds=1, warmup=True, statements=True))
    run_cell(_cell(tmp_path, "count_filter", None, rounds=1, warmup=True, statements=True))


def test_a_write_is_read_back_table_by_table(tmp_path: Path) -> None:
    class NoIncrement(RawSqlite3Relational):
        def increment(self, post_ids: Sequence[int]) -> None:
            super().increment(list(post_ids)[1:])

    globals()["NoIncrement"] = NoIncrement
    with pytest.raises(VerificationError, match="increment: rel_post holds"):
        run_cell(_cell(tmp_path, "increment", None, f"{__name__}:NoIncrement"))


def test_same_compares_in_full() -> None:
    same([{"id": 1, "avg_views": 2.5, "ok": True}], [{"id": 1, "avg_views": 2.5000000001, "ok": 1}])
    with pytest.raises(VerificationError, match=r"result\[0\]\.id"):
        same([{"id": 1}], [{"id": 2}])
    with pytest.raises(VerificationError, match="keys"):
        same({"id": 1}, {"id": 1, "extra": 0})


# -- declarations ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("entry", [e for e in BUILTIN_ARMS if e.relational], ids=lambda e: e.name)
def test_each_relational_arm_declares_every_shape(entry: Any) -> None:
    missing = entry.missing()
    if missing:
        pytest.skip(missing)
    cls = import_arm(entry.relational)
    assert issubclass(cls, RelationalArm) and cls.name == entry.name
    assert check_declarations(cls) == []
    assert {k: dict(v) for k, v in cls.strategies.items()} == \
        {k: dict(v) for k, v in entry.relational_declarations().strategies.items()}


def test_a_strategy_sending_more_selects_is_an_n_plus_one_regression() -> None:
    from pytest_ormbench.results.compare.model import StatementChange
    key = CellKey("sqlalchemy", "relational", "R1", "warm", "default", strategy="selectin")
    change = StatementChange(key, key.id, {"SELECT": 8}, {"SELECT": 204})
    assert change.more and change.n_plus_one and change.verdict == "more SELECTs: an N+1 regression"
    flat = CellKey("sqlalchemy", "relational", "R13", "warm", "default")
    assert StatementChange(flat, flat.id, {"SELECT": 500}, {"SELECT": 501}).verdict == "more statements"


def test_docs_relational_md_is_written_from_the_declarations() -> None:
    from pytest_ormbench.commands import relational_doc
    root = Path(__file__).resolve().parent.parent
    assert (root / "docs" / "relational.md").read_text(encoding="utf-8") == relational_doc.render(), (
        "docs/relational.md is out of date: python -m pytest_ormbench.commands.relational_doc")
