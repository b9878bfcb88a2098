#!/bin/bash
# Seventh session, call 2: why the staged kernel is slow: Nsight Compute on it and on the register-streamed kernel
# (isolated), and the carveout experiment (FK_CARVEOUT) in the step.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
( meson setup /tmp/fk-trace . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a -Dcuda_args=-DFK_TRACE >$L/setup-t.log 2>&1 &&
  ninja -C /tmp/fk-trace -j8 tools/flashkernel >$L/build-t.log 2>&1 ) || note "BUILD FAILED trace" &
( meson setup /tmp/fk-native . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-n.log 2>&1 &&
  ninja -C /tmp/fk-native -j8 tools/flashkernel kernels/bench/bench_kernels >$L/build-n.log 2>&1 ) || note "BUILD FAILED native"
note "native built"
B=/tmp/fk-native/kernels/bench/bench_kernels
for v in "k_linear_quant_staged int4" "k_linear_quant int4"; do
  timeout 150 ncu --clock-control none --profile-from-start off --section SpeedOfLight --section WarpStateStats \
    --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section SchedulerStats \
    $B --ncu --only "$v" > "$L/ncu-${v// /_}.txt" 2>&1; note "ncu $v: exit $?"
done
wait
note "all built"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for c in -1 100 0; do
  FK_CARVEOUT=$c run native int4-b1-kb96-c$c --prompt-len 128 --requests 1 --quantization int4
  FK_CARVEOUT=$c FK_QUANT_STAGED_KB=0 run native int4-b1-kb0-c$c --prompt-len 128 --requests 1 --quantization int4
done
for c in -1 100; do
  FK_CARVEOUT=$c FK_TRACE_FILE=$L/trace-c$c.txt timeout 90 /tmp/fk-trace/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 --quantization int4 >$L/trace-c$c.log 2>&1
  python3 kernels/bench/trace_report.py $L/trace-c$c.txt >$OUT/trace-int4-b1-c$c.txt 2>&1
  note "trace c$c: $(grep -E 'output tokens/s' $L/trace-c$c.log); $(head -1 $OUT/trace-int4-b1-c$c.txt)"
  rm -f $L/trace-c$c.txt
done
tar czf $OUT/l2.tgz -C $OUT l2
for f in $L/ncu-*; do echo "== $f"; grep -E "^  [a-z_].*linear_quant|Duration  " $f | head -24; done
sed -n 1,14p $OUT/trace-int4-b1-c100.txt
