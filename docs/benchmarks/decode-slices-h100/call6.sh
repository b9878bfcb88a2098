#!/bin/bash
# Fourteenth session, call 6: bench_attention at the final policy (772694f): every decode row, "auto" now the sliced
# fragments kernel from 2 x SMs pairs; twice.
set -u
T0=$(date +%s)
S=$OUT/summary6.txt; mkdir -p $OUT
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
meson setup /tmp/fk-new -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 &&
  ninja -C /tmp/fk-new kernels/bench/bench_attention >$OUT/build.log 2>&1
note "built: rc $?"
for r in 1 2; do
  timeout 100 /tmp/fk-new/kernels/bench/bench_attention >$OUT/bench_attention-$r.txt 2>&1
  note "bench_attention run $r rc $?"
done
grep -E "^device|RESULT decode_attention [0-9]|RESULT decode_attention (staged|auto)" $OUT/bench_attention-1.txt | sed 's/RESULT decode_attention //' >>$S
note done
