#!/bin/bash
# Sixth session (2026-11-26), call 3: compute-sanitizer on the CUDA engine test (the copy stream) and the model test, at 47507e1.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
FK_SANITIZE_TIMEOUT=300 FK_SANITIZE_RUNS="memcheck:engine_cuda memcheck:gpu_model" OUT=$L/san timeout 560 sh tests/gpu/run-on-device.sh sanitize >$L/san.log 2>&1
note "sanitize: exit $?"; cat $L/san/summary.txt | tee -a $S
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
FK_TEST_FILTER=test_overlapped_steps_equal_sync FK_TEST_UNDER_SANITIZER=1 FK_TEST_DEVICE=cuda OMP_WAIT_POLICY=passive timeout 200 \
  compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/fk-native/tests/gpu/test_engine_cuda >$L/race-overlap.log 2>&1
note "racecheck test_overlapped_steps_equal_sync: exit $? — $(grep -E 'PASSED|FAILED' $L/race-overlap.log | head -1) $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $L/race-overlap.log | tr '\n' ' ')"
cp /tmp/fk-logs/sanitize-*.log $L/ 2>/dev/null; tar czf $OUT/l3.tgz -C $OUT l3 && rm -rf $L
