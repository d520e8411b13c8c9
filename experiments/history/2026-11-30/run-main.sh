#!/usr/bin/env bash
# 5-round cold and warm run, Tests 1-3, default table, on Python 3.13
# (venv: pip install -e ".[all,plot]" sqlobject), from a frozen copy of the tree in $TREE.
set -u
OUT=${OUT:-/work/main/results/2026-11-30}
TREE=${TREE:-/tmp/runtree}
PY=${PY:-/tmp/v313all/bin/python}
ARMS=${ARMS:-sqlite3,django,peewee,sqlalchemy,sqlobject,tortoise,piccolo,ormar,objectbox,objectbox_nocodegen}
NAME=${NAME:-main-default}
cd "$TREE"
export PYTHONPATH="$TREE/src:$TREE"
start=$(date +%s)
"$PY" -m pytest bench_suites -p no:cacheprovider -q \
  --ormbench-arms=$ARMS \
  --ormbench-register=bench_suites.sqlobject_arm:SQLObjectArm \
  --ormbench-mode=cold,warm --ormbench-table=default --ormbench-rounds=5 \
  --benchmark-json=$OUT/$NAME.json > $OUT/$NAME.log 2>&1
echo "exit=$? wall_seconds=$(( $(date +%s) - start ))" >> $OUT/$NAME.log
