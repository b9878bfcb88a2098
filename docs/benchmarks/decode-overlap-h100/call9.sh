#!/bin/bash
# Eighth session, call 9: the working tree (backend_cuda.c's head-dim check in one helper; a test that both attention
# ops refuse head dim 96): test_gpu_ops' attention tests, natively.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary9.txt; L=$OUT/l9; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); HEAD $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( meson setup /tmp/fk-native . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-native -j16 tests/gpu/test_gpu_ops >$L/build.log 2>&1 ) || { note "BUILD FAILED"; tail -20 $L/build.log; }
FK_TEST_FILTER='test_attention*' timeout 200 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/attention.log 2>&1
note "test_attention*: exit $? — $(grep -E '^\[ +(OK|FAILED|PASSED) ' $L/attention.log | tr '\n' ' ')"
tar czf $OUT/l9.tgz -C $OUT l9
