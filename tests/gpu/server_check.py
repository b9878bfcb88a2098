#!/usr/bin/env python3
"""server_check.py — flashkernel-server on the GPU, end to end, for tests/gpu/run-on-device.sh (the GPU host has
python3 but no curl/jq guarantee, so this uses only the standard library).

  server_check.py SERVER CLI MODEL_DIR [DEVICE [FLAG...]]

Runs `CLI generate` once, then starts `SERVER --device DEVICE (default cuda) --model MODEL_DIR --port 0`, both with
the FLAGs (model flags such as --quantization int4), waits for /health, and checks:
  - POST /generate (greedy) returns the tokens `CLI generate --device cuda` gives for the same prompt;
  - the same request again (its prompt partly cached) streamed: the text deltas concatenate to the whole text of
    that path, one event per token;
  - POST /v1/completions (temperature 0) gives the same text;
  - 16 concurrent /generate requests all succeed with their max_tokens (continuous batching on the GPU);
  - /metrics counts the generated tokens;
  - SIGTERM: exit status 0 within 10 s.
Prints one summary line (with the weights and KV cache of the startup log); exits non-zero on the first failure, with
the server's log tail.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

PROMPT = "First Citizen:\nBefore we proceed any further, hear me speak."
MAX_TOKENS = 48


def fail(msg, log=None):
    print(f"FAIL: {msg}")
    if log and os.path.exists(log):
        print("--- server log tail:")
        print("".join(open(log, errors="replace").readlines()[-30:]))
    sys.exit(1)


def post(base, path, body, timeout=120):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


def get(base, path, timeout=30):
    with urllib.request.urlopen(base + path, timeout=timeout) as r:
        return r.status, r.read()


def main():
    server, cli, model = sys.argv[1:4]
    device = sys.argv[4] if len(sys.argv) > 4 else "cuda"
    flags = sys.argv[5:]
    name = os.path.basename(os.path.normpath(model))
    # The CLI's tokens first: a running server holds --gpu-memory-utilization of the GPU, as vLLM does.
    ref = subprocess.run([cli, "generate", "--device", device, *flags, "--model", model, "--prompt", PROMPT,
                          "--max-tokens", str(MAX_TOKENS), "--ignore-eos", "--json"], capture_output=True, text=True,
                         timeout=300)
    if ref.returncode != 0:
        fail(f"flashkernel generate: {ref.stderr[-500:]}")
    ref_ids = json.loads(ref.stdout.strip().splitlines()[-1])["ids"]
    log = tempfile.mktemp(prefix=f"fk-server-{name}-", suffix=".log")
    with open(log, "w") as out:
        proc = subprocess.Popen([server, "--device", device, *flags, "--model", model, "--port", "0"], stdout=out,
                                stderr=subprocess.STDOUT)
    t0 = time.time()
    base = None
    while time.time() - t0 < 300:  # listening, then healthy (the model loads after the socket opens)
        if proc.poll() is not None:
            fail(f"server exited with {proc.returncode} during startup", log)
        if base is None:
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", open(log, errors="replace").read())
            base = m.group(1) if m else None
        if base:
            try:
                if get(base, "/health", timeout=5)[0] == 200:
                    break
            except Exception:
                pass
        time.sleep(0.2)
    else:
        fail("not healthy within 300 s", log)
    ready_s = time.time() - t0
    startup = re.search(r"on \w+; (.*?); max_model_len", open(log, errors="replace").read())

    try:
        # Whole /generate against the CLI on the same device.
        t = time.time()
        status, body = post(base, "/generate", {"prompt": PROMPT, "max_tokens": MAX_TOKENS, "ignore_eos": True})
        gen_s = time.time() - t
        whole = json.loads(body)
        if status != 200 or len(whole["tokens"]) != MAX_TOKENS:
            fail(f"/generate: {status} {body[:300]!r}", log)
        if ref_ids != whole["tokens"]:
            fail(f"/generate tokens {whole['tokens']} differ from flashkernel generate's {ref_ids}", log)

        # The same again: its prompt now partly comes from the prefix cache, and the rest runs through other kernels
        # (16 tokens: the small-batch linear; 32: cuBLAS, on quantized models over weights dequantized to fp16), so
        # a random-weight model's near-tied logits may pick other tokens than the first time. The stream and
        # /v1/completions below take this path too: they must equal this answer.
        status, body = post(base, "/generate", {"prompt": PROMPT, "max_tokens": MAX_TOKENS, "ignore_eos": True})
        whole = json.loads(body)
        if status != 200 or len(whole["tokens"]) != MAX_TOKENS or whole["usage"]["cached_tokens"] == 0:
            fail(f"/generate again: {status} {body[:300]!r}", log)

        # Streamed: deltas concatenate to the whole text.
        req = urllib.request.Request(base + "/generate", data=json.dumps(
            {"prompt": PROMPT, "max_tokens": MAX_TOKENS, "ignore_eos": True, "stream": True}).encode(),
            headers={"Content-Type": "application/json"})
        text, events, done = "", 0, False
        with urllib.request.urlopen(req, timeout=120) as r:
            for raw in r:
                line = raw.decode().rstrip("\n")
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    done = True
                    break
                ev = json.loads(line[6:])
                text += ev.get("text", "")  # a text-only event (no token) flushes held-back bytes
                events += "token" in ev
        if not done or events != MAX_TOKENS or text != whole["text"]:
            fail(f"stream: {events} token events, done={done}, text equal={text == whole['text']}", log)

        # OpenAI completions, greedy.
        status, body = post(base, "/v1/completions", {"prompt": PROMPT, "max_tokens": MAX_TOKENS, "temperature": 0,
                                                      "ignore_eos": True})
        comp = json.loads(body)
        if status != 200 or comp["choices"][0]["text"] != whole["text"]:
            fail(f"/v1/completions: {status} {body[:300]!r}", log)

        # 16 at once, different prompts and lengths.
        results = [None] * 16

        def one(i):
            try:
                s, b = post(base, "/generate", {"prompt": PROMPT[: 10 + 3 * i], "max_tokens": 16 + 4 * i,
                                                "ignore_eos": True}, timeout=300)
                results[i] = (s, len(json.loads(b)["tokens"]))
            except Exception as e:  # noqa: BLE001 - reported below
                results[i] = (str(e), 0)

        t = time.time()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        conc_s = time.time() - t
        bad = [(i, r) for i, r in enumerate(results) if r != (200, 16 + 4 * i)]
        if bad:
            fail(f"concurrent requests: {bad}", log)
        conc_tokens = sum(16 + 4 * i for i in range(16))

        status, body = get(base, "/metrics")
        m = re.search(rb"^vllm:generation_tokens_total\{[^}]*\} (\S+)", body, re.M)
        want = 2 * MAX_TOKENS + MAX_TOKENS + conc_tokens
        if status != 200 or not m or float(m.group(1)) < want:
            fail(f"/metrics generation_tokens_total {m.group(1) if m else None}, expected >= {want}", log)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    t = time.time()
    try:
        rc = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("no exit within 10 s of SIGTERM", log)
    if rc != 0:
        fail(f"exit status {rc} after SIGTERM", log)
    print(f"server --device {device}{''.join(' ' + f for f in flags)}, {name}: healthy in {ready_s:.1f} s "
          f"({startup.group(1) if startup else 'no startup line'}); /generate {MAX_TOKENS} tokens in "
          f"{gen_s * 1e3:.0f} ms, equal to flashkernel generate; stream and /v1/completions equal; 16 concurrent "
          f"requests, {conc_tokens} tokens in {conc_s:.2f} s; metrics ok; SIGTERM exit 0 in {time.time() - t:.1f} s")


if __name__ == "__main__":
    main()
