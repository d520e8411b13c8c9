"""Run Test 4 cells of one arm on SQLite in this process: a developer's check of a relational arm before the
plugin runs it (usage: python experiments/relational_smoke.py module:Class [shape ...]).
"""
import sys, tempfile, time
from pathlib import Path
from pytest_ormbench.measuring.runner import Cell, run_cell
from pytest_ormbench.workload.plan import Sizes
from pytest_ormbench.workload.spec import Settings, Unsupported
from pytest_ormbench.workload.relational import SHAPES
from pytest_ormbench.arms.registry import import_arm
target = sys.argv[1]
only = sys.argv[2:] 
cls = import_arm(target)
tmp = Path(tempfile.mkdtemp())
bad = 0
for shape in SHAPES:
    if only and shape.name not in only: continue
    strategies = list(cls.strategies.get(shape.name, {})) if shape.strategies else [None]
    for st in strategies or [None]:
        cell = Cell(cls.name, target, "relational", shape.code, "default", "warm", Sizes(10, 100), Settings(), tmp/"t", tmp/"w", rounds=2, statements=True, db="sqlite", strategy=st)
        t=time.time()
        try:
            rounds, counters = run_cell(cell)
            print(f"ok   {shape.name}.{st}: {[round(r.seconds*1000,2) for r in rounds]} ms, statements {rounds[-1].statements}")
        except Unsupported as e:
            print(f"uns  {shape.name}.{st}: {e}")
        except Exception as e:
            bad += 1
            print(f"FAIL {shape.name}.{st}: {type(e).__name__}: {e}"[:600])
sys.exit(1 if bad else 0)
