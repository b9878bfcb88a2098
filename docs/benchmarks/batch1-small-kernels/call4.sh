#!/bin/bash
# Session 4, call 4 (call 3's machine): llama.cpp tg128 f16 / Q8_0 / Q4_0 of bench-1b, then batch-1 decode again.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
timeout 560 sh tests/gpu/run-on-device.sh llamacpp > $L/llamacpp.log 2>&1
note "llamacpp rc=$?"; grep -E "llama-bench|llama.cpp" $L/llamacpp.log | sort -u | tee -a $S
for q in none int8 int4; do
  timeout 60 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 --max-model-len 4096 --requests 1 --quantization $q >$L/$q-b1.log 2>&1
  note "native $q-b1 (after llama.cpp): $(grep -E 'output tokens/s' $L/$q-b1.log)"; done
