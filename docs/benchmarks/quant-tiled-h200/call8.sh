#!/bin/bash
# Call 8: int8 vs int4 tiled kernel: stall reasons (ncu metrics) and SASS.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs8; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -d /tmp/fk-native ] || meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
B=/tmp/fk-native/kernels/bench
ninja -C /tmp/fk-native -j16 kernels/bench/bench_linear_quant >$L/build.log 2>&1 || { note "BUILD FAILED"; tail -30 $L/build.log | tee -a $S; exit 1; }
note "built"




M="smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,smsp__inst_executed.sum,smsp__inst_executed_pipe_tensor.sum,gpu__time_duration.sum,smsp__warps_active.avg.per_cycle_active,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fp16.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,launch__registers_per_thread,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active"
for f in 1 2; do
  FK_BENCH_ONLY="1b gate_up" FK_BENCH_M=128 timeout 100 ncu --clock-control none --kernel-name-base demangled -k "regex:linear_quant_mma_kernel<.int.$f" -c 1 --metrics $M $B/bench_linear_quant > $L/ncu_f$f.txt 2>&1
  note "ncu fmt $f rc=$?"; sed -n '/linear_quant_mma_kernel/,$p' $L/ncu_f$f.txt | grep -E "__" | awk '{print $1, $(NF)}' | tee -a $S
done
tar czf $OUT/logs.tgz -C $L ncu_f1.txt ncu_f2.txt build.log
