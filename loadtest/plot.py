#!/usr/bin/env python3
"""plot.py — draws flashkernel-loadtest results: output tokens/s, and TTFT p50 (solid) and p99 (dashed), against
concurrency, one line per model (per model and prompt/output shape when the files hold several shapes), into a PNG.

usage: python3 loadtest/plot.py RESULT.json [RESULT.json ...] [--out docs/serving-benchmark.png] [--title TEXT]

Levels of the same model and shape may come from several files. Levels where every request failed are left out, and
so are the TTFT points of runs that did not stream (TTFT is not measured there). Needs python3-matplotlib (Debian);
it runs on a dev machine from the JSON files, not in CI.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402


def load(paths):
    """{(model, shape): {concurrency: level}} from the files."""
    series = {}
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        p = d["params"]
        shape = "%s/%d" % (p["prompt_len"] if p["prompt_len"] is not None else "file", p["max_tokens"])
        if p.get("rate"):
            shape += " @%g req/s" % p["rate"]
        key = (d.get("model") or os.path.splitext(os.path.basename(path))[0], shape)
        for level in d["levels"]:
            if level["ok"] > 0:
                series.setdefault(key, {})[level["concurrency"]] = level
    return series


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", metavar="RESULT.json")
    ap.add_argument("--out", default="docs/serving-benchmark.png")
    ap.add_argument("--title", default="flashkernel-server: output throughput and time to first token")
    args = ap.parse_args()
    series = load(args.files)
    if not series:
        sys.exit("plot.py: no level with a successful request in %s" % ", ".join(args.files))
    several_shapes = len({shape for _, shape in series}) > 1

    fig, (ax_tok, ax_ttft) = plt.subplots(1, 2, figsize=(12, 4.8))
    for i, ((model, shape), levels) in enumerate(sorted(series.items())):
        color = "C%d" % (i % 10)
        label = "%s (prompt/output %s)" % (model, shape) if several_shapes else model
        conc = sorted(levels)
        ax_tok.plot(conc, [levels[c]["output_tok_per_s"] for c in conc], "o-", color=color, label=label)
        timed = [c for c in conc if levels[c]["ttft_ms"]["measured"] and levels[c]["ttft_ms"]["n"] > 0]
        if timed:
            ax_ttft.plot(timed, [levels[c]["ttft_ms"]["p50"] for c in timed], "o-", color=color, label=label + " p50")
            ax_ttft.plot(timed, [levels[c]["ttft_ms"]["p99"] for c in timed], "s--", color=color, label=label + " p99")
    ticks = sorted({c for levels in series.values() for c in levels})
    for ax in (ax_tok, ax_ttft):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(c) for c in ticks])  # the concurrency values themselves, not powers of 2
        ax.minorticks_off()
        ax.set_xlabel("concurrency (clients)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    ax_tok.set_ylabel("output tokens/s")
    ax_tok.set_ylim(bottom=0)
    ax_ttft.set_yscale("log")
    ax_ttft.set_ylabel("TTFT (ms)")
    fig.suptitle(args.title)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print("plot.py: wrote %s (%d series)" % (args.out, len(series)))


if __name__ == "__main__":
    main()
