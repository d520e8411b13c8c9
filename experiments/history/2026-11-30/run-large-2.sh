#!/usr/bin/env bash
# Session 2: 5-round cold and warm run on the LARGE table (D-K on 100 + 2 x 10,000 rows), Tests 1-3, every op
# (G and H reported unsupported where an arm has no such API), ObjectBox with and without codegen and
# SQLModel (the fastest SQL arm of the default table) in ONE interleaved run, so their ratios share the
# machine's drift. Frozen copy of the tree (src, bench_suites, conftest.py, pyproject.toml) in $TREE.
set -u
OUT=${OUT:-/work/main/results/2026-11-30}
TREE=${TREE:-/tmp/runtree4}
PY=${PY:-/tmp/v313all/bin/python}
NAME=${NAME:-large-obx-sqlmodel}
cd "$TREE"
export PYTHONPATH="$TREE/src:$TREE"
start=$(date +%s)
"$PY" -m pytest bench_suites -p no:cacheprovider -q --ormbench-arms=${ARMS:-objectbox,objectbox_nocodegen,sqlmodel} \
  --ormbench-mode=cold,warm --ormbench-table=large --ormbench-rounds=5 \
  --benchmark-json=$OUT/$NAME.json > $OUT/$NAME.log 2>&1
echo "exit=$? wall_seconds=$(( $(date +%s) - start ))" >> $OUT/$NAME.log
