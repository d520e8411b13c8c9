"""Sizes the delayed arm's extra work in instructions (tests/delay_arm.py, "by instructions").

    python experiments/ci-instructions/calibrate.py BASELINE.json calibration.json

(run.sh calls it with results/ci-instructions/instr-calib.json and results/ci-instructions/calibration.json.)

BASELINE.json: an ``--ormbench-instructions`` run of the delayed arm at ORMBENCH_TEST_SLOWDOWN=0. For
every cell it writes ``{model:op: median instructions / instructions of one spin iteration}``: the spin
iterations that cost as much as the op itself, so that a slowdown s spins s times that many. One spin
iteration's cost is counted under callgrind, in a child, the same way the harness counts an op.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_ormbench.measuring import callgrind

CHILD = """
import os
from pathlib import Path
from pytest_ormbench.measuring.callgrind import Callgrind
from tests.delay_arm import spin
cg = Callgrind(Path(os.environ["PYTEST_ORMBENCH_CALLGRIND_DIR"]))
counts = []
for n in (100000, 200000):
    cg.start(); spin(n); counts.append(cg.stop())
print((counts[1] - counts[0]) / 100000)
"""


def per_iteration() -> float:
    vg = callgrind.check_available()
    root = Path(__file__).resolve().parents[2]  # the repository: tests.delay_arm is imported from it
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([*callgrind.command(vg, Path(out)), sys.executable, "-c", CHILD], cwd=root,
                              env={**os.environ, callgrind.OUT_DIR_ENV: out, "PYTHONPATH": str(root)},
                              capture_output=True, text=True, check=True)
    return float(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("baseline", type=Path, help="an --ormbench-instructions run of the delayed arm at slowdown 0")
    ap.add_argument("out", type=Path, help="the calibration file to write (ORMBENCH_TEST_SLOWDOWN_CALIBRATION)")
    a = ap.parse_args()
    base, out = a.baseline, a.out
    each = per_iteration()
    doc = json.loads(base.read_text())
    table = {}
    for b in doc["benchmarks"]:
        e = b["extra_info"]
        if e["arm"] == "delayed":
            table[f"{e['model']}:{e['op_name']}"] = statistics.median(e["measures"]["instructions"]) / each
    out.write_text(json.dumps({"instructions_per_spin_iteration": each, **table}, indent=1, sort_keys=True) + "\n")
    print(f"{len(table)} cells; one spin iteration = {each:.1f} instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
