#!/bin/bash
# Session 4, call 3 (an H100): llama.cpp build started in the background; HEAD (new) against 105a114's four files
# (old): batch-1 greedy decode of bench-1b (fp16, int8, int4, int4 + head; 2 rounds), 16 and 64 requests;
# FK_DECODE_MIN_SPLIT 64 / 128 builds at batch 1; compute-sanitizer memcheck + racecheck on the norm and decode
# attention tests (RoPE runs in the latter).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -f /tmp/llama.cpp/done ] || setsid sh -c ".peers/build-llama-cpp.sh /tmp/llama.cpp >/tmp/llama-build.log 2>&1" </dev/null >/dev/null 2>&1 &
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp .peers/old/* /tmp/src-old/kernels/
bld() { local v=$1 src=$2 args=$3; shift 3
  meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j4 "$@" >$L/build-$v.log 2>&1 || { echo "BUILD FAILED $v" | tee -a $S; tail -20 $L/build-$v.log; }; }
rm -rf /tmp/fk-old /tmp/fk-native /tmp/fk-s64 /tmp/fk-s128
bld old /tmp/src-old "" tools/flashkernel &
bld native . "" tools/flashkernel tests/gpu/test_gpu_ops &
bld s64 . "-DFK_DECODE_MIN_SPLIT=64" tools/flashkernel &
bld s128 . "-DFK_DECODE_MIN_SPLIT=128" tools/flashkernel &
wait; note "built"
for tool in memcheck racecheck; do for t in test_norms test_attention_decode; do
  extra=""; [ $tool = memcheck ] && extra="--leak-check full"
  FK_TEST_FILTER=$t timeout 150 compute-sanitizer --tool $tool $extra --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/san-$tool-$t.log 2>&1
  note "compute-sanitizer $tool $t: exit $? — $(grep -E 'PASSED|FAILED' $L/san-$tool-$t.log | head -1) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' $L/san-$tool-$t.log | tr '\n' ' ')"
done; done
run() { local v=$1 lab=$2; shift 2
  timeout 60 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in old native; do
  for q in none int8 int4; do run $v $q-b1-$r --requests 1 --quantization $q; done
  run $v int4head-b1-$r --requests 1 --quantization int4 --quantize-lm-head
done; done
for v in s64 s128; do for q in none int4; do run $v $q-b1 --requests 1 --quantization $q; done; done
for v in old native; do for q in none int4; do run $v $q-b16 --requests 16 --quantization $q; run $v $q-b64 --requests 64 --warmup 64 --quantization $q; done; done
note "llama.cpp build: $(cat /tmp/llama.cpp/done 2>/dev/null || echo running) $(tail -1 /tmp/llama-build.log 2>/dev/null)"
