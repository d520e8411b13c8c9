#!/usr/bin/env bash
# Regenerate the published tables from the JSON in results/: report.md and charts/ (`ormbench report`, run
# from the repository root so that the report names its sources results/…), and wall-times.md from the
# run logs (each log's last line, appended by run-large-arms.sh). tests/test_results.py checks that
# report.md is what `ormbench report results/*.json` makes.
set -eu
export LC_ALL=C
cd "$(dirname "$0")/.."
PY=${PY:-python3}
"$PY" -m pytest_ormbench.commands.main report results/*.json -o results/report.md --charts results/charts
"$PY" results/ratios_vs_reference.py results/*.json > results/ratios-vs-reference.md  # set -e: no JSON stopped the line above
{
  echo "| run log | started (UTC) | wall time | exit |"
  echo "| --- | --- | ---: | ---: |"
  for log in results/*.log; do
    line=$(grep -h "wall_seconds=" "$log" | tail -n 1 || true)
    secs=$(echo "$line" | sed -n 's/.*wall_seconds=\([0-9]*\).*/\1/p')
    started=$(echo "$line" | sed -n 's/.*started=\([0-9T:-]*\).*/\1/p' | tr T ' ' | cut -c1-16)
    code=$(echo "$line" | sed -n 's/^exit=\([0-9]*\).*/\1/p')
    if [ -n "$secs" ]; then
      printf '| %s | %s | %d min %02d s | %s |\n' "$(basename "$log")" "${started:-?}" $((secs / 60)) $((secs % 60)) "$code"
    else
      echo "| $(basename "$log") | — | running or stopped | — |"
    fi
  done
} > results/wall-times.md
echo "finalize: wrote results/report.md, results/charts/, results/ratios-vs-reference.md, results/wall-times.md"
