#!/bin/bash
# Call 5: tiled kernel up to 128 tokens: test_quant*, SASS of the int8 kernel, bench_linear_quant, bench-engine.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -d /tmp/fk-native ] || meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
mk=$!
B=/tmp/fk-native/kernels/bench
ninja -C /tmp/fk-native -j16 tools/flashkernel tests/gpu/test_gpu_ops kernels/bench/bench_linear_quant >$L/build.log 2>&1 || { note "BUILD FAILED"; tail -30 $L/build.log | tee -a $S; exit 1; }
note "built"
FK_TEST_FILTER='test_quant*' timeout 300 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/test_quant.log 2>&1
note "test_quant* native rc=$?: $(grep -E 'PASSED|FAILED' $L/test_quant.log | tr '\n' ' ')"
grep -E "ERROR|error" $L/test_quant.log | head -5 | tee -a $S
cuobjdump -sass -fun '_ZN12_GLOBAL__N_123linear_quant_mma_kernelILi1ELi0EEEvP6__halfPKS1_PKhS4_S4_iiiiPfPj' /tmp/fk-native/kernels/libfk_kernels.a > $OUT/sass_int8.txt 2>&1 || cuobjdump -sass /tmp/fk-native/kernels/libfk_kernels.a 2>/dev/null | awk '/linear_quant_mma_kernel/{p=1} p' | head -4000 > $OUT/sass_int8.txt
note "sass lines $(wc -l < $OUT/sass_int8.txt)"
timeout 240 $B/bench_linear_quant >$L/blq.log 2>&1
note "bench_linear_quant rc=$?"; grep -v RESULT $L/blq.log | tee -a $S
wait $mk
run() { local lab=$1 e=$2; shift 2
  env $e /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$lab.log 2>&1
  note "$lab ($e): $(grep -E 'output tokens/s' $L/$lab.log)"; }
for n in 64 128; do
  for q in int8 int4; do run $q-n$n X=1 --requests $n --quantization $q; run $q-n$n-old FK_QUANT_MMA_MAX_M=0 --requests $n --quantization $q; done
  run none-n$n X=1 --requests $n
done
tar czf $OUT/logs.tgz -C $L .
