#!/bin/bash
# Twelfth session, call 5 (2c2d526): llama.cpp's build started in the background for call 6's peers; the gpu suite
# natively and as compute_75 PTX; compute-sanitizer memcheck on the engine test of decode graphs recorded at start
# (padded decode passes) and on the GPU batch-invariance test of tiny-llama3 (padded passes of 1-32 sequences).
set -u
T0=$(date +%s)
S=$OUT/summary5.txt; L=$OUT/l5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
OUT=$L/suite sh tests/gpu/run-on-device.sh llamacpp-start test >$L/suite.log 2>&1; note "suite rc $?"
grep -E "gpu suite|BUILD" $L/suite/summary.txt | tee -a $S
grep -hE "decode graphs:" /tmp/fk-native/meson-logs/testlog.txt /tmp/fk-ptx75/meson-logs/testlog.txt | tee -a $S
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
for t in test_decode_graphs_at_start test_batch_invariance_llama; do
  FK_TEST_FILTER=$t FK_TEST_DEVICE=cuda FK_TEST_UNDER_SANITIZER=1 OMP_WAIT_POLICY=passive timeout $((580 - ($(date +%s) - T0))) \
    compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 /tmp/fk-native/tests/gpu/test_engine_cuda >$L/memcheck-$t.log 2>&1
  note "memcheck $t: rc $? $(grep -E 'PASSED|FAILED' $L/memcheck-$t.log | head -1) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' $L/memcheck-$t.log | tr '\n' ' ')"
done
note "llama.cpp: $(cat /tmp/llama.cpp/done 2>/dev/null || echo building)"
