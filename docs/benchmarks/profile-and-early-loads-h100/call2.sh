#!/bin/bash
# Ninth session, call 2: (a) the profile's class fix: test_engine_cuda without the replay's class restore (expected
# to fail test_profile_accounts_every_step) and with it; the fixed profile at 1, 16, 64, 256 requests; (b) INT8
# batch 1: plain, FK_TRACE in linear_quant.cu only, full FK_TRACE build; SASS of linear_quant for plain and lqtrace.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
for v in nofix lqtrace; do mkdir -p /tmp/src-$v; git ls-files -co --exclude-standard | tar cf - -T - | tar xf - -C /tmp/src-$v; cp -r .peers/v/$v/. /tmp/src-$v/; done
b() { local dir=$1 src=$2 extra=$3; shift 3; ( meson setup $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a $extra >$dir.setup.log 2>&1 &&
  ninja -C $dir -j6 "$@" >$dir.build.log 2>&1 ) || note "BUILD FAILED $dir"; }
b /tmp/fk-native . "" tools/flashkernel tests/gpu/test_engine_cuda &
b /tmp/fk-nofix /tmp/src-nofix "" tests/gpu/test_engine_cuda &
b /tmp/fk-lqtrace /tmp/src-lqtrace "" tools/flashkernel &
b /tmp/fk-trace . -Dcuda_args=-DFK_TRACE tools/flashkernel &
wait
note "built"
for v in nofix native; do
  (cd /tmp/fk-$v && timeout 300 meson test --no-rebuild engine_cuda --print-errorlogs >$L/test-$v.log 2>&1); note "test_engine_cuda $v: rc=$? $(grep -E '^(Ok|Fail):' $L/test-$v.log | tr -s ' ' | tr '\n' ' ')"
  grep -E "FAILED|Failure|assert|error" /tmp/fk-$v/meson-logs/testlog.txt | head -5 >>$S
done
wait
run() { local bin=$1 lab=$2; shift 2
  timeout 120 /tmp/fk-$bin/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for n in 1 16 64 256; do
  w=""; [ $n -ge 64 ] && w="--warmup $n"
  run native profile-b$n --requests $n $w --profile; cp $L/profile-b$n.log $OUT/profile-b$n.txt
done
for i in 1 2; do for v in native lqtrace trace; do run $v int8-$v-$i --requests 1 --quantization int8; done; done
for v in native lqtrace; do run $v int4-$v --requests 1 --quantization int4; run $v fp16-$v --requests 1; done
for v in native lqtrace; do cuobjdump -sass /tmp/fk-$v/kernels/libfk_kernels.a.p/linear_quant.cu.o > $OUT/sass-linear_quant-$v.txt 2>&1; done
gzip $OUT/sass-*.txt
tar czf $OUT/l2.tgz -C $OUT l2
for n in 1 16 64 256; do grep -A8 "profile: decode" $OUT/profile-b$n.txt; done
cat $S
