#!/bin/bash
# smoke_errors.sh — the bad-input rows of RELIABILITY.md that a client can send in one request (rows 1-5, 8-31 and
# 38, on /generate and the other POST routes): each gets its status and message (RELIABILITY's wording), /health
# stays 200 after every one, and a normal request afterwards succeeds. Row 31 runs on a second server with a key.
. "$(dirname "$0")/lib.sh"

start_server errors --max-num-seqs 4

# ids N: N token ids (all 5), comma-separated.
ids() { yes 5 | head -n "$1" | paste -sd, -; }

# row WHAT STATUS MESSAGE BODY [PATH]: POST BODY (a string) and check the answer, then /health.
row() {
    local what=$1 status=$2 message=$3 body=$4 path=${5:-/generate}
    printf '%s' "$body" >"$WORK/req"
    expect_error "row $what" "$status" "$message" "$path" --data-binary @"$WORK/req"
    expect_healthy "after row $what"
}

note "rows 1-5: not a JSON object"
row 1 400 "invalid JSON at byte 0" 'hello'
row 2 400 "invalid JSON" '{"prompt":"a"'
row 3 400 "trailing data after JSON value" '{"prompt":"a"}xyz'
for body in '[]' '"x"' '42' 'null'; do
    row "4 ($body)" 400 "body must be a JSON object" "$body"
done
head -c 100000 /dev/zero | tr '\0' '[' >"$WORK/deep"
expect_error "row 5" 400 "nesting too deep" /generate --data-binary @"$WORK/deep"
expect_healthy "after row 5"
row "5 (objects)" 400 "nesting too deep" "$(printf '{"a":%.0s' $(seq 1 100))"

note "row 8: content types"
expect_error "row 8" 415 "Content-Type must be application/json" /generate -F 'prompt=hello'
expect_healthy "after row 8"
for type in 'Content-Type: application/x-www-form-urlencoded' 'Content-Type:' \
    'Content-Type: application/json; charset=utf-8'; do
    http /generate -H "$type" -d '{"prompt": "a", "max_tokens": 2}'
    [ "$STATUS" = 200 ] || fail "row 8: a JSON body sent with \"$type\" got $STATUS $BODY"
done

note "rows 9-12: strings and keys"
row 9 400 "prompt is not valid UTF-8" "$(printf '{"prompt":"ab\xff\xfe"}')"
row "9 (overlong)" 400 "prompt is not valid UTF-8" "$(printf '{"prompt":"\xc0\xaf"}')"
row "9 (encoded surrogate)" 400 "prompt is not valid UTF-8" "$(printf '{"prompt":"\xed\xa0\x80"}')"
row "9 (stop)" 400 "stop is not valid UTF-8" "$(printf '{"prompt":"a","stop":["\xff"]}')"
row 10 400 "NUL character not allowed" '{"prompt":"a\u0000b"}'
printf '{"prompt":"a\0b"}' >"$WORK/nul"
expect_error "row 10 (raw NUL byte)" 400 "NUL character not allowed" /generate --data-binary @"$WORK/nul"
row 11 400 "invalid JSON" '{"prompt":"\ud800"}'
row "11 (low)" 400 "invalid JSON" '{"prompt":"\udc00x"}'
row 12 400 'duplicate key "max_tokens"' '{"prompt":"a","max_tokens":1,"max_tokens":2}'
row "12 (escaped)" 400 'duplicate key "prompt"' '{"prompt":"a","\u0070rompt":"b"}'

note "rows 13-16: the prompt"
for body in '{}' '{"prompt":null}' '{"prompt":5}' '{"prompt":{}}' '{"prompt":true}' '{"prompt":[1,"a"]}'; do
    row "13 ($body)" 400 "prompt is required and must be a string" "$body"
done
row 14 400 "prompt cannot be empty" '{"prompt":""}'
row "14 (ids)" 400 "prompt cannot be empty" '{"prompt":[]}'
row 15 400 "prompt has 2100 tokens; maximum context length is 2048" \
    "{\"prompt\":[$(ids 2100)]}"
long=$(printf 'hello %.0s' $(seq 1 3000))
row "15 (text)" 400 "maximum context length is 2048" "{\"prompt\":\"$long\"}"
row 16 400 "requested 1000 + 1049 tokens exceeds context length 2048" \
    "{\"prompt\":[$(ids 1000)],\"max_tokens\":1049}"
# Without max_tokens the default (128) shrinks to what the context has room for.
http /generate -d "{\"prompt\":[$(ids 2040)]}"
[ "$STATUS" = 200 ] && [ "$(printf '%s' "$BODY" | jq .usage.completion_tokens)" -le 8 ] ||
    fail "row 16: default max_tokens not clamped: $STATUS $BODY"

note "rows 17-19: max_tokens"
row "17 (0)" 400 "max_tokens must be at least 1, got 0" '{"prompt":"a","max_tokens":0}'
row "17 (-1)" 400 "max_tokens must be at least 1, got -1" '{"prompt":"a","max_tokens":-1}'
for v in 2.5 '"10"' true '[1]'; do
    row "18 ($v)" 400 "max_tokens must be an integer" "{\"prompt\":\"a\",\"max_tokens\":$v}"
done
row "19 (1e30)" 400 "max_tokens must be <= 2048" '{"prompt":"a","max_tokens":1e30}'
row "19 (1e999)" 400 "max_tokens must be <= 2048" '{"prompt":"a","max_tokens":1e999}'
row "19 (2^31)" 400 "max_tokens must be <= 2048" '{"prompt":"a","max_tokens":2147483648}'

note "rows 20-22: sampling"
row "20 (NaN)" 400 "invalid JSON" '{"prompt":"a","temperature":NaN}'
row "20 (Infinity)" 400 "invalid JSON" '{"prompt":"a","temperature":Infinity}'
row "20 (1e999)" 400 "temperature must be a finite number" '{"prompt":"a","temperature":1e999}'
row "20 (-0.5)" 400 "temperature must be in [0, 2], got -0.5" '{"prompt":"a","temperature":-0.5}'
row "20 (1e6)" 400 "temperature must be in [0, 2], got 1e+06" '{"prompt":"a","temperature":1e6}'
row "20 (string)" 400 "temperature must be a number" '{"prompt":"a","temperature":"0.5"}'
row "21 (2)" 400 "top_p must be in (0, 1], got 2" '{"prompt":"a","top_p":2}'
row "21 (0)" 400 "top_p must be in (0, 1], got 0" '{"prompt":"a","top_p":0}'
row "21 (-1)" 400 "top_p must be in (0, 1], got -1" '{"prompt":"a","top_p":-1}'
row "21 (min_p)" 400 "min_p must be in [0, 1], got 1.5" '{"prompt":"a","min_p":1.5}'
row "21 (repetition_penalty)" 400 "repetition_penalty must be in (0, 2], got 0" \
    '{"prompt":"a","repetition_penalty":0}'
row "21 (presence_penalty)" 400 "presence_penalty must be in [-2, 2], got 3" '{"prompt":"a","presence_penalty":3}'
row "21 (frequency_penalty)" 400 "frequency_penalty must be in [-2, 2], got -2.5" \
    '{"prompt":"a","frequency_penalty":-2.5}'
row "22 (-5)" 400 "top_k must be -1 or 0 (off) or at least 1, got -5" '{"prompt":"a","top_k":-5}'
# 10^9 is clamped to the vocabulary: the same tokens as top_k off.
reference "ROMEO:" 6 >"$WORK/ref.json"
http /generate -d '{"prompt":"ROMEO:","max_tokens":6,"top_k":1000000000}'
printf '%s' "$BODY" | jq -e --slurpfile r "$WORK/ref.json" '.tokens == $r[0].ids' >/dev/null ||
    fail "row 22: top_k 10^9: $STATUS $BODY"

note "rows 23-25: stop, logprobs"
row 23 400 "stop cannot contain an empty string" '{"prompt":"a","stop":[""]}'
row "23 (string)" 400 "stop cannot contain an empty string" '{"prompt":"a","stop":""}'
many=$(seq -s, 1 10000 | sed 's/[0-9][0-9]*/"s&"/g')
row "24 (10,000)" 400 "at most 4 stop sequences of <= 256 bytes" "{\"prompt\":\"a\",\"stop\":[$many]}"
head -c 1000000 /dev/zero | tr '\0' 'x' >"$WORK/x"
printf '{"prompt":"a","stop":"%s"}' "$(cat "$WORK/x")" >"$WORK/req"
expect_error "row 24 (1 MB)" 400 "at most 4 stop sequences of <= 256 bytes" /generate --data-binary @"$WORK/req"
row "24 (type)" 400 "stop must be a string or an array of strings" '{"prompt":"a","stop":[1]}'
for v in -1 1000000 2049; do
    row "25 ($v)" 400 "logprobs must be in [0, 20], got" "{\"prompt\":\"a\",\"logprobs\":$v}"
done

note "rows 26-29: ids, counts, types, unknown fields"
row "26 (>= vocab)" 400 "Token id 2048 is out of vocabulary" '{"prompt":[1,2048]}'
row "26 (< 0)" 400 "Token id -1 is out of vocabulary" '{"prompt":[1,-1]}'
row "26 (fraction)" 400 "prompt[1] must be an integer token id" '{"prompt":[1,2.5]}'
row "27 (max_tokens)" 400 "max_tokens must be at least 1, got -5" '{"prompt":"a","max_tokens":-5}'
row "27 (logprobs)" 400 "logprobs must be in [0, 20], got -3" '{"prompt":"a","logprobs":-3}'
row "27 (n)" 400 "n must be 1" '{"prompt":"a","n":-1}' /v1/completions
row "28 (stream)" 400 "stream must be a boolean" '{"prompt":"a","stream":"yes"}'
row "28 (ignore_eos)" 400 "ignore_eos must be a boolean" '{"prompt":"a","ignore_eos":1}'
row "28 (seed 1.5)" 400 "seed must be an integer" '{"prompt":"a","seed":1.5}'
row "28 (seed -1)" 400 "seed must be in [0, 9007199254740991], got -1" '{"prompt":"a","seed":-1}'
row "28 (seed 2^64)" 400 "seed must be in [0, 9007199254740991]" '{"prompt":"a","seed":18446744073709551616}'
http /generate -d '{"prompt":"a","max_tokens":2,"foo":1,"bar":{"baz":[1,2]}}'
[ "$STATUS" = 200 ] || fail "row 29: unknown fields are ignored, got $STATUS $BODY"

note "row 30: methods and paths"
expect_error "row 30 (GET /generate)" 405 "not allowed" /generate
printf '%s' "$HEADERS" | grep -qi '^Allow: POST' || fail "row 30: no Allow: POST header: $HEADERS"
expect_error "row 30 (POST /nope)" 404 "no route" /nope -X POST
expect_error "row 30 (POST /health)" 405 "not allowed" /health -X POST
printf '%s' "$HEADERS" | grep -qi '^Allow: GET, HEAD' || fail "row 30: no Allow: GET, HEAD header: $HEADERS"
expect_healthy "after row 30"

note "error bodies stay valid UTF-8 when they echo bytes that are not (a path, a content type, a duplicate key)"
utf8_body() { # WHAT: the last body is one JSON object of strict UTF-8, with a U+FFFD where the bad bytes were
    printf '%s' "$BODY" >"$WORK/raw"
    python3 -c 'import json, sys; m = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))["error"]["message"]
assert "\ufffd" in m, m' "$WORK/raw" || fail "$1: the body is not valid UTF-8 JSON: $(od -c "$WORK/raw" | head)"
}
http /x%ff%fey
[ "$STATUS" = 404 ] || fail "a path with %ff%fe: status $STATUS"
utf8_body "a path with %ff%fe"
http /generate -H $'Content-Type: text/\xe9\xff' -d '{}'
[ "$STATUS" = 415 ] || fail "a Content-Type with bytes 0xe9 0xff: status $STATUS"
utf8_body "a Content-Type with bytes 0xe9 0xff"
printf '{"prompt":"a","k\xff":1,"k\xff":2}' >"$WORK/dupkey"
http /generate --data-binary @"$WORK/dupkey"
[ "$STATUS" = 400 ] || fail "a duplicate key with byte 0xff: status $STATUS"
utf8_body "a duplicate key with byte 0xff"

note "the other POST routes"
row "1 (/v1/completions)" 400 "invalid JSON at byte 0" 'hello' /v1/completions
row "3 (/tokenize)" 400 "trailing data after JSON value" '{"prompt":"a"} x' /tokenize
row "12 (/detokenize)" 400 'duplicate key "tokens"' '{"tokens":[1],"tokens":[2]}' /detokenize
row "13 (/tokenize)" 400 "prompt is required and must be a string" '{"prompt":7}' /tokenize
row "26 (/detokenize)" 400 "Token id 99999 is out of vocabulary" '{"tokens":[1,99999]}' /detokenize
row "9 (/tokenize)" 400 "prompt is not valid UTF-8" "$(printf '{"prompt":"\xff"}')" /tokenize
row "n (/v1/completions)" 400 "n must be 1 (one completion per request), got 2" '{"prompt":"a","n":2}' /v1/completions
row "best_of" 400 "best_of must be 1" '{"prompt":"a","best_of":3}' /v1/completions
row "echo" 400 "echo is not supported" '{"prompt":"a","echo":true}' /v1/completions
row "stream_options" 400 "stream_options is only allowed when stream is true" \
    '{"prompt":"a","stream_options":{"include_usage":true}}' /v1/completions
row "prompt list" 400 "lists of 2 prompts are not supported" '{"prompt":["a","b"]}' /v1/completions
row "15 (/v1/completions)" 400 "maximum context length is 2048" "{\"prompt\":[$(ids 2100)]}" /v1/completions
expect_error "model" 404 'The model "gpt-4" does not exist' /v1/completions -d '{"model":"gpt-4","prompt":"a"}'

note "row 38: 100 over-context requests in a row"
printf '{"prompt":[%s]}' "$(ids 2100)" >"$WORK/over"
for i in $(seq 1 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$WORK/over" "$BASE/generate")
    [ "$code" = 400 ] || fail "row 38: request $i got $code"
done
expect_healthy "after row 38"

note "a normal request afterwards"
reference "ROMEO:" 16 >"$WORK/ref.json"
http /generate -d '{"prompt":"ROMEO:","max_tokens":16}'
printf '%s' "$BODY" | jq -e --slurpfile r "$WORK/ref.json" '.text == $r[0].text' >/dev/null ||
    fail "the request after the bad inputs: $STATUS $BODY"
[ "$(metric 'vllm:num_requests_running{model_name="demo-model"}')" = 0 ] || fail "requests still running"
stop_server

note "row 31: the API key (from a file)"
printf 'sk-test-123\n' >"$WORK/key"
start_server auth --api-key-file "$WORK/key"
expect_healthy "/health needs no key"
for path in /generate /v1/completions /tokenize /detokenize; do
    expect_error "row 31 ($path, no key)" 401 "missing or invalid API key" "$path" -d '{"prompt":"a"}'
    expect_error "row 31 ($path, wrong key)" 401 "missing or invalid API key" "$path" \
        -H 'Authorization: Bearer sk-test-124' -d '{"prompt":"a"}'
done
for path in /v1/models /metrics; do
    expect_error "row 31 ($path)" 401 "missing or invalid API key" "$path"
    [ "$(printf '%s' "$BODY" | jq -r .error.type)" = authentication_error ] || fail "row 31: error type: $BODY"
done
expect_error "row 31 (prefix of the key)" 401 "missing or invalid API key" /v1/models -H 'Authorization: Bearer sk-test'
expect_error "row 31 (Basic)" 401 "missing or invalid API key" /v1/models -H 'Authorization: Basic c2stdGVzdC0xMjM='
http /generate -H 'Authorization: Bearer sk-test-123' -d '{"prompt":"ROMEO:","max_tokens":16}'
printf '%s' "$BODY" | jq -e --slurpfile r "$WORK/ref.json" '.text == $r[0].text' >/dev/null ||
    fail "row 31: with the key: $STATUS $BODY"
http /metrics -H 'Authorization: Bearer sk-test-123'
[ "$STATUS" = 200 ] || fail "row 31: /metrics with the key: $STATUS"
expect_healthy "after row 31"
stop_server
echo "smoke_errors: ok"
