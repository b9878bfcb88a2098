#!/bin/bash
# Eighteenth session, call 9: the final tree (the early-release flag thread_local; before it, 3576430: FK_PDL_EARLY parsed at workspace creation, a test of bad
# values). Native build; the engine and model gpu tests with the defaults, and engine_cuda again with FK_PDL_EARLY=15
# (o early at fp16 too); fp16 batch 1 once.
set -u
T0=$(date +%s)
S=$OUT/summary9.txt; L=$OUT/l9; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/fk-native; meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 && ninja -C /tmp/fk-native -j14 > $L/build.log 2>&1
note "build: $(tail -1 $L/build.log)"
for t in engine_cuda engine_cuda_sync gpu_model wait_order; do
  timeout 150 meson test -C /tmp/fk-native $t --print-errorlogs > $L/test-$t.log 2>&1; note "$t: $(grep -E '^(Ok|Fail):' $L/test-$t.log | tr -s ' ' | tr '\n' ' ')"
done
FK_PDL_EARLY=15 timeout 150 meson test -C /tmp/fk-native engine_cuda --print-errorlogs > $L/test-engine_cuda-mask15.log 2>&1; note "engine_cuda with FK_PDL_EARLY=15: $(grep -E '^(Ok|Fail):' $L/test-engine_cuda-mask15.log | tr -s ' ' | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
timeout 60 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests 1 --prompt-len 128 --max-tokens 128 --max-model-len 4096 > $L/engine-fp16-b1.log 2>&1
note "fp16 b1: $(grep 'output tokens/s' $L/engine-fp16-b1.log)"
for q in int8 int4; do timeout 60 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests 1 --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $q > $L/engine-$q-b1.log 2>&1
  note "$q b1: $(grep 'output tokens/s' $L/engine-$q-b1.log)"; done
tar czf $OUT/l9.tgz -C $OUT l9 && rm -rf $L
note done
