#!/bin/bash
# Eleventh session, call 15 (call 14's machine): the gpu suite at 7bf9b61 (native sm_90a and compute_75 PTX), then
# compute-sanitizer memcheck on test_linear_silu_mul (k_silu_mul's vector path) and racecheck on test_sample.
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu; L=$OUT/l15; mkdir -p $L
OUT=$L/suite sh tests/gpu/run-on-device.sh test >$L/suite.log 2>&1; echo "suite rc $?"; grep -E "gpu suite" $L/suite.log
FK_TEST_FILTER='test_linear_silu_mul' timeout 200 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
  /tmp/fk-native/tests/gpu/test_gpu_ops > $L/memcheck-silu.log 2>&1
echo "memcheck silu rc $? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' $L/memcheck-silu.log | tr '\n' ' ')"
FK_TEST_FILTER='test_sample' timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops \
  > $L/racecheck-sample.log 2>&1
echo "racecheck sample rc $? $(grep -E 'RACECHECK SUMMARY' $L/racecheck-sample.log)"
