#!/bin/bash
# Call 2 (the machine of call 1, warm: its builds in /tmp): the compute_75 PTX gpu suite, and beside it
# compute-sanitizer racecheck on the quantized linear op tests of the native build. Rebuilds what is missing.
set -u
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
bld() { # name arch
  [ -x /tmp/fk-$1/tests/gpu/test_gpu_ops ] && { echo "$1: kept"; return; }
  rm -rf /tmp/fk-$1; meson setup /tmp/fk-$1 -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$2 >/dev/null 2>&1 &&
  ninja -C /tmp/fk-$1 -j8 >$L/build-$1.log 2>&1; echo "$1: $(tail -1 $L/build-$1.log)"
}
bld native sm_90a > $L/b1.txt & bld ptx75 compute_75 > $L/b2.txt & wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
( FK_TEST_UNDER_SANITIZER=1 FK_TEST_DEVICE=cuda FK_TEST_FILTER='test_quant_linear*' OMP_WAIT_POLICY=passive timeout 300 \
  compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops > $L/racecheck-quant.log 2>&1
  note "racecheck test_quant_linear*: rc $? $(grep -E 'PASSED|FAILED|RACECHECK SUMMARY|ERROR SUMMARY' $L/racecheck-quant.log | tr '\n' ' ')" ) &
timeout 480 meson test -C /tmp/fk-ptx75 --suite gpu --print-errorlogs > $L/suite-ptx75.log 2>&1; rc=$?
cp /tmp/fk-ptx75/meson-logs/testlog.txt $L/testlog-ptx75.txt 2>/dev/null
note "gpu suite compute_75 PTX: rc $rc $(grep -E '^ *[0-9]+/[0-9]+ gpu' $L/suite-ptx75.log | tr -s ' ' | tr '\n' ';')"
wait
tar czf $OUT/l2.tgz -C $OUT l2 && rm -rf $L
note done
