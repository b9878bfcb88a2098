#!/usr/bin/env python3
"""faults.py — flashkernel-server under injected faults, on the CPU or the GPU (docs/RELIABILITY.md). Each case
starts its own server on a free port and prints what it measured; the run exits 1 if any case fails.

  tests/soak/faults.py --server BIN --cli BIN [--model DIR] [--device cpu|cuda] [--out DIR] [--cases a,b,...]

Cases (all by default):
  kv_exhaustion       a KV pool that holds one max_model_len sequence (256 tokens, 16 blocks); 4 streams
                      running, then one request that grows to 15 of the 16 blocks: every request finishes (the
                      engine preempts and recomputes) or is refused with a documented error, none hangs; the pool is
                      free afterwards
  truncate_during_load  the weights file cut to half while the server loads it (a copy still going on): the
                      server exits 1 with a message naming the file, not a signal (it makes a model of real size
                      with `CLI make-model`: GPT-2 124M on the CPU, Llama 3.2 1B on the GPU, unless --big-model)
  removed_after_load  the model directory truncated and deleted while the server runs: it goes on serving the
                      same tokens (the weights are in memory; no file of the directory stays open)
  sigterm_streams     SIGTERM with 64 streams in flight and --shutdown-timeout 2: new requests get 503 within 0.1 s,
                      every stream ends with finish_reason "abort" and [DONE], exit status 0 within 2 s + 2 s
  never_reading       a stream whose client never reads: its output fills the buffers, the request is cancelled,
                      the connection is closed after --timeout (5 s) without progress; 8 requests beside it take at
                      most twice as long (+1 s) as alone (the better of two runs each)
  engine_death        the device fails after 20 engine steps (FLASHKERNEL_FAULT_AFTER_STEPS) with 64 streams and
                      one plain request in flight: every one gets an error (an error event, or 503), /health
                      answers 503 within 1 s of the failure, the process exits non-zero within 5 s

Without --model the server's default (the demo model) is served. Standard library only.
"""
import argparse
import datetime
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fkserver  # noqa: E402

CASES = ["kv_exhaustion", "truncate_during_load", "removed_after_load", "sigterm_streams", "never_reading",
         "engine_death"]


def parse_args():
    ap = argparse.ArgumentParser(description="flashkernel-server under injected faults")
    ap.add_argument("--server", required=True)
    ap.add_argument("--cli", required=True, help="the flashkernel command (make-model)")
    ap.add_argument("--model", default="", help="model directory (default: the server's demo model)")
    ap.add_argument("--big-model", default="", help="truncate_during_load: a model directory to copy and cut")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default="/tmp/fk-faults")
    ap.add_argument("--cases", default=",".join(CASES))
    return ap.parse_args()


ARGS = parse_args()
os.makedirs(ARGS.out, exist_ok=True)


SERVERS = []  # every server started, for the sanitizer check after each case


def server(name, model=None, args=(), env=None):
    s = fkserver.Server(ARGS.server, ARGS.model if model is None else model, ARGS.device,
                        os.path.join(ARGS.out, name + ".log"), args, env)
    SERVERS.append(s)
    if not s.wait_healthy(900):
        s.kill()
        raise RuntimeError("%s: the server did not become healthy:\n%s" % (name, s.log_text()[-2000:]))
    return s


def max_model_len(s):
    body = fkserver.request(s.port, "GET", "/v1/models")[2]
    return json.loads(body)["data"][0]["max_model_len"]


def streams(port, n, body):
    """n streamed requests at once, each on its own thread; returns the threads and the list their results fill (in
    the order sent) as they finish."""
    out = [None] * n

    def run(i):
        out[i] = fkserver.stream(port, body)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    return threads, out


def join_then_exit(threads, s):
    """Waits for the client threads, then for the server to exit by itself: its status, None if it did not."""
    for t in threads:
        t.join(120)
    try:
        return s.proc.wait(30)
    except subprocess.TimeoutExpired:
        return None


def wait_flowing(s, n, timeout=120):
    """Waits until n requests run (past their first scheduled step)."""
    end = time.time() + timeout
    while time.time() < end and s.gauges()["running"] < n:
        time.sleep(0.05)
    return s.gauges()["running"] >= n


def kv_exhaustion():
    block = 16
    max_len = 256
    s = server("kv_exhaustion", args=["--max-model-len", str(max_len), "--num-blocks", str(max_len // block),
                                      "--max-num-seqs", "8"])
    try:
        pre = s.metrics()["vllm:num_preemptions_total"]
        # 4 streams that end at 4 blocks each, then one request that grows to 15 of the pool's 16 blocks: together
        # they need almost twice the pool.
        threads, small = streams(s.port, 4, {"prompt": "ROMEO:", "max_tokens": 50, "ignore_eos": True})
        wait_flowing(s, 4)
        rng = random.Random(1)
        huge_ids = [rng.randrange(1, 1000) for _ in range(100)]
        t0 = time.time()
        status, _, body = fkserver.request(s.port, "POST", "/generate",
                                           {"prompt": huge_ids, "max_tokens": max_len - 100 - block, "ignore_eos": True},
                                           timeout=900)
        for t in threads:
            t.join(900)
        elapsed = time.time() - t0
        huge = json.loads(body)
        idle = s.wait_idle(60)
        preemptions = s.metrics()["vllm:num_preemptions_total"] - pre
        ok_small = all(r and r["status"] == 200 and r["finish"] == "length" and r["done"] for r in small)
        ok_huge = (status == 200 and huge.get("finish_reason") == "length") or (400 <= status < 500 and "error" in huge)
        rc, _ = s.stop()
        res = {"huge_request": "completed" if status == 200 else "refused %d: %s" % (status, huge),
               "streams_finished": sum(1 for r in small if r and r["finish"] == "length"),
               "preemptions": int(preemptions), "seconds": round(elapsed, 2), "idle_after": idle, "exit": rc}
        res["pass"] = ok_small and ok_huge and idle["kv_used"] == 0 and idle["running"] == 0 and rc == 0
        return res
    finally:
        s.kill()


def truncate_during_load():
    src = ARGS.big_model
    if not src:
        src = os.path.join(ARGS.out, "big-model")
        if not os.path.exists(os.path.join(src, "config.json")):
            arch, preset = ("llama", "llama-3.2-1b") if ARGS.device == "cuda" else ("gpt2", "gpt2-124m")
            subprocess.run([ARGS.cli, "make-model", "--arch", arch, "--preset", preset, "--dtype", "f16", "--out",
                            src], check=True, stdout=subprocess.DEVNULL)
    weights = sorted(f for f in os.listdir(src) if f.endswith(".safetensors"))
    attempts = []
    for delay in (0.5, 0.2, 0.05, 1.0, 2.0):
        dst = os.path.join(ARGS.out, "truncated-model")
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
        s = fkserver.Server(ARGS.server, dst, ARGS.device, os.path.join(ARGS.out, "truncate_during_load.log"))
        SERVERS.append(s)
        s.wait_listening(60)
        time.sleep(delay)
        path = os.path.join(dst, weights[-1])
        os.truncate(path, os.path.getsize(path) // 2)
        t0 = time.time()
        healthy = s.wait_healthy(600)
        rc = s.proc.returncode
        log = s.log_text()
        line = next((l for l in log.splitlines() if "error:" in l), "")
        if healthy:
            s.kill()
            outcome = "loaded before the cut"
        else:
            outcome = "signal %d" % -rc if rc is not None and rc < 0 else "exit %s" % rc
        attempts.append({"cut_after_s": delay, "outcome": outcome, "message": line[24:], "seconds": round(
            time.time() - t0, 2)})
        if not healthy:
            break
    last = attempts[-1]
    read_error = "was it changed while the model was loading?" in last["message"]
    res = {"attempts": attempts, "read_error": read_error}
    # A cut before the header was read is a format error (also clean); the point is a cut while tensors are read.
    res["pass"] = last["outcome"] == "exit 1" and bool(last["message"])
    return res


def removed_after_load():
    dst = os.path.join(ARGS.out, "removed-model")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(ARGS.model or demo_model(), dst)
    s = server("removed_after_load", model=dst)
    try:
        body = {"prompt": "ROMEO:", "max_tokens": 24, "ignore_eos": True}
        before = json.loads(fkserver.request(s.port, "POST", "/generate", body)[2])
        for f in os.listdir(dst):
            os.truncate(os.path.join(dst, f), 0)
        shutil.rmtree(dst)
        status, _, raw = fkserver.request(s.port, "POST", "/generate", body)
        after = json.loads(raw)
        open_files = [os.readlink("/proc/%d/fd/%s" % (s.pid, fd)) for fd in os.listdir("/proc/%d/fd" % s.pid)]
        with open("/proc/%d/maps" % s.pid) as f:
            mapped = [l for l in f if dst in l]
        held = [p for p in open_files if dst in p] + mapped
        health = fkserver.request(s.port, "GET", "/health")[0]
        rc, _ = s.stop()
        res = {"tokens_before": before["tokens"], "tokens_after": after.get("tokens"), "status_after": status,
               "files_held": held, "health": health, "exit": rc}
        res["pass"] = status == 200 and after["tokens"] == before["tokens"] and not held and health == 200 and rc == 0
        return res
    finally:
        s.kill()


def demo_model():
    """The server's default model directory, from its startup line."""
    s = server("demo-model-path", model="")
    try:
        line = next(l for l in s.log_text().splitlines() if " served as " in l)
        return line.split("model ", 1)[1].split(" (", 1)[0]
    finally:
        s.stop()
        s.kill()


def sigterm_streams():
    s = server("sigterm_streams", args=["--max-num-seqs", "64", "--shutdown-timeout", "2"])
    try:
        max_len = max_model_len(s)
        threads, out = streams(s.port, 64, {"prompt": "ROMEO:", "max_tokens": max_len - 16, "ignore_eos": True})
        flowing = wait_flowing(s, 64)
        s.proc.send_signal(signal.SIGTERM)
        t0 = time.time()
        health = 0  # /health until it turns 503 (the server takes the signal), then a new request must get 503
        while health != 503 and time.time() - t0 < 1:
            health = fkserver.request(s.port, "GET", "/health")[0]
        refused_after = time.time() - t0
        status = fkserver.request(s.port, "POST", "/generate", {"prompt": "a", "max_tokens": 1})[0]
        rc = join_then_exit(threads, s)
        exited_after = time.time() - t0
        finishes = {}
        for r in out:
            key = "%s%s" % (r["finish"], "" if r["done"] else " (no [DONE])") if r else "none"
            finishes[key] = finishes.get(key, 0) + 1
        res = {"flowing": flowing, "new_request_status": status, "refused_after_s": round(refused_after, 3),
               "finishes": finishes, "exit": rc, "exited_after_s": round(exited_after, 2)}
        res["pass"] = (flowing and status == 503 and refused_after < 0.1 and finishes == {"abort": 64} and rc == 0
                       and exited_after < 4)
        return res
    finally:
        s.kill()


def never_reading():
    s = server("never_reading", args=["--timeout", "5"])
    try:
        body = {"prompt": "ROMEO:", "max_tokens": 32, "ignore_eos": True}

        def eight():
            t0 = time.time()
            threads, out = streams(s.port, 8, body)
            for t in threads:
                t.join(120)
            return time.time() - t0, out
        eight()  # warm-up; then the better of two runs each, alone and beside (a shared machine is noisy)
        alone = min(eight()[0], eight()[0])
        fds = s.fds()
        t0 = time.time()
        stuck = fkserver.stream(s.port, {"prompt": "ROMEO:", "max_tokens": 2000, "ignore_eos": True, "logprobs": 20},
                                rcvbuf=4096, read=False)["socket"]
        time.sleep(1)
        first, out = eight()
        beside = min(first, eight()[0])
        # The client never reads: the server must cancel the request once its output fills the buffers, then close
        # the connection when no byte has gone out for --timeout.
        cancelled_after = closed_after = None
        while time.time() - t0 < 300 and closed_after is None:
            if cancelled_after is None and any("finish cancel" in l for l in s.log_text().splitlines()):
                cancelled_after = time.time() - t0
            if cancelled_after is not None and s.fds() <= fds:
                closed_after = time.time() - t0
            time.sleep(0.1)
        stuck.close()
        line = next((l for l in s.log_text().splitlines() if "finish cancel" in l), "")
        idle = s.wait_idle(30)
        rc, _ = s.stop()
        res = {"eight_alone_s": round(alone, 2), "eight_beside_s": round(beside, 2),
               "beside_ok": all(r["finish"] == "length" for r in out),
               "cancelled_after_s": cancelled_after and round(cancelled_after, 1),
               "closed_after_s": closed_after and round(closed_after, 1), "cancel_log": line[24:],
               "idle_after": idle, "exit": rc}
        res["pass"] = (res["beside_ok"] and beside < 2 * alone + 1 and cancelled_after is not None
                       and closed_after is not None and idle["kv_used"] == 0 and rc == 0)
        return res
    finally:
        s.kill()


def log_time(line):
    return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S.%f").timestamp()


def engine_death():
    s = server("engine_death", args=["--max-num-seqs", "64"], env={"FLASHKERNEL_FAULT_AFTER_STEPS": "20"})
    try:
        health = []
        stop = threading.Event()

        def poll():
            while not stop.is_set() and s.proc.poll() is None:
                try:
                    health.append((time.time(), fkserver.request(s.port, "GET", "/health", timeout=1)[0]))
                except OSError:
                    health.append((time.time(), 0))
                time.sleep(0.05)
        poller = threading.Thread(target=poll)
        poller.start()
        threads, out = streams(s.port, 64, {"prompt": "ROMEO:", "max_tokens": 1000, "ignore_eos": True})
        plain = fkserver.request(s.port, "POST", "/generate", {"prompt": "ROMEO:", "max_tokens": 1000})
        rc = join_then_exit(threads, s)
        exited = time.time()
        stop.set()
        poller.join()
        failed_line = next((l for l in s.log_text().splitlines() if "engine failed" in l), None)
        failed_at = log_time(failed_line) if failed_line else None
        first_503 = next((t for t, st in health if st == 503), None)
        ok_after = [t for t, st in health if st == 200 and failed_at and t > failed_at + 0.05]
        errors = sum(1 for r in out if r and (r["status"] == 503 or (r["status"] == 200 and r["error"] and r["done"])))
        res = {"streams_with_error": errors, "plain_status": plain[0], "failure_logged": bool(failed_line),
               "health_503_after_s": round(first_503 - failed_at, 3) if first_503 and failed_at else None,
               "health_200_after_failure": len(ok_after), "exit": rc,
               "exited_after_s": round(exited - failed_at, 2) if failed_at else None}
        res["pass"] = (errors == 64 and plain[0] == 503 and failed_line is not None and rc not in (0, None)
                       and res["health_503_after_s"] is not None and res["health_503_after_s"] <= 1
                       and not ok_after and res["exited_after_s"] is not None and res["exited_after_s"] <= 5)
        return res
    finally:
        s.kill()


def main():
    fkserver.raise_fd_limit(4096)
    results, ok = {}, True
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    for name in ARGS.cases.split(","):
        t0 = time.time()
        try:
            res = globals()[name]()
        except Exception as e:  # a case that cannot run is a failure, with its reason
            res = {"pass": False, "exception": repr(e)}
        reports = [r for r in (srv.sanitizer_report() for srv in SERVERS) if r]
        SERVERS.clear()
        if reports:
            res.update({"pass": False, "sanitizer": reports[0]})
        res["case_seconds"] = round(time.time() - t0, 1)
        results[name] = res
        ok = ok and res["pass"]
        print("%-22s %s  %s" % (name, "pass" if res["pass"] else "FAIL", json.dumps(
            {k: v for k, v in res.items() if k != "pass"})), flush=True)
    with open(os.path.join(ARGS.out, "faults.json"), "w") as f:
        json.dump({"started": started, "command": sys.argv, "device": ARGS.device, "results": results}, f, indent=1)
    sys.exit(0 if ok else 1)


main()
