#!/bin/bash
# Session 3, call 1: H200 baseline of bench_linear (fp16 + quantized small kernels) and ncu of the quantized
# small kernel at m = 1 on 1B gate_up / down (INT8, INT4) and the fp16 kernel beside it.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -d /tmp/fk-native ] || meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
B=/tmp/fk-native/kernels/bench
ninja -C /tmp/fk-native -j16 kernels/bench/bench_linear >$L/build.log 2>&1 || { note "BUILD FAILED"; tail -30 $L/build.log | tee -a $S; exit 1; }
note "built"
timeout 200 $B/bench_linear >$L/bench_linear.log 2>&1
note "bench_linear rc=$?"
grep -v RESULT $L/bench_linear.log | grep -E "^device|int8|int4" | tee -a $S
grep -v RESULT $L/bench_linear.log | awk '$5==1 || $5==8' | grep -v int | tee -a $S
for f in 1 2; do for sh in "1b gate_up" "1b down"; do
  FK_BENCH_ONLY="$sh" timeout 100 ncu --clock-control none --kernel-name-base demangled -k "regex:linear_quant_kernel<$f," -c 1 \
    --section SpeedOfLight --section Occupancy --section SchedulerStats --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis \
    $B/bench_linear > "$L/ncu_q${f}_${sh// /_}.txt" 2>&1
  note "ncu fmt $f $sh rc=$?"
  grep -E "Duration|DRAM Throughput|Memory Throughput|Issue Slots Busy|Issued Warp|Achieved Occupancy|Registers Per|Theoretical Occ|Block Limit|Active Warps Per|Eligible Warps|No Eligible|Grid Size|Block Size|Warp Cycles Per Issued" "$L/ncu_q${f}_${sh// /_}.txt" | tee -a $S
done; done
FK_BENCH_ONLY="1b gate_up" timeout 100 ncu --clock-control none --kernel-name-base demangled -k "regex:linear_small_kernel" -c 1 \
    --section SpeedOfLight --section Occupancy --section SchedulerStats --section WarpStateStats --section LaunchStats \
    $B/bench_linear > "$L/ncu_f16.txt" 2>&1
note "ncu fp16 rc=$?"
grep -E "Duration|DRAM Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|Theoretical Occ|Eligible Warps|No Eligible|Grid Size|Block Size|Warp Cycles Per Issued" "$L/ncu_f16.txt" | tee -a $S
tar czf $OUT/logs.tgz -C $L .
