#!/bin/bash
# Session 3, call 10 (an H100 if one comes): llama.cpp build started in the background; native build; bench_linear
# (fp16 + quantized small kernels); bench-engine batch-1 greedy decode of bench-1b 3x per format; 64 requests.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=$OUT/l10; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -f /tmp/llama.cpp/done ] || setsid sh -c ".peers/build-llama-cpp.sh /tmp/llama.cpp >/tmp/llama-build.log 2>&1" </dev/null >/dev/null 2>&1 &
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
[ -d /tmp/fk-native ] || meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
nice ninja -C /tmp/fk-native -j8 tools/flashkernel kernels/bench/bench_linear >$L/build.log 2>&1 || { note "BUILD FAILED"; exit 1; }
note "built"
timeout 200 /tmp/fk-native/kernels/bench/bench_linear >$L/bench_linear.log 2>&1; note "bench_linear rc=$?"
grep -v RESULT $L/bench_linear.log | grep -E "^device|int8|int4" | awk '$5==1 || $5==8 || $5==16 || /device/' | tee -a $S
wait
run() { local lab=$1; shift
  timeout 100 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 --max-model-len 4096 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for r in 1 2 3; do for q in none int8 int4; do run $q-b1-$r --requests 1 --quantization $q; done; run int4-head-b1-$r --requests 1 --quantization int4 --quantize-lm-head; done
for q in none int8 int4; do run $q-64-w64 --requests 64 --quantization $q --warmup 64; done
