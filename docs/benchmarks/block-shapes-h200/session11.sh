#!/bin/bash
# Call 9 of 2026-11-26: the token ranges of our small linears in the whole step: fp16 decode at 24-64 requests with
# FK_SMALL_LINEAR_MAX_M 16 (default) / 32 / 64 (cuBLAS above), int8 / int4 at 48 and 64 with FK_QUANT_SMALL_MAX_M
# 32 (default) / 64 (dequantize + cuBLAS above); interleaved.
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
meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
ninja -C /tmp/fk-native -j16 tools/flashkernel >$L/build.log 2>&1 || { note "BUILD FAILED"; exit 1; }
wait $mk
note "built"
run() { # label env-assignment args...
  local lab=$1 e=$2; shift 2
  env $e /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$lab.log 2>&1
  note "$lab ($e): $(grep -E 'output tokens/s' $L/$lab.log)"
}
for r in 1 2; do
  for n in 32 64; do for mm in 16 32 64; do run fp16-n$n-m$mm-r$r FK_SMALL_LINEAR_MAX_M=$mm --requests $n; done; done
done
for n in 24 48; do for mm in 16 32 64; do run fp16-n$n-m$mm FK_SMALL_LINEAR_MAX_M=$mm --requests $n; done; done
for q in int8 int4; do
  for n in 48 64; do for mm in 32 64; do run $q-n$n-m$mm FK_QUANT_SMALL_MAX_M=$mm --requests $n --quantization $q; done; done
done
tar czf $OUT/logs.tgz -C $L .
