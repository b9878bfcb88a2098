#!/bin/bash
# run-benchmark.sh — the end-to-end serving benchmark (docs/BENCHMARKS.md), on a GPU host, in one run. For a
# Llama-3.2-1B-shaped and a GPT-2-124M-shaped model (f16, random weights, from `flashkernel make-model`), it starts
# flashkernel-server on the GPU and sweeps flashkernel-loadtest, streamed with ignore_eos so that every request makes
# exactly its output tokens and TTFT is measured:
#   concurrency 1, 4, 16, 64, 256 at 128 prompt / 128 output tokens, max(16, 2 x concurrency) requests per level;
#   concurrency 1 and 16 at 1024 / 256 (GPT-2's context is 1024 tokens: 768 / 256 for it), max(8, 2 x concurrency).
# Writes into OUTDIR:
#   <model>-p<P>-o<M>.json   the load tester's results (draw them with loadtest/plot.py)
#   benchmark.txt            the tables, the device and the commands
#   server-<model>.log       the server logs
#   models/<model>/          the model directories (kept: loadtest/hf_baseline.py runs on them; a re-run reuses them)
#
# usage: loadtest/run-benchmark.sh SERVER LOADTEST CLI OUTDIR
#   e.g. loadtest/run-benchmark.sh build/server/flashkernel-server build/loadtest/flashkernel-loadtest \
#            build/tools/flashkernel /tmp/fk-bench
# Needs bash and the three binaries only (no curl, jq or Python). Expected to take about two minutes on an H100
# (an estimate, not yet measured: writing the models takes seconds; the concurrency-1 levels take the most).
# FK_BENCH_DEVICE=cpu (default cuda) runs the same script on the CPU: only to try the script itself.
set -euo pipefail

if [ $# -ne 4 ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
fi
SERVER=$1 LOADTEST=$2 CLI=$3 OUT=$4
for b in "$SERVER" "$LOADTEST" "$CLI"; do
    [ -x "$b" ] || { echo "run-benchmark: $b is not an executable" >&2; exit 2; }
done
mkdir -p "$OUT/models"
LOG="$OUT/benchmark.txt"
SERVER_PID=""
trap '[ -n "$SERVER_PID" ] && kill -KILL "$SERVER_PID" 2>/dev/null; true' EXIT
T0=$SECONDS

say() { echo "$*" | tee -a "$LOG"; }
: >"$LOG"
say "# flashkernel serving benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "# commit: $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown)"
say "# device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo unknown)"
say "# host: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"

# shellcheck source=loadtest/health.sh
. "$(dirname "$0")/health.sh"

# start_server DIR NAME: starts the server on the GPU on a free port, waits for /health (at most 300 s); sets PORT.
start_server() {
    local dir=$1 name=$2 log="$OUT/server-$2.log" i
    # --max-connections-per-ip: 256 clients reconnect after every request, so a few more than 256 can be open
    # for a moment while the server has not yet seen the old ones close.
    "$SERVER" --device "${FK_BENCH_DEVICE:-cuda}" --model "$dir" --port 0 --max-connections-per-ip 1024 >"$log" 2>&1 &
    SERVER_PID=$!
    PORT=""
    for i in $(seq 1 3000); do
        PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -n 1)
        [ -n "$PORT" ] && health "$PORT" && break
        kill -0 "$SERVER_PID" 2>/dev/null || { echo "run-benchmark: the server exited:" >&2; tail -n 20 "$log" >&2; exit 1; }
        sleep 0.1
    done
    health "$PORT" || { echo "run-benchmark: the server did not become healthy in 300 s" >&2; exit 1; }
    say "# $name: $(grep -m 1 'served as' "$log" | sed 's/^[0-9-]* [0-9:.]* //')"
}

stop_server() {
    kill -TERM "$SERVER_PID"
    local rc=0
    wait "$SERVER_PID" || rc=$?
    SERVER_PID=""
    [ "$rc" = 0 ] || say "# warning: the server exited with status $rc after SIGTERM"
}

# sweep NAME PROMPT OUTPUT CONCURRENCY REQUESTS: one load-tester run (all levels), JSON in OUTDIR.
sweep() {
    local name=$1 p=$2 m=$3 conc=$4 req=$5 rc=0
    local cmd=("$LOADTEST" --url "http://127.0.0.1:$PORT" --concurrency "$conc" --requests "$req" --prompt-len "$p"
        --max-tokens "$m" --ignore-eos --stream --seed 1 --timeout 120 --json "$OUT/$name-p$p-o$m.json")
    say ""
    say "\$ ${cmd[*]}"
    "${cmd[@]}" | tee -a "$LOG" || rc=${PIPESTATUS[0]} # the table into the log; progress (stderr) on the terminal
    [ "$rc" = 0 ] || say "# warning: flashkernel-loadtest exited with status $rc (1: some requests failed)"
}

for spec in "llama llama-3.2-1b 1024" "gpt2 gpt2-124m 768"; do
    read -r arch preset long_prompt <<<"$spec"
    dir="$OUT/models/$preset"
    if [ ! -f "$dir/.complete" ]; then
        t=$SECONDS
        "$CLI" make-model --arch "$arch" --preset "$preset" --dtype f16 --out "$dir"
        touch "$dir/.complete"
        say "# made $dir in $((SECONDS - t)) s: $CLI make-model --arch $arch --preset $preset --dtype f16 --out $dir"
    fi
    start_server "$dir" "$preset"
    # warm-up, not recorded: first-use costs (CUDA graph captures per batch shape, allocator growth) stay out of
    # the first levels' figures
    "$LOADTEST" --url "http://127.0.0.1:$PORT" --concurrency 1,16,256 --requests 2,16,256 --prompt-len 128 \
        --max-tokens 32 --ignore-eos --stream --seed 2 --timeout 120 >/dev/null || say "# warning: the warm-up failed"
    sweep "$preset" 128 128 1,4,16,64,256 16,16,32,128,512
    sweep "$preset" "$long_prompt" 256 1,16 8,32
    stop_server
done
say ""
say "# done in $((SECONDS - T0)) s"
