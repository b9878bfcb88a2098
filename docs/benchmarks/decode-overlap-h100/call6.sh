#!/bin/bash
# Eighth session, call 6 (call 5's machine): llama.cpp tg128 f16 / Q8_0 / Q4_0 of bench-1b (llama-bench), then
# flashkernel-server and llama-server in the same closed loops (run-on-device.sh serving-peers, FK_STEPS=closed),
# then HEAD's batch-1 decode once more per format.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
FK_STEPS=closed OUT=$L/llama timeout 480 sh tests/gpu/run-on-device.sh llamacpp serving-peers > $L/llamacpp.log 2>&1
note "llamacpp serving-peers rc=$?"; grep -vE "^\[" $L/llama/summary.txt | head -0; cat $L/llama/summary.txt | tee -a $S
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
for q in none int8 int4; do
  timeout 90 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 --quantization $q >$L/$q-b1-after.log 2>&1
  note "$q b1 after llama.cpp: $(grep -E 'output tokens/s' $L/$q-b1-after.log)"
done
cp /tmp/fk-logs/llama-bench-*.log $L/ 2>/dev/null; find $L/llama -name benchmark.txt -exec cp {} $OUT/serving-peers-benchmark.txt \;
tar czf $OUT/l6.tgz -C $OUT l6 && rm -rf $L
cat $OUT/serving-peers-benchmark.txt 2>/dev/null | head -40
