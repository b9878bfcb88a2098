#!/bin/bash
# Call 7: the final tree's quant op tests natively (SiLU·mul first: INT8 now 4-warp blocks; then plain: the resident
# kernel). Device budget nearly spent: whatever finishes is reported.
set -u
S=$OUT/summary7.txt; mkdir -p $OUT/l7
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
echo "tree $(cat .peers/commit) + working tree; $(nvidia-smi --query-gpu=name --format=csv,noheader)" | tee -a $S
rm -rf /tmp/fk-f; meson setup /tmp/fk-f -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 && ninja -C /tmp/fk-f -j16 tests/gpu/test_gpu_ops > $OUT/l7/build.log 2>&1; echo "build: $(tail -1 $OUT/l7/build.log)" | tee -a $S
for f in test_quant_linear_silu_mul test_quant_linear test_quant_linear_gelu; do
  env FK_TEST_DEVICE=cuda FK_TEST_FILTER=$f timeout 60 /tmp/fk-f/tests/gpu/test_gpu_ops > $OUT/l7/$f.log 2>&1; echo "$f: rc $? $(grep -E 'PASSED|FAILED' $OUT/l7/$f.log | tr '\n' ' ')" | tee -a $S
done
