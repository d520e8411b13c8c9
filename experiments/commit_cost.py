"""What one durable commit costs on this machine: the figure the reference states as ~8 ms for its NVMe.

Times N one-row INSERT + COMMIT transactions in raw sqlite3 on a fresh database in a temporary directory
(the benchmark's filesystem), under the benchmark's settings (journal_mode=DELETE, synchronous=FULL), then
under synchronous=OFF (no sync), and a bare fdatasync of 4 KiB. Prints medians in milliseconds.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import sys
import tempfile
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200


def commits(directory: str, synchronous: str, journal: str = "delete") -> list[float]:
    path = os.path.join(directory, f"c-{synchronous}-{journal}.sqlite3")
    con = sqlite3.connect(path, isolation_level=None)
    con.execute(f"PRAGMA journal_mode={journal}")
    con.execute(f"PRAGMA synchronous={synchronous}")
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, level INTEGER, text TEXT)")
    times = []
    for i in range(N):
        t0 = time.perf_counter()
        con.execute("BEGIN")
        con.execute("INSERT INTO t (level, text) VALUES (?, ?)", (i, "x" * 40))
        con.execute("COMMIT")
        times.append(time.perf_counter() - t0)
    con.close()
    return times


def fdatasyncs(directory: str) -> list[float]:
    fd = os.open(os.path.join(directory, "sync.bin"), os.O_WRONLY | os.O_CREAT)
    times = []
    for _ in range(N):
        t0 = time.perf_counter()
        os.pwrite(fd, b"\0" * 4096, 0)
        os.fdatasync(fd)
        times.append(time.perf_counter() - t0)
    os.close(fd)
    return times


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        rows = [
            ("INSERT + COMMIT, journal_mode=DELETE, synchronous=FULL (the benchmark's setting)", commits(d, "full")),
            ("INSERT + COMMIT, journal_mode=WAL, synchronous=FULL", commits(d, "full", "wal")),
            ("INSERT + COMMIT, journal_mode=DELETE, synchronous=OFF (no sync)", commits(d, "off")),
            ("pwrite 4 KiB + fdatasync", fdatasyncs(d)),
        ]
    print(f"{N} repetitions each, temporary directory on {tempfile.gettempdir()}; median (quartiles) in ms")
    for label, t in rows:
        q = statistics.quantiles([x * 1000 for x in t], n=4)
        print(f"- {label}: {statistics.median(t) * 1000:.2f} ({q[0]:.2f}–{q[2]:.2f})")


if __name__ == "__main__":
    main()
