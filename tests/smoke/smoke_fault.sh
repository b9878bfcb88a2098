#!/bin/bash
# smoke_fault.sh — a device failure (row 40, figure 7), injected with the test hook FLASHKERNEL_FAULT_AFTER_STEPS
# (the engine's fault_after_steps: on the CPU the device fails as a real fault would, after that many steps): every
# in-flight request gets an error (an error event in streams, 503 otherwise), /health answers 503 within 1 s of the
# failure, new requests get 503, and the process exits with status 1 within 5 s.
. "$(dirname "$0")/lib.sh"
NET="python3 $(dirname "$0")/net.py"

# epoch_of_log_line PATTERN: the time (Unix seconds) of the first log line matching PATTERN.
epoch_of_log_line() {
    local stamp
    stamp=$(grep -m 1 "$1" "$LOG" | cut -c 1-23)
    [ -n "$stamp" ] || fail "no log line matches \"$1\""
    date -d "$stamp" +%s.%N
}

FLASHKERNEL_FAULT_AFTER_STEPS=10 start_server fault --max-num-seqs 16
grep -q "test hook: the device fails after 10 engine steps" "$LOG" || fail "the test hook was not taken"

# /health every 50 ms, as a supervisor would: "epoch status" lines.
(
    while kill -0 "$SERVER_PID" 2>/dev/null; do
        printf '%s %s\n' "$(now)" "$(curl -s -o /dev/null -m 1 -w '%{http_code}' "$BASE/health")"
        sleep 0.05
    done
) >"$WORK/health.txt" 2>/dev/null &
poller=$!

note "8 streams and a plain request in flight when the device fails"
$NET burst "$PORT" 8 500 >"$WORK/burst.json"
# Every request gets an error: streams an error event (or 503 if they arrived after the failure), the plain one 503.
jq -e 'length == 9 and all(.error and .closed) and all(.status == 200 or .status == 503) and
    (.[:8] | any(.status == 200 and .done)) and .[8].status == 503' \
    "$WORK/burst.json" >/dev/null || fail "not every in-flight request got an error: $(cat "$WORK/burst.json")"
failed_at=$(epoch_of_log_line "engine failed: cpu: injected device fault")

note "503 for new requests"
expect_error "a request after the failure" 503 "the engine failed" /generate -d '{"prompt":"a"}'

note "exit status 1 within 5 s"
wait_exit 10
[ "$EXIT_CODE" = 1 ] || fail "exit status $EXIT_CODE after the device failure, want 1"
exited_at=$(now)
wait "$poller" 2>/dev/null || true
less "$(awk -v a="$exited_at" -v b="$failed_at" 'BEGIN { print a - b }')" 5 ||
    fail "the process exited $(awk -v a="$exited_at" -v b="$failed_at" 'BEGIN { print a - b }') s after the failure"
first503=$(awk '$2 == 503 { print $1; exit }' "$WORK/health.txt")
[ -n "$first503" ] || fail "/health never answered 503: $(cat "$WORK/health.txt")"
awk -v f="$failed_at" '$1 > f && $2 == 200 { bad = 1 } END { exit bad }' "$WORK/health.txt" ||
    fail "/health answered 200 after the failure: $(cat "$WORK/health.txt")"
less "$(awk -v a="$first503" -v b="$failed_at" 'BEGIN { print a - b }')" 1 ||
    fail "/health answered 503 only $(awk -v a="$first503" -v b="$failed_at" 'BEGIN { print a - b }') s after the failure"
grep -q "finish error" "$LOG" || fail "no request was logged with finish error"
echo "smoke_fault: ok"
