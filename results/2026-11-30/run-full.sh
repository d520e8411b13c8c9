#!/usr/bin/env bash
# Issue 5's publishable run, one pytest run per arm so that every finished arm's JSON is kept:
# every op (A-K), Tests 1-3, cold and warm, default and large table, 5 interleaved rounds.
# Frozen copy of the tree (src, bench_suites, conftest.py, pyproject.toml) in $TREE; ARMS picks arms.
set -u
OUT=${OUT:-/work/main/results/2026-11-30}
TREE=${TREE:-/tmp/runtree5}
PY=${PY:-/tmp/v313all/bin/python}
cd "$TREE"
export PYTHONPATH="$TREE/src:$TREE"
for arm in ${ARMS:-sqlite3 peewee sqlalchemy django sqlobject tortoise sqlalchemy_async sqlmodel sqlmodel_async piccolo ormar objectbox objectbox_nocodegen}; do
  start=$(date +%s)
  "$PY" -m pytest bench_suites -p no:cacheprovider -q --ormbench-arms=$arm --ormbench-mode=cold,warm \
    --ormbench-table=default,large --ormbench-rounds=5 --benchmark-json=$OUT/full-$arm.json > $OUT/full-$arm.log 2>&1
  echo "exit=$? wall_seconds=$(( $(date +%s) - start ))" >> $OUT/full-$arm.log
done
