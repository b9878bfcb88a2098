#!/bin/bash
# Call 3 of 2026-11-26: the small linears' block shape in the whole decode step (PDL overlap needs room for the next
# kernel's blocks): compile-time variants of the warps per block and the warps per SM the split aims for, batch-1
# greedy decode (fp16 twice, int8, int4) and 16 / 64 requests, variants interleaved.
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
  [w8]="-DFK_LINEAR_MAX_WARPS=8 -DFK_QLINEAR_MAX_WARPS=8"
  [w4]="-DFK_LINEAR_MAX_WARPS=4 -DFK_QLINEAR_MAX_WARPS=4"
  [sm12]="-DFK_LINEAR_WARPS_PER_SM=12 -DFK_QLINEAR_WARPS_PER_SM=16"
  [w8sm12]="-DFK_LINEAR_MAX_WARPS=8 -DFK_QLINEAR_MAX_WARPS=8 -DFK_LINEAR_WARPS_PER_SM=12 -DFK_QLINEAR_WARPS_PER_SM=16"
)
V="base w8 w4 sm12 w8sm12"
for v in $V; do
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
for r in 1 2; do for v in $V; do run $v b1-none-$r --requests 1; done; done
for v in $V; do run $v b1-int8 --requests 1 --quantization int8; done
for v in $V; do run $v b1-int4 --requests 1 --quantization int4; done
for v in $V; do run $v b16 --requests 16; done
for v in $V; do run $v b64 --requests 64; done
tar czf $OUT/logs.tgz -C $L .
