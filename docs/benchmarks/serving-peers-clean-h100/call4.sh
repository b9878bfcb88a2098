#!/bin/bash
# Thirteenth session, call 4 (fresh machine, 1c2e6a5's code): the engine's own rate on bench-1b-ascii beside the
# server figures of call 2 (bench-engine with --warmup, fp16, 256 / 64 / 1 requests); then bench_kernels' decode
# attention at batch 1 (llama1b, the rows where call 2 saw new 13.7 against old 12.1 us at 1,024 keys), new against
# old alternated three times with 1,000 timed calls.
set -u
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1 &&
  python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >/tmp/mk2.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 && ninja -C /tmp/fk-native tools/flashkernel kernels/bench/bench_kernels >$L/build.log 2>&1
note "native built: rc $?"
rm -rf /tmp/old-tree && mkdir /tmp/old-tree && cp -r $(ls -A | grep -vE '^(\.deps|\.peers|\.git)$') /tmp/old-tree/ &&
  cp .peers/s13/old/*.cu /tmp/old-tree/kernels/ && rm -f /tmp/old-tree/kernels/online_softmax.cuh
(cd /tmp/old-tree && meson setup /tmp/fk-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 &&
  ninja -C /tmp/fk-old kernels/bench/bench_kernels >$L/old-build.log 2>&1); note "old bench_kernels built: rc $?"
for r in 1 2 3; do
  for v in new old; do
    b=/tmp/fk-native/kernels/bench/bench_kernels; [ $v = old ] && b=/tmp/fk-old/kernels/bench/bench_kernels
    timeout 60 $b --only "k_attention_decode" --warmup 100 --iters 1000 2>&1 | grep -E "llama1b batch=1 |^device" >>$L/bk-$v.txt
  done
done
note "bench_kernels done"
for i in $(seq 1 60); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "models: $(cat /tmp/mk-done 2>/dev/null)"
for n in 256 64 1; do
  w=""; [ $n -gt 1 ] && w="--warmup $n"
  timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b-ascii --device cuda --requests $n $w \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$L/engine-$n.log 2>&1
  note "bench-engine bench-1b-ascii $n requests $w: $(grep -E 'output tokens/s' $L/engine-$n.log)"
done
for n in 256 64; do
  timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b-ascii --device cuda --requests $n --warmup $n \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$L/engine-$n-b.log 2>&1
  note "bench-engine bench-1b-ascii $n requests (again): $(grep -E 'output tokens/s' $L/engine-$n-b.log)"
done
note done
