#!/bin/bash
# Call 15: compute-sanitizer on the quantized-linear tests (the tiled kernel's cp.async pipeline and split-K sum).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
echo "commit $(cat .peers/commit)"
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -x /tmp/fk-native/tests/gpu/test_gpu_ops ] || { echo "no build"; exit 1; }
for tool in racecheck memcheck synccheck initcheck; do
  FK_TEST_FILTER='test_quant_linear' FK_TEST_UNDER_SANITIZER=1 timeout ${FK_SANITIZE_TIMEOUT:-130} compute-sanitizer --tool $tool --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops > $OUT/sanitize-$tool.log 2>&1
  echo "[$(( $(date +%s) - T0 ))s] $tool on test_quant_linear: exit $? — $(grep -E 'PASSED|FAILED' $OUT/sanitize-$tool.log | head -1) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/sanitize-$tool.log | tr '\n' ' ')"
done
