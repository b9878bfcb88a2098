#!/bin/bash
# Call 16: 64-row blocks for few tiles: test_quant*, bench_linear_quant at m = 64 and 128, bench-engine 64/128.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs16; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -d /tmp/fk-native ] || meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
mk=$!
ninja -C /tmp/fk-native -j16 tools/flashkernel tests/gpu/test_gpu_ops kernels/bench/bench_linear_quant >$L/build.log 2>&1 || { note "BUILD FAILED"; tail -30 $L/build.log | tee -a $S; exit 1; }
note "built"
FK_TEST_FILTER='test_quant*' timeout 200 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/test_quant.log 2>&1
note "test_quant* native rc=$?: $(grep -E 'PASSED|FAILED' $L/test_quant.log | tr '\n' ' ')"
grep -E "ERROR" $L/test_quant.log | head -5 | tee -a $S
for m in 64 128; do
  FK_BENCH_M=$m timeout 60 /tmp/fk-native/kernels/bench/bench_linear_quant >$L/blq$m.log 2>&1
  note "bench m=$m rc=$?"; grep -v RESULT $L/blq$m.log | awk -v M=$m 'NR>2 && $4==M {print $1,$2,$3,$4,"fp16",$6,"tiled",$8,"tiled128",$9,"deq",$10}' | tee -a $S
done
wait $mk
run() { local lab=$1 e=$2; shift 2
  env $e /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$lab.log 2>&1
  note "$lab ($e): $(grep -E 'output tokens/s' $L/$lab.log)"; }
for q in int8 int4; do run $q-n64 X=1 --requests 64 --quantization $q; run $q-n64-r128 FK_QUANT_MMA_ROWS=128 --requests 64 --quantization $q; done
run int8-n128 X=1 --requests 128 --quantization int8; run int8-n128-r128 FK_QUANT_MMA_ROWS=128 --requests 128 --quantization int8
tar czf $OUT/logs.tgz -C $L .
