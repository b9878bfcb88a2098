#!/bin/bash
# Eighth session, call 8, at HEAD: the quantized models with their head quantized too (--quantize-lm-head) beside the
# default, batch 1; and the per-op step profile (bench-engine --profile) at 1, 16, 64 and 256 requests, fp16.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary8.txt; L=$OUT/l8; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
( meson setup /tmp/fk-native . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-native -j12 tools/flashkernel >$L/build.log 2>&1 ) || note "BUILD FAILED"
wait
run() { local lab=$1; shift
  timeout 90 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for r in 1 2; do for q in int4 int8; do
  run $q-b1-$r --requests 1 --quantization $q
  run $q-head-b1-$r --requests 1 --quantization $q --quantize-lm-head
done; done
for n in 1 16 64 256; do
  w=""; [ $n -ge 64 ] && w="--warmup $n"
  run profile-b$n --requests $n $w --profile
  cp $L/profile-b$n.log $OUT/profile-b$n.txt
done
tar czf $OUT/l8.tgz -C $OUT l8
for n in 1 16 64 256; do grep -A8 "profile: decode" $OUT/profile-b$n.txt; done
