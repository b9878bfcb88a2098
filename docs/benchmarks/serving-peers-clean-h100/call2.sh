#!/bin/bash
# Thirteenth session, call 2 (call 1's machine, llama.cpp built there): flashkernel-server and llama-server on
# bench-1b-ascii through the same load tester, closed loop and Poisson rates, llama-server's /v1/completions; then
# bench_kernels' attention rows new against old (alternated).
set -u
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit); llama.cpp $(cat /tmp/llama.cpp/done 2>/dev/null || echo building)"
FK_STEPS="closed open" LLAMA_ENDPOINTS=completions OUT=$L/peers sh tests/gpu/run-on-device.sh serving-peers >$L/peers.log 2>&1; note "serving-peers rc $?"
cat $L/peers/summary.txt >> $S
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
for r in 1 2; do
  [ $(( $(date +%s) - T0 )) -gt 500 ] && break
  for v in new old; do
    b=/tmp/fk-native/kernels/bench/bench_kernels; [ $v = old ] && b=/tmp/fk-old/kernels/bench/bench_kernels
    for k in k_attention_decode "k_attention_prefill mma_sync"; do
      timeout 60 $b --only "$k" --warmup 20 --iters 200 >>$L/bk-$v-$r.txt 2>&1
    done
    note "bench_kernels $v round $r: rc $?"
  done
done
note done
