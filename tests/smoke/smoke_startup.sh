#!/bin/bash
# smoke_startup.sh — startup and its failures: --help and bad flags (exit 2); an address in use, a missing model
# directory, a max_model_len beyond the model's, a KV cache too small for one sequence (figure 9: exit 1 at once with
# the library's message naming the sizes and what to change); 503 on /health and requests while the model loads;
# --served-model-name.
. "$(dirname "$0")/lib.sh"

# startup_fails WHAT STATUS MESSAGE [flags...]: the server exits with STATUS within 30 s, MESSAGE in its output.
startup_fails() {
    local what=$1 status=$2 message=$3
    shift 3
    LOG="$WORK/fail.log"
    local start rc=0
    start=$(now)
    timeout 30 "$FK_SERVER" --port 0 --device cpu --threads 2 "$@" >"$LOG" 2>&1 || rc=$?
    [ "$rc" = "$status" ] || fail "$what: exit status $rc, want $status"
    grep -qF -- "$message" "$LOG" || fail "$what: no \"$message\" in the output"
    check_log
    echo "$what: exit $rc after $(elapsed "$start") s"
}

note "flags"
"$FK_SERVER" --help >"$WORK/help.txt" || fail "--help failed"
for flag in --model --host --port --device --max-num-seqs --max-num-batched-tokens --block-size --kv-cache-mb \
    --max-queue --max-concurrent-requests --max-body-bytes --api-key --api-key-file --served-model-name --shutdown-timeout \
    --gpu-memory-utilization --max-model-len FLASHKERNEL_FAULT_AFTER_STEPS; do
    grep -q -- "$flag" "$WORK/help.txt" || fail "--help does not mention $flag"
done
startup_fails "unknown flag" 2 "usage: flashkernel-server" --frobnicate
startup_fails "bad port" 2 "--port must be an integer in [0, 65535]" --port 70000
startup_fails "bad device" 2 "--device must be cpu, cuda or auto" --device tpu
startup_fails "missing key file" 2 "cannot open $WORK/nokey" --api-key-file "$WORK/nokey"
FLASHKERNEL_FAULT_AFTER_STEPS=x startup_fails "bad fault hook" 2 "FLASHKERNEL_FAULT_AFTER_STEPS must be an integer"

note "failures at startup (figure 9)"
start_server taken
taken=$PORT
startup_fails "address in use" 1 "cannot listen on 127.0.0.1 port $taken" --port "$taken"
stop_server
startup_fails "missing model" 1 "$WORK/none/config.json" --model "$WORK/none"
startup_fails "max_model_len too large" 1 "max_model_len must be in [0, 2048]" --max-model-len 100000
startup_fails "KV cache too small" 1 "cannot hold one sequence of max_model_len 2048" --kv-cache-mb 1

note "503 while the model loads"
# The model directory's config.json is a FIFO: loading blocks on it until the test opens it for writing.
mkdir "$WORK/slow"
for f in "$FK_SOURCE_ROOT"/deploy/demo-model/*; do
    ln -s "$f" "$WORK/slow/$(basename "$f")"
done
rm "$WORK/slow/config.json"
mkfifo "$WORK/slow/config.json"
LOG="$WORK/loading.log"
"$FK_SERVER" --port 0 --device cpu --model "$WORK/slow" >"$LOG" 2>&1 &
SERVER_PID=$!
wait_listening
http /health
[ "$STATUS" = 503 ] && [ "$(printf '%s' "$BODY" | jq -r .status)" = loading ] || fail "/health while loading: $STATUS $BODY"
expect_error "a request while loading" 503 "the model is still loading" /generate -d '{"prompt":"a"}'
expect_error "/v1/models while loading" 503 "the model is still loading" /v1/models
http /metrics
[ "$STATUS" = 200 ] || fail "/metrics while loading: $STATUS"
: >"$WORK/slow/config.json" # unblocks the loader, which then fails on the pipe
wait_exit 30
[ "$EXIT_CODE" = 1 ] || fail "exit status $EXIT_CODE after the load failed"
grep -q "config.json" "$LOG" || fail "the load error does not name config.json"

note "--served-model-name"
start_server named --served-model-name shakespeare
http /v1/models
[ "$(printf '%s' "$BODY" | jq -r '.data[0].id')" = shakespeare ] || fail "/v1/models: $BODY"
http /v1/completions -d '{"model":"shakespeare","prompt":"a","max_tokens":2}'
[ "$STATUS" = 200 ] || fail "completion with the served name: $STATUS $BODY"
grep -q 'model_name="shakespeare"' <(curl -s "$BASE/metrics") || fail "metrics not labelled with the served name"
stop_server
echo "smoke_startup: ok"
