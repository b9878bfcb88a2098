#!/bin/bash
# run-sched-sweep.sh — flashkernel-server's --max-num-batched-tokens (the tokens one engine step computes, prefill
# chunks included) against throughput, TTFT and ITL, to choose its default from measurements (issue 14). For each
# value T the server is started once (--max-num-batched-tokens T --max-model-len 4096) and driven by
# flashkernel-loadtest as loadtest/run-peer-benchmark.sh drives it (/v1/completions, closed loop, streamed,
# ignore_eos, greedy, after an unrecorded warm-up) at:
#   256 clients, 128 prompt / 128 output tokens, 512 requests
#    64 clients, 128 / 128, 128 requests
#    64 clients, 1,024 / 256, 128 requests
# each load with its own --seed (10, 11, 12; the warm-up's is 2): the random prompts of one seed begin alike
# whatever their length, and the prefix cache would serve a load the prompts of an earlier one.
# Writes into OUTDIR: sweep-T<T>-c<clients>-p<prompt>-o<output>.json (one level each), server-T<T>.log, and
# sweep.txt: the device, the commands and one table (T, shape, clients, output tokens/s, TTFT and ITL p50/p99 in
# ms), which is also printed last.
#
# usage: loadtest/run-sched-sweep.sh SERVER LOADTEST MODEL_DIR OUTDIR
# FK_SWEEP_TOKENS (default "512 1024 2048 4096 8192") the values of T; FK_SWEEP_SHAPES (default
# "256:512:128:128 64:128:128:128 64:128:1024:256", clients:requests:prompt:output each) the loads;
# FK_BENCH_DEVICE=cpu and FK_MAX_MODEL_LEN (default 4096) only to try the script on a CPU with the demo model.
set -euo pipefail
if [ $# -ne 4 ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
fi
SERVER=$1 LOADTEST=$2 MODEL=$3 OUT=$4
TOKENS=${FK_SWEEP_TOKENS:-512 1024 2048 4096 8192}
SHAPES=${FK_SWEEP_SHAPES:-256:512:128:128 64:128:128:128 64:128:1024:256}
mkdir -p "$OUT"
LOG="$OUT/sweep.txt"
: >"$LOG"
PID=""
trap '[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; true' EXIT
say() { echo "$*" | tee -a "$LOG"; }
# The device's copy of the tree may carry no .git or a stale one: the commit the caller wrote in .peers/commit first.
here=$(dirname "$0")
commit=$(cat "$here/../.peers/commit" 2>/dev/null || git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
say "# --max-num-batched-tokens sweep, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "# commit: $commit"
say "# device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo unknown)"
say "# host: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"
say "# model: $MODEL; T: $TOKENS; loads (clients:requests:prompt:output): $SHAPES"

# shellcheck source=loadtest/health.sh
. "$here/health.sh"

# start T: flashkernel-server with --max-num-batched-tokens T on port 18080; waits (at most 300 s) for /health.
# False (and noted) when it exits or does not become healthy: the sweep goes on with the next T.
PORT=18080
start() {
    local t=$1 log="$OUT/server-T$1.log" cmd _
    cmd=("$SERVER" --device "${FK_BENCH_DEVICE:-cuda}" --model "$MODEL" --port "$PORT" --max-connections-per-ip 1024
        --max-model-len "${FK_MAX_MODEL_LEN:-4096}" --max-num-batched-tokens "$t")
    say ""
    say "# server: ${cmd[*]}"
    "${cmd[@]}" >"$log" 2>&1 &
    PID=$!
    for _ in $(seq 1 3000); do
        health $PORT && return 0
        if ! kill -0 "$PID" 2>/dev/null; then
            say "# warning: the server exited at T=$t (see server-T$t.log): $(grep -m 1 -i error "$log")"
            wait "$PID" 2>/dev/null || true
            PID=""
            return 1
        fi
        sleep 0.1
    done
    say "# warning: the server did not become healthy in 300 s at T=$t"
    stop
    return 1
}
stop() {
    kill -TERM "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
    PID=""
}

# lt FILE ARGS...: one load-tester run into OUTDIR/FILE; its table goes to stdout, the command to sweep.txt
lt() {
    local file=$1 rc=0
    shift
    local cmd=("$LOADTEST" --url "http://127.0.0.1:$PORT" --endpoint completions --ignore-eos --stream --timeout 300
        --json "$OUT/$file" "$@")
    say "\$ ${cmd[*]}"
    "${cmd[@]}" 2>/dev/null || rc=$?
    [ "$rc" = 0 ] || say "# warning: flashkernel-loadtest exited with status $rc (1: some requests failed)"
}

warm_up() { # CONCURRENCY...: not recorded (graph captures, allocator growth)
    local c
    for c in "$@"; do
        "$LOADTEST" --url "http://127.0.0.1:$PORT" --endpoint completions --concurrency "$c" --requests "$c" \
            --prompt-len 128 --max-tokens 16 --ignore-eos --stream --seed 2 --timeout 300 >/dev/null 2>&1 ||
            say "# warning: the warm-up at $c failed"
    done
}

most=1 # the most clients of any load: the warm-up's last level
for s in $SHAPES; do
    c=${s%%:*}
    [ "$c" -gt "$most" ] && most=$c
done
files=()
for t in $TOKENS; do
    for s in $SHAPES; do # a T whose server does not start still gets its rows (no result)
        IFS=: read -r c n p o <<<"$s"
        rm -f "$OUT/sweep-T$t-c$c-p$p-o$o.json"
        files+=("$OUT/sweep-T$t-c$c-p$p-o$o.json")
    done
    start "$t" || continue
    warm_up 1 16 "$most"
    k=10
    for s in $SHAPES; do
        IFS=: read -r c n p o <<<"$s"
        lt "sweep-T$t-c$c-p$p-o$o.json" --seed $k --concurrency "$c" --requests "$n" --prompt-len "$p" --max-tokens "$o"
        k=$((k + 1))
    done
    stop
done

# The table: rows grouped by load (in FK_SWEEP_SHAPES's order), T ascending within each.
say ""
python3 - "${files[@]}" <<'EOF' | tee -a "$LOG"
import json, re, sys

rows = []
for path in sys.argv[1:]:
    t, c, p, o = map(int, re.search(r"sweep-T(\d+)-c(\d+)-p(\d+)-o(\d+)\.json$", path).groups())
    try:
        with open(path) as f:
            lv = json.load(f)["levels"][0]
    except (OSError, ValueError, KeyError, IndexError) as e:
        lv = {"error": "no JSON" if isinstance(e, OSError) else "unreadable JSON"}
    rows.append(((p, o, c), t, lv))
order = list(dict.fromkeys(k for k, _, _ in rows))
rows.sort(key=lambda r: (order.index(r[0]), r[1]))

def ms(d, k, decimals):
    v = (d or {}).get(k)
    return "n/a" if v is None else "%.*f" % (decimals, v)

print("# output tokens/s and latencies (ms, nearest-rank) per --max-num-batched-tokens T; closed loop, streamed")
print("%6s %-10s %7s %5s %6s %10s %9s %9s %8s %8s" % ("T", "shape", "clients", "reqs", "failed", "out tok/s",
                                                      "TTFT p50", "TTFT p99", "ITL p50", "ITL p99"))
for (p, o, c), t, lv in rows:
    shape = "p%d-o%d" % (p, o)
    if "error" in lv:
        print("%6d %-10s %7d  no result (%s)" % (t, shape, c, lv["error"]))
        continue
    print("%6d %-10s %7d %5d %6d %10.1f %9s %9s %8s %8s" % (
        t, shape, c, lv["requests"], lv["failed"], lv["output_tok_per_s"], ms(lv["ttft_ms"], "p50", 1),
        ms(lv["ttft_ms"], "p99", 1), ms(lv["itl_ms"], "p50", 2), ms(lv["itl_ms"], "p99", 2)))
EOF
say ""
say "# done"
