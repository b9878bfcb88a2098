#!/bin/bash
# Session 3, call 8 (machine of call 7, llama.cpp building since then): batch-1 greedy decode of bench-1b 3x per
# format; int8 / int4 / fp16 at 64 requests with the default warm-up (1 request) and with --warmup 64 (the one-time
# costs of the first 4,096-token prefill chunk); then llama.cpp's llama-bench tg128 f16 / Q8_0 / Q4_0 of the same model.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary8.txt; L=$OUT/l8; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
F=/tmp/fk-native/tools/flashkernel
run() { local lab=$1; shift
  timeout 100 $F bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 --max-model-len 4096 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for r in 1 2 3; do for q in none int8 int4; do run $q-b1-$r --requests 1 --quantization $q; done; run int4-head-b1-$r --requests 1 --quantization int4 --quantize-lm-head; done
for q in int8 int4 none; do run $q-64-w1 --requests 64 --quantization $q; run $q-64-w64 --requests 64 --quantization $q --warmup 64; done
run int8-64-w64-prof --requests 64 --quantization int8 --warmup 64 --profile; grep -A8 "prefill chunks" $L/int8-64-w64-prof.log | tee -a $S
for q in int8 int4 none; do run $q-128-w128 --requests 128 --quantization $q --warmup 128; done
timeout 420 sh tests/gpu/run-on-device.sh llamacpp > $L/llamacpp.log 2>&1
note "llamacpp rc=$?"; grep -E "llama-bench|llama.cpp" $L/llamacpp.log | tee -a $S
