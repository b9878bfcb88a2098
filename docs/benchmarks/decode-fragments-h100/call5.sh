#!/bin/bash
# Eleventh session, call 5: the gpu suite at HEAD (native sm_90a and compute_75 PTX), bench_attention (the fragments
# kernel's rows), compute-sanitizer memcheck and racecheck on the decode attention tests.
set -u
T0=$(date +%s)
S=$OUT/summary5.txt; L=$OUT/l5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
OUT=$L/suite sh tests/gpu/run-on-device.sh test >$L/suite.log 2>&1
note "suite rc $?"
tail -12 $L/suite.log | tee -a $S
/tmp/fk-native/kernels/bench/bench_attention >$L/bench_attention.txt 2>&1
grep -E "RESULT decode|^device" $L/bench_attention.txt | tee -a $S
for tool in memcheck racecheck; do
  extra=""; [ $tool = memcheck ] && extra="--leak-check full"
  FK_TEST_FILTER='test_attention_decode*' timeout 150 compute-sanitizer --tool $tool $extra --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/$tool.log 2>&1
  note "$tool decode tests: exit $? — $(grep -E 'PASSED|FAILED' $L/$tool.log | head -2 | tr '\n' ' ') $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' $L/$tool.log | tr '\n' ' ')"
done
wait
tar czf $OUT/l5.tgz -C $OUT l5
