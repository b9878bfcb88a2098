#!/bin/bash
# Fourteenth session, call 1: k_linear_mid (17-64 tokens, x through shared memory) against cuBLAS on every
# bench_linear shape at m = 24, 32, 48, 64; the default build and four build-time variants (FK_BENCH_MID_ONLY=1).
set -u
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)+linear_mid"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 &&
  ninja -C /tmp/fk-native kernels/bench/bench_linear kernels/bench/bench_linear_ms4 \
    kernels/bench/bench_linear_mb1 kernels/bench/bench_linear_mb3 >$L/build.log 2>&1
note "built: rc $?"
for v in "" _mb1 _mb3 _ms4; do
  FK_BENCH_MID_ONLY=1 timeout 120 /tmp/fk-native/kernels/bench/bench_linear$v "$v" >$L/bench$v.txt 2>&1
  note "bench_linear$v rc $?"
done
cat $L/bench.txt | grep -E "^device" | tee -a $S
for v in "" _mb1 _mb3 _ms4; do grep "RESULT linear_mid" $L/bench$v.txt | sed -E 's/RESULT linear_mid//' >>$S; done
tar czf $OUT/l1.tgz -C $OUT l1
note done
