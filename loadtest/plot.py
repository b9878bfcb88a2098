#!/usr/bin/env python3
"""plot.py — draws flashkernel-loadtest results into a PNG, one line per series (a model, or the --labels given to
the files; per prompt/output shape too when the files hold several shapes):

  --x concurrency (default): output tokens/s, TTFT p50 (solid) / p99 (dashed) and ITL p50 / p99 against the
      levels' concurrency;
  --x throughput: the throughput-latency curve of a --rate sweep: TTFT and ITL p50 / p99 against the output tokens/s
      each level achieved, the points joined in the order of their arrival rates.

usage: python3 loadtest/plot.py RESULT.json [RESULT.json ...] [--labels A,B,..] [--x concurrency|throughput]
                                [--out docs/serving-benchmark.png] [--title TEXT]

A RESULT may also be LOG#GLOB: the runs in a run-peer-benchmark.sh log (its benchmark.txt) whose --json file name
matches GLOB, read back from the log's tables, for when the JSON files themselves did not come back (the GPU
machine returns only a few files). Levels of one series may come from several files. Levels where every request
failed are left out, and so are the latency points of runs that did not stream (TTFT and ITL are not measured
there). Needs python3-matplotlib (Debian); it runs on a dev machine from the JSON files, not in CI.
"""
import argparse
import fnmatch
import json
import os
import shlex
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402


def latency(stream, ok, p50, p99):
    """A latency entry of the load tester's JSON from a table's cells (None: n/a, not measured)."""
    timed = stream and p50 is not None
    return {"measured": timed, "n": ok if timed else 0, "p50": p50, "p99": p99}


def read_log(path, pattern):
    """The runs of a run-peer-benchmark.sh log whose --json name matches pattern, as one result: the load tester's
    JSON fields that the plot uses, from its tables (a command line "$ ...", then a header " conc ...", then a row
    per level: conc [rate] reqs errs req/s out-tok/s tot-tok/s TTFT p50 p90 p99, ITL p50 p99, e2e p50 p99)."""
    result, params, table, stream = {"params": None, "levels": []}, None, False, False
    with open(path) as f:
        for line in f:
            words = line.split()
            if line.startswith("$ "):
                argv = shlex.split(line[2:])
                opt = {a: argv[i + 1] for i, a in enumerate(argv[:-1]) if a.startswith("--")}
                chosen = fnmatch.fnmatch(os.path.basename(opt.get("--json", "")), pattern)
                # the load tester's defaults where the command left them out (128 and 128; no length: a prompt file)
                prompt_len = None if "--prompts" in opt else int(opt.get("--prompt-len", 128))
                params = {"prompt_len": prompt_len, "max_tokens": int(opt.get("--max-tokens", 128))} if chosen else None
                stream, table = "--stream" in argv, False
            elif params and words[:1] == ["conc"]:
                table, open_loop = True, words[1] == "rate"
                if result["params"] not in (None, params):
                    sys.exit("plot.py: %s#%s: runs of different prompt/output shapes" % (path, pattern))
                result["params"] = params
            elif params and table and words and words[0].isdigit():
                v = [None if w == "n/a" else float(w) for w in words[:14 if open_loop else 13]]  # n/a: not measured
                rate = v.pop(1) if open_loop else None
                ok = int(v[1] - v[2])
                result["levels"].append({"concurrency": int(v[0]), "rate": rate, "ok": ok, "output_tok_per_s": v[4],
                                         "ttft_ms": latency(stream, ok, v[6], v[8]),
                                         "itl_ms": latency(stream, ok, v[9], v[10])})
            elif not words:
                table = False
    if result["params"] is None:
        sys.exit("plot.py: no run matching %s in %s" % (pattern, path))
    return result


def read(path):
    """A load tester JSON file, or LOG#GLOB (read_log)."""
    if "#" in path:
        return read_log(*path.rsplit("#", 1))
    with open(path) as f:
        return json.load(f)


def load(paths, labels, x):
    """{(label, shape): {key: level}}: key is the concurrency (--x concurrency) or the arrival rate (throughput)."""
    series = {}
    for i, path in enumerate(paths):
        d = read(path)
        p = d["params"]
        shape = "%s/%d" % (p["prompt_len"] if p["prompt_len"] is not None else "file", p["max_tokens"])
        label = labels[i] if labels else d.get("model") or os.path.splitext(os.path.basename(path))[0]
        for level in d["levels"]:
            if level["ok"] == 0:
                continue
            if x == "throughput":
                if level.get("rate") is None:
                    continue  # a closed-loop level has no place on an arrival-rate curve
                key = level["rate"]
                s = shape
            else:
                key = level["concurrency"]
                s = shape + (" @%g req/s" % level["rate"] if level.get("rate") else "")
            series.setdefault((label, s), {})[key] = level
    return series


def measured(level, name):
    return level[name]["measured"] and level[name]["n"] > 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", metavar="RESULT.json")
    ap.add_argument("--labels", help="comma-separated names of the files' series, in their order")
    ap.add_argument("--x", choices=("concurrency", "throughput"), default="concurrency")
    ap.add_argument("--out", default="docs/serving-benchmark.png")
    ap.add_argument("--title", default="output throughput, time to first token and inter-token latency")
    args = ap.parse_args()
    labels = args.labels.split(",") if args.labels else None
    if labels and len(labels) != len(args.files):
        sys.exit("plot.py: %d --labels for %d files" % (len(labels), len(args.files)))
    series = load(args.files, labels, args.x)
    if not series:
        sys.exit("plot.py: no level with a successful request%s in %s" % (
            " and an arrival rate" if args.x == "throughput" else "", ", ".join(args.files)))
    several_shapes = len({shape for _, shape in series}) > 1

    if args.x == "concurrency":
        fig, (ax_tok, ax_ttft, ax_itl) = plt.subplots(1, 3, figsize=(16, 4.8))
    else:
        fig, (ax_ttft, ax_itl) = plt.subplots(1, 2, figsize=(12, 4.8))
    for i, ((label, shape), levels) in enumerate(sorted(series.items())):
        color = "C%d" % (i % 10)
        name = "%s (prompt/output %s)" % (label, shape) if several_shapes else label
        keys = sorted(levels)
        xs = {k: k if args.x == "concurrency" else levels[k]["output_tok_per_s"] for k in keys}
        if args.x == "concurrency":
            ax_tok.plot(keys, [levels[k]["output_tok_per_s"] for k in keys], "o-", color=color, label=name)
        for ax, metric in ((ax_ttft, "ttft_ms"), (ax_itl, "itl_ms")):
            timed = [k for k in keys if measured(levels[k], metric)]
            if timed:
                ax.plot([xs[k] for k in timed], [levels[k][metric]["p50"] for k in timed], "o-", color=color,
                        label=name + " p50")
                ax.plot([xs[k] for k in timed], [levels[k][metric]["p99"] for k in timed], "s--", color=color,
                        label=name + " p99")
    axes = (ax_tok, ax_ttft, ax_itl) if args.x == "concurrency" else (ax_ttft, ax_itl)
    ticks = sorted({k for levels in series.values() for k in levels})
    for ax in axes:
        if args.x == "concurrency":
            ax.set_xscale("log", base=2)
            ax.set_xticks(ticks, [str(c) for c in ticks])  # the concurrency values themselves, not powers of 2
            ax.minorticks_off()
            ax.set_xlabel("concurrency (clients)")
        else:
            ax.set_xscale("log")  # servers of very different capacity on one axis
            ax.set_xlabel("output tokens/s achieved (one point per arrival rate)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    if args.x == "concurrency":
        ax_tok.set_ylabel("output tokens/s")
        ax_tok.set_yscale("log")  # servers of very different capacity on one axis
    ax_ttft.set_yscale("log")
    ax_ttft.set_ylabel("TTFT (ms)")
    ax_itl.set_yscale("log")
    ax_itl.set_ylabel("inter-token latency (ms)")
    fig.suptitle(args.title)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print("plot.py: wrote %s (%d series)" % (args.out, len(series)))


if __name__ == "__main__":
    main()
