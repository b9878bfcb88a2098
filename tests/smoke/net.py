#!/usr/bin/env python3
"""net.py — raw-socket clients for the smoke tests' connection-level checks (what curl cannot do). Each command
prints one JSON object on stdout.

  net.py early PORT                 headers of a 10 MB body, no body: the answer, and whether the server closed
  net.py stall PORT length|chunked  a body that never completes: seconds until the server closes the connection
  net.py headers PORT big|many      a 64 KiB header, or 10,000 headers: the status
  net.py flood PORT N               N idle connections at once: how many the server closed at once
  net.py slowloris PORT N SECONDS   N connections sending a header byte each second: refused / still open at the end
  net.py noread PORT SECONDS GO     a stream (logprobs 20) that is not read until the file GO exists (at most
                                    SECONDS); then reads what is left
  net.py burst PORT N MAX_TOKENS    N streaming /generate requests and one plain one sent at the same moment; reads
                                    them all: per request the status, "error" (an error event or body), "done"
  net.py refused PORT               requests that libmicrohttpd refuses before the server's routes see them
                                    (malformed, oversized, wrong version): per case its name, the status, the
                                    Content-Type, the body, whether the connection was closed, and "exact": the
                                    response ends where its Content-Length says
"""
import json
import os
import socket
import sys
import time


def connect(port, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", port))
    return s


def read_until_closed(s, limit):
    """Reads until EOF or reset (True) or until `limit` seconds pass (False); returns (closed, bytes)."""
    s.settimeout(0.05)
    data = b""
    end = time.time() + limit
    while time.time() < end:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True, data
        if not chunk:
            return True, data
        data += chunk
    return False, data


def status_of(data):
    try:
        return int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def body_of(data):
    return data.partition(b"\r\n\r\n")[2].decode("utf-8", "replace")


def request(path, body, extra=""):
    return ("POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n"
            % (path, len(body), extra)).encode() + body


def early(port):
    s = connect(port)
    s.sendall(b"POST /generate HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
              b"Content-Length: 10000000\r\n\r\n")
    closed, data = read_until_closed(s, 5)
    return {"status": status_of(data), "body": body_of(data), "closed": closed}


def stall(port, mode):
    s = connect(port)
    if mode == "length":
        s.sendall(b"POST /generate HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{\"prompt\":")
    else:
        s.sendall(b"POST /generate HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"pro\r\n")
    start = time.time()
    closed, data = read_until_closed(s, 30)
    return {"closed": closed, "after": round(time.time() - start, 2), "status": status_of(data)}


def headers(port, kind):
    s = connect(port)
    if kind == "big":
        head = "X-Big: " + "a" * 65536 + "\r\n"
    else:
        head = "".join("X-H%d: v\r\n" % i for i in range(10000))
    try:
        s.sendall(("GET /health HTTP/1.1\r\nHost: t\r\n" + head + "\r\n").encode())
    except (ConnectionResetError, BrokenPipeError):
        pass
    closed, data = read_until_closed(s, 5)
    return {"status": status_of(data), "closed": closed}


def refused_at_once(socks, wait):
    """How many of the sockets the server closed within `wait` seconds (without any request sent)."""
    for s in socks:
        s.settimeout(0)
    refused = set()
    end = time.time() + wait
    while time.time() < end and len(refused) < len(socks):
        for i, s in enumerate(socks):
            if i in refused:
                continue
            try:
                if not s.recv(1):
                    refused.add(i)
            except BlockingIOError:
                pass
            except OSError:
                refused.add(i)
        time.sleep(0.02)
    return refused


def flood(port, n):
    socks = [connect(port) for _ in range(n)]
    refused = refused_at_once(socks, 1.0)
    for s in socks:
        s.close()
    return {"opened": n, "refused": len(refused)}


def slowloris(port, n, seconds):
    socks = [connect(port) for _ in range(n)]
    refused = refused_at_once(socks, 1.0)
    line = b"GET /health HTTP/1.1\r\nX-Slow: " + b"a" * 1000
    for k in range(int(seconds)):
        for i, s in enumerate(socks):
            if i not in refused:
                try:
                    s.send(line[k:k + 1])
                except OSError:
                    refused.add(i)
        time.sleep(1)
    still_open = len(socks) - len(refused_at_once(socks, 0.1) | refused)
    for s in socks:
        s.close()
    return {"opened": n, "refused": len(refused), "open": still_open}


def noread(port, seconds, go):
    s = connect(port, rcvbuf=4096)
    body = json.dumps({"prompt": "ROMEO:", "max_tokens": 2000, "ignore_eos": True, "stream": True,
                       "logprobs": 20}).encode()
    s.sendall(request("/v1/completions", body))
    # The caller creates GO once the server has given up on the stream: how long the buffer takes to fill depends
    # on the build's speed (a sanitizer build is several times slower).
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not os.path.exists(go):
        time.sleep(0.05)
    closed, data = read_until_closed(s, 10)
    return {"closed": closed, "bytes": len(data), "done": b"data: [DONE]" in data}


def burst(port, n, max_tokens):
    socks = [connect(port) for _ in range(n + 1)]
    for i, s in enumerate(socks):
        body = json.dumps({"prompt": "ROMEO:", "max_tokens": max_tokens, "ignore_eos": True,
                           "stream": i < n}).encode()
        s.sendall(request("/generate", body, "Connection: close\r\n"))
    out = []
    for s in socks:
        closed, data = read_until_closed(s, 60)
        text = data.decode("utf-8", "replace")
        out.append({"status": status_of(data), "error": '"error"' in text, "done": "data: [DONE]" in text,
                    "closed": closed})
    return out


# name: the raw request (each one is refused by libmicrohttpd's own parser, not by a route)
REFUSED = {
    "big header": b"GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n",
    "many headers": b"GET /health HTTP/1.1\r\nHost: t\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(10000)) +
                    b"\r\n",
    "long url": b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: t\r\n\r\n",
    "chunk size overflow": b"POST /generate HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                           b"FFFFFFFFFFFFFFFFFFFF\r\nabc",
    "chunk size not hex": b"POST /generate HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n",
    "Content-Length not a number": b"POST /generate HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n",
    "Content-Length overflow": b"POST /generate HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n",
    "HTTP/2.0": b"GET /health HTTP/2.0\r\nHost: t\r\n\r\n",
    "HTTP/0.9": b"GET /health HTTP/0.9\r\nHost: t\r\n\r\n",
    "binary request line": b"\x01\x02\x03 \r\n\r\n",
    "header without colon": b"GET /health HTTP/1.1\r\nHost: t\r\nBadHeaderLine\r\n\r\n",
}


def refused(port):
    out = []
    for name, raw in REFUSED.items():
        s = connect(port)
        try:
            s.sendall(raw)
        except (ConnectionResetError, BrokenPipeError):
            pass
        closed, data = read_until_closed(s, 5)
        head, _, body = data.partition(b"\r\n\r\n")
        fields = dict(line.split(": ", 1) for line in head.decode("latin-1").split("\r\n")[1:] if ": " in line)
        out.append({"case": name, "status": status_of(data), "type": fields.get("Content-Type"),
                    "body": body.decode("utf-8", "replace"), "closed": closed,
                    "exact": fields.get("Content-Length") == str(len(body))})
    return out


def main():
    cmd, port = sys.argv[1], int(sys.argv[2])
    args = sys.argv[3:]
    if cmd == "early":
        out = early(port)
    elif cmd == "stall":
        out = stall(port, args[0])
    elif cmd == "headers":
        out = headers(port, args[0])
    elif cmd == "flood":
        out = flood(port, int(args[0]))
    elif cmd == "slowloris":
        out = slowloris(port, int(args[0]), float(args[1]))
    elif cmd == "noread":
        out = noread(port, float(args[0]), args[1])
    elif cmd == "refused":
        out = refused(port)
    elif cmd == "burst":
        out = burst(port, int(args[0]), int(args[1]))
    else:
        sys.exit("unknown command " + cmd)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
