#!/bin/bash
# loadtest_server.sh — flashkernel-loadtest against a real flashkernel-server (CPU, demo model): concurrency 1 and 8,
# both endpoints, streamed and whole, random token-id prompts, text prompts from a file, an open loop, SIGINT. Every
# request succeeds, and the token counts the tool reports equal what the server itself counted (/metrics deltas of
# vllm:generation_tokens_total and vllm:prompt_tokens_total), what was asked for (--prompt-len ids, --max-tokens
# with ignore_eos), and the vocabulary it found equals config.json's. Percentiles are recomputed from the per-request
# records by their definition.
. "$(dirname "$0")/../smoke/lib.sh"
: "${FK_LOADTEST:?}"
PY=${FK_PYTHON:-python3}
SEED=${FK_TEST_SEED:-$RANDOM$RANDOM}
echo "random seed: FK_TEST_SEED=$SEED"

gen_tokens() { metric 'vllm:generation_tokens_total{model_name="demo-model"}'; }
prompt_tokens() { metric 'vllm:prompt_tokens_total{model_name="demo-model"}'; }

# lt ARGS...: a run against the server (stdout $WORK/out, stderr $WORK/err, JSON $WORK/run.json); sets RC, and
# GEN and PROMPT: the server's own counts of generated and prompt tokens during the run.
lt() {
    local g0 p0
    g0=$(gen_tokens)
    p0=$(prompt_tokens)
    RC=0
    "$FK_LOADTEST" --url "$BASE" --seed "$SEED" --json "$WORK/run.json" "$@" >"$WORK/out" 2>"$WORK/err" || RC=$?
    GEN=$(($(gen_tokens) - g0))
    PROMPT=$(($(prompt_tokens) - p0))
}

# check PYTHON_EXPR: true with d = the run's JSON, GEN and PROMPT the server's counts.
check() {
    GEN=$GEN PROMPT=$PROMPT "$PY" - "$WORK/run.json" "$1" <<'PYEOF' || fail "check failed: $1 ($(cat "$WORK/out"))"
import json, math, os, sys
d = json.load(open(sys.argv[1]))
GEN, PROMPT = int(os.environ["GEN"]), int(os.environ["PROMPT"])

def nearest_rank(values, p):
    """The p-th percentile by definition: the smallest value with at least p% of the values at or below it."""
    v = sorted(values)
    return next(x for x in v if 100 * sum(y <= x for y in v) >= p * len(v))

def close(a, b):
    return abs(a - b) <= 1e-3 * max(1.0, abs(b))

if not eval(sys.argv[2]):
    print("false: %s" % sys.argv[2], file=sys.stderr)
    for l in d["levels"]:
        print({k: v for k, v in l.items() if k != "results"}, file=sys.stderr)
    sys.exit(1)
PYEOF
}

# The checks every successful run gets: all requests ok, token sums equal the server's counters and the level
# sums, throughput = tokens / span, percentiles recomputed from the records.
check_run() {
    local want=$1 # requests per level
    check "all(l['ok'] == $want and l['failed'] == 0 and l['requests'] == $want for l in d['levels'])"
    check 'sum(l["output_tokens"] for l in d["levels"]) == GEN and sum(l["prompt_tokens"] for l in d["levels"]) == PROMPT'
    check 'all(l["output_tokens"] == sum(r["output_tokens"] for r in l["results"]) for l in d["levels"])'
    check 'all(close(l["output_tok_per_s"], l["output_tokens"] / l["duration_s"]) for l in d["levels"])'
    check 'all(close(l["e2e_ms"][q], nearest_rank([r["e2e_ms"] for r in l["results"]], int(q[1:])))
               for l in d["levels"] for q in ("p50", "p90", "p99"))'
}

start_server loadtest
VOCAB=$(jq .vocab_size "$FK_SOURCE_ROOT/deploy/demo-model/config.json")

for ep in generate completions; do
    for stream in --stream ""; do
        note "$ep ${stream:-(whole responses)}: concurrency 1 and 8, random prompts of 16 ids, 12 tokens each"
        lt --endpoint "$ep" $stream --concurrency 1,8 --requests 12 --prompt-len 16 --max-tokens 12 --ignore-eos
        [ "$RC" = 0 ] || fail "exit status $RC: $(cat "$WORK/err")"
        check_run 12
        check "d['model'] == 'demo-model' and d['params']['vocab'] == $VOCAB and [l['concurrency'] for l in d['levels']] == [1, 8]"
        check 'GEN == 2 * 12 * 12 and PROMPT == 2 * 12 * 16'
        check 'all(r["output_tokens"] == 12 and r["prompt_tokens"] == 16 for l in d["levels"] for r in l["results"])'
        check 'all(l["finish_reasons"] == {"length": 12} for l in d["levels"])'
        if [ -n "$stream" ]; then
            check 'all(r["token_events"] == 12 and 0 < r["ttft_ms"] < r["e2e_ms"] for l in d["levels"] for r in l["results"])'
            check 'all(l["ttft_ms"]["measured"] and l["itl_ms"]["n"] == 12 * 11 for l in d["levels"])'
            check 'all(close(l["ttft_ms"][q], nearest_rank([r["ttft_ms"] for r in l["results"]], int(q[1:])))
                       for l in d["levels"] for q in ("p50", "p90", "p99"))'
        else
            check 'all(not l["ttft_ms"]["measured"] and l["ttft_ms"]["p50"] is None for l in d["levels"])'
            grep -q "TTFT and ITL not measured" "$WORK/out" || fail "no note that TTFT is not measured"
        fi
        grep -Eq '^ +8 +12 +0 ' "$WORK/out" || fail "no table row for concurrency 8: $(cat "$WORK/out")"
    done
done

note "text prompts from a file, stopping at EOS (no --ignore-eos): tokens as the server counted them"
printf 'ROMEO:\nJULIET:\n"First Citizen:\\nBefore we proceed"\n[0, 826, 270]\n' >"$WORK/prompts.txt"
lt --prompts "$WORK/prompts.txt" --concurrency 8 --requests 16 --max-tokens 24 --stream
[ "$RC" = 0 ] || fail "exit status $RC: $(cat "$WORK/err")"
check_run 16
check 'd["params"]["prompts_file"] and all(r["token_events"] == r["output_tokens"] for r in d["levels"][0]["results"])'

# 16 in flight, so that the cap does not bind: arrivals beyond it wait for a client, and those still waiting at the
# end are not sent. With 4, a sanitizer build's ~300 ms requests sent only 22 of the ~60 arrivals (28 Nov 2026).
note "open loop: Poisson arrivals at 40/s for 1.5 s, at most 16 in flight"
lt --rate 40 --duration 1.5 --concurrency 16 --prompt-len 8 --max-tokens 4 --ignore-eos --endpoint completions
[ "$RC" = 0 ] || fail "exit status $RC: $(cat "$WORK/err")"
check 'd["params"]["loop"] == "open" and 25 <= d["levels"][0]["requests"] <= 100 and GEN == 4 * d["levels"][0]["ok"]'
check_run "$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["levels"][0]["requests"])' "$WORK/run.json")"

note "--cancel-rate 0.5: the server ends the abandoned streams (abort) and is left idle"
abort() { metric 'vllm:request_success_total{model_name="demo-model",finished_reason="abort"}'; }
length() { metric 'vllm:request_success_total{model_name="demo-model",finished_reason="length"}'; }
a0=$(abort)
n0=$(length)
lt --stream --cancel-rate 0.5 --concurrency 4 --requests 24 --prompt-len 8 --max-tokens 300 --ignore-eos
[ "$RC" = 0 ] || fail "cancel-rate: exit status $RC: $(cat "$WORK/err")"
ABORTS=$(($(abort) - a0))
LENGTHS=$(($(length) - n0))
# A stream cut near its end may finish before the server sees the hang-up: it then counts as length there.
check 'd["levels"][0]["ok"] + d["levels"][0]["cancelled"] == 24 and d["levels"][0]["failed"] == 0'
check '2 <= d["levels"][0]["cancelled"] <= 22' # binomial(24, 0.5): outside with probability 4e-6
[ $((ABORTS + LENGTHS)) = 24 ] && [ "$ABORTS" -ge 1 ] && [ "$ABORTS" -le "$(jq '.levels[0].cancelled' "$WORK/run.json")" ] ||
    fail "cancel-rate: the server counted $ABORTS aborts and $LENGTHS complete for $(jq -c '.levels[0] | [.ok, .cancelled]' "$WORK/run.json")"
for i in $(seq 1 40); do
    [ "$(metric 'vllm:num_requests_running{model_name="demo-model"}')" = 0 ] &&
        [ "$(metric 'flashkernel_kv_blocks{model_name="demo-model",state="used"}')" = 0 ] && break
    sleep 0.05
done
[ "$(metric 'flashkernel_kv_blocks{model_name="demo-model",state="used"}')" = 0 ] || fail "KV blocks held after cancels"

note "SIGINT mid-run: partial results written, exit status 130, the server is left idle"
"$FK_LOADTEST" --url "$BASE" --concurrency 4 --requests 100000 --prompt-len 8 --max-tokens 64 --ignore-eos --stream \
    --json "$WORK/run.json" >"$WORK/out" 2>"$WORK/err" &
pid=$!
sleep 2
kill -INT "$pid"
RC=0
wait "$pid" || RC=$?
[ "$RC" = 130 ] || fail "SIGINT: exit status $RC, want 130"
GEN=0 PROMPT=0 check 'd["interrupted"] and 0 < d["levels"][0]["requests"] < 100000 and d["levels"][0]["failed"] == 0'
for i in $(seq 1 40); do
    [ "$(metric 'vllm:num_requests_running{model_name="demo-model"}')" = 0 ] && break
    sleep 0.05
done
[ "$(metric 'vllm:num_requests_running{model_name="demo-model"}')" = 0 ] || fail "requests still running after SIGINT"

stop_server
echo "PASS"
