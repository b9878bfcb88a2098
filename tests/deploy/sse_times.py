#!/usr/bin/env python3
"""sse_times.py URL BODY — POSTs the JSON BODY to URL and reads the Server-Sent Events as they arrive. Prints one
JSON object: "status", "times" (seconds from sending the request to the arrival of each data event, [DONE]
included), "text" (the token events' text joined), "final" (the event with the finish reason), "done" (whether
[DONE] came).
"""
import http.client
import json
import sys
import time
import urllib.parse


def main(url, body):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
    start = time.monotonic()
    conn.request("POST", u.path, body=body.encode(), headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    result = {"status": response.status, "times": [], "text": "", "final": None, "done": False}
    while True:
        # readline returns as soon as a line has arrived (the chunked decoding does not wait for the end).
        line = response.readline()
        if not line:
            break
        line = line.decode("utf-8").rstrip("\r\n")
        if not line.startswith("data: "):
            continue
        result["times"].append(time.monotonic() - start)
        data = line[len("data: "):]
        if data == "[DONE]":
            result["done"] = True
            continue
        event = json.loads(data)
        if "finish_reason" in event or "error" in event:
            result["final"] = event
        else:
            result["text"] += event.get("text", "")
    print(json.dumps(result))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2])
