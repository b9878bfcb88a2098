#!/bin/bash
# Session 3, call 2: ncu of the quantized small kernel (fixed filter), and the PRELOAD2 variant against the default:
# bench_linear on the 1B shapes and bench-engine batch 1 int8/int4/fp16.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
mk=$!
declare -A ARGS=([base]="" [pre2]="-DFK_QLINEAR_PRELOAD2=1")
for v in base pre2; do
  ( [ -d /tmp/fk-$v ] || meson setup /tmp/fk-$v -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=${ARGS[$v]}" >$L/setup-$v.log 2>&1
    ninja -C /tmp/fk-$v -j8 tools/flashkernel kernels/bench/bench_linear >$L/build-$v.log 2>&1 || echo "BUILD FAILED $v" ) &
done
wait %2 %3 2>/dev/null; wait
grep -h "BUILD FAILED" $L/build-*.log; note "built"
MET="--section SpeedOfLight --section Occupancy --section SchedulerStats --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis --section InstructionStats"
for f in 1 2; do for sh in "1b gate_up" "1b down"; do
  o="$L/ncu_q${f}_${sh// /_}.txt"
  FK_BENCH_ONLY="$sh" timeout 100 ncu --clock-control none --kernel-name-base demangled -k "regex:linear_quant_kernel<.int.$f," -c 1 $MET \
    /tmp/fk-base/kernels/bench/bench_linear > "$o" 2>&1
  note "ncu fmt $f $sh rc=$?: $(grep -E '^ +(Duration|DRAM Throughput|Issue Slots Busy|Executed Ipc Active|Eligible Warps Per|Warp Cycles Per Issued|Registers Per Thread|Achieved Occupancy|Grid Size|Executed Instructions) ' "$o" | awk '{print $1,$2,$NF}' | tr '\n' ';')"
done; done
for v in base pre2; do
  FK_BENCH_ONLY="llama-3.2-1b" timeout 100 /tmp/fk-$v/kernels/bench/bench_linear > $L/bl-$v.log 2>&1
  note "bench_linear $v rc=$?"
done
paste <(grep "RESULT linear_quant " $L/bl-base.log | awk '{print $3,$5,$6,$(NF-9),$(NF-7)}') <(grep "RESULT linear_quant " $L/bl-pre2.log | awk '{print $(NF-9),$(NF-7)}') | tee -a $S
wait $mk
run() { local v=$1 lab=$2; shift 2
  /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in base pre2; do for q in int8 int4; do run $v $q-b1-$r --requests 1 --quantization $q; done; done; done
for v in base pre2; do for q in int8 int4; do run $v $q-b16 --requests 16 --quantization $q; done; done
tar czf $OUT/logs.tgz -C $L .
