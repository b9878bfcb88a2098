#!/usr/bin/env python3
"""overload.py — flashkernel-server past its capacity (docs/RELIABILITY.md, "Overload"):

  tests/soak/overload.py --server BIN --loadtest BIN [--model DIR] [--device cpu|cuda] [--max-num-seqs S]
                         [--capacity C] [--connections N] [--prompt-len P] [--max-tokens M] [--out DIR]

The server runs with --max-concurrent-requests C and --max-num-seqs S >= C: its capacity is C requests in flight,
which all run at once; more get 429. (A cap on waiting requests alone, --max-queue, admits S running ones plus the
queue, and the queued ones wait for a running one to finish: their first token comes a whole request later.) With
flashkernel-loadtest (one streamed request per client, all clients starting together, ignore_eos):
  1. at capacity: Q requests at once (after one such burst not recorded, the warm-up) — the "unloaded" p99 time to
     first token, the server full but not past it;
  2. a burst of 3 x capacity at once;
  3. N connections at once (default 2,000; the descriptor limit is raised for the load tester and the server), past
     --max-connections (1,024 by default), whose excess the server closes at once.
Checks: the process stays up and healthy; every request of the burst and of the flood either completes or is turned
away (429, 503, or its connection closed) within 50 ms (the 99th percentile; the maximum is reported); the admitted
ones keep p99 TTFT within 2x the figure at capacity; afterwards no request runs or waits, no KV block is in use, the
descriptors are back at their count before, and resident memory grew by under 1% or 50 MB. Writes OUT/summary.json
and the load testers' JSON; exits 0 when every check passes. Standard library only.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fkserver  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description="overload test of flashkernel-server")
    ap.add_argument("--server", required=True)
    ap.add_argument("--loadtest", required=True)
    ap.add_argument("--model", default="")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-num-seqs", type=int, default=8)
    ap.add_argument("--capacity", type=int, default=8)
    ap.add_argument("--connections", type=int, default=2000)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--out", default="/tmp/fk-overload")
    return ap.parse_args()


def percentile(values, p):
    """Nearest rank, as the load tester computes it."""
    v = sorted(values)
    return v[max(0, -(-p * len(v) // 100) - 1)] if v else None


def burst(a, s, name, clients):
    """clients requests at once; the records of the load tester's JSON, split into admitted and turned away."""
    path = os.path.join(a.out, name + ".json")
    with open(os.path.join(a.out, name + ".txt"), "w") as out:
        rc = subprocess.run([a.loadtest, "--url", s.base, "--concurrency", str(clients), "--requests", str(clients),
                             "--prompt-len", str(a.prompt_len), "--max-tokens", str(a.max_tokens), "--ignore-eos",
                             "--stream", "--seed", "1", "--timeout", "600", "--json", path], stdout=out,
                            stderr=subprocess.STDOUT).returncode
    with open(path) as f:
        records = json.load(f)["levels"][0]["results"]
    admitted = [r for r in records if r["error"] is None]
    away = [r for r in records if r["error"] is not None]
    kinds = {}
    for r in away:
        kinds[r["error"]] = kinds.get(r["error"], 0) + 1
    ttft = [r["ttft_ms"] for r in admitted]
    refused = [r["e2e_ms"] for r in away]
    return {"loadtest_exit": rc, "requests": len(records), "admitted": len(admitted), "turned_away": kinds,
            "ttft_p50_ms": percentile(ttft, 50), "ttft_p99_ms": percentile(ttft, 99),
            "turned_away_p50_ms": percentile(refused, 50), "turned_away_p99_ms": percentile(refused, 99),
            "turned_away_max_ms": max(refused) if refused else None,
            "other_failures": sum(v for k, v in kinds.items() if k not in ("http_429", "http_503", "dropped",
                                                                           "refused"))}


def main():
    a = parse_args()
    if a.max_num_seqs < a.capacity:
        sys.exit("overload: --max-num-seqs must be at least --capacity (every admitted request runs at once)")
    os.makedirs(a.out, exist_ok=True)
    limit = fkserver.raise_fd_limit(a.connections + 1024)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    s = fkserver.Server(a.server, a.model, a.device, os.path.join(a.out, "server.log"),
                        ["--max-num-seqs", str(a.max_num_seqs), "--max-concurrent-requests", str(a.capacity),
                         "--max-connections-per-ip", str(a.connections + 1024)])
    if not s.wait_healthy(900):
        print(s.log_text()[-3000:])
        s.kill()
        sys.exit("overload: the server did not become healthy")
    capacity = a.capacity
    try:
        fds_before = s.fds()
        burst(a, s, "warmup", capacity)  # not recorded: first-use costs (pages, caches, graphs) stay out
        s.wait_idle(60)
        phases = {"capacity": burst(a, s, "capacity", capacity)}
        s.wait_idle(60)
        rss_before = s.rss_kb()
        phases["burst_3x"] = burst(a, s, "burst_3x", 3 * capacity)
        s.wait_idle(120)
        phases["connections"] = burst(a, s, "connections", a.connections)
        alive = s.proc.poll() is None
        health = fkserver.request(s.port, "GET", "/health")[0] if alive else 0
        idle = s.wait_idle(120)
        fds_after = s.wait_fds(fds_before, 30)
        rss_after = s.rss_kb()
        rc, _ = s.stop(timeout=120)
    finally:
        s.kill()
    base = phases["capacity"]["ttft_p99_ms"]
    growth = rss_after - rss_before
    checks = {"stays_up": alive and health == 200,
              "capacity_all_admitted": phases["capacity"]["admitted"] == capacity}
    for name in ("burst_3x", "connections"):
        p = phases[name]
        checks[name + "_turned_away_within_50ms"] = (p["turned_away_p99_ms"] is not None
                                                     and p["turned_away_p99_ms"] <= 50 and p["other_failures"] == 0)
        checks[name + "_ttft_within_2x"] = p["ttft_p99_ms"] is not None and p["ttft_p99_ms"] <= 2 * base
    checks.update({"idle_after": idle["running"] == 0 and idle["waiting"] == 0 and idle["kv_used"] == 0,
                   "fds_back": fds_after <= fds_before,
                   "rss_growth_under_1pct_or_50MB": growth < 0.01 * rss_before or growth < 50 * 1024,
                   "exit_0": rc == 0})
    summary = {"started": started, "command": sys.argv, "device": a.device, "fd_limit": limit,
               "max_num_seqs": a.max_num_seqs, "capacity": capacity, "phases": phases,
               "rss_kb": {"before": rss_before, "after": rss_after}, "fds": {"before": fds_before, "after": fds_after},
               "idle_after": idle, "server_exit": rc, "checks": checks, "pass": all(checks.values())}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for name, p in phases.items():
        print("%-12s %5d requests: %d admitted (TTFT p50 %s, p99 %s ms), turned away %s (p50 %s, p99 %s, max %s ms)" % (
            name, p["requests"], p["admitted"], p["ttft_p50_ms"], p["ttft_p99_ms"], p["turned_away"] or "none",
            p["turned_away_p50_ms"], p["turned_away_p99_ms"], p["turned_away_max_ms"]))
    print("RSS %d -> %d kB, fds %d -> %d, idle after %s" % (rss_before, rss_after, fds_before, fds_after, idle))
    print("checks: %s" % " ".join("%s=%s" % (k, "ok" if v else "FAIL") for k, v in checks.items()))
    sys.exit(0 if summary["pass"] else 1)


main()
