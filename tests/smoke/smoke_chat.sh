#!/bin/bash
# smoke_chat.sh — POST /v1/chat/completions with curl. Bad input (the issue's list and RELIABILITY.md's rules applied
# to the chat body): messages missing, empty or not an array, bad roles, content of the wrong type, invalid UTF-8,
# unsupported fields, a conversation over the context (400 with the counts: the rendered prompt tokenized by
# /tokenize), a template that raises an exception or fails (400 carrying its message); /health stays 200 after each.
# The chat template's sources: --chat-template FILE (broken ones stop the startup with exit 2), a model without a
# template (a log line at startup, a 400 on the chat route, the other routes unchanged). The end-of-turn token: when
# the tokenizer has the template's marker as a special token, generation stops on it.
. "$(dirname "$0")/lib.sh"

CHAT=/v1/chat/completions
DEMO=$FK_SOURCE_ROOT/deploy/demo-model

# row WHAT STATUS MESSAGE BODY: POST BODY (a string) to the chat route and check the answer, then /health.
row() {
    local what=$1 status=$2 message=$3 body=$4
    printf '%s' "$body" >"$WORK/req"
    expect_error "$what" "$status" "$message" "$CHAT" --data-binary @"$WORK/req"
    expect_healthy "after $what"
}

# tokens_of MESSAGES_JSON: how many tokens the demo model's template renders the messages to (flashkernel
# chat-template, then /tokenize without special tokens).
tokens_of() {
    "$FK_CLI" chat-template --model "$DEMO" --messages "$1" --add-generation-prompt >"$WORK/rendered" ||
        fail "flashkernel chat-template failed"
    jq -Rs '{prompt: ., add_special_tokens: false}' "$WORK/rendered" >"$WORK/tok.json"
    curl -s --data-binary @"$WORK/tok.json" "$BASE/tokenize" | jq -e .count || fail "/tokenize failed"
}

start_server chat-errors --max-num-seqs 4
grep -q "chat template from the model directory $DEMO;" "$LOG" || fail "no chat template line in the log"
U='{"role":"user","content":"hi"}'

note "messages missing, empty, not an array"
for body in '{}' '{"messages":null}' '{"messages":"hi"}' '{"messages":{"role":"user","content":"hi"}}' \
    '{"prompt":"hi"}' '{"messages":5}'; do
    row "messages ($body)" 400 "messages is required and must be an array of messages" "$body"
done
row "messages []" 400 "messages cannot be empty" '{"messages":[]}'
row "a message that is a string" 400 "messages[0] must be an object with a role and a content" '{"messages":["hi"]}'
row "a message that is null" 400 "messages[1] must be an object with a role and a content" "{\"messages\":[$U,null]}"

note "roles"
for role in '"tool"' '"developer"' '"User"' '""' '"function"'; do
    row "role $role" 400 "messages[0].role must be \"system\", \"user\" or \"assistant\", got $role" \
        "{\"messages\":[{\"role\":$role,\"content\":\"hi\"}]}"
done
for role in 5 null '["user"]' true; do
    row "role $role" 400 "messages[0].role is required and must be a string" \
        "{\"messages\":[{\"role\":$role,\"content\":\"hi\"}]}"
done
row "no role" 400 "messages[0].role is required and must be a string" '{"messages":[{"content":"hi"}]}'

note "content of the wrong type"
row "no content" 400 "messages[0].content is required: a string or an array of text parts" \
    '{"messages":[{"role":"user"}]}'
for content in 5 '{"text":"hi"}' true; do
    row "content $content" 400 "messages[0].content must be a string or an array of text parts" \
        "{\"messages\":[{\"role\":\"user\",\"content\":$content}]}"
done
row "content part not an object" 400 "messages[0].content[0] must be an object" \
    '{"messages":[{"role":"user","content":["hi"]}]}'
row "image part" 400 "messages[0].content[1]: parts of type \"image_url\" are not supported (only \"text\")" \
    '{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}]}'
row "text part with a number" 400 "messages[0].content[0].text must be a string" \
    '{"messages":[{"role":"user","content":[{"type":"text","text":1}]}]}'

note "strings and keys"
row "invalid UTF-8 in content" 400 "messages is not valid UTF-8" \
    "$(printf '{"messages":[{"role":"user","content":"ab\xff\xfe"}]}')"
row "overlong UTF-8 in a part" 400 "messages is not valid UTF-8" \
    "$(printf '{"messages":[{"role":"user","content":[{"type":"text","text":"\xc0\xaf"}]}]}')"
row "invalid UTF-8 in a role" 400 "messages is not valid UTF-8" \
    "$(printf '{"messages":[{"role":"us\xe9r","content":"a"}]}')"
row "NUL" 400 "NUL character not allowed" '{"messages":[{"role":"user","content":"a\u0000b"}]}'
row "lone surrogate" 400 "invalid JSON" '{"messages":[{"role":"user","content":"\ud800"}]}'
row "duplicate key" 400 'duplicate key "content"' '{"messages":[{"role":"user","content":"a","content":"b"}]}'
row "duplicate messages" 400 'duplicate key "messages"' "{\"messages\":[$U],\"messages\":[$U]}"

note "fields"
row "n" 400 "n must be 1 (one completion per request), got 2" "{\"messages\":[$U],\"n\":2}"
row "tools" 400 "tools is not supported" \
    "{\"messages\":[$U],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}"
row "tool_choice" 400 "tool_choice is not supported" "{\"messages\":[$U],\"tool_choice\":\"required\"}"
row "response_format" 400 "response_format is not supported" \
    "{\"messages\":[$U],\"response_format\":{\"type\":\"json_object\"}}"
row "tool_calls" 400 "messages[0].tool_calls is not supported" \
    '{"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function"}]}]}'
row "logprobs as a number" 400 "logprobs must be a boolean (true or false)" "{\"messages\":[$U],\"logprobs\":5}"
row "top_logprobs without logprobs" 400 "top_logprobs needs logprobs to be true" \
    "{\"messages\":[$U],\"top_logprobs\":5}"
row "top_logprobs 21" 400 "top_logprobs must be in [0, 20], got 21" \
    "{\"messages\":[$U],\"logprobs\":true,\"top_logprobs\":21}"
row "max_completion_tokens 0" 400 "max_completion_tokens must be at least 1, got 0" \
    "{\"messages\":[$U],\"max_completion_tokens\":0}"
row "max_tokens 1e30" 400 "max_tokens must be <= 2048" "{\"messages\":[$U],\"max_tokens\":1e30}"
row "temperature" 400 "temperature must be in [0, 2], got 5" "{\"messages\":[$U],\"temperature\":5}"
row "stream" 400 "stream must be a boolean" "{\"messages\":[$U],\"stream\":\"yes\"}"
expect_error "model" 404 'The model "gpt-4o" does not exist' $CHAT -d "{\"model\":\"gpt-4o\",\"messages\":[$U]}"
expect_error "GET" 405 "not allowed" $CHAT
printf '%s' "$HEADERS" | grep -qi '^Allow: POST' || fail "GET $CHAT: no Allow: POST header: $HEADERS"

note "a conversation over the context: 400 with the counts"
long=$(printf 'hello %.0s' $(seq 1 2500))
messages="[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"$long\"}]"
n=$(tokens_of "$messages")
[ "$n" -gt 2048 ] || fail "the long conversation has only $n tokens"
row "over the context" 400 \
    "the messages have $n tokens once rendered with the chat template; maximum context length is 2048" \
    "{\"messages\":$messages}"
messages="[{\"role\":\"user\",\"content\":\"$(printf 'hello %.0s' $(seq 1 800))\"}]"
n=$(tokens_of "$messages")
row "prompt + max_tokens over the context" 400 "requested $n + 500 tokens exceeds context length 2048" \
    "{\"messages\":$messages,\"max_tokens\":500}"
# Without max_tokens the answer may take what the context has left.
http $CHAT -d "{\"messages\":$messages,\"temperature\":0}"
[ "$STATUS" = 200 ] && [ "$(printf '%s' "$BODY" | jq .usage.prompt_tokens)" = "$n" ] &&
    [ "$(printf '%s' "$BODY" | jq .usage.completion_tokens)" -le $((2048 - n)) ] ||
    fail "a long conversation without max_tokens: $STATUS $BODY"

note "a normal chat afterwards"
http $CHAT -d "{\"messages\":[$U],\"max_tokens\":8,\"temperature\":0}"
[ "$STATUS" = 200 ] && printf '%s' "$BODY" | jq -e '.object == "chat.completion" and .usage.completion_tokens > 0' \
    >/dev/null || fail "a chat after the bad inputs: $STATUS $BODY"
[ "$(metric 'vllm:num_requests_running{model_name="demo-model"}')" = 0 ] || fail "requests still running"
stop_server

note "a template that raises an exception, or fails while rendering"
cat >"$WORK/strict.jinja" <<'EOF'
{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System messages are not supported by this template') }}{% endif %}{% if m['content'] == 'add' %}{{ m['content'] + 1 }}{% endif %}{{ m['role'] + ': ' + m['content'] + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ 'assistant:' }}{% endif %}
EOF
start_server chat-strict --chat-template "$WORK/strict.jinja"
grep -q "chat template from $WORK/strict.jinja" "$LOG" || fail "no line naming --chat-template in the log"
row "raise_exception" 400 "TemplateError: System messages are not supported by this template" \
    "{\"messages\":[{\"role\":\"system\",\"content\":\"x\"},$U]}"
row "a failure while rendering" 400 "the chat template failed on these messages: " \
    '{"messages":[{"role":"user","content":"add"}]}'
http $CHAT -d "{\"messages\":[$U],\"max_tokens\":4}"
[ "$STATUS" = 200 ] || fail "--chat-template: a conversation the template takes: $STATUS $BODY"
stop_server

note "--chat-template that cannot be used: exit 2 before the model loads"
LOG="$WORK/bad-template.log"
rc=0
timeout 30 "$FK_SERVER" --port 0 --device cpu --chat-template "$WORK/none.jinja" >"$LOG" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -qF "cannot open $WORK/none.jinja" "$LOG" || fail "a missing --chat-template file: exit $rc"
printf '{%% if %%}x' >"$WORK/broken.jinja"
rc=0
timeout 30 "$FK_SERVER" --port 0 --device cpu --chat-template "$WORK/broken.jinja" >"$LOG" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -qF "error: --chat-template $WORK/broken.jinja: " "$LOG" ||
    fail "a --chat-template that does not parse: exit $rc, $(cat "$LOG")"

note "a model without a chat template"
mkdir "$WORK/plain"
for f in "$DEMO"/*; do
    [ "$(basename "$f")" = tokenizer_config.json ] || ln -s "$f" "$WORK/plain/$(basename "$f")"
done
start_server plain --model "$WORK/plain"
grep -q "chat: the model has no chat template" "$LOG" || fail "no startup line about the missing chat template"
row "no template" 400 "the model has no chat template" "{\"messages\":[$U]}"
http /v1/completions -d '{"prompt":"ROMEO:","max_tokens":4}'
[ "$STATUS" = 200 ] || fail "/v1/completions on a model without a chat template: $STATUS $BODY"
stop_server
start_server plain-given --model "$WORK/plain" --chat-template "$WORK/strict.jinja"
http $CHAT -d "{\"messages\":[$U],\"max_tokens\":4}"
[ "$STATUS" = 200 ] || fail "--chat-template on a model without one: $STATUS $BODY"
stop_server

note "the end-of-turn token"
# A template that names <|im_end|> without writing it into prompts, on the demo model as it is: the greedy token ids
# of a conversation (/generate on the rendered prompt's ids, as the chat route tokenizes it).
printf '%s' "{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\\n' }}{% endfor %}" \
    "{% if add_generation_prompt %}{{ 'assistant:' }}{% endif %}{% if false %}<|im_end|>{% endif %}" >"$WORK/eot.jinja"
start_server eot-reference --chat-template "$WORK/eot.jinja"
grep -q "generation stops on the model's eos ids$" "$LOG" || fail "the demo tokenizer has no <|im_end|> token"
messages='[{"role":"user","content":"Speak, ROMEO."}]'
http /tokenize -d "{\"prompt\":\"user: Speak, ROMEO.\\nassistant:\",\"add_special_tokens\":false}"
prompt=$(printf '%s' "$BODY" | jq -c .tokens)
http /generate -d "{\"prompt\":$prompt,\"max_tokens\":16,\"ignore_eos\":true}"
ids=$(printf '%s' "$BODY" | jq -c .tokens)
# The end-of-turn id: the first generated token not seen before it (at k >= 2), not the eos id.
read -r k eot < <(jq -rn --argjson t "$ids" \
    'first(range(2; $t | length) | select($t[.] != 1 and ($t[:.] | index([$t[.]])) == null) | "\(.) \($t[.])")')
[ -n "$eot" ] || fail "no end-of-turn candidate in $ids"
echo "end-of-turn id $eot: generated token $((k + 1)) of $ids"
http /generate -d "{\"prompt\":$prompt,\"max_tokens\":$k}"
want=$(printf '%s' "$BODY" | jq .text)
stop_server
# The same model with <|im_end|> as a special token of that id: the chat stops there, before its text.
mkdir "$WORK/eot"
for f in "$DEMO"/*; do
    [ "$(basename "$f")" = tokenizer.json ] || ln -s "$f" "$WORK/eot/$(basename "$f")"
done
jq --argjson id "$eot" '.added_tokens += [{id: $id, content: "<|im_end|>", single_word: false, lstrip: false,
    rstrip: false, normalized: false, special: true}]' "$DEMO/tokenizer.json" >"$WORK/eot/tokenizer.json"
start_server eot --model "$WORK/eot" --chat-template "$WORK/eot.jinja"
grep -q "generation stops on the model's eos ids and <|im_end|> ($eot)" "$LOG" ||
    fail "the startup log does not name <|im_end|> ($eot)"
http $CHAT -d "{\"messages\":$messages,\"max_tokens\":16,\"temperature\":0}"
printf '%s' "$BODY" | jq -e --argjson want "$want" --argjson n $((k + 1)) '.choices[0].finish_reason == "stop" and
    .choices[0].message.content == $want and .usage.completion_tokens == $n' >/dev/null ||
    fail "the chat did not stop at <|im_end|> ($eot, token $((k + 1))): $STATUS $BODY; want the text $want"
http $CHAT -d "{\"messages\":$messages,\"max_tokens\":16,\"temperature\":0,\"ignore_eos\":true}"
[ "$(printf '%s' "$BODY" | jq .usage.completion_tokens)" = 16 ] || fail "ignore_eos did not go past <|im_end|>: $BODY"
stop_server
echo "smoke_chat: ok"
