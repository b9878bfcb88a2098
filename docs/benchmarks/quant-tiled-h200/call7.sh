#!/bin/bash
# Call 7: int8 vs int4 tiled kernel stall reasons (ncu), bench variants, serving baselines at 32 requests.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs7; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -d /tmp/fk-native ] || meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
mk=$!
B=/tmp/fk-native/kernels/bench
ninja -C /tmp/fk-native -j16 tools/flashkernel kernels/bench/bench_linear_quant kernels/bench/bench_linear_quant_early kernels/bench/bench_linear_quant_s4 >$L/build.log 2>&1 || { note "BUILD FAILED"; tail -30 $L/build.log | tee -a $S; exit 1; }
note "built"
M="smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio,smsp__inst_executed.sum,smsp__inst_executed_pipe_tensor.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,smsp__warps_active.avg.per_cycle_active,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fmaheavy.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
for f in 1 2; do
  FK_BENCH_ONLY="1b gate_up" FK_BENCH_M=128 timeout 100 ncu --clock-control none -k "regex:linear_quant_mma_kernel<$f" -c 1 --metrics $M $B/bench_linear_quant > $L/ncu_f$f.txt 2>&1
  note "ncu fmt $f rc=$?"; sed -n '/linear_quant_mma_kernel/,$p' $L/ncu_f$f.txt | grep -E "^\s+(sm|smsp|gpu|l1tex)__" | awk '{print $1, $NF}' | tee -a $S
done
for v in "" _early _s4; do
  FK_BENCH_ONLY="gate_up" timeout 100 $B/bench_linear_quant$v >$L/blq$v.log 2>&1
  note "bench$v rc=$?"; grep -v RESULT $L/blq$v.log | awk 'NR>2 && ($4==64||$4==128){print $1,$2,$3,$4,"fp16",$6,"tiled",$8}' | tee -a $S
done
wait $mk
run() { local lab=$1 e=$2; shift 2
  env $e /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$lab.log 2>&1
  note "$lab ($e): $(grep -E 'output tokens/s' $L/$lab.log)"; }
for q in int8 int4; do run $q-n32 X=1 --requests 32 --quantization $q; run $q-n32-old "FK_QUANT_MMA_MAX_M=0 FK_QUANT_SMALL_MAX_M=32" --requests 32 --quantization $q; done
run none-n32 X=1 --requests 32
tar czf $OUT/logs.tgz -C $L .
