#!/usr/bin/env bash
# 5-round cold and warm run, Tests 1-3, default table, object operations only (A-F, I-K), one pytest
# session per arm so that each arm's JSON is kept as soon as it is done. Python 3.13 venv with
# pip install -e ".[all,plot]"; the code is a frozen copy of the tree in $TREE.
# Session 2 ran SQLModel async with the newer tree, keeping the first session's schedule:
#   ARMS=sqlmodel_async TREE=/tmp/runtree7 EXTRA=--ormbench-schedule=back-to-back ./run-arms.sh
set -u
OUT=${OUT:-/work/main/results/2026-11-30}
TREE=${TREE:-/tmp/runtree3}
PY=${PY:-/tmp/v313all/bin/python}
ARMS=${ARMS:-peewee sqlalchemy objectbox objectbox_nocodegen tortoise sqlmodel sqlobject piccolo ormar sqlalchemy_async sqlmodel_async}
cd "$TREE"
export PYTHONPATH="$TREE/src:$TREE"
for arm in $ARMS; do
  start=$(date +%s)
  "$PY" -m pytest bench_suites -p no:cacheprovider -q --ormbench-arms=$arm --ormbench-ops=A,B,C,D,E,F,I,J,K \
    --ormbench-mode=cold,warm --ormbench-table=default --ormbench-rounds=5 ${EXTRA:-} \
    --benchmark-json=$OUT/arm-$arm.json > $OUT/arm-$arm.log 2>&1
  echo "exit=$? wall_seconds=$(( $(date +%s) - start ))" >> $OUT/arm-$arm.log
done
