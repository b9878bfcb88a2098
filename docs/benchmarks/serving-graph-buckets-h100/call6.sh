#!/bin/bash
# Twelfth session, call 6 (call 5's machine, 2c2d526): flashkernel-server and llama-server (tag 18ef86ece, built in call
# 5) on bench-1b-ascii through the same load tester (closed loop 1/16/64/256 at 128/128, 64 at 1,024/256; llama-server
# -np = clients, its /v1/completions), then bench-engine at 256 and 64 with --warmup for the server/engine ratio.
set -u
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit); llama.cpp $(cat /tmp/llama.cpp/done 2>/dev/null || echo building)"
FK_STEPS=closed LLAMA_ENDPOINTS=completions OUT=$L/peers sh tests/gpu/run-on-device.sh serving-peers >$L/peers.log 2>&1; note "serving-peers rc $?"
cat $L/peers/summary.txt >> $S
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
for n in 256 64; do
  timeout 100 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b-ascii --device cuda --requests $n --warmup $n \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$L/engine-$n.log 2>&1
  note "bench-engine --warmup $n: $(grep -E 'output tokens/s' $L/engine-$n.log)"
done
grep -h "ready in" /tmp/fk-logs/*.log $L/peers/serving-peers.tgz 2>/dev/null | head -3
note done
