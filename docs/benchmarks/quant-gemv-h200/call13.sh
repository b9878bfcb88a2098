#!/bin/bash
# Session 3, call 13: every kernel of bench-1b batch-1 decode steps alone (ncu serializes kernels: no PDL overlap),
# fp16 and int4: duration and DRAM bytes per kernel, to map the step's non-linear time.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary13.txt; L=$OUT/l13; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
[ -d /tmp/fk-native ] || meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
ninja -C /tmp/fk-native -j16 tools/flashkernel >$L/build.log 2>&1 || { note "BUILD FAILED"; exit 1; }
wait; note "built, model ready"
for q in none int4; do
  timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__block_size \
    --csv --page raw /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests 1 \
    --prompt-len 16 --max-tokens 4 --warmup 0 --max-model-len 4096 --quantization $q > $L/ncu-$q.csv 2>$L/ncu-$q.err
  note "ncu $q rc=$? $(wc -l < $L/ncu-$q.csv) lines"
done
