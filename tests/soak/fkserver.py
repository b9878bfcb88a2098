"""fkserver.py — what the soak, overload and fault scripts share (standard library only: a GPU host has python3 but
no promise of curl or jq): flashkernel-server started on a free port and waited for, its /metrics and /proc
figures, and raw-socket clients that see what a client sees (status, SSE events, when each arrived, the close)."""
import json
import os
import re
import resource
import signal
import socket
import subprocess
import time


def raise_fd_limit(want):
    """Raises this process's soft limit on open files to `want` (at most the hard limit); children inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Server:
    """flashkernel-server BINARY --model MODEL --device DEVICE --port 0 ARGS..., its output in LOG."""

    def __init__(self, binary, model, device, log, args=(), env=None):
        self.log = log
        self.cmd = [binary, "--device", device, "--port", "0"] + (["--model", model] if model else []) + list(args)
        with open(log, "w") as out:
            self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT,
                                         env=dict(os.environ, **(env or {})))
        self.pid = self.proc.pid
        self.port = None
        self.base = None

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def sanitizer_report(self):
        """The first line of an AddressSanitizer, LeakSanitizer or UBSan report in the log, else None."""
        m = re.search(r"(?m)^.*(ERROR: (Address|Leak)Sanitizer|runtime error:|WARNING: .*Sanitizer).*$", self.log_text())
        return m.group(0) if m else None

    def wait_listening(self, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.log_text())
            if m:
                self.port = int(m.group(1))
                self.base = "http://127.0.0.1:%d" % self.port
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.05)
        return False

    def wait_healthy(self, timeout=600):
        """True once /health answers 200; False if the process exits or the time runs out."""
        if not self.port and not self.wait_listening(timeout):
            return False
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                return False
            try:
                if request(self.port, "GET", "/health", timeout=5)[0] == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def metrics(self):
        """{"name{labels}": value} of /metrics, with the model_name label left out of the keys."""
        status, _, body = request(self.port, "GET", "/metrics", timeout=30)
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                key = re.sub(r'model_name="[^"]*",?', "", key).replace("{}", "")
                out[key] = float(value)
        return out

    def gauges(self):
        """The figures that must come back to their idle values: requests running and waiting, KV blocks."""
        m = self.metrics()
        return {"running": m["vllm:num_requests_running"], "waiting": m["vllm:num_requests_waiting"],
                "kv_used": m['flashkernel_kv_blocks{state="used"}'],
                "kv_cached": m['flashkernel_kv_blocks{state="cached"}'],
                "kv_free": m['flashkernel_kv_blocks{state="free"}']}

    def fds(self):
        return len(os.listdir("/proc/%d/fd" % self.pid))

    def rss_kb(self):
        with open("/proc/%d/status" % self.pid) as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))

    def wait_idle(self, timeout=120):
        """Waits for no request running or waiting and no KV block in use; returns the gauges then (or at the end
        of the time)."""
        end = time.time() + timeout
        while True:
            g = self.gauges()
            if (g["running"] == 0 and g["waiting"] == 0 and g["kv_used"] == 0) or time.time() > end:
                return g
            time.sleep(0.2)

    def wait_fds(self, want, timeout=10):
        """Waits for the descriptor count to come down to `want`; returns the count then."""
        end = time.time() + timeout
        while self.fds() > want and time.time() < end:
            time.sleep(0.1)
        return self.fds()

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Sends sig and waits; returns (exit status, seconds), status None if it did not exit in time (then it is
        killed)."""
        start = time.time()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        return rc, time.time() - start

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def request(port, method, path, body=None, timeout=60, headers=""):
    """One request on its own connection; returns (status, head text, body bytes) once the server closes or the
    body is complete."""
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else (body or b"")
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(("%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: application/json\r\n"
                   "Content-Length: %d\r\n%s\r\n" % (method, path, len(data), headers)).encode() + data)
        raw = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
    finally:
        s.close()
    head, _, rest = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    text = head.decode("latin-1")
    if re.search(r"(?im)^transfer-encoding: *chunked", text):
        rest = dechunk(rest)
    return status, text, rest


def dechunk(data):
    out, i = b"", 0
    while i < len(data):
        eol = data.find(b"\r\n", i)
        if eol < 0:
            break
        n = int(data[i:eol].split(b";")[0], 16)
        if n == 0:
            break
        out += data[eol + 2:eol + 2 + n]
        i = eol + 2 + n + 2
    return out


def events(body):
    """The data of each SSE event of a (de-chunked) stream body: parsed JSON, or the string "[DONE]"."""
    out = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
        if data:
            text = b"\n".join(data).decode("utf-8", "replace")
            out.append(text if text == "[DONE]" else json.loads(text))
    return out


def stream(port, body, path="/generate", timeout=600, rcvbuf=None, read=True):
    """A streamed /generate request: {"status", "events", "done" ([DONE] seen), "error" (an error event or body), "finish",
    "tokens", "t_first_token" (s from connect, None if none), "e2e" (s), "closed" (the server closed)}. With
    read=False the response is not read at all (the socket is returned in "socket" for the caller to close)."""
    t0 = time.time()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    data = json.dumps(dict(body, stream=True)).encode()
    s.sendall(("POST %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: application/json\r\n"
               "Content-Length: %d\r\n\r\n" % (path, len(data))).encode() + data)
    if not read:
        return {"socket": s}
    raw, first, closed = b"", None, False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            raw += chunk
            if first is None and b'"token":' in raw:
                first = time.time() - t0
    except ConnectionResetError:
        closed = True
    except socket.timeout:
        pass
    finally:
        s.close()
    head, _, rest = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    evs = events(dechunk(rest)) if status == 200 else []
    tokens = sum(1 for e in evs if isinstance(e, dict) and "token" in e)
    finish = next((e.get("finish_reason") for e in evs if isinstance(e, dict) and e.get("finish_reason")), None)
    error = any(isinstance(e, dict) and "error" in e for e in evs) or (status != 200 and b'"error"' in rest)
    return {"status": status, "events": evs, "done": "[DONE]" in evs, "error": error, "finish": finish,
            "tokens": tokens, "t_first_token": first, "e2e": time.time() - t0, "closed": closed}
