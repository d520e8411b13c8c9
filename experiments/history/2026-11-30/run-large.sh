#!/usr/bin/env bash
# 5-round cold and warm run on the LARGE table (D-K on 100 + 2 x 10,000 rows), Tests 1-3, object operations,
# for ObjectBox and the best SQL arm of the default-table run (SA ORM). Frozen tree in $TREE.
set -u
OUT=${OUT:-/work/main/results/2026-11-30}
TREE=${TREE:-/tmp/runtree3}
PY=${PY:-/tmp/v313all/bin/python}
cd "$TREE"
export PYTHONPATH="$TREE/src:$TREE"
for arm in ${ARMS:-objectbox sqlalchemy}; do
  start=$(date +%s)
  "$PY" -m pytest bench_suites -p no:cacheprovider -q --ormbench-arms=$arm --ormbench-ops=A,B,C,D,E,F,I,J,K \
    --ormbench-mode=cold,warm --ormbench-table=large --ormbench-rounds=5 \
    --benchmark-json=$OUT/large-$arm.json > $OUT/large-$arm.log 2>&1
  echo "exit=$? wall_seconds=$(( $(date +%s) - start ))" >> $OUT/large-$arm.log
done
