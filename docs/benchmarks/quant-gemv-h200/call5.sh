#!/bin/bash
# Session 3, call 5: L2 prefetch of the next linear's weight (prefetch_linear, FK_PREFETCH_MB) in the whole decode
# step: bench-engine batch 1 and 16, fp16/int8/int4, caps 0 (off) / 8 / 16 / 32 / 64 MiB interleaved; test_gpu_model.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/fk-new
meson setup /tmp/fk-new -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
ninja -C /tmp/fk-new -j16 tools/flashkernel tests/gpu/test_gpu_model >$L/build.log 2>&1 || { note "BUILD FAILED"; tail -30 $L/build.log | tee -a $S; exit 1; }
note "built"
timeout 200 /tmp/fk-new/tests/gpu/test_gpu_model >$L/test_gpu_model.log 2>&1
note "test_gpu_model rc=$?: $(grep -E 'PASSED|FAILED' $L/test_gpu_model.log | tr '\n' ' ')"
wait
run() { local mb=$1 lab=$2; shift 2
  FK_PREFETCH_MB=$mb /tmp/fk-new/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/p$mb-$lab.log 2>&1
  note "prefetch $mb MiB $lab: $(grep -E 'output tokens/s' $L/p$mb-$lab.log) | $(grep -E 'launches per step' $L/p$mb-$lab.log | cut -c1-40)"; }
for r in 1 2; do for q in none int8 int4; do for mb in 0 8 16 32 64; do run $mb $q-b1-$r --requests 1 --quantization $q; done; done; done
for q in none int8 int4; do for mb in 0 16 64; do run $mb $q-b16 --requests 16 --quantization $q; done; done
tar czf $OUT/logs.tgz -C $L .
