#!/bin/bash
# Fifteenth session, call 10: the final kernel (launch refused before the probe) natively: test_gpu_ops whole, then
# bench-engine fp16 at 64 requests with and without the wgmma linear.
set -u
T0=$(date +%s)
S=$OUT/summary10.txt; L=$OUT/l10; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1
ninja -C /tmp/fk-native tools/flashkernel tests/gpu/test_gpu_ops >$L/build.log 2>&1
note "built: $(tail -1 $L/build.log)"
timeout 300 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/gpu_ops.txt 2>&1
note "test_gpu_ops rc $? ($(grep -cE '^\[       OK \]' $L/gpu_ops.txt) OK, $(grep -cE '^\[  FAILED  \]' $L/gpu_ops.txt) FAILED lines)"
grep -E "FAILED|PASSED" $L/gpu_ops.txt | head -5 | tee -a $S
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # label env...
  local label=$1; shift
  env "$@" timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests 64 --warmup 64 \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$L/engine-$label.log 2>&1
  note "bench-engine 64 $label: $(grep -E 'output tokens/s' $L/engine-$label.log | tail -1)"
}
eng cublas FK_WGMMA_LINEAR_MAX_M=0; eng wgmma X=1
tar czf $OUT/l10.tgz -C $OUT l10 && rm -rf $L
note done
