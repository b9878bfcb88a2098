#!/bin/bash
# Tenth session, call 4: unaligned heads through cuBLAS into a padded output (ldc rounded up to 8, W unpadded) + a 2-D copy. The op tests of the linears,
# bench_linear on the heads, bench-engine at 32-256 requests with FK_SMALL_LINEAR_UNALIGNED_MAX_M = 256 (HEAD's
# routing: our kernel in passes of 64), 64 and 16.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
b() { local dir=$1 src=$2 args=$3; shift 3; ( meson setup --wipe $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a $args >$dir.setup.log 2>&1 &&
  ninja -C $dir -j14 "$@" >$dir.build.log 2>&1 ) || { note "BUILD FAILED $dir"; tail -30 $dir.build.log; }; }
b /tmp/fk-new . "" tools/flashkernel tests/gpu/test_gpu_ops kernels/bench/bench_linear
wait
note "built"
(cd /tmp/fk-new && FK_TEST_FILTER='test_linear*' timeout 250 ./tests/gpu/test_gpu_ops >$L/test-linear.log 2>&1; echo "rc $?" >>$L/test-linear.log) &
TP=$!
wait $TP
note "op tests test_linear*: $(tail -1 $L/test-linear.log)"; grep -E "FAILED|rror" $L/test-linear.log | head | tee -a $S
(cd /tmp/fk-new && FK_TEST_FILTER='test_quant_layout' timeout 100 ./tests/gpu/test_gpu_ops >$L/test-layout.log 2>&1; echo "rc $?" >>$L/test-layout.log)
note "test_quant_layout: $(tail -1 $L/test-layout.log)"
FK_BENCH_ONLY=lm_head timeout 100 /tmp/fk-new/kernels/bench/bench_linear >$L/bench_linear-heads.txt 2>&1; note "bench_linear rc $?"
grep -E "RESULT (linear_small|cublas_padded) " $L/bench_linear-heads.txt | grep -v "int[48]" | tee -a $S
run() { local lab=$1; shift
  timeout 150 /tmp/fk-new/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for rep in 1 2; do
  for r in 256 128 64; do
    for u in 256 64 16; do FK_SMALL_LINEAR_UNALIGNED_MAX_M=$u run r$r-u$u-$rep --requests $r --warmup $r; done
  done
done
for u in 256 16; do FK_SMALL_LINEAR_UNALIGNED_MAX_M=$u run r32-u$u --requests 32 --warmup 32; FK_SMALL_LINEAR_UNALIGNED_MAX_M=$u run r24-u$u --requests 24 --warmup 24; done
for u in 256 64 16; do FK_SMALL_LINEAR_UNALIGNED_MAX_M=$u run r64-1024-u$u --requests 64 --warmup 64 --prompt-len 1024 --max-tokens 256; done
tar czf $OUT/l4.tgz -C $OUT l4
cat $S
