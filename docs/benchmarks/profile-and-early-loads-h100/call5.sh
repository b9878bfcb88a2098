#!/bin/bash
# Ninth session, call 5 (call 4's machine): llama.cpp tg128 f16 / Q8_0 / Q4_0 of bench-1b (run-on-device.sh
# llamacpp), then HEAD's batch-1 decode once more per format.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary5.txt; L=$OUT/l5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
run() { local lab=$1; shift
  timeout 90 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for r in 1 2 3; do for q in none int8 int4; do run $q-b1-$r --requests 1 --quantization $q; done; done
for q in int8 int4; do run $q-head-b1 --requests 1 --quantization $q --quantize-lm-head; done
OUT=$L/llama timeout 400 sh tests/gpu/run-on-device.sh llamacpp > $L/llamacpp.log 2>&1
note "llamacpp rc=$?"; cat $L/llama/summary.txt | tee -a $S
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
for q in none int8 int4; do
  timeout 90 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 --quantization $q >$L/$q-b1-after.log 2>&1
  note "$q b1 after llama.cpp: $(grep -E 'output tokens/s' $L/$q-b1-after.log)"
done
cp /tmp/fk-logs/llama-bench-*.log $L/ 2>/dev/null
tar czf $OUT/l5.tgz -C $OUT l5
cat $S
