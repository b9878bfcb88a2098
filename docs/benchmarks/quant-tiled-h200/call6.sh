#!/bin/bash
# Call 6: the gpu suite native + compute_75 PTX (run-on-device.sh test), then bench_linear_quant and bench-engine.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
echo "commit $(cat .peers/commit)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1b.log 2>&1 &
mk=$!
timeout 420 sh tests/gpu/run-on-device.sh test
echo "[$(( $(date +%s) - T0 ))s] test step done"
mkdir -p $OUT/more; S=$OUT/more/summary.txt; L=/tmp/fk-logs6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
timeout 100 /tmp/fk-native/kernels/bench/bench_linear_quant >$L/blq.log 2>&1
note "bench_linear_quant rc=$?"; grep -v RESULT $L/blq.log > $OUT/more/blq.txt
wait $mk
run() { local lab=$1 e=$2; shift 2
  env $e /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$lab.log 2>&1
  note "$lab ($e): $(grep -E 'output tokens/s' $L/$lab.log)"; }
for n in 32 64; do
  for q in int8 int4; do run $q-n$n X=1 --requests $n --quantization $q; done
done
tar czf $OUT/more/logs.tgz -C $L .
