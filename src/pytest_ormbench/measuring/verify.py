"""Checks that an op did its work. A failed check means no number is recorded.

Values are compared in canonical form, so that an ORM may store a decimal as
REAL or TEXT and a timestamp as text: what must match is the value.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import operator
import os
import pickle
from collections import Counter
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from pytest_ormbench.workload.statements import wrote
from pytest_ormbench.arms.contract import Arm
from pytest_ormbench.workload.spec import DECIMAL_PLACES
from pytest_ormbench.workload.spec import ModelSpec, Snapshot
from pytest_ormbench.workload.plan import CellPlan, expected_row

_QUANT = Decimal(1).scaleb(-DECIMAL_PLACES)


class VerificationError(AssertionError):
    """The op did not do what it claims; the cell records no number."""


def normalize(kind: str, value: Any) -> Any:
    """The canonical form of a stored or fetched value, for comparison."""
    if value is None:
        return None
    if kind in ("id", "int", "smallint", "bigint", "fk"):
        if hasattr(value, "id") and not isinstance(value, (int, float, str)):
            value = value.id  # a related object where an id was expected
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "decimal":
        try:
            return Decimal(str(value)).quantize(_QUANT)
        except InvalidOperation:
            return value
    if kind == "json":
        if isinstance(value, (str, bytes)):
            return json.loads(value)
        return value
    if kind == "datetime":
        if isinstance(value, str):
            value = dt.datetime.fromisoformat(value.replace(" ", "T").rstrip("Z"))
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value
    return value


def _same(kind: str, a: Any, b: Any) -> bool:
    if type(a) is type(b) and a == b:
        return True  # equal values of one type stay equal in canonical form; skips the costly path
    a, b = normalize(kind, a), normalize(kind, b)
    if kind == "float" and a is not None and b is not None:
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def compare_row(model: ModelSpec, expected: Mapping[str, Any], actual: Mapping[str, Any], where: str) -> None:
    for f in model.fields:
        if f.name not in actual:
            raise VerificationError(f"{where}: field {f.name!r} missing")
        if not _same(f.kind, expected[f.name], actual[f.name]):
            raise VerificationError(
                f"{where}: {f.name} is {actual[f.name]!r}, expected {expected[f.name]!r}"
            )


def _expect(cond: bool, message: str) -> None:
    if not cond:
        raise VerificationError(message)


def state_digest(snap: Snapshot) -> bytes | None:
    """A digest of a read-back: equal for two read-backs only if they hold the same rows and links, with the same
    values of the same types (pickled, rows by id); None where a value cannot be pickled."""
    try:
        blob = pickle.dumps((sorted(snap.rows.items()), sorted(snap.links)), protocol=5)
    except Exception:  # noqa: BLE001 - an unpicklable value: the full comparison, every round
        return None
    return hashlib.blake2b(blob, digest_size=20).digest()


class VerifiedStates:
    """The read-backs of one cell's plan that passed the full state check, as digests (:func:`state_digest`).

    A later round whose read-back is identical to one of them holds exactly what was verified field by field
    against the expectation, so it passes without a second comparison of every row (on the large table that
    comparison dominated the run's untimed time). Kept in memory for the rounds of one process, and in a file
    of ``folder`` (the run's own temporary directory) for those of the cell's other processes, cold rounds
    among them; a digest is written only after its read-back passed. The other checks of a round (ids,
    commits, fetched values, statements, connections, durability) run on every round as before.
    """

    def __init__(self, key: str, folder: Path | None = None) -> None:
        self.path = None if folder is None else folder / (hashlib.blake2b(key.encode(), digest_size=16).hexdigest()
                                                          + ".verified")
        self.known: set[bytes] = set()
        #: rounds that passed by identity, and rounds compared in full, in this process
        self.identical = self.compared = 0

    def holds(self, digest: bytes) -> bool:
        if digest not in self.known and self.path is not None:
            try:
                lines = self.path.read_text(encoding="ascii").split()
            except OSError:
                lines = []
            for line in lines:
                try:
                    self.known.add(bytes.fromhex(line))
                except ValueError:
                    continue  # a line another process is still writing
        return digest in self.known

    def remember(self, digest: bytes) -> None:
        self.known.add(digest)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, (digest.hex() + "\n").encode("ascii"))  # one append: whole lines only
            finally:
                os.close(fd)


def check_state(model: ModelSpec, snap: Snapshot, expected: Mapping[int, Mapping[str, Any]],
                links: Iterable[tuple[int, int]], what: str, verified: VerifiedStates | None = None) -> None:
    """The database holds exactly ``expected`` rows and ``links``; with ``verified``, a read-back identical to
    one that passed before passes at once."""
    if verified is None:
        _compare_state(model, snap, expected, links, what)
        return
    digest = state_digest(snap)
    if digest is not None and verified.holds(digest):
        verified.identical += 1
        return
    _compare_state(model, snap, expected, links, what)
    verified.compared += 1
    if digest is not None:
        verified.remember(digest)


def _compare_state(model: ModelSpec, snap: Snapshot, expected: Mapping[int, Mapping[str, Any]],
                   links: Iterable[tuple[int, int]], what: str) -> None:
    _expect(len(snap.rows) == len(expected), f"{what}: {len(snap.rows)} rows in the table, expected {len(expected)}")
    missing = set(expected) - set(snap.rows)
    _expect(not missing, f"{what}: ids missing from the table: {sorted(missing)[:5]}")
    for rid, exp in expected.items():
        compare_row(model, exp, snap.rows[rid], f"{what}: row {rid}")
    if model.relations:
        want = set(links)
        _expect(snap.links == want, f"{what}: {len(snap.links)} links in the table, expected {len(want)}"
                + ("" if len(snap.links) != len(want) else " (different pairs)"))


def _fetched_rows(arm: Arm, objs: Sequence[Any], kind: str) -> list[dict[str, Any]]:
    names = arm.model.field_names
    if kind == "objects":
        # An identity map hands back the same object on every pass of a filter; read it once.
        read: dict[int, dict[str, Any]] = {}
        out_objs = []
        for o in objs:
            r = read.get(id(o))
            if r is None:
                r = read[id(o)] = arm.fields_of(o)
            out_objs.append(r)
        return out_objs
    if kind == "dicts":
        return [dict(o) for o in objs]
    out = []
    for t in objs:
        _expect(len(t) == len(names), f"a tuple has {len(t)} values, expected {len(names)} ({', '.join(names)})")
        out.append(dict(zip(names, t)))
    return out


#: the reads whose verification also compares the whole table with the starting state; Get and Filter: Small
#: check the rows they fetched, and leave the table to the commit count (every round) and the kinds of the
#: statements counted in the cell's counting repetition (once per cell)
STATE_CHECKED_READS = frozenset({"filter_large", "filter_dicts", "filter_tuples"})


def needs_read_back(plan: CellPlan, commits: int | None, counts_every_write: bool) -> bool:
    """Whether a round's verification reads the table back: after every write; after a read whose state is
    checked, unless the storage counts every committed write exactly (``Database.counts_every_write``) and
    counted none during the op, which proves the rows are the restored ones, as a read-back would (it sees what
    is committed, no more); never after Get and Filter: Small, whose checks do not use it."""
    if not plan.op.read_only:
        return True
    if plan.op.name not in STATE_CHECKED_READS:
        return False
    return not (counts_every_write and commits == 0)


def verify(arm: Arm, plan: CellPlan, result: Any, objs: list[Any] | None,
           snap: Snapshot | None, commits: int | None, verified: VerifiedStates | None = None,
           counts_every_write: bool = False) -> dict[str, Any]:
    """Check the op's effect; return facts worth recording (e.g. bulk_ids_set). ``snap``: the read-back, None
    where :func:`needs_read_back` says the round needs none (``counts_every_write``: the storage's, as there).
    ``verified``: the cell's read-backs that passed before (:class:`VerifiedStates`)."""
    model, op, n0 = plan.model, plan.op, plan.state.count
    facts: dict[str, Any] = {}
    base_links = plan.state.links()
    name = op.name
    if snap is None and needs_read_back(plan, commits, counts_every_write):
        raise VerificationError(f"{name}: the round was not read back, and its commits do not show it unchanged")
    if name.startswith("insert_"):
        new = plan.new_rows
        ids = [arm.id_of(o) for o in (objs or [])]
        want_ids = list(range(n0 + 1, n0 + len(new) + 1))
        has_ids = all(i is not None for i in ids) and len(ids) == len(new)
        if name == "insert_bulk":
            facts["bulk_ids_set"] = has_ids
            if arm.bulk_sets_ids:
                _expect(has_ids, "insert_bulk: the arm declares that bulk insert sets ids, but objects have none")
        else:
            _expect(has_ids, f"{name}: saved objects did not get their ids")
        if has_ids:
            _expect(ids == want_ids, f"{name}: objects got ids {ids[:3]}..., expected {want_ids[:3]}...")
        expected = {n: expected_row(model, n) for n in range(1, n0 + len(new) + 1)}
        check_state(model, snap, expected, base_links, name, verified)
    elif name in STATE_CHECKED_READS:
        kind = {"filter_large": "objects", "filter_dicts": "dicts", "filter_tuples": "tuples"}[name]
        rows = _fetched_rows(arm, list(result), kind)
        _expect(len(rows) == plan.rows, f"{name}: fetched {len(rows)} rows, expected {plan.rows}")
        got = Counter(int(r["id"]) for r in rows)
        _expect(got == plan.inputs["expected_ids"], f"{name}: fetched the wrong rows")
        _check_values(model, rows, name)
        if snap is not None:
            check_state(model, snap, plan.state.expected_rows(), base_links, name, verified)
    elif name == "filter_small":
        rows = _fetched_rows(arm, list(result), "objects")
        got = [int(r["id"]) for r in rows]
        _expect(len(got) == plan.rows, f"{name}: fetched {len(got)} rows, expected {plan.rows}")
        _expect(got == plan.inputs["expected_ids"], f"{name}: pages hold the wrong rows or are out of order")
        _check_values(model, rows, name)
    elif name == "get":
        rows = _fetched_rows(arm, list(result), "objects")
        got = [int(r["id"]) for r in rows]
        _expect(got == plan.inputs["ids"], f"get: returned ids {got[:3]}..., expected {plan.inputs['ids'][:3]}...")
        _check_values(model, rows, name)
    elif name in ("update_whole", "update_partial"):
        expected = plan.state.expected_rows()
        for i, n in enumerate(sorted(expected)):
            if name == "update_whole":
                expected[n].update(plan.inputs["values"][i])
            else:
                expected[n]["level"] = plan.inputs["levels"][i]
        check_state(model, snap, expected, base_links, name, verified)
    elif name == "delete":
        check_state(model, snap, {}, [], name, verified)
    if commits is not None:
        from pytest_ormbench.workload.plan import expected_commits

        want = expected_commits(plan)
        facts["commits"] = commits
        _expect(commits == want, f"{name}: committed {commits} write transactions, expected {want}")
    return facts


def _check_values(model: ModelSpec, rows: Sequence[Mapping[str, Any]], what: str) -> None:
    """Every fetched row holds its expected values.

    Filters fetch each row ten times. A copy whose values equal those of a copy of the same row already checked,
    each of the same type, needs no second comparison: equal values of one type have one canonical form (and a
    JSON value is compared by equality in both paths). The comparison of the tuples runs in C, with no hashing
    (JSON values cannot be hashed) and no repr.
    """
    names = model.field_names
    get = operator.itemgetter(*names)
    single = len(names) == 1
    checked: dict[int, tuple[tuple[Any, ...], tuple[type, ...]]] = {}
    for r in rows:
        rid = int(r["id"])
        try:
            values = (get(r),) if single else get(r)
        except KeyError:
            values = None  # a missing field: compare_row names it
        if values is not None:
            types = tuple(map(type, values))
            seen = checked.get(rid)
            if seen is not None and seen[1] == types and seen[0] == values:
                continue
        compare_row(model, expected_row(model, rid), r, f"{what}: fetched row {rid}")
        if values is not None:
            checked[rid] = (values, types)


def check_pragmas(actual: Mapping[str, str], expected: Mapping[str, str]) -> None:
    bad = {k: actual.get(k) for k, v in expected.items() if actual.get(k) != v}
    if bad:
        detail = ", ".join(f"{k}={bad[k]} (asked {expected[k]})" for k in bad)
        raise VerificationError(f"durability settings read back from the arm's live connection differ: {detail}")



#: read ops, and what one request is: a level (D, G, H), a page (E), a get (F)
_READ_REQUESTS = {"filter_large": "levels", "filter_dicts": "levels", "filter_tuples": "levels",
                  "filter_small": "pages", "get": "ids"}


def requests_of(plan: CellPlan) -> tuple[int, str] | None:
    """How many requests a read op was given, and what one is (None: not a read op)."""
    what = _READ_REQUESTS.get(plan.op.name)
    if what is None:
        return None
    return len(plan.inputs[what]), {"levels": "level", "pages": "page", "ids": "get"}[what]


def check_statements(plan: CellPlan, counts: Mapping[str, int]) -> None:
    """Every op reached the database, and a read sent at least one query per request it was given.

    A read answered from the ORM's cache (an identity map, a query cache) would measure a dict
    lookup, not a database read: it fails here with the counts that show it.
    """
    total = sum(counts.values())
    _expect(total > 0, f"{plan.op.name}: no statement reached the database while the op ran")
    writes = wrote(counts)
    _expect(not (plan.op.read_only and writes), f"{plan.op.name}: a read wrote ({writes})")
    req = requests_of(plan)
    if req is None:
        return
    n, what = req
    _expect(counts.get("SELECT", 0) >= n,
            f"{plan.op.name}: {counts.get('SELECT', 0)} SELECT statements for {n} requests (one per {what}): "
            f"some reads were answered from a cache, not the database")
