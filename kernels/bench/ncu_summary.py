#!/usr/bin/env python3
"""ncu_summary.py — Nsight Compute raw CSVs (`ncu --csv --page raw`, sections SpeedOfLight, Occupancy,
MemoryWorkloadAnalysis, WarpStateStats, LaunchStats) of each launcher's main rows -> summary.md and summary.json.

  ncu_summary.py --ours ours.json --out DIR/summary.md DIR/k_embed.csv DIR/k_sample.csv ...

Each CSV holds the kernels one `bench_kernels --ncu --main --only <launcher>` profiled, in launch order; the file
name (less .csv) is the launcher. Its launches are shared out among that launcher's main rows in ours.json (the
variants, in their order) when they divide evenly, else left unassigned. Metric names vary between Nsight Compute
versions: each quantity is looked up under every name it has had, and is "n/a" when the CSV has none of them.
Standard library only."""
import argparse
import csv
import json
import os
import re
import sys

# quantity -> the metric names it goes by, preferred first
METRICS = {
    "duration": ["gpu__time_duration.sum", "gpu__time_duration.avg"],
    "occupancy": ["sm__warps_active.avg.pct_of_peak_sustained_active"],
    "occupancy_theoretical": ["sm__maximum_warps_per_active_cycle_pct"],
    "dram_pct": ["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                 "dram__throughput.avg.pct_of_peak_sustained_elapsed"],
    "memory_pct": ["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"],
    "sm_pct": ["sm__throughput.avg.pct_of_peak_sustained_elapsed"],
    "l2_hit": ["lts__t_sector_hit_rate.pct"],
    "registers": ["launch__registers_per_thread"],
    "block": ["launch__block_size", "Block Size"],
    "grid": ["launch__grid_size", "Grid Size"],
}
# Warp-stall families, preferred first: warps stalled per issued instruction (WarpStateStats), the average latency
# a warp spends in each state, PC sampling counts, the share of active warps.
STALL_FAMILIES = [
    re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$"),
    re.compile(r"^smsp__average_warp_latency_issue_stalled_(\w+?)(\.ratio|\.avg|\.sum)?$"),
    re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+?)(\.sum)?$"),
    re.compile(r"^smsp__warp_issue_stalled_(\w+?)_per_warp_active\.pct$"),
]
NOT_STALLS = {"selected", "not_issued"}  # issuing, or a total
TIME_UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6,
              "s": 1e6}


def number(text):
    """A CSV cell as a float (ncu may group thousands with commas), or None."""
    try:
        return float(text.replace(",", ""))
    except (ValueError, AttributeError):
        return None


def read_raw(path):
    """[(metric -> cell, metric -> unit)] per profiled kernel: the header line starts with "ID", units follow."""
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"') or l.startswith("ID,")), None)
    if start is None:
        return []
    table = list(csv.reader(lines[start:]))
    header, units = table[0], table[1] if len(table) > 1 else []
    unit = dict(zip(header, units))
    return [(dict(zip(header, r)), unit) for r in table[2:] if len(r) == len(header)]


def short_name(name):
    """`void ns::kern<128, 4>(args...)` -> `kern<128, 4>`: no return type, parameters or namespaces."""
    name = re.sub(r"^void ", "", name.strip())
    depth, cut = 0, len(name)
    for i, c in enumerate(name):
        depth += c in "<"
        depth -= c in ">"
        if c == "(" and depth == 0:
            cut = i
            break
    name = name[:cut]
    name = re.sub(r"^(\w+::)+", "", name)
    return name if len(name) <= 70 else name[:67] + "..."


def lookup(cells, units, quantity):
    for m in METRICS[quantity]:
        if m in cells and cells[m] != "":
            v = number(cells[m])
            if quantity == "duration" and v is not None:
                v *= TIME_UNITS.get(units.get(m, "").strip().lower(), float("nan"))
            return v if v is not None else cells[m].strip()
    return None


def stalls(cells):
    """The top three (reason, value, family index) of the first stall family the CSV has."""
    for fam, rx in enumerate(STALL_FAMILIES):
        found = []
        for k, v in cells.items():
            m = rx.match(k)
            if m and m.group(1) not in NOT_STALLS and number(v) is not None:
                found.append((m.group(1), number(v)))
        if found:
            return [(r, v, fam) for r, v in sorted(found, key=lambda x: -x[1])[:3]]
    return []


def limiter(k):
    """A first reading of what limits the kernel, from the metrics alone (the lead's review may refine it)."""
    dram, sm, occ = k["dram_pct"], k["sm_pct"], k["occupancy"]
    top = k["stalls"][0][0] if k["stalls"] else "n/a"
    if not isinstance(dram, float) or not isinstance(sm, float):
        return "n/a: the CSV lacks the throughput metrics"
    if dram >= 60 and dram >= sm:
        return (f"memory bandwidth (DRAM {dram:.0f} % of peak): only moving fewer bytes moves it (fusing with the "
                "neighbouring op, narrower data)")
    if sm >= 60:
        return (f"compute (SM {sm:.0f} % of peak, top stall {top}): fewer instructions per result (tensor cores, "
                "less index math) move it")
    dur = k["duration"] if isinstance(k["duration"], float) else 0
    if dur and dur < 10:
        return (f"latency (a {dur:.1f} us kernel at DRAM {dram:.0f} %, SM {sm:.0f} %): launch and tail dominate; "
                "fusing it into a neighbour or overlapping launches (PDL, graphs) moves it")
    occ_txt = f"{occ:.0f} %" if isinstance(occ, float) else "n/a"
    return (f"latency (DRAM {dram:.0f} %, SM {sm:.0f} %, achieved occupancy {occ_txt}, top stall {top}): more "
            "independent work in flight per SM (more blocks or splits, deeper loads) moves it")


def summarize(csv_path, ours_rows):
    launcher = os.path.basename(csv_path)[:-len(".csv")] if csv_path.endswith(".csv") else os.path.basename(csv_path)
    variants = [r.get("variant", "") for r in ours_rows if r["kernel"] == launcher and r.get("main")]
    launches = read_raw(csv_path)
    per = len(launches) // len(variants) if variants and len(launches) % len(variants) == 0 else 0
    out = []
    for i, (cells, units) in enumerate(launches):
        k = {"launcher": launcher, "variant": variants[i // per] if per else "?" if len(variants) > 1 else
             (variants[0] if variants else ""), "kernel": short_name(cells.get("Kernel Name", "?"))}
        for q in METRICS:
            k[q] = lookup(cells, units, q)
        k["stalls"] = stalls(cells)
        k["limiter"] = limiter(k)
        out.append(k)
    return out


def fmt(v, digits=1):
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.{digits}f}" if v == v else "n/a"
    return str(v)


def markdown(kernels, ours, files):
    dev = ours.get("device", {})
    lines = ["# Nsight Compute summaries (generated by kernels/bench/ncu_summary.py)", "",
             f"Device: {dev.get('name', '?')}, driver {dev.get('driver', '?')}; commit {ours.get('commit', '?')}, "
             f"{ours.get('date', '?')}. One launch of each launcher's main configuration per variant, profiled with "
             "`ncu --clock-control none --profile-from-start off --section SpeedOfLight --section Occupancy "
             "--section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats` around "
             "`bench_kernels --ncu --main --only <launcher>` (clocks as the device runs them, so durations are "
             "comparable with the benchmark tables). Raw CSVs: " + ", ".join(f"`{os.path.basename(f)}`" for f in files)
             + ".", "",
             "Stalls: warps stalled per issued instruction for each reason (WarpStateStats; the CSV's family is "
             "named under the table). Occupancy: achieved / theoretical % of the SM's warp slots.", "",
             "| launcher | variant | kernel | µs | occupancy % | DRAM % | SM % | L2 hit % | top stalls | regs | block "
             "| grid |", "|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    families = set()
    for k in kernels:
        st = ", ".join(f"{r} {v:.2f}" for r, v, _ in k["stalls"]) or "n/a"
        families.update(f for _, _, f in k["stalls"])
        occ = f"{fmt(k['occupancy'])} / {fmt(k['occupancy_theoretical'])}"
        lines.append(f"| {k['launcher']} | {k['variant']} | `{k['kernel']}` | {fmt(k['duration'], 2)} | {occ} | "
                     f"{fmt(k['dram_pct'])} | {fmt(k['sm_pct'])} | {fmt(k['l2_hit'])} | {st} | "
                     f"{fmt(k['registers'], 0)} | {fmt(k['block'], 0)} | {fmt(k['grid'], 0)} |")
    if families:
        lines += ["", "Stall metrics used: " + "; ".join(STALL_FAMILIES[f].pattern for f in sorted(families)) + "."]
    lines += ["", "## What limits each kernel", "",
              "A first reading from the metrics above (memory when DRAM throughput leads at >= 60 % of peak, compute "
              "when SM throughput does, else latency):", ""]
    lines += [f"- **{k['launcher']}{' ' + k['variant'] if k['variant'] else ''}** `{k['kernel']}`: {k['limiter']}"
              for k in kernels]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", required=True, help="bench_kernels' ours.json (device, commit, which rows are main)")
    ap.add_argument("--out", required=True, help="summary.md to write (summary.json beside it)")
    ap.add_argument("csv", nargs="+", help="raw CSVs, one per launcher, named <launcher>.csv")
    a = ap.parse_args()
    with open(a.ours) as f:
        ours = json.load(f)
    kernels, empty = [], []
    for path in a.csv:
        got = summarize(path, ours.get("rows", []))
        kernels += got
        if not got:
            empty.append(path)
    for path in empty:
        print(f"ncu_summary: no profiled kernel in {path}", file=sys.stderr)
    with open(a.out, "w") as f:
        f.write(markdown(kernels, ours, a.csv))
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump(kernels, f, indent=1)
    print(f"ncu_summary: {len(kernels)} kernels from {len(a.csv)} files -> {a.out}")
    return 1 if empty and not kernels else 0


if __name__ == "__main__":
    sys.exit(main())
