#!/usr/bin/env python3
"""Steps of a FK_TRACE timeline (start, waited, gx, gy, gz, block per kernel) and the GPU's idle time between them.
A step ends at the 1x1x1 256-thread kernel (the sampler's tail). For each step: launches, first kernel's grid, its
duration (last kernel's waited to the next step's end), and the gap before its first kernel starts (from the
previous step's last kernel's waited, i.e. when the previous step's last kernel could run). usage: gaps.py RAW"""
import sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
rows.sort()
ends = [i for i, r in enumerate(rows) if (r[2], r[3], r[5]) == (1, 1, 256)]
t0 = rows[0][0]
steps = []
for a, b in zip(ends, ends[1:]):
    gap = (rows[a + 1][0] - rows[a][1]) / 1e3          # previous step's end kernel ready -> this step's first start
    dur = (rows[b][1] - rows[a][1]) / 1e3
    steps.append(dict(t=(rows[a + 1][0] - t0) / 1e6, n=b - a, gx=rows[a + 1][2], gap=gap, dur=dur))
# runs separated by >100 ms idle
runs, cur = [], []
for s in steps:
    if cur and s['gap'] > 100e3:
        runs.append(cur); cur = []
    cur.append(s)
runs.append(cur)
for k, r in enumerate(runs):
    tot = sum(s['dur'] for s in r); gaps = sorted(r, key=lambda s: -s['gap'])
    big = [s for s in r[1:] if s['gap'] > 1000]
    print("run %d: %d steps, %.1f ms from its first step, gaps > 1 ms: %d totalling %.1f ms; gap sum (excl. first) %.1f ms"
          % (k, len(r), tot / 1e3, len(big), sum(s['gap'] for s in big) / 1e3, sum(s['gap'] for s in r[1:]) / 1e3))
    print("   largest gaps (t ms, launches, grid, gap us, dur us):",
          " ".join("%.1f/%d/%d/%.0f/%.0f" % (s['t'], s['n'], s['gx'], s['gap'], s['dur']) for s in gaps[1:13]))
    from collections import Counter
    c = Counter((s['n'], s['gx']) for s in r)
    print("   step kinds (launches, grid: count):", " ".join("%d,%d:%d" % (k[0], k[1], v) for k, v in c.most_common(20)))
