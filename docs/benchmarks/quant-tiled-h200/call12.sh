#!/bin/bash
# Call 12 (final): gpu suite native + compute_75 PTX, bench_linear_quant, bench-engine 1/64/128 requests with the
# tiled kernel and without (FK_QUANT_MMA_MAX_M=0), fp16 beside.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
echo "commit $(cat .peers/commit)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1b.log 2>&1 &
mk=$!
rm -rf /tmp/fk-native /tmp/fk-ptx75
timeout 400 sh tests/gpu/run-on-device.sh test
mkdir -p $OUT/more; S=$OUT/more/summary.txt; L=/tmp/fk-logs12; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "test step done"
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
timeout 100 /tmp/fk-native/kernels/bench/bench_linear_quant >$L/blq.log 2>&1
note "bench_linear_quant rc=$?"; cp $L/blq.log $OUT/more/bench_linear_quant.txt
wait $mk
run() { local lab=$1 e=$2; shift 2
  env $e /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$lab.log 2>&1
  note "$lab ($e): $(grep -E 'output tokens/s' $L/$lab.log)"; }
for q in none int8 int4; do run $q-n1 X=1 --requests 1 --quantization $q; done
for n in 64 128; do
  for q in int8 int4; do run $q-n$n X=1 --requests $n --quantization $q; run $q-n$n-dequant FK_QUANT_MMA_MAX_M=0 --requests $n --quantization $q; done
  run none-n$n X=1 --requests $n
done
tar czf $OUT/more/logs.tgz -C $L .
