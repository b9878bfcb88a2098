#!/usr/bin/env python3
"""The kernel timeline of a decode step, from a -DFK_TRACE build's FK_TRACE_FILE (kernels/trace.cu).

Each line of the file is one kernel launch, in launch order: "start_ns waited_ns grid_x grid_y grid_z block_x",
the %globaltimer of block 0 before and after its PDL wait. The waits chain: kernel i's wait returns when kernel
i - 1 has completed, so D_i = waited_{i+1} - waited_i is kernel i's share of the critical path (from its input being
ready until it completed), and early_i = waited_i - start_i how long it was resident before that (streaming its
first weights). The script finds the period of the repeating decode steps (graph replays: every step launches the
same kernels), skips the first two, and prints the median D and early of each launch of a step, then the totals by
launch shape. Kernels are named by shape only: grid x, grid y, block. STEP_KERNELS, if given, is the step's
number of launches, for a run where the search would pick another period.

usage: trace_report.py TRACE_FILE [STEP_KERNELS]
"""
import operator
import statistics
import sys


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and not sys.argv[2].isdigit()):
        sys.exit(__doc__)
    rows = [tuple(map(int, line.split())) for line in open(sys.argv[1]) if line.strip()]
    shape = [(r[2], r[3], r[5]) for r in rows]
    n = len(rows)
    # The step's period: the shift q whose longest stretch of repeating launches (shape[i] == shape[i + q]) covers
    # the most launches, run + q. Every multiple of the step covers about as much (the steady part), so the
    # shortest within q of the best wins. A layer's period, or any shift that is not the step's, breaks at every
    # step's ends. (Counting all matching launches instead favours layer periods where prefill steps of another
    # layout are many, and, divided by n - q, longer multiples where warm-up launches are.)
    def longest_run(q):
        best_start, best_len, start = 0, 0, 0
        for i, same in enumerate(map(operator.eq, shape, shape[q:])):
            if not same:
                start = i + 1
            elif i + 1 - start > best_len:
                best_start, best_len = start, i + 1 - start
        return best_start, best_len

    periods = [int(sys.argv[2])] if len(sys.argv) == 3 else range(8, min(2000, n // 3))
    runs = {q: longest_run(q) for q in periods if 0 < q < n}
    if not runs:
        sys.exit("too few launches (a decode run of a few dozen steps is needed)")
    best = max(run_len + q for q, (_, run_len) in runs.items())
    p = min(q for q, (_, run_len) in runs.items() if run_len + q >= best - q)
    run_start, run_len = runs[p]
    if run_len < 3 * p:
        sys.exit("no repeating step found (a decode run of a few dozen steps is needed)")
    # A step starts after the longest wait-to-wait gap (the host's time between steps) in the stretch's first period.
    first = max(range(run_start + 1, run_start + 1 + p), key=lambda k: rows[k][1] - rows[k - 1][1])
    starts = list(range(first, run_start + run_len - p + 1, p))[2:]  # not the first two steps
    if not starts:
        sys.exit("too few steps")
    step_us = [(rows[s + p][1] - rows[s][1]) / 1000 for s in starts]
    print(f"{len(starts)} steps of {p} kernels; step {statistics.median(step_us):.1f} us median, "
          f"{min(step_us):.1f} min")
    print(f"{'#':>4} {'grid':>10} {'block':>5} {'D us':>7} {'early us':>8}")
    by_shape = {}
    for j in range(p):
        d = statistics.median(rows[s + j + 1][1] - rows[s + j][1] for s in starts) / 1000
        e = statistics.median(rows[s + j][1] - rows[s + j][0] for s in starts) / 1000
        gx, gy, bx = shape[starts[0] + j]
        t = by_shape.setdefault((gx, gy, bx), [0, 0.0])
        t[0] += 1
        t[1] += d
        print(f"{j:>4} {f'{gx}x{gy}':>10} {bx:>5} {d:>7.2f} {e:>8.2f}")
    print(f"sum of D: {sum(t for _, t in by_shape.values()):.1f} us (the last kernel's D includes the host's gap)")
    print("by shape (grid x, grid y, block): launches, total D us, mean D us")
    for (gx, gy, bx), (c, t) in sorted(by_shape.items(), key=lambda kv: -kv[1][1]):
        print(f"  {gx}x{gy} {bx}: {c:>3} {t:>8.1f} {t / c:>6.2f}")


if __name__ == "__main__":
    main()
