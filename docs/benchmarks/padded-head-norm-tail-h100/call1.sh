#!/bin/bash
# Tenth session, call 1: the tiled kernel on fp16 weights (17-64 tokens) and SiLU·mul in the tiled kernel.
# Build new (working tree) + old (HEAD); op tests of the linears; bench_linear; bench-engine A/B.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
mkdir -p /tmp/src-old; git ls-files -co --exclude-standard | tar cf - -T - | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
b() { local dir=$1 src=$2; shift 2; ( meson setup $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$dir.setup.log 2>&1 &&
  ninja -C $dir -j12 "$@" >$dir.build.log 2>&1 ) || { note "BUILD FAILED $dir"; tail -30 $dir.build.log; }; }
b /tmp/fk-new . tools/flashkernel tests/gpu/test_gpu_ops kernels/bench/bench_linear &
b /tmp/fk-old /tmp/src-old tools/flashkernel &
wait
note "built"
(cd /tmp/fk-new && FK_TEST_FILTER='*linear*' timeout 280 ./tests/gpu/test_gpu_ops >$L/test-linear.log 2>&1; echo "rc $?" >>$L/test-linear.log) &
TP=$!
wait $TP
note "op tests (*linear*): $(grep -E '^\[  (PASSED|FAILED) \]' $L/test-linear.log | tr '\n' ' ') $(tail -1 $L/test-linear.log)"
grep -E "FAILED|ERROR|fail" $L/test-linear.log | head -20 | tee -a $S
timeout 200 /tmp/fk-new/kernels/bench/bench_linear >$L/bench_linear.txt 2>&1; note "bench_linear rc $?"
grep -E "llama-3.2-1b|llama-3-8b|gpt2" $L/bench_linear.txt | awk '$5>=16 && $5<=128' | grep -v "int[48]" | tee -a $S
run() { local bin=$1 lab=$2; shift 2
  timeout 120 /tmp/fk-$bin/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
wait
for rep in 1 2; do
  for r in 24 32 48 64; do
    FK_MMA_LINEAR_MAX_M=16 run new fp16-r$r-cublas-$rep --requests $r --warmup $r
    run new fp16-r$r-tiled-$rep --requests $r --warmup $r
  done
  for q in int8 int4; do run old $q-r64-old-$rep --requests 64 --warmup 64 --quantization $q; run new $q-r64-new-$rep --requests 64 --warmup 64 --quantization $q; done
done
run old fp16-r128-old --requests 128 --warmup 128; run new fp16-r128-new --requests 128 --warmup 128
run new fp16-b1-new --requests 1
tar czf $OUT/l1.tgz -C $OUT l1
cat $S
