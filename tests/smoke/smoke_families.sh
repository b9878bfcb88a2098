#!/bin/bash
# smoke_families.sh — the server serving a Qwen2 model as transformers 5 saved it (tests/fixtures/models/tiny-qwen2,
# with a Qwen2-style tokenizer): /generate and /v1/completions give transformers' own greedy tokens for the
# reference's token-id prompts, and for text prompts what `flashkernel generate` gives with the same directory.
. "$(dirname "$0")/lib.sh"

MODEL=$FK_SOURCE_ROOT/tests/fixtures/models/tiny-qwen2
REF=$MODEL/reference.json
start_server families --model "$MODEL"

note "/v1/models"
http /v1/models
printf '%s' "$BODY" | jq -e '.data[0].id == "tiny-qwen2" and .data[0].max_model_len == 32768' >/dev/null ||
    fail "/v1/models: $BODY"

note "/generate with token ids = transformers' greedy tokens"
for c in 1 2 3; do
    ids=$(jq -c ".cases[$c].prompt_ids" "$REF")
    want=$(jq -c ".cases[$c].greedy_24" "$REF")
    http /generate -d "{\"prompt\": $ids, \"max_tokens\": 24, \"ignore_eos\": true}"
    [ "$STATUS" = 200 ] || fail "/generate: status $STATUS: $BODY"
    [ "$(printf '%s' "$BODY" | jq -c .tokens)" = "$want" ] ||
        fail "/generate of case $c: $(printf '%s' "$BODY" | jq -c .tokens), transformers gives $want"
    text=$(printf '%s' "$BODY" | jq .text)

    note "/v1/completions with the same token ids"
    http /v1/completions -d "{\"prompt\": $ids, \"max_tokens\": 24, \"temperature\": 0, \"ignore_eos\": true}"
    [ "$STATUS" = 200 ] || fail "/v1/completions: status $STATUS: $BODY"
    printf '%s' "$BODY" | jq -e --argjson text "$text" --argjson n "$(jq ".cases[$c].prompt_ids | length" "$REF")" '
        .model == "tiny-qwen2" and .choices[0].text == $text and .choices[0].finish_reason == "length" and
        .usage == {prompt_tokens: $n, completion_tokens: 24, total_tokens: ($n + 24)}' >/dev/null ||
        fail "/v1/completions of case $c: $BODY; /generate gave the text $text"
done

note "text prompts = flashkernel generate"
for prompt in "ROMEO:" "To be, or not to be, that is the question"; do
    reference "$prompt" 16 --model "$MODEL" >"$WORK/ref.json"
    http /generate -d "$(jq -cn --arg p "$prompt" '{prompt: $p, max_tokens: 16}')"
    printf '%s' "$BODY" | jq -e --slurpfile ref "$WORK/ref.json" \
        '.text == $ref[0].text and .tokens == $ref[0].ids and .finish_reason == $ref[0].finish_reason' >/dev/null ||
        fail "/generate \"$prompt\": $BODY vs $(cat "$WORK/ref.json")"
    curl -sSN "$BASE/v1/completions" -d "$(jq -cn --arg p "$prompt" \
        '{prompt: $p, max_tokens: 16, temperature: 0, stream: true}')" >"$WORK/stream.txt"
    sed -n 's/^data: //p' "$WORK/stream.txt" | grep -v '^\[DONE\]$' | jq -rj '.choices[0].text // empty' \
        >"$WORK/streamed.txt"
    jq -j .text "$WORK/ref.json" | cmp -s - "$WORK/streamed.txt" ||
        fail "/v1/completions stream of \"$prompt\": $(cat "$WORK/stream.txt")"
done

expect_healthy "after the requests"
stop_server
echo "smoke_families: ok"
