#!/bin/bash
# Session 4, call 2: the gpu suite (native + compute_75 PTX) on the working tree (RoPE over several blocks, indices
# and angles before the PDL wait; RMS norm in registers; decode attention's indices before the wait), then
# batch-1 greedy decode of bench-1b, HEAD's four files (old) against the working tree (new), 3 rounds.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp .peers/old/* /tmp/src-old/kernels/
rm -rf /tmp/fk-old
(meson setup /tmp/fk-old /tmp/src-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-old.log 2>&1 && nice ninja -C /tmp/fk-old -j4 tools/flashkernel >$L/build-old.log 2>&1 || echo "BUILD FAILED old" | tee -a $S) &
OUT=$L sh tests/gpu/run-on-device.sh test > $L/suite.log 2>&1; note "suite rc=$?"
grep -E "gpu suite|BUILD|worst|greedy" $L/summary.txt | tee -a $S
wait; note "old built"
run() { local v=$1 lab=$2; shift 2
  timeout 60 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 --requests 1 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2 3; do for v in old native; do for q in none int8 int4; do run $v $q-$r --quantization $q; done; done; done
