#!/bin/bash
# Call 1: the tree as the twenty-second session left it (d524a63's code). Native (sm_90a) and compute_75 PTX builds
# side by side; the native gpu suite; then compute-sanitizer memcheck on the quantized linear op tests.
set -u
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
bld() { # name arch
  rm -rf /tmp/fk-$1; meson setup /tmp/fk-$1 -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$2 >/dev/null 2>&1 &&
  ninja -C /tmp/fk-$1 -j8 >$L/build-$1.log 2>&1; echo "$1: $(tail -1 $L/build-$1.log)"
}
bld native sm_90a > $L/b1.txt & bld ptx75 compute_75 > $L/b2.txt & wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
timeout 420 meson test -C /tmp/fk-native --suite gpu --print-errorlogs > $L/suite-native.log 2>&1; rc=$?
cp /tmp/fk-native/meson-logs/testlog.txt $L/testlog-native.txt 2>/dev/null
note "gpu suite native: rc $rc $(grep -E '^ *[0-9]+/[0-9]+ gpu' $L/suite-native.log | tr -s ' ' | tr '\n' ';')"
FK_TEST_UNDER_SANITIZER=1 FK_TEST_DEVICE=cuda FK_TEST_FILTER='test_quant_linear*' OMP_WAIT_POLICY=passive timeout 120 \
  compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops > $L/memcheck-quant.log 2>&1
note "memcheck test_quant_linear*: rc $? $(grep -E 'PASSED|FAILED|ERROR SUMMARY|LEAK SUMMARY' $L/memcheck-quant.log | tr '\n' ' ')"
tar czf $OUT/l1.tgz -C $OUT l1 && rm -rf $L
note done
