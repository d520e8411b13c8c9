"""peewee, wide model: what playhouse.sqlite_ext.JSONField costs on a 10,000-row insert_many (docs/results.md).

Uses the peewee arm's own Test 3 model (``make_models``) and the benchmark's seeded rows (``plan.given_row``),
DELETE journal, synchronous=FULL, insert_many in chunks of 500 rows in one transaction, median of 7. Swaps the
arm's field class for the json kind (JSONField, which wraps every value in SQLite's json(), against a TextField
that stores json.dumps text) and for the decimal kind (DecimalField against FloatField).
Run from the repository root: python experiments/peewee_json_cost.py
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from unittest import mock

import peewee as pw
from playhouse.sqlite_ext import JSONField

from pytest_ormbench.suites import peewee_arm
from pytest_ormbench.workload.spec import MODELS
from pytest_ormbench.workload.plan import given_row

N, CHUNK, REPEATS = 10_000, 500, 7
WIDE = MODELS["wide"]


class JsonText(pw.TextField):
    """JSON kept as plain text: json.dumps on the way in, no SQL function around the value."""

    def db_value(self, value):  # type: ignore[no-untyped-def]
        return None if value is None else json.dumps(value)

    def python_value(self, value):  # type: ignore[no-untyped-def]
        return None if value is None else json.loads(value)


VARIANTS = {
    ("JSONField", "DecimalField"): {},
    ("TextField (json.dumps)", "DecimalField"): {"json": JsonText},
    ("JSONField", "FloatField"): {"decimal": pw.FloatField},
    ("TextField (json.dumps)", "FloatField"): {"json": JsonText, "decimal": pw.FloatField},
}


def rows_per_s(directory: str, swap: dict) -> float:
    db = pw.SqliteDatabase(os.path.join(directory, f"wide-{len(os.listdir(directory))}.db"),
                           pragmas={"journal_mode": "delete", "synchronous": "full"})
    with mock.patch.dict(peewee_arm._WIDE_FIELDS, swap):
        journal, _ = peewee_arm.make_models(db, WIDE)
    db.connect()
    db.create_tables([journal])
    rows = [given_row(WIDE, n) for n in range(1, N + 1)]
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        with db.atomic():
            for i in range(0, N, CHUNK):
                journal.insert_many(rows[i:i + CHUNK]).execute()
        times.append(time.perf_counter() - t0)
        journal.delete().execute()
    db.close()
    return N / statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        for (json_kind, decimal_kind), swap in VARIANTS.items():
            print(f"json: {json_kind:22s} decimal: {decimal_kind:12s} {rows_per_s(d, swap):8,.0f} rows/s "
                  f"(insert_many of {N:,} Test 3 rows, median of {REPEATS})")


if __name__ == "__main__":
    main()
