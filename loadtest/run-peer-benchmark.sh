#!/bin/bash
# run-peer-benchmark.sh — flashkernel-server and llama.cpp's llama-server on the same GPU and the same model, driven by
# the same flashkernel-loadtest (streamed, ignore_eos, greedy), one server at a time:
#   closed loop: concurrency 1, 16, 64, 256 at 128 prompt / 128 output tokens (2 x concurrency requests, at least 16)
#                and 64 at 1,024 / 256 (128 requests); flashkernel over /v1/completions, llama-server over
#                /v1/completions and its own /completion (--endpoint llama). llama-server is started for each level
#                with as many slots as clients (-np N, 1,536 tokens each): its steps cost more with more slots (at 16
#                clients -np 16 gives ~3x the tokens/s of -np 256), so each level gets its best setting;
#                flashkernel-server is started once with its defaults
#   open loop:   a --rate sweep at 128 / 128 (at most 256 in flight, 10 s of arrivals per rate; llama-server with
#                -np 256): the throughput-latency curve; rates per server from FK_RATES / LLAMA_RATES
# and, for the load tester's tests, llama-server's raw answers to one streamed and one whole /completion request.
# Writes into OUTDIR: <server>-<endpoint>-<shape>.json (draw them with loadtest/plot.py), benchmark.txt (the tables,
# the device, the commands), server logs, llama-capture/{stream,whole}.http.
#
# usage: loadtest/run-peer-benchmark.sh SERVER LOADTEST LLAMA_SERVER MODEL_DIR MODEL_GGUF OUTDIR
#   MODEL_DIR: the Hugging Face directory flashkernel-server loads; MODEL_GGUF: the same weights converted for
#   llama.cpp (convert_hf_to_gguf.py --outtype f16). The model should emit only valid UTF-8 (see
#   ../shared/peers/make_bench_model_ascii.py): llama-server's stream fails on a token that is not.
# FK_STEPS (default "closed open capture") picks the parts; FK_SERVERS (default "flashkernel llama") the servers;
# FK_CONCURRENCY (default "1 16 64 256") and FK_LONG_CONCURRENCY (default "64") the closed loop's levels at 128/128
# and at 1,024/256; FK_ROUNDS (default 2) the requests per client at each level (at least 16 at 128/128, 4 at
# 1,024/256); LLAMA_ENDPOINTS (default "completions llama") llama-server's endpoints in the closed loop (a larger
# model: one is enough, the other doubles its time); FK_SERVER_ARGS flashkernel-server's extra flags (an A/B such as
# --no-mixed-graphs); FK_BENCH_DEVICE=cpu and FK_MAX_MODEL_LEN (default 4096) only
# to try the script on a CPU with the demo model.
set -euo pipefail
if [ $# -ne 6 ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
fi
SERVER=$1 LOADTEST=$2 LLAMA=$3 MODEL=$4 GGUF=$5 OUT=$6
STEPS=${FK_STEPS:-closed open capture}
SERVERS=${FK_SERVERS:-flashkernel llama}
FK_RATES=${FK_RATES:-20,60,120,180,240,300}
LEVELS=${FK_CONCURRENCY:-1 16 64 256}
LONG_LEVELS=${FK_LONG_CONCURRENCY:-64}
ROUNDS=${FK_ROUNDS:-2}
short_requests() { local r=$(($1 * ROUNDS)); echo $((r < 16 ? 16 : r)); }
long_requests() { local r=$(($1 * ROUNDS)); echo $((r < 4 ? 4 : r)); }
join() { tr ' ' ',' <<<"$*"; }
LLAMA_RATES=${LLAMA_RATES:-2,5,10,15,20,30}
mkdir -p "$OUT"
LOG="$OUT/benchmark.txt"
PID=""
trap '[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; true' EXIT
say() { echo "$*" | tee -a "$LOG"; }
say "# serving against llama-server, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
# The device's copy of the tree may carry no .git or a stale one: the commit the caller wrote in .peers/commit first.
say "# commit: $(cat "$(dirname "$0")/../.peers/commit" 2>/dev/null || git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown)"
say "# device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo unknown)"
say "# host: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"

# shellcheck source=loadtest/health.sh
. "$(dirname "$0")/health.sh"

# start NAME [SLOTS]: starts that server on port 18080 (llama-server with SLOTS slots, default 256) and waits (at
# most 300 s) for /health.
PORT=18080
start() {
    local name=$1 np=${2:-256} log="$OUT/server-$1-${2:-256}.log" cmd _
    if [ "$name" = flashkernel ]; then
        cmd=("$SERVER" --device "${FK_BENCH_DEVICE:-cuda}" --model "$MODEL" --port "$PORT" --max-connections-per-ip 1024
            --max-model-len "${FK_MAX_MODEL_LEN:-4096}")
        # shellcheck disable=SC2206 # FK_SERVER_ARGS splits into its flags
        [ -n "${FK_SERVER_ARGS:-}" ] && cmd+=(${FK_SERVER_ARGS})
    else
        # 256 slots of 1,536 tokens (a 1,024 + 256 request fits one); flash attention, every layer on the GPU
        cmd=("$LLAMA" -m "$GGUF" -ngl 99 -fa on -np "$np" -c $((np * 1536)) --host 127.0.0.1 --port "$PORT")
    fi
    say "# $name: ${cmd[*]}"
    "${cmd[@]}" >"$log" 2>&1 &
    PID=$!
    for _ in $(seq 1 3000); do
        health $PORT && return 0
        kill -0 "$PID" 2>/dev/null || { say "# $name exited:"; tail -n 20 "$log" >&2; exit 1; }
        sleep 0.1
    done
    say "# $name did not become healthy in 300 s"
    exit 1
}
stop() {
    kill -TERM "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
    PID=""
}

# lt NAME ENDPOINT SHAPE ARGS...: one load-tester run into OUTDIR/NAME-ENDPOINT-SHAPE.json
lt() {
    local name=$1 ep=$2 shape=$3 rc=0
    shift 3
    local cmd=("$LOADTEST" --url "http://127.0.0.1:$PORT" --endpoint "$ep" --ignore-eos --stream --seed 1
        --timeout 300 --json "$OUT/$name-$ep-$shape.json" "$@")
    say ""
    say "\$ ${cmd[*]}"
    "${cmd[@]}" 2>/dev/null | tee -a "$LOG" || rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || say "# warning: flashkernel-loadtest exited with status $rc (1: some requests failed)"
}

# step_counts: flashkernel-server's engine steps and device launches so far (its /metrics), as "decode_steps
# decode_launches prefill_steps prefill_launches"; launches_since BEFORE: the launches per step since then, logged.
step_counts() {
    { exec 4<>"/dev/tcp/127.0.0.1/$PORT"; } 2>/dev/null || { echo "0 0 0 0"; return; }
    printf 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&4
    awk '/^flashkernel_(engine_steps|device_launches)_total\{/ {
            k = ($1 ~ /engine_steps/ ? "s" : "l") ($1 ~ /kind="decode"/ ? "d" : "p"); v[k] = $2 }
        END { printf "%d %d %d %d\n", v["sd"], v["ld"], v["sp"], v["lp"] }' <&4
    exec 4<&-
}
launches_since() {
    local b a
    read -ra b <<<"$1"
    read -ra a <<<"$(step_counts)"
    say "# launches per step: $(awk -v ds=$((a[0] - b[0])) -v dl=$((a[1] - b[1])) -v ps=$((a[2] - b[2])) \
        -v pl=$((a[3] - b[3])) 'BEGIN { printf "%.1f in %d decode steps, %.1f in %d steps with prefill chunks",
        ds ? dl / ds : 0, ds, ps ? pl / ps : 0, ps }')"
}

# warm_up ENDPOINT PROMPT MAX_TOKENS CONCURRENCY...: one untimed round (as many requests as clients) of the load at
# each level, not recorded. flashkernel-server records a CUDA graph per decode batch size and per prefill bucket the
# first time it meets one, which a short timed level would otherwise pay for (a server that has run a while has
# them); llama-server gets the same rounds (its first batches, allocator growth).
warm_up() {
    local ep=$1 prompt=$2 tokens=$3 c
    shift 3
    for c in "$@"; do
        "$LOADTEST" --url "http://127.0.0.1:$PORT" --endpoint "$ep" --concurrency "$c" --requests "$c" \
            --prompt-len "$prompt" --max-tokens "$tokens" --ignore-eos --stream --seed 2 --timeout 300 >/dev/null 2>&1 ||
            say "# warning: the warm-up at $c failed"
    done
}

for name in $SERVERS; do
    eps=completions
    [ "$name" = llama ] && eps=${LLAMA_ENDPOINTS:-completions llama}
    first=${eps%% *}
    case " $STEPS " in *" closed "*)
        if [ "$name" = flashkernel ]; then
            start "$name"
            # shellcheck disable=SC2086 # the lists split into their levels
            warm_up "$first" 128 128 $LEVELS
            # shellcheck disable=SC2086
            warm_up "$first" 1024 256 $LONG_LEVELS
            reqs=() long_reqs=()
            for c in $LEVELS; do reqs+=("$(short_requests "$c")"); done
            for c in $LONG_LEVELS; do long_reqs+=("$(long_requests "$c")"); done
            counts=$(step_counts)
            lt "$name" "$first" p128-o128 --concurrency "$(join "$LEVELS")" --requests "$(join "${reqs[@]}")" \
                --prompt-len 128 --max-tokens 128
            launches_since "$counts"
            counts=$(step_counts)
            lt "$name" "$first" p1024-o256 --concurrency "$(join "$LONG_LEVELS")" --requests "$(join "${long_reqs[@]}")" \
                --prompt-len 1024 --max-tokens 256
            launches_since "$counts"
            stop
        else
            # shellcheck disable=SC2086 # the lists split into their levels
            for c in $(printf '%s\n' $LEVELS $LONG_LEVELS | sort -nu); do
                start "$name" "$c"
                [[ " $LEVELS " == *" $c "* ]] && warm_up "$first" 128 128 "$c"
                [[ " $LONG_LEVELS " == *" $c "* ]] && warm_up "$first" 1024 256 "$c"
                if [[ " $LEVELS " == *" $c "* ]]; then
                    for ep in $eps; do
                        lt "$name" "$ep" "p128-o128-c$c" --concurrency "$c" --requests "$(short_requests "$c")" \
                            --prompt-len 128 --max-tokens 128
                    done
                fi
                if [[ " $LONG_LEVELS " == *" $c "* ]]; then
                    lt "$name" "$first" "p1024-o256-c$c" --concurrency "$c" --requests "$(long_requests "$c")" \
                        --prompt-len 1024 --max-tokens 256
                fi
                stop
            done
        fi ;;
    esac
    case " $STEPS " in *" open "*|*" capture "*) ;; *) continue ;; esac
    start "$name"
    warm_up "$first" 128 128 1 16 256
    case " $STEPS " in *" open "*)
        rates=$FK_RATES
        [ "$name" = llama ] && rates=$LLAMA_RATES
        lt "$name" "$first" p128-o128-rates --rate "$rates" --concurrency 256 --duration 10 --prompt-len 128 \
            --max-tokens 128 ;;
    esac
    case " $STEPS " in *" capture "*)
        if [ "$name" = llama ]; then # llama-server's raw answers (status line, headers, body) as it sends them
            mkdir -p "$OUT/llama-capture"
            for mode in stream whole; do # the fields flashkernel-loadtest sends (return_tokens when whole)
                f='"stream":true'
                [ $mode = whole ] && f='"stream":false,"return_tokens":true'
                curl -s -i --raw -H 'Content-Type: application/json' \
                    -d "{\"prompt\":[15496,11,616,3290,318],\"n_predict\":6,\"temperature\":0,$f}" \
                    "http://127.0.0.1:$PORT/completion" >"$OUT/llama-capture/$mode.http" || say "# capture $mode failed"
            done
            curl -s -i --raw "http://127.0.0.1:$PORT/v1/models" >"$OUT/llama-capture/models.http" || true
        fi ;;
    esac
    stop
done
say ""
say "# done"
