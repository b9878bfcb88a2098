#!/bin/bash
# Call 4 of 2026-11-26: the quantized small linear's warps per block and batch depth in the whole decode step
# (call 3: 8 warps gave int8 +8.5 %, int4 +6.8 % at batch 1): int8 and int4 at 1, 8 and 16 requests, interleaved.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
declare -A ARGS=(
  [base]=""
  [qw8]="-DFK_QLINEAR_MAX_WARPS=8"
  [qw4]="-DFK_QLINEAR_MAX_WARPS=4"
  [qw8deep]="-DFK_QLINEAR_MAX_WARPS=8 -DFK_QLINEAR_BATCH_INT8=8 -DFK_QLINEAR_BATCH_INT4=4"
  [qw8sm12]="-DFK_QLINEAR_MAX_WARPS=8 -DFK_QLINEAR_WARPS_PER_SM=12"
)
V="base qw8 qw4 qw8deep qw8sm12"
for v in $V; do
  [ -x /tmp/fk-$v/tools/flashkernel ] && continue
  meson setup /tmp/fk-$v -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=${ARGS[$v]}" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j16 tools/flashkernel >$L/build-$v.log 2>&1 || { note "BUILD $v FAILED"; grep -A5 error $L/build-$v.log | head; }
  note "built $v"
done
wait
run() { # variant label args...
  local v=$1 lab=$2; shift 2
  /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$lab-$v.log 2>&1
  note "$lab $v: $(grep -E 'output tokens/s' $L/$lab-$v.log)"
}
for q in int8 int4; do
  for r in 1 2; do for v in $V; do run $v b1-$q-$r --requests 1 --quantization $q; done; done
  for n in 8 16; do for v in $V; do run $v b$n-$q --requests $n --quantization $q; done; done
done
tar czf $OUT/logs.tgz -C $L .
