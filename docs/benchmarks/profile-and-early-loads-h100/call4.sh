#!/bin/bash
# Ninth session, call 4, at HEAD (8938dbe: the profile's class fix, linear_quant's strong early loads): llama.cpp's
# build in the background (call 5 runs llama-bench on this machine); the gpu suite native + compute_75 PTX;
# memcheck, racecheck and initcheck on test_quant_linear*; batch-1 decode three times per format, and with the head quantized.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
[ -f /tmp/llama.cpp/done ] || setsid sh -c ".peers/build-llama-cpp.sh /tmp/llama.cpp >/tmp/llama-build.log 2>&1" </dev/null >/dev/null 2>&1 &
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
OUT=$L/suite timeout 400 sh tests/gpu/run-on-device.sh test >$L/suite.log 2>&1; note "suite: exit $?"
grep -E "gpu suite|BUILD|FAIL|Ok:|Fail:|Skipped:" $L/suite/summary.txt | head -16 | tee -a $S
grep -h "check_wait_order" /tmp/fk-native/meson-logs/testlog.txt /tmp/fk-ptx75/meson-logs/testlog.txt 2>/dev/null | tee -a $S
wait
for tool in memcheck racecheck initcheck; do
  extra=""; [ $tool = memcheck ] && extra="--leak-check full"
  FK_TEST_FILTER='test_quant_linear*' timeout 200 compute-sanitizer --tool $tool $extra --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/$tool-linear.log 2>&1
  note "$tool test_quant_linear*: exit $? — $(grep -E 'PASSED|FAILED' $L/$tool-linear.log | head -1) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' $L/$tool-linear.log | tr '\n' ' ')"
done
run() { local lab=$1; shift
  timeout 90 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for r in 1 2 3; do for q in none int8 int4; do run $q-b1-$r --requests 1 --quantization $q; done; done
for q in int8 int4; do run $q-head-b1 --requests 1 --quantization $q --quantize-lm-head; done
tar czf $OUT/l4.tgz -C $OUT l4
note "llama.cpp build: $(cat /tmp/llama.cpp/done 2>/dev/null || echo running) $(tail -1 /tmp/llama-build.log 2>/dev/null)"
