#!/bin/bash
# Eighth session, call 5: llama.cpp's build started in the background (call 6 runs llama-bench and llama-server on the
# same machine); HEAD's batch-1 decode three times per format; flashkernel-server end to end at HEAD (issue 14's closed loop: 16, 64, 256 clients at
# 128/128 and 64 at 1,024/256 on bench-1b-ascii, flashkernel-loadtest over /v1/completions) and the engine alone at
# the same loads (bench-engine), for the server/engine ratio. No llama.cpp peer (its build alone takes ~9 minutes).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary5.txt; L=$OUT/l5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
[ -f /tmp/llama.cpp/done ] || setsid sh -c ".peers/build-llama-cpp.sh /tmp/llama.cpp >/tmp/llama-build.log 2>&1" </dev/null >/dev/null 2>&1 &
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &&
  python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >$L/mkascii.log 2>&1 ) || note "model FAILED" &
( meson setup /tmp/fk-native . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-n.log 2>&1 &&
  ninja -C /tmp/fk-native -j6 tools/flashkernel server/flashkernel-server loadtest/flashkernel-loadtest >$L/build-n.log 2>&1 ) || note "BUILD FAILED native"
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
for r in 1 2 3; do for q in none int8 int4; do
  timeout 90 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 --quantization $q >$L/$q-b1-$r.log 2>&1
  note "$q b1 run $r: $(grep -E 'output tokens/s' $L/$q-b1-$r.log)"
done; done
(cd $OUT/serving && tar czf ../serving.tgz --exclude='server-*.log' . ) ; cp $OUT/serving/benchmark.txt $OUT/benchmark.txt; rm -rf $OUT/serving
tar czf $OUT/l5.tgz -C $OUT l5
for i in $(seq 1 100); do [ -f /tmp/llama.cpp/done ] && break; [ $(( $(date +%s) - T0 )) -gt 560 ] && break; sleep 5; done
note "llama.cpp build: $(cat /tmp/llama.cpp/done 2>/dev/null || echo running) $(tail -1 /tmp/llama-build.log 2>/dev/null)"
cat $OUT/benchmark.txt | head -60
