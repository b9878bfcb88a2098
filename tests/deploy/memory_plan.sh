#!/bin/bash
# memory_plan.sh — deploy/memory-plan.py (the sizes behind deploy/g4dn.md's table) against the engine: for the demo
# model, its KV block size at 4 bytes per value (the CPU backend's fp32) gives the number of blocks a server with
# --kv-cache-mb 64 reports; its weight count from the safetensors headers is the Llama formula over config.json.
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

MODEL=$FK_SOURCE_ROOT/deploy/demo-model
"$FK_PYTHON" "$FK_SOURCE_ROOT/deploy/memory-plan.py" "$MODEL" --kv-bytes 4 --json >"$WORK/plan.json" ||
    fail "memory-plan.py failed"

note "KV blocks: memory-plan.py against the server's KV cache"
block=$(jq .block_bytes "$WORK/plan.json")
start_cpu_server plan --kv-cache-mb 64
blocks=$(sed -n 's/.*KV cache \([0-9]*\) blocks of 16 tokens.*/\1/p' "$WORK/plan.log")
[ -n "$blocks" ] || fail "no \"KV cache N blocks\" line in the server's log"
[ "$blocks" = $((64 * 1048576 / block)) ] ||
    fail "the server has $blocks KV blocks in 64 MiB; memory-plan.py's $block bytes per block make $((64 * 1048576 / block))"
echo "$blocks blocks of $block bytes, as the server allocates"

note "weights: safetensors headers against config.json's shapes"
want=$(jq '(.hidden_size) as $h | (.intermediate_size) as $i | (.num_attention_heads * .head_dim) as $q |
    (.num_key_value_heads * .head_dim) as $kv |
    .vocab_size * $h * (if .tie_word_embeddings then 1 else 2 end) + $h +
    .num_hidden_layers * ($h * $q + 2 * $h * $kv + $q * $h + 3 * $h * $i + 2 * $h)' "$MODEL/config.json")
got=$(jq '.weights_bytes / 2' "$WORK/plan.json")
[ "$got" = "$want" ] || fail "memory-plan.py counts $got weights; config.json's shapes make $want"
echo "$got weights"
note "ok"
