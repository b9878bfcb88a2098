#!/usr/bin/env python3
"""fake_server.py — a misbehaving stand-in for flashkernel-server, for the load tester's tests (standard library
only). It listens on a free port of 127.0.0.1, prints "PORT <port> PID <pid>" on stdout (the pid to stop it by: a
python3 found on PATH may be a wrapper that forks), exits by itself after --lifetime seconds (default 300), and
answers:

  GET /v1/models       {"data": [{"id": "fake-model", "max_model_len": 4096, "meta": {"n_vocab": 1000, ...}}]}
                       (meta as llama-server gives it)
  POST /generate, POST /v1/completions, POST /completion (llama-server's format, as its source at 18ef86ece
  writes it: tools/server/server-task.cpp, to_json_non_oaicompat)    by MODE (request k = the k-th generation
  request, from 0):

  ok          a valid answer with max_tokens tokens: streamed as chunked SSE cut into random pieces (CRLF and LF
              line ends, ': ping' comments), or whole with Content-Length; with --close, whole responses end at the
              connection's close instead (no Content-Length)
  miscount    like ok, but usage.completion_tokens is one more than the tokens sent
  429 / 503   that status with an OpenAI-style error body (429 with Retry-After)
  drop        200, then half of the response, then the connection is closed
  reset       the connection is closed as soon as the request has arrived, before any answer
  hang        the request is read and never answered
  silent      every request, GET /v1/models included, is read and never answered
  errorevent  a stream with two tokens, then an error event and [DONE]
  slow        like ok, one token every --delay seconds (streams only)
  mixed       request k gets ok, 429, 503, drop, in turn (k mod 4)
  utf8        text that is not plain ASCII where the load tester copies it into its report, in turn (k mod 4): 429
              with a multi-byte message longer than the 200 bytes kept; 503 with a body that is not JSON and holds
              invalid UTF-8; a 400 (an error event in a stream) with a multi-byte message; a valid answer whose
              finish_reason holds a multi-byte character where it is cut and an invalid byte. GET /v1/models names
              the model with an invalid byte too
  die         like ok for the first --die-after requests; the listening socket closes before the last of them is
              answered, so every later connection is refused

--seed S fixes the random pieces (default: random, printed on stderr).
"""
import argparse
import json
import os
import random
import socket
import sys
import threading
import time


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("--close", action="store_true")
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--die-after", type=int, default=3)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--lifetime", type=float, default=300)
    return ap.parse_args()


ARGS = parse_args()
SEED = ARGS.seed if ARGS.seed is not None else random.randrange(1 << 30)
print("fake_server: mode %s, seed %d" % (ARGS.mode, SEED), file=sys.stderr, flush=True)
LOCK = threading.Lock()
COUNT = [0]
LISTENER = socket.socket(socket.AF_INET, socket.SOCK_STREAM)


def stop_listening():
    """Connections from now on are refused. shutdown() (not just close()) also wakes the blocked accept()."""
    LISTENER.shutdown(socket.SHUT_RDWR)
    LISTENER.close()


def read_request(conn):
    """Returns (method, path, body) or None if the client went away."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        body += chunk
    return method, path, body


def head(status, ctype, extra=""):
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests",
              503: "Service Unavailable"}[status]
    return ("HTTP/1.1 %d %s\r\nContent-Type: %s\r\n%s" % (status, reason, ctype, extra)).encode()


def whole(conn, status, obj, extra=""):
    body = json.dumps(obj).encode()
    if ARGS.close:
        conn.sendall(head(status, "application/json", extra + "Connection: close\r\n\r\n") + body)
    else:
        conn.sendall(head(status, "application/json", extra + "Content-Length: %d\r\n\r\n" % len(body)) + body)


def error(conn, status, message):
    kind = "rate_limit_error" if status == 429 else "service_unavailable"
    whole(conn, status, {"error": {"message": message, "type": kind, "code": status}},
          "Retry-After: 1\r\n" if status == 429 else "")


def llama_final(n_tokens, usage_tokens, prompt_tokens, stream):
    """llama-server's last event (stream) or whole answer: content and tokens only when not streamed (its tokens only
    with return_tokens)."""
    return {"index": 0, "content": "" if stream else " t" * n_tokens,
            "tokens": [] if stream else list(range(100, 100 + n_tokens)), "id_slot": 0, "stop": True,
            "model": "fake-model", "tokens_predicted": usage_tokens, "tokens_evaluated": prompt_tokens,
            "generation_settings": {"n_predict": n_tokens}, "prompt": "", "has_new_line": False, "truncated": False,
            "stop_type": "limit", "stopping_word": "", "tokens_cached": prompt_tokens + n_tokens,
            "timings": {"prompt_n": prompt_tokens, "predicted_n": n_tokens}}


def events(path, req, n_tokens, usage_tokens, prompt_tokens):
    """The SSE events of a stream, as JSON strings."""
    out = []
    if path == "/completion":  # a prompt-progress event without tokens first, as llama-server may send
        out.append(json.dumps({"index": 0, "content": "", "tokens": [], "stop": False, "id_slot": 0,
                               "tokens_predicted": 0, "tokens_evaluated": prompt_tokens,
                               "prompt_progress": {"total": prompt_tokens, "processed": prompt_tokens}}))
    for i in range(n_tokens):
        if path == "/completion":
            out.append(json.dumps({"index": 0, "content": " t%d" % i, "tokens": [100 + i], "stop": False,
                                   "id_slot": 0, "tokens_predicted": i + 1, "tokens_evaluated": prompt_tokens}))
        elif path == "/generate":
            out.append(json.dumps({"text": " t%d" % i, "token": 100 + i}))
        else:
            out.append(json.dumps({"id": "cmpl-1", "object": "text_completion", "choices": [
                {"index": 0, "text": " t%d" % i, "logprobs": None, "finish_reason": None}], "usage": None}))
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": usage_tokens,
             "total_tokens": prompt_tokens + usage_tokens}
    if path == "/completion":
        out.append(json.dumps(llama_final(n_tokens, usage_tokens, prompt_tokens, True)))
    elif path == "/generate":
        out.append(json.dumps({"id": "gen-1", "finish_reason": "length", "usage": usage}))
    else:
        out.append(json.dumps({"id": "cmpl-1", "choices": [
            {"index": 0, "text": "", "logprobs": None, "finish_reason": "length"}], "usage": None}))
        out.append(json.dumps({"id": "cmpl-1", "choices": [], "usage": usage}))
    return out


def sse_bytes(rng, evs, path):
    """Events with random line ends (LF or CRLF) and keep-alive comments, then [DONE] (not on llama-server's
    /completion, whose stream ends with its "stop": true event)."""
    text = b""
    for e in evs + ([] if path == "/completion" else ["[DONE]"]):
        nl = b"\r\n" if rng.random() < 0.5 else b"\n"
        if rng.random() < 0.2:
            text += b": ping" + nl + nl
        text += b"data: " + e.encode() + nl + nl
    return text


def chunked(data, rng):
    """data in chunks of random sizes (1..97 bytes), the pieces cutting lines anywhere."""
    out, i = b"", 0
    while i < len(data):
        n = rng.randint(1, 97)
        piece = data[i:i + n]
        out += b"%x\r\n" % len(piece) + piece + b"\r\n"
        i += n
    return out + b"0\r\n\r\n"


# utf8 mode: what the messages and names hold (UTF8_RAW: bytes sent as they are, inside JSON strings or not).
UTF8_429 = "Zu viele Anfragen \u2014 bitte sp\u00e4ter erneut versuchen: " + "\u20ac" * 100
UTF8_400 = "Ung\u00fcltige Anfrage \u2620 " + "\u00df" * 150
UTF8_RAW_503 = b"\xff\xfe overloaded \xc3( " + "\u00fc".encode() * 20
UTF8_RAW_FINISH = b"l\xc3\xa4nge-\xff-" + "\u00e9".encode() * 10
UTF8_RAW_MODEL = b"mod\xc3\xa8le-\xff"


def raw_json(obj, placeholder, raw):
    """json.dumps(obj) with the string `placeholder` replaced by the bytes `raw` (which need not be UTF-8)."""
    return json.dumps(obj).encode().replace(placeholder.encode(), raw)


def answer_utf8(conn, k, path, stream, n):
    case = k % 4
    if case == 0:
        whole(conn, 429, {"error": {"message": UTF8_429, "type": "rate_limit_error", "code": 429}})
    elif case == 1:
        conn.sendall(head(503, "text/plain", "Content-Length: %d\r\n\r\n" % len(UTF8_RAW_503)) + UTF8_RAW_503)
    elif case == 2 and stream:
        conn.sendall(head(200, "text/event-stream", "Connection: close\r\n\r\n") + b"data: " + json.dumps(
            {"error": {"message": UTF8_400, "type": "server_error", "code": 500}}).encode() + b"\n\ndata: [DONE]\n\n")
    elif case == 2:
        whole(conn, 400, {"error": {"message": UTF8_400, "type": "invalid_request_error", "code": 400}})
    else:
        usage = {"prompt_tokens": 1, "completion_tokens": n, "total_tokens": 1 + n}
        final = {"id": "gen-1", "finish_reason": "FINISH", "usage": usage}
        if stream:
            evs = b"".join(b"data: " + json.dumps({"text": " t", "token": 100 + i}).encode() + b"\n\n"
                           for i in range(n))
            data = evs + b"data: " + raw_json(final, "FINISH", UTF8_RAW_FINISH) + b"\n\ndata: [DONE]\n\n"
            conn.sendall(head(200, "text/event-stream", "Connection: close\r\n\r\n") + data)
        else:
            final.update({"text": "x" * n, "tokens": list(range(100, 100 + n))})
            data = raw_json(final, "FINISH", UTF8_RAW_FINISH)
            conn.sendall(head(200, "application/json", "Content-Length: %d\r\n\r\n" % len(data)) + data)


def answer(conn, k, method, path, body):
    mode = ARGS.mode
    if mode == "mixed":
        mode = ["ok", "429", "503", "drop"][k % 4]
    rng = random.Random(SEED * 1000003 + k)
    req = json.loads(body)
    prompt = req.get("prompt")
    prompt_tokens = len(prompt) if isinstance(prompt, list) else max(1, len(str(prompt)) // 4)
    n = int(req.get("n_predict" if path == "/completion" else "max_tokens", 16))
    stream = bool(req.get("stream"))
    if mode == "utf8":
        answer_utf8(conn, k, path, stream, n)
        return
    if mode in ("429", "503"):
        error(conn, int(mode), "server overloaded, retry later" if mode == "429" else "server is shutting down")
        return
    if mode == "hang":
        time.sleep(3600)
        return
    if mode == "reset":
        return
    usage_tokens = n + 1 if mode == "miscount" else n
    if stream:
        if mode == "errorevent":
            evs = events(path, req, 2, 2, prompt_tokens)[:2]
            evs.append(json.dumps({"error": {"message": "device failure", "type": "server_error", "code": 500}}))
        else:
            evs = events(path, req, n, usage_tokens, prompt_tokens)
        hdr = head(200, "text/event-stream", "Transfer-Encoding: chunked\r\n\r\n")
        if mode == "slow":  # one chunk per event, --delay apart
            conn.sendall(hdr)
            for e in evs + ([] if path == "/completion" else ["[DONE]"]):
                time.sleep(ARGS.delay)
                piece = b"data: " + e.encode() + b"\n\n"
                conn.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
            conn.sendall(b"0\r\n\r\n")
            return
        data = chunked(sse_bytes(rng, evs, path), rng)
        if mode == "drop":
            conn.sendall(hdr + data[:len(data) // 2])
            return
        if mode == "die" and k + 1 == ARGS.die_after:
            stop_listening()
        conn.sendall(hdr)
        for i in range(0, len(data), 64):  # several sends: the client sees the pieces arrive apart
            conn.sendall(data[i:i + 64])
        return
    if path == "/completion":
        obj = llama_final(n, usage_tokens, prompt_tokens, False)
        if not req.get("return_tokens"):
            obj["tokens"] = []
    elif path == "/generate":
        obj = {"id": "gen-1", "text": "x" * n, "tokens": list(range(100, 100 + n)), "finish_reason": "length",
               "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": usage_tokens,
                         "total_tokens": prompt_tokens + usage_tokens}}
    else:
        obj = {"id": "cmpl-1", "object": "text_completion", "choices": [
            {"index": 0, "text": "x" * n, "logprobs": None, "finish_reason": "length"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": usage_tokens,
                      "total_tokens": prompt_tokens + usage_tokens}}
    if mode == "drop":
        payload = json.dumps(obj).encode()
        conn.sendall(head(200, "application/json", "Content-Length: %d\r\n\r\n" % len(payload)) +
                     payload[:len(payload) // 2])
        return
    if mode == "die" and k + 1 == ARGS.die_after:
        stop_listening()
    whole(conn, 200, obj)


def handle(conn):
    try:
        req = read_request(conn)
        if req is None:
            return
        method, path, body = req
        if ARGS.mode == "silent":
            time.sleep(3600)
            return
        if method == "GET" and path == "/v1/models":
            models = {"object": "list", "data": [{"id": "fake-model", "max_model_len": 4096, "meta": {
                "vocab_type": 2, "n_vocab": 1000, "n_ctx": 4096, "n_ctx_train": 4096, "n_embd": 64}}]}
            if ARGS.mode == "utf8":
                data = raw_json(models, "fake-model", UTF8_RAW_MODEL)
                conn.sendall(head(200, "application/json", "Content-Length: %d\r\n\r\n" % len(data)) + data)
            else:
                whole(conn, 200, models)
            return
        if method != "POST" or path not in ("/generate", "/v1/completions", "/completion"):
            whole(conn, 404, {"error": {"message": "no such route", "code": 404}})
            return
        with LOCK:
            k = COUNT[0]
            COUNT[0] += 1
        answer(conn, k, method, path, body)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        conn.close()


def main():
    LISTENER.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    LISTENER.bind(("127.0.0.1", 0))
    LISTENER.listen(512)
    print("PORT %d PID %d" % (LISTENER.getsockname()[1], os.getpid()), flush=True)
    threading.Timer(ARGS.lifetime, lambda: os._exit(0)).start()  # never outlive a test that forgot it
    while True:
        try:
            conn, _ = LISTENER.accept()
        except OSError:  # closed by "die": nothing more to accept
            time.sleep(ARGS.lifetime)
            return
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


main()
