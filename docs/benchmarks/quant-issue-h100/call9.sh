#!/bin/bash
# Seventh session, call 9: flashkernel-server end to end at HEAD (issue 14's closed loop: 16, 64, 256 clients at
# 128/128 and 64 at 1,024/256 on bench-1b-ascii, flashkernel-loadtest over /v1/completions) and the engine alone at
# the same loads (bench-engine), for the server/engine ratio. No llama.cpp peer (its build alone takes ~9 minutes).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary9.txt; L=$OUT/l9; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &&
  python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >$L/mkascii.log 2>&1 ) || note "model FAILED" &
( meson setup /tmp/fk-native . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-n.log 2>&1 &&
  ninja -C /tmp/fk-native -j16 tools/flashkernel server/flashkernel-server loadtest/flashkernel-loadtest >$L/build-n.log 2>&1 ) || note "BUILD FAILED native"
wait
note "built, models made"
mkdir -p $OUT/serving
FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="16 64 256" FK_LONG_CONCURRENCY="64" timeout 400 \
  loadtest/run-peer-benchmark.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest /bin/false \
  /tmp/bench-1b-ascii /dev/null $OUT/serving >$L/serving.log 2>&1; note "serving: exit $?"
grep -E "^\\$|^ *[0-9]+ |clients|tokens/s" $OUT/serving/benchmark.txt | head -30 | tee -a $S
for n in 64 256; do
  timeout 90 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b-ascii --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests $n --warmup $n >$L/engine-$n.log 2>&1
  note "engine $n x 128/128: $(grep -E 'output tokens/s' $L/engine-$n.log)"
done
timeout 90 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b-ascii --device cuda --max-tokens 256 \
    --max-model-len 4096 --prompt-len 1024 --requests 64 --warmup 64 >$L/engine-long.log 2>&1
note "engine 64 x 1024/256: $(grep -E 'output tokens/s' $L/engine-long.log)"
(cd $OUT/serving && tar czf ../serving.tgz --exclude='server-*.log' . ) ; cp $OUT/serving/benchmark.txt $OUT/benchmark.txt; rm -rf $OUT/serving
tar czf $OUT/l9.tgz -C $OUT l9
cat $OUT/benchmark.txt | head -60
