#!/usr/bin/env bash
# The same cells timed from two frozen trees in turn (old, new, old, new, ...), on the same machine in one
# sitting: a move between two published runs that shows here too comes from the code, one that does not
# came from the machine (or the day). Each run is one pytest run of every arm in ARMS together (interleaved
# rounds, drift probe on), with the control arm beside them only where the tree runs it by default.
#   OLD, NEW: the trees (a frozen copy of src, bench_suites, conftest.py, pyproject.toml); OUT: where the
#   JSON and logs go; ARMS: comma-separated; MODELS, MODES, OPS, ROUNDS; REPS: how many old/new pairs;
#   NEW_EXTRA: options only the new tree takes (e.g. --ormbench-control=off, to time what the old one did).
set -u
: "${OLD:?a frozen tree}" "${NEW:?a frozen tree}" "${OUT:?a folder}" "${ARMS:?comma-separated arms}"
PY=${PY:-/tmp/v313all/bin/python}
mkdir -p "$OUT"
for rep in $(seq 1 "${REPS:-2}"); do
  for side in old new; do
    if [ "$side" = old ]; then tree=$OLD extra=""; else tree=$NEW extra=${NEW_EXTRA:-}; fi
    stem="$OUT/$side-$rep"
    start=$(date +%s)
    (cd "$tree" && PYTHONPATH="$tree/src:$tree" "$PY" -m pytest bench_suites -p no:cacheprovider -q \
      --ormbench-arms="$ARMS" --ormbench-models="${MODELS:-simple}" --ormbench-mode="${MODES:-cold}" \
      --ormbench-rounds="${ROUNDS:-3}" ${OPS:+--ormbench-ops=$OPS} $extra --benchmark-json="$stem.json") \
      > "$stem.log" 2>&1
    echo "exit=$? wall_seconds=$(( $(date +%s) - start )) started=$(date -u -d @"$start" +%FT%TZ)" >> "$stem.log"
  done
done
