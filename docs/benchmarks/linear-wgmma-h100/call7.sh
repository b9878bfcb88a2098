#!/bin/bash
# Fifteenth session, call 7: the gpu suite natively and as compute_75 PTX (tests/gpu/run-on-device.sh test) after the
# Turing build fix, then racecheck on the SiLU·mul linear tests (every mode: small kernel, wgmma with 4 and 8 stages
# and cluster split-K, cuBLAS).
set -u
T0=$(date +%s)
S=$OUT/summary7.txt; L=$OUT/l7; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
OUT=$L timeout 400 tests/gpu/run-on-device.sh test >$L/test.txt 2>&1
note "run-on-device test rc $?"
grep -E "^BUILD|^gpu suite" $L/test.txt | tee -a $S
tail -4 $L/test.txt | tee -a $S
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
left=$(( 580 - ($(date +%s) - T0) ))
if [ $left -gt 30 ]; then
  FK_TEST_FILTER="test_linear_silu_mul" FK_TEST_UNDER_SANITIZER=1 timeout $left compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/race-silu.txt 2>&1
  note "racecheck test_linear_silu_mul: exit $? $(grep -E 'PASSED|FAILED|RACECHECK SUMMARY' $L/race-silu.txt | tr '\n' ' ')"
fi
tar czf $OUT/l7.tgz -C $OUT l7 && rm -rf $L
note done
