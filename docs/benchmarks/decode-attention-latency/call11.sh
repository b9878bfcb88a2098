#!/bin/bash
# Nineteenth session, call 11: the final tree. The gpu suite natively; as compute_75 PTX the attention op tests and
# gpu_model; fp16, INT8 and INT4 batch 1 once.
set -u
T0=$(date +%s)
S=$OUT/summary11.txt; L=$OUT/l11; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { local d=$1 arch=$2; shift 2; rm -rf $d; meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch >/dev/null 2>&1 &&
  ninja -C $d -j8 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"; }
bld /tmp/fk-native sm_90a > $L/b1.txt &
bld /tmp/fk-ptx75 compute_75 tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tools/flashkernel > $L/b2.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
timeout 300 meson test -C /tmp/fk-native --suite gpu --print-errorlogs > $L/test-native.log 2>&1; echo "rc $?" >> $L/test-native.log
cp /tmp/fk-native/meson-logs/testlog.txt $L/testlog-native.txt
note "gpu suite native: $(grep -E '^(Ok|Fail|Skipped|Timeout):|^rc' $L/test-native.log | tr -s ' ' | tr '\n' ' ')"
FK_TEST_FILTER='test_attention*' timeout 120 /tmp/fk-ptx75/tests/gpu/test_gpu_ops > $L/test-attn-ptx75.log 2>&1
note "attention tests ptx75: rc $? $(grep -cE 'max error' $L/test-attn-ptx75.log) cases; $(grep -E 'PASSED|FAILED' $L/test-attn-ptx75.log | tr '\n' ' ')"
(cd /tmp/fk-ptx75 && timeout 150 meson test --no-rebuild gpu_model --print-errorlogs > $L/test-model-ptx75.log 2>&1); note "gpu_model ptx75: rc $? $(grep -E '^(Ok|Fail|Skipped|Timeout):' $L/test-model-ptx75.log | tr -s ' ' | tr '\n' ' ')"
for i in $(seq 1 60); do [ -f /tmp/mk-done ] && break; sleep 2; done
for q in none int8 int4; do
  timeout 60 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests 1 --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $q > $L/engine-$q-b1.log 2>&1
  note "$q b1: $(grep 'output tokens/s' $L/engine-$q-b1.log)"
done
tar czf $OUT/l11.tgz -C $OUT l11 && rm -rf $L
note done
