#!/bin/bash
# Tenth session, call 6: the gpu suite at HEAD (native sm_90a and compute_75 PTX), then compute-sanitizer memcheck on
# test_linear (the padded path's cuBLAS reads of W and its 2-D copies).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
OUT=$L/suite sh tests/gpu/run-on-device.sh test >$L/suite.log 2>&1
note "suite rc $?"
tail -30 $L/suite.log | tee -a $S
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
FK_TEST_FILTER='test_linear' timeout 200 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/memcheck-linear.log 2>&1
note "memcheck test_linear: exit $? — $(grep -E 'PASSED|FAILED' $L/memcheck-linear.log | head -2 | tr '\n' ' ') $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' $L/memcheck-linear.log | tr '\n' ' ')"
tar czf $OUT/l6.tgz -C $OUT l6
cat $S
