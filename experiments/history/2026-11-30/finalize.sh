#!/usr/bin/env bash
# Regenerate results/2026-11-30's tables from its JSON files (run from the repository root or anywhere).
# Moved from results/2026-11-30/finalize.sh: it now changes into that folder (DIR overrides it) instead of its
# own, and the ratios come from pytest_ormbench.results.reference instead of results/ratios_vs_reference.py
# (gone since 74bbb13); otherwise as run. Later runs are finalised by `ormbench publish --finalize-only`.
set -eu
cd "${DIR:-$(dirname "$0")/../../../results/2026-11-30}"
PY=${PY:-python3}
default=$(ls main-default.json arm-*.json 2>/dev/null)
"$PY" -m pytest_ormbench.commands.main report $default -o report-default.md
if ls large-*.json >/dev/null 2>&1; then
  "$PY" -m pytest_ormbench.commands.main report large-*.json -o report-large.md --charts charts-large
fi
"$PY" -c 'import sys
from pytest_ormbench.results.reference import ratios_markdown
from pytest_ormbench.results.report.load import load
sys.stdout.write(ratios_markdown(load(sys.argv[1:])))' $default > ratios-vs-reference.md
{
  echo "| run log | wall time (s) | exit |"
  echo "|---|---:|---:|"
  for log in *.log; do
    line=$(grep -h "wall_seconds" "$log" | tail -1 || true)
    echo "| $log | $(echo "$line" | sed -n 's/.*wall_seconds=\([0-9]*\).*/\1/p') | $(echo "$line" | sed -n 's/exit=\([0-9]*\).*/\1/p') |"
  done
} > wall-times.md
