#!/usr/bin/env python3
"""A FK_TRACE timeline cut into steps (ending at the 1x1x1 256-thread kernel); gaps > 1 ms listed with the step
after them; totals per window of WIN ms. usage: windows.py RAW [WIN_MS]"""
import sys, statistics
from collections import Counter
rows = sorted(tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip())
t0 = rows[0][0]
ends = [i for i, r in enumerate(rows) if (r[2], r[3], r[5]) == (1, 1, 256)]
st = []
for a, b in zip(ends, ends[1:]):
    st.append(dict(t=(rows[a + 1][0] - t0) / 1e6, n=b - a, gx=rows[a + 1][2], gap=(rows[a + 1][0] - rows[a][1]) / 1e3,
                   dur=(rows[b][1] - rows[a][1]) / 1e3))
print("total %.1f ms, %d steps" % ((rows[-1][0] - t0) / 1e6, len(st)))
for s in st:
    if s['gap'] > 1000:
        print("  t=%.1f gap %.1f ms before a step of %d launches, grid %d" % (s['t'], s['gap'] / 1e3, s['n'], s['gx']))
win = float(sys.argv[2]) if len(sys.argv) > 2 else 1e9
k = 0
while True:
    w = [s for s in st if k * win <= s['t'] < (k + 1) * win]
    if not w:
        break
    dec = [s for s in w if s['n'] == 68]
    print("window %d: %d steps (%d decode-only: %.1f ms; others %.1f ms); gaps %.1f ms (> 1 ms: %.1f)" % (
        k, len(w), len(dec), sum(s['dur'] for s in dec) / 1e3, sum(s['dur'] for s in w if s['n'] != 68) / 1e3,
        sum(s['gap'] for s in w) / 1e3, sum(s['gap'] for s in w if s['gap'] > 1000) / 1e3))
    k += 1
