#!/bin/bash
# Fifteenth session, call 2: bench_linear on the Llama shapes (ours / cuBLAS / wgmma with stage and split variants).
set -u
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/fk-native ] || meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1
ninja -C /tmp/fk-native kernels/bench/bench_linear >$L/build.log 2>&1
note "built: rc $?"
FK_BENCH_ONLY=llama timeout 400 /tmp/fk-native/kernels/bench/bench_linear >$L/bench_linear.txt 2>&1
note "bench_linear rc $?"
grep -E "^device|^llama" $L/bench_linear.txt | grep -vE " int[48] " | tee -a $S
tar czf $OUT/l2.tgz -C $OUT l2 && rm -rf $L
note done
