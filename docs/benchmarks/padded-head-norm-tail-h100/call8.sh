#!/bin/bash
# Tenth session, call 8: after grow_scratch (both scratches through one helper): the op tests of the linears and the
# quantized linears (dequantization scratch in chunks), natively.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary8.txt; L=$OUT/l8; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( meson setup /tmp/fk-new . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-new -j16 tests/gpu/test_gpu_ops >$L/build.log 2>&1 ) || { note "BUILD FAILED"; tail -20 $L/build.log; }
for f in 'test_linear*' 'test_quant*'; do
  (cd /tmp/fk-new && FK_TEST_FILTER="$f" timeout 250 ./tests/gpu/test_gpu_ops >$L/test-${f%\*}.log 2>&1; echo "rc $?" >>$L/test-${f%\*}.log)
  note "$f: $(grep -E '^\[  (PASSED|FAILED) \]' $L/test-${f%\*}.log | tr '\n' ' ') $(tail -1 $L/test-${f%\*}.log)"
done
tar czf $OUT/l8.tgz -C $OUT l8
cat $S
