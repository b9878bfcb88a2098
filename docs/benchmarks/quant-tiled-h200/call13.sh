#!/bin/bash
# Call 13: per-format crossover: test_quant*, int4 at 64/96/128 requests default vs dequantized.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs13; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
mk=$!
ninja -C /tmp/fk-native -j16 tools/flashkernel tests/gpu/test_gpu_ops >$L/build.log 2>&1 || { note "BUILD FAILED"; tail -30 $L/build.log | tee -a $S; exit 1; }
note "built"
FK_TEST_FILTER='test_quant*' timeout 300 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/test_quant.log 2>&1
note "test_quant* native rc=$?: $(grep -E 'PASSED|FAILED' $L/test_quant.log | tr '\n' ' ')"
wait $mk
run() { local lab=$1 e=$2; shift 2
  env $e /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$lab.log 2>&1
  note "$lab ($e): $(grep -E 'output tokens/s' $L/$lab.log)"; }
for n in 96 128; do run int4-n$n X=1 --requests $n --quantization int4; run int4-n$n-tiled FK_QUANT_MMA_MAX_M=128 --requests $n --quantization int4; run int4-n$n-dequant FK_QUANT_MMA_MAX_M=0 --requests $n --quantization int4; done
tar czf $OUT/logs.tgz -C $L .
