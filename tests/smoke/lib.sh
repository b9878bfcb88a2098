# lib.sh — what the smoke tests share (sourced): start and stop a flashkernel-server on a free port of 127.0.0.1
# with the demo model on the CPU, make requests with curl, check JSON with jq, compare with `flashkernel generate`.
# The environment comes from tests/smoke/meson.build: FK_SERVER, FK_CLI, FK_SOURCE_ROOT, FK_BUILD_ROOT.
set -eu

: "${FK_SERVER:?}" "${FK_CLI:?}" "${FK_SOURCE_ROOT:?}" "${FK_BUILD_ROOT:?}"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fk-smoke-XXXXXX")
LOG=""
SERVER_PID=""
BASE=""

cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    if [ -n "$LOG" ] && [ -f "$LOG" ]; then
        echo "--- last lines of the server log ($LOG):" >&2
        tail -n 40 "$LOG" >&2
    fi
    exit 1
}

note() { echo "== $*"; }

now() { date +%s.%N; }
# elapsed START: seconds since START (from `now`).
elapsed() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.3f\n", a - b }'; }
# less A B: true when the number A < B.
less() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# The sanitizers report into the log; any report fails the test.
check_log() {
    if grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:|WARNING: .*Sanitizer" "$LOG" >/dev/null; then
        fail "sanitizer report in $LOG"
    fi
}

# start_server NAME [flags...]: starts the server (CPU, 2 threads, a 64 MiB KV cache unless flags say otherwise)
# and waits until /health answers 200. Sets SERVER_PID, BASE (http://127.0.0.1:PORT), PORT and LOG.
start_server() {
    local name=$1
    shift
    LOG="$WORK/$name.log"
    "$FK_SERVER" --port 0 --device cpu --threads 2 --kv-cache-mb 64 "$@" >"$LOG" 2>&1 &
    SERVER_PID=$!
    wait_listening
    wait_healthy 120
}

# Waits for the "listening on" line; sets PORT and BASE.
wait_listening() {
    local i
    for i in $(seq 1 600); do
        PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$LOG" | head -n 1)
        [ -n "$PORT" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || fail "the server exited during startup"
        sleep 0.1
    done
    [ -n "$PORT" ] || fail "the server did not start listening"
    BASE="http://127.0.0.1:$PORT"
}

wait_healthy() {
    local limit=$1 i
    for i in $(seq 1 $((limit * 10))); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/health")" = 200 ] && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || fail "the server exited during startup"
        sleep 0.1
    done
    fail "the server did not become healthy in $limit s"
}

# wait_exit LIMIT_S: waits for the server to exit (at most LIMIT_S seconds); sets EXIT_CODE.
wait_exit() {
    local limit=$1 i
    for i in $(seq 1 $((limit * 20))); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.05
    done
    kill -0 "$SERVER_PID" 2>/dev/null && fail "the server did not exit within $limit s"
    EXIT_CODE=0
    wait "$SERVER_PID" || EXIT_CODE=$?
    SERVER_PID=""
    check_log
}

# stop_server: SIGTERM, then exit status 0 and a clean log.
stop_server() {
    kill -TERM "$SERVER_PID"
    wait_exit 60
    [ "$EXIT_CODE" = 0 ] || fail "the server exited with status $EXIT_CODE after SIGTERM"
}

# http PATH [curl args...]: one request; sets STATUS and BODY (and HEADERS, the response headers).
http() {
    local path=$1
    shift
    STATUS=$(curl -sS -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' "$@" "$BASE$path" 2>"$WORK/curl.err") ||
        STATUS=000
    BODY=$(cat "$WORK/body")
    HEADERS=$(cat "$WORK/headers" 2>/dev/null || true)
}

# expect_error WHAT STATUS MESSAGE PATH [curl args...]: the request gets STATUS and an error body
# {"error":{"message","type","code"}} whose message contains MESSAGE (fixed string).
expect_error() {
    local what=$1 status=$2 message=$3
    shift 3
    http "$@"
    [ "$STATUS" = "$status" ] || fail "$what: status $STATUS, want $status; body: $BODY"
    local got
    got=$(printf '%s' "$BODY" | jq -er '.error.message') || fail "$what: not an error body: $BODY"
    printf '%s' "$BODY" | jq -e --argjson s "$status" '.error.code == $s and (.error.type | type) == "string"' \
        >/dev/null || fail "$what: error code/type wrong: $BODY"
    case "$got" in
    *"$message"*) ;;
    *) fail "$what: message \"$got\" does not contain \"$message\"" ;;
    esac
}

# expect_healthy WHAT: /health answers 200 {"status":"ok"}.
expect_healthy() {
    http /health
    [ "$STATUS" = 200 ] && [ "$(printf '%s' "$BODY" | jq -r .status)" = ok ] ||
        fail "$1: /health answered $STATUS $BODY"
}

# reference PROMPT MAX_TOKENS [flashkernel generate flags...]: the CPU engine's greedy output as JSON
# ({"prompt_ids","ids","text","finish_reason"}), from `flashkernel generate`.
reference() {
    local prompt=$1 max=$2
    shift 2
    "$FK_CLI" generate --device cpu --threads 2 --prompt "$prompt" --max-tokens "$max" --json "$@" 2>"$WORK/cli.err" ||
        fail "flashkernel generate failed: $(cat "$WORK/cli.err")"
}

# metric NAME: the value of the sample NAME (with its labels, e.g. 'flashkernel_kv_blocks{model_name="demo-model",state="used"}').
metric() {
    curl -s "$BASE/metrics" | awk -v n="$1" 'index($0, n " ") == 1 { print $2 }'
}

# openai_venv: sets VENV to a virtual environment in the build directory holding the official `openai` client and
# jinja2 (the reference chat-template renderer), installed from PyPI on first use; tests that start at the same time
# wait for one install (flock).
openai_venv() {
    VENV="$FK_BUILD_ROOT/openai-venv"
    (
        flock 9
        if ! "$VENV/bin/python" -c 'import openai, jinja2' 2>/dev/null; then
            echo "== installing openai and jinja2 into $VENV"
            rm -rf "$VENV"
            python3 -m venv "$VENV" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
            "$VENV/bin/pip" install --quiet --disable-pip-version-check --retries 5 --timeout 60 openai jinja2 ||
                fail "pip install openai jinja2 failed (the test needs PyPI)"
        fi
    ) 9>"$FK_BUILD_ROOT/openai-venv.lock" || exit 1
    "$VENV/bin/python" -c 'import openai; print("openai", openai.__version__)'
}

# sse_text FILE: the concatenated "text" of a /generate stream's token events.
sse_text() {
    sed -n 's/^data: //p' "$1" | grep -v '^\[DONE\]$' | jq -rj 'select(has("token") or has("text")) | .text // empty'
}
