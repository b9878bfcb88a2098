#!/bin/bash
# Sixth session (2026-11-26), call 4: llama.cpp's build started in the background; HEAD's batch-1 decode three times
# per format while it builds; then wait for the build (call 5 runs llama-bench on the same machine).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
[ -f /tmp/llama.cpp/done ] || setsid sh -c ".peers/build-llama-cpp.sh /tmp/llama.cpp >/tmp/llama-build.log 2>&1" </dev/null >/dev/null 2>&1 &
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit) (HEAD)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
( meson setup /tmp/fk-native . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-native -j4 tools/flashkernel >$L/build.log 2>&1 ) || note "BUILD FAILED"
wait
for r in 1 2 3; do for q in none int8 int4; do
  timeout 90 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 --quantization $q >$L/$q-b1-$r.log 2>&1
  note "$q b1 run $r: $(grep -E 'output tokens/s' $L/$q-b1-$r.log)"
done; done
for i in $(seq 1 100); do [ -f /tmp/llama.cpp/done ] && break; [ $(( $(date +%s) - T0 )) -gt 570 ] && break; sleep 5; done
note "llama.cpp build: $(cat /tmp/llama.cpp/done 2>/dev/null || echo running) $(tail -1 /tmp/llama-build.log 2>/dev/null)"
tar czf $OUT/l4.tgz -C $OUT l4 && rm -rf $L
