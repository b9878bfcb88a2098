#!/usr/bin/env python3
"""The 256-sequence decode steps of call 10's r256 trace (raw-r256.txt from the FK_TRACE build; trace_report.py's
period search fails there, as the batch shrinks while sequences finish): steps are cut at the 1x1x1 kernel that ends
each step; for the steps of 68 kernels whose first kernel has 256 blocks, the median D of each position
(D_i = waited_{i+1} - waited_i: from kernel i's input being ready to kernel i+1's; cuBLAS kernels, untraced, fall in
the D of our kernel before them). usage: call10-step-r256.py RAW_TRACE"""
import statistics
import sys

rows = [tuple(map(int, line.split())) for line in open(sys.argv[1]) if line.strip()]
ends = [i for i, r in enumerate(rows) if (r[2], r[3], r[5]) == (1, 1, 256)]
per, first = {}, None
for a, b in zip(ends, ends[1:]):
    if b - a != 68 or rows[a + 1][2] != 256:
        continue
    first = first or a + 1
    for k in range(68):
        i = a + 1 + k
        per.setdefault(k, []).append((rows[i + 1][1] - rows[i][1]) / 1e3)
print(len(per[0]), "steps; position, grid x, grid y, block, median D us")
for k in range(68):
    r = rows[first + k]
    print(k, r[2], r[3], r[5], "%.2f" % statistics.median(per[k]))
print("sum %.1f us" % sum(statistics.median(v) for v in per.values()))
