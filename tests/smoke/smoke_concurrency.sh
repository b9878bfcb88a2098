#!/bin/bash
# smoke_concurrency.sh — many clients at once: 64 concurrent streams give exactly the solo greedy outputs of
# `flashkernel generate`, after which no request runs and no KV block is used; 100 concurrent requests of which 10
# are cancelled (vLLM's test_abort shape: the other 90 are byte-identical); clients killed mid-stream free their
# KV blocks within a second (row 35); clients that leave while queued are never scheduled (row 36).
. "$(dirname "$0")/lib.sh"

PROMPTS=("ROMEO:" "JULIET:" "First Citizen:" "To be, or not to be" "KING RICHARD III:" "O, what a rogue"
    "Now is the winter of our discontent" "HAMLET:")
TOKENS=32

note "solo references from flashkernel generate"
for i in "${!PROMPTS[@]}"; do
    reference "${PROMPTS[$i]}" "$TOKENS" >"$WORK/ref$i.json"
    jq -j .text "$WORK/ref$i.json" >"$WORK/ref$i.txt"
done

used() { metric 'flashkernel_kv_blocks{model_name="demo-model",state="used"}'; }
running() { metric 'vllm:num_requests_running{model_name="demo-model"}'; }
waiting() { metric 'vllm:num_requests_waiting{model_name="demo-model"}'; }

# expect_idle WHAT: no request runs or waits and no KV block is in use (cached blocks may stay).
expect_idle() {
    local i
    for i in $(seq 1 40); do
        [ "$(running)" = 0 ] && [ "$(waiting)" = 0 ] && [ "$(used)" = 0 ] && return 0
        sleep 0.05
    done
    fail "$1: running $(running), waiting $(waiting), KV blocks used $(used)"
}

start_server concurrency --max-num-seqs 64

note "64 concurrent streams = solo runs"
pids=""
for k in $(seq 0 63); do
    i=$((k % ${#PROMPTS[@]}))
    curl -sSN "$BASE/generate" -d "$(jq -cn --arg p "${PROMPTS[$i]}" --argjson n "$TOKENS" \
        '{prompt: $p, max_tokens: $n, stream: true}')" >"$WORK/s$k.txt" &
    pids="$pids $!"
done
wait $pids
for k in $(seq 0 63); do
    i=$((k % ${#PROMPTS[@]}))
    tail -n 2 "$WORK/s$k.txt" | grep -qx 'data: \[DONE\]' || fail "stream $k did not end with [DONE]"
    sse_text "$WORK/s$k.txt" >"$WORK/s$k.out"
    cmp -s "$WORK/s$k.out" "$WORK/ref$i.txt" ||
        fail "stream $k (\"${PROMPTS[$i]}\") differs from the solo run: $(cat "$WORK/s$k.out") vs $(cat "$WORK/ref$i.txt")"
done
expect_idle "after 64 streams"
[ "$(metric 'vllm:request_success_total{model_name="demo-model",finished_reason="length"}')" -ge 64 ] ||
    fail "finished requests not counted"
# 64 requests of 32 tokens: each has its prompt in a step with prefill chunks, then 31 decode steps at least;
# every step issues at least one launch.
steps() { metric "flashkernel_engine_steps_total{model_name=\"demo-model\",kind=\"$1\"}"; }
launches() { metric "flashkernel_device_launches_total{model_name=\"demo-model\",kind=\"$1\"}"; }
[ "$(steps decode)" -ge $((TOKENS - 1)) ] && [ "$(steps prefill)" -ge 1 ] ||
    fail "engine steps not counted: decode $(steps decode), prefill $(steps prefill)"
[ "$(launches decode)" -ge "$(steps decode)" ] && [ "$(launches prefill)" -ge "$(steps prefill)" ] ||
    fail "launches not counted: decode $(launches decode) in $(steps decode) steps, prefill $(launches prefill) in $(steps prefill)"

note "100 concurrent requests, 10 of them cancelled"
pids=""
victims=""
for k in $(seq 0 99); do
    i=$((k % ${#PROMPTS[@]}))
    if [ $((k % 10)) = 3 ]; then # the ones to cancel: long enough to be killed mid-way
        curl -sSN "$BASE/generate" -d "$(jq -cn --arg p "${PROMPTS[$i]}" \
            '{prompt: $p, max_tokens: 1500, ignore_eos: true, stream: true}')" >"$WORK/v$k.txt" 2>/dev/null &
        victims="$victims $!"
    elif [ $((k % 2)) = 0 ]; then
        curl -sS "$BASE/generate" -d "$(jq -cn --arg p "${PROMPTS[$i]}" --argjson n "$TOKENS" \
            '{prompt: $p, max_tokens: $n}')" >"$WORK/c$k.json" &
        pids="$pids $!"
    else
        curl -sSN "$BASE/v1/completions" -d "$(jq -cn --arg p "${PROMPTS[$i]}" --argjson n "$TOKENS" \
            '{prompt: $p, max_tokens: $n, temperature: 0, stream: true}')" >"$WORK/c$k.txt" &
        pids="$pids $!"
    fi
done
for k in $(seq 3 10 99); do # each victim has tokens flowing
    for i in $(seq 1 600); do
        grep -q '"token"' "$WORK/v$k.txt" 2>/dev/null && break
        sleep 0.05
    done
done
kill $victims 2>/dev/null || true
wait $pids
wait $victims 2>/dev/null || true
for k in $(seq 0 99); do
    i=$((k % ${#PROMPTS[@]}))
    [ $((k % 10)) = 3 ] && continue
    if [ $((k % 2)) = 0 ]; then
        jq -j .text "$WORK/c$k.json" >"$WORK/c$k.out"
    else
        sed -n 's/^data: //p' "$WORK/c$k.txt" | grep -v '^\[DONE\]$' | jq -j '.choices[0].text // empty' >"$WORK/c$k.out"
    fi
    cmp -s "$WORK/c$k.out" "$WORK/ref$i.txt" || fail "request $k differs from the solo run: $(cat "$WORK/c$k.out")"
done
expect_idle "after the cancellations"
n=$(grep -c 'finish cancel' "$LOG" || true)
[ "$n" = 10 ] || fail "$n requests were cancelled, not 10"

note "row 35: clients killed mid-stream free their blocks within a second"
pids=""
for i in 0 1 2 3; do
    curl -sSN "$BASE/generate" -d "$(jq -cn --arg p "${PROMPTS[$i]}" \
        '{prompt: $p, max_tokens: 1500, ignore_eos: true, stream: true}')" >"$WORK/k$i.txt" &
    pids="$pids $!"
done
for i in $(seq 1 100); do
    [ "$(running)" = 4 ] && [ "$(used)" -ge 8 ] && break
    sleep 0.05
done
[ "$(running)" = 4 ] || fail "row 35: the 4 streams are not running"
start=$(now)
kill -KILL $pids
wait $pids 2>/dev/null || true
expect_idle "row 35"
t=$(elapsed "$start")
less "$t" 1 || fail "row 35: the blocks of killed clients came back after $t s"
echo "blocks back after $t s"
expect_healthy "after row 35"
stop_server

# The next part's reference first: while it runs, the long request below would be using up its 1,500 tokens.
reference "HAMLET:" 8 >"$WORK/hamlet.json"
jq -j .text "$WORK/hamlet.json" >"$WORK/hamlet.txt"

note "row 36: clients that leave while queued are never scheduled"
start_server queued --max-num-seqs 1 --sse-ping-interval 0.5
curl -sSN "$BASE/generate" -d '{"prompt":"ROMEO:","max_tokens":1500,"ignore_eos":true,"stream":true}' \
    >"$WORK/long.txt" &
long=$!
for i in $(seq 1 100); do
    [ "$(running)" = 1 ] && break
    sleep 0.05
done
queries=$(metric 'vllm:prefix_cache_queries_total{model_name="demo-model"}')
curl -sS "$BASE/generate" -d '{"prompt":"JULIET:","max_tokens":8}' >/dev/null 2>&1 &
q1=$!
curl -sSN "$BASE/generate" -d '{"prompt":"HAMLET:","max_tokens":8,"stream":true}' >/dev/null 2>&1 &
q2=$!
for i in $(seq 1 100); do
    [ "$(waiting)" = 2 ] && break
    sleep 0.05
done
[ "$(waiting)" = 2 ] || fail "row 36: the two requests are not waiting"
kill -KILL $q1 $q2
wait $q1 $q2 2>/dev/null || true
for i in $(seq 1 40); do
    [ "$(waiting)" = 0 ] && break
    sleep 0.05
done
[ "$(waiting)" = 0 ] || fail "row 36: the queue still holds $(waiting) requests"
[ "$(running)" = 1 ] || fail "row 36: the long request stopped"
# Admission looks prompts up in the prefix cache: no lookup means they were never scheduled.
[ "$(metric 'vllm:prefix_cache_queries_total{model_name="demo-model"}')" = "$queries" ] ||
    fail "row 36: a cancelled request was scheduled"
[ "$(grep -c ' 0 completion tokens .* finish cancel' "$LOG")" = 2 ] || fail "row 36: cancellations not logged"

note "a queued stream gets keep-alive comments, then its tokens"
curl -sSN "$BASE/generate" -d '{"prompt":"HAMLET:","max_tokens":8,"stream":true}' >"$WORK/q3.txt" &
q3=$!
sleep 1.5
grep -qx ': ping' "$WORK/q3.txt" || fail "no keep-alive comment on a waiting stream: $(cat "$WORK/q3.txt")"
kill "$long" 2>/dev/null || true # on a fast machine it may have finished its 1,500 tokens already
wait "$q3"
sse_text "$WORK/q3.txt" | cmp -s - "$WORK/hamlet.txt" || fail "the queued stream: $(cat "$WORK/q3.txt")"
wait "$long" 2>/dev/null || true
expect_idle "after row 36"
stop_server
echo "smoke_concurrency: ok"
