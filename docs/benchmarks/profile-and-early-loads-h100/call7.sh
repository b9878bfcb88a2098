#!/bin/bash
# Ninth session, call 7: racecheck on test_quant_linear* at HEAD with every hazard printed, grouped by kernel (call 6
# printed 100 of 132, all inside cuBLAS's nvjet GEMMs).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary7.txt; L=$OUT/l7; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( meson setup /tmp/fk-native . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-native -j14 tests/gpu/test_gpu_ops >$L/build.log 2>&1 ) || note "BUILD FAILED"
FK_TEST_FILTER='test_quant_linear*' timeout 500 compute-sanitizer --tool racecheck --print-limit 100000 --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/racecheck.log 2>&1
note "racecheck test_quant_linear*: exit $? — $(grep -E 'PASSED|FAILED' $L/racecheck.log | head -1) $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $L/racecheck.log | tr '\n' ' ')"
note "reports by kernel:"; grep -oE "Race reported between [A-Za-z]+ access at [A-Za-z0-9_]+" $L/racecheck.log | awk '{print $NF}' | sort | uniq -c | tee -a $S
note "reports outside cuBLAS (nvjet): $(grep -E 'Race reported' $L/racecheck.log | grep -vc nvjet)"
gzip -c $L/racecheck.log > $OUT/racecheck-quant-linear.log.gz
