#!/bin/bash
# Fourteenth session, call 3: the fragments decode kernel with 1, 2 and 4 warps a pair (FK_DECODE_SLICES).
# gpu_ops natively (its decode tests cover every slice count), bench_attention's decode rows, then bench-engine fp16
# at 32 / 64 / 128 requests: default against the fragments kernel forced with 2 and 4 warps a pair, alternated.
set -u
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)+slices"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 &&
  ninja -C /tmp/fk-native tools/flashkernel kernels/bench/bench_attention tests/gpu/test_gpu_ops >$L/build.log 2>&1
note "built: rc $?"
timeout 300 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/gpu_ops.txt 2>&1
note "test_gpu_ops rc $? ($(grep -cE '^\[       OK \]' $L/gpu_ops.txt) OK, $(grep -cE '^\[  FAILED  \]' $L/gpu_ops.txt) FAILED lines)"
grep -E "FAILED|attention_decode" $L/gpu_ops.txt | head -20 | tee -a $S
timeout 200 /tmp/fk-native/kernels/bench/bench_attention >$L/bench_attention.txt 2>&1
note "bench_attention rc $?"
grep -E "^device|RESULT decode_attention (staged|auto|frag)" $L/bench_attention.txt | sed 's/RESULT decode_attention //' | tee -a $S
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "model: $(cat /tmp/mk-done 2>/dev/null)"
E=/tmp/fk-native/tools/flashkernel
eng() { # label N env...
  local label=$1 n=$2; shift 2
  env "$@" timeout 120 $E bench-engine --model /tmp/bench-1b --device cuda --requests $n --warmup $n --prompt-len 128 \
    --max-tokens 128 --max-model-len 4096 >$L/engine-$label-$n.log 2>&1
  note "bench-engine $n requests $label: $(grep -E 'output tokens/s' $L/engine-$label-$n.log | tail -1)"
}
for r in 1 2; do
  eng base 64 X=1; eng s4 64 FK_DECODE_FRAGMENTS=1 FK_DECODE_SLICES=4; eng s2 64 FK_DECODE_FRAGMENTS=1 FK_DECODE_SLICES=2
done
eng base 32 X=1; eng s4 32 FK_DECODE_FRAGMENTS=1 FK_DECODE_SLICES=4
eng base 128 X=1; eng s2 128 FK_DECODE_FRAGMENTS=1 FK_DECODE_SLICES=2; eng s1 128 FK_DECODE_FRAGMENTS=1 FK_DECODE_SLICES=1
tar czf $OUT/l3.tgz -C $OUT l3
note done
