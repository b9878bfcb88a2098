#!/bin/bash
# Ninth session, call 6 (call 4's machine): traced INT8 and INT4 batch-1 steps at HEAD (-DFK_TRACE), then racecheck on
# test_quant_linear* (call 4's ran past its 200 s).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( meson setup /tmp/fk-trace . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a -Dcuda_args=-DFK_TRACE >$L/setup-t.log 2>&1 &&
  ninja -C /tmp/fk-trace -j14 tools/flashkernel >$L/build-t.log 2>&1 ) || note "BUILD FAILED trace"
for q in int8 int4; do
  FK_TRACE_FILE=$L/trace.txt timeout 90 /tmp/fk-trace/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 --quantization $q >$L/trace-$q.log 2>&1
  note "traced $q: $(grep -E 'output tokens/s' $L/trace-$q.log)"
  python3 kernels/bench/trace_report.py $L/trace.txt >$OUT/trace-$q-b1.txt 2>&1; rm -f $L/trace.txt
done
FK_TEST_FILTER='test_quant_linear*' timeout 420 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/racecheck-linear.log 2>&1
note "racecheck test_quant_linear*: exit $? — $(grep -E 'PASSED|FAILED' $L/racecheck-linear.log | head -1) $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $L/racecheck-linear.log | tr '\n' ' ')"
tar czf $OUT/l6.tgz -C $OUT l6
for q in int8 int4; do tail -12 $OUT/trace-$q-b1.txt; done
