#!/bin/bash
# Session 5, call 4: the launch cascade as a run-time switch (pass_begin -> k_pdl_cascade; auto = one-token passes
# of a quantized model) against HEAD (old), interleaved; FK_PDL_CASCADE=off/on rows; then the native gpu suite
# (with the new gpu_model_cascade and engine_cuda_cascade tests).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), new = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/ && rm -f /tmp/src-old/kernels/trace.cu /tmp/src-old/kernels/bench/trace_report.py
bld() { local v=$1 src=$2 args=$3; shift 3
  meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j8 "$@" >$L/build-$v.log 2>&1 || { echo "BUILD FAILED $v" | tee -a $S; tail -20 $L/build-$v.log; }; }
rm -rf /tmp/fk-old /tmp/fk-native
bld old /tmp/src-old "" tools/flashkernel &
bld native . "" tools/flashkernel tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tests/gpu/test_engine_cuda &
wait; wait; note "built"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in old native; do
  for q in none int8 int4; do run $v $q-b1-$r --prompt-len 128 --requests 1 --quantization $q; done
  run $v int4head-b1-$r --prompt-len 128 --requests 1 --quantization int4 --quantize-lm-head
done; done
FK_PDL_CASCADE=off run native int4-b1-off --prompt-len 128 --requests 1 --quantization int4
FK_PDL_CASCADE=on run native none-b1-on --prompt-len 128 --requests 1 --quantization none
for v in old native; do for q in int8 int4; do run $v $q-b1-p2000 --prompt-len 2000 --requests 1 --quantization $q; done; done
for v in old native; do run $v int4-b4 --prompt-len 128 --requests 4 --quantization int4; run $v int4-b16 --prompt-len 128 --requests 16 --quantization int4; run $v none-b16 --prompt-len 128 --requests 16; done
for v in old native; do run $v int4-b64 --prompt-len 128 --requests 64 --warmup 64 --quantization int4; done
( cd /tmp/fk-native && timeout 330 meson test --suite gpu --no-rebuild --print-errorlogs gpu_ops gpu_model gpu_model_cascade engine_cuda engine_cuda_sync engine_cuda_cascade >$L/test-native.log 2>&1 ); note "gpu suite (native): exit $? $(grep -E '^(Ok|Fail|Timeout):' $L/test-native.log | tr -s ' ' | tr '\n' ' ')"
grep -E "^ *[0-9]+/[0-9]+ " $L/test-native.log | tee -a $S
cp /tmp/fk-native/meson-logs/testlog.txt $L/testlog-native.txt 2>/dev/null
tar czf $OUT/l4.tgz -C $OUT l4 && rm -rf $L
echo; echo "label: old new"
for lab in none-b1-1 none-b1-2 int8-b1-1 int8-b1-2 int4-b1-1 int4-b1-2 int4head-b1-1 int4head-b1-2 int8-b1-p2000 int4-b1-p2000 int4-b4 int4-b16 none-b16 int4-b64; do
  printf "%-14s" $lab; for v in old native; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
grep -E "b1-off|b1-on" $S
