#!/bin/bash
# Eleventh session, call 14: flashkernel-server at HEAD (7bf9b61: fragments decode kernel, vectorized silu_mul, greedy
# sampler's loads in flight) and "old" (HEAD with kernels/silu_mul.cu and kernels/sample.cu of 73f87fc), the same
# load tester, bench-1b-ascii, closed loop 64/128/256 clients at 128/128 and 64 at 1,024/256, alternated twice;
# bench-engine at 256 on the same model for the server/engine ratio.
set -u
T0=$(date +%s)
S=$OUT/summary14.txt; L=/tmp/l14; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( [ -d /tmp/bench-1b ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1
  python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >$L/mkascii.log 2>&1 ) &
rm -rf /tmp/src-old; mkdir -p /tmp/src-old; git ls-files -co --exclude-standard | tar cf - -T - | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
b() { local dir=$1 src=$2; shift 2; ( meson setup --wipe $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$dir.setup.log 2>&1 &&
  ninja -C $dir -j8 "$@" >$dir.build.log 2>&1 ) || { note "BUILD FAILED $dir"; tail -30 $dir.build.log; }; }
b /tmp/fk-new . tools/flashkernel server/flashkernel-server loadtest/flashkernel-loadtest &
b /tmp/fk-old /tmp/src-old server/flashkernel-server &
wait
note "built; models: $(ls /tmp/bench-1b-ascii | tr '\n' ' ')"
for i in 1 2; do for v in old new; do
  FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="64 128 256" FK_LONG_CONCURRENCY="64" \
    timeout 240 loadtest/run-peer-benchmark.sh /tmp/fk-$v/server/flashkernel-server /tmp/fk-new/loadtest/flashkernel-loadtest \
    /bin/false /tmp/bench-1b-ascii /dev/null $L/serving-$v-$i >$L/serving-$v-$i.log 2>&1
  note "serving $v $i: rc $?"; grep -E "^ +(64|128|256) " $L/serving-$v-$i/benchmark.txt | tee -a $S
done; done
timeout 120 /tmp/fk-new/tools/flashkernel bench-engine --model /tmp/bench-1b-ascii --device cuda --max-tokens 128 \
  --max-model-len 4096 --prompt-len 128 --requests 256 --warmup 256 >$L/engine-new-r256.log 2>&1
note "engine new 256 requests (ascii): $(grep -E 'output tokens/s' $L/engine-new-r256.log)"
mkdir -p $OUT/s; for f in $L/serving-*/benchmark.txt; do cp $f $OUT/s/$(basename $(dirname $f)).txt; done
