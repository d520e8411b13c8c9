"""The A/B's runs side by side: rows/s per cell in each run, and new/old (geometric means of each tree's runs).

    python results/2026-12-02-tree-ab/compare.py results/2026-12-02-tree-ab
"""
import json, sys, statistics as st
from pathlib import Path
d = Path(sys.argv[1])
def rates(p):
    doc = json.loads(p.read_text())
    out = {}
    for b in doc['benchmarks']:
        e = b['extra_info']
        if e.get('arm') in (None, 'probe'): continue
        out[(e['arm'], e['model'], e['op'], e['mode'])] = e['rows_per_s']
    return out, doc
sides = {}
for p in sorted(d.glob('*.json')):
    r, doc = rates(p)
    sides[p.stem] = r
keys = sorted(set.intersection(*(set(v) for v in sides.values())))
names = sorted(sides)
print('| arm | model | op | mode | ' + ' | '.join(names) + ' | new/old |')
print('| --- | --- | --- | --- | ' + ' | '.join('---:' for _ in names) + ' | ---: |')
import math
per_arm = {}
for k in keys:
    olds = [sides[n][k] for n in names if n.startswith('old')]
    news = [sides[n][k] for n in names if n.startswith('new')]
    ratio = math.exp(st.mean(map(math.log, news))) / math.exp(st.mean(map(math.log, olds)))
    per_arm.setdefault(k[0], []).append(ratio)
    print(f'| {k[0]} | {k[1]} | {k[2]} | {k[3]} | ' + ' | '.join(f'{sides[n][k]:,.0f}' for n in names) + f' | {ratio:.3f} |')
print()
for arm, rs in per_arm.items():
    print(arm, 'GM new/old', round(math.exp(st.mean(map(math.log, rs))), 3))
