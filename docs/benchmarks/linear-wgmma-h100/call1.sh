#!/bin/bash
# Fifteenth session, call 1: k_linear_wgmma (TMA + wgmma, 17-64 tokens). Its op tests natively, bench_linear on the
# Llama shapes (ours / cuBLAS / wgmma with stage and split variants), then bench-engine fp16 at 24-64 requests with
# the wgmma kernel against cuBLAS (FK_WGMMA_LINEAR_MAX_M=0), alternated.
set -u
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 &&
  ninja -C /tmp/fk-native tools/flashkernel kernels/bench/bench_linear tests/gpu/test_gpu_ops >$L/build.log 2>&1
note "built: rc $?"; tail -3 $L/build.log | tee -a $S
FK_TEST_FILTER="test_linear" timeout 240 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/gpu_ops_linear.txt 2>&1
note "test_linear rc $? ($(grep -cE '^\[       OK \]' $L/gpu_ops_linear.txt) OK)"
grep -E "FAILED|mismatch|wgmma|Error|error" $L/gpu_ops_linear.txt | head -20 | tee -a $S
FK_TEST_FILTER="test_linear_silu_mul" timeout 240 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/gpu_ops_silu.txt 2>&1
note "test_linear_silu_mul rc $?"; grep -E "FAILED|wgmma" $L/gpu_ops_silu.txt | head -10 | tee -a $S
FK_TEST_FILTER="test_linear_gelu" timeout 240 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/gpu_ops_gelu.txt 2>&1
note "test_linear_gelu rc $?"; grep -E "FAILED|wgmma" $L/gpu_ops_gelu.txt | head -10 | tee -a $S
FK_BENCH_ONLY=llama timeout 240 /tmp/fk-native/kernels/bench/bench_linear >$L/bench_linear.txt 2>&1
note "bench_linear rc $?"
grep -E "^device|^llama" $L/bench_linear.txt | grep -vE " int[48] " | tee -a $S
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "model: $(cat /tmp/mk-done 2>/dev/null)"
E=/tmp/fk-native/tools/flashkernel
eng() { # label N env...
  local label=$1 n=$2; shift 2
  env "$@" timeout 120 $E bench-engine --model /tmp/bench-1b --device cuda --requests $n --warmup $n --prompt-len 128 \
    --max-tokens 128 --max-model-len 4096 >$L/engine-$label-$n.log 2>&1
  note "bench-engine $n requests $label: $(grep -E 'output tokens/s' $L/engine-$label-$n.log | tail -1)"
}
for r in 1 2; do eng cublas 64 FK_WGMMA_LINEAR_MAX_M=0; eng wgmma 64 X=1; done
for n in 24 32 48; do eng cublas $n FK_WGMMA_LINEAR_MAX_M=0; eng wgmma $n X=1; done
tar czf $OUT/l1.tgz -C $OUT l1 && rm -rf $L
note done
