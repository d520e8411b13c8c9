#!/usr/bin/env bash
# The same-code runs of ci-noise/ again, with a change since reverted (every interleaved warm round in a fresh
# worker process), frozen in /tmp/runtree6: six runs z0..z5, then the delayed arm slowed by 40 %.
# Moved from results/2026-11-30/ci-noise-2/run.sh (the data stays there); ci-noise/run.sh is experiments/ci-noise/run.sh.
OUT=/work/main/results/2026-11-30/ci-noise-2 TREE=/tmp/runtree6 ONLY="z0 z1 z2 z3 z4 z5 d40a" \
  "$(dirname "$0")/../../../ci-noise/run.sh"
