#!/usr/bin/env bash
# Regenerate this folder's tables from its JSON files (run from the repository root or anywhere).
set -eu
cd "$(dirname "$0")"
PY=${PY:-python3}
default=$(ls main-default.json arm-*.json 2>/dev/null)
"$PY" -m pytest_ormbench.commands.main report $default -o report-default.md
if ls large-*.json >/dev/null 2>&1; then
  "$PY" -m pytest_ormbench.commands.main report large-*.json -o report-large.md --charts charts-large
fi
"$PY" ../ratios_vs_reference.py $default > ratios-vs-reference.md
{
  echo "| run log | wall time (s) | exit |"
  echo "|---|---:|---:|"
  for log in *.log; do
    line=$(grep -h "wall_seconds" "$log" | tail -1 || true)
    echo "| $log | $(echo "$line" | sed -n 's/.*wall_seconds=\([0-9]*\).*/\1/p') | $(echo "$line" | sed -n 's/exit=\([0-9]*\).*/\1/p') |"
  done
} > wall-times.md
