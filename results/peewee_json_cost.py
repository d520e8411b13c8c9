"""peewee, wide model: what playhouse.sqlite_ext.JSONField costs on a 10,000-row insert_many (docs/results.md).

A standalone 40-column model like Test 3 (4 sets of float, smallint, int, bigint, char, text, decimal, json), DELETE
journal, synchronous=FULL, insert_many in chunks of 500 rows in one transaction, median of 3. Compares JSONField
(which wraps every value in SQLite json()) with a TextField holding json.dumps text, and DecimalField with FloatField.
"""
import json, os, tempfile, time, statistics, decimal, datetime as dt
import peewee as pw
from playhouse.sqlite_ext import JSONField
d = tempfile.mkdtemp()
def make(json_kind, dec_kind):
    db = pw.SqliteDatabase(os.path.join(d, f"{json_kind}-{dec_kind}.db"), pragmas={"journal_mode": "delete", "synchronous": "full"})
    attrs = {"timestamp": pw.DateTimeField(), "level": pw.IntegerField(index=True), "text": pw.CharField(index=True)}
    for i in range(1, 5):
        attrs.update({f"col_float{i}": pw.FloatField(null=True), f"col_smallint{i}": pw.SmallIntegerField(null=True),
                      f"col_int{i}": pw.IntegerField(null=True), f"col_bigint{i}": pw.BigIntegerField(null=True),
                      f"col_char{i}": pw.CharField(null=True), f"col_text{i}": pw.TextField(null=True),
                      f"col_decimal{i}": (pw.DecimalField(max_digits=10, decimal_places=2, null=True) if dec_kind == "decimal" else pw.FloatField(null=True)),
                      f"col_json{i}": (JSONField(null=True) if json_kind == "jsonfield" else pw.TextField(null=True))})
    attrs["Meta"] = type("Meta", (), {"database": db, "table_name": "wide"})
    M = type(f"W{json_kind}{dec_kind}", (pw.Model,), attrs)
    db.connect(); db.create_tables([M])
    return db, M
def rows(json_kind, dec_kind, n=10000):
    out = []
    for k in range(n):
        r = {"timestamp": dt.datetime(2026, 1, 1), "level": k % 300, "text": f"t{k}"}
        for i in range(1, 5):
            js = {"a": k, "b": [1, 2]}
            r.update({f"col_float{i}": 1.5, f"col_smallint{i}": 3, f"col_int{i}": 7, f"col_bigint{i}": 2**40, f"col_char{i}": "c",
                      f"col_text{i}": "x", f"col_decimal{i}": decimal.Decimal("12.34") if dec_kind == "decimal" else 12.34,
                      f"col_json{i}": js if json_kind == "jsonfield" else json.dumps(js)})
        out.append(r)
    return out
for jk, dk in [("jsonfield", "decimal"), ("text", "decimal"), ("jsonfield", "float"), ("text", "float")]:
    db, M = make(jk, dk)
    ts = []
    for rep in range(3):
        data = rows(jk, dk)
        t0 = time.perf_counter()
        with db.atomic():
            for i in range(0, len(data), 500):
                M.insert_many(data[i:i + 500]).execute()
        ts.append(time.perf_counter() - t0)
        M.delete().execute()
    print(f"{jk:9s} {dk:7s} insert_many 10,000 wide rows: median {statistics.median(ts):.3f} s -> {10000 / statistics.median(ts):,.0f} rows/s")
