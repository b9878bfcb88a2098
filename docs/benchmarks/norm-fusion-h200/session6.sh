#!/bin/bash
# Call 2 of 2026-11-26: the fused residual stream again, with the prologue's loads in flight together.
# FK_FUSED_NORM=0, interleaved, fp16 / int8 / int4.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=/tmp/fk-logs; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
ninja -C /tmp/fk-native -j16 tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tests/gpu/test_engine_cuda tools/flashkernel \
  >$L/build.log 2>&1 || { note "BUILD FAILED"; grep -B2 -A10 error $L/build.log | head -40; exit 1; }
wait
note "built"
FK_TEST_FILTER=test_fused_norm_linear timeout 120 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/fused.log 2>&1
note "test_fused_norm_linear: rc $?"; tail -5 $L/fused.log | tee -a $S
B=/tmp/fk-native/tools/flashkernel
for q in none int8 int4; do
  for r in 1 2 3; do
    for f in 1 0; do
      FK_FUSED_NORM=$f $B bench-engine --model /tmp/bench-1b --device cuda --quantization $q --requests 1 --prompt-len 128 \
        --max-tokens 128 --max-model-len 4096 >$L/b1-$q-$f-$r.log 2>&1
      note "batch1 $q fused=$f run $r: $(grep -E 'output tokens/s' $L/b1-$q-$f-$r.log)"
    done
  done
done
for f in 1 0; do
  FK_FUSED_NORM=$f $B bench-engine --model /tmp/bench-1b --device cuda --requests 16 --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 >$L/b16-$f.log 2>&1
  note "batch16 none fused=$f: $(grep -E 'output tokens/s' $L/b16-$f.log)"
done
for f in 1 0; do
  FK_FUSED_NORM=$f $B bench-engine --model /tmp/bench-1b --device cuda --requests 1 --prompt-len 128 --max-tokens 128 \
    --max-model-len 4096 --profile >$L/prof1-$f.log 2>&1
  note "profile batch1 fused=$f:"; grep -E "output tokens/s|^profile|^  " $L/prof1-$f.log | tee -a $S
done
timeout $((560 - ($(date +%s) - T0))) meson test -C /tmp/fk-native --no-rebuild --suite gpu --print-errorlogs >$L/test.log 2>&1
note "gpu suite native: rc $? $(grep -E '^(Ok|Fail|Timeout):' $L/test.log | tr -s ' ' | tr '\n' ' ')"
grep -E "FAIL|LINE" /tmp/fk-native/meson-logs/testlog.txt | head -20 | tee -a $S
cp /tmp/fk-native/meson-logs/testlog.txt $L/ 2>/dev/null
tar czf $OUT/logs.tgz -C $L .
