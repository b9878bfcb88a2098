#!/bin/bash
# Fourteenth session, call 7: test_gpu_ops' decode attention tests after the FK_DECODE_SLICES refusal check was added.
set -u
T0=$(date +%s)
S=$OUT/summary7.txt; mkdir -p $OUT
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)+test"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
meson setup /tmp/fk-new -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 &&
  ninja -C /tmp/fk-new tests/gpu/test_gpu_ops >$OUT/build.log 2>&1
note "built: rc $?"
FK_TEST_FILTER="test_attention_decode*" timeout 150 /tmp/fk-new/tests/gpu/test_gpu_ops >$OUT/gpu_ops.txt 2>&1
note "test_attention_decode*: rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/gpu_ops.txt | tr '\n' ' ')"
grep -E "^\[" $OUT/gpu_ops.txt >>$S
