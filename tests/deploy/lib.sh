# lib.sh — what the deploy tests share (sourced): tests/smoke/lib.sh (fail, note, http, reference, a server's start
# and exit), and several background processes at once (servers, nginx), free ports, random prompts, and requests
# checked against `flashkernel generate`. FK_PYTHON (tests/deploy/meson.build) is the Python that has python3-yaml.
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../smoke/lib.sh"
: "${FK_PYTHON:?}"

PIDS=()
# running PID: whether the process is alive and not yet a zombie (kill -0 also answers for an unreaped child).
running() {
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) && [ -n "$state" ] && [ "$state" != Z ]
}

# At exit, failed or not: SIGTERM to every background process (nginx's master then stops its workers, a server
# drains), up to 5 s for them to go, SIGKILL to what is left.
cleanup_deploy() {
    local p
    for p in "${PIDS[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${PIDS[@]}"; do
        for _ in $(seq 1 50); do
            running "$p" || break
            sleep 0.1
        done
        { kill -KILL "$p" && wait "$p"; } 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    cleanup
}
trap cleanup_deploy EXIT

# spawn LOG COMMAND...: runs COMMAND in the background, output into LOG; sets SPAWNED to its pid (killed at exit).
spawn() {
    local log=$1
    shift
    "$@" >"$log" 2>&1 &
    SPAWNED=$!
    PIDS+=("$SPAWNED")
}

# listening PID LOG: waits for a server's "listening on http://127.0.0.1:PORT" line; sets PORT.
listening() {
    local pid=$1 log=$2
    PORT=""
    for _ in $(seq 1 600); do
        PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" 2>/dev/null | head -n 1)
        [ -n "$PORT" ] && return 0
        kill -0 "$pid" 2>/dev/null || { LOG=$log; fail "the server exited during startup"; }
        sleep 0.1
    done
    LOG=$log
    fail "the server did not start listening"
}

# healthy URL LIMIT_S: waits until URL/health answers 200.
healthy() {
    for _ in $(seq 1 $(($2 * 10))); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$1/health")" = 200 ] && return 0
        sleep 0.1
    done
    fail "$1/health did not answer 200 within $2 s"
}

# start_cpu_server NAME [flags...]: a flashkernel-server of the build on the CPU with the demo model, on a free port
# of 127.0.0.1, healthy; sets SPAWNED (pid) and PORT. Its log is $WORK/NAME.log.
start_cpu_server() {
    local name=$1
    shift
    spawn "$WORK/$name.log" "$FK_SERVER" --port 0 --device cpu --threads 2 --kv-cache-mb 64 "$@"
    listening "$SPAWNED" "$WORK/$name.log"
    healthy "http://127.0.0.1:$PORT" 120
}

# free_port: a port of 127.0.0.1 nothing listens on (bound, then released).
free_port() {
    "$FK_PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# random_prompt: 3 to 6 words drawn from the Shakespeare corpus, fresh each run (printed, to replay a failure).
random_prompt() {
    local p
    p=$(tr -cs 'A-Za-z' '\n' <"$FK_SOURCE_ROOT/tests/fixtures/corpus/tinyshakespeare-val.txt" | grep -E '^.{3,}$' |
        shuf -n $((3 + RANDOM % 4)) | paste -sd ' ')
    echo "prompt: $p" >&2
    printf '%s' "$p"
}

# prepare K [ENDPOINT]: request K, ready to send: a random prompt, a random max_tokens, greedy, to /generate (or
# /v1/completions); and the text `flashkernel generate` makes of it.
prepare() {
    local k=$1 endpoint=${2:-/generate} prompt max
    prompt=$(random_prompt)
    max=$((8 + RANDOM % 17))
    if [ "$endpoint" = /generate ]; then
        jq -nc --arg p "$prompt" --argjson m "$max" '{prompt: $p, max_tokens: $m}' >"$WORK/req$k.json"
    else
        jq -nc --arg p "$prompt" --argjson m "$max" \
            '{model: "demo-model", prompt: $p, max_tokens: $m, temperature: 0}' >"$WORK/req$k.json"
    fi
    echo "$endpoint" >"$WORK/req$k.endpoint"
    reference "$prompt" "$max" | jq -j .text >"$WORK/req$k.want"
}

# send K WHAT: sends prepared request K through $BASE: it must answer 200 with the text of `flashkernel generate`.
send() {
    local k=$1 what=$2
    http "$(cat "$WORK/req$k.endpoint")" -d "@$WORK/req$k.json"
    [ "$STATUS" = 200 ] || fail "$what: status $STATUS: $BODY"
    printf '%s' "$BODY" | jq -j '.text // .choices[0].text' >"$WORK/req$k.got"
    cmp -s "$WORK/req$k.want" "$WORK/req$k.got" ||
        fail "$what: \"$(cat "$WORK/req$k.got")\", flashkernel generate: \"$(cat "$WORK/req$k.want")\""
}

# expect_generation WHAT [ENDPOINT]: prepare and send one request.
expect_generation() {
    prepare 0 "${2:-/generate}"
    send 0 "$1"
}

# metric_at URL NAME: the sum of the samples of NAME (any labels) at URL/metrics.
metric_at() {
    curl -s "$1/metrics" |
        awk -v n="$2" 'index($0, n "{") == 1 || index($0, n " ") == 1 { s += $NF } END { print s + 0 }'
}

# running_on URL...: waits until one of the servers at URL... runs a request; prints its index (0-based).
running_on() {
    local k
    for _ in $(seq 1 400); do
        k=0
        for url in "$@"; do
            [ "$(metric_at "$url" vllm:num_requests_running)" -ge 1 ] && { echo "$k"; return 0; }
            k=$((k + 1))
        done
        sleep 0.05
    done
    fail "no server started running the request"
}
