#!/usr/bin/env python3
"""soak.py — a long run of flashkernel-server under mixed load (docs/RELIABILITY.md, "Soak"):

  tests/soak/soak.py --server BIN --loadtest BIN [--model DIR] [--device cpu|cuda] [--duration S] [--clients N]
                     [--max-tokens M] [--out DIR] [--seed S] [-- SERVER_ARGS...]

It starts the server, writes a prompts file of random token-id prompts whose lengths are uniform in
[1, max_model_len / 2], and runs two flashkernel-loadtest processes side by side for --duration seconds, closed loop:
half the clients stream and abandon 10% of their streams mid-way (--cancel-rate 0.1), the other half take whole
responses. Every 10 s it samples the server's resident memory, open descriptors and /metrics gauges. At the end it
waits for the server to go idle and checks:
  - lost requests: 0 — every request completed (any finish reason, "abort" included), was cancelled by its client,
    or got a documented 4xx; nothing dropped, timed out or malformed;
  - 5xx: 0 (statuses and error events);
  - resident memory flat after the warm-up (the first 5 minutes, or a third of a shorter run): its growth from the
    warm-up mark to the largest later sample is under 1% or under 50 MB; on a GPU, the device memory the server
    holds (nvidia-smi) grows by at most 1% after the warm-up;
  - afterwards, requests running and waiting, KV blocks in use and open descriptors are back at their idle values;
  - the server still answers /health, and exits 0 on SIGTERM.
Writes OUT/summary.json (every figure), OUT/samples.tsv, the load testers' JSON and tables, and the server log; prints
a summary and exits 0 when every check passes, else 1. Standard library only.
"""
import argparse
import datetime
import json
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fkserver  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description="soak test of flashkernel-server")
    ap.add_argument("--server", required=True)
    ap.add_argument("--loadtest", required=True)
    ap.add_argument("--model", default="", help="model directory (default: the server's demo model)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--duration", type=float, default=1800)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--out", default="/tmp/fk-soak")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("server_args", nargs="*", help="more server flags, after --")
    return ap.parse_args()


def gpu_mb(pid):
    """The device memory the process holds in MiB (nvidia-smi), or -1 where there is none to ask."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return -1
    return next((int(m) for p, m in (l.split(",") for l in out.splitlines() if "," in l) if int(p) == pid), -1)


def sampler(s, out_path, stop, samples):
    """Every 10 s: time, RSS, descriptors, requests running and waiting, KV blocks in use, device memory."""
    t0 = time.time()
    with open(out_path, "w") as f:
        f.write("t_s\trss_kb\tfds\trunning\twaiting\tkv_used\tgpu_mb\n")
        while not stop.wait(0 if not samples else 10):
            try:
                g = s.gauges()
                row = (round(time.time() - t0, 1), s.rss_kb(), s.fds(), g["running"], g["waiting"], g["kv_used"],
                       gpu_mb(s.pid))
            except (OSError, KeyError, ValueError):
                continue
            samples.append(row)
            f.write("\t".join(str(x) for x in row) + "\n")
            f.flush()


def outcomes(path):
    """Counts of the load tester's JSON: completed (by finish reason), cancelled, errors by kind."""
    with open(path) as f:
        d = json.load(f)
    out = {"requests": 0, "completed": 0, "cancelled": 0, "finish_reasons": {}, "errors": {}, "interrupted": 0}
    for level in d["levels"]:
        out["requests"] += level["requests"]
        out["completed"] += level["ok"]
        out["cancelled"] += level["cancelled"]
        out["interrupted"] += level["interrupted"]
        for k, v in level["finish_reasons"].items():
            out["finish_reasons"][k] = out["finish_reasons"].get(k, 0) + v
        for k, v in level["errors"].items():
            out["errors"][k] = out["errors"].get(k, 0) + v
        out["ttft_p99_ms"] = level["ttft_ms"]["p99"]
        out["e2e_p99_ms"] = level["e2e_ms"]["p99"]
        out["output_tok_per_s"] = level["output_tok_per_s"]
    return out


def main():
    a = parse_args()
    os.makedirs(a.out, exist_ok=True)
    fkserver.raise_fd_limit(max(4096, 8 * a.clients))
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    # A client reconnects for every request: a few more than `clients` connections can be open at a moment.
    s = fkserver.Server(a.server, a.model, a.device, os.path.join(a.out, "server.log"),
                        ["--max-connections-per-ip", str(max(1024, 4 * a.clients))] + a.server_args)
    if not s.wait_healthy(900):
        print(s.log_text()[-3000:])
        s.kill()
        sys.exit("soak: the server did not become healthy")
    try:
        models = json.loads(fkserver.request(s.port, "GET", "/v1/models")[2])
        max_len = models["data"][0]["max_model_len"]
        with open(os.path.join(a.model or server_model_dir(s), "config.json")) as f:
            vocab = json.load(f)["vocab_size"]
        max_tokens = min(a.max_tokens, max_len // 2)
        rng = random.Random(a.seed)
        prompts = os.path.join(a.out, "prompts.txt")
        with open(prompts, "w") as f:
            for _ in range(2000):
                f.write(json.dumps([rng.randrange(vocab) for _ in range(rng.randint(1, max_len // 2))]) + "\n")

        idle_before = s.wait_idle(10)
        fds_before = s.fds()
        rss_before = s.rss_kb()
        stop = threading.Event()
        samples = []
        sampling = threading.Thread(target=sampler, args=(s, os.path.join(a.out, "samples.tsv"), stop, samples))
        sampling.start()
        common = ["--url", s.base, "--prompts", prompts, "--max-tokens", str(max_tokens), "--duration",
                  str(a.duration), "--timeout", "900", "--seed", str(a.seed)]
        runs = {"stream": ["--stream", "--cancel-rate", "0.1", "--concurrency", str(a.clients - a.clients // 2)],
                "whole": ["--concurrency", str(a.clients // 2)]}
        procs = {}
        for name, extra in runs.items():
            with open(os.path.join(a.out, name + ".txt"), "w") as out:
                procs[name] = subprocess.Popen([a.loadtest] + common + extra + ["--json", os.path.join(
                    a.out, name + ".json")], stdout=out, stderr=subprocess.STDOUT)
        codes = {name: p.wait() for name, p in procs.items()}
        idle_after = s.wait_idle(300)
        fds_after = s.wait_fds(fds_before, 30)
        stop.set()
        sampling.join()
        rss_after = s.rss_kb()
        health = fkserver.request(s.port, "GET", "/health")[0]
        rc, stop_s = s.stop(timeout=120)
    finally:
        s.kill()

    results = {name: outcomes(os.path.join(a.out, name + ".json")) for name in runs}
    errors = {}
    for r in results.values():
        for k, v in r["errors"].items():
            errors[k] = errors.get(k, 0) + v
    fives = sum(v for k, v in errors.items() if k.startswith("http_5") or k == "stream_error")
    lost = sum(v for k, v in errors.items() if not k.startswith("http_4"))
    warm = min(300.0, a.duration / 3)
    after_warm = [row for row in samples if row[0] >= warm]
    rss_warm = after_warm[0][1] if after_warm else None
    growth_kb = max(row[1] for row in after_warm) - rss_warm if after_warm else None
    gpu = [row[6] for row in after_warm if row[6] >= 0]
    checks = {
        "lost_requests": lost == 0,
        "no_5xx": fives == 0,
        "rss_flat": growth_kb is not None and (growth_kb < 0.01 * rss_warm or growth_kb < 50 * 1024),
        "idle_after": idle_after["running"] == 0 and idle_after["waiting"] == 0 and idle_after["kv_used"] == 0
                      and idle_after["kv_free"] + idle_after["kv_cached"] == idle_before["kv_free"]
                      + idle_before["kv_cached"] + idle_before["kv_used"],
        "fds_back": fds_after <= fds_before,
        "gpu_memory_constant": not gpu or max(gpu) - gpu[0] <= 0.01 * gpu[0],
        "healthy_after": health == 200,
        "exit_0": rc == 0,
        "loadtests_ran": all(c in (0, 1) for c in codes.values()),
    }
    summary = {
        "started": started, "command": sys.argv, "device": a.device, "duration_s": a.duration,
        "clients": a.clients, "max_tokens": max_tokens, "max_model_len": max_len, "loadtest_exit": codes,
        "results": results, "errors": errors, "lost_requests": lost, "responses_5xx": fives,
        "rss_kb": {"before": rss_before, "at_warmup": rss_warm, "growth_after_warmup": growth_kb, "after": rss_after,
                   "warmup_s": warm},
        "gpu_mb_after_warmup": {"first": gpu[0], "max": max(gpu)} if gpu else None,
        "fds": {"before": fds_before, "after": fds_after}, "idle_before": idle_before, "idle_after": idle_after,
        "samples": len(samples), "server_exit": rc, "server_stop_s": round(stop_s, 2), "checks": checks,
        "pass": all(checks.values()),
    }
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for name, r in results.items():
        print("%-6s requests %d: completed %d %s, cancelled %d, errors %s; TTFT p99 %s ms, %.1f output tok/s" % (
            name, r["requests"], r["completed"], r["finish_reasons"], r["cancelled"], r["errors"] or "none",
            r["ttft_p99_ms"], r["output_tok_per_s"]))
    print("RSS %d kB before, %s kB at %g s, growth after %s kB, %d kB after; fds %d -> %d; idle after %s" % (
        rss_before, rss_warm, warm, growth_kb, rss_after, fds_before, fds_after, idle_after))
    print("checks: %s" % " ".join("%s=%s" % (k, "ok" if v else "FAIL") for k, v in checks.items()))
    sys.exit(0 if summary["pass"] else 1)


def server_model_dir(s):
    """The model directory the server names at startup (for its config.json)."""
    line = next(l for l in s.log_text().splitlines() if " served as " in l)
    return line.split("model ", 1)[1].split(" (", 1)[0]


main()
