#!/usr/bin/env bash
# Issue 5's publishable run, large table: one pytest run per arm (a finished arm's JSON is kept if a later
# one is stopped), every op A-K, Tests 1-3, cold and warm, 5 interleaved rounds, drift probe on.
# Frozen copy of the tree (src, bench_suites, conftest.py, pyproject.toml) in $TREE; ARMS picks arms;
# OPS picks ops and MODELS models (default all; an arm too long for one session runs one model per run);
# NAME is the JSON file's stem ({arm} is replaced by the arm); ROUNDS the rounds (5); EXTRA more options
# (e.g. EXTRA=--ormbench-instructions for the instructions pass).
set -u
OUT=${OUT:-/work/main/results}
TREE=${TREE:-/tmp/runtree8}
PY=${PY:-/tmp/v313all/bin/python}
TABLE=${TABLE:-large}
NAME=${NAME:-"$TABLE-{arm}"}
cd "$TREE"
export PYTHONPATH="$TREE/src:$TREE"
# default ARMS: every built-in arm, in the registry's order, one pytest run each (about 10 h on the large table here)
ALL=$("$PY" -c "from pytest_ormbench.arms.registry import BUILTIN_ARMS; print(*(a.name for a in BUILTIN_ARMS))") || exit 1
for arm in ${ARMS:-$ALL}; do
  stem=${NAME//\{arm\}/$arm}
  start=$(date +%s)
  "$PY" -m pytest bench_suites -p no:cacheprovider -q --ormbench-arms=$arm --ormbench-mode=cold,warm \
    --ormbench-table=$TABLE --ormbench-rounds=${ROUNDS:-5} ${OPS:+--ormbench-ops=$OPS} ${MODELS:+--ormbench-models=$MODELS} ${EXTRA:-} \
    --benchmark-json=$OUT/$stem.json > $OUT/$stem.log 2>&1
  echo "exit=$? wall_seconds=$(( $(date +%s) - start )) started=$(date -u -d @$start +%FT%TZ)" >> $OUT/$stem.log
done
