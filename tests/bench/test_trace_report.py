#!/usr/bin/env python3
"""kernels/bench/trace_report.py on synthetic timelines whose answer is known: random steps of random kernel shapes
and durations (fresh each run; FK_TEST_SEED replays one), with warm-up launches before them and a different last
step after, as a real run has. The report must find the step's length and give each launch's median D (the wait-to-
wait time to the next launch) and early (start to wait), as computed here from the generated times. Given the step's
launch count as its second argument, it must print the same; a wrong count is used as given, and one that is not a
number is refused. And a 256-request bench-engine run's shape: prefill steps of one layout between stretches of
decode steps of another, where a shift of a few layers repeats more launches than the step does."""
import os
import random
import statistics
import subprocess
import sys
import tempfile

REPORT = os.path.join(os.environ["FK_SOURCE_ROOT"], "kernels", "bench", "trace_report.py")


def timeline(rng, shapes, n_steps):
    """Rows (start, waited, gx, gy, gz, block) and, per position of the step, the D and early of each step."""
    rows, t = [], 0
    warm = [(rng.randint(1, 9), 1, 1, 64) for _ in range(rng.randint(3, 40))]  # a prefill, the first steps
    for gx, gy, gz, bx in warm:
        t += rng.randint(1000, 50000)
        rows.append([t - 500, t, gx, gy, gz, bx])
    t, step_starts = steps(rng, rows, t, shapes, n_steps)
    t += 25000
    for gx, gy, gz, bx in [(1, 1, 1, 32), (3, 1, 1, 32)]:  # a last step unlike the others
        rows.append([t, t, gx, gy, gz, bx])
        t += 3000
    return rows, step_starts


def steps(rng, rows, t, shapes, n_steps):
    """Appends n_steps steps of the given launch shapes after t, each after the host's gap (longer than any
    kernel's); returns the new time and the steps' first rows."""
    step_starts = []
    for _ in range(n_steps):
        t += rng.randint(20000, 30000)
        step_starts.append(len(rows))
        for gx, gy, gz, bx in shapes:
            early = rng.randint(0, 8000)
            rows.append([t - early, t, gx, gy, gz, bx])
            t += rng.randint(1000, 15000)
    return t, step_starts


def mixed_timeline(rng):
    """A 256-request bench-engine run's shape (the eleventh session's trace): twice, 9 prefill steps of 101 launches
    (layers of 6) then 60 decode steps of 68 (layers of 4). A shift of 12 repeats inside the layers of both."""
    decode = ([(256, 1, 1, 128)] + [(256, 1, 1, 256), (512, 1, 1, 128), (256, 1, 1, 256), (8192, 1, 1, 256)] * 16 +
              [(256, 1, 1, 256), (256, 1, 1, 1024), (1, 1, 1, 256)])
    prefill = ([(4096, 1, 1, 128)] + [(4096, 1, 1, 256), (4096, 2, 1, 128), (32, 32, 1, 384), (4096, 1, 1, 256),
                                      (4096, 1, 1, 256), (8192, 1, 1, 256)] * 16 +
               [(4096, 1, 1, 256), (65535, 1, 1, 256), (256, 1, 1, 1024), (1, 1, 1, 256)])
    rows, t, decode_starts = [], 0, None
    for _ in range(2):
        t, _ = steps(rng, rows, t, prefill, 9)
        t, starts = steps(rng, rows, t, decode, 60)
        decode_starts = decode_starts or starts  # the first decode stretch: the report takes the first longest
    return rows, decode, decode_starts


def report(rows, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for r in rows:
            f.write(" ".join(map(str, r)) + "\n")
    out = subprocess.run([sys.executable, REPORT, f.name, *args], capture_output=True, text=True)
    os.unlink(f.name)
    return out


def check(case, rows, shapes, starts, out):
    """The report found the step of `shapes` and gave each position the median D and early of consecutive steps
    among `starts`."""
    if out.returncode:
        sys.exit(f"case {case}: trace_report.py failed: {out.stderr}")
    lines = out.stdout.splitlines()
    head = lines[0].split()
    used, period = int(head[0]), int(head[3])
    assert period == len(shapes), f"case {case}: period {period}, generated {len(shapes)}"
    by_pos = {}
    for line in lines[2:2 + period]:
        j, grid, block, d, early = line.split()
        by_pos[int(j)] = (grid, int(block), float(d), float(early))
    for j in range(period):
        gx, gy, _, bx = shapes[j]
        assert by_pos[j][:2] == (f"{gx}x{gy}", bx), f"case {case} position {j}: {by_pos[j][:2]}"

    # The report may leave out a few steps at either end (warm-up, the step before the odd tail); the ones it
    # keeps are consecutive generated steps, and every D and early is their median.
    def medians(window):
        return [(statistics.median(rows[s + j + 1][1] - rows[s + j][1] for s in window) / 1000,
                 statistics.median(rows[s + j][1] - rows[s + j][0] for s in window) / 1000)
                for j in range(period)]
    got = [by_pos[j][2:] for j in range(period)]
    windows = [starts[a:a + used] for a in range(0, 4) if a + used <= len(starts) - 1]
    assert used >= len(starts) - 5, f"case {case}: {used} steps used of {len(starts)}"
    assert any(all(abs(g[0] - w[0]) <= 0.006 and abs(g[1] - w[1]) <= 0.006 for g, w in zip(got, medians(win)))
               for win in windows), f"case {case}: D / early differ from every window of {used} steps"
    print(f"case {case}: {period} kernels a step, {used} steps: every position's D and early as generated")


def main():
    seed = int(os.environ.get("FK_TEST_SEED", random.randrange(1 << 30)))
    print(f"seed {seed}")
    rng = random.Random(seed)
    for case in range(6):
        p = rng.randint(9, 160)
        # Repeating layers inside the step, as a model has, and a distinct head and tail.
        layer = [(rng.choice([1, 8, 128, 192, 512]), rng.choice([1, 2]), 1, rng.choice([128, 256, 512]))
                 for _ in range(rng.randint(3, 8))]
        shapes = [(7, 1, 1, 1024), (1, 1, 1, 128)]
        while len(shapes) < p - 1:
            shapes += layer
        shapes = shapes[:p - 1] + [(3142, 1, 1, 512)]
        n_steps = rng.randint(20, 60)
        rows, starts = timeline(rng, shapes, n_steps)
        out = report(rows)
        check(case, rows, shapes, starts, out)
        given = report(rows, str(len(shapes)))
        assert given.returncode == 0 and given.stdout == out.stdout, f"case {case}: with the count given: {given}"
        # A wrong count is taken as given: the report uses it or finds no step repeating under it.
        wrong = report(rows, str(len(shapes) + 1))
        assert wrong.returncode != 0 or int(wrong.stdout.split()[3]) == len(shapes) + 1, f"case {case}: count ignored"
        refused = report(rows, "x")
        assert refused.returncode != 0 and "usage" in refused.stderr, f"case {case}: count 'x' not refused"
    rows, decode, starts = mixed_timeline(rng)
    check("prefill then decode", rows, decode, starts, report(rows))


if __name__ == "__main__":
    main()
