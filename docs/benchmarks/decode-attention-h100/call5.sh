#!/bin/bash
# Call 5 (twenty-eighth session): decode attention's split count against whole waves of blocks. bench_attention's
# SWEEP rows now try up to 33 splits a (sequence, KV head) pair (64 x 8 pairs: 512 s blocks on 132 SMs fill 97 % of
# their last wave for s <= 8 and 99.7 % at s = 9; 16 x 8: 33 splits make 4,224 blocks = 32 whole waves), two rounds;
# PyTorch SDPA in the same call; then compute-sanitizer racecheck on the decode-attention op tests alone
# (FK_TEST_FILTER), which the twenty-seventh session's run of the whole op test did not reach.
# The commit is read from .peers/commit, written on the host before the call (the device's .git can be stale).
set -u
T0=$(date +%s)
S=$OUT/summary.txt; L=$OUT/lab; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
B=/tmp/fk-native
rm -rf $B; meson setup $B -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 || note "setup failed"
ninja -C $B -j16 kernels/bench/bench_attention tests/gpu/test_gpu_ops >$L/build.log 2>&1; note "build: $(tail -1 $L/build.log)"
for r in 1 2; do
  timeout 150 $B/kernels/bench/bench_attention " (r$r)" >$L/bench-attention-r$r.log 2>&1; note "bench_attention r$r rc $?"
  grep -E "device|RESULT (read|decode_attention)|SWEEP" $L/bench-attention-r$r.log | sed 's/ h32\/8//' | tee -a $S
done
timeout 120 python3 kernels/bench/peers.py attention >$L/peers.log 2>&1; grep -E "PEER torch_sdpa decode|Error" $L/peers.log | tee -a $S
left=$(( 540 - ($(date +%s) - T0) )); [ $left -gt 280 ] && left=280
FK_TEST_FILTER="test_attention_decode*" FK_TEST_UNDER_SANITIZER=1 FK_TEST_DEVICE=cuda OMP_WAIT_POLICY=passive \
  timeout $left compute-sanitizer --tool racecheck --error-exitcode 9 $B/tests/gpu/test_gpu_ops >$L/racecheck.log 2>&1
note "racecheck test_attention_decode* (limit ${left}s): exit $? — $(grep -E 'PASSED|FAILED|^\[ *(OK|RUN)' $L/racecheck.log | tr -s ' ' | tr '\n' ' ') $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $L/racecheck.log | tr '\n' ' ')"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $L
note done
