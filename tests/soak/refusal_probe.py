#!/usr/bin/env python3
"""refusal_probe.py — where the time of a burst's 429s goes (docs/RELIABILITY.md, "Overload"):

  tests/soak/refusal_probe.py --server BIN --loadtest BIN [--model DIR] [--device cpu|cuda] [--burst N] [--out DIR]

For each setting (--max-concurrent-requests 1 with 4 and with 16 HTTP threads: nearly the whole burst refused
without any admission work; then capacity 256 with 4), starts the server, warms it up, sends N streamed requests at
once with flashkernel-loadtest and prints the time to each 429 (p50, p99, max), when the refusals ended after the
burst began, and what the kernel's listen-queue counters (/proc/net/netstat) did meanwhile. A diagnostic: it checks
nothing and exits 0 when every run completed. Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fkserver  # noqa: E402


def netstat():
    """Every counter of /proc/net/netstat, as "TcpExt:ListenOverflows" -> value."""
    counters = {}
    with open("/proc/net/netstat") as f:
        lines = f.read().split("\n")
    for head, values in zip(lines[0::2], lines[1::2]):
        if head:
            prefix = head.split()[0]
            counters.update({prefix + k: int(v) for k, v in zip(head.split()[1:], values.split()[1:])})
    return counters


def pick(values, p):
    return round(values[min(len(values) - 1, int(len(values) * p))], 1) if values else None


def probe(a, cap, http_threads):
    s = fkserver.Server(a.server, a.model, a.device, os.path.join(a.out, "server-%d-%d.log" % (cap, http_threads)),
                        ["--max-num-seqs", "256", "--max-concurrent-requests", str(cap),
                         "--max-connections-per-ip", str(a.burst + 1024), "--http-threads", str(http_threads)])
    if not s.wait_healthy(600):
        s.kill()
        sys.exit("refusal_probe: the server did not become healthy")
    try:
        run = lambda n, tokens, path: subprocess.run(
            [a.loadtest, "--url", s.base, "--concurrency", str(n), "--requests", str(n), "--prompt-len", "128",
             "--max-tokens", str(tokens), "--ignore-eos", "--stream", "--seed", "1", "--json", path],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        run(64, 8, os.path.join(a.out, "warmup.json"))
        time.sleep(1)
        before = netstat()
        path = os.path.join(a.out, "burst-%d-%d.json" % (cap, http_threads))
        run(a.burst, 64, path)
        after = netstat()
    finally:
        s.stop(timeout=60)
    changed = {k: after[k] - before.get(k, 0) for k in after
               if after[k] != before.get(k, 0) and any(w in k for w in ("Listen", "Drop", "Overflow", "SynRetrans"))}
    with open(path) as f:
        records = json.load(f)["levels"][0]["results"]
    refused = sorted(r["e2e_ms"] for r in records if r["status"] == 429)
    ended = sorted(r["start_s"] * 1000 + r["e2e_ms"] for r in records if r["status"] == 429)
    admitted = sum(1 for r in records if r["status"] == 200)
    print("capacity %d, %d HTTP threads: %d admitted, %d refused in p50 %s / p99 %s / max %s ms; refusals ended "
          "p1 %s / p50 %s ms after the burst began; clients started within %.0f ms; listen-queue counters %s" % (
              cap, http_threads, admitted, len(refused), pick(refused, .5), pick(refused, .99), pick(refused, 1),
              pick(ended, .01), pick(ended, .5), max(r["start_s"] for r in records) * 1000, changed or "unchanged"),
          flush=True)


def main():
    ap = argparse.ArgumentParser(description="where the time of a burst's 429s goes")
    ap.add_argument("--server", required=True)
    ap.add_argument("--loadtest", required=True)
    ap.add_argument("--model", default="")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--burst", type=int, default=768)
    ap.add_argument("--out", default="/tmp/fk-refusal-probe")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    fkserver.raise_fd_limit(a.burst + 2048)
    for f in ("/proc/sys/net/core/somaxconn", "/proc/sys/net/ipv4/tcp_max_syn_backlog"):
        with open(f) as fh:
            print(f, fh.read().strip())
    for cap, http_threads in ((1, 4), (1, 16), (256, 4)):
        probe(a, cap, http_threads)


main()
