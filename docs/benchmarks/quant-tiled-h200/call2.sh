#!/bin/bash
# Call 2: the tiled quantized linear with independent MMAs in turn: test_quant*, bench_linear_quant, bench-engine 64 req.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
mk=$!
[ -d /tmp/fk-native ] || meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
ninja -C /tmp/fk-native -j16 tools/flashkernel tests/gpu/test_gpu_ops kernels/bench/bench_linear_quant >$L/build.log 2>&1 || { note "BUILD FAILED"; tail -30 $L/build.log | tee -a $S; exit 1; }
note "built"
FK_TEST_FILTER='test_quant*' timeout 300 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/test_quant.log 2>&1
note "test_quant* native rc=$?: $(grep -E 'PASSED|FAILED' $L/test_quant.log | tr '\n' ' ')"
timeout 240 /tmp/fk-native/kernels/bench/bench_linear_quant >$L/blq.log 2>&1
note "bench_linear_quant rc=$?"
grep -v RESULT $L/blq.log | awk '{printf "%s %s %s %s fp16 %s tiled %s deq %s pass %s\n",$1,$2,$3,$4,$6,$8,$9,$11}' | tee -a $S
wait $mk
run() { local lab=$1 e=$2; shift 2
  env $e /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$lab.log 2>&1
  note "$lab ($e): $(grep -E 'output tokens/s' $L/$lab.log)"; }
for q in int8 int4; do run $q-n64 X=1 --requests 64 --quantization $q; run $q-n64-old FK_QUANT_MMA_MAX_M=0 --requests 64 --quantization $q; done
which ncu >/dev/null && FK_BENCH_ONLY="1b o" timeout 120 ncu --clock-control none -k regex:linear_quant_mma -c 3 --section SpeedOfLight --section Occupancy --section WarpStateStats /tmp/fk-native/kernels/bench/bench_linear_quant > $L/ncu.txt 2>&1
tar czf $OUT/logs.tgz -C $L .
