#!/bin/bash
# Seventh session, call 5: where a 64-sequence fp16 decode step goes now (bench-engine --profile at 1, 16, 64, 256
# requests) and cuBLAS against ours per linear at m = 1 .. 256 (bench_linear), at HEAD.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary5.txt; L=$OUT/l5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit) (HEAD)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
( meson setup /tmp/fk-native . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-n.log 2>&1 &&
  ninja -C /tmp/fk-native -j16 tools/flashkernel kernels/bench/bench_linear >$L/build-n.log 2>&1 ) || note "BUILD FAILED native"
wait
note "built"
timeout 200 /tmp/fk-native/kernels/bench/bench_linear > $OUT/bench-linear.txt 2>&1; note "bench_linear: exit $?"
for n in 64 256 16 1; do
  w=""; [ $n -ge 64 ] && w="--warmup $n"
  timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests $n $w --profile > $OUT/profile-b$n.txt 2>&1; note "profile $n: exit $?"
  timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests $n $w > $L/plain-b$n.txt 2>&1; note "plain $n: $(grep 'output tokens/s' $L/plain-b$n.txt)"
done
tar czf $OUT/l5.tgz -C $OUT l5
grep -E "llama1b|m = |^model|layer" $OUT/bench-linear.txt | head -60
for n in 1 16 64 256; do echo "== $n"; grep -v "^\s*$" $OUT/profile-b$n.txt | tail -22; done
