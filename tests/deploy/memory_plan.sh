#!/bin/bash
# memory_plan.sh — deploy/memory-plan.py (the sizes behind deploy/g4dn.md's table) against the engine, for the demo
# model and for tiny-mistral with a 4096-token sliding window (an explicit head_dim other than hidden/heads): its KV
# block size at 4 bytes per value (the CPU backend's fp32) gives the number of blocks a server with --kv-cache-mb 64
# reports; its context is the server's max_model_len; its weight count from the safetensors headers is the Llama
# formula over config.json. For the demo model with --quantization int8 / int4 (and --quantize-lm-head), its weight
# bytes at 4 bytes per unquantized value are what a CPU server with those flags reports, and on the GPU's defaults the
# smaller weights leave room for more KV tokens; a GPT-2 directory (Conv1D weights stored [in][out]) is sized as the
# engine stores it.
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

MISTRAL=$WORK/tiny-mistral-window
mkdir "$MISTRAL"
cp "$FK_SOURCE_ROOT"/tests/fixtures/models/tiny-mistral/* "$MISTRAL"/
jq '.sliding_window = 4096' "$FK_SOURCE_ROOT/tests/fixtures/models/tiny-mistral/config.json" >"$MISTRAL/config.json"

for MODEL in "$FK_SOURCE_ROOT/deploy/demo-model" "$MISTRAL"; do
    name=$(basename "$MODEL")
    "$FK_PYTHON" "$FK_SOURCE_ROOT/deploy/memory-plan.py" "$MODEL" --kv-bytes 4 --json >"$WORK/plan.json" ||
        fail "memory-plan.py failed on $name"

    note "$name: KV blocks and context, memory-plan.py against the server"
    block=$(jq .block_bytes "$WORK/plan.json")
    start_cpu_server "plan-$name" --kv-cache-mb 64 --model "$MODEL"
    blocks=$(sed -n 's/.*KV cache \([0-9]*\) blocks of 16 tokens.*/\1/p' "$WORK/plan-$name.log")
    [ -n "$blocks" ] || fail "no \"KV cache N blocks\" line in the server's log"
    [ "$blocks" = $((64 * 1048576 / block)) ] ||
        fail "the server has $blocks KV blocks in 64 MiB; memory-plan.py's $block bytes per block make $((64 * 1048576 / block))"
    context=$(curl -sS "http://127.0.0.1:$PORT/v1/models" | jq .data[0].max_model_len)
    [ "$context" = "$(jq .context "$WORK/plan.json")" ] ||
        fail "the server's max_model_len is $context; memory-plan.py's context is $(jq .context "$WORK/plan.json")"
    kill -TERM "$SPAWNED"
    wait "$SPAWNED" || true
    echo "$blocks blocks of $block bytes, as the server allocates; context $context"

    note "$name: weights, safetensors headers against config.json's shapes"
    want=$(jq '(.hidden_size) as $h | (.intermediate_size) as $i | (.num_attention_heads * .head_dim) as $q |
        (.num_key_value_heads * .head_dim) as $kv |
        .vocab_size * $h * (if .tie_word_embeddings then 1 else 2 end) + $h +
        .num_hidden_layers * ($h * $q + 2 * $h * $kv + $q * $h + 3 * $h * $i + 2 * $h)' "$MODEL/config.json")
    got=$(jq '.weights_bytes / 2' "$WORK/plan.json")
    [ "$got" = "$want" ] || fail "memory-plan.py counts $got weights; config.json's shapes make $want"
    echo "$got weights"
done

MODEL=$FK_SOURCE_ROOT/deploy/demo-model
note "quantized weights: memory-plan.py against the server's startup log"
for flags in "int8" "int4" "int4 --quantize-lm-head"; do
    q=${flags%% *}
    extra=""
    [ "$flags" != "$q" ] && extra=--quantize-lm-head
    # shellcheck disable=SC2086 # $extra is one flag or none
    plan=$("$FK_PYTHON" "$FK_SOURCE_ROOT/deploy/memory-plan.py" "$MODEL" --kv-bytes 4 --weight-bytes 4 \
        --quantization "$q" $extra --json) || fail "memory-plan.py --quantization $flags failed"
    want=$(echo "$plan" | jq '.weights_bytes / 1048576 * 10 | round / 10')
    # shellcheck disable=SC2086
    start_cpu_server "plan-$q$extra" --quantization "$q" $extra
    got=$(sed -n 's/.* \([0-9.]*\) MiB, loaded in.*/\1/p' "$WORK/plan-$q$extra.log")
    [ -n "$got" ] || fail "no weights in the server's log: $(head -5 "$WORK/plan-$q$extra.log")"
    [ "$(jq -n "$got == $want")" = true ] || fail "--quantization $flags: the server holds $got MiB of weights; memory-plan.py says $want"
    kill -TERM "$SPAWNED"
    wait "$SPAWNED" || fail "the server exited with $?"
    echo "$flags: $got MiB, as memory-plan.py says"
done
kv() { "$FK_PYTHON" "$FK_SOURCE_ROOT/deploy/memory-plan.py" "$MODEL" --quantization "$1" --json | jq .kv_tokens_max; }
none=$(kv none) int8=$(kv int8) int4=$(kv int4)
if [ "$int4" -le "$int8" ] || [ "$int8" -le "$none" ]; then
    fail "KV room: none $none, int8 $int8, int4 $int4 tokens"
fi
echo "KV room on a T4: $none tokens (fp16), $int8 (int8), $int4 (int4)"

note "GPT-2: Conv1D [in][out] weights sized as [out][in] linears"
gpt2=$FK_SOURCE_ROOT/tests/fixtures/models/tiny-gpt2
got=$("$FK_PYTHON" "$FK_SOURCE_ROOT/deploy/memory-plan.py" "$gpt2" --quantization int8 --json | jq .weights_bytes)
want=$(jq '(.n_embd) as $d | (.n_inner // (4 * .n_embd)) as $f | .vocab_size as $v | .n_positions as $p |
    2 * ($v * $d + $p * $d + 2 * $d) + .n_layer * (
        ($d * 3 * $d + 2 * 3 * $d) + ($d * $d + 2 * $d) + ($d * $f + 2 * $f) + ($f * $d + 2 * $d) +
        2 * (3 * $d + $d + $f + $d + 4 * $d))' "$gpt2/config.json")
[ "$got" = "$want" ] || fail "tiny-gpt2 int8: memory-plan.py counts $got bytes; config.json's shapes make $want"
echo "tiny-gpt2 int8: $got bytes"
note "ok"
