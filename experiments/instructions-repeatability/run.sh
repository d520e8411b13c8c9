#!/usr/bin/env bash
# Repeatability of instruction counts: the smoke matrix (every arm, sync and async; Tests 1-3, A-K at the
# smoke sizes), warm on the default table, cold on Test 1, counted under callgrind twice or more.
#   bash experiments/instructions-repeatability/run.sh NAME [load|quiet] [warm,cold]
# "load" keeps the other core busy (a Python busy loop) for the whole run; the third argument picks the parts.
# Writes NAME-warm.json, NAME-cold.json and their logs to OUT (default results/instructions-repeatability, where
# the committed runs are) and a line to OUT/wall-times.txt; diff.py beside this compares two runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-python}
OUT=${OUT:-results/instructions-repeatability}
name=$1
loader=""
if [ "${2:-}" = load ]; then
    $PY -c "while True: pass" &
    loader=$!
    trap 'kill $loader 2>/dev/null || true' EXIT
fi
COMMON="bench_suites -p no:cacheprovider -q --ormbench-instructions --ormbench-rounds=1 --ormbench-iterations=5
        --ormbench-batch=50 --ormbench-table=default"
parts=${3:-warm,cold}
models=${MODELS:-simple,fk,wide}
start=$(date +%s)
if [[ $parts == *warm* ]]; then
    $PY -m pytest $COMMON --ormbench-mode=warm --ormbench-models=$models --benchmark-json=$OUT/$name-warm.json > $OUT/$name-warm.log 2>&1 || true
fi
if [[ $parts == *cold* ]]; then
    $PY -m pytest $COMMON --ormbench-mode=cold --ormbench-models=simple --benchmark-json=$OUT/$name-cold.json \
        > $OUT/$name-cold.log 2>&1 || true
fi
echo "$name ${2:-quiet} $parts: $(( $(date +%s) - start )) s, ended $(date -u +%FT%TZ)" >> $OUT/wall-times.txt
