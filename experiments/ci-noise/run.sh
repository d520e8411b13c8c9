#!/usr/bin/env bash
# Issue 6 measurements: false alarms, detection, drift floor. The reduced CI matrix of docs/ci.md (Test 1,
# warm, default table, batch 1,000, 5 interleaved rounds) on raw sqlite3, peewee, SA ORM and the test-only "delayed" arm
# (raw sqlite3 slowed by ORMBENCH_TEST_SLOWDOWN, tests/delay_arm.py).
# Six runs of the same code (z0..z5) for three back-to-back pairs, then runs with the delayed arm slowed by
# 5, 10, 20 and 40 % (one run each, each compared with all six same-code runs).
# Last, two runs of the same code with back-to-back rounds (b0, b1), to set against the interleaved pairs.
# ONLY="z0 d40a" runs just those; OUT and TREE move the output and the tree (see
# experiments/history/2026-11-30/ci-noise-2/run.sh); ROUNDS sets the rounds per cell (default 5;
# results/2026-11-30/ci-noise-15r used 15); SLOWDOWNS the percentages of the d runs; TABLE the table (default;
# results/2026-11-30/ci-noise-large used large: D-K on 2,100 rows with batch 1,000).
# The output (OUT, default results/2026-11-30/ci-noise of this checkout) is summarised by analyze.py beside this.
# Frozen copy of the tree (src, bench_suites, tests/delay_arm.py, conftest.py, pyproject.toml) in $TREE.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/results/2026-11-30/ci-noise}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)  # absolute: the runs start in $TREE
TREE=${TREE:-/tmp/runtree5}
PY=${PY:-/tmp/v313all/bin/python}
cd "$TREE" || exit 1
export PYTHONPATH="$TREE/src:$TREE"
MATRIX="--ormbench-arms=sqlite3,delayed,peewee,sqlalchemy --ormbench-models=simple --ormbench-mode=warm
        --ormbench-table=${TABLE:-default} --ormbench-rounds=${ROUNDS:-5} --ormbench-batch=1000
        --ormbench-register=tests.delay_arm:DelayedSqlite3Arm"
run() {  # name slowdown [extra options]
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $1 "* ]]; then return; fi
  start=$(date +%s)
  ORMBENCH_TEST_SLOWDOWN=$2 "$PY" -m pytest bench_suites -p no:cacheprovider -q $MATRIX ${3:-} \
    --benchmark-json="$OUT/$1.json" > "$OUT/$1.log" 2>&1
  echo "exit=$? slowdown=$2 wall_seconds=$(( $(date +%s) - start ))" >> "$OUT/$1.log"
  tail -1 "$OUT/$1.log"
}
for i in 0 1 2 3 4 5; do run z$i 0; done
for s in ${SLOWDOWNS:-05 10 20 40}; do run d${s}a $(awk "BEGIN{print $s/100}"); done
for i in 0 1; do run b$i 0 --ormbench-schedule=back-to-back; done
