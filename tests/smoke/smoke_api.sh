#!/bin/bash
# smoke_api.sh — the HTTP API against the CPU engine: /health; /generate (text and token-id prompts, stop strings,
# seeded sampling, logprobs) equal to `flashkernel generate`; its stream's deltas concatenate to the same text;
# /v1/completions and its stream in the OpenAI shapes (checked with jq); /v1/models; /metrics through promtool;
# /tokenize and /detokenize against `flashkernel tokenize` and as a round trip.
. "$(dirname "$0")/lib.sh"

start_server api --max-num-seqs 8

note "health"
expect_healthy "startup"

note "/generate greedy = flashkernel generate"
for prompt in "ROMEO:" "First Citizen:
Before we proceed any further, hear me speak." "To be, or not to be"; do
    reference "$prompt" 24 >"$WORK/ref.json"
    http /generate -d "$(jq -cn --arg p "$prompt" '{prompt: $p, max_tokens: 24}')"
    [ "$STATUS" = 200 ] || fail "/generate: status $STATUS: $BODY"
    printf '%s' "$BODY" >"$WORK/gen.json"
    jq -e --slurpfile ref "$WORK/ref.json" '
        .text == $ref[0].text and .tokens == $ref[0].ids and .finish_reason == "length" and
        .usage.prompt_tokens == ($ref[0].prompt_ids | length) and .usage.completion_tokens == 24 and
        .usage.total_tokens == .usage.prompt_tokens + 24 and (.id | startswith("gen-")) and
        ([.timings.queue_ms, .timings.prefill_ms, .timings.decode_ms, .timings.ttft_ms, .timings.tokens_per_s] |
            all(type == "number" and . >= 0))' "$WORK/gen.json" >/dev/null ||
        fail "/generate differs from flashkernel generate for \"$prompt\": $BODY vs $(cat "$WORK/ref.json")"

    note "stream of \"$prompt\""
    curl -sSN "$BASE/generate" -d "$(jq -cn --arg p "$prompt" '{prompt: $p, max_tokens: 24, stream: true}')" \
        >"$WORK/stream.txt" || fail "stream request failed"
    sed -n 's/^data: //p' "$WORK/stream.txt" >"$WORK/events.txt"
    [ "$(tail -n 1 "$WORK/events.txt")" = "[DONE]" ] || fail "the stream does not end with data: [DONE]"
    head -n -1 "$WORK/events.txt" | jq -es '
        (.[:-1] | length == 24 and all(has("text") and (.token | type) == "number")) and
        (.[-1] | .finish_reason == "length" and .usage.completion_tokens == 24 and (.timings | type) == "object")' \
        >/dev/null || fail "stream events malformed: $(cat "$WORK/stream.txt")"
    head -n -2 "$WORK/events.txt" | jq -j .text >"$WORK/stream_text.txt"
    jq -j .text "$WORK/gen.json" >"$WORK/gen_text.txt"
    cmp -s "$WORK/stream_text.txt" "$WORK/gen_text.txt" || fail "stream deltas do not concatenate to the text"
    [ "$(head -n -2 "$WORK/events.txt" | jq -c .token | jq -sc .)" = "$(jq -c .tokens "$WORK/gen.json")" ] ||
        fail "stream token ids differ from /generate's"
done
# Events are separated by blank lines, as Server-Sent Events require.
grep -c '^$' "$WORK/stream.txt" | grep -qx 26 || fail "stream events are not separated by blank lines"

note "/generate with token ids, a stop string, ignore_eos"
reference "ROMEO:" 40 --stop "ROMEO" >"$WORK/ref.json"
ids=$(jq -c .prompt_ids "$WORK/ref.json")
http /generate -d "{\"prompt\": $ids, \"max_tokens\": 40, \"stop\": \"ROMEO\"}"
[ "$STATUS" = 200 ] || fail "token-id prompt: $STATUS $BODY"
printf '%s' "$BODY" | jq -e --slurpfile ref "$WORK/ref.json" \
    '.text == $ref[0].text and .tokens == $ref[0].ids and .finish_reason == $ref[0].finish_reason' >/dev/null ||
    fail "stop string: $BODY vs $(cat "$WORK/ref.json")"
[ "$(jq -r .finish_reason "$WORK/ref.json")" = stop ] || fail "the reference did not stop at the stop string"
http /generate -d '{"prompt": "ROMEO:", "max_tokens": 5, "ignore_eos": true, "stop": ["xyz", "qqq"]}'
[ "$STATUS" = 200 ] || fail "ignore_eos + stop list: $STATUS $BODY"

note "seeded sampling = flashkernel generate with the same seed"
reference "JULIET:" 20 --temperature 0.9 --top-k 40 --top-p 0.95 --seed 1234 >"$WORK/ref.json"
for i in 1 2; do
    http /generate -d '{"prompt": "JULIET:", "max_tokens": 20, "temperature": 0.9, "top_k": 40, "top_p": 0.95,
        "seed": 1234}'
    printf '%s' "$BODY" | jq -e --slurpfile ref "$WORK/ref.json" '.tokens == $ref[0].ids' >/dev/null ||
        fail "seeded sampling run $i: $BODY vs $(cat "$WORK/ref.json")"
done

note "logprobs"
http /generate -d '{"prompt": "ROMEO:", "max_tokens": 3, "logprobs": 2}'
printf '%s' "$BODY" | jq -e '(.logprobs | length == 3) and
    (.logprobs | all(.token as $t | (.logprob | type) == "number" and .logprob <= 0 and
        (.top_logprobs | length == 2) and .top_logprobs[0].token == $t))' >/dev/null ||
    fail "/generate logprobs: $BODY"
curl -sSN "$BASE/generate" -d '{"prompt": "ROMEO:", "max_tokens": 2, "logprobs": 1, "stream": true}' \
    >"$WORK/stream.txt"
sed -n 's/^data: //p' "$WORK/stream.txt" | head -n 2 | jq -es \
    'all(.top_logprobs | length == 1) and all(.logprob <= 0)' >/dev/null || fail "stream logprobs: $(cat "$WORK/stream.txt")"

note "/v1/completions"
reference "ROMEO:" 12 >"$WORK/ref.json"
http /v1/completions -H 'Content-Type: application/json' \
    -d '{"model": "demo-model", "prompt": "ROMEO:", "max_tokens": 12, "temperature": 0, "logprobs": 2}'
[ "$STATUS" = 200 ] || fail "/v1/completions: $STATUS $BODY"
printf '%s' "$BODY" | jq -e --slurpfile ref "$WORK/ref.json" '
    (.id | startswith("cmpl-")) and .object == "text_completion" and (.created | type) == "number" and
    .model == "demo-model" and (.choices | length == 1) and .choices[0].index == 0 and
    .choices[0].text == $ref[0].text and .choices[0].finish_reason == "length" and
    .usage == {prompt_tokens: ($ref[0].prompt_ids | length), completion_tokens: 12,
               total_tokens: (($ref[0].prompt_ids | length) + 12)} and
    (.choices[0].logprobs | (.tokens | length) == 12 and (.token_logprobs | length) == 12 and
        (.top_logprobs | length) == 12 and (.text_offset | length) == 12 and .text_offset[0] == 0)' >/dev/null ||
    fail "/v1/completions shape: $BODY"
reference "ROMEO:" 4 >"$WORK/ref4.json"
http /v1/completions -d "{\"prompt\": [$(jq -c .prompt_ids "$WORK/ref4.json")], \"max_tokens\": 4, \"temperature\": 0}"
printf '%s' "$BODY" | jq -e --slurpfile ref "$WORK/ref4.json" '.choices[0].text == $ref[0].text' >/dev/null ||
    fail "/v1/completions with token ids: $BODY vs $(cat "$WORK/ref4.json")"

note "/v1/completions stream with include_usage"
curl -sSN "$BASE/v1/completions" -d '{"model": "demo-model", "prompt": "ROMEO:", "max_tokens": 12, "temperature": 0,
    "stream": true, "stream_options": {"include_usage": true}}' >"$WORK/stream.txt"
sed -n 's/^data: //p' "$WORK/stream.txt" >"$WORK/events.txt"
[ "$(tail -n 1 "$WORK/events.txt")" = "[DONE]" ] || fail "completion stream does not end with [DONE]"
head -n -1 "$WORK/events.txt" | jq -es --slurpfile ref "$WORK/ref.json" '
    all(.object == "text_completion" and (.id | startswith("cmpl-")) and .model == "demo-model") and
    (.[:-1] | all(.choices | length == 1) and all(.usage == null)) and
    (.[:-2] | all(.choices[0].finish_reason == null)) and
    .[-2].choices[0].finish_reason == "length" and
    (.[-1] | .choices == [] and .usage.completion_tokens == 12) and
    ([.[:-1][].choices[0].text] | join("")) == $ref[0].text' >/dev/null ||
    fail "completion stream: $(cat "$WORK/stream.txt")"
curl -sSN "$BASE/v1/completions" -d '{"prompt": "ROMEO:", "max_tokens": 3, "stream": true}' >"$WORK/stream.txt"
sed -n 's/^data: //p' "$WORK/stream.txt" | grep -v DONE | jq -es 'all(has("usage") | not)' >/dev/null ||
    fail "usage without include_usage: $(cat "$WORK/stream.txt")"

note "/v1/models"
http /v1/models
printf '%s' "$BODY" | jq -e '.object == "list" and .data[0].id == "demo-model" and .data[0].object == "model" and
    .data[0].max_model_len == 2048' >/dev/null || fail "/v1/models: $BODY"

note "/tokenize, /detokenize"
text="First Citizen:
Before we proceed any further, hear me speak. ¿Qué? 日本語 🙂"
want=$("$FK_CLI" tokenize --model "$FK_SOURCE_ROOT/deploy/demo-model" --text "$text" --json | jq -c .ids)
http /tokenize -d "$(jq -cn --arg t "$text" '{prompt: $t, add_special_tokens: false}')"
[ "$(printf '%s' "$BODY" | jq -c .tokens)" = "$want" ] || fail "/tokenize: $BODY, flashkernel tokenize: $want"
printf '%s' "$BODY" | jq -e '.count == (.tokens | length) and .max_model_len == 2048' >/dev/null || fail "/tokenize: $BODY"
http /detokenize -d "{\"tokens\": $want}"
[ "$(printf '%s' "$BODY" | jq -r .prompt)" = "$text" ] || fail "round trip: $BODY"
http /tokenize -d '{"prompt": "ROMEO:"}'
[ "$(printf '%s' "$BODY" | jq -c .tokens)" = "[0,826,27]" ] || fail "/tokenize with special tokens: $BODY"

note "/metrics through promtool"
curl -sS "$BASE/metrics" >"$WORK/metrics.txt"
for name in vllm:num_requests_running vllm:num_requests_waiting vllm:kv_cache_usage_perc vllm:prompt_tokens_total \
    vllm:generation_tokens_total vllm:num_preemptions_total vllm:prefix_cache_queries_total \
    vllm:prefix_cache_hits_total vllm:time_to_first_token_seconds_bucket vllm:inter_token_latency_seconds_bucket \
    vllm:e2e_request_latency_seconds_bucket vllm:request_queue_time_seconds_bucket; do
    grep -q "^$name{model_name=\"demo-model\"" "$WORK/metrics.txt" || fail "/metrics lacks $name"
done
[ "$(metric 'vllm:generation_tokens_total{model_name="demo-model"}')" -gt 100 ] || fail "generation tokens not counted"
# promtool exits 1 on malformed exposition and 3 on lint problems; vLLM's names contain ':', which its linter
# reports ("metric names should not contain ':'"), as it does for vLLM itself. Every other finding fails.
rc=0
promtool check metrics <"$WORK/metrics.txt" >"$WORK/promtool.txt" 2>&1 || rc=$?
if [ "$rc" != 0 ]; then
    [ "$rc" = 3 ] || fail "promtool check metrics: exit $rc: $(cat "$WORK/promtool.txt")"
    if grep -v "metric names should not contain ':'" "$WORK/promtool.txt" | grep -q .; then
        fail "promtool check metrics: $(cat "$WORK/promtool.txt")"
    fi
fi

expect_healthy "end"
stop_server
echo "smoke_api: ok"
