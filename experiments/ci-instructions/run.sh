#!/usr/bin/env bash
# Detection by instructions and by time: the delayed arm (tests/delay_arm.py) at +2, +5 and +10 %
# against six same-code baselines. Run from the repository root on a quiet machine:
#   bash experiments/ci-instructions/run.sh [instructions|time|both]
# Writes its JSON and logs to OUT (default results/ci-instructions, where the committed runs are);
# evaluate.py beside this tables them.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-python}
HERE=experiments/ci-instructions
OUT=${OUT:-results/ci-instructions}
what=${1:-both}
MATRIX="--ormbench-register=tests.delay_arm:DelayedSqlite3Arm --ormbench-mode=warm
        --ormbench-models=simple,fk --ormbench-batch=1000 -p no:cacheprovider -q"
export PYTHONPATH=$PWD

# six same-code runs (PREFIX-base-N) and one per slowdown (PREFIX-delay-PCT), with the given options
series() {
    local prefix=$1 options=$2 i pct
    for i in 1 2 3 4 5 6; do
        ORMBENCH_TEST_SLOWDOWN=0 $PY -m pytest bench_suites $options \
            --benchmark-json=$OUT/$prefix-base-$i.json > $OUT/$prefix-base-$i.log 2>&1
    done
    for pct in 2 5 10; do
        ORMBENCH_TEST_SLOWDOWN=0.$(printf %02d $pct) $PY -m pytest bench_suites $options \
            --benchmark-json=$OUT/$prefix-delay-$pct.json > $OUT/$prefix-delay-$pct.log 2>&1
    done
}

if [ "$what" != time ]; then
    # instructions: no control arm (no drift to correct), 3 rounds (counts repeat to ~0.01 %)
    IM="$MATRIX --ormbench-arms=delayed --ormbench-control=off --ormbench-rounds=3 --ormbench-instructions"
    ORMBENCH_TEST_SLOWDOWN=0 $PY -m pytest bench_suites $IM --benchmark-json=$OUT/instr-calib.json > $OUT/instr-calib.log 2>&1
    $PY $HERE/calibrate.py $OUT/instr-calib.json $OUT/calibration.json
    ORMBENCH_TEST_SLOWDOWN_CALIBRATION=$OUT/calibration.json series instr "$IM"
fi
if [ "$what" != instructions ]; then
    # time: the control arm beside it for the drift correction, 15 rounds, as docs/ci.md's matrix
    series time "$MATRIX --ormbench-arms=sqlite3,delayed --ormbench-rounds=15"
fi
