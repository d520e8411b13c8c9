"""The ObjectBox arms: settings, marshalling, where the model lives, exact restore, and the binding's
behaviours they rely on (the whole matrix is verified by the smoke run and tests/test_arms.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

pytest.importorskip("objectbox")

from pytest_ormbench.suites import objectbox_arm  # noqa: E402
from pytest_ormbench.suites.objectbox_arm import ObjectBoxArm, ObjectBoxNoCodegenArm, ObjectBoxStore, committed_txns  # noqa: E402
from pytest_ormbench.measuring import runner  # noqa: E402
from pytest_ormbench.workload.spec import MODELS, Settings, Unsupported  # noqa: E402
from pytest_ormbench.backends import database_for  # noqa: E402
from pytest_ormbench.workload.plan import State  # noqa: E402


def test_weaker_durability_is_refused(tmp_path: Path) -> None:
    arm = ObjectBoxArm(MODELS["simple"], Settings(synchronous="normal"))
    with pytest.raises(Unsupported, match="syncs every commit"):
        arm.open(tmp_path / "db")
    arm.close()


def test_the_store_is_the_arms_database(tmp_path: Path) -> None:
    store = database_for(ObjectBoxNoCodegenArm)
    assert isinstance(store, ObjectBoxStore) and store is database_for(ObjectBoxArm)
    arm = ObjectBoxNoCodegenArm(MODELS["simple"], Settings())
    # the harness compares with the arm's claim: the store's durability plus the marshalling
    expected = runner.expected_durability(arm, store)
    assert expected == {**store.expected_durability(Settings()), "marshalling": "generic"}
    with pytest.raises(Unsupported, match="foreign_keys=OFF"):
        store.expected_durability(Settings(foreign_keys=False))
    arm.open(tmp_path / "db")
    try:
        assert store.commits(tmp_path / "db") == committed_txns(tmp_path / "db") is not None
        assert store.connections(tmp_path / "db") is None
    finally:
        arm.close()


@pytest.mark.parametrize("cls, mode", [(ObjectBoxArm, "codegen"), (ObjectBoxNoCodegenArm, "generic")])
def test_marshalling_is_set_and_reported(tmp_path: Path, cls: type[ObjectBoxArm], mode: str) -> None:
    arm = cls(MODELS["simple"], Settings())
    arm.open(tmp_path / "db")
    try:
        arm.insert_bulk(arm.build([{"timestamp": dt.datetime(2026, 1, 1), "level": 10, "text": "t"}]))
        assert arm.pragmas()["marshalling"] == mode == arm.expected_settings()["marshalling"]
        builder = objectbox_arm.JournalSimple._codegen_builder
        assert (builder is not None and "marshal" in vars(builder)) == (mode == "codegen")
        # the snapshot reads with the reference path and leaves the switch as it was
        arm.snapshot()
        assert arm.pragmas()["marshalling"] == mode
    finally:
        arm.close()


def test_model_json_lives_in_the_store_directory(tmp_path: Path) -> None:
    arm = ObjectBoxArm(MODELS["fk"], Settings())
    arm.open(tmp_path / "db")
    arm.close()
    assert sorted(p.name for p in (tmp_path / "db").iterdir()) == ["data.mdb", "lock.mdb", "objectbox-model.json"]
    assert not (Path(objectbox_arm.__file__).parent / "objectbox-model.json").exists()


def test_binding_behaviours_the_arm_relies_on(tmp_path: Path) -> None:
    """None is stored as null but read back as the default; removing a target resets to-one relations to 0;
    each write transaction is one commit; ids 1..N in a new store."""
    arm = ObjectBoxArm(MODELS["fk"], Settings())
    arm.open(tmp_path / "db")
    try:
        rows = State(MODELS["fk"], 30).rows()
        before = committed_txns(tmp_path / "db")
        arm.populate(rows, [(3, 1), (1, 2)])
        assert committed_txns(tmp_path / "db") == before + 2
        children = [r["id"] for r in rows if r["parent_id"] == 1]
        assert sorted(o.id for o in arm.children_of(1)) == children
        arm.delete([o for o in arm.load_all() if o.id == 1])
        snap = arm.snapshot()
        assert all(snap.rows[c]["parent_id"] is None for c in children)
        assert snap.links == set()  # both links touched object 1
    finally:
        arm.close()

    wide = ObjectBoxArm(MODELS["wide"], Settings())
    wide.open(tmp_path / "wide")
    try:
        wide.populate(State(MODELS["wide"], 2).rows(), [])
        raw = wide._box.get(1)
        assert raw.col_int_4 == 0 and raw.col_char_4 == "" and raw.col_float_4 == 0.0  # null read as default
        assert wide.snapshot().rows[1]["col_int_4"] is None  # ...but stored as null
        assert wide.load_all()[0].col_int_4 is None
    finally:
        wide.close()


def test_restore_is_exact(tmp_path: Path) -> None:
    template = runner.ensure_template(ObjectBoxArm, State(MODELS["simple"], 100), Settings(), tmp_path / "t")
    db = tmp_path / "db"
    store = database_for(ObjectBoxArm)
    assert isinstance(store, ObjectBoxStore) and store.name == "objectbox"
    store.copy(template, db)
    arm = ObjectBoxArm(MODELS["simple"], Settings())
    arm.open(db)
    try:
        arm.filter_large([10])  # builds a query: restore must build it again
        objs = arm.build(State(MODELS["simple"], 3).rows())
        for o in objs:
            o.id = 0
        arm.insert_bulk(objs)
        assert [o.id for o in objs] == [101, 102, 103]
        arm.restore(template)
        again = arm.build(State(MODELS["simple"], 1).rows())
        again[0].id = 0
        arm.insert_single(again)
        assert again[0].id == 101  # the id sequence came back too
        assert len(arm.snapshot().rows) == 101
        assert len(arm.filter_large([10, 20, 30, 40, 50])) == 101
    finally:
        arm.close()
        store.remove(db)
    assert not db.exists()


def test_puts_over_the_id_limit_are_sliced_in_one_transaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ObjectBox refuses to reserve more than 10,000 ids in one put; the arm slices larger puts
    monkeypatch.setattr(objectbox_arm, "PUT_LIMIT", 3)
    arm = ObjectBoxArm(MODELS["simple"], Settings())
    arm.open(tmp_path / "db")
    try:
        arm.create_schema()
        state = State(MODELS["simple"], 10)
        arm.populate(state.rows(), [])
        before = arm.database.commits(tmp_path / "db")
        objs = arm.build([{k: v for k, v in r.items() if k != "id"} for r in State(MODELS["simple"], 7).rows()])
        arm.insert_bulk(objs)
        assert [o.id for o in objs] == list(range(11, 18))
        assert arm.database.commits(tmp_path / "db") - before == 1
    finally:
        arm.close()
