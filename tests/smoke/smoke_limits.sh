#!/bin/bash
# smoke_limits.sh — the connection-level rows of RELIABILITY.md, scaled down for a 2-core CI machine: a 10 MB body
# refused before it is read (row 6), bodies that never complete closed at the inactivity timeout (row 7), oversized
# headers (row 32) and every other request libmicrohttpd refuses itself answered with the JSON error body, a stream
# that is never read (row 37), a slowloris from one address while another address is served as fast as before (row
# 33: 60 sockets against a per-IP limit of 20, instead of 2,000), and a flood past the connection limit and the queue
# cap (row 34: 100 sockets against a limit of 30, instead of 10,000) with no file descriptors left behind.
. "$(dirname "$0")/lib.sh"
NET="python3 $(dirname "$0")/net.py"

fds() { ls "/proc/$SERVER_PID/fd" | wc -l; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER_PID/status"; }

# settle_fds WANT: waits (up to 5 s) for the server's descriptor count to come back to WANT.
settle_fds() {
    local i
    for i in $(seq 1 50); do
        [ "$(fds)" -le "$1" ] && return 0
        sleep 0.1
    done
    fail "file descriptors: $(fds) open, $1 before"
}

idle_engine() {
    local i
    for i in $(seq 1 50); do
        [ "$(metric 'vllm:num_requests_running{model_name="demo-model"}')" = 0 ] &&
            [ "$(metric 'vllm:num_requests_waiting{model_name="demo-model"}')" = 0 ] &&
            [ "$(metric 'flashkernel_kv_blocks{model_name="demo-model",state="used"}')" = 0 ] && return 0
        sleep 0.1
    done
    fail "$1: the engine is not idle: $(curl -s "$BASE/metrics" | grep -E '^(vllm:num_requests|flashkernel_kv)')"
}

start_server limits --timeout 3
baseline_fds=$(fds)

note "row 6: a 10 MB body is refused (413) before it is read, and the connection closed"
out=$($NET early "$PORT")
printf '%s' "$out" | jq -e '.status == 413 and .closed and (.body | fromjson | .error.message) ==
    "body exceeds 1048576 bytes (Content-Length: 10000000)"' >/dev/null || fail "row 6: $out"
head -c 10000000 /dev/zero >"$WORK/big"
expect_error "row 6 (curl)" 413 "body exceeds 1048576 bytes" /generate --data-binary @"$WORK/big"
expect_healthy "after row 6"

note "row 7: bodies that never complete are closed at the inactivity timeout (3 s)"
for mode in length chunked; do
    out=$($NET stall "$PORT" "$mode")
    printf '%s' "$out" | jq -e '.closed and .after >= 2.5 and .after < 10' >/dev/null || fail "row 7 ($mode): $out"
done
idle_engine "row 7"
settle_fds "$baseline_fds"
expect_healthy "after row 7"

note "row 32: a 64 KiB header and 10,000 headers get 431"
for kind in big many; do
    out=$($NET headers "$PORT" "$kind")
    printf '%s' "$out" | jq -e '.status == 431' >/dev/null || fail "row 32 ($kind): $out"
done
expect_healthy "after row 32"

note "requests libmicrohttpd refuses itself get the documented JSON error too (431, 414, 413, 400, 505)"
$NET refused "$PORT" >"$WORK/refused.json"
jq -e 'length == 11 and all(.closed and .exact and .type == "application/json" and
    (.body | fromjson | .error.code) == .status and (.body | fromjson | .error.type | type) == "string")' \
    "$WORK/refused.json" >/dev/null || fail "refused requests: $(jq -c '.[]' "$WORK/refused.json")"
want='{"big header":[431,"request headers too large: the request line and headers must fit in 32768 bytes"],
  "many headers":[431,"request headers too large: the request line and headers must fit in 32768 bytes"],
  "long url":[414,"URL too long: the request line and headers must fit in 32768 bytes"],
  "chunk size overflow":[413,"body too large: its Content-Length or a chunk size is out of range"],
  "chunk size not hex":[400,"malformed HTTP request"],
  "Content-Length not a number":[400,"malformed HTTP request"],
  "Content-Length overflow":[413,"body too large: its Content-Length or a chunk size is out of range"],
  "HTTP/2.0":[505,"HTTP version not supported: use HTTP/1.1 or 1.0"],
  "HTTP/0.9":[505,"HTTP version not supported: use HTTP/1.1 or 1.0"],
  "binary request line":[400,"malformed HTTP request"],
  "header without colon":[400,"malformed HTTP request"]}'
jq -e --argjson want "$want" 'map({key: .case, value: [.status, (.body | fromjson | .error.message)]}) |
    from_entries == $want' "$WORK/refused.json" >/dev/null ||
    fail "refused requests: $(jq -c 'map([.case, .status, .body])' "$WORK/refused.json")"
idle_engine "refused requests"
settle_fds "$baseline_fds"
expect_healthy "after the refused requests"

note "row 37: a stream that is never read is capped and aborted; the scheduler goes on"
$NET noread "$PORT" 60 "$WORK/noread.go" >"$WORK/noread.json" &
reader=$!
sleep 1
start=$(now)
http /generate -d '{"prompt":"ROMEO:","max_tokens":32}'
[ "$STATUS" = 200 ] || fail "row 37: a request beside the unread stream: $STATUS $BODY"
less "$(elapsed "$start")" 3 || fail "row 37: a request beside the unread stream took $(elapsed "$start") s"
# The reader starts reading once the server has cancelled the stream (its buffer full) and closed the connection
# (the write deadline passed): how long that takes depends on the build's speed. At most 60 s, then it fails below.
for i in $(seq 1 600); do
    grep -qE 'request cmpl-[0-9]+: .* finish cancel' "$LOG" && [ "$(fds)" -le "$baseline_fds" ] && break
    sleep 0.1
done
touch "$WORK/noread.go"
wait "$reader"
jq -e '.closed and (.done | not)' "$WORK/noread.json" >/dev/null ||
    fail "row 37: the unread stream was not aborted: $(cat "$WORK/noread.json")"
line=$(grep -E 'request cmpl-[0-9]+: .* finish cancel' "$LOG" | head -n 1)
n=$(printf '%s' "$line" | sed -n 's/.* + \([0-9]*\) completion tokens.*/\1/p')
[ -n "$n" ] && [ "$n" -lt 2000 ] || fail "row 37: the unread stream was not cancelled early: $line"
idle_engine "row 37"
settle_fds "$baseline_fds"
stop_server

note "row 33: slowloris from 127.0.0.1 (60 sockets, per-IP limit 20); 127.0.0.2 is served as before"
start_server slowloris --max-connections-per-ip 20 --max-connections 200
other() { # a request from another address; prints its time
    curl -s -o "$WORK/other" -w '%{time_total}' --interface 127.0.0.2 "$BASE/generate" \
        -d '{"prompt":"ROMEO:","max_tokens":8}'
}
base=0
for i in 1 2 3 4 5; do
    t=$(other)
    less "$base" "$t" && base=$t
done
$NET slowloris "$PORT" 60 4 >"$WORK/slow.json" &
loris=$!
sleep 1.5
worst=0
for i in 1 2 3 4 5; do
    t=$(other)
    jq -e '.usage.completion_tokens == 8' "$WORK/other" >/dev/null || fail "row 33: $(cat "$WORK/other")"
    less "$worst" "$t" && worst=$t
done
wait "$loris"
jq -e '.refused >= 40 and .open >= 15' "$WORK/slow.json" >/dev/null ||
    fail "row 33: per-IP limit: $(cat "$WORK/slow.json")"
less "$worst" "$(awk -v b="$base" 'BEGIN { print 2 * b + 0.25 }')" ||
    fail "row 33: requests from another address took $worst s during the slowloris, $base s before"
stop_server

note "row 34: 100 connections against a limit of 30; 429 past the queue cap; nothing left behind"
start_server flood --max-connections 30 --max-num-seqs 1 --max-queue 2
baseline_fds=$(fds)
baseline_rss=$(rss_kb)
out=$($NET flood "$PORT" 100)
printf '%s' "$out" | jq -e '.refused >= 70' >/dev/null || fail "row 34: connection limit: $out"
settle_fds "$baseline_fds"
expect_healthy "after the flood"
# One request runs (max-num-seqs 1), two may wait (max-queue 2): of 8 more, most get 429 with Retry-After.
curl -sN "$BASE/generate" -d '{"prompt":"ROMEO:","max_tokens":1500,"ignore_eos":true,"stream":true}' \
    >"$WORK/long" &
long=$!
sleep 0.5
pids=""
for i in $(seq 1 8); do
    curl -s -D "$WORK/h$i" -o "$WORK/b$i" -w '%{http_code}' "$BASE/generate" \
        -d '{"prompt":"ROMEO:","max_tokens":4}' >"$WORK/s$i" &
    pids="$pids $!"
done
wait $pids "$long"
n429=0
for i in $(seq 1 8); do
    case "$(cat "$WORK/s$i")" in
    429)
        n429=$((n429 + 1))
        grep -qi '^Retry-After: 1' "$WORK/h$i" || fail "row 34: 429 without Retry-After: $(cat "$WORK/h$i")"
        jq -e '.error.message == "server overloaded, retry later" and .error.code == 429' "$WORK/b$i" >/dev/null ||
            fail "row 34: 429 body: $(cat "$WORK/b$i")"
        ;;
    200) ;;
    *) fail "row 34: request $i got $(cat "$WORK/s$i"): $(cat "$WORK/b$i")" ;;
    esac
done
[ "$n429" -ge 5 ] || fail "row 34: only $n429 of 8 requests past the queue cap got 429"
grep -q '^data: \[DONE\]' "$WORK/long" || fail "row 34: the running request did not finish"
idle_engine "row 34"
settle_fds "$baseline_fds"
# AddressSanitizer's quarantine holds freed memory back, so resident memory is compared only without it (the
# sanitizer build checks leaks instead).
if ! ldd "$FK_SERVER" | grep -q libasan; then
    growth=$(($(rss_kb) - baseline_rss))
    [ "$growth" -lt 65536 ] || fail "row 34: resident memory grew by $growth KiB"
fi
expect_healthy "after row 34"
stop_server

note "--max-concurrent-requests: running requests count too (room for 4 sequences, one request in flight at most)"
start_server inflight --max-num-seqs 4 --max-concurrent-requests 1
curl -sN "$BASE/generate" -d '{"prompt":"ROMEO:","max_tokens":1500,"ignore_eos":true,"stream":true}' \
    >"$WORK/long" &
long=$!
sleep 0.5
for i in $(seq 1 4); do
    code=$(curl -s -o "$WORK/b$i" -w '%{http_code}' "$BASE/generate" -d '{"prompt":"ROMEO:","max_tokens":4}')
    [ "$code" = 429 ] || fail "in-flight cap: request $i beside a running one got $code: $(cat "$WORK/b$i")"
done
wait "$long"
grep -q '^data: \[DONE\]' "$WORK/long" || fail "in-flight cap: the running request did not finish"
idle_engine "in-flight cap"
for i in $(seq 1 20); do # the finished stream counts until its connection is done with it
    code=$(curl -s -o "$WORK/b0" -w '%{http_code}' "$BASE/generate" -d '{"prompt":"ROMEO:","max_tokens":4}')
    [ "$code" = 429 ] || break
    sleep 0.1
done
[ "$code" = 200 ] || fail "in-flight cap: a request after the running one ended got $code: $(cat "$WORK/b0")"
stop_server
echo "smoke_limits: ok"
