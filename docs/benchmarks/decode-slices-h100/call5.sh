#!/bin/bash
# Fourteenth session, call 5: the gpu suite natively and as compute_75 PTX at the final policy, then compute-sanitizer
# memcheck and racecheck on the attention op tests (every slice count of the fragments kernel).
set -u
T0=$(date +%s)
S=$OUT/summary5.txt; L=$OUT/l5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
OUT=$L/suite sh tests/gpu/run-on-device.sh test >$L/suite.log 2>&1; note "suite rc $?"
grep -E "gpu suite|BUILD|FAIL|Ok:|Fail:|Skipped:" $L/suite/summary.txt | tee -a $S
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
for tool in memcheck racecheck; do
  extra=""; [ $tool = memcheck ] && extra="--leak-check full"
  FK_TEST_FILTER="test_attention*" FK_TEST_DEVICE=cuda FK_TEST_UNDER_SANITIZER=1 OMP_WAIT_POLICY=passive timeout 170 \
    compute-sanitizer --tool $tool $extra --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/$tool.log 2>&1
  note "$tool test_attention*: rc $? $(grep -cE '^\[       OK' $L/$tool.log) ok, $(grep -E 'FAILED' $L/$tool.log | head -1) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' $L/$tool.log | tr '\n' ' ')"
done
tar czf $OUT/l5.tgz -C $OUT l5
rm -rf $L
note done
